"""mnemodb: persistent, searchable memory for AI assistants and agents, served over MCP."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mnemodb-mcp")  # the distribution's name (see pyproject.toml)
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
