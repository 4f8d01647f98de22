"""Retention: memory.prune(policy) and `memorybank prune`, on every store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memorybank import AsyncMemory, Memory
from memorybank.cli import app
from memorybank.errors import InvalidInput
from memorybank.retention import RetentionPolicy
from tests.all_stores import STORE_KINDS, open_store

START = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """A settable clock."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def call(call_ids: list[str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for c in call_ids
        ],
    }


def conversation(memory: Memory, clock: Clock) -> str:
    """u0, a(c1,c2), t(c1), t(c2), a1, u1, a2: one entry a day from START."""
    thread = memory.threads.create().id
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "u0"},
        call(["c1", "c2"]),
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a2"},
    ]
    for day, message in enumerate(messages):
        clock.now = START + timedelta(days=day)
        memory.entries.add(thread, message)
    return thread


def contents(memory: Memory, thread: str) -> list[str | None]:
    return [e.content for e in memory.entries.list(thread)]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_prune_on_every_store(kind: str, tmp_path: Path) -> None:
    """max entries, max age and idle TTL; pairing kept; dry run changes nothing."""
    with open_store(kind, tmp_path) as store:
        clock = Clock()
        memory = Memory(store, clock=clock, tenant_id="ret")
        thread = conversation(memory, clock)
        idle = memory.threads.create().id  # updated at START + 6 days, like `thread`
        clock.now = START + timedelta(days=6)
        memory.entries.add(thread, {"role": "user", "content": "u2"})  # thread stays fresh
        # keeping 5 would cut the call and keep r1, r2: they go with it (4 kept)
        policy = RetentionPolicy(max_entries_per_thread=5)
        dry = memory.prune(policy, dry_run=True)
        assert (dry.dry_run, dry.entries_deleted, dry.threads_deleted) == (True, 4, 0)
        assert len(contents(memory, thread)) == 8
        report = memory.prune(policy)
        assert report.entries_deleted == 4 and report.per_thread == {thread: 4}
        assert contents(memory, thread) == ["a1", "u1", "a2", "u2"]
        # max age at day 10: entries created before day 5.5 go (a1 day 4, u1 day 5)
        clock.now = START + timedelta(days=10)
        aged = memory.prune(RetentionPolicy(max_age=timedelta(days=4, hours=12)))
        assert aged.entries_deleted == 2
        assert contents(memory, thread) == ["a2", "u2"]
        # idle TTL: both threads were last updated on day 6; the idle one is older
        memory.threads.update(thread, title="touched")  # updated on day 10
        gone = memory.prune(RetentionPolicy(idle_ttl=timedelta(days=2)))
        assert gone.threads_deleted == 1
        assert memory.threads.get(idle) is None and memory.threads.get(thread) is not None
        # another tenant is untouched by this tenant's policy
        assert (
            memory.tenant("other").prune(RetentionPolicy(max_entries_per_thread=0)).threads_examined
            == 0
        )


def test_prune_is_per_branch_and_async() -> None:
    async def run() -> None:
        clock = Clock()
        async with AsyncMemory("memory://", clock=clock) as memory:
            thread = (await memory.threads.create()).id
            for i in range(4):
                await memory.entries.add(thread, {"role": "user", "content": f"m{i}"})
            await memory.branches.create(thread, "alt")
            await memory.entries.add(thread, {"role": "user", "content": "x"}, branch="alt")
            report = await memory.prune(RetentionPolicy(max_entries_per_thread=2))
            assert report.entries_deleted == 2 + 3
            main = await memory.entries.list(thread)
            alt = await memory.entries.list(thread, branch="alt")
            assert [e.content for e in main] == ["m2", "m3"]
            assert [e.content for e in alt] == ["m3", "x"]

    asyncio.run(run())


def test_bad_policies_and_scoped_handles() -> None:
    with pytest.raises(InvalidInput) as age:
        RetentionPolicy(max_age=timedelta(0))
    assert age.value.field == "max_age"
    with pytest.raises(InvalidInput) as count:
        RetentionPolicy(max_entries_per_thread=-1)
    assert count.value.field == "max_entries_per_thread"
    with Memory("memory://") as memory:
        with pytest.raises(InvalidInput) as scoped:
            memory.scoped(user_id="u").prune(RetentionPolicy(max_entries_per_thread=1))
        assert scoped.value.field == "scope"
        with pytest.raises(InvalidInput):
            memory.prune({"max_entries_per_thread": 1})  # type: ignore[arg-type]


def test_sqlite_file_shrinks(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    with Memory(f"sqlite:///{path}") as memory:
        thread = memory.threads.create().id
        memory.entries.add_many(
            thread, [{"role": "user", "content": f"{i} " + "x" * 4000} for i in range(400)]
        )
        memory.store.reclaim_space()
        before = path.stat().st_size
        memory.prune(RetentionPolicy(max_entries_per_thread=10))
        after = path.stat().st_size
        assert len(memory.entries.list(thread, limit=None)) == 10
    assert after < before / 4, (before, after)


def test_cli_prune(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with Memory(url) as memory:
        thread = memory.threads.create().id
        for i in range(5):
            memory.entries.add(thread, {"role": "user", "content": f"m{i}"})
    runner = CliRunner()
    dry = runner.invoke(app, ["prune", "--max-entries", "2", "--dry-run", "--url", url])
    assert dry.exit_code == 0, dry.output
    assert "would delete 0 threads and 3 entries" in dry.stdout
    done = runner.invoke(app, ["prune", "--max-entries", "2", "--max-age", "3650d", "--url", url])
    assert done.exit_code == 0 and "deleted 0 threads and 3 entries" in done.stdout
    with Memory(url) as memory:
        assert [e.content for e in memory.entries.list(thread)] == ["m3", "m4"]
    bad = runner.invoke(app, ["prune", "--max-age", "ten days", "--url", url])
    assert bad.exit_code == 1 and "max_age" in bad.stderr
    nothing = runner.invoke(app, ["prune", "--url", url])
    assert nothing.exit_code == 1 and "--max-age" in nothing.stderr
    missing = tmp_path / "nope.db"
    assert (
        runner.invoke(
            app, ["prune", "--max-entries", "1", "--url", f"sqlite:///{missing}"]
        ).exit_code
        == 1
    )
    assert not missing.exists()
