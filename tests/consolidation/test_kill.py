"""A kill -9 during a consolidation run leaves the run applied or nothing, on SQLite and
PostgreSQL: a child process consolidating a user's 3,000 facts is SIGKILLed at several
points (planning, right after its journal, in the middle, near the end); then a new memory
completes what the run left (``memory.consolidation.resume()``, once the dead child's
lease ran out) and every API view over the user's facts equals either the state before
(nothing was applied) or the state the dry run's report predicts, exactly; ``undo`` then
gives back the state before (checked once, after the kill in the middle).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory
from memorybank.consolidation._async.consolidation import PLAN, RUN
from memorybank.consolidation.report import ConsolidationReport
from memorybank.core._async.facts import fact_links, fact_record
from memorybank.records import Fact
from memorybank.stores import Store
from tests.reliability._harness import ROOT, StoreSpec, _child_env, provide, store_params

#: The one time of every write (so the views of two processes compare exactly).
T0 = datetime(2026, 5, 1, tzinfo=UTC)
#: The child's lease on its run (seconds): the parent resumes once it ran out.
LEASE = 0.5
#: Facts of the consolidated user.
FACTS = 3000
PHRASINGS = (
    "User{n} likes green tea number {n}",
    "The user{n} likes green tea number {n}.",
    "user{n} likes green tea number {n}!",
)


def CLOCK() -> datetime:
    return T0


def fill(store: Store, tenant: str, user: str) -> list[str]:
    """``FACTS`` facts of ``user``: phrasings of one fact and contradicting values."""
    facts: list[Fact] = []
    n = 0
    while len(facts) < FACTS:
        texts = [p.format(n=n) for p in PHRASINGS[: 1 + n % 3]]
        if n % 5 == 0:
            texts += [f"Person{n} lives in Paris", f"Person{n} lives in Rome"]
        for k, text in enumerate(texts):
            facts.append(
                Fact(
                    id=f"{user}-{n:05d}{k}",
                    agent_id=None,
                    user_id=user,
                    content=text,
                    category=None,
                    confidence=None,
                    source=None,
                    metadata={},
                    source_entries=(f"e{n}-{k}",),
                    created_at=T0,
                    updated_at=T0,
                )
            )
        n += 1
    facts = facts[:FACTS]
    for start in range(0, len(facts), 500):
        part = facts[start : start + 500]
        links = [r for f in part for r in fact_links(f, f.source_entries)]
        store.record_put(tenant, [*(fact_record(f, 1) for f in part), *links])
    return [f.id for f in facts]


def views(memory: Memory, user: str, ids: list[str]) -> dict[str, Any]:
    """What the API shows of every fact (run ids and times left out: the same)."""
    listed = memory.facts.list(user_id=user)
    shown: dict[str, Any] = {}
    for fact_id in ids:
        got = memory.facts.get(fact_id, user_id=user)
        history = memory.facts.history(fact_id, user_id=user)
        shown[fact_id] = (
            None
            if got is None
            else (
                got.content,
                got.version,
                got.source_entries,
                got.metadata.get("merged_from", []),
                got.metadata.get("supersedes", []),
            ),
            [(h.version, h.content, h.metadata.get("superseded_by")) for h in history],
        )
    return {
        "list": sorted(f.id for f in listed),
        "facts": shown,
        "search": sorted(f.id for f in memory.facts.search("person10 lives", user_id=user)),
    }


def predicted(before: dict[str, Any], dry: ConsolidationReport) -> dict[str, Any]:
    """The views after the changes of ``dry`` (a dry run's report), from those before."""
    facts: dict[str, list[Any]] = {
        i: [list(value) if value is not None else None, list(history)]
        for i, (value, history) in before["facts"].items()
    }
    for change in dry.changes:
        value, history = facts[change.into]
        lost, lost_history = facts[change.fact_id]
        content, version, entries, merged, supersedes = value
        if change.reason == "duplicate":
            entries = (*entries, *(e for e in lost[2] if e not in entries))
            merged = [*merged, change.fact_id]
        else:
            supersedes = [*supersedes, change.fact_id]
        value[:] = [content, version + 1, entries, merged, supersedes]
        history.append((version + 1, content, None))
        last = lost_history[-1]
        lost_history[-1] = (last[0], last[1], change.into)
        facts[change.fact_id][0] = None
    out = {i: (None if v is None else tuple(v), h) for i, (v, h) in facts.items()}
    live = sorted(i for i, (v, _) in out.items() if v is not None)
    return {"list": live, "facts": out}


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


def _progress(store: Store, tenant: str, user: str) -> int:
    """Chunks the run applied so far (-1: no run record yet)."""
    runs = store.record_list(tenant, RUN, user_id=user)
    return -1 if not runs else int(runs[0].data.get("done", 10**6))


def _status(store: Store, tenant: str, user: str) -> str | None:
    runs = store.record_list(tenant, RUN, user_id=user)
    return None if not runs else str(runs[0].data["status"])


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spec", store_params(("sqlite-full", "postgres")), indirect=True)
def test_a_killed_run_is_applied_whole_or_not_at_all(spec: StoreSpec, tmp_path: Path) -> None:
    tenant = "kill9"
    store = spec.open()
    try:
        # kill points: while planning, right after the journal, in the middle, near the end
        for user, kill_at in (("planning", None), ("journal", 0), ("middle", 30), ("end", 55)):
            ids = fill(store, tenant, user)
            with Memory(store, clock=CLOCK, tenant_id=tenant) as memory:
                before = views(memory, user, ids)
                dry = memory.consolidate(user_id=user, dry_run=True)
            assert len(dry.changes) > 60 * 25 // 2  # dozens of chunks
            after = predicted(before, dry)
            assert after["list"] != before["list"]
            argv = [spec.to_json(), tenant, user]
            child = subprocess.Popen(
                [sys.executable, "-m", "tests.consolidation._kill_child", *argv],
                cwd=ROOT,
                env=_child_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            try:
                assert child.stdout is not None
                assert child.stdout.readline() == b"start\n", child.stderr
                deadline = time.monotonic() + 120
                while kill_at is not None and _progress(store, tenant, user) < kill_at:
                    assert child.poll() is None, "the child ended before its kill"
                    assert time.monotonic() < deadline
                    time.sleep(0.005)
                child.kill()
            finally:
                child.kill()
                child.wait()
                for pipe in (child.stdout, child.stderr):
                    if pipe is not None:
                        pipe.close()
            progress = _progress(store, tenant, user)
            if kill_at is not None:
                assert progress >= kill_at  # killed while applying, as meant
            with Memory(store, clock=CLOCK, tenant_id=tenant, consolidate_lease=LEASE) as memory:
                deadline = time.monotonic() + 60
                while _status(store, tenant, user) == "applying":
                    if memory.consolidation.resume():
                        break
                    assert time.monotonic() < deadline, "the run was never resumed"
                    time.sleep(0.1)  # the dead child's lease runs out
                now = views(memory, user, ids)
                runs = [r for r in memory.consolidation.runs() if r.user_id == user]
                assert store.record_list(tenant, PLAN, user_id=user) == []  # no journal left
                if progress < 0:  # killed before its run record: nothing was applied
                    assert now == before and runs == []
                    continue
                assert {k: now[k] for k in ("list", "facts")} == after
                [run] = runs
                assert run.status == "applied" and run.skipped == []
                report = memory.consolidation.report(run.run_id)
                assert report.changes == dry.changes
                if user == "middle":  # (once: every view of 3,000 facts is slow on a server)
                    memory.consolidation.undo(run.run_id)
                    assert views(memory, user, ids) == before
    finally:
        store.close()
