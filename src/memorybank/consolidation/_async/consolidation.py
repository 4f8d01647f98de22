"""``memory.consolidate`` and ``memory.consolidation``: runs, reports, undo.

A run reads one owner's current facts, asks ``memorybank.consolidation.rules`` (and
the memory's judge) for a plan, and applies it above the stores in chunks of
``CHUNK``, pausing between two; a run of more than one chunk journals its plan and
holds a lease, so a crashed run is completed by ``resume()``. The records it writes
and its crash guarantees: docs/consolidation.md ("Runs, reports and undo", "Writes,
concurrency and crashes").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memorybank.consolidation._async.entities import (
    consolidate_entities,
    crash_safe,
    dump_record,
    entity_changes,
    load_record,
    prepare_entity_undo,
    public_changes,
)
from memorybank.consolidation.report import (
    ConsolidationChange,
    ConsolidationReport,
    JudgeUsage,
    RunStatus,
    change_from,
)
from memorybank.consolidation.rules import Change, owners, plan, undecided, valid_at
from memorybank.core._async.cas import put_changed, put_new, system_record
from memorybank.core._async.core import Namespace
from memorybank.core._async.facts import (
    FACT,
    FACT_SOURCE,
    FACT_VERSION,
    fact_from_record,
    fact_links,
    fact_record,
    version_record,
)
from memorybank.errors import ConfigurationError, Conflict, InvalidInput, LeaseLost, NotFound
from memorybank.records import Fact
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.rules.scope import ROOT
from memorybank.runtime.concurrency import AsyncJobQueue, aoffload, asleep
from memorybank.runtime.log import logger
from memorybank.stores.contract._async import leases
from memorybank.stores.contract._async.store import (
    UNSET,
    AsyncStore,
    Record,
    RecordGuard,
    Unset,
    VectorItem,
)
from memorybank.stores.contract.types import visible

if TYPE_CHECKING:
    from memorybank.core._async.core import _Core
    from memorybank.core.judge import LLMJudge

__all__ = [
    "CHANGE",
    "CHUNK",
    "CLOSE_TIMEOUT",
    "DEFAULT_EVERY",
    "PAGE",
    "PAUSE",
    "PLAN",
    "RUN",
    "SCHEDULE",
    "SCHEDULE_TENANT",
    "AsyncConsolidation",
    "AsyncConsolidationService",
]

RUN = "consolidation_run"
CHANGE = "consolidation_change"
#: The journal of a run being applied: its planned changes, one record per chunk.
PLAN = "consolidation_plan"
#: Changes applied per transaction (a chunk): a writer waits at most for one chunk.
CHUNK = 50
#: Seconds a run pauses at least between two chunks, so other writers take the store
#: meanwhile; it pauses as long as the chunk took when that is longer (a writer waiting
#: for the store finds it free at least half the time).
PAUSE = 0.01
#: Facts whose vectors are read per store call.
_VECTOR_BATCH = 1000
#: Changes undone per write.
_BATCH = 200
#: Plan records written per store call.
_PLAN_PUT = 20


@dataclass(slots=True)
class _State:
    """What a run has done so far: the facts it retired, the revision it left each kept
    fact at, and the number of its next change record."""

    gone: set[str] = field(default_factory=set)
    revisions: dict[str, int] = field(default_factory=dict)
    number: int = 0

    def copy(self) -> _State:
        return _State(set(self.gone), dict(self.revisions), self.number)

    def restore(self, saved: _State) -> None:
        self.gone, self.revisions, self.number = saved.gone, saved.revisions, saved.number

    def expected(self, step: dict[str, Any], fact_id: str) -> int:
        """The revision ``fact_id`` must still have for the step to apply."""
        found = self.revisions.get(fact_id)
        return int(step["revs"][fact_id]) if found is None else found


def _step(change: Change, read: dict[str, Record]) -> dict[str, Any]:
    """A planned change as the journal keeps it (with the revisions the plan read)."""
    loser, winner = read[change.fact_id], read[change.into]
    revs = {loser.id: loser.revision, winner.id: winner.revision}
    return {**_public(change, loser, winner).to_dict(), "revs": revs}


def _change_of(step: dict[str, Any]) -> Change:
    return Change(
        step["fact_id"],
        step["into"],
        step["reason"],
        step["why"],
        step.get("score"),
        step.get("decided_by", "rules"),
    )


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _public(change: Change, loser: Fact | Record, winner: Fact | Record) -> ConsolidationChange:
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


class AsyncConsolidation(Namespace):
    """``memory.consolidation``: what consolidation runs did, and their undo.

    ``memory.consolidate(...)`` starts a run (see ``run``). Runs are owned like
    the facts they changed and scoped like them: a caller sees (and may undo)
    the runs over its own facts and over shared ones, and a run it may not see
    behaves exactly like a missing id (``NotFound``).
    """

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
        v.check_bool(dry_run, "dry_run")
        if not dry_run:  # first complete what an interrupted run of this owner left
            await self._resume(await self._core.store.record_list(self._tenant, RUN, user_id=user))
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
        await consolidate_entities(self._core, self._tenant, report, user=user, agent=agent)
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

    # -- applying: chunks, the journal, resuming ------------------------------------

    def _run_record(
        self, report: ConsolidationReport, revision: int, extra: dict[str, Any] | None = None
    ) -> Record:
        data = {
            "status": report.status,
            "started_at": report.started_at.isoformat(),
            "finished_at": None if report.finished_at is None else report.finished_at.isoformat(),
            "undone_at": None if report.undone_at is None else report.undone_at.isoformat(),
            "facts_examined": report.facts_examined,
            "changes": len(report.changes),
            "skipped": [c.to_dict() for c in report.skipped],
            "judge": None if report.judge is None else report.judge.to_dict(),
            **(extra or {}),
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

    def _held(self, report: ConsolidationReport, revision: int, done: int, chunks: int) -> Record:
        """The run record of a run being applied: its progress and this worker's lease."""
        until = leases.expiry(datetime.now(UTC), self._core.consolidate_lease)
        record = self._run_record(
            report, revision, {"journal": True, "done": done, "chunks": chunks}
        )
        record.data[leases.LEASE_FIELD] = {"owner": self._core.worker, "until": until.isoformat()}
        return record

    async def _apply(
        self, report: ConsolidationReport, changes: Sequence[Change], read: dict[str, Record]
    ) -> None:
        """Apply ``changes`` in chunks of ``CHUNK``, each in one transaction where the store
        is crash-safe (``Capability.ATOMIC`` and durable), pausing between chunks so other
        writers get the store; a run of more than one chunk keeps its plan in a journal
        first (``consolidation_plan`` records), so an interrupted run can be resumed."""
        store = self._core.store
        steps = [_step(c, read) for c in changes]
        chunks = [steps[i : i + CHUNK] for i in range(0, len(steps), CHUNK)]
        state = _State()
        if crash_safe(store) and len(chunks) <= 1:
            # the whole run in one transaction: applied or not at all
            async with store.atomic(self._tenant) as view:
                writes, gone, _ = await self._chunk(
                    view, report, chunks[0] if chunks else [], state
                )
                report.status = "applied"
                report.finished_at = self._core.now()
                await view.record_put(
                    self._tenant,
                    [*writes, self._run_record(report, 1)],
                    guard=RecordGuard(RUN, report.run_id, None),
                )
                await self._retire(view, gone)
            return
        plans = [self._plan_record(report, i, chunk) for i, chunk in enumerate(chunks)]
        for start in range(0, len(plans), _PLAN_PUT):
            await store.record_put(self._tenant, plans[start : start + _PLAN_PUT])
        run = self._held(report, 1, 0, len(chunks))
        await store.record_put(self._tenant, [run], guard=RecordGuard(RUN, report.run_id, None))
        await self._continue(run, report, list(enumerate(chunks)), state)

    def _plan_record(
        self, report: ConsolidationReport, index: int, chunk: Sequence[dict[str, Any]]
    ) -> Record:
        return Record(
            kind=PLAN,
            id=f"{report.run_id}:{index:06d}",
            agent_id=report.agent_id,
            user_id=report.user_id,
            content="",
            data={"index": index, "steps": list(chunk)},
            created_at=report.started_at,
            updated_at=report.started_at,
            key=report.run_id,
        )

    async def _continue(
        self,
        run: Record,
        report: ConsolidationReport,
        chunks: Sequence[tuple[int, Sequence[dict[str, Any]]]],
        state: _State,
    ) -> None:
        """Apply the run's ``chunks`` left (index, steps), one transaction each, then mark
        it applied. ``LeaseLost`` when another worker took the run over meanwhile."""
        store = self._core.store
        tenant = self._tenant
        total = int(run.data.get("chunks", len(chunks)))
        safe = crash_safe(store)
        for index, chunk in chunks:
            guard = RecordGuard(RUN, report.run_id, run.revision)
            plan_id = f"{report.run_id}:{index:06d}"
            nxt = self._held(report, run.revision + 1, index + 1, total)
            if not safe:
                writes, gone, _ = await self._chunk(store, report, chunk, state)
                await self._commit(store, nxt, guard, (writes, gone), plan_id)
                run = nxt
                await asleep(PAUSE)
                continue
            # The chunk's writes are made from reads outside the transaction; inside it, the
            # facts are read again: unchanged, the writes go in as made (the transaction
            # holds the store for a read and the writes only), else the chunk is made again
            # from what the transaction reads.
            before = state.copy(), len(report.changes), len(report.skipped)
            writes, gone, seen = await self._chunk(store, report, chunk, state)
            began = time.monotonic()
            async with store.atomic(tenant) as view:
                now = await view.record_get_many(tenant, FACT, list(seen))
                if {i: r.revision for i, r in now.items()} != {
                    i: r for i, r in seen.items() if r is not None
                }:
                    state.restore(before[0])
                    del report.changes[before[1] :], report.skipped[before[2] :]
                    writes, gone, _ = await self._chunk(view, report, chunk, state)
                await self._commit(view, nxt, guard, (writes, gone), plan_id)
            run = nxt
            # other writers take the store between two chunks, at least as long as it was held
            await asleep(max(PAUSE, time.monotonic() - began))
        report.status = "applied"
        report.finished_at = self._core.now()
        try:
            await store.record_put(
                tenant,
                [self._run_record(report, run.revision + 1)],
                guard=RecordGuard(RUN, report.run_id, run.revision),
            )
        except Conflict as error:
            raise LeaseLost(f"consolidation run {report.run_id!r} was taken over") from error

    async def _commit(
        self,
        st: AsyncStore,
        run: Record,
        guard: RecordGuard,
        retired: tuple[list[Record], list[Fact]],
        plan_id: str,
    ) -> None:
        """Write a chunk (with the run's progress, guarded on the run), delete its retired
        facts, their links and its plan record."""
        writes, gone = retired
        try:
            await st.record_put(self._tenant, [*writes, run], guard=guard)
        except Conflict as error:
            raise LeaseLost(f"consolidation run {run.id!r} was taken over") from error
        await self._retire(st, gone)
        await st.record_delete(self._tenant, PLAN, [plan_id])

    async def _retire(self, st: AsyncStore, gone: Sequence[Fact]) -> None:
        if not gone:
            return
        await st.record_delete(self._tenant, FACT, [f.id for f in gone])
        links = [r.id for f in gone for r in fact_links(f, f.source_entries)]
        if links:
            await st.record_delete(self._tenant, FACT_SOURCE, links)

    async def _chunk(
        self,
        st: AsyncStore,
        report: ConsolidationReport,
        chunk: Sequence[dict[str, Any]],
        state: _State,
    ) -> tuple[list[Record], list[Fact], dict[str, int | None]]:
        """The writes of one chunk (as read through ``st``), the facts it retires and the
        revision of each fact it read (``None``: missing); its changes and skips go into
        ``report``."""
        if not chunk:
            return [], [], {}
        tenant = self._tenant
        ids = list(dict.fromkeys(i for s in chunk for i in (s["fact_id"], s["into"])))
        fresh = await st.record_get_many(tenant, FACT, ids)
        seen = {i: (None if i not in fresh else fresh[i].revision) for i in ids}
        vectors = await self._loser_vectors(st, [s["fact_id"] for s in chunk])
        now = self._core.now()
        kept: dict[str, Record] = {}  # the chunk's final value of each kept fact
        writes: list[Record] = []
        retired: list[Fact] = []
        for step in chunk:
            change = _change_of(step)
            loser_id, winner_id = change.fact_id, change.into
            got_winner = kept.get(winner_id) or fresh.get(winner_id)
            got_loser = kept.get(loser_id) or fresh.get(loser_id)
            if (
                got_winner is None
                or got_loser is None
                or loser_id in state.gone
                or winner_id in state.gone
                or got_winner.revision != state.expected(step, winner_id)
                or got_loser.revision != state.expected(step, loser_id)
            ):
                report.skipped.append(change_from(ConsolidationChange, step))
                continue
            winner, loser = fact_from_record(got_winner), fact_from_record(got_loser)
            record, made = self._change_records(
                report, state.number, change, got_winner, got_loser, vectors.get(loser_id), now
            )
            state.number += 1
            added = [str(e) for e in made.data["links_added"]]
            writes += [
                version_record(winner, now),
                self._last(loser, winner, report, change, now),
                made,
                *fact_links(fact_from_record(record), added),
            ]
            kept[winner_id] = record
            state.revisions[winner_id] = record.revision
            kept.pop(loser_id, None)
            state.gone.add(loser_id)
            retired.append(loser)
            report.changes.append(_public(change, loser, winner))
        return [*writes, *kept.values()], retired, seen

    async def _loser_vectors(self, st: AsyncStore, ids: Sequence[str]) -> dict[str, list[float]]:
        embedder = self._core.embedder
        if embedder is None:
            return {}
        got = await st.vector_get(
            self._tenant, FACT, list(dict.fromkeys(ids)), model_id=embedder.model_id
        )
        return {k: [float(x) for x in v] for k, v in got.items()}

    async def tick(self) -> list[ConsolidationReport]:
        """Do the background schedule's work now, on its worker, and wait for it: the
        reports of the runs it made or completed (``Memory(consolidate="background")``;
        ``ConfigurationError`` otherwise). Tests, and an app that knows it just wrote a
        lot, call it instead of waiting for ``consolidate_every``. A scoped handle may not
        (``InvalidInput``): the worker acts for every owner."""
        return await self._service().tick()

    def _service(self) -> AsyncConsolidationService:
        """The memory's background worker (made on first use)."""
        if self._scope is not ROOT:
            raise InvalidInput(
                "the background worker covers every tenant the memory serves: call it on"
                " an unscoped handle",
                field="scope",
            )
        core = self._core
        if core.consolidate_every is None:
            raise ConfigurationError("tick() needs Memory(consolidate='background')")
        service = core.consolidate_service
        if not isinstance(service, AsyncConsolidationService):
            service = AsyncConsolidationService(core, core.consolidate_every)
            core.consolidate_service = service
        return service

    async def start(self) -> None:
        """Start the background worker of ``Memory(consolidate="background")`` (once; a
        no-op otherwise): a first tick at once, then one every ``consolidate_every``.
        ``with``/``async with`` call it; a scoped handle may not (``InvalidInput``)."""
        if self._core.consolidate_every is not None or self._scope is not ROOT:
            await self._service().start()

    async def resume(self) -> list[ConsolidationReport]:
        """Complete the runs this handle may see that were interrupted (a process stopped
        or killed while applying one) and that no live worker holds: each goes on from its
        journal, change by change as planned (a fact changed since is skipped), to
        ``"applied"``. The reports of the runs completed. ``memory.consolidate`` does this
        for its owner first, and the background schedule for its tenant on every tick."""
        seen = self._scope.visibility()
        records = await self._core.store.record_list(self._tenant, RUN, visible_to=seen)
        return await self._resume(records)

    async def _resume(self, records: Sequence[Record]) -> list[ConsolidationReport]:
        done: list[ConsolidationReport] = []
        for record in records:
            if record.data.get("status") != "applying" or not record.data.get("journal"):
                continue
            now = datetime.now(UTC)
            until = leases.expiry(now, self._core.consolidate_lease)
            held = await leases.claim(
                self._core.store,
                self._tenant,
                record,
                owner=self._core.worker,
                until=until,
                now=now,
            )
            if held is None:
                continue  # a live worker applies it, or another claim won
            try:
                done.append(await self._resume_one(held))
            except LeaseLost:
                continue
        return done

    async def _resume_one(self, run: Record) -> ConsolidationReport:
        store = self._core.store
        changes = await self._changes(run.id, every=True)
        report = self._report(run, changes)
        state = _State()
        for change in changes:
            data = change.data
            state.gone.add(data["fact_id"])
            state.revisions[data["into"]] = int(data["winner_after"])
            state.number = max(state.number, int(change.id.rsplit(":", 1)[1]) + 1)
        if not crash_safe(store):
            # a chunk's write may have landed without its deletes: finish them
            gone = await store.record_get_many(self._tenant, FACT, sorted(state.gone))
            await self._retire(store, [fact_from_record(r) for r in gone.values()])
        done = int(run.data.get("done", 0))
        plans = await store.record_list(self._tenant, PLAN, key=run.id)
        left: list[tuple[int, Sequence[dict[str, Any]]]] = []
        stale: list[str] = []
        for journal in sorted(plans, key=lambda r: r.id):
            index = int(journal.data["index"])
            if index < done:
                stale.append(journal.id)
            else:
                left.append((index, journal.data["steps"]))
        if stale:
            await store.record_delete(self._tenant, PLAN, stale)
        await self._continue(run, report, left, state)
        return report

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
        kept = dataclasses.replace(
            winner,
            metadata=metadata,
            source_entries=(*winner.source_entries, *added),
            updated_at=now,
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
                **_public(change, loser, winner).to_dict(),
                "winner": dump_record(got_winner),
                "loser": dump_record(got_loser),
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
                before = load_record(data[side])
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
            changes=[change_from(ConsolidationChange, c.data) for c in changes],
            skipped=[change_from(ConsolidationChange, c) for c in data.get("skipped") or []],
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
        report = self._report(run, await self._changes(run.id))
        seen = self._scope.visibility()
        report.entity_changes = public_changes(
            await entity_changes(self._core, self._tenant, run.id, seen)
        )
        return report

    async def undo(self, run_id: str) -> ConsolidationReport:
        """Restore every fact the run changed exactly as it was before it: the kept facts'
        values, versions and provenance, the retired facts (with history, provenance and
        vectors); the run's versions go. ``Conflict`` and nothing restored when one of
        those facts changed after the run (undo would lose that change), or when the run
        was undone already; ``NotFound`` for a run the caller may not see."""
        run = await self._run(run_id)
        if run.data.get("status") == "undone":
            raise Conflict(f"consolidation run {run.id!r} was undone already")
        lease = leases.lease_of(run)
        if run.data.get("status") == "applying" and (
            lease is not None and lease.live(datetime.now(UTC))
        ):
            raise Conflict(f"consolidation run {run.id!r} is being applied: undo it once done")
        changes = await self._changes(run.id)
        if len(changes) != len(await self._changes(run.id, every=True)):
            raise InvalidInput(
                f"consolidation run {run.id!r} changed facts of agents this handle may not"
                " change: undo it from a handle that sees them all",
                field="run_id",
            )
        seen = self._scope.visibility()
        entities = await prepare_entity_undo(self._core, self._tenant, run.id, seen)
        await self._restore(run, changes)
        await entities.apply()
        plans = await self._core.store.record_list(self._tenant, PLAN, key=run.id)
        if plans:  # what an interrupted run had left to do: never done now
            await self._core.store.record_delete(self._tenant, PLAN, [p.id for p in plans])
        now = self._core.now()
        report = self._report(run, changes)
        report.entity_changes = public_changes(
            await entity_changes(self._core, self._tenant, run.id, seen)
        )
        report.status = "undone"
        report.undone_at = now
        await self._core.store.record_put(
            self._tenant,
            [self._run_record(report, run.revision + 1)],
            guard=RecordGuard(RUN, run.id, run.revision),
        )
        return report


#: The reserved tenant (no caller can name it) holding one schedule record per tenant.
SCHEDULE_TENANT = "~memorybank-consolidate"
#: The record kind of a tenant's schedule: its cursor and the lease of its worker.
SCHEDULE = "consolidate_schedule"
#: Seconds between two background ticks by default (an hour).
DEFAULT_EVERY = 3600.0
#: Facts read per page when looking for new ones.
PAGE = 1000
#: Seconds ``close()`` gives a tick under way before stopping it.
CLOSE_TIMEOUT = 30.0


def _cursor(record: Record) -> tuple[datetime, str] | None:
    found = record.data.get("cursor")
    if not isinstance(found, list) or len(found) != 2:
        return None
    return datetime.fromisoformat(found[0]), str(found[1])


class AsyncConsolidationService:
    """The background consolidation of one memory (shared by its handles):
    ``Memory(consolidate="background")`` and ``serve --consolidate-every``. Each tick takes
    each served tenant's schedule (a leased ``consolidate_schedule`` record in
    ``SCHEDULE_TENANT``), resumes its interrupted runs, consolidates the owners with facts
    newer than the schedule's cursor and moves it: docs/consolidation.md ("Background
    consolidation").
    """

    def __init__(self, core: _Core, every: float) -> None:
        self._core = core
        self.every = every
        #: The tenants this memory served: the ones each tick looks after.
        self.tenants = core.consolidate_tenants
        self._closing = False
        self._started = False
        self._reports: list[ConsolidationReport] = []
        self.queue: AsyncJobQueue[None] = AsyncJobQueue(
            "memorybank-consolidate",
            capacity=1,
            batch=1,
            handle=self._handle,
            tick=every,
        )

    async def start(self) -> None:
        """Start the worker (once): a first tick at once (what a stopped process left is
        completed), then one every ``every`` seconds."""
        if self._started or self._closing:
            return
        self._started = True
        await self.queue.put(None, 0)

    async def tick(self) -> list[ConsolidationReport]:
        """Run a tick on the worker now and wait for it (and any under way): the reports
        of the runs it made or completed."""
        self._started = True
        self._reports = []
        if not await self.queue.put(None, 0):
            return []
        await self.queue.join()
        found, self._reports = self._reports, []
        return found

    async def close(self) -> None:
        """Stop the worker: between two owners, or after ``CLOSE_TIMEOUT`` seconds."""
        self._closing = True
        await self.queue.close(CLOSE_TIMEOUT)

    async def _handle(self, jobs: list[None]) -> None:
        for tenant in sorted(self.tenants):
            if self._closing:
                return
            try:
                self._reports += await self._tenant(tenant)
            except Exception as error:  # the next tick tries again
                logger.warning(
                    "memorybank: background consolidation of tenant %r failed (%s)",
                    tenant,
                    error,
                    exc_info=error,
                )

    async def _hold(self, tenant: str) -> Record | None:
        """The tenant's schedule record, held by this worker; ``None`` when another holds it."""
        store = self._core.store
        now = datetime.now(UTC)  # the wall clock, not the memory's: leases across nodes
        until = leases.expiry(now, self._core.consolidate_lease)
        found = await store.record_get(SCHEDULE_TENANT, SCHEDULE, tenant)
        if found is not None:
            return await leases.claim(
                store, SCHEDULE_TENANT, found, owner=self._core.worker, until=until, now=now
            )
        fresh = system_record(SCHEDULE, tenant, {"cursor": None}, now)
        held = leases.leased(fresh, self._core.worker, until)
        try:
            await put_new(store, SCHEDULE_TENANT, held)
        except Conflict:  # another worker made it first
            return None
        return held

    async def _tenant(self, tenant: str) -> list[ConsolidationReport]:
        store = self._core.store
        held = await self._hold(tenant)
        if held is None:
            return []
        try:
            consolidation = AsyncConsolidation(self._core, tenant, ROOT)
            reports = await consolidation.resume()
            after = _cursor(held)
            newest: dict[str | None, datetime] = {}
            while True:
                page = await store.record_page(tenant, FACT, limit=PAGE, after=after)
                for record in page:
                    seen = newest.get(record.user_id)
                    if seen is None or record.created_at > seen:
                        newest[record.user_id] = record.created_at
                if page:
                    after = (page[-1].created_at, page[-1].id)
                if len(page) < PAGE:
                    break
            finished = True
            for user, latest in sorted(newest.items(), key=lambda item: str(item[0])):
                if self._closing:
                    finished = False
                    break
                runs = await store.record_list(tenant, RUN, user_id=user)
                last = max(
                    (r.created_at for r in runs if r.data.get("status") == "applied"),
                    default=None,
                )
                if last is not None and last >= latest:
                    continue  # nothing new since its last run
                until = leases.expiry(datetime.now(UTC), self._core.consolidate_lease)
                held = await leases.renew(store, SCHEDULE_TENANT, held, until=until)
                reports.append(await consolidation.run(user_id=user))
        except LeaseLost:
            return []
        except BaseException:
            await leases.release(store, SCHEDULE_TENANT, held, now=datetime.now(UTC))
            raise
        data: dict[str, Any] = dict(held.data)
        if finished and after is not None:
            data["cursor"] = [after[0].isoformat(), after[1]]
        data[leases.LEASE_FIELD] = {
            "owner": self._core.worker,
            "until": datetime.now(UTC).isoformat(),  # released
        }
        try:
            await put_changed(store, SCHEDULE_TENANT, held, data, datetime.now(UTC))
        except Conflict:  # taken over meanwhile: the other worker keeps its own cursor
            pass
        return reports
