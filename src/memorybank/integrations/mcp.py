"""The MCP server's former home: ``memorybank.mcp.server`` now (same names)."""

from memorybank.mcp.server import *  # noqa: F403
from memorybank.mcp.server import __all__ as __all__
