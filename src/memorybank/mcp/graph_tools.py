"""The MCP reference memory server's nine tools, on ``memory.graph``.

The reference server (``@modelcontextprotocol/server-memory``) keeps one JSON
file per process; its tools are the de-facto vocabulary of graph memory for
agents. These functions take and return exactly its shapes:

* entity ``{"name", "entityType", "observations"}``;
* relation ``{"from", "to", "relationType"}`` (entity names, active voice);
* ``create_entities`` / ``create_relations`` return only what was new (an
  existing name, or an existing ``from``/``relationType``/``to`` triple, is
  left alone); ``add_observations`` returns ``{"results": [{"entityName",
  "addedObservations"}]}`` and fails for a missing entity; the deletes return
  ``{"success", "message"}`` and ignore names they do not find;
* ``read_graph``, ``search_nodes`` and ``open_nodes`` return
  ``{"entities", "relations"}`` with the relations that touch at least one
  returned entity.

What differs, because the graph lives in a store under memorybank's scope rules:

* every call acts on the handle it is given (``memory.graph`` of a
  ``memory.scoped(...)`` handle): it sees its own and shared entities,
  creates its own, and never sees or touches another user's (shared ones it
  may change, as every verb of the library may);
* a name matches an entity's name or one of its aliases, compared as
  ``memory.graph`` normalises names (case-folded, trimmed, inner whitespace
  collapsed); when several visible entities match (say the user's own and a
  shared one), a write goes to the caller's own, a delete removes every one
  of them, and a read returns them all;
* reads return only relations valid now, and are bounded: ``read_graph`` is a
  page of at most ``limit`` entities (``PAGE_MAX``) and the relations that
  start at them, cut further at ``MAX_PAGE_CHARS`` characters of JSON, with
  ``nextCursor`` while more remain; ``search_nodes``/``open_nodes`` return at
  most ``PAGE_MAX`` entities and ``MAX_RELATIONS`` relations, and say
  ``"truncated": true`` when a bound cut them;
* ``create_relations`` fails (nothing written) when an endpoint does not
  exist, instead of storing a dangling relation.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import NotRequired

from typing_extensions import TypedDict

from memorybank.errors import InvalidInput, NotFound
from memorybank.graph._async import AsyncGraph, normalise
from memorybank.graph.model import Direction, Entity
from memorybank.rules.validate import MAX_LABEL_CHARS

__all__ = [
    "MAX_PAGE_CHARS",
    "MAX_RELATIONS",
    "NAME_MATCHES",
    "PAGE_DEFAULT",
    "PAGE_MAX",
    "SEARCH_DEFAULT",
    "AddedObservation",
    "AddedObservations",
    "CreatedEntities",
    "CreatedRelations",
    "KnowledgeGraph",
    "McpEntity",
    "McpRelation",
    "ObservationDeletion",
    "ObservationsToAdd",
    "Outcome",
    "add_observations",
    "create_entities",
    "create_relations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "open_nodes",
    "read_graph",
    "search_nodes",
]

#: Entities on a ``read_graph`` page unless asked otherwise.
PAGE_DEFAULT = 50
#: Most entities one read returns.
PAGE_MAX = 200
#: Entities ``search_nodes`` returns unless asked otherwise.
SEARCH_DEFAULT = 20
#: Most visible entities one name resolves to (the caller's own, shared ones, other types).
NAME_MATCHES = 25
#: Most relations one read returns.
MAX_RELATIONS = 1000
#: A ``read_graph`` page stops before its JSON passes this many characters
#: (about 10k tokens; MCP clients cap a tool result near 25k tokens).
MAX_PAGE_CHARS = 40_000


class McpEntity(TypedDict):
    """An entity as the MCP memory server shapes it."""

    name: str
    entityType: str
    observations: list[str]


#: A relation as the MCP memory server shapes it: ``from`` --``relationType``--> ``to``.
McpRelation = TypedDict("McpRelation", {"from": str, "to": str, "relationType": str})


class ObservationsToAdd(TypedDict):
    entityName: str
    contents: list[str]


class ObservationDeletion(TypedDict):
    entityName: str
    observations: list[str]


class AddedObservation(TypedDict):
    entityName: str
    addedObservations: list[str]


class AddedObservations(TypedDict):
    results: list[AddedObservation]


class CreatedEntities(TypedDict):
    entities: list[McpEntity]


class CreatedRelations(TypedDict):
    relations: list[McpRelation]


class Outcome(TypedDict):
    success: bool
    message: str


class KnowledgeGraph(TypedDict):
    """Entities and the relations touching them; ``nextCursor`` while a page has a next."""

    entities: list[McpEntity]
    relations: list[McpRelation]
    nextCursor: NotRequired[str]
    truncated: NotRequired[bool]


def _entity_out(entity: Entity) -> McpEntity:
    return {
        "name": entity.name,
        "entityType": entity.type,
        "observations": list(entity.observations),
    }


def _ownership(entity: Entity) -> tuple[int, str]:
    """Sort key: the caller's own entities first (most specific scope), then oldest."""
    shared = (entity.user_id is None) + (entity.agent_id is None)
    return shared, entity.created_at.isoformat()


