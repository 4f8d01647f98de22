"""Knowledge-graph memory: ``memory.graph`` (docs/graph.md).

This package holds the graph's values (``memorybank.graph.model``) and, in
``memorybank.mcp.graph_tools``, the MCP memory server's nine tools on top of
``memory.graph``. Its names are the model's (``memorybank.graph.model.__all__``).
"""

from memorybank.graph.model import *  # noqa: F403
from memorybank.graph.model import __all__ as __all__
