"""memserver: a local MCP memory of whole codebases and of what agents learned in them."""

__version__ = "0.1.0"
__all__ = ["__version__"]
