"""Processes racing on one thread: nothing lost, nothing twice, one entry per key.

Four processes start together (they wait for a file the parent creates once
all are ready) on every persistent store: ``60 x MEMORYBANK_RELIABILITY_SCALE``
appends each to one thread, and a race of the same idempotency keys with the
same payloads, single and batched.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability._harness import SCALE, Child, StoreSpec, provide, scaled, store_params

pytestmark = pytest.mark.timeout(120 + 120 * SCALE)

PROCESSES = 4
APPENDS = scaled(60)
KEYS = scaled(15)
PERSISTENT = ("sqlite-full", "postgres", "mysql", "redis", "redis-cluster")


@pytest.fixture(params=store_params(PERSISTENT))
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


def race(spec: StoreSpec, tmp_path: Path, mode: str, *args: list[str]) -> list[Child]:
    """Start one child per argument list, release them at once, wait for them all."""
    go = tmp_path / f"go-{mode}"
    children: list[Child] = []
    try:
        children += [Child(mode, spec, *a, str(go), directory=tmp_path) for a in args]
        for child in children:
            child.wait_for(0)
        go.touch()
        for child in children:
            child.wait()
    finally:
        for child in children:
            child.stop()  # none left waiting for the start line after a failure
    return children


def test_processes_append_to_one_thread(spec: StoreSpec, tmp_path: Path) -> None:
    with spec.memory() as memory:
        thread_id = memory.threads.create().id
    args = [[thread_id, f"w{w}", str(APPENDS)] for w in range(PROCESSES)]
    children = race(spec, tmp_path, "append_each", *args)
    with spec.memory() as memory:
        entries = memory.entries.list(thread_id)
    ids = [e.id for e in entries]
    assert len(entries) == PROCESSES * APPENDS
    assert len(set(ids)) == len(ids)
    positions = [e.position for e in entries]
    assert all(a < b for a, b in itertools.pairwise(positions))
    for w, child in enumerate(children):
        acked = [r["id"] for r in child.records()]
        assert len(acked) == APPENDS
        mine = [e for e in entries if (e.content or "").startswith(f"w{w} ")]
        assert [e.id for e in mine] == acked  # each process's entries in its own order
        assert [e.content for e in mine] == [f"w{w} {i}" for i in range(APPENDS)]


def test_idempotency_key_race(spec: StoreSpec, tmp_path: Path) -> None:
    with spec.memory() as memory:
        thread_id = memory.threads.create().id
    children = race(
        spec, tmp_path, "idempotent", *([thread_id, str(KEYS)] for _ in range(PROCESSES))
    )
    with spec.memory() as memory:
        entries = memory.entries.list(thread_id)
    contents = Counter(e.content for e in entries)
    expected = {f"payload {j}" for j in range(KEYS)}
    expected |= {f"batch {j} part {i}" for j in range(KEYS) for i in range(2)}
    assert set(contents) == expected
    assert [c for c, n in contents.items() if n > 1] == []  # each key stored once
    stored = {e.id for e in entries}
    answers = [child.records() for child in children]
    for j in range(KEYS):
        singles = {r["id"] for records in answers for r in records if r.get("key") == j}
        batches = {tuple(r["ids"]) for records in answers for r in records if r.get("batch") == j}
        assert len(singles) == 1 and singles <= stored, f"key-{j}: {singles}"
        assert len(batches) == 1 and set(next(iter(batches))) <= stored, f"batch-{j}: {batches}"
