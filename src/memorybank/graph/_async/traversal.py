"""Bounded breadth-first reads: ``neighbors`` and ``traverse``."""

from __future__ import annotations

from collections.abc import Collection, Container, Mapping, Sequence
from datetime import datetime

from memorybank.errors import NotFound
from memorybank.graph._async.checks import _depth, _direction, _ids, _types
from memorybank.graph._async.core import GraphCore, _Edge, _Filter
from memorybank.graph._async.records import IN, OUT, _relation
from memorybank.graph.model import Direction, Entity, Relation, Subgraph
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import UNSET, Record, Unset
from memorybank.stores.contract.types import Visibility, visible

#: A level reads its relations' far-end entities with them (one read, not two) when
#: its frontier times this is within the room left: at about this many relations per
#: node, most of the far ends read are admitted.
_FANOUT = 2


class TraversalVerbs(GraphCore):
    """Breadth-first search over the relations the caller sees, one level per read."""

    async def _walk(
        self,
        start: Sequence[Entity],
        *,
        depth: int,
        way: Direction,
        seen: Visibility,
        flt: _Filter,
        max_nodes: int | None,
        max_edges: int | None,
        close: bool,
        entity_types: frozenset[str] | None = None,
    ) -> tuple[dict[str, tuple[Entity, int]], dict[str, Relation], bool]:
        """Bounded breadth-first search: reached entities (with hops), relations, truncated.

        ``close``: one more level fetched for the relations among the last level's nodes.
        """
        reached: dict[str, tuple[Entity, int]] = {e.id: (e, 0) for e in start}
        relations: dict[str, Relation] = {}
        truncated = False
        frontier = [e.id for e in start]
        for level in range(depth + 1):
            if not frontier or (level == depth and not close):
                break
            full = max_nodes is not None and len(reached) >= max_nodes
            if level == depth or full:
                # The relations from an earlier level to this one were found from there:
                # the rest are stored under this level's nodes (one read, not two). With
                # no room left, no node is added: this level is the closing one, and the
                # only other question is whether a node was left out (``truncated``).
                # Whether a node was left out is asked only below the depth bound and
                # when no earlier cut said so: only then are the links leading out read.
                ask = level < depth and not truncated
                outside: list[Record] | None = [] if ask else None
                edges = await self._among(frontier, reached, way, seen, flt, outside)
                found: dict[str, Entity] = {}
                if outside is not None:
                    truncated = await self._left_out(
                        frontier, reached, outside, way, seen, flt, entity_types
                    )
            else:
                room = None if max_nodes is None else max(0, max_nodes - len(reached))
                near: dict[str, Record] | None = None
                if room is None or len(frontier) * _FANOUT <= room:
                    # the far ends come with the relations: one read for the level
                    edges, near = await self._edges_linked(frontier, way, seen, flt)
                else:  # many more far ends than room: only the admitted ones are read
                    edges = await self._edges(frontier, way, seen, flt)
                fresh = list(dict.fromkeys(e.other for e in edges if e.other not in reached))
                found, more = await self._admit(fresh, room, seen, entity_types, near)
                truncated = truncated or more
            for entity_id, entity in found.items():
                reached[entity_id] = (entity, level + 1)
            for edge in edges:
                rel = edge.relation
                if rel.id in relations or edge.other not in reached:
                    continue
                if max_edges is not None and len(relations) >= max_edges:
                    truncated = True
                    break
                relations[rel.id] = rel
            frontier = list(found)
            if full:
                break
        return reached, relations, truncated

    async def _among(
        self,
        ids: Sequence[str],
        reached: Collection[str],
        way: Direction,
        seen: Visibility,
        flt: _Filter,
        outside: list[Record] | None = None,
    ) -> list[_Edge]:
        """The relations (passing ``flt``) between ``ids`` (the last level) and ``reached``
        that the earlier levels did not see: stored under ``ids`` on the side ``way``
        reads (by source, or by target for ``"in"``), oldest first. The visible records
        read that lead outside ``reached`` are appended to ``outside`` when given; else
        only the links into ``reached`` are read (``record_list_links``)."""
        kind, far = (IN, "source_id") if way == "in" else (OUT, "target_id")
        edges: list[_Edge] = []
        store = self._core.store
        if outside is None:
            records = await store.record_list_links(
                self._tenant, kind, ids, far, list(reached), visible_to=seen
            )
        else:
            records = await store.record_list_keys(self._tenant, kind, ids, visible_to=seen)
        for record in records:
            if not visible(seen, record.agent_id, record.user_id):
                continue
            other = str(record.data.get(far))
            if other not in reached:
                if outside is not None:
                    outside.append(record)
                continue
            relation = _relation(self._tenant, record)
            if flt.keeps(relation):
                edges.append(_Edge(relation, str(record.key), other))
        return sorted(edges, key=lambda e: (e.relation.created_at, e.relation.id))

    async def _left_out(
        self,
        frontier: Sequence[str],
        reached: Container[str],
        outside: Sequence[Record],
        way: Direction,
        seen: Visibility,
        flt: _Filter,
        entity_types: frozenset[str] | None,
    ) -> bool:
        """Whether a relation from ``frontier`` (passing ``flt``, walked ``way``) leads to
        an entity outside ``reached`` that the caller sees (of ``entity_types``).

        ``outside``: records already read that lead out (``_among``'s side); most often
        they answer, else every edge of the frontier is read."""
        far = "source_id" if way == "in" else "target_id"
        pos = 0
        while pos < len(outside):
            chunk: list[str] = []
            while pos < len(outside) and len(chunk) < 16:
                record = outside[pos]
                pos += 1
                if flt.keeps(_relation(self._tenant, record)):
                    chunk.append(str(record.data.get(far)))
            if chunk and (await self._admit(list(dict.fromkeys(chunk)), 0, seen, entity_types))[1]:
                return True
        edges = await self._edges(frontier, way, seen, flt)
        fresh = list(dict.fromkeys(e.other for e in edges if e.other not in reached))
        return (await self._admit(fresh, 0, seen, entity_types))[1]

    async def _admit(
        self,
        candidates: Sequence[str],
        room: int | None,
        seen: Visibility,
        entity_types: frozenset[str] | None,
        near: Mapping[str, Record] | None = None,
    ) -> tuple[dict[str, Entity], bool]:
        """The first ``room`` candidates the caller sees (of ``entity_types``), in order,
        fetched no further than needed; and whether a further one exists (``truncated``:
        only a visible entity may say so, or the flag would reveal hidden ones).

        ``near``: every candidate's entity record that exists and the caller sees, read
        already (``_edges_linked``): nothing more is read."""

        def fits(entity: Entity | None) -> bool:
            return entity is not None and (entity_types is None or entity.type in entity_types)

        kept: dict[str, Entity] = {}
        pos = 0
        while pos < len(candidates):
            want = len(candidates) if room is None else room - len(kept)
            chunk = candidates[pos : pos + max(want + 1, 16)]  # +1: is there a further one?
            pos += len(chunk)
            if near is None:
                got = await self._entities(chunk, seen)
            else:
                got = self._read_entities(chunk, near, seen)
            for entity_id in chunk:
                entity = got.get(entity_id)
                if not fits(entity):
                    continue
                if room is not None and len(kept) >= room:
                    return kept, True
                assert entity is not None
                kept[entity_id] = entity
        return kept, False

    async def neighbors(
        self,
        entity_id: str,
        *,
        depth: int = 1,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        direction: Direction = "both",
        types: Sequence[str] | str | None = None,
        min_weight: float | None = None,
        min_confidence: float | None = None,
        limit: int | None = None,
        as_of: datetime | None = None,
        include_invalid: bool = False,
        include_inferred: bool = False,
    ) -> list[Entity]:
        """Entities within ``depth`` hops over relations the caller sees, nearest first
        (then in the order reached); the entity itself is left out. ``NotFound`` for an
        entity it may not see."""
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
        hops = _depth(depth, "depth")
        way = _direction(direction)
        count = v.check_limit(limit, "limit")
        flt = self._filter(
            as_of=as_of,
            include_invalid=include_invalid,
            include_inferred=include_inferred,
            types=types,
            min_weight=min_weight,
            min_confidence=min_confidence,
        )
        start = await self._entity(entity_id, seen)
        reached, _, _ = await self._walk(
            [start],
            depth=hops,
            way=way,
            seen=seen,
            flt=flt,
            max_nodes=None if count is None else count + 1,
            max_edges=None,
            close=False,
        )
        return [e for e, hop in reached.values() if hop > 0]

    async def traverse(
        self,
        start_ids: Sequence[str] | str,
        *,
        max_depth: int = 3,
        max_nodes: int = 100,
        max_edges: int = 500,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        direction: Direction = "both",
        types: Sequence[str] | str | None = None,
        entity_types: Sequence[str] | str | None = None,
        min_weight: float | None = None,
        min_confidence: float | None = None,
        as_of: datetime | None = None,
        include_invalid: bool = False,
        include_inferred: bool = False,
    ) -> Subgraph:
        """The subgraph within ``max_depth`` hops of ``start_ids`` (start first, then by
        hops), with the relations among its entities, bounded by ``max_nodes`` and
        ``max_edges`` (``truncated`` says a bound cut it). Start ids the caller may not
        see raise ``NotFound``."""
        ids = _ids([start_ids] if isinstance(start_ids, str) else start_ids, "start_ids")
        seen = self._seen(user_id, agent_id)
        hops = _depth(max_depth, "max_depth")
        nodes = v.check_limit(max_nodes, "max_nodes", allow_none=False)
        edges = v.check_limit(max_edges, "max_edges", allow_none=False)
        way = _direction(direction)
        wanted = _types(entity_types, "entity_types")
        flt = self._filter(
            as_of=as_of,
            include_invalid=include_invalid,
            include_inferred=include_inferred,
            types=types,
            min_weight=min_weight,
            min_confidence=min_confidence,
        )
        found = await self._entities(ids, seen)
        for entity_id in ids:
            if entity_id not in found:
                raise NotFound(f"entity {entity_id!r} not found")
        return await self._subgraph(
            [found[i] for i in ids],
            hops=hops,
            nodes=nodes,
            edges=edges,
            way=way,
            seen=seen,
            flt=flt,
            entity_types=wanted,
        )

    async def _subgraph(
        self,
        start: Sequence[Entity],
        *,
        hops: int,
        nodes: int,
        edges: int,
        way: Direction,
        seen: Visibility,
        flt: _Filter,
        entity_types: frozenset[str] | None,
    ) -> Subgraph:
        """``traverse`` from ``start``: entities ``seen`` sees, read already (the graph
        context's seeds come from its own scoped read, so they are not read again)."""
        truncated = len(start) > nodes
        reached, relations, cut = await self._walk(
            start[:nodes],
            depth=hops,
            way=way,
            seen=seen,
            flt=flt,
            max_nodes=nodes,
            max_edges=edges,
            close=True,
            entity_types=entity_types,
        )
        return Subgraph(
            entities=[e for e, _ in reached.values()],
            relations=list(relations.values()),
            truncated=truncated or cut,
        )
