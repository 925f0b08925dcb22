"""MCP transports and the profiles that map upstream tools onto the engine."""
