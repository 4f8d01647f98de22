"""Knowledge-graph memory: ``memory.graph`` (docs/graph.md).

This package holds the graph's values (``memorybank.graph.model``) and, in
``memorybank.mcp.graph_tools``, the MCP memory server's nine tools on top of
``memory.graph``.
"""

from memorybank.graph.model import (
    DEFAULT_FUNCTIONAL_TYPES,
    ENTITY_TYPES,
    Direction,
    Entity,
    GraphContextOptions,
    GraphStats,
    Path,
    Relation,
    Source,
    Subgraph,
)

__all__ = [
    "DEFAULT_FUNCTIONAL_TYPES",
    "ENTITY_TYPES",
    "Direction",
    "Entity",
    "GraphContextOptions",
    "GraphStats",
    "Path",
    "Relation",
    "Source",
    "Subgraph",
]
