"""Consolidation of graph entities: aliases of one thing merged, per owner, with undo.

``consolidate_entities`` (after the facts) asks ``memorybank.consolidation.entity_rules``
(and the judge) which entities name one thing and merges each into its group's oldest
with the graph's ``merge_entities``, through a recorder that notes every graph record a
merge touches as it was: the ``consolidation_entity_change`` record ``undo`` restores.
docs/consolidation.md ("Graph entities that name one thing").
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from memorybank.consolidation.entity_rules import (
    EntityMergePlan,
    group_merges,
    plan_entities,
    undecided_entities,
)
from memorybank.consolidation.report import ConsolidationReport, EntityChange, change_from
from memorybank.core._async.embed import embed_texts
from memorybank.errors import Conflict, InvalidInput
from memorybank.graph._async.entities import EntityVerbs
from memorybank.graph._async.records import ENTITY, IN, OUT, _entity, _relation
from memorybank.graph.model import Entity
from memorybank.records import Fact
from memorybank.stores.contract._async.store import (
    AsyncStore,
    Record,
    RecordGuard,
    Unset,
    VectorItem,
)
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import Visibility

if TYPE_CHECKING:
    from memorybank.consolidation.report import JudgeUsage
    from memorybank.core._async.core import _Core
    from memorybank.core.judge import LLMJudge

__all__ = [
    "ENTITY_CHANGE",
    "EntityUndo",
    "consolidate_entities",
    "entity_changes",
    "prepare_entity_undo",
    "public_changes",
]

ENTITY_CHANGE = "consolidation_entity_change"
_BATCH = 500


def dump_record(record: Record) -> dict[str, Any]:
    """A record as JSON data (a run's journal and its undo records keep them so)."""
    return {
        "kind": record.kind,
        "id": record.id,
        "agent_id": record.agent_id,
        "user_id": record.user_id,
        "content": record.content,
        "data": record.data,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "key": record.key,
        "expires_at": None if record.expires_at is None else record.expires_at.isoformat(),
        "revision": record.revision,
    }


def load_record(data: dict[str, Any]) -> Record:
    """The record ``dump_record`` wrote."""
    expires = data.get("expires_at")
    return Record(
        kind=data["kind"],
        id=data["id"],
        agent_id=data["agent_id"],
        user_id=data["user_id"],
        content=data["content"],
        data=dict(data["data"]),
        created_at=datetime.fromisoformat(data["created_at"]),
        updated_at=datetime.fromisoformat(data["updated_at"]),
        key=data.get("key"),
        expires_at=None if expires is None else datetime.fromisoformat(expires),
        revision=int(data["revision"]),
    )


class _Recorder:
    """The store, noting the first value (``None``: absent) of every record that goes
    through ``record_put`` or ``record_delete``; every other call passes through."""

    def __init__(self, store: AsyncStore) -> None:
        self._store = store
        self.before: dict[tuple[str, str], Record | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def _note(self, tenant: str, kind: str, ids: Sequence[str]) -> None:
        new = [i for i in dict.fromkeys(ids) if (kind, i) not in self.before]
        if new:
            got = await self._store.record_get_many(tenant, kind, new)
            for record_id in new:
                self.before[(kind, record_id)] = got.get(record_id)

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        for kind in dict.fromkeys(r.kind for r in records):
            await self._note(tenant, kind, [r.id for r in records if r.kind == kind])
        await self._store.record_put(tenant, records, guard=guard)

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        await self._note(tenant, kind, record_ids)
        return await self._store.record_delete(tenant, kind, record_ids, guard=guard)


def _fact_like(entity: Entity) -> Fact:
    """How the judge (which reads facts) is shown an entity."""
    parts = [f"{entity.type} named {entity.name!r}"]
    if entity.aliases:
        parts.append("also called " + ", ".join(repr(a) for a in entity.aliases[:5]))
    if entity.observations:
        parts.append("known: " + "; ".join(entity.observations[:3]))
    return Fact(
        id=entity.id,
        agent_id=entity.agent_id,
        user_id=entity.user_id,
        content=", ".join(parts),
        category=None,
        confidence=None,
        source=None,
        metadata={},
        source_entries=(),
        created_at=entity.created_at,
        updated_at=entity.updated_at,
    )


async def _judged(
    judge: LLMJudge,
    usage: JudgeUsage,
    entities: Sequence[Entity],
    vectors: dict[str, list[float]] | None,
) -> list[EntityMergePlan]:
    """The pairs the judge says name one thing, among those the rules left undecided."""
    cases = undecided_entities(entities, vectors=vectors, max_candidates=judge.max_candidates)
    usage.cases += len(cases)
    out: list[EntityMergePlan] = []
    for entity, candidates in cases:
        if not judge.can_call(usage):
            break
        verdicts = await judge.adecide(
            _fact_like(entity), [_fact_like(c) for c in candidates], usage
        )
        shown = {c.id: c for c in candidates}
        for verdict in verdicts or []:
            other = shown.get(verdict.id)  # only a candidate shown
            if other is None or verdict.relation != "duplicate":
                continue
            out.append(
                EntityMergePlan(
                    entity.id,
                    other.id,
                    "judge",
                    f"judged the same {entity.type} by {judge.model}: "
                    f"{entity.name!r} = {other.name!r}",
                    decided_by="judge",
                )
            )
    return out


async def _name_vectors(core: _Core, entities: Sequence[Entity]) -> dict[str, list[float]] | None:
    embedder = core.embedder
    if embedder is None or not entities:
        return None
    vectors = await embed_texts(embedder, [e.name for e in entities])
    return {e.id: v for e, v in zip(entities, vectors, strict=True)}


async def _moved(store: AsyncStore, tenant: str, merge: str, keep: str) -> int:
    """How many relations ``merge_entities(keep, merge)`` re-points to ``keep``."""
    both = await store.record_list_keys_by_kind(tenant, (OUT, IN), [merge])
    seen: set[str] = set()
    for records in both.values():
        for record in records:
            relation = _relation(tenant, record)
            ends = {relation.source_id, relation.target_id} - {merge}
            if relation.source != "inferred" and ends != {keep} and ends:
                seen.add(relation.id)
    return len(seen)


def _public(plan: EntityMergePlan, gone: Entity, kept: Entity, moved: int) -> EntityChange:
    return EntityChange(
        entity_id=gone.id,
        into=kept.id,
        reason="alias",
        rule=plan.rule,
        why=plan.why,
        name=gone.name,
        into_name=kept.name,
        type=kept.type,
        relations_moved=moved,
        score=plan.score,
        decided_by=plan.decided_by,
    )


def crash_safe(store: AsyncStore) -> bool:
    """Whether ``store.atomic`` makes a chunk survive a crash whole or not at all: it
    claims ``ATOMIC`` and keeps its data (not an in-memory store, nor SQLite's
    ``:memory:``, whose atomic view shares the one connection with every other caller)."""
    caps = store.capabilities
    return (
        Capability.ATOMIC in caps
        and Capability.DURABLE in caps
        and getattr(store, "path", None) != ":memory:"
    )


async def consolidate_entities(
    core: _Core,
    tenant: str,
    report: ConsolidationReport,
    *,
    user: str | None,
    agent: str | Unset | None,
) -> None:
    """Merge the entities of ``user`` (and ``agent``; ``Unset``: every agent's, each
    compared only with its own) that name one thing; add each to ``report``
    (``entity_changes``). A dry run (``report.dry_run``) writes nothing."""
    store = core.store
    records = await store.record_list(tenant, ENTITY, user_id=user)
    entities = [
        _entity(tenant, r)
        for r in records
        if r.user_id == user and (isinstance(agent, Unset) or r.agent_id == agent)
    ]
    if len(entities) < 2:
        return
    vectors = await _name_vectors(core, entities)
    pairs = plan_entities(entities, vectors=vectors)
    judge = core.judge
    if judge is not None:
        if report.judge is None:
            report.judge = judge.usage()
        pairs = [*pairs, *await _judged(judge, report.judge, entities, vectors)]
    merges = group_merges(entities, pairs)
    by_id = {e.id: e for e in entities}
    if report.dry_run:
        for plan in merges:
            moved = await _moved(store, tenant, plan.entity_id, plan.into)
            report.entity_changes.append(
                _public(plan, by_id[plan.entity_id], by_id[plan.into], moved)
            )
        return
    core.functional_types  # noqa: B018 -- cached on the core before the copy shares it
    for number, plan in enumerate(merges):
        gone, kept = by_id[plan.entity_id], by_id[plan.into]
        moved = await _moved(store, tenant, gone.id, kept.id)
        change = _public(plan, gone, kept, moved)
        await _merge(core, tenant, report, number, plan, change)
        report.entity_changes.append(change)


async def _merge(
    core: _Core,
    tenant: str,
    report: ConsolidationReport,
    number: int,
    plan: EntityMergePlan,
    change: EntityChange,
) -> None:
    """One merge through the recorder, then its change record (what undo restores): in
    one ``store.atomic`` transaction where that survives a crash (``crash_safe``), so a
    kill leaves each merge with its undo record or not made at all (the next run merges
    what is left)."""
    if crash_safe(core.store):
        async with core.store.atomic(tenant) as view:
            await _merge_on(core, view, tenant, report, number, plan, change)
    else:
        await _merge_on(core, core.store, tenant, report, number, plan, change)


async def _merge_on(
    core: _Core,
    store: AsyncStore,
    tenant: str,
    report: ConsolidationReport,
    number: int,
    plan: EntityMergePlan,
    change: EntityChange,
) -> None:
    recorder = _Recorder(store)
    recorded = copy.copy(core)
    recorded.store = cast("AsyncStore", recorder)
    graph = EntityVerbs(recorded, tenant)
    records = await store.record_get_many(tenant, ENTITY, [plan.into, plan.entity_id])
    gone_record = records.get(plan.entity_id)
    kept_record = records.get(plan.into)
    if gone_record is None or kept_record is None:
        return
    agent, user = kept_record.agent_id, kept_record.user_id
    saved: list[dict[str, Any]] = []
    if core.embedder is not None:
        model = core.embedder.model_id
        got = await store.vector_get(tenant, ENTITY, [plan.into, plan.entity_id], model_id=model)
        saved = [{"id": i, "model_id": model, "vector": v} for i, v in got.items()]
    merged = await graph.merge_entities(plan.into, plan.entity_id, agent_id=agent, user_id=user)
    properties = dict(merged.properties)
    properties["merged_from"] = [*(properties.get("merged_from") or []), plan.entity_id]
    properties["consolidation_run"] = report.run_id
    properties["consolidation_reason"] = "alias"
    await graph.update_entity(plan.into, properties=properties, agent_id=agent, user_id=user)
    after: list[list[Any]] = []
    kinds: dict[str, list[str]] = {}
    for kind, record_id in recorder.before:
        kinds.setdefault(kind, []).append(record_id)
    for kind, ids in kinds.items():
        now = await store.record_get_many(tenant, kind, ids)
        after += [[kind, i, None if i not in now else now[i].revision] for i in ids]
    stamp = core.now()
    await store.record_put(
        tenant,
        [
            Record(
                kind=ENTITY_CHANGE,
                id=f"{report.run_id}:{number:06d}",
                agent_id=kept_record.agent_id,
                user_id=kept_record.user_id,
                content="",
                data={
                    **change.to_dict(),
                    "merged": dump_record(gone_record),
                    "before": [
                        {"kind": k, "id": i, "record": None if r is None else dump_record(r)}
                        for (k, i), r in recorder.before.items()
                    ],
                    "after": after,
                    "vectors": saved,
                },
                created_at=stamp,
                updated_at=stamp,
                key=report.run_id,
            )
        ],
    )


async def entity_changes(
    core: _Core, tenant: str, run_id: str, seen: Visibility | None
) -> list[Record]:
    """The run's entity change records ``seen`` may see (``None``: all), in order."""
    records = await core.store.record_list(tenant, ENTITY_CHANGE, key=run_id, visible_to=seen)
    return sorted(records, key=lambda r: r.id)


def public_changes(records: Sequence[Record]) -> list[EntityChange]:
    """The ``EntityChange`` of each change record."""
    return [change_from(EntityChange, r.data, reason="alias") for r in records]


class EntityUndo:
    """What undoing a run's entity merges writes, checked against the store first."""

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant
        self.puts: list[Record] = []
        self.deletes: dict[str, list[str]] = {}
        self.vectors: list[VectorItem] = []

    async def apply(self) -> None:
        """Write it: the records as they were, one atomic put; then the deletes; then
        the vectors (a vector is kept only once its record exists)."""
        store = self._core.store
        for start in range(0, len(self.puts), _BATCH):
            await store.record_put(self._tenant, self.puts[start : start + _BATCH])
        for kind, ids in self.deletes.items():
            await store.record_delete(self._tenant, kind, ids)
        if self.vectors:
            await store.vector_put(self._tenant, self.vectors)


async def prepare_entity_undo(
    core: _Core, tenant: str, run_id: str, seen: Visibility | None
) -> EntityUndo:
    """Check that every graph record the run's merges touched is as the run left it
    (``Conflict`` otherwise) and that ``seen`` sees every change (``InvalidInput``);
    the writes that restore them as they were before the run."""
    undo = EntityUndo(core, tenant)
    changes = await entity_changes(core, tenant, run_id, seen)
    if len(changes) != len(await entity_changes(core, tenant, run_id, None)):
        raise InvalidInput(
            f"consolidation run {run_id!r} merged entities of agents this handle may not"
            " change: undo it from a handle that sees them all",
            field="run_id",
        )
    first: dict[tuple[str, str], Record | None] = {}
    last: dict[tuple[str, str], int | None] = {}
    for change in changes:
        for item in change.data["before"]:
            raw = item["record"]
            first.setdefault((item["kind"], item["id"]), None if raw is None else load_record(raw))
        for kind, record_id, revision in change.data["after"]:
            last[(kind, record_id)] = None if revision is None else int(revision)
        for item in change.data.get("vectors") or []:
            undo.vectors.append(
                VectorItem(ENTITY, item["id"], str(item["model_id"]), list(item["vector"]))
            )
    kinds: dict[str, list[str]] = {}
    for kind, record_id in first:
        kinds.setdefault(kind, []).append(record_id)
    store = core.store
    for kind, ids in kinds.items():
        now = await store.record_get_many(tenant, kind, ids)
        for record_id in ids:
            current = now.get(record_id)
            expected = last.get((kind, record_id))
            if (None if current is None else current.revision) != expected:
                raise Conflict(
                    f"the graph changed after the run ({kind} {record_id!r}): undo refused"
                )
            before = first[(kind, record_id)]
            if before is None:
                if current is not None:
                    undo.deletes.setdefault(kind, []).append(record_id)
                continue
            top = max(before.revision, -1 if current is None else current.revision)
            before.revision = top + 1
            undo.puts.append(before)
    return undo
