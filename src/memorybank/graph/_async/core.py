"""The shared base of the graph verbs: scope, the relation filter, scoped reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memorybank.core._async.core import Namespace
from memorybank.errors import NotFound
from memorybank.graph._async.checks import _optional_number, _optional_time, _types
from memorybank.graph._async.records import ENTITY, IN, OUT, _entity, _relation
from memorybank.graph.model import DEFAULT_FUNCTIONAL_TYPES, Direction, Entity, Relation
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import Record, Unset
from memorybank.stores.contract.types import Visibility, visible

if TYPE_CHECKING:
    pass

_PAGE = 500


@dataclass(frozen=True, slots=True)
class _Filter:
    """Which relations a read keeps (time, types, weight, confidence, inferred)."""

    when: datetime | None  # None: every time (include_invalid)
    types: frozenset[str] | None = None
    min_weight: float | None = None
    min_confidence: float | None = None
    include_inferred: bool = False

    def keeps(self, relation: Relation) -> bool:
        if relation.source == "inferred" and not self.include_inferred:
            return False
        if self.types is not None and relation.type not in self.types:
            return False
        if self.min_weight is not None and relation.weight < self.min_weight:
            return False
        if self.min_confidence is not None and relation.confidence < self.min_confidence:
            return False
        return self.when is None or relation.holds_at(self.when)


@dataclass(slots=True)
class _Edge:
    relation: Relation
    here: str
    other: str


class GraphCore(Namespace):
    """What every group of graph verbs shares: the memory, tenant and scope of the
    handle, who a call acts for, and the scoped reads of entities and relations."""

    @property
    def functional_types(self) -> set[str]:
        """Relation types a source holds one of at a time (a new one closes the open one)."""
        types = self._core.functional_types
        if types is None:
            types = self._core.functional_types = set(DEFAULT_FUNCTIONAL_TYPES)
        return types

    # -- scope ------------------------------------------------------------------------

    def _seen(self, user_id: object, agent_id: object) -> Visibility:
        """Who a call acts for: given, else the handle's principal, else nobody (shared only)."""
        return Visibility(self._scope.owner(agent_id, "agent_id"), self._scope.owner(user_id))

    @staticmethod
    def _owner(seen: Visibility) -> tuple[str | None, str | None]:
        agent, user = seen.agent_id, seen.user_id
        assert not isinstance(agent, Unset) and not isinstance(user, Unset)
        return agent, user

    async def _entities(self, ids: Sequence[str], seen: Visibility | None) -> dict[str, Entity]:
        """The entities with these ids that exist and ``seen`` may see."""
        if not ids:
            return {}
        records = await self._core.store.record_get_many(self._tenant, ENTITY, ids)
        return {
            rid: _entity(self._tenant, r)
            for rid, r in records.items()
            if visible(seen, r.agent_id, r.user_id)
        }

    def _read_entities(
        self, ids: Sequence[str], near: Mapping[str, Record], seen: Visibility | None
    ) -> dict[str, Entity]:
        """``_entities`` of ``ids`` from entity records read already (``near``)."""
        return {
            i: _entity(self._tenant, r)
            for i in ids
            if (r := near.get(i)) is not None and visible(seen, r.agent_id, r.user_id)
        }

    async def _entity_record(self, entity_id: str, seen: Visibility | None) -> Record:
        record = await self._core.store.record_get(self._tenant, ENTITY, entity_id)
        if record is None or not visible(seen, record.agent_id, record.user_id):
            raise NotFound(f"entity {entity_id!r} not found")
        return record

    async def _entity(self, entity_id: str, seen: Visibility) -> Entity:
        return _entity(self._tenant, await self._entity_record(entity_id, seen))

    async def _relation_record(self, relation_id: str, seen: Visibility | None) -> Record | None:
        """The relation's out-record if it exists and ``seen`` may see it and both endpoints."""
        record = await self._core.store.record_get(self._tenant, OUT, relation_id)
        if record is None or not visible(seen, record.agent_id, record.user_id):
            return None
        if seen is not None:
            ends = {str(record.data["source_id"]), str(record.data["target_id"])}
            if len(await self._entities(sorted(ends), seen)) != len(ends):
                return None
        return record

    def _filter(
        self,
        *,
        as_of: object,
        include_invalid: object,
        include_inferred: object,
        types: object = None,
        min_weight: object = None,
        min_confidence: object = None,
    ) -> _Filter:
        when = _optional_time(as_of, "as_of")
        if v.check_bool(include_invalid, "include_invalid") and when is None:
            moment = None
        else:
            moment = when if when is not None else self._core.now()
        return _Filter(
            when=moment,
            types=_types(types),
            min_weight=_optional_number(min_weight, "min_weight"),
            min_confidence=None
            if min_confidence is None
            else v.check_unit(min_confidence, "min_confidence"),
            include_inferred=v.check_bool(include_inferred, "include_inferred"),
        )

    async def _edges(
        self, ids: Sequence[str], way: Direction, seen: Visibility, flt: _Filter
    ) -> list[_Edge]:
        """The relations leaving ``ids`` in direction ``way`` that pass ``flt`` (endpoints
        not yet checked), oldest first: one read of both stored directions."""
        both = await self._core.store.record_list_keys_by_kind(
            self._tenant, (OUT, IN), ids, visible_to=seen
        )
        return self._as_edges(both, way, seen, flt)

    async def _edges_linked(
        self, ids: Sequence[str], way: Direction, seen: Visibility, flt: _Filter
    ) -> tuple[list[_Edge], dict[str, Record]]:
        """``_edges``, and in the same read the entity records at the far ends of the
        relations read that ``seen`` may see (``record_list_keys_linked``), by id."""
        both, near = await self._core.store.record_list_keys_linked(
            self._tenant, {OUT: "target_id", IN: "source_id"}, ids, ENTITY, visible_to=seen
        )
        return self._as_edges(both, way, seen, flt), near

    def _as_edges(
        self, both: dict[str, list[Record]], way: Direction, seen: Visibility, flt: _Filter
    ) -> list[_Edge]:
        edges: dict[tuple[str, str], _Edge] = {}
        for kind, records in both.items():
            for record in records:
                if not visible(seen, record.agent_id, record.user_id):
                    continue
                relation = _relation(self._tenant, record)
                if not flt.keeps(relation):
                    continue
                forward = kind == OUT
                if not (relation.bidirectional or way == "both" or (way == "out") == forward):
                    continue
                here, other = (
                    (relation.source_id, relation.target_id)
                    if forward
                    else (relation.target_id, relation.source_id)
                )
                edges[(relation.id, here)] = _Edge(relation, here, other)
        return sorted(edges.values(), key=lambda e: (e.relation.created_at, e.relation.id, e.here))

    # -- whole graph ------------------------------------------------------------------

    async def _all_relations(self, seen: Visibility | None) -> list[Relation]:
        return [_relation(self._tenant, r) for r in await self._all(OUT, seen)]

    async def _all_entities(self, seen: Visibility | None) -> list[Entity]:
        return [_entity(self._tenant, r) for r in await self._all(ENTITY, seen)]

    async def _all(self, kind: str, seen: Visibility | None) -> list[Record]:
        """Every record of ``kind`` that ``seen`` may see, read a page at a time."""
        out: list[Record] = []
        after: tuple[datetime, str] | None = None
        while True:
            page = await self._core.store.record_page(
                self._tenant, kind, limit=_PAGE, after=after, visible_to=seen
            )
            out += [r for r in page if visible(seen, r.agent_id, r.user_id)]
            if len(page) < _PAGE:
                return out
            after = (page[-1].created_at, page[-1].id)
