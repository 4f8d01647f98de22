"""Entity verbs: add (merge by name), update, observations, delete, merge."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memorybank.core._async.cas import retry_conflicts
from memorybank.errors import Conflict, InvalidInput
from memorybank.graph._async.checks import _ids, _label, _labels, _source, _texts
from memorybank.graph._async.records import (
    ENTITY,
    IDENT,
    NAME,
    SLOT,
    SOURCE,
    _entity,
    _entity_record,
    _ident_id,
    _ident_record,
    _key,
    _link_records,
    _name_records,
    _names,
    _obs_provenance,
    _raise_confidence,
    _text,
    normalise,
)
from memorybank.graph._async.relations import RelationVerbs
from memorybank.graph.model import Entity
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, VectorItem
from memorybank.stores.contract.types import Visibility, visible


class _Taken(Exception):
    """Inside a retried step: the name is another entity's (not retried, raised as Conflict)."""


def _with_aliases(entity: Entity, names: Iterable[str]) -> tuple[str, ...]:
    """``entity``'s aliases, then each of ``names`` that is none of its names yet."""
    known = {normalise(a) for a in (entity.name, *entity.aliases)}
    aliases = list(entity.aliases)
    for alias in names:
        if normalise(alias) not in known:
            known.add(normalise(alias))
            aliases.append(alias)
    return tuple(aliases)


def _added_names(old: Entity, new: Entity) -> dict[str, str]:
    """The name records ``new`` has and ``old`` had not."""
    before = _names(old)
    return {k: f for k, f in _names(new).items() if k not in before}


