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

from memorybank.consolidation.report import (
    ConsolidationChange,
    ConsolidationReport,
    JudgeUsage,
    RunStatus,
)
from memorybank.consolidation.rules import Change, owners, plan, undecided, valid_at
from memorybank.core._async.facts import (
    FACT,
    FACT_SOURCE,
    FACT_VERSION,
    fact_from_record,
    fact_links,
    fact_record,
    version_record,
)
from memorybank.errors import Conflict, InvalidInput, NotFound
from memorybank.records import Fact
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.rules.scope import ROOT, Scope
from memorybank.runtime.concurrency import aoffload
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, VectorItem
from memorybank.stores.contract.types import visible

if TYPE_CHECKING:
    from memorybank.core._async.core import _Core
    from memorybank.core.judge import LLMJudge

__all__ = ["CHANGE", "RUN", "AsyncConsolidation"]

RUN = "consolidation_run"
CHANGE = "consolidation_change"
#: Facts whose vectors are read per store call.
_VECTOR_BATCH = 1000
#: Changes applied (or undone) per atomic write.
_BATCH = 200


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
        change.decided_by,
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
        data.get("decided_by", "rules"),
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
        judge = self._core.judge
        usage = None if judge is None else judge.usage()
        planned: list[Change] = []
        for _, group in sorted(owners(facts.values()).items(), key=lambda g: str(g[0])):
            vectors = await self._vectors([f.id for f in group])
            changes = await aoffload(plan, group, now=now, vectors=vectors)
            if judge is not None and usage is not None:
                changes += await self._judged(judge, usage, group, changes, now, vectors)
            planned += changes
        report = ConsolidationReport(
            run_id=new_id(),
            user_id=user,
            agent_id=None if isinstance(agent, Unset) else agent,
            dry_run=dry_run,
            status="dry_run" if dry_run else "applying",
            started_at=now,
            facts_examined=len(facts),
            judge=usage,
        )
        if dry_run:
            report.changes = [_public(c, facts[c.fact_id], facts[c.into]) for c in planned]
            report.finished_at = now
        else:
            await self._apply(report, planned, {r.id: r for r in live})
        return report

    async def _judged(
        self,
        judge: LLMJudge,
        usage: JudgeUsage,
        group: Sequence[Fact],
        changes: Sequence[Change],
        now: datetime,
        vectors: dict[str, Any] | None,
    ) -> list[Change]:
        """The changes the judge decides among what the rules left undecided in ``group``
        (one owner's facts), within its budget. A fact retired by an earlier change takes
        no further part, and a fact some change keeps is never retired (no chains)."""
        cases = await aoffload(
            undecided, group, changes, now=now, vectors=vectors, max_candidates=judge.max_candidates
        )
        usage.cases += len(cases)
        retired = {c.fact_id for c in changes}
        kept = {c.into for c in changes}
        decided: list[Change] = []
        for fact, candidates in cases:
            if fact.id in retired:
                continue
            candidates = [c for c in candidates if c.id not in retired]
            if not candidates:
                continue
            if not judge.can_call(usage):
                break
            verdicts = await judge.adecide(fact, candidates, usage)
            by_id = {c.id: c for c in candidates}
            for verdict in verdicts or []:
                other = by_id.get(verdict.id)  # only the candidates shown (parse checks too)
                if other is None or fact.id in retired or other.id in retired:
                    continue
                if verdict.relation == "duplicate":
                    winner, loser = other, fact  # the older stays, as the rules do
                    why = f"judged the same fact by {judge.model}"
                else:
                    # the value valid last wins, as the rules' contradictions
                    winner = max((other, fact), key=lambda f: (valid_at(f), f.created_at, f.id))
                    loser = fact if winner is other else other
                    why = (
                        f"judged a contradiction by {judge.model}: {loser.content!r} was "
                        f"replaced by {winner.content!r} (valid from "
                        f"{valid_at(winner).isoformat()})"
                    )
                if loser.id in kept:
                    continue
                retired.add(loser.id)
                kept.add(winner.id)
                decided.append(
                    Change(loser.id, winner.id, verdict.relation, why, decided_by="judge")
                )
        return decided

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
            "judge": None if report.judge is None else report.judge.to_dict(),
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
        """Apply ``changes`` in batches of ``_BATCH``: one atomic ``record_put`` each (guarded
        on the run record, whose revision it bumps), then one delete of the retired facts."""
        store = self._core.store
        tenant = self._tenant
        revision = 1
        await store.record_put(
            tenant,
            [self._run_record(report, revision)],
            guard=RecordGuard(RUN, report.run_id, None),
        )
        expected = dict(read)  # fact id -> the record as this run last read or wrote it
        gone: set[str] = set()
        number = 0
        for start in range(0, len(changes), _BATCH):
            batch = changes[start : start + _BATCH]
            ids = list(dict.fromkeys(i for c in batch for i in (c.fact_id, c.into)))
            fresh = await store.record_get_many(tenant, FACT, ids)
            vectors = await self._loser_vectors([c.fact_id for c in batch])
            now = self._core.now()
            kept: dict[str, Record] = {}  # the batch's final value of each kept fact
            writes: list[Record] = []
            retired: list[Fact] = []
            for change in batch:
                got_winner = kept.get(change.into) or fresh.get(change.into)
                got_loser = kept.get(change.fact_id) or fresh.get(change.fact_id)
                if (
                    got_winner is None
                    or got_loser is None
                    or change.fact_id in gone
                    or change.into in gone
                    or got_winner.revision != expected[change.into].revision
                    or got_loser.revision != expected[change.fact_id].revision
                ):
                    report.skipped.append(
                        _public(
                            change,
                            fact_from_record(read[change.fact_id]),
                            fact_from_record(read[change.into]),
                        )
                    )
                    continue
                winner, loser = fact_from_record(got_winner), fact_from_record(got_loser)
                record, step = self._change_records(
                    report, number, change, got_winner, got_loser, vectors.get(loser.id), now
                )
                number += 1
                added = [str(e) for e in step.data["links_added"]]
                writes += [
                    version_record(winner, now),
                    self._last(loser, winner, report, change, now),
                ]
                writes += [step, *fact_links(fact_from_record(record), added)]
                kept[winner.id] = expected[winner.id] = record
                kept.pop(loser.id, None)
                gone.add(loser.id)
                retired.append(loser)
                report.changes.append(_public(change, loser, winner))
            if not retired:
                continue
            revision += 1
            writes += [*kept.values(), self._run_record(report, revision)]
            await store.record_put(
                tenant, writes, guard=RecordGuard(RUN, report.run_id, revision - 1)
            )
            await store.record_delete(tenant, FACT, [f.id for f in retired])
            links = [r.id for f in retired for r in fact_links(f, f.source_entries)]
            if links:
                await store.record_delete(tenant, FACT_SOURCE, links)
        report.status = "applied"
        report.finished_at = self._core.now()
        await store.record_put(
            tenant,
            [self._run_record(report, revision + 1)],
            guard=RecordGuard(RUN, report.run_id, revision),
        )

    async def _loser_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        embedder = self._core.embedder
        if embedder is None:
            return {}
        got = await self._core.store.vector_get(
            self._tenant, FACT, list(dict.fromkeys(ids)), model_id=embedder.model_id
        )
        return {k: [float(x) for x in v] for k, v in got.items()}

    @staticmethod
    def _last(
        loser: Fact, winner: Fact, report: ConsolidationReport, change: Change, now: datetime
    ) -> Record:
        """The retired fact's last value, as its history keeps it (with the link)."""
        last = version_record(loser, now)
        last.data["metadata"] = {
            **loser.metadata,
            "superseded_by": winner.id,
            "consolidation_run": report.run_id,
            "consolidation_reason": change.reason,
        }
        return last

    def _change_records(
        self,
        report: ConsolidationReport,
        number: int,
        change: Change,
        got_winner: Record,
        got_loser: Record,
        vector: list[float] | None,
        now: datetime,
    ) -> tuple[Record, Record]:
        """The kept fact's new value and the change record (both facts as they were)."""
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
        record = fact_record(kept, got_winner.revision + 1)
        embedder = self._core.embedder
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
                "decided_by": change.decided_by,
                "content": loser.content,
                "into_content": winner.content,
                "winner": _dump(got_winner),
                "loser": _dump(got_loser),
                "winner_after": record.revision,
                "links_added": added,
                "vector": vector,
                "model_id": None if embedder is None else embedder.model_id,
            },
            created_at=now,
            updated_at=now,
            key=report.run_id,
        )
        return record, step

    async def _restore(self, run: Record, changes: Sequence[Record]) -> None:
        """Put every fact the run touched back as the first change that touched it found
        it; delete the versions and links the run wrote; give retired facts their vectors.
        ``Conflict`` and nothing written when a kept fact changed since or a retired one
        exists again."""
        store = self._core.store
        tenant = self._tenant
        first: dict[str, Record] = {}
        final: dict[str, int] = {}  # kept fact -> the revision the run left it at
        retired: set[str] = set()
        versions: list[str] = []
        added: dict[str, set[str]] = {}
        vectors: list[VectorItem] = []
        for change in changes:
            data = change.data
            for side in ("winner", "loser"):
                before = _load(data[side])
                first.setdefault(before.id, before)
                versions.append(f"{before.id}:{before.data.get('version', 1)}")
            final[data["into"]] = int(data["winner_after"])
            retired.add(data["fact_id"])
            added.setdefault(data["into"], set()).update(data.get("links_added") or [])
            if data.get("vector") is not None and data.get("model_id"):
                vectors.append(
                    VectorItem(FACT, data["fact_id"], str(data["model_id"]), data["vector"])
                )
        for fact_id in retired:
            final.pop(fact_id, None)
        now = await store.record_get_many(tenant, FACT, [*final, *retired])
        for fact_id, revision in final.items():
            got = now.get(fact_id)
            if got is None or got.revision != revision:
                raise Conflict(f"fact {fact_id!r} changed after the run: undo refused")
        for fact_id in retired:
            if fact_id in now:
                raise Conflict(f"fact {fact_id!r} exists again since the run: undo refused")
        writes: list[Record] = []
        stale: list[str] = []
        for fact_id, before in first.items():
            before.revision = (final.get(fact_id, before.revision) or 0) + 2
            fact = fact_from_record(before)
            writes += [before, *fact_links(fact, fact.source_entries)]
            gained = added.get(fact_id, set()) - set(fact.source_entries)
            stale += [r.id for r in fact_links(fact, sorted(gained))]
        revision = run.revision
        for start in range(0, max(len(writes), 1), _BATCH * 4):
            chunk = [*writes[start : start + _BATCH * 4]]
            run.revision = revision + 1
            await store.record_put(tenant, [*chunk, run], guard=RecordGuard(RUN, run.id, revision))
            revision += 1
        if versions:
            await store.record_delete(tenant, FACT_VERSION, versions)
        if stale:
            await store.record_delete(tenant, FACT_SOURCE, stale)
        if vectors:
            await store.vector_put(tenant, vectors)

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
            judge=None if not data.get("judge") else JudgeUsage(**data["judge"]),
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
        await self._restore(run, changes)
        now = self._core.now()
        report = self._report(run, changes)
        report.status = "undone"
        report.undone_at = now
        await self._core.store.record_put(
            self._tenant,
            [self._run_record(report, run.revision + 1)],
            guard=RecordGuard(RUN, run.id, run.revision),
        )
        return report
