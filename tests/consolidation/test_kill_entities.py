"""A kill -9 while a consolidation run merges graph entities leaves each merge whole, with
its undo record, or not made at all, on SQLite and PostgreSQL: a child consolidating a
user's entities (pairs that name one thing) is SIGKILLed once some merges are done; then
every merged entity has its change record and every other pair is intact, the next run
merges what is left, and undo of the killed run gives back exactly what it merged.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.consolidation._async.entities import ENTITY_CHANGE
from memorybank.stores import Store
from tests.consolidation.test_kill import CLOCK, LEASE
from tests.reliability._harness import ROOT, StoreSpec, _child_env, provide, store_params

#: Pairs of entities that name one thing ("Person7", "person7!").
PAIRS = 600


def _changes(store: Store, tenant: str, user: str) -> list[tuple[str, str, str]]:
    """(run id, merged entity, survivor) of every merge recorded so far."""
    records = store.record_list(tenant, ENTITY_CHANGE, user_id=user)
    return [(str(r.key), str(r.data["entity_id"]), str(r.data["into"])) for r in records]


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("spec", store_params(("sqlite-full", "postgres")), indirect=True)
def test_a_killed_entity_merge_is_whole_or_not_made(spec: StoreSpec, tmp_path: Path) -> None:
    tenant, user = "kill9-entities", "ents"
    store = spec.open()
    try:
        with Memory(store, clock=CLOCK, tenant_id=tenant) as memory:
            pairs = [
                (
                    memory.graph.add_entity(f"Person{n}", type="person", user_id=user).id,
                    memory.graph.add_entity(f"person{n}!", type="person", user_id=user).id,
                )
                for n in range(PAIRS)
            ]
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.consolidation._kill_child", spec.to_json(), tenant, user],
            cwd=ROOT,
            env=_child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == b"start\n", child.stderr
            deadline = time.monotonic() + 300
            while len(_changes(store, tenant, user)) < PAIRS // 5:
                assert child.poll() is None, "the child ended before its kill"
                assert time.monotonic() < deadline
                time.sleep(0.005)
            assert child.poll() is None, "the child ended before its kill"
            child.kill()
        finally:
            child.kill()
            child.wait()
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
        done = _changes(store, tenant, user)
        assert PAIRS // 5 <= len(done) < PAIRS  # killed in the middle of the merges
        [run_id] = {run for run, _, _ in done}
        merged = {gone for _, gone, _ in done}
        with Memory(store, clock=CLOCK, tenant_id=tenant, consolidate_lease=LEASE) as memory:
            g = memory.graph

            def live() -> set[str]:
                got = (g.get_entity(i, user_id=user) for pair in pairs for i in pair)
                return {e.id for e in got if e is not None}

            everything = {i for pair in pairs for i in pair}
            # each merge whole (the merged entity gone, its survivor kept) or not made
            assert live() == everything - merged
            for _, gone, kept in done:
                assert (kept, gone) in pairs
            # the next run merges the rest
            again = memory.consolidate(user_id=user)
            assert len(again.entity_changes) == PAIRS - len(done)
            assert live() == {kept for kept, _ in pairs}
            # undo of the killed run gives back exactly what it merged
            memory.consolidation.undo(run_id)
            assert live() == {kept for kept, _ in pairs} | merged
    finally:
        store.close()
