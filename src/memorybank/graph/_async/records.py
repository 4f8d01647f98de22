"""How the graph is stored: its record kinds and the records <-> values mapping."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from memorybank.errors import InvalidInput
from memorybank.graph._context import normalize
from memorybank.graph.model import Entity, Relation
from memorybank.rules.ids import compound_id
from memorybank.stores.contract._async.store import Record

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


#: The form names are compared in (one rule, ``memorybank.graph._context.normalize``).
normalise = normalize


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


def _ident_record(entity: Entity, ident: Record | None, now: datetime) -> Record:
    """The identity record of ``entity``'s owner, type and name, pointing at it (``ident``:
    the one stored before, if any)."""
    return Record(
        kind=IDENT,
        id=_ident_id(entity),
        agent_id=entity.agent_id,
        user_id=entity.user_id,
        content="",
        data={"entity_id": entity.id},
        created_at=now,
        updated_at=now,
        revision=0 if ident is None else ident.revision + 1,
    )


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