class EntityVerbs(RelationVerbs):
    """Entities: one per (owner, type, normalised name), guarded by its identity record."""

    async def _vector(self, entity: Entity) -> VectorItem | None:
        return await self._embed(ENTITY, entity.id, _text(entity))

    async def _rewrite(
        self,
        record: Record,
        old: Entity,
        entity: Entity,
        prov: dict[str, list[str]],
        links: Sequence[Record] = (),
    ) -> None:
        """Write ``entity`` (``old``, read as ``record``) with its new names and ``links``,
        guarded on the revision read: ``Conflict`` (nothing written) when another writer
        got in between."""
        writes = [
            _entity_record(entity, prov, record.revision + 1),
            *_name_records(entity, _added_names(old, entity)),
            *links,
        ]
        guard = RecordGuard(ENTITY, record.id, record.revision)
        await self._core.store.record_put(self._tenant, writes, guard=guard)

    async def add_entity(
        self,
        name: str,
        *,
        type: str = "concept",
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        aliases: Sequence[str] = (),
        observations: Sequence[str] = (),
        properties: dict[str, Any] | None = None,
        confidence: float = 1.0,
        source: str = "user",
        provenance: Sequence[str] = (),
    ) -> Entity:
        """Add an entity, or merge into the one of the same owner, type and normalised name.

        A merge adds the new aliases and observations, updates the properties
        (new values win) and raises the confidence; ``provenance`` (entry ids)
        is recorded for the observations given. Returns the stored entity.
        """
        seen = self._seen(user_id, agent_id)
        owner = self._owner(seen)
        name = _label(name, "name")
        type_ = _label(type, "type")
        new_aliases = _labels(aliases, "aliases")
        new_obs = _texts(observations, "observations", self._core.max_content_chars)
        props = v.check_json_object(properties, "properties")
        conf = v.check_unit(confidence, "confidence")
        src = _source(source)
        entries = _ids(provenance, "provenance")
        store = self._core.store
        ident_id = _key("ident", owner[0], owner[1], type_, normalise(name))

        async def step() -> tuple[Entity, VectorItem | None]:
            now = self._core.now()
            ident = await store.record_get(self._tenant, IDENT, ident_id)
            old_record = None
            if ident is not None:
                old_record = await store.record_get(
                    self._tenant, ENTITY, str(ident.data["entity_id"])
                )
            if old_record is None:
                entity = Entity(
                    id=new_id(),
                    tenant_id=self._tenant,
                    name=name,
                    type=type_,
                    agent_id=owner[0],
                    user_id=owner[1],
                    aliases=tuple(a for a in new_aliases if normalise(a) != normalise(name)),
                    observations=new_obs,
                    properties=props,
                    confidence=conf,
                    source=src,
                    created_at=now,
                    updated_at=now,
                )
                prov = {o: list(entries) for o in new_obs} if entries else {}
                writes = [
                    _entity_record(entity, prov),
                    _ident_record(entity, ident, now),
                    *_name_records(entity, _names(entity)),
                    *_link_records("entity", entity.id, owner, entries if new_obs else (), now),
                ]
                guard = RecordGuard(IDENT, ident_id, None if ident is None else ident.revision)
                vector = await self._vector(entity)
                await store.record_put(self._tenant, writes, guard=guard)
                return entity, vector
            old = _entity(self._tenant, old_record)
            prov = _obs_provenance(old_record)
            observations = tuple(dict.fromkeys((*old.observations, *new_obs)))
            for obs in new_obs:
                if entries:
                    prov[obs] = list(dict.fromkeys((*prov.get(obs, ()), *entries)))
            entity = replace(
                old,
                aliases=_with_aliases(old, (name, *new_aliases)),
                observations=observations,
                properties={**old.properties, **props},
                confidence=_raise_confidence(old.confidence, conf),
                updated_at=now,
            )
            links = _link_records("entity", entity.id, owner, entries if new_obs else (), now)
            vector = await self._vector(entity) if _text(entity) != _text(old) else None
            await self._rewrite(old_record, old, entity, prov, links)
            return entity, vector

        entity, vector = await retry_conflicts(step, f"entity {name!r}")
        await self._put_vector(vector)
        return entity

    async def get_entity(
        self,
        entity_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Entity | None:
        """The entity, or ``None`` (also when the caller may not see it)."""
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
        return (await self._entities([entity_id], seen)).get(entity_id)

    async def update_entity(
        self,
        entity_id: str,
        *,
        name: str | Unset = UNSET,
        type: str | Unset = UNSET,
        aliases: Sequence[str] | Unset = UNSET,
        observations: Sequence[str] | Unset = UNSET,
        properties: dict[str, Any] | Unset = UNSET,
        confidence: float | Unset = UNSET,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Entity:
        """Replace the given fields; ``NotFound`` if absent (or not visible).

        A new name or type must not be another entity's of the same owner
        (``Conflict``: use ``merge_entities``). Owner never changes.
        """
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
        new_name = None if isinstance(name, Unset) else _label(name, "name")
        new_type = None if isinstance(type, Unset) else _label(type, "type")
        new_aliases = None if isinstance(aliases, Unset) else _labels(aliases, "aliases")
        new_obs = (
            None
            if isinstance(observations, Unset)
            else _texts(observations, "observations", self._core.max_content_chars)
        )
        props = (
            None if isinstance(properties, Unset) else v.check_json_object(properties, "properties")
        )
        conf = None if isinstance(confidence, Unset) else v.check_unit(confidence, "confidence")

        async def step() -> tuple[Entity, Entity, VectorItem | None]:
            record = await self._entity_record(entity_id, seen)
            old = _entity(self._tenant, record)
            now = self._core.now()
            entity = replace(
                old,
                name=old.name if new_name is None else new_name,
                type=old.type if new_type is None else new_type,
                aliases=old.aliases if new_aliases is None else new_aliases,
                observations=old.observations if new_obs is None else new_obs,
                properties=old.properties if props is None else props,
                confidence=old.confidence if conf is None else conf,
                updated_at=now,
            )
            entity = replace(
                entity,
                aliases=tuple(a for a in entity.aliases if normalise(a) != normalise(entity.name)),
            )
            if _ident_id(entity) != _ident_id(old):
                await self._claim_ident(entity, now)
            vector = await self._vector(entity) if _text(entity) != _text(old) else None
            await self._rewrite(record, old, entity, _obs_provenance(record))
            return old, entity, vector

        try:
            old, entity, vector = await retry_conflicts(step, f"entity {entity_id!r}")
        except _Taken as taken:
            raise Conflict(str(taken)) from None
        await self._drop_stale_names(old, entity)
        await self._put_vector(vector)
        return entity

    async def _claim_ident(self, entity: Entity, now: datetime) -> None:
        """Point the identity of ``entity``'s new name/type at it (``_Taken`` if another
        entity holds it), before the entity itself is written under its own guard."""
        store = self._core.store
        ident_id = _ident_id(entity)
        ident = await store.record_get(self._tenant, IDENT, ident_id)
        if ident is not None:
            if ident.data.get("entity_id") == entity.id:
                return
            holder = await store.record_get(self._tenant, ENTITY, str(ident.data["entity_id"]))
            if holder is not None:
                raise _Taken(f"another {entity.type} is named {entity.name!r}; use merge_entities")
        guard = RecordGuard(IDENT, ident_id, None if ident is None else ident.revision)
        await store.record_put(self._tenant, [_ident_record(entity, ident, now)], guard=guard)

    async def _drop_stale_names(self, old: Entity, new: Entity) -> None:
        store = self._core.store
        stale = [k for k in _names(old) if k not in _names(new)]
        if stale:
            await store.record_delete(self._tenant, NAME, stale)
        if _ident_id(old) != _ident_id(new):
            ident = await store.record_get(self._tenant, IDENT, _ident_id(old))
            if ident is not None and ident.data.get("entity_id") == old.id:
                try:
                    guard = RecordGuard(IDENT, ident.id, ident.revision)
                    await store.record_delete(self._tenant, IDENT, [ident.id], guard=guard)
                except Conflict:
                    pass  # re-used by a new entity meanwhile: it is that one's now

    async def add_observations(
        self,
        entity_id: str,
        observations: Sequence[str],
        *,
        provenance: Sequence[str] = (),
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Entity:
        """Add observations (short text facts) to the entity; known ones are kept once."""
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
        new_obs = _texts(observations, "observations", self._core.max_content_chars)
        entries = _ids(provenance, "provenance")
        return await self._change_observations(entity_id, seen, add=new_obs, entries=entries)

    async def delete_observations(
        self,
        entity_id: str,
        observations: Sequence[str],
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Entity:
        """Remove these observations from the entity (unknown ones are ignored)."""
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
        gone = _texts(observations, "observations", self._core.max_content_chars)
        return await self._change_observations(entity_id, seen, remove=gone)

    async def _change_observations(
        self,
        entity_id: str,
        seen: Visibility | None,
        *,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
        entries: Sequence[str] = (),
        drop_entry: str | None = None,
    ) -> Entity:

        async def step() -> tuple[Entity, VectorItem | None]:
            record = await self._entity_record(entity_id, seen)
            old = _entity(self._tenant, record)
            prov = _obs_provenance(record)
            obs = [o for o in old.observations if o not in remove]
            if drop_entry is not None:
                kept = []
                for o in obs:
                    sources = prov.get(o)
                    if sources and drop_entry in sources:
                        sources = [e for e in sources if e != drop_entry]
                        prov[o] = sources
                        if not sources:
                            continue
                    kept.append(o)
                obs = kept
            for o in add:
                if o not in obs:
                    obs.append(o)
                if entries:
                    prov[o] = list(dict.fromkeys((*prov.get(o, ()), *entries)))
            now = self._core.now()
            entity = replace(old, observations=tuple(obs), updated_at=now)
            owner = (old.agent_id, old.user_id)
            links = _link_records("entity", entity.id, owner, entries if add else (), now)
            vector = await self._vector(entity) if _text(entity) != _text(old) else None
            await self._rewrite(record, old, entity, prov, links)
            return entity, vector

        entity, vector = await retry_conflicts(step, f"entity {entity_id!r}")
        await self._put_vector(vector)
        return entity

    async def delete_entity(
        self,
        entity_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> bool:
        """Delete the entity and every relation touching it (any owner's); whether it existed.

        ``False`` for an entity the caller may not see, as for a missing one.
        """
        entity_id = v.check_id(entity_id, "entity_id")
        seen = self._seen(user_id, agent_id)
        record = await self._core.store.record_get(self._tenant, ENTITY, entity_id)
        if record is None or not visible(seen, record.agent_id, record.user_id):
            return False
        return await self._remove_entity(record)

    async def _remove_entity(self, record: Record) -> bool:
        store = self._core.store
        entity = _entity(self._tenant, record)
        try:
            await store.record_delete(
                self._tenant,
                ENTITY,
                [entity.id],
                guard=RecordGuard(ENTITY, entity.id, record.revision),
            )
        except Conflict:
            fresh = await store.record_get(self._tenant, ENTITY, entity.id)
            if fresh is None:
                return False
            return await self._remove_entity(fresh)
        await self._drop_stale_names(entity, replace(entity, name="\x00", aliases=(), type="\x00"))
        touching = await self._touching([entity.id])
        for relation in touching:
            await self._remove_relation(relation)
        slots = await store.record_list_keys(self._tenant, SLOT, [entity.id])
        if slots:  # the entity can be no relation's source again: its slots are spent
            await store.record_delete(self._tenant, SLOT, [r.id for r in slots])
        links = [
            _key("source", "entity", entity.id, e)
            for e in {e for val in _obs_provenance(record).values() for e in val}
        ]
        if links:
            await store.record_delete(self._tenant, SOURCE, links)
        return True

    async def merge_entities(
        self,
        keep: str,
        merge: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Entity:
        """Fold ``merge`` into ``keep``: its name and aliases become aliases, observations,
        properties (``keep``'s win) and provenance join, its relations move over; then
        ``merge`` is deleted. Both must have the same owner (``InvalidInput`` otherwise).
        Merging an entity into itself changes nothing and returns it."""
        keep = v.check_id(keep, "keep")
        merge = v.check_id(merge, "merge")
        seen = self._seen(user_id, agent_id)
        kept_record = await self._entity_record(keep, seen)
        if keep == merge:
            return _entity(self._tenant, kept_record)
        gone_record = await self._entity_record(merge, seen)
        gone = _entity(self._tenant, gone_record)
        kept = _entity(self._tenant, kept_record)
        if (kept.agent_id, kept.user_id) != (gone.agent_id, gone.user_id):
            raise InvalidInput("entities of different owners cannot be merged", field="merge")
        gone_prov = _obs_provenance(gone_record)

        async def step() -> tuple[Entity, VectorItem | None]:
            record = await self._entity_record(keep, seen)
            old = _entity(self._tenant, record)
            prov = _obs_provenance(record)
            for obs, entries in gone_prov.items():
                prov[obs] = list(dict.fromkeys((*prov.get(obs, ()), *entries)))
            now = self._core.now()
            entity = replace(
                old,
                aliases=_with_aliases(old, (gone.name, *gone.aliases)),
                observations=tuple(dict.fromkeys((*old.observations, *gone.observations))),
                properties={**gone.properties, **old.properties},
                confidence=max(old.confidence, gone.confidence),
                updated_at=now,
            )
            sources = sorted({e for val in gone_prov.values() for e in val})
            links = _link_records("entity", keep, (old.agent_id, old.user_id), sources, now)
            vector = await self._vector(entity)
            await self._rewrite(record, old, entity, prov, links)
            return entity, vector

        entity, vector = await retry_conflicts(step, f"entity {keep!r}")
        for relation in await self._touching([merge]):
            source = keep if relation.source_id == merge else relation.source_id
            target = keep if relation.target_id == merge else relation.target_id
            await self._remove_relation(relation)
            if source == target or relation.source == "inferred":
                continue
            await self._write_relation(
                replace(relation, id=new_id(), source_id=source, target_id=target)
            )
        await self._remove_entity(await self._entity_record(merge, None))
        await self._put_vector(vector)
        return entity
