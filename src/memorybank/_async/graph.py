"""``memory.graph``: a temporal, scoped knowledge graph on the store contract.

The graph is written once, here, above the stores: every store that keeps
records (``record_put``/``get``/``delete``/``list`` and the batch reads
``record_get_many``, ``record_list_keys``, ``record_page``) keeps a graph, with
the same answers everywhere. Storage, one record kind per role:

``graph_entity``
    An entity (id: a new ULID). ``agent_id``/``user_id`` are its owner;
    ``content`` is its name, aliases and observations (what keyword search
    reads); ``data`` holds the fields, with ``obs_provenance`` (observation ->
    entry ids it came from).
``graph_ident``
    The uniqueness lock of one (agent, user, type, normalised name): its id is
    derived from those (``compound_id``), its data names the entity. A new
    entity is written in one atomic ``record_put`` with its ident, guarded on
    the ident's absence, so two concurrent adds of one name make one entity
    (the loser re-reads and merges).
``graph_name``
    One per normalised name and alias of an entity (``key`` = the normalised
    text, through ``compound_id`` when longer than a key may be):
    ``find_entities(name=)`` is one indexed ``record_list_keys``.
``graph_out`` / ``graph_in``
    A relation, stored twice in one atomic write with the same id and data:
    ``key`` = source id in ``graph_out`` and target id in ``graph_in``, so one
    breadth-first level is one ``record_list_keys`` per direction.
``graph_slot``
    One per (owner, source, relation type). Every write of a relation is
    guarded on its slot's revision and bumps it, so functional closing and the
    (source, type, target) dedupe are race-free (``_cas.retry_conflicts``).
``graph_source``
    Provenance links (``key`` = entry id) from an entry to the entities and
    relations derived from it: ``entries.delete(..., cascade_facts=True)``
    finds them without a scan.
``graph_support``
    ``key`` = a relation id; names an ``inferred`` relation it supports, which
    is deleted when the support is invalidated, closed or deleted.

Scope: a relation is owned by the user (agent) it was added with, else by the
one private endpoint (a relation touching an entity private to a user is
private to that user). Reads act for the handle's principal or the one given;
naming nobody reads shared nodes only (never the unscoped read). A relation is
visible when it and both endpoints are; a by-id verb on something invisible
behaves exactly like a missing id.

Time: reads return what holds now (``valid_at`` or else ``created_at`` <= now <
``invalid_at``); ``as_of=`` asks for another valid time; ``include_invalid=True``
returns history too. ``delete_*`` removes for good.
"""

from __future__ import annotations

import json
import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank import _validate as v
from memorybank._async._cas import retry_conflicts
from memorybank._async.stores.base import UNSET, Record, RecordGuard, Unset, VectorItem
from memorybank._concurrency import Backlog
from memorybank._ids import compound_id, new_id
from memorybank._scope import ROOT, Scope
from memorybank.errors import Conflict, InvalidInput, NotFound
from memorybank.graph.model import (
    Direction,
    Entity,
    GraphContextOptions,
    GraphStats,
    Path,
    Relation,
    Subgraph,
)
from memorybank.stores._types import Visibility, visible

if TYPE_CHECKING:
    from memorybank._async.memory import _Core
    from memorybank.extract.base import IngestReport
    from memorybank.records import Entry

__all__ = [
    "ENTITY",
    "GRAPH_KINDS",
    "IDENT",
    "IN",
    "NAME",
    "OUT",
    "RULES",
    "SLOT",
    "SOURCE",
    "SUPPORT",
    "AsyncGraph",
    "normalise",
]

ENTITY = "graph_entity"
IDENT = "graph_ident"
NAME = "graph_name"
OUT = "graph_out"
IN = "graph_in"
SLOT = "graph_slot"
SOURCE = "graph_source"
SUPPORT = "graph_support"
#: Every record kind of the graph (export/import carries them all).
GRAPH_KINDS = (ENTITY, IDENT, NAME, OUT, IN, SLOT, SOURCE, SUPPORT)

#: The inference rules ``infer`` knows.
RULES = ("transitive_part_of", "transitive_located_in", "colleagues", "knows_symmetry")
_SOURCES = ("extracted", "user", "inferred")
_DIRECTIONS = ("out", "in", "both")
_PAGE = 500


def normalise(name: str) -> str:
    """The form names are compared in: case-folded, trimmed, inner whitespace collapsed."""
    return " ".join(name.split()).casefold()


# -- validation -----------------------------------------------------------------------


