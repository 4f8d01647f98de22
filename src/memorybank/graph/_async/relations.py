"""Relation verbs: add (dedupe, functional closing), change, invalidate, delete, list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memorybank.core._async.cas import retry_conflicts
from memorybank.errors import InvalidInput, NotFound
from memorybank.graph._async.checks import (
    _direction,
    _ids,
    _label,
    _optional_label,
    _optional_time,
    _source,
    _weight,
)
from memorybank.graph._async.core import GraphCore
from memorybank.graph._async.records import (
    IN,
    OUT,
    SLOT,
    SOURCE,
    SUPPORT,
    _key,
    _link_records,
    _open,
    _raise_confidence,
    _relation,
    _relation_owner,
    _relation_records,
    _slot_of,
    _slot_record,
    _start,
    _support_record,
)
from memorybank.graph.model import Direction, Relation
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset
from memorybank.stores.contract.types import Visibility


class RelationVerbs(GraphCore):
    """Relations: written under their slot's guard, deleted with what was inferred from them."""

    async def _touching(self, ids: Sequence[str]) -> list[Relation]:
        """Every relation (any owner's, unscoped) with an endpoint among ``ids``."""
        both = await self._core.store.record_list_keys_by_kind(self._tenant, (OUT, IN), ids)
        found: dict[str, Relation] = {}
        for records in both.values():
            for record in records:
                found[record.id] = _relation(self._tenant, record)
        return sorted(found.values(), key=lambda r: (r.created_at, r.id))

    async def add_relation(
        self,
        source_id: str,
        type: str,
        target_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        valid_at: datetime | None = None,
        invalid_at: datetime | None = None,
        weight: float = 1.0,
        bidirectional: bool = False,
        confidence: float = 1.0,
        provenance: Sequence[str] = (),
        label: str | None = None,
        properties: dict[str, Any] | None = None,
        source: str = "user",
    ) -> Relation:
        """Add ``source --type--> target``, or extend the open one already there.

        Adding the same (source, type, target) again (same owner, still open)
        adds to its weight, extends its provenance and raises its confidence.
        Of a functional type (``functional_types``), a new relation closes the
        open relation of the same owner, source and type at the new one's
        ``valid_at`` (``invalid_at`` and ``expired_at`` set); nothing else is
        ever closed. The relation is private to the user (agent) given, or to
        the one private endpoint; endpoints private to two different users
        raise ``InvalidInput``. Both endpoints must be visible to the caller
        (``NotFound`` otherwise).
        """
        seen = self._seen(user_id, agent_id)
        owner = self._owner(seen)
        source_id = v.check_id(source_id, "source_id")
        type_ = _label(type, "type")
        target_id = v.check_id(target_id, "target_id")
        start = _optional_time(valid_at, "valid_at")
        end = _optional_time(invalid_at, "invalid_at")
        if start is not None and end is not None and end <= start:
            raise InvalidInput("invalid_at must be after valid_at", field="invalid_at")
        rel_weight = _weight(weight)
        both = v.check_bool(bidirectional, "bidirectional")
        conf = v.check_unit(confidence, "confidence")
        entries = _ids(provenance, "provenance")
        text = _optional_label(label, "label")
        props = v.check_json_object(properties, "properties")
        src = _source(source)
        ends = await self._entities([source_id, target_id], seen)
        for end_id in (source_id, target_id):
            if end_id not in ends:
                raise NotFound(f"entity {end_id!r} not found")
        rel_owner = _relation_owner(owner, ends[source_id], ends[target_id])
        now = self._core.now()
        relation = Relation(
            id=new_id(),
            tenant_id=self._tenant,
            source_id=source_id,
            type=type_,
            target_id=target_id,
            agent_id=rel_owner[0],
            user_id=rel_owner[1],
            label=text,
            weight=rel_weight,
            bidirectional=both,
            properties=props,
            confidence=conf,
            source=src,
            provenance=entries,
            valid_at=start,
            invalid_at=end,
            created_at=now,
            expired_at=None,
        )
        return await self._write_relation(relation)

    async def _write_relation(
        self, relation: Relation, *, functional: bool | None = None
    ) -> Relation:
        """Store a new relation under its slot's guard: dedupe, then functional closing."""
        store = self._core.store
        slot_id = _slot_of(relation)
        if functional is None:
            functional = relation.type in self.functional_types and relation.source != "inferred"

        async def step() -> tuple[Relation, list[str]]:
            now = self._core.now()
            slot = await store.record_get(self._tenant, SLOT, slot_id)
            siblings = [
                _relation(self._tenant, r)
                for r in await store.record_list_keys(self._tenant, OUT, [relation.source_id])
                if (r.agent_id, r.user_id) == (relation.agent_id, relation.user_id)
                and r.data.get("type") == relation.type
            ]
            writes: list[Record] = []
            closed: list[str] = []
            same = [
                s
                for s in siblings
                if s.target_id == relation.target_id
                and _open(s)
                and (s.source == "inferred") == (relation.source == "inferred")
            ]
            if same and relation.invalid_at is None:
                old = min(same, key=lambda s: (s.created_at, s.id))
                result = replace(
                    old,
                    weight=old.weight + relation.weight,
                    confidence=_raise_confidence(old.confidence, relation.confidence),
                    provenance=tuple(dict.fromkeys((*old.provenance, *relation.provenance))),
                    properties={**old.properties, **relation.properties},
                    label=relation.label if relation.label is not None else old.label,
                    bidirectional=old.bidirectional or relation.bidirectional,
                )
                new_entries = [e for e in relation.provenance if e not in old.provenance]
            else:
                result = relation
                new_entries = list(relation.provenance)
                if functional and result.invalid_at is None:
                    begin = _start(result)
                    later = []
                    for s in siblings:
                        if (
                            s.target_id == relation.target_id
                            or not _open(s)
                            or s.source == "inferred"
                        ):
                            continue
                        if _start(s) <= begin:
                            closed_rel = replace(s, invalid_at=begin, expired_at=now)
                            writes += _relation_records(closed_rel, now)
                            closed.append(s.id)
                        else:
                            later.append(_start(s))
                    if later:  # a past value learnt late: it held until the next one began
                        result = replace(result, invalid_at=min(later))
            writes += _relation_records(result, now)
            writes += _link_records(
                "relation", result.id, (result.agent_id, result.user_id), new_entries, now
            )
            for support in result.support:
                writes.append(_support_record(result, support, now))
            writes.append(_slot_record(slot_id, result, slot, now))
            guard = RecordGuard(SLOT, slot_id, None if slot is None else slot.revision)
            await store.record_put(self._tenant, writes, guard=guard)
            return result, closed

        result, closed = await retry_conflicts(step, f"relations of {relation.source_id!r}")
        if closed:
            await self._drop_dependents(closed)
        return result

    async def get_relation(
        self,
        relation_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Relation | None:
        """The relation (current or not), or ``None`` (also when the caller may not see it
        or one of its endpoints)."""
        relation_id = v.check_id(relation_id, "relation_id")
        record = await self._relation_record(relation_id, self._seen(user_id, agent_id))
        return None if record is None else _relation(self._tenant, record)

    async def _change_relation(
        self, relation_id: str, seen: Visibility, change: Any
    ) -> tuple[Relation, Relation]:
        """Apply ``change(old, now) -> new`` to the relation under its slot's guard."""
        store = self._core.store

        async def step() -> tuple[Relation, Relation]:
            record = await self._relation_record(relation_id, seen)
            if record is None:
                raise NotFound(f"relation {relation_id!r} not found")
            old = _relation(self._tenant, record)
            slot_id = _slot_of(old)
            slot = await store.record_get(self._tenant, SLOT, slot_id)
            now = self._core.now()
            new = change(old, now)
            writes = [*_relation_records(new, now), _slot_record(slot_id, new, slot, now)]
            added = [e for e in new.provenance if e not in old.provenance]
            writes += _link_records("relation", new.id, (new.agent_id, new.user_id), added, now)
            guard = RecordGuard(SLOT, slot_id, None if slot is None else slot.revision)
            await store.record_put(self._tenant, writes, guard=guard)
            return old, new

        return await retry_conflicts(step, f"relation {relation_id!r}")

    async def update_relation(
        self,
        relation_id: str,
        *,
        label: str | Unset | None = UNSET,
        weight: float | Unset = UNSET,
        properties: dict[str, Any] | Unset = UNSET,
        confidence: float | Unset = UNSET,
        valid_at: datetime | Unset | None = UNSET,
        bidirectional: bool | Unset = UNSET,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Relation:
        """Change the given fields; ``NotFound`` if absent (or not visible). Endpoints,
        type and owner never change (add another relation instead)."""
        relation_id = v.check_id(relation_id, "relation_id")
        seen = self._seen(user_id, agent_id)
        changes: dict[str, Any] = {}
        if not isinstance(label, Unset):
            changes["label"] = _optional_label(label, "label")
        if not isinstance(weight, Unset):
            changes["weight"] = _weight(weight)
        if not isinstance(properties, Unset):
            changes["properties"] = v.check_json_object(properties, "properties")
        if not isinstance(confidence, Unset):
            changes["confidence"] = v.check_unit(confidence, "confidence")
        if not isinstance(valid_at, Unset):
            changes["valid_at"] = _optional_time(valid_at, "valid_at")
        if not isinstance(bidirectional, Unset):
            changes["bidirectional"] = v.check_bool(bidirectional, "bidirectional")

        def change(old: Relation, now: datetime) -> Relation:
            new = replace(old, **changes)
            if new.invalid_at is not None and _start(new) >= new.invalid_at:
                raise InvalidInput("valid_at must be before invalid_at", field="valid_at")
            return new

        return (await self._change_relation(relation_id, seen, change))[1]

    async def invalidate_relation(
        self,
        relation_id: str,
        *,
        at: datetime | None = None,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Relation:
        """Mark the relation as no longer holding from ``at`` (default: now); it stays in
        history (``include_invalid=True``). Relations inferred from it are deleted.
        An already invalid relation is returned unchanged. ``NotFound`` if absent."""
        relation_id = v.check_id(relation_id, "relation_id")
        seen = self._seen(user_id, agent_id)
        when = _optional_time(at, "at")

        def change(old: Relation, now: datetime) -> Relation:
            if not _open(old):
                return old
            end = when if when is not None else now
            if end <= _start(old):
                raise InvalidInput("at must be after the relation's valid_at", field="at")
            return replace(old, invalid_at=end, expired_at=now)

        _, new = await self._change_relation(relation_id, seen, change)
        await self._drop_dependents([relation_id])
        return new

    async def delete_relation(
        self,
        relation_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> bool:
        """Delete the relation for good (not an invalidation); whether it existed.

        ``False`` for a relation the caller may not see, as for a missing one.
        """
        relation_id = v.check_id(relation_id, "relation_id")
        record = await self._relation_record(relation_id, self._seen(user_id, agent_id))
        if record is None:
            return False
        await self._remove_relation(_relation(self._tenant, record))
        return True

    async def _remove_relation(self, relation: Relation) -> None:
        """Delete both records, links and support, then what was inferred from it."""
        store = self._core.store
        slot_id = _slot_of(relation)

        async def claim() -> None:
            # Bump the slot first: a writer that read the relation before cannot put it back.
            slot = await store.record_get(self._tenant, SLOT, slot_id)
            now = self._core.now()
            guard = RecordGuard(SLOT, slot_id, None if slot is None else slot.revision)
            await store.record_put(
                self._tenant, [_slot_record(slot_id, relation, slot, now)], guard=guard
            )

        await retry_conflicts(claim, f"relations of {relation.source_id!r}")
        await store.record_delete(self._tenant, OUT, [relation.id])
        await store.record_delete(self._tenant, IN, [relation.id])
        links = [_key("source", "relation", relation.id, e) for e in relation.provenance]
        if links:
            await store.record_delete(self._tenant, SOURCE, links)
        support = [_key("support", relation.id, s) for s in relation.support]
        if support:
            await store.record_delete(self._tenant, SUPPORT, support)
        await self._drop_dependents([relation.id])

    async def _drop_dependents(self, relation_ids: Sequence[str]) -> None:
        """Delete the inferred relations supported by any of these (transitively)."""
        store = self._core.store
        pending = list(relation_ids)
        while pending:
            records = await store.record_list_keys(self._tenant, SUPPORT, pending)
            pending = []
            for record in records:
                inferred = await store.record_get(
                    self._tenant, OUT, str(record.data["inferred_id"])
                )
                await store.record_delete(self._tenant, SUPPORT, [record.id])
                if inferred is not None:
                    await self._remove_relation(_relation(self._tenant, inferred))

    async def relations(
        self,
        entity_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        direction: Direction = "both",
        types: Sequence[str] | str | None = None,
        as_of: datetime | None = None,
        include_invalid: bool = False,
        include_inferred: bool = False,
        min_weight: float | None = None,
        min_confidence: float | None = None,
        limit: int | None = None,
    ) -> list[Relation]:
        """The entity's relations the caller sees, oldest first (the oldest ``limit``);
        ``NotFound`` for an entity it may not see. ``direction``: ``"out"`` (from it),
        ``"in"`` (to it) or ``"both"``; a bidirectional relation counts both ways."""
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
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
        await self._entity(entity_id, seen)
        edges = await self._edges([entity_id], way, seen, flt)
        others = await self._entities(sorted({e.other for e in edges}), seen)
        found: dict[str, Relation] = {}
        for edge in edges:
            if edge.other in others or edge.other == entity_id:
                found[edge.relation.id] = edge.relation
        return sorted(found.values(), key=lambda r: (r.created_at, r.id))[:count]
