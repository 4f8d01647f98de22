"""``memory.consolidate`` and ``memory.consolidation``: runs, reports, undo.

A run reads one owner's current facts, asks ``memorybank.consolidation.rules``
for a plan, and applies it one change at a time, above the stores, with the
record primitives every store has:

* a ``consolidation_run`` record (owned like the facts, so ``forget_user``
  erases it) says the run is ``applying``, then ``applied``;
* each change is one atomic ``record_put`` guarded on the kept fact's revision:
  the kept fact's new version (its old value into ``history``), the retired
  fact's last value as a ``fact_version`` with ``superseded_by``, the new
  provenance links, and a ``consolidation_change`` record holding both facts as
  they were (and the retired fact's vector), which is what ``undo`` restores;
  then the retired fact is deleted, guarded on the revision the plan read. A
  concurrent write to either fact skips the change (listed in ``skipped``) and
  leaves both facts as the writer left them.

An interrupted run stays ``applying``: what it applied is complete change by
change, and ``undo(run_id)`` restores it like a finished run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.consolidation.report import ConsolidationChange, ConsolidationReport, RunStatus
from memorybank.consolidation.rules import Change, owners, plan
from memorybank.errors import Conflict, InvalidInput, NotFound
from memorybank.memory._async.facts import (
    FACT,
    FACT_SOURCE,
    FACT_VERSION,
    fact_from_record,
    fact_links,
    fact_record,
    version_record,
)
from memorybank.records import Fact
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.rules.scope import ROOT, Scope
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, VectorItem
from memorybank.stores.contract.types import visible

if TYPE_CHECKING:
    from memorybank.memory._async.core import _Core

__all__ = ["CHANGE", "RUN", "AsyncConsolidation"]

RUN = "consolidation_run"
CHANGE = "consolidation_change"
#: Facts whose vectors are read per store call.
_VECTOR_BATCH = 1000


def _dump(record: Record) -> dict[str, Any]:
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


def _load(data: dict[str, Any]) -> Record:
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


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _public(change: Change, loser: Fact, winner: Fact) -> ConsolidationChange:
    return ConsolidationChange(
        change.fact_id,
        change.into,
        change.reason,
        change.why,
        loser.content,
        winner.content,
        change.score,
    )


def _change_from(data: dict[str, Any]) -> ConsolidationChange:
    return ConsolidationChange(
        data["fact_id"],
        data["into"],
        data["reason"],
        data["why"],
        data["content"],
        data["into_content"],
        data.get("score"),
    )


class AsyncConsolidation:
    """``memory.consolidation``: what consolidation runs did, and their undo.

    ``memory.consolidate(...)`` starts a run (see ``run``). Runs are owned like
    the facts they changed and scoped like them: a caller sees (and may undo)
    the runs over its own facts and over shared ones, and a run it may not see
    behaves exactly like a missing id (``NotFound``).
    """

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

    async def run(
        self,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        dry_run: bool = False,
    ) -> ConsolidationReport:
        """Consolidate the current facts of ``user_id`` (``None``: the shared facts).

        ``agent_id``: only that agent's facts (``None``: those shared by every agent);
        left out, every agent's, each agent's compared only with its own. Owners never
        mix: a fact is compared only with facts of exactly its user and agent, so a
        shared fact is never merged into a user's, nor one user's into another's.
        ``dry_run``: plan, write nothing, return the same report a run would.
        """
        user = self._scope.user(user_id)
        if isinstance(user, Unset):
            raise InvalidInput(
                "consolidate needs user_id (a user id, or None for the shared facts)",
                field="user_id",
            )
        agent = self._scope.agent(agent_id)
        if not isinstance(dry_run, bool):
            raise InvalidInput("dry_run must be a bool", field="dry_run")
        now = self._core.now()
        records = await self._core.store.record_list(self._tenant, FACT, user_id=user)
        live = [
            r
            for r in records
            if r.user_id == user
            and (isinstance(agent, Unset) or r.agent_id == agent)
            and (r.expires_at is None or r.expires_at > now)
        ]
        facts = {r.id: fact_from_record(r) for r in live}
        planned: list[Change] = []
        for _, group in sorted(owners(facts.values()).items(), key=lambda g: str(g[0])):
            vectors = await self._vectors([f.id for f in group])
            planned += plan(group, now=now, vectors=vectors)
        report = ConsolidationReport(
            run_id=new_id(),
            user_id=user,
            agent_id=None if isinstance(agent, Unset) else agent,
            dry_run=dry_run,
            status="dry_run" if dry_run else "applying",
            started_at=now,
            facts_examined=len(facts),
        )
        if dry_run:
            report.changes = [_public(c, facts[c.fact_id], facts[c.into]) for c in planned]
            report.finished_at = now
        else:
            await self._apply(report, planned, {r.id: r for r in live})
        return report

    async def _vectors(self, ids: Sequence[str]) -> dict[str, Any] | None:
        embedder = self._core.embedder
        if embedder is None or not ids:
            return None
        found: dict[str, Any] = {}
        for start in range(0, len(ids), _VECTOR_BATCH):
            found.update(
                await self._core.store.vector_get_arrays(
                    self._tenant,
                    FACT,
                    list(ids[start : start + _VECTOR_BATCH]),
                    model_id=embedder.model_id,
                )
            )
        return found

    def _run_record(self, report: ConsolidationReport, revision: int) -> Record:
        data = {
            "status": report.status,
            "started_at": report.started_at.isoformat(),
            "finished_at": None if report.finished_at is None else report.finished_at.isoformat(),
            "undone_at": None if report.undone_at is None else report.undone_at.isoformat(),
            "facts_examined": report.facts_examined,
            "changes": len(report.changes),
            "skipped": [c.to_dict() for c in report.skipped],
        }
        return Record(
            kind=RUN,
            id=report.run_id,
            agent_id=report.agent_id,
            user_id=report.user_id,
            content="",
            data=data,
            created_at=report.started_at,
            updated_at=report.finished_at or report.started_at,
            revision=revision,
        )

    async def _apply(
        self, report: ConsolidationReport, changes: Sequence[Change], read: dict[str, Record]
    ) -> None:
        store = self._core.store
        await store.record_put(
            self._tenant, [self._run_record(report, 1)], guard=RecordGuard(RUN, report.run_id, None)
        )
        current = dict(read)  # fact id -> the record as this run last read or wrote it
        for number, change in enumerate(changes):
            applied = await self._apply_one(report, number, change, current)
            loser = fact_from_record(read[change.fact_id])
            winner = fact_from_record(read[change.into])
            (report.changes if applied else report.skipped).append(_public(change, loser, winner))
        report.status = "applied"
        report.finished_at = self._core.now()
        await store.record_put(
            self._tenant, [self._run_record(report, 2)], guard=RecordGuard(RUN, report.run_id, 1)
        )

    async def _apply_one(
        self, report: ConsolidationReport, number: int, change: Change, current: dict[str, Record]
    ) -> bool:
        """Apply one change; ``False`` (nothing left written) when a fact changed meanwhile."""
        store = self._core.store
        tenant = self._tenant
        expected_winner, expected_loser = current[change.into], current[change.fact_id]
        got_winner = await store.record_get(tenant, FACT, change.into)
        got_loser = await store.record_get(tenant, FACT, change.fact_id)
        if (
            got_winner is None
            or got_loser is None
            or got_winner.revision != expected_winner.revision
            or got_loser.revision != expected_loser.revision
        ):
            return False
        now = self._core.now()
        winner, loser = fact_from_record(got_winner), fact_from_record(got_loser)
        link = "merged_from" if change.reason == "duplicate" else "supersedes"
        metadata = dict(winner.metadata)
        metadata[link] = [*metadata.get(link, []), loser.id]
        metadata["consolidation_run"] = report.run_id
        added: list[str] = []
        if change.reason == "duplicate":
            added = [e for e in loser.source_entries if e not in winner.source_entries]
        kept = Fact(
            id=winner.id,
            agent_id=winner.agent_id,
            user_id=winner.user_id,
            content=winner.content,
            category=winner.category,
            confidence=winner.confidence,
            source=winner.source,
            metadata=metadata,
            source_entries=(*winner.source_entries, *added),
            created_at=winner.created_at,
            updated_at=now,
            expires_at=winner.expires_at,
            version=winner.version + 1,
        )
        last = version_record(loser, now)
        last.data["metadata"] = {
            **loser.metadata,
            "superseded_by": winner.id,
            "consolidation_run": report.run_id,
            "consolidation_reason": change.reason,
        }
        vector = None
        embedder = self._core.embedder
        if embedder is not None:
            got = await store.vector_get(tenant, FACT, [loser.id], model_id=embedder.model_id)
            vector = got.get(loser.id)
        kept_record = fact_record(kept, got_winner.revision + 1)
        step = Record(
            kind=CHANGE,
            id=f"{report.run_id}:{number:06d}",
            agent_id=winner.agent_id,
            user_id=winner.user_id,
            content="",
            data={
                "fact_id": loser.id,
                "into": winner.id,
                "reason": change.reason,
                "why": change.why,
                "score": change.score,
                "content": loser.content,
                "into_content": winner.content,
                "winner": _dump(got_winner),
                "loser": _dump(got_loser),
                "winner_after": kept_record.revision,
                "links_added": added,
                "vector": None if vector is None else [float(x) for x in vector],
                "model_id": None if embedder is None else embedder.model_id,
            },
            created_at=now,
            updated_at=now,
            key=report.run_id,
        )
        await store.record_put(
            tenant,
            [kept_record, version_record(winner, now), last, step, *fact_links(kept, added)],
            guard=RecordGuard(FACT, winner.id, got_winner.revision),
        )
        try:
            await store.record_delete(
                tenant, FACT, [loser.id], guard=RecordGuard(FACT, loser.id, got_loser.revision)
            )
        except Conflict:
            await self._restore(step.data, kept_record.revision, loser_gone=False)
            await store.record_delete(tenant, CHANGE, [step.id])
            return False
        if loser.source_entries:
            links = [r.id for r in fact_links(loser, loser.source_entries)]
            await store.record_delete(tenant, FACT_SOURCE, links)
        current[winner.id] = kept_record
        current.pop(loser.id, None)
        return True

    async def _restore(
        self, data: dict[str, Any], winner_revision: int, *, loser_gone: bool
    ) -> int:
        """Put both facts of one change back as they were; the kept fact's new revision."""
        store = self._core.store
        tenant = self._tenant
        winner, loser = _load(data["winner"]), _load(data["loser"])
        winner.revision = winner_revision + 1
        writes = [winner]
        if loser_gone:
            loser.revision += 2  # a stale read of the retired fact stays stale
            writes.append(loser)
            sources = fact_from_record(loser).source_entries
            writes += fact_links(fact_from_record(loser), sources)
        await store.record_put(tenant, writes, guard=RecordGuard(FACT, winner.id, winner_revision))
        version_ids = [f"{winner.id}:{winner.data.get('version', 1)}"]
        last = f"{loser.id}:{loser.data.get('version', 1)}"
        if loser_gone:
            version_ids.append(last)
        else:  # the retired fact stayed: its last version is ours unless it was superseded since
            now = await store.record_get(tenant, FACT, loser.id)
            if now is None or now.data.get("version") == loser.data.get("version"):
                version_ids.append(last)
        await store.record_delete(tenant, FACT_VERSION, version_ids)
        added = [str(e) for e in data.get("links_added") or []]
        if added:
            kept = fact_from_record(winner)
            await store.record_delete(tenant, FACT_SOURCE, [r.id for r in fact_links(kept, added)])
        if loser_gone and data.get("vector") is not None and data.get("model_id"):
            item = VectorItem(FACT, loser.id, str(data["model_id"]), data["vector"])
            await store.vector_put(tenant, [item])
        return winner.revision

    async def _run(self, run_id: object) -> Record:
        """The run record, or ``NotFound`` (also for a run the caller may not see)."""
        record = await self._core.store.record_get(self._tenant, RUN, v.check_id(run_id, "run_id"))
        seen = self._scope.visibility()
        if record is None or not visible(seen, record.agent_id, record.user_id):
            raise NotFound(f"consolidation run {run_id!r} not found")
        return record

    async def _changes(self, run_id: str, *, every: bool = False) -> list[Record]:
        """The run's changes in order: those the caller may see, or ``every`` one."""
        seen = None if every else self._scope.visibility()
        records = await self._core.store.record_list(
            self._tenant, CHANGE, key=run_id, visible_to=seen
        )
        return sorted(records, key=lambda r: r.id)

    def _report(self, run: Record, changes: Sequence[Record]) -> ConsolidationReport:
        data = run.data
        started = _time(data.get("started_at")) or run.created_at
        status: RunStatus = data.get("status", "applying")
        return ConsolidationReport(
            run_id=run.id,
            user_id=run.user_id,
            agent_id=run.agent_id,
            dry_run=False,
            status=status,
            started_at=started,
            finished_at=_time(data.get("finished_at")),
            undone_at=_time(data.get("undone_at")),
            facts_examined=int(data.get("facts_examined", 0)),
            changes=[_change_from(c.data) for c in changes],
            skipped=[_change_from(c) for c in data.get("skipped") or []],
        )

    async def runs(self, *, limit: int | None = None) -> list[ConsolidationReport]:
        """The runs this handle may see (over its own facts and shared ones), newest first,
        each as its report without the list of changes (see ``report``)."""
        limit = v.check_limit(limit, "limit")
        seen = self._scope.visibility()
        records = await self._core.store.record_list(self._tenant, RUN, visible_to=seen)
        records.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return [self._report(r, []) for r in records[:limit]]

    async def report(self, run_id: str) -> ConsolidationReport:
        """What run ``run_id`` changed and why. ``NotFound`` for a run the caller may not see."""
        run = await self._run(run_id)
        return self._report(run, await self._changes(run.id))

    async def undo(self, run_id: str) -> ConsolidationReport:
        """Restore every fact the run changed exactly as it was before it: the kept facts'
        values, versions and provenance, the retired facts (with history, provenance and
        vectors); the run's versions go. ``Conflict`` and nothing restored when one of
        those facts changed after the run (undo would lose that change), or when the run
        was undone already; ``NotFound`` for a run the caller may not see."""
        run = await self._run(run_id)
        if run.data.get("status") == "undone":
            raise Conflict(f"consolidation run {run.id!r} was undone already")
        changes = await self._changes(run.id)
        if len(changes) != len(await self._changes(run.id, every=True)):
            raise InvalidInput(
                f"consolidation run {run.id!r} changed facts of agents this handle may not"
                " change: undo it from a handle that sees them all",
                field="run_id",
            )
        store = self._core.store
        winners: dict[str, int] = {}
        for change in changes:
            winners[change.data["into"]] = int(change.data["winner_after"])
        for fact_id, revision in winners.items():
            got = await store.record_get(self._tenant, FACT, fact_id)
            if got is None or got.revision != revision:
                raise Conflict(f"fact {fact_id!r} changed after the run: undo refused")
        for change in changes:
            if await store.record_get(self._tenant, FACT, change.data["fact_id"]) is not None:
                raise Conflict(
                    f"fact {change.data['fact_id']!r} exists again since the run: undo refused"
                )
        for change in reversed(changes):
            into = change.data["into"]
            winners[into] = await self._restore(change.data, winners[into], loser_gone=True)
        now = self._core.now()
        report = self._report(run, changes)
        report.status = "undone"
        report.undone_at = now
        await store.record_put(
            self._tenant,
            [self._run_record(report, run.revision + 1)],
            guard=RecordGuard(RUN, run.id, run.revision),
        )
        return report
