"""Erasure and scope on every store: ``forget_user`` takes a user's working memory too."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import Memory
from tests.all_stores import STORE_KINDS, open_store


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_forget_user_erases_her_working_memory(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, tenant_id="erase")
        alice = memory.scoped(user_id="alice", agent_id="atlas")
        alice.working("run-1").set("plan", {"steps": [1, 2]})
        memory.working("run-2", user_id="alice").set("k", "v")
        memory.scoped(user_id="bob", agent_id="atlas").working("run-1").set("plan", "bob's")
        memory.working("run-1").set("root", True)
        assert memory.forget_user("alice") > 0
        assert memory.scoped(user_id="alice", agent_id="atlas").working("run-1").get("plan") is None
        assert memory.working("run-2", user_id="alice").get("k") is None
        assert memory.scoped(user_id="bob", agent_id="atlas").working("run-1").get("plan") == (
            "bob's"
        )
        assert memory.working("run-1").get("root") is True
        assert len(store.working_runs("erase") or []) == 2
        assert store.record_list("erase", "working_owner", user_id="alice") == []
