"""``shortest_path``: bidirectional breadth-first search with deterministic ties."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memorybank.errors import NotFound
from memorybank.graph._async.checks import _depth, _direction
from memorybank.graph._async.core import GraphCore
from memorybank.graph.model import Direction, Entity, Path, Relation
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import UNSET, Unset

#: A search's best way to a node: (cost, ids along it, relations, entity ids).
_Best = tuple[float, tuple[str, ...], list[Relation], list[str]]


class PathVerbs(GraphCore):
    """The shortest path between two entities."""

    async def shortest_path(
        self,
        source_id: str,
        target_id: str,
        *,
        max_depth: int = 6,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        direction: Direction = "both",
        types: Sequence[str] | str | None = None,
        as_of: datetime | None = None,
        include_invalid: bool = False,
        include_inferred: bool = False,
    ) -> Path | None:
        """The path of fewest hops from ``source_id`` to ``target_id`` over what the caller
        sees, ties broken by the lowest sum of ``1 / weight``, then by the relation and
        entity ids along it: one answer on every store. ``None`` when none is within
        ``max_depth``; ``NotFound`` for an endpoint the caller may not see."""
        source_id = v.check_id(source_id, "source_id")
        target_id = v.check_id(target_id, "target_id")
        seen = self._seen(user_id, agent_id)
        hops = _depth(max_depth, "max_depth")
        way = _direction(direction)
        flt = self._filter(
            as_of=as_of,
            include_invalid=include_invalid,
            include_inferred=include_inferred,
            types=types,
        )
        ends = await self._entities([source_id, target_id], seen)
        for end_id in (source_id, target_id):
            if end_id not in ends:
                raise NotFound(f"entity {end_id!r} not found")
        if source_id == target_id:
            return Path(entities=[ends[source_id]], relations=[])
        # Breadth-first from both ends, one whole level at a time on the side with the
        # smaller frontier. Per side, best[node] is the best (cost, ids, relations,
        # entities) of the shortest paths between that end and the node (read from
        # the source), so the best path is the best join at the first meeting.
        fwd: dict[str, _Best] = {source_id: (0.0, (), [], [source_id])}
        bwd: dict[str, _Best] = {target_id: (0.0, (), [], [target_id])}
        known: dict[str, Entity] = dict(ends)
        fwd_frontier, bwd_frontier = [source_id], [target_id]
        back: Direction = "in" if way == "out" else "out" if way == "in" else "both"
        for _ in range(hops):
            forward = len(fwd_frontier) <= len(bwd_frontier)
            frontier = fwd_frontier if forward else bwd_frontier
            best = fwd if forward else bwd
            offers: dict[str, _Best] = {}
            # the level's relations and the entities at their far ends: one read
            edges, near = await self._edges_linked(frontier, way if forward else back, seen, flt)
            for edge in edges:
                if edge.other in best:
                    continue
                cost, key, rels, path = best[edge.here]
                step = round(cost + 1.0 / edge.relation.weight, 9)
                if forward:
                    offer: _Best = (
                        step,
                        (*key, edge.relation.id, edge.other),
                        [*rels, edge.relation],
                        [*path, edge.other],
                    )
                else:  # the relation leads from edge.other to edge.here, towards the target
                    offer = (
                        step,
                        (edge.relation.id, edge.here, *key),
                        [edge.relation, *rels],
                        [edge.other, *path],
                    )
                current = offers.get(edge.other)
                if current is None or offer[:2] < current[:2]:
                    offers[edge.other] = offer
            found = self._read_entities(sorted(offers), near, seen)
            known.update(found)
            level = sorted(found)
            for entity_id in level:
                best[entity_id] = offers[entity_id]
            if forward:
                fwd_frontier = level
            else:
                bwd_frontier = level
            meet = [m for m in level if m in (bwd if forward else fwd)]
            if meet:
                joined = min(
                    (
                        round(fwd[m][0] + bwd[m][0], 9),
                        (*fwd[m][1], *bwd[m][1]),
                        [*fwd[m][2], *bwd[m][2]],
                        [*fwd[m][3], *bwd[m][3][1:]],
                    )
                    for m in meet
                )
                return Path(entities=[known[i] for i in joined[3]], relations=joined[2])
            if not level:
                return None
        return None
