"""SIGKILL at random moments: acknowledged writes survive, nothing is left half-done.

A child process writes and prints each write after the call returned; the
parent kills it (SIGKILL, no chance to clean up) at a random moment after its
first acknowledged write, ``5 x MEMORYBANK_RELIABILITY_SCALE`` times per store,
the next child carrying on with the same store. On reopening: every
acknowledged entry is there once, every batch is whole or absent, positions
strictly increase, a SQLite file passes ``PRAGMA integrity_check``; a thread
killed while being compacted or forked shows the state before or after the
step, never a mix. On Redis the shared server's persistence is not under test
(a kill of the client cannot lose what Redis holds), but the kill still tests
that a batch, a fork and a compaction are single atomic steps.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank import Entry, Memory
from tests.reliability._child import KEEP
from tests.reliability._harness import (
    SCALE,
    Child,
    StoreSpec,
    kill_at_random,
    provide,
    scaled,
    store_params,
)

pytestmark = pytest.mark.timeout(120 + 150 * SCALE)

KILLS = scaled(5)
#: Seconds, at most, between a child's first acknowledged write and its kill.
MAX_DELAY = 0.6
#: Messages per thread of the compaction child (its fork takes the first half).
SIZE = 40


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


@pytest.mark.parametrize("spec", store_params(), indirect=True)
def test_kill_during_appends(spec: StoreSpec, tmp_path: Path) -> None:
    rng = random.Random()
    with spec.memory() as memory:
        thread_id = memory.threads.create().id
    acked: dict[str, list[str]] = {}
    for kill in range(KILLS):
        child = Child("append", spec, thread_id, f"k{kill}", directory=tmp_path)
        kill_at_random(child, rng, max_delay=MAX_DELAY)
        for record in child.records():
            acked[record["batch"]] = record["ids"]
    with spec.memory() as memory:
        entries = memory.entries.list(thread_id)
    check_batches(entries, acked, kills=KILLS)
    if spec.kind == "sqlite":
        assert spec.integrity() == "ok"
    print(f"{spec.name}: {KILLS} kills, {sum(map(len, acked.values()))} acknowledged entries")


def check_batches(entries: list[Entry], acked: dict[str, list[str]], *, kills: int) -> None:
    """Nothing lost, nothing twice, batches whole and in one piece, order kept."""
    ids = [e.id for e in entries]
    assert len(set(ids)) == len(ids), "an entry is stored twice"
    positions = [e.position for e in entries]
    assert all(a < b for a, b in itertools.pairwise(positions)), positions
    stored = set(ids)
    lost = [i for batch in acked.values() for i in batch if i not in stored]
    assert not lost, f"{len(lost)} acknowledged entries lost"
    runs: list[list[Entry]] = []  # maximal runs of consecutive entries of one batch
    for entry in entries:
        if runs and runs[-1][0].metadata["batch"] == entry.metadata["batch"]:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    batches = [run[0].metadata["batch"] for run in runs]
    assert len(set(batches)) == len(batches), "a batch is split or stored twice"
    for run in runs:
        parts = [e.metadata["i"] for e in run]
        assert parts == list(range(run[0].metadata["n"])), f"batch {batches} is not whole"
    for batch, batch_ids in acked.items():
        assert [e.id for e in runs[batches.index(batch)]] == batch_ids
    # A batch stored but never acknowledged can only be the one in flight at a kill.
    assert len(set(batches) - set(acked)) <= kills


@pytest.mark.parametrize(
    "spec", store_params(("sqlite-full", "postgres", "mysql", "redis")), indirect=True
)
def test_kill_during_compaction_and_branching(spec: StoreSpec, tmp_path: Path) -> None:
    rng = random.Random()
    states: dict[str, int] = {}
    for kill in range(KILLS):
        tag = f"c{kill}"
        child = Child("compact", spec, tag, str(SIZE), directory=tmp_path)
        kill_at_random(child, rng, max_delay=MAX_DELAY)
        done: dict[str, dict[str, list[str] | None]] = {}
        for record in child.records():
            step, thread_id = next(iter(record.items()))
            done.setdefault(thread_id, {})[step] = record.get("ids")
        with spec.memory() as memory:
            # Every thread the child created, and the one it may have begun unseen.
            for number in range(len(done) + 1):
                thread_id = f"{tag}-{number}"
                state = check_thread(memory, thread_id, done.get(thread_id, {}))
                states[state] = states.get(state, 0) + 1
            assert memory.threads.get(f"{tag}-{len(done) + 1}") is None
    assert states.get("compacted", 0) >= 1, states
    print(f"{spec.name}: {KILLS} kills, thread states {states}")


def check_thread(memory: Memory, thread_id: str, done: dict[str, list[str] | None]) -> str:
    """The state of a thread of the compaction child; fails on a half-done step."""
    thread = memory.threads.get(thread_id)
    if thread is None:
        assert not done, f"{thread_id}: acknowledged {list(done)} but the thread is missing"
        return "absent"
    originals = [f"m{i}" for i in range(SIZE)]
    main = memory.entries.list(thread_id, branch="main")
    contents = [e.content for e in main]
    if "filled" in done:
        assert [e.id for e in main][-KEEP:] == (done["filled"] or [])[-KEEP:]
    branches = {b.name for b in memory.branches.list(thread_id)}
    if "fork" in branches:
        fork = memory.entries.list(thread_id, branch="fork")
        assert [e.content for e in fork] == originals[: SIZE // 2], f"{thread_id}: half a fork"
    else:
        assert "branched" not in done, f"{thread_id}: acknowledged fork missing"
    if not contents:
        assert "filled" not in done, f"{thread_id}: acknowledged batch missing"
        return "empty"
    if contents == originals:
        assert "compacted" not in done, f"{thread_id}: acknowledged compaction missing"
        return "forked" if "fork" in branches else "filled"
    summary = main[0]
    assert summary.role == "system" and summary.metadata.get("compaction_summary"), (
        f"{thread_id}: neither the old entries nor summary + kept: {contents}"
    )
    assert summary.metadata["compacted_entries"] == SIZE - KEEP
    assert contents[1:] == originals[-KEEP:], f"{thread_id}: half a compaction: {contents}"
    assert "fork" in branches
    return "compacted"
