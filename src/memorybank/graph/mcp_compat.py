"""The MCP graph tools' former home: ``memorybank.mcp.graph_tools`` now (same names)."""

from memorybank.mcp.graph_tools import *  # noqa: F403
from memorybank.mcp.graph_tools import __all__ as __all__
