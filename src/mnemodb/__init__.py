"""mnemodb: persistent, searchable memory for AI assistants and agents, served over MCP."""

# The one place the version is written: pyproject.toml reads it from here when a wheel or an
# editable install is built ([tool.hatch.version]), so an installed distribution's metadata and
# this constant never differ. A literal, not importlib.metadata: looking the distribution up
# costs every start of `mnemodb serve` about 30 ms of imports and searching sys.path.
__version__ = "0.1.0"

__all__ = ["__version__"]
