"""The knowledge graph's values: entities, relations, subgraphs, paths.

Plain frozen values shared by ``AsyncMemory`` and ``Memory`` (``memory.graph``); the
verbs that make and read them live in ``memorybank.graph._async``. A relation's four
times (``valid_at``/``invalid_at`` in the world, ``created_at``/``expired_at`` in
memorybank): docs/graph.md ("Model").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

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

#: The entity types the extractors and docs use; any other string is allowed too.
ENTITY_TYPES: tuple[str, ...] = (
    "person",
    "organization",
    "location",
    "concept",
    "event",
    "object",
)

#: Relation types of which a source entity holds one at a time (``memory.graph.functional_types``).
DEFAULT_FUNCTIONAL_TYPES: frozenset[str] = frozenset(
    {"lives_in", "located_in", "works_at", "married_to", "is"}
)

Direction = Literal["out", "in", "both"]
Source = Literal["extracted", "user", "inferred"]


@dataclass(frozen=True, slots=True)
class Entity:
    """A node: a person, place, organisation, concept... of one tenant.

    ``agent_id``/``user_id`` ``None`` share it (with every agent / user), as for
    facts. ``observations`` are short text facts about the entity (the MCP
    memory server's word). An entity is unique per (tenant, agent, user, type,
    normalised name): adding it again merges into this one.
    """

    id: str
    tenant_id: str
    name: str
    type: str
    agent_id: str | None
    user_id: str | None
    aliases: tuple[str, ...]
    observations: tuple[str, ...]
    properties: dict[str, Any]
    confidence: float
    source: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Relation:
    """A directed, typed edge ``source --type--> target`` (both ways when ``bidirectional``).

    ``provenance`` lists the entry ids it was extracted from; ``support`` the
    relation ids an ``inferred`` relation follows from.
    """

    id: str
    tenant_id: str
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
    provenance: tuple[str, ...]
    valid_at: datetime | None
    invalid_at: datetime | None
    created_at: datetime
    expired_at: datetime | None
    support: tuple[str, ...] = ()

    def holds_at(self, when: datetime) -> bool:
        """Whether it held in the world at ``when`` (valid time)."""
        start = self.valid_at if self.valid_at is not None else self.created_at
        return start <= when and (self.invalid_at is None or when < self.invalid_at)

    @property
    def is_valid(self) -> bool:
        """Whether it still holds (never invalidated nor replaced)."""
        return self.invalid_at is None and self.expired_at is None


@dataclass(frozen=True, slots=True)
class Subgraph:
    """What a traversal reached: entities (start first, then by hops) and the relations
    between them. ``truncated`` says a ``max_nodes``/``max_edges`` bound cut it."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Path:
    """A shortest path: ``entities[0]`` is the source, ``entities[-1]`` the target,
    ``relations[i]`` joins ``entities[i]`` and ``entities[i + 1]``."""

    entities: list[Entity]
    relations: list[Relation]

    @property
    def hops(self) -> int:
        return len(self.relations)

    @property
    def cost(self) -> float:
        """The tie-breaker after hops: the sum of ``1 / weight`` over the relations."""
        return sum(1.0 / r.weight for r in self.relations)


@dataclass(frozen=True, slots=True)
class GraphStats:
    """Counts of what a caller can see."""

    entities: int
    relations: int
    valid_relations: int
    entity_types: dict[str, int]
    relation_types: dict[str, int]


@dataclass(frozen=True, slots=True)
class GraphContextOptions:
    """How ``build_context(include_graph_context=True)`` picks the graph block.

    ``max_nodes``/``max_edges``/``max_depth`` bound the neighbourhood read
    around the entities the input names; ``entity_types`` keeps only entities
    of these types; ``include_inferred`` adds ``inferred`` relations;
    ``include_history`` adds relations that no longer hold (with their end
    date); ``as_of`` reads the graph as it held in the world at that time.
    """

    max_nodes: int = 20
    max_edges: int = 50
    max_depth: int = 3
    include_inferred: bool = False
    entity_types: tuple[str, ...] | None = None
    include_history: bool = False
    as_of: datetime | None = None
