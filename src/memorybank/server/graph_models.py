"""Request and response bodies of the graph routes (``/v1/graph/...``).

Responses mirror ``memorybank.graph`` field for field (``Entity``,
``Relation``, ``Subgraph``, ``Path``, ``GraphStats``); requests carry the
arguments of the ``memory.graph`` verbs. As in ``memorybank.server.models``, a
field left out of a request means "not given" (the library's ``UNSET``: the
caller's scope for ``agent_id``/``user_id``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from memorybank.graph import Direction

__all__ = [
    "EntityIn",
    "EntityOut",
    "EntityPatch",
    "GraphStatsOut",
    "InferIn",
    "InvalidateIn",
    "MergeIn",
    "ObservationsIn",
    "PathOut",
    "RelationIn",
    "RelationOut",
    "RelationPatch",
    "SubgraphOut",
    "TraverseIn",
]

_ATTRS = ConfigDict(from_attributes=True)
_STRICT = ConfigDict(extra="forbid")


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


class EntityIn(BaseModel):
    """``memory.graph.add_entity``: adds, or merges into the entity of the same owner,
    type and normalised name."""

    model_config = _STRICT
    name: str
    type: str = "concept"
    agent_id: str | None = None
    user_id: str | None = None
    aliases: list[str] = []
    observations: list[str] = []
    properties: dict[str, Any] | None = None
    confidence: float = 1.0
    source: str = "user"
    provenance: list[str] = []


class EntityPatch(BaseModel):
    """Fields to replace (``memory.graph.update_entity``); left out: unchanged."""

    model_config = _STRICT
    name: str | None = None
    type: str | None = None
    aliases: list[str] | None = None
    observations: list[str] | None = None
    properties: dict[str, Any] | None = None
    confidence: float | None = None


class ObservationsIn(BaseModel):
    """Observations to add (with their provenance) or to delete."""

    model_config = _STRICT
    observations: list[str]
    provenance: list[str] = []


class MergeIn(BaseModel):
    """The entity to fold into the one of the path (``memory.graph.merge_entities``)."""

    model_config = _STRICT
    merge: str


class RelationIn(BaseModel):
    """``memory.graph.add_relation``: ``source --type--> target``."""

    model_config = _STRICT
    source_id: str
    type: str
    target_id: str
    agent_id: str | None = None
    user_id: str | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    weight: float = 1.0
    bidirectional: bool = False
    confidence: float = 1.0
    provenance: list[str] = []
    label: str | None = None
    properties: dict[str, Any] | None = None
    source: str = "user"


class RelationPatch(BaseModel):
    """Fields to change (``memory.graph.update_relation``); left out: unchanged."""

    model_config = _STRICT
    label: str | None = None
    weight: float | None = None
    properties: dict[str, Any] | None = None
    confidence: float | None = None
    valid_at: datetime | None = None
    bidirectional: bool | None = None


class InvalidateIn(BaseModel):
    """When the relation stopped holding (default: now)."""

    model_config = _STRICT
    at: datetime | None = None


class TraverseIn(BaseModel):
    """``memory.graph.traverse``: the subgraph within ``max_depth`` hops of ``start_ids``."""

    model_config = _STRICT
    start_ids: list[str]
    max_depth: int = 3
    max_nodes: int = 100
    max_edges: int = 500
    agent_id: str | None = None
    user_id: str | None = None
    direction: Direction = "both"
    types: list[str] | None = None
    entity_types: list[str] | None = None
    min_weight: float | None = None
    min_confidence: float | None = None
    as_of: datetime | None = None
    include_invalid: bool = False
    include_inferred: bool = False


class InferIn(BaseModel):
    """``memory.graph.infer``: the rules to apply (``null``: all)."""

    model_config = _STRICT
    rules: list[str] | None = None
    agent_id: str | None = None
    user_id: str | None = None
