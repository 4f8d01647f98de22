"""``memory.working_runs()`` and ``memory.snapshots.list()``: what each handle may list."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank.errors import InvalidInput
from memorybank.memory._sync.memory import Memory


@pytest.fixture(params=["memory", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Memory:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'runs.db'}"
    return Memory(url)


def test_working_runs_follow_the_handles_scope(memory: Memory) -> None:
    with memory:
        memory.working("root-run").set("a", 1)
        memory.working("alice-run", user_id="alice", agent_id="bot").set("b", [2])
        memory.working("alice-free", user_id="alice").set("c", {"x": 3})
        memory.working("bob-run", user_id="bob").set("d", 4)
        memory.working("agent-only", agent_id="bot").set("e", 5)
        with memory.working("closed") as wm:
            wm.set("gone", True)
        emptied = memory.working("emptied", user_id="alice")
        emptied.set("k", 1)
        emptied.delete("k")
        memory.tenant("other").working("elsewhere").set("z", 0)

        runs = memory.working_runs()
        assert runs is not None
        named = {(r.run_id, r.user_id, r.agent_id) for r in runs}
        assert {
            ("root-run", None, None),
            ("alice-run", "alice", "bot"),
            ("alice-free", "alice", None),
            ("bob-run", "bob", None),
        } <= named
        assert len(runs) == 5  # and the agent-only run, by its digest
        hashed = [r for r in runs if r.run_id.startswith("~")]
        assert len(hashed) == 1 and hashed[0].items == {"e": 5}
        assert {r.run_id: r.items for r in runs}["alice-free"] == {"c": {"x": 3}}

        alice = memory.scoped(user_id="alice")
        mine = alice.working_runs()
        assert mine is not None
        assert sorted(r.run_id for r in mine) == ["alice-free", "alice-run"]
        assert memory.scoped(user_id="carol").working_runs() == []
        assert memory.scoped(user_id=None).working_runs() == []  # shared records only
        bot = memory.scoped(agent_id="bot").working_runs()
        assert bot is not None and [r.run_id for r in bot] == ["alice-run"]
        assert len(memory.working_runs(limit=2) or []) == 2
        assert memory.working_runs(limit=0) == []
        with pytest.raises(InvalidInput):
            memory.working_runs(limit=-1)


def test_snapshots_list_what_the_handle_may_load(memory: Memory) -> None:
    with memory:
        memory.snapshots.save("s-shared", {"n": 1})
        memory.snapshots.save("s-alice", [1, 2], user_id="alice")
        memory.snapshots.save("s-bob", "b", user_id="bob")
        memory.snapshots.save("s-gone", 0)
        memory.snapshots.delete("s-gone")
        memory.tenant("other").snapshots.save("s-other", 9)

        every = memory.snapshots.list()
        assert every is not None
        assert [(s.run_id, s.user_id, s.value) for s in every] == [
            ("s-alice", "alice", [1, 2]),
            ("s-bob", "bob", "b"),
            ("s-shared", None, {"n": 1}),
        ]
        alice = memory.scoped(user_id="alice").snapshots.list()
        assert alice is not None and [s.run_id for s in alice] == ["s-alice", "s-shared"]
        shared = memory.scoped(user_id=None).snapshots.list()
        assert shared is not None and [s.run_id for s in shared] == ["s-shared"]
        as_bob = memory.snapshots.list(user_id="bob")
        assert as_bob is not None and [s.run_id for s in as_bob] == ["s-bob", "s-shared"]
        assert [s.run_id for s in memory.snapshots.list(limit=1) or []] == ["s-alice"]
        with pytest.raises(InvalidInput):
            memory.snapshots.list(limit=True)
