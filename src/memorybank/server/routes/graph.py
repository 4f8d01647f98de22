"""The knowledge graph over HTTP: ``/v1/graph/...``, a thin router over ``memory.graph``.

Scope is the server's everywhere: the handle is the caller's tenant (and end
user with ``X-User-Id``), so an entity or relation of another tenant, or
private to another user, answers 404 exactly like a missing id. ``agent_id``
and ``user_id`` (query or body) name the owner as in the library: left out,
the caller's scope; naming another user than ``X-User-Id`` is a 403 (``out_of_scope``).

Lists use cursor pagination (``limit``, ``cursor`` -> ``next_cursor``):
entities by keyset (the last entity of the page), a node's relations and
neighbours by position. Traversals and paths are bounded by their own
``max_*`` arguments.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from memorybank.errors import InvalidInput
from memorybank.graph import Direction, Entity, Relation
from memorybank.rules import validate as v
from memorybank.server.deps import MemoryDep
from memorybank.server.models import Count, Page
from memorybank.server.models_generated import (
    EntityIn,
    EntityPatch,
    InferIn,
    InvalidateIn,
    MergeIn,
    ObservationsDeleteIn,
    ObservationsIn,
    RelationIn,
    RelationPatch,
    TraverseIn,
)
from memorybank.server.pagination import ENTITY_CURSOR_PREFIX, OwnerDep, PageDep
from memorybank.server.responses_generated import (
    EntityOut,
    GraphStatsOut,
    PathOut,
    RelationOut,
    SubgraphOut,
)
from memorybank.server.routes import deleted, found

__all__ = ["router"]

TypesQuery = Annotated[list[str] | None, Query(description="Only these relation types.")]
AsOfQuery = Annotated[
    datetime | None, Query(description="Valid time: the graph as it held at this time.")
]


async def _walk(
    direction: Direction = "both",
    types: TypesQuery = None,
    as_of: AsOfQuery = None,
    include_invalid: bool = False,
    include_inferred: bool = False,
) -> dict[str, Any]:
    return {
        "direction": direction,
        "types": types,
        "as_of": as_of,
        "include_invalid": include_invalid,
        "include_inferred": include_inferred,
    }


#: Which relations a walk follows (relations, neighbors, path), as the verb's arguments.
WalkDep = Annotated[dict[str, Any], Depends(_walk)]


def _entity_cursor(entity_id: str) -> str:
    return ENTITY_CURSOR_PREFIX + entity_id


def _after_entity(cursor: str | None) -> str | None:
    """The entity id a ``find`` cursor stands for (``e:`` and the id of the last entity
    of the page before); ``InvalidInput`` for one no server made."""
    if cursor is None:
        return None
    if not cursor.startswith(ENTITY_CURSOR_PREFIX):
        raise InvalidInput("cursor is not one this server returned", field="cursor")
    return v.check_id(cursor[len(ENTITY_CURSOR_PREFIX) :], "cursor")


def _entities(found: list[Entity]) -> list[EntityOut]:
    return [EntityOut.model_validate(e) for e in found]


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1/graph", tags=["graph"])

    # -- entities ---------------------------------------------------------------------

    @api.post("/entities", status_code=201, summary="Add (or merge into) an entity")
    async def add_entity(body: EntityIn, memory: MemoryDep) -> EntityOut:
        return EntityOut.model_validate(await memory.graph.add_entity(**body.arguments()))

    @api.get("/entities", summary="Find entities (by name or alias), oldest first")
    async def find_entities(
        page: PageDep,
        memory: MemoryDep,
        owner: OwnerDep,
        name: Annotated[
            str | None, Query(description="Case-insensitive, over names and aliases.")
        ] = None,
        types: Annotated[list[str] | None, Query(description="Only these entity types.")] = None,
        min_confidence: float | None = None,
    ) -> Page[EntityOut]:
        found = await memory.graph.find_entities(
            name,
            **owner,
            types=types,
            min_confidence=min_confidence,
            limit=page.limit + 1,
            cursor=_after_entity(page.cursor),
        )
        shown = found[: page.limit]
        more = len(found) > page.limit
        return Page[EntityOut](
            items=_entities(shown), next_cursor=_entity_cursor(shown[-1].id) if more else None
        )

    @api.get("/entities/search", summary="Entities best matching a query, best first")
    async def search_entities(
        memory: MemoryDep,
        owner: OwnerDep,
        query: Annotated[str, Query(description="Words of a name, alias or observation.")],
        k: Annotated[int, Query(ge=0, le=1000)] = 10,
        types: Annotated[list[str] | None, Query(description="Only these entity types.")] = None,
    ) -> Page[EntityOut]:
        """The best ``k``, best first: a ranking, whole on one page (``next_cursor`` null)."""
        found = await memory.graph.search_entities(query, k=k, types=types, **owner)
        return Page[EntityOut](items=_entities(found))

    @api.get("/entities/{entity_id}", summary="Get an entity")
    async def get_entity(entity_id: str, memory: MemoryDep, owner: OwnerDep) -> EntityOut:
        entity = await memory.graph.get_entity(entity_id, **owner)
        return EntityOut.model_validate(found(entity, f"entity {entity_id!r}"))

    @api.patch("/entities/{entity_id}", summary="Replace some fields of an entity")
    async def update_entity(
        entity_id: str, body: EntityPatch, memory: MemoryDep, owner: OwnerDep
    ) -> EntityOut:
        entity = await memory.graph.update_entity(entity_id, **owner, **body.arguments())
        return EntityOut.model_validate(entity)

    @api.delete(
        "/entities/{entity_id}", status_code=204, summary="Delete an entity and its relations"
    )
    async def delete_entity(entity_id: str, memory: MemoryDep, owner: OwnerDep) -> Response:
        done = await memory.graph.delete_entity(entity_id, **owner)
        return deleted(done, f"entity {entity_id!r}")

    @api.post("/entities/{entity_id}/observations", summary="Add observations to an entity")
    async def add_observations(
        entity_id: str, body: ObservationsIn, memory: MemoryDep, owner: OwnerDep
    ) -> EntityOut:
        entity = await memory.graph.add_observations(entity_id, **owner, **body.arguments())
        return EntityOut.model_validate(entity)

    @api.post(
        "/entities/{entity_id}/observations/delete",
        summary="Delete observations of an entity (unknown ones are ignored)",
    )
    async def delete_observations(
        entity_id: str, body: ObservationsDeleteIn, memory: MemoryDep, owner: OwnerDep
    ) -> EntityOut:
        entity = await memory.graph.delete_observations(entity_id, **owner, **body.arguments())
        return EntityOut.model_validate(entity)

    @api.post("/entities/{entity_id}/merge", summary="Fold another entity into this one")
    async def merge_entities(
        entity_id: str, body: MergeIn, memory: MemoryDep, owner: OwnerDep
    ) -> EntityOut:
        entity = await memory.graph.merge_entities(entity_id, **owner, **body.arguments())
        return EntityOut.model_validate(entity)

    @api.get("/entities/{entity_id}/relations", summary="An entity's relations, oldest first")
    async def entity_relations(
        entity_id: str,
        page: PageDep,
        memory: MemoryDep,
        owner: OwnerDep,
        walk: WalkDep,
        min_weight: float | None = None,
        min_confidence: float | None = None,
    ) -> Page[RelationOut]:
        async def fetch(n: int | None) -> list[Relation]:
            return (
                await memory.graph.relations(
                    entity_id, min_weight=min_weight, min_confidence=min_confidence, **walk, **owner
                )
            )[:n]

        return await page.first_n(fetch, RelationOut.model_validate)

    @api.get("/entities/{entity_id}/neighbors", summary="Entities within `depth` hops")
    async def neighbors(
        entity_id: str,
        page: PageDep,
        memory: MemoryDep,
        owner: OwnerDep,
        walk: WalkDep,
        depth: Annotated[int, Query(ge=1, le=10)] = 1,
        min_weight: float | None = None,
        min_confidence: float | None = None,
    ) -> Page[EntityOut]:
        return await page.first_n(
            lambda n: memory.graph.neighbors(
                entity_id,
                depth=depth,
                min_weight=min_weight,
                min_confidence=min_confidence,
                limit=n,
                **walk,
                **owner,
            ),
            EntityOut.model_validate,
        )

    # -- relations --------------------------------------------------------------------

    @api.post("/relations", status_code=201, summary="Add (or extend) a relation")
    async def add_relation(body: RelationIn, memory: MemoryDep) -> RelationOut:
        return RelationOut.model_validate(await memory.graph.add_relation(**body.arguments()))

    @api.get("/relations/{relation_id}", summary="Get a relation (current or not)")
    async def get_relation(relation_id: str, memory: MemoryDep, owner: OwnerDep) -> RelationOut:
        relation = await memory.graph.get_relation(relation_id, **owner)
        return RelationOut.model_validate(found(relation, f"relation {relation_id!r}"))

    @api.patch("/relations/{relation_id}", summary="Change some fields of a relation")
    async def update_relation(
        relation_id: str, body: RelationPatch, memory: MemoryDep, owner: OwnerDep
    ) -> RelationOut:
        relation = await memory.graph.update_relation(relation_id, **owner, **body.arguments())
        return RelationOut.model_validate(relation)

    @api.post(
        "/relations/{relation_id}/invalidate",
        summary="Mark a relation as no longer holding (kept in history)",
    )
    async def invalidate_relation(
        relation_id: str, body: InvalidateIn, memory: MemoryDep, owner: OwnerDep
    ) -> RelationOut:
        relation = await memory.graph.invalidate_relation(relation_id, **owner, **body.arguments())
        return RelationOut.model_validate(relation)

    @api.delete("/relations/{relation_id}", status_code=204, summary="Delete a relation for good")
    async def delete_relation(relation_id: str, memory: MemoryDep, owner: OwnerDep) -> Response:
        done = await memory.graph.delete_relation(relation_id, **owner)
        return deleted(done, f"relation {relation_id!r}")

    # -- traversal --------------------------------------------------------------------

    @api.post("/traverse", summary="The subgraph within `max_depth` hops of some entities")
    async def traverse(body: TraverseIn, memory: MemoryDep) -> SubgraphOut:
        return SubgraphOut.model_validate(await memory.graph.traverse(**body.arguments()))

    @api.get(
        "/path",
        summary="The shortest path between two entities (null: none within max_depth)",
    )
    async def shortest_path(
        memory: MemoryDep,
        owner: OwnerDep,
        walk: WalkDep,
        source_id: str,
        target_id: str,
        max_depth: Annotated[int, Query(ge=1, le=20)] = 6,
    ) -> PathOut | None:
        path = await memory.graph.shortest_path(
            source_id, target_id, max_depth=max_depth, **walk, **owner
        )
        return None if path is None else PathOut.model_validate(path)

    @api.get("/stats", summary="Counts of the entities and relations the caller sees")
    async def stats(memory: MemoryDep, owner: OwnerDep) -> GraphStatsOut:
        return GraphStatsOut.model_validate(await memory.graph.stats(**owner))

    @api.post("/infer", summary="Materialise inferred relations; the new ones")
    async def infer(body: InferIn, memory: MemoryDep) -> Page[RelationOut]:
        """The relations this call added, all on one page (``next_cursor`` null)."""
        found = await memory.graph.infer(**body.arguments())
        return Page[RelationOut](items=[RelationOut.model_validate(r) for r in found])

    @api.delete("", summary="Delete the graph owned by exactly this agent and user")
    async def clear(memory: MemoryDep, owner: OwnerDep) -> Count:
        return Count(count=await memory.graph.clear(**owner))

    return api
