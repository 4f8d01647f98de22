"""Response bodies of the graph routes (``/v1/graph/...``).

They mirror ``memorybank.graph`` field for field (``Entity``, ``Relation``,
``Subgraph``, ``Path``, ``GraphStats``). The request bodies are generated from the
``memory.graph`` verbs (``memorybank.server.models_generated``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["EntityOut", "GraphStatsOut", "PathOut", "RelationOut", "SubgraphOut"]

_ATTRS = ConfigDict(from_attributes=True)


class EntityOut(BaseModel):
    """An entity (``memorybank.graph.Entity``; ``agent_id``/``user_id`` null: shared)."""

    model_config = _ATTRS
    id: str
    name: str
    type: str
    agent_id: str | None
    user_id: str | None
    aliases: list[str]
    observations: list[str]
    properties: dict[str, Any]
    confidence: float
    source: str
    created_at: datetime
    updated_at: datetime


class RelationOut(BaseModel):
    """A relation (``memorybank.graph.Relation``) with its four times."""

    model_config = _ATTRS
    id: str
    source_id: str
    type: str
    target_id: str
    agent_id: str | None
    user_id: str | None
    label: str | None
    weight: float
    bidirectional: bool
    properties: dict[str, Any]
    confidence: float
    source: str
    provenance: list[str]
    valid_at: datetime | None
    invalid_at: datetime | None
    created_at: datetime
    expired_at: datetime | None
    support: list[str] = []


class SubgraphOut(BaseModel):
    """What a traversal reached; ``truncated``: a bound cut it."""

    model_config = _ATTRS
    entities: list[EntityOut]
    relations: list[RelationOut]
    truncated: bool


class PathOut(BaseModel):
    """A shortest path: ``entities[0]`` the source, ``entities[-1]`` the target."""

    model_config = _ATTRS
    entities: list[EntityOut]
    relations: list[RelationOut]
    hops: int
    cost: float


class GraphStatsOut(BaseModel):
    """Counts of what the caller can see."""

    model_config = _ATTRS
    entities: int
    relations: int
    valid_relations: int
    entity_types: dict[str, int]
    relation_types: dict[str, int]