async def _named(graph: AsyncGraph, name: str) -> list[Entity]:
    """The visible entities called ``name`` (or with it as an alias), own first."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("an entity name must be a non-empty string", field="name")
    wanted = normalise(name)
    # search_entities ranks exact name and alias matches (the graph's name index) first
    # and reads O(k) candidates; find_entities(name=) reads every entity containing it.
    found = await graph.search_entities(name, k=NAME_MATCHES)
    return sorted(
        (e for e in found if wanted in {normalise(n) for n in (e.name, *e.aliases)}),
        key=_ownership,
    )


async def _one(graph: AsyncGraph, name: str) -> Entity:
    matches = await _named(graph, name)
    if not matches:
        raise NotFound(f"Entity with name {name} not found")
    return matches[0]


# -- writes ------------------------------------------------------------------------


async def create_entities(graph: AsyncGraph, entities: Sequence[McpEntity]) -> CreatedEntities:
    """Create the entities whose names are new (to the caller); return those."""
    created: list[McpEntity] = []
    for item in entities:
        if await _named(graph, item["name"]):
            continue
        entity = await graph.add_entity(
            item["name"],
            type=item["entityType"],
            observations=tuple(dict.fromkeys(item["observations"])),
            source="user",
        )
        created.append(_entity_out(entity))
    return {"entities": created}


async def create_relations(graph: AsyncGraph, relations: Sequence[McpRelation]) -> CreatedRelations:
    """Create the relations that do not exist yet; return those.

    Every endpoint is looked up first: a missing one raises ``NotFound`` and
    nothing is written.
    """
    resolved = [
        (item, await _one(graph, item["from"]), await _one(graph, item["to"])) for item in relations
    ]
    created: list[McpRelation] = []
    for item, source, target in resolved:
        kind = item["relationType"]
        existing = await graph.relations(source.id, direction="out", types=[kind])
        if any(r.source_id == source.id and r.target_id == target.id for r in existing):
            continue
        await graph.add_relation(source.id, kind, target.id)
        created.append({"from": source.name, "to": target.name, "relationType": kind})
    return {"relations": created}


async def add_observations(
    graph: AsyncGraph, observations: Sequence[ObservationsToAdd]
) -> AddedObservations:
    """Add observations to existing entities; return the ones that were new.

    A missing entity raises ``NotFound`` before anything is written.
    """
    targets = [(item, await _one(graph, item["entityName"])) for item in observations]
    results: list[AddedObservation] = []
    for item, entity in targets:
        new = [o for o in dict.fromkeys(item["contents"]) if o not in entity.observations]
        if new:
            await graph.add_observations(entity.id, new)
        results.append({"entityName": item["entityName"], "addedObservations": new})
    return {"results": results}


async def delete_entities(graph: AsyncGraph, names: Sequence[str]) -> Outcome:
    """Delete every visible entity with these names, with their relations."""
    for name in names:
        for entity in await _named(graph, name):
            await graph.delete_entity(entity.id)
    return {"success": True, "message": "Entities deleted successfully"}


async def delete_observations(
    graph: AsyncGraph, deletions: Sequence[ObservationDeletion]
) -> Outcome:
    """Remove these observations from every visible entity of each name."""
    for item in deletions:
        for entity in await _named(graph, item["entityName"]):
            gone = [o for o in item["observations"] if o in entity.observations]
            if gone:
                await graph.delete_observations(entity.id, gone)
    return {"success": True, "message": "Observations deleted successfully"}


async def delete_relations(graph: AsyncGraph, relations: Sequence[McpRelation]) -> Outcome:
    """Delete (for good) the relations ``from``--``relationType``-->``to`` between visible
    entities of those names."""
    for item in relations:
        targets = {e.id for e in await _named(graph, item["to"])}
        for source in await _named(graph, item["from"]):
            for relation in await graph.relations(
                source.id, direction="out", types=[item["relationType"]], include_invalid=True
            ):
                if relation.source_id == source.id and relation.target_id in targets:
                    await graph.delete_relation(relation.id)
    return {"success": True, "message": "Relations deleted successfully"}


# -- reads -------------------------------------------------------------------------


async def _touching(
    graph: AsyncGraph, entities: Sequence[Entity], direction: Direction
) -> tuple[dict[str, list[McpRelation]], bool]:
    """The valid relations touching ``entities`` (``"out"``: starting at them), each
    listed once under the first of them it touches, in MCP shape; and whether a bound
    cut them.

    One bounded traversal of depth 1 (a few store round trips, whatever the count).
    """
    listed: dict[str, list[McpRelation]] = {e.id: [] for e in entities}
    if not entities:
        return listed, False
    max_nodes = len(entities) + MAX_RELATIONS
    sub = await graph.traverse(
        [e.id for e in entities],
        max_depth=1,
        direction=direction,
        max_nodes=max_nodes,
        max_edges=MAX_RELATIONS,
    )
    names = {e.id: e.name for e in sub.entities}
    count = 0
    for relation in sub.relations:  # oldest first; among a page, before its neighbours'
        if relation.source_id in listed:
            under = relation.source_id
        elif direction == "both" and relation.target_id in listed:
            under = relation.target_id
        else:
            continue  # between two neighbours, or (out) ending at the page
        listed[under].append(
            {
                "from": names[relation.source_id],
                "to": names[relation.target_id],
                "relationType": relation.type,
            }
        )
        count += 1
    # The traversal reads the given entities' relations first: a bound it reports
    # cut them only if it was reached by them.
    cut = sub.truncated and (count >= MAX_RELATIONS or len(sub.entities) >= max_nodes)
    return listed, cut


async def _with_relations(graph: AsyncGraph, entities: Sequence[Entity]) -> KnowledgeGraph:
    """``entities`` (at most ``PAGE_MAX``) and the valid relations touching them, each once."""
    kept = list(entities[:PAGE_MAX])
    listed, cut = await _touching(graph, kept, "both")
    result: KnowledgeGraph = {
        "entities": [_entity_out(e) for e in kept],
        "relations": [r for e in kept for r in listed[e.id]],
    }
    if cut or len(entities) > PAGE_MAX:
        result["truncated"] = True
    return result


def page_cursor(tag: str, value: object) -> str:
    """A page cursor of the MCP tools: ``TAG:VALUE`` in URL-safe base64 (``read_graph``:
    ``e:`` and the page's last entity id; ``list_facts``: ``o:`` and an offset)."""
    return base64.urlsafe_b64encode(f"{tag}:{value}".encode()).decode()


def cursor_value(cursor: str, tag: str, refusal: str) -> str:
    """The non-empty value of a ``page_cursor`` of ``tag``; any other is ``InvalidInput``."""
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (binascii.Error, UnicodeError, ValueError):
        text = ""
    if not text.startswith(f"{tag}:") or len(text) <= len(tag) + 1:
        raise InvalidInput(refusal, field="cursor")
    return text[len(tag) + 1 :]


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
        raise InvalidInput(f"limit must be an integer from 1 to {PAGE_MAX}", field="limit")
    return limit


_NOT_A_PAGE = "cursor is not one read_graph returned"


async def read_graph(
    graph: AsyncGraph, *, cursor: str | None = None, limit: int = PAGE_DEFAULT
) -> KnowledgeGraph:
    """One page of the graph: up to ``limit`` entities (oldest first) and the valid
    relations starting at them.

    Pass ``nextCursor`` back as ``cursor`` for the next page; the last page has
    none. Every relation the caller sees appears on the page of its source
    entity. A page also stops before its JSON passes ``MAX_PAGE_CHARS`` (it
    always holds at least one entity). A cursor whose entity was deleted in
    between is refused (``InvalidInput``): start again without one.
    """
    limit = _check_limit(limit)
    after = None if cursor is None else cursor_value(cursor, "e", _NOT_A_PAGE)
    found = await graph.find_entities(limit=limit + 1, cursor=after)
    more = len(found) > limit
    entities = found[:limit]
    listed, cut = await _touching(graph, entities, "out")
    result: KnowledgeGraph = {"entities": [], "relations": []}
    size = 0
    last: Entity | None = None
    for entity in entities:
        shaped, relations = _entity_out(entity), listed[entity.id]
        cost = len(json.dumps(shaped)) + sum(len(json.dumps(r)) + 2 for r in relations) + 2
        if result["entities"] and size + cost > MAX_PAGE_CHARS:
            more = True
            break
        result["entities"].append(shaped)
        result["relations"] += relations
        size += cost
        last = entity
    if cut:
        result["truncated"] = True
    if more and last is not None:
        result["nextCursor"] = page_cursor("e", last.id)
    return result


async def search_nodes(
    graph: AsyncGraph, query: str, *, limit: int = SEARCH_DEFAULT
) -> KnowledgeGraph:
    """The entities best matching ``query`` (names and aliases, then type and
    observations; hybrid when an embedder is configured) and their relations."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be a non-empty string", field="query")
    limit = _check_limit(limit)
    found: dict[str, Entity] = {}
    for entity in await graph.search_entities(query, k=limit):
        found.setdefault(entity.id, entity)
    if len(found) < limit and len(query) <= MAX_LABEL_CHARS:  # the reference matches types too
        for entity in await graph.find_entities(types=[query.strip()], limit=limit):
            found.setdefault(entity.id, entity)
    return await _with_relations(graph, list(found.values())[:limit])


async def open_nodes(graph: AsyncGraph, names: Sequence[str]) -> KnowledgeGraph:
    """The visible entities with these names and the relations touching them."""
    if len(names) > PAGE_MAX:
        raise InvalidInput(f"at most {PAGE_MAX} names at once", field="names")
    found: dict[str, Entity] = {}
    for name in names:
        for entity in await _named(graph, name):
            found.setdefault(entity.id, entity)
    return await _with_relations(graph, list(found.values()))