def _label(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    return v.check_text(value, field, max_chars=v.MAX_LABEL_CHARS)


def _optional_label(value: object, field: str) -> str | None:
    return None if value is None else _label(value, field)


def _labels(value: object, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of strings", field=field)
    return tuple(dict.fromkeys(_label(item, field) for item in value))


def _texts(value: object, field: str, max_chars: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of strings", field=field)
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInput(f"{field} must hold non-empty strings", field=field)
        out.append(v.check_text(item, field, max_chars=max_chars))
    return tuple(dict.fromkeys(out))


def _ids(value: object, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of ids", field=field)
    return tuple(dict.fromkeys(v.check_id(item, field) for item in value))


def _unit(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number", field=field)
    if not 0 <= value <= 1:
        raise InvalidInput(f"{field} must be between 0 and 1", field=field)
    return float(value)


def _weight(value: object, field: str = "weight") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number", field=field)
    if not 0 < value < 1e300:  # compared as given: a huge int must not reach float()
        raise InvalidInput(f"{field} must be a positive finite number", field=field)
    weight = float(value)
    if not math.isfinite(weight):
        raise InvalidInput(f"{field} must be a positive finite number", field=field)
    return weight


def _optional_number(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1e300 < value < 1e300:
        raise InvalidInput(f"{field} must be a finite number", field=field)
    return float(value)


def _optional_time(value: object, field: str) -> datetime | None:
    return None if value is None else v.check_time(value, field)


def _source(value: object) -> str:
    if value not in _SOURCES:
        raise InvalidInput(f"source must be one of {', '.join(_SOURCES)}", field="source")
    return str(value)


def _direction(value: object) -> Direction:
    if value == "out":
        return "out"
    if value == "in":
        return "in"
    if value == "both":
        return "both"
    raise InvalidInput("direction must be 'out', 'in' or 'both'", field="direction")


def _types(value: object, field: str = "types") -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({_label(value, field)})
    return frozenset(_labels(value, field))


def _depth(value: object, field: str) -> int:
    depth = v.check_limit(value, field, allow_none=False) or 0
    if depth > 64:
        raise InvalidInput(f"{field} must be at most 64", field=field)
    return depth


def _bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false", field=field)
    return value


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _time(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


def _raise_confidence(old: float, new: float) -> float:
    """Two sightings of one thing are more certain than either (noisy-or)."""
    return round(1.0 - (1.0 - old) * (1.0 - new), 12)


def _key(*parts: str | None) -> str:
    return compound_id(json.dumps(list(parts), ensure_ascii=False, separators=(",", ":")))


# -- records <-> values ---------------------------------------------------------------


def _entity(tenant: str, record: Record) -> Entity:
    data = record.data
    return Entity(
        id=record.id,
        tenant_id=tenant,
        name=str(data["name"]),
        type=str(data["type"]),
        agent_id=record.agent_id,
        user_id=record.user_id,
        aliases=tuple(data.get("aliases") or ()),
        observations=tuple(data.get("observations") or ()),
        properties=dict(data.get("properties") or {}),
        confidence=float(data.get("confidence", 1.0)),
        source=str(data.get("source", "user")),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _obs_provenance(record: Record) -> dict[str, list[str]]:
    raw = record.data.get("obs_provenance") or {}
    return {str(k): [str(e) for e in val] for k, val in raw.items()}


def _entity_record(
    entity: Entity, obs_provenance: dict[str, list[str]], revision: int = 0
) -> Record:
    return Record(
        kind=ENTITY,
        id=entity.id,
        agent_id=entity.agent_id,
        user_id=entity.user_id,
        content=_text(entity),
        data={
            "name": entity.name,
            "type": entity.type,
            "aliases": list(entity.aliases),
            "observations": list(entity.observations),
            "properties": entity.properties,
            "confidence": entity.confidence,
            "source": entity.source,
            "obs_provenance": {
                k: val for k, val in obs_provenance.items() if val and k in entity.observations
            },
        },
        created_at=entity.created_at,
        updated_at=entity.updated_at,
        revision=revision,
    )


def _text(entity: Entity) -> str:
    """What keyword and semantic search read of an entity."""
    return "\n".join((entity.name, *entity.aliases, *entity.observations))


def _ident_id(entity: Entity) -> str:
    return _key("ident", entity.agent_id, entity.user_id, entity.type, normalise(entity.name))


def _names(entity: Entity) -> dict[str, str]:
    """The entity's name records: id -> normalised name (or alias)."""
    forms = dict.fromkeys(normalise(n) for n in (entity.name, *entity.aliases))
    return {_key("name", entity.id, form): form for form in forms}


def _name_records(entity: Entity, forms: dict[str, str]) -> list[Record]:
    return [
        Record(
            kind=NAME,
            id=name_id,
            agent_id=entity.agent_id,
            user_id=entity.user_id,
            content="",
            data={"entity_id": entity.id},
            created_at=entity.updated_at,
            updated_at=entity.updated_at,
            key=compound_id(form),  # a key is at most 255 characters, a name 1000
        )
        for name_id, form in forms.items()
    ]


def _relation(tenant: str, record: Record) -> Relation:
    data = record.data
    return Relation(
        id=record.id,
        tenant_id=tenant,
        source_id=str(data["source_id"]),
        type=str(data["type"]),
        target_id=str(data["target_id"]),
        agent_id=record.agent_id,
        user_id=record.user_id,
        label=data.get("label"),
        weight=float(data.get("weight", 1.0)),
        bidirectional=bool(data.get("bidirectional", False)),
        properties=dict(data.get("properties") or {}),
        confidence=float(data.get("confidence", 1.0)),
        source=str(data.get("source", "user")),
        provenance=tuple(data.get("provenance") or ()),
        valid_at=_time(data.get("valid_at")),
        invalid_at=_time(data.get("invalid_at")),
        created_at=record.created_at,
        expired_at=_time(data.get("expired_at")),
        support=tuple(data.get("support") or ()),
    )


def _relation_records(relation: Relation, updated_at: datetime) -> list[Record]:
    data = {
        "source_id": relation.source_id,
        "target_id": relation.target_id,
        "type": relation.type,
        "label": relation.label,
        "weight": relation.weight,
        "bidirectional": relation.bidirectional,
        "properties": relation.properties,
        "confidence": relation.confidence,
        "source": relation.source,
        "provenance": list(relation.provenance),
        "valid_at": _iso(relation.valid_at),
        "invalid_at": _iso(relation.invalid_at),
        "expired_at": _iso(relation.expired_at),
        "support": list(relation.support),
    }
    return [
        Record(
            kind=kind,
            id=relation.id,
            agent_id=relation.agent_id,
            user_id=relation.user_id,
            content="",
            data=dict(data),
            created_at=relation.created_at,
            updated_at=updated_at,
            key=key,
        )
        for kind, key in ((OUT, relation.source_id), (IN, relation.target_id))
    ]


def _slot_id(agent_id: str | None, user_id: str | None, source_id: str, type_: str) -> str:
    return _key("slot", agent_id, user_id, source_id, type_)


def _slot_of(relation: Relation) -> str:
    return _slot_id(relation.agent_id, relation.user_id, relation.source_id, relation.type)


def _link_records(
    what: str,
    target_id: str,
    owner: tuple[str | None, str | None],
    entries: Iterable[str],
    now: datetime,
) -> list[Record]:
    return [
        Record(
            kind=SOURCE,
            id=_key("source", what, target_id, entry),
            agent_id=owner[0],
            user_id=owner[1],
            content="",
            data={"what": what, "id": target_id},
            created_at=now,
            updated_at=now,
            key=entry,
        )
        for entry in entries
    ]


def _start(relation: Relation) -> datetime:
    return relation.valid_at if relation.valid_at is not None else relation.created_at


def _open(relation: Relation) -> bool:
    return relation.invalid_at is None and relation.expired_at is None


class _Taken(Exception):
    """Inside a retried step: the name is another entity's (not retried, raised as Conflict)."""


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


#: A search's best way to a node: (cost, ids along it, relations, entity ids).
_Best = tuple[float, tuple[str, ...], list[Relation], list[str]]


@dataclass(slots=True)
class _Edge:
    relation: Relation
    here: str
    other: str


class AsyncGraph:
    """``memory.graph``: entities, relations, traversal, time and inference.

    Every verb takes ``agent_id=``/``user_id=``: given, the caller sees its own
    and shared nodes; left out, the handle's principal applies, else nobody
    (shared nodes only). Writes own what they create by the same rule. A by-id
    verb on an entity or relation the caller may not see behaves exactly like a
    missing id. ``functional_types`` is shared by every handle of the memory:
    ``.add(...)`` / ``.discard(...)`` take effect on later writes.
    """

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

    @property
    def functional_types(self) -> set[str]:
        """Relation types a source holds one of at a time (a new one closes the open one)."""
        return self._core.functional_types

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
        if _bool(include_invalid, "include_invalid") and when is None:
            moment = None
        else:
            moment = when if when is not None else self._core.now()
        return _Filter(
            when=moment,
            types=_types(types),
            min_weight=_optional_number(min_weight, "min_weight"),
            min_confidence=None
            if min_confidence is None
            else _unit(min_confidence, "min_confidence"),
            include_inferred=_bool(include_inferred, "include_inferred"),
        )

    # -- entities ---------------------------------------------------------------------

    async def _vector(self, entity: Entity) -> VectorItem | None:
        embedder = self._core.embedder
        if embedder is None:
            return None
        from memorybank._async.search import embed_texts

        vectors = await embed_texts(embedder, [_text(entity)])
        return VectorItem(ENTITY, entity.id, embedder.model_id, vectors[0])

    async def _put_vector(self, item: VectorItem | None) -> None:
        """Store the vector a step computed (and checked) before its write."""
        if item is not None:
            await self._core.store.vector_put(self._tenant, [item])

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
        conf = _unit(confidence, "confidence")
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
                ident_record = Record(
                    kind=IDENT,
                    id=ident_id,
                    agent_id=owner[0],
                    user_id=owner[1],
                    content="",
                    data={"entity_id": entity.id},
                    created_at=now,
                    updated_at=now,
                    revision=0 if ident is None else ident.revision + 1,
                )
                writes = [
                    _entity_record(entity, prov),
                    ident_record,
                    *_name_records(entity, _names(entity)),
                    *_link_records("entity", entity.id, owner, entries if new_obs else (), now),
                ]
                guard = RecordGuard(IDENT, ident_id, None if ident is None else ident.revision)
                vector = await self._vector(entity)
                await store.record_put(self._tenant, writes, guard=guard)
                return entity, vector
            old = _entity(self._tenant, old_record)
            prov = _obs_provenance(old_record)
            known = {normalise(a) for a in (old.name, *old.aliases)}
            merged_aliases = list(old.aliases)
            for alias in (name, *new_aliases):
                if normalise(alias) not in known:
                    known.add(normalise(alias))
                    merged_aliases.append(alias)
            observations = tuple(dict.fromkeys((*old.observations, *new_obs)))
            for obs in new_obs:
                if entries:
                    prov[obs] = list(dict.fromkeys((*prov.get(obs, ()), *entries)))
            entity = replace(
                old,
                aliases=tuple(merged_aliases),
                observations=observations,
                properties={**old.properties, **props},
                confidence=_raise_confidence(old.confidence, conf),
                updated_at=now,
            )
            old_names = _names(old)
            added = {k: f for k, f in _names(entity).items() if k not in old_names}
            writes = [
                _entity_record(entity, prov, old_record.revision + 1),
                *_name_records(entity, added),
                *_link_records("entity", entity.id, owner, entries if new_obs else (), now),
            ]
            guard = RecordGuard(ENTITY, entity.id, old_record.revision)
            vector = await self._vector(entity) if _text(entity) != _text(old) else None
            await store.record_put(self._tenant, writes, guard=guard)
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
        conf = None if isinstance(confidence, Unset) else _unit(confidence, "confidence")
        store = self._core.store

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
            old_names = _names(old)
            added = {k: f for k, f in _names(entity).items() if k not in old_names}
            if _ident_id(entity) != _ident_id(old):
                await self._claim_ident(entity, now)
            writes = [
                _entity_record(entity, _obs_provenance(record), record.revision + 1),
                *_name_records(entity, added),
            ]
            guard = RecordGuard(ENTITY, entity_id, record.revision)
            vector = await self._vector(entity) if _text(entity) != _text(old) else None
            await store.record_put(self._tenant, writes, guard=guard)
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
        record = Record(
            kind=IDENT,
            id=ident_id,
            agent_id=entity.agent_id,
            user_id=entity.user_id,
            content="",
            data={"entity_id": entity.id},
            created_at=now,
            updated_at=now,
            revision=0 if ident is None else ident.revision + 1,
        )
        guard = RecordGuard(IDENT, ident_id, None if ident is None else ident.revision)
        await store.record_put(self._tenant, [record], guard=guard)

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
        store = self._core.store

        async def step() -> tuple[Entity, VectorItem | None]:
            record = await store.record_get(self._tenant, ENTITY, entity_id)
            if record is None or not visible(seen, record.agent_id, record.user_id):
                raise NotFound(f"entity {entity_id!r} not found")
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
            writes = [
                _entity_record(entity, prov, record.revision + 1),
                *_link_records("entity", entity.id, owner, entries if add else (), now),
            ]
            vector = await self._vector(entity) if _text(entity) != _text(old) else None
            await store.record_put(
                self._tenant, writes, guard=RecordGuard(ENTITY, entity_id, record.revision)
            )
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

    async def _touching(self, ids: Sequence[str]) -> list[Relation]:
        """Every relation (any owner's, unscoped) with an endpoint among ``ids``."""
        store = self._core.store
        found: dict[str, Relation] = {}
        for kind in (OUT, IN):
            for record in await store.record_list_keys(self._tenant, kind, ids):
                found[record.id] = _relation(self._tenant, record)
        return sorted(found.values(), key=lambda r: (r.created_at, r.id))

    async def find_entities(
        self,
        name: str | None = None,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        types: Sequence[str] | str | None = None,
        min_confidence: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> list[Entity]:
        """Entities the caller sees, oldest first (creation time, then id).

        ``name``: case-insensitive over names and aliases: an exact (normalised)
        match through the name index, plus entities whose name or an alias
        contains it among the keyword-search candidates. ``cursor``: the id of
        the last entity of the previous page (``InvalidInput`` if it is gone).
        """
        seen = self._seen(user_id, agent_id)
        wanted = None if name is None else normalise(_label(name, "name"))
        kinds = _types(types)
        floor = None if min_confidence is None else _unit(min_confidence, "min_confidence")
        count = v.check_limit(limit, "limit", allow_none=False) or 0
        after: tuple[datetime, str] | None = None
        if cursor is not None:
            cursor = v.check_id(cursor, "cursor")
            last = (await self._entities([cursor], seen)).get(cursor)
            if last is None:
                raise InvalidInput("cursor names no entity this caller sees", field="cursor")
            after = (last.created_at, last.id)

        def keeps(entity: Entity) -> bool:
            return (
                (kinds is None or entity.type in kinds)
                and (floor is None or entity.confidence >= floor)
                and (after is None or (entity.created_at, entity.id) > after)
            )

        store = self._core.store
        if count == 0:
            return []
        if wanted is not None:
            assert name is not None
            ids = await self._name_index([wanted], seen)
            hits = await store.text_search(
                self._tenant, name, kinds=[ENTITY], k=max(50, count * 4), visible_to=seen
            )
            ids += [h.id for h in hits]
            found = await self._entities(list(dict.fromkeys(ids)), seen)
            matches = [
                e
                for e in found.values()
                if any(wanted in normalise(n) for n in (e.name, *e.aliases)) and keeps(e)
            ]
            matches.sort(key=lambda e: (e.created_at, e.id))
            return matches[:count]
        out: list[Entity] = []
        while len(out) < count:
            page = await store.record_page(
                self._tenant, ENTITY, limit=_PAGE, after=after, visible_to=seen
            )
            for record in page:
                if visible(seen, record.agent_id, record.user_id):
                    entity = _entity(self._tenant, record)
                    if keeps(entity):
                        out.append(entity)
            if len(page) < _PAGE:
                break
            after = (page[-1].created_at, page[-1].id)
        return out[:count]

    async def search_entities(
        self,
        query: str,
        *,
        k: int = 10,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        types: Sequence[str] | str | None = None,
    ) -> list[Entity]:
        """The ``k`` entities best matching ``query``, best first.

        Hybrid: exact name/alias matches first, then keyword (name, aliases,
        observations) and, with an embedder, semantic matches fused by
        reciprocal rank.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string", field="query")
        v.check_text(query, "query", max_chars=v.MAX_LABEL_CHARS * 10)
        count = v.check_limit(k, "k", allow_none=False) or 0
        kinds = _types(types)
        seen = self._seen(user_id, agent_id)
        if count == 0:
            return []
        store = self._core.store
        fetch = count * 3 + 10
        scores: dict[str, float] = {}
        for entity_id in await self._name_index([normalise(query)], seen):
            scores[entity_id] = 10.0
        rankings = [
            await store.text_search(self._tenant, query, kinds=[ENTITY], k=fetch, visible_to=seen)
        ]
        embedder = self._core.embedder
        if embedder is not None:
            from memorybank._async.search import embed_texts

            vector = (await embed_texts(embedder, [query]))[0]
            rankings.append(
                await store.vector_search(
                    self._tenant,
                    vector,
                    model_id=embedder.model_id,
                    kinds=[ENTITY],
                    k=fetch,
                    visible_to=seen,
                )
            )
        for ranking in rankings:
            for rank, hit in enumerate(ranking, start=1):
                scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (60 + rank)
        found = await self._entities(list(scores), seen)
        ranked = sorted(
            (e for e in found.values() if kinds is None or e.type in kinds),
            key=lambda e: (-scores[e.id], e.id),
        )
        return ranked[:count]

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
        ``merge`` is deleted. Both must have the same owner (``InvalidInput`` otherwise)."""
        keep = v.check_id(keep, "keep")
        merge = v.check_id(merge, "merge")
        if keep == merge:
            raise InvalidInput("cannot merge an entity into itself", field="merge")
        seen = self._seen(user_id, agent_id)
        kept_record = await self._entity_record(keep, seen)
        gone_record = await self._entity_record(merge, seen)
        gone = _entity(self._tenant, gone_record)
        kept = _entity(self._tenant, kept_record)
        if (kept.agent_id, kept.user_id) != (gone.agent_id, gone.user_id):
            raise InvalidInput("entities of different owners cannot be merged", field="merge")
        store = self._core.store
        gone_prov = _obs_provenance(gone_record)

        async def step() -> tuple[Entity, VectorItem | None]:
            record = await self._entity_record(keep, seen)
            old = _entity(self._tenant, record)
            prov = _obs_provenance(record)
            for obs, entries in gone_prov.items():
                prov[obs] = list(dict.fromkeys((*prov.get(obs, ()), *entries)))
            known = {normalise(a) for a in (old.name, *old.aliases)}
            aliases = list(old.aliases)
            for alias in (gone.name, *gone.aliases):
                if normalise(alias) not in known:
                    known.add(normalise(alias))
                    aliases.append(alias)
            now = self._core.now()
            entity = replace(
                old,
                aliases=tuple(aliases),
                observations=tuple(dict.fromkeys((*old.observations, *gone.observations))),
                properties={**gone.properties, **old.properties},
                confidence=max(old.confidence, gone.confidence),
                updated_at=now,
            )
            old_names = _names(old)
            added = {k: f for k, f in _names(entity).items() if k not in old_names}
            sources = sorted({e for val in gone_prov.values() for e in val})
            writes = [
                _entity_record(entity, prov, record.revision + 1),
                *_name_records(entity, added),
                *_link_records("entity", keep, (old.agent_id, old.user_id), sources, now),
            ]
            vector = await self._vector(entity)
            await store.record_put(
                self._tenant, writes, guard=RecordGuard(ENTITY, keep, record.revision)
            )
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

    # -- relations --------------------------------------------------------------------

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
        both = _bool(bidirectional, "bidirectional")
        conf = _unit(confidence, "confidence")
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
            changes["confidence"] = _unit(confidence, "confidence")
        if not isinstance(valid_at, Unset):
            changes["valid_at"] = _optional_time(valid_at, "valid_at")
        if not isinstance(bidirectional, Unset):
            changes["bidirectional"] = _bool(bidirectional, "bidirectional")

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

    async def _edges(
        self, ids: Sequence[str], way: Direction, seen: Visibility, flt: _Filter
    ) -> list[_Edge]:
        """The relations leaving ``ids`` in direction ``way`` that pass ``flt`` (endpoints
        not yet checked), oldest first: one ``record_list_keys`` per stored direction."""
        store = self._core.store
        edges: dict[tuple[str, str], _Edge] = {}
        for kind in (OUT, IN):
            for record in await store.record_list_keys(self._tenant, kind, ids, visible_to=seen):
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
                outside: list[Record] = []
                edges = await self._among(frontier, reached, way, seen, flt, outside)
                found: dict[str, Entity] = {}
                if level < depth and not truncated:
                    truncated = await self._left_out(
                        frontier, reached, outside, way, seen, flt, entity_types
                    )
            else:
                edges = await self._edges(frontier, way, seen, flt)
                fresh = list(dict.fromkeys(e.other for e in edges if e.other not in reached))
                room = None if max_nodes is None else max(0, max_nodes - len(reached))
                found, more = await self._admit(fresh, room, seen, entity_types)
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
        reached: Container[str],
        way: Direction,
        seen: Visibility,
        flt: _Filter,
        outside: list[Record] | None = None,
    ) -> list[_Edge]:
        """The relations (passing ``flt``) between ``ids`` (the last level) and ``reached``
        that the earlier levels did not see: stored under ``ids`` on the side ``way``
        reads (by source, or by target for ``"in"``), oldest first. The visible records
        read that lead outside ``reached`` are appended to ``outside`` when given."""
        kind, far = (IN, "source_id") if way == "in" else (OUT, "target_id")
        edges: list[_Edge] = []
        for record in await self._core.store.record_list_keys(
            self._tenant, kind, ids, visible_to=seen
        ):
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
    ) -> tuple[dict[str, Entity], bool]:
        """The first ``room`` candidates the caller sees (of ``entity_types``), in order,
        fetched no further than needed; and whether a further one exists (``truncated``:
        only a visible entity may say so, or the flag would reveal hidden ones)."""

        def fits(entity: Entity | None) -> bool:
            return entity is not None and (entity_types is None or entity.type in entity_types)

        kept: dict[str, Entity] = {}
        pos = 0
        while pos < len(candidates):
            want = len(candidates) if room is None else room - len(kept)
            chunk = candidates[pos : pos + max(want, 16)]
            pos += len(chunk)
            got = await self._entities(chunk, seen)
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
        nodes = v.check_limit(max_nodes, "max_nodes", allow_none=False) or 0
        edges = v.check_limit(max_edges, "max_edges", allow_none=False) or 0
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
        start = [found[i] for i in ids]
        truncated = len(start) > nodes
        start = start[:nodes]
        reached, relations, cut = await self._walk(
            start,
            depth=hops,
            way=way,
            seen=seen,
            flt=flt,
            max_nodes=nodes,
            max_edges=edges,
            close=True,
            entity_types=wanted,
        )
        return Subgraph(
            entities=[e for e, _ in reached.values()],
            relations=list(relations.values()),
            truncated=truncated or cut,
        )

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
            for edge in await self._edges(frontier, way if forward else back, seen, flt):
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
            found = await self._entities(sorted(offers), seen)
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

    # -- whole graph ------------------------------------------------------------------

    async def _all_relations(self, seen: Visibility | None) -> list[Relation]:
        out: list[Relation] = []
        after: tuple[datetime, str] | None = None
        while True:
            page = await self._core.store.record_page(
                self._tenant, OUT, limit=_PAGE, after=after, visible_to=seen
            )
            out += [
                _relation(self._tenant, r) for r in page if visible(seen, r.agent_id, r.user_id)
            ]
            if len(page) < _PAGE:
                return out
            after = (page[-1].created_at, page[-1].id)

    async def _all_entities(self, seen: Visibility | None) -> list[Entity]:
        out: list[Entity] = []
        after: tuple[datetime, str] | None = None
        while True:
            page = await self._core.store.record_page(
                self._tenant, ENTITY, limit=_PAGE, after=after, visible_to=seen
            )
            out += [_entity(self._tenant, r) for r in page if visible(seen, r.agent_id, r.user_id)]
            if len(page) < _PAGE:
                return out
            after = (page[-1].created_at, page[-1].id)

    async def stats(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> GraphStats:
        """Counts of the entities and relations the caller sees (all times, inferred too)."""
        seen = self._seen(user_id, agent_id)
        entities = await self._all_entities(seen)
        ids = {e.id for e in entities}
        relations = [
            r for r in await self._all_relations(seen) if r.source_id in ids and r.target_id in ids
        ]
        now = self._core.now()
        entity_types: dict[str, int] = {}
        for entity in entities:
            entity_types[entity.type] = entity_types.get(entity.type, 0) + 1
        relation_types: dict[str, int] = {}
        for relation in relations:
            relation_types[relation.type] = relation_types.get(relation.type, 0) + 1
        return GraphStats(
            entities=len(entities),
            relations=len(relations),
            valid_relations=sum(1 for r in relations if r.holds_at(now) and r.expired_at is None),
            entity_types=dict(sorted(entity_types.items())),
            relation_types=dict(sorted(relation_types.items())),
        )

    async def clear(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> int:
        """Delete the graph owned by exactly this agent and user (``None``: the shared
        one on that axis; left out: the handle's principal, else shared), with every
        relation touching its entities; how many entities and relations went."""
        seen = self._seen(user_id, agent_id)
        agent, user = self._owner(seen)
        store = self._core.store
        gone = 0
        for record in await store.record_list(self._tenant, OUT, agent_id=agent, user_id=user):
            fresh = await store.record_get(self._tenant, OUT, record.id)
            if fresh is not None:
                await self._remove_relation(_relation(self._tenant, fresh))
                gone += 1
        for record in await store.record_list(self._tenant, ENTITY, agent_id=agent, user_id=user):
            before = len(await self._touching([record.id]))
            if await self._remove_entity(record):
                gone += 1 + before
        leftovers = await store.record_list(self._tenant, SLOT, agent_id=agent, user_id=user)
        if leftovers:
            await store.record_delete(self._tenant, SLOT, [r.id for r in leftovers])
        return gone

    # -- inference --------------------------------------------------------------------

    async def infer(
        self,
        rules: Sequence[str] | None = None,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> list[Relation]:
        """Materialise ``inferred`` relations from the valid relations the caller sees;
        the new ones, oldest first. Rules (``RULES``, default all):

        * ``transitive_part_of`` / ``transitive_located_in``: a -> b -> c gives a -> c;
        * ``colleagues``: two people who ``works_at`` one organisation are
          ``colleague_of`` each other (one bidirectional relation);
        * ``knows_symmetry``: a ``knows`` b gives b ``knows`` a.

        Each carries its supporting relations (``support``) and is deleted when
        one of them is invalidated, closed or deleted. Reads return inferred
        relations only with ``include_inferred=True``.
        """
        seen = self._seen(user_id, agent_id)
        chosen = RULES if rules is None else _labels(rules, "rules")
        for rule in chosen:
            if rule not in RULES:
                raise InvalidInput(
                    f"unknown rule {rule!r}; known: {', '.join(RULES)}", field="rules"
                )
        owner = self._owner(seen)
        now = self._core.now()
        visible_ids = {e.id: e for e in await self._all_entities(seen)}
        everything = [
            r
            for r in await self._all_relations(seen)
            if r.source_id in visible_ids
            and r.target_id in visible_ids
            and r.holds_at(now)
            and r.expired_at is None
        ]
        base = [r for r in everything if r.source != "inferred"]
        existing = {(r.source_id, r.type, r.target_id) for r in everything}
        plans: list[tuple[str, str, str, bool, tuple[Relation, ...]]] = []
        for transitive in ("part_of", "located_in"):
            if f"transitive_{transitive}" not in chosen:
                continue
            step: dict[str, list[Relation]] = {}
            for r in base:
                if r.type == transitive:
                    step.setdefault(r.source_id, []).append(r)
            for origin in sorted(step):
                paths: dict[str, tuple[Relation, ...]] = {}
                queue: list[tuple[str, tuple[Relation, ...]]] = [(origin, ())]
                while queue:
                    node, path = queue.pop(0)
                    for r in step.get(node, ()):
                        if r.target_id == origin or r.target_id in paths:
                            continue
                        paths[r.target_id] = (*path, r)
                        queue.append((r.target_id, (*path, r)))
                for target, path in paths.items():
                    if len(path) > 1:
                        plans.append((origin, transitive, target, False, path))
        if "colleagues" in chosen:
            staff: dict[str, list[Relation]] = {}
            for r in base:
                if r.type == "works_at":
                    staff.setdefault(r.target_id, []).append(r)
            for org in sorted(staff):
                people = sorted(staff[org], key=lambda r: r.source_id)
                for i, a in enumerate(people):
                    for b in people[i + 1 :]:
                        if a.source_id != b.source_id:
                            plans.append((a.source_id, "colleague_of", b.source_id, True, (a, b)))
        if "knows_symmetry" in chosen:
            for r in base:
                if r.type == "knows" and not r.bidirectional and r.source_id != r.target_id:
                    plans.append((r.target_id, "knows", r.source_id, False, (r,)))
        made: list[Relation] = []
        for source, type_, target, both, support in plans:
            if (source, type_, target) in existing or (
                both and (target, type_, source) in existing
            ):
                continue
            existing.add((source, type_, target))
            rel_owner = _relation_owner(owner, visible_ids[source], visible_ids[target])
            for s in support:  # a private support makes the conclusion private too
                if s.user_id is not None:
                    rel_owner = (rel_owner[0], s.user_id)
                if s.agent_id is not None:
                    rel_owner = (s.agent_id, rel_owner[1])
            confidence = 1.0
            for s in support:
                confidence *= s.confidence
            relation = Relation(
                id=new_id(),
                tenant_id=self._tenant,
                source_id=source,
                type=type_,
                target_id=target,
                agent_id=rel_owner[0],
                user_id=rel_owner[1],
                label=None,
                weight=min(s.weight for s in support),
                bidirectional=both,
                properties={},
                confidence=round(confidence, 12),
                source="inferred",
                provenance=(),
                valid_at=max(_start(s) for s in support),
                invalid_at=None,
                created_at=self._core.now(),
                expired_at=None,
                support=tuple(s.id for s in support),
            )
            made.append(await self._write_relation(relation, functional=False))
        return made

    # -- provenance ---------------------------------------------------------------------

    async def _cascade(self, entry_ids: Sequence[str]) -> int:
        """Remove observations and relations whose only provenance was these entries."""
        store = self._core.store
        gone = 0
        for entry_id in entry_ids:
            links = await store.record_list_keys(self._tenant, SOURCE, [entry_id])
            for link in links:
                target = str(link.data["id"])
                if link.data.get("what") == "entity":
                    try:
                        await self._change_observations(target, None, drop_entry=entry_id)
                    except NotFound:
                        pass
                else:
                    record = await store.record_get(self._tenant, OUT, target)
                    if record is not None:
                        relation = _relation(self._tenant, record)
                        if relation.provenance == (entry_id,):
                            await self._remove_relation(relation)
                            gone += 1
                        elif entry_id in relation.provenance:
                            await self._change_relation(
                                relation.id,
                                Visibility(relation.agent_id, relation.user_id),
                                lambda old, now, e=entry_id: replace(
                                    old, provenance=tuple(p for p in old.provenance if p != e)
                                ),
                            )
                await store.record_delete(self._tenant, SOURCE, [link.id])
        return gone

    async def _name_index(self, normalised: Sequence[str], seen: Visibility) -> list[str]:
        """Ids of the entities ``seen`` may see named or aliased by one of these
        normalised names: one indexed read of the name records, in their order."""
        keys = list(dict.fromkeys(compound_id(n) for n in normalised))
        records = await self._core.store.record_list_keys(self._tenant, NAME, keys, visible_to=seen)
        return list(dict.fromkeys(str(r.data["entity_id"]) for r in records))

    # -- context ------------------------------------------------------------------------

    async def _named(
        self,
        names: Sequence[str],
        *,
        agent_id: str | None,
        user_id: str | None,
        types: Sequence[str] | None = None,
    ) -> list[Entity]:
        """Entities the caller sees whose normalised name or alias is one of ``names``'
        normalised forms, oldest first: one indexed read of the name records."""
        if not names:
            return []
        seen = self._seen(user_id, agent_id)
        kinds = _types(types)
        found = await self._entities(
            await self._name_index([normalise(n) for n in names], seen), seen
        )
        return sorted(
            (e for e in found.values() if kinds is None or e.type in kinds),
            key=lambda e: (e.created_at, e.id),
        )

    async def context_block(
        self,
        query: str,
        *,
        max_tokens: int,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        options: GraphContextOptions | Mapping[str, Any] | None = None,
        **graph_options: Any,
    ) -> str | None:
        """The ``Entities:`` / ``Relationships:`` block about ``query`` in at most
        ``max_tokens`` tokens of the memory's tokenizer, or ``None`` (nothing named or
        found, or nothing fits).

        What ``build_context(include_graph_context=True)`` adds (see
        ``memorybank._async.graph_context``); also the context builder's graph hook.
        Options as ``options=GraphContextOptions(...)`` or as its fields given as
        keywords (``max_nodes=5``), not both.
        """
        from memorybank._async.graph_context import graph_block
        from memorybank.graph._context import as_options

        if not isinstance(query, str):
            raise InvalidInput("query must be a string", field="query")
        v.check_text(query, "query")
        budget = v.check_limit(max_tokens, "max_tokens", allow_none=False) or 0
        if options is not None and graph_options:
            raise InvalidInput(
                "give graph options either as options= or as keywords, not both",
                field="graph_options",
            )
        checked = as_options(options if options is not None else graph_options)
        agent, user = self._owner(self._seen(user_id, agent_id))
        block = await graph_block(
            self,
            query,
            agent_id=agent,
            user_id=user,
            max_tokens=budget,
            options=checked,
            tokenizer=self._core.tokenizer,
            now=self._core.now(),
        )
        return None if block is None else block.text

    # -- memory formation (see memorybank._async.ingest) ----------------------------

    async def ingest(
        self,
        thread_id: str,
        entries: Sequence[Entry | str] | None = None,
        *,
        user_id: str | Unset | None = UNSET,
    ) -> IngestReport:
        """Extract the thread's user and assistant entries (or ``entries``: objects or ids
        of that thread) with the memory's ``extractor`` into the graph and ``memory.facts``,
        owned like the thread, with the entry ids as provenance; entries already
        ingested are skipped. Under the thread rule (``ThreadForbidden``); see
        ``memorybank._async.ingest``."""
        from memorybank._async import ingest
        from memorybank._async.memory import _require_thread

        thread = await _require_thread(
            self._core,
            self._tenant,
            v.check_id(thread_id, "thread_id"),
            self._scope.user(user_id),
        )
        return await ingest.ingest(self._core, self._tenant, thread, entries)

    def pending(self) -> Backlog:
        """The ``extract_on_write`` backlog of this memory (every handle's; zeros when off)."""
        background = self._core.background
        return Backlog() if background is None else background.counts()

    async def drain(self, within: float | None = None) -> bool:
        """Wait until the ``extract_on_write`` backlog is empty; whether it emptied within
        ``within`` seconds (``None``: no limit)."""
        background = self._core.background
        return True if background is None else await background.drain(within)


def _relation_owner(
    owner: tuple[str | None, str | None], source: Entity, target: Entity
) -> tuple[str | None, str | None]:
    """A relation is private to the user (agent) given or to its one private endpoint."""
    result: list[str | None] = []
    for axis, given, a, b in (
        ("agent_id", owner[0], source.agent_id, target.agent_id),
        ("user_id", owner[1], source.user_id, target.user_id),
    ):
        named = {x for x in (given, a, b) if x is not None}
        if len(named) > 1:
            raise InvalidInput(
                f"a relation cannot join nodes private to different owners ({axis})", field=axis
            )
        result.append(next(iter(named)) if named else None)
    return result[0], result[1]


def _slot_record(slot_id: str, relation: Relation, slot: Record | None, now: datetime) -> Record:
    return Record(
        kind=SLOT,
        id=slot_id,
        agent_id=relation.agent_id,
        user_id=relation.user_id,
        content="",
        data={"source_id": relation.source_id, "type": relation.type},
        created_at=now if slot is None else slot.created_at,
        updated_at=now,
        key=relation.source_id,
        revision=0 if slot is None else slot.revision + 1,
    )


def _support_record(relation: Relation, support: str, now: datetime) -> Record:
    return Record(
        kind=SUPPORT,
        id=_key("support", relation.id, support),
        agent_id=relation.agent_id,
        user_id=relation.user_id,
        content="",
        data={"inferred_id": relation.id},
        created_at=now,
        updated_at=now,
        key=support,
    )
