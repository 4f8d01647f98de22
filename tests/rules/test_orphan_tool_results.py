"""An orphan tool result (``role: "tool"`` whose ``tool_call_id`` answers no tool call)
is refused with ``InvalidInput(field="tool_call_id")`` on every store and surface,
and nothing is written.

The rule (``memorybank.memory._async.entries.TOOL_CALL_LOOKBACK``): a tool result must
answer a call made earlier in the same write, or by one of the branch's newest
``TOOL_CALL_LOOKBACK`` entries (one bounded read, made only when the call is not in
the write). Over REST on every store: ``tests/server/test_orphans.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.errors import InvalidInput, ThreadForbidden
from memorybank.memory._async.entries import TOOL_CALL_LOOKBACK
from memorybank.stores.http._sync.store import HTTPStore
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from tests.all_stores import STORE_KINDS, open_store
from tests.stores.http_server import live_server

ORPHAN = "call_nobody_made"


def call(call_id: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "name": "forecast", "arguments": "{}"}],
    }


def result(call_id: str, content: str = '{"rain": 0}') -> dict[str, object]:
    return {"role": "tool", "content": content, "tool_call_id": call_id}


def check_refusals(memory: Memory) -> None:
    """The rule, on one memory: what is refused, what is accepted, nothing half-written."""
    thread = memory.threads.create(user_id="ana", agent_id="atlas")
    memory.remember(thread.id, "user", "What is the weather?")
    with pytest.raises(InvalidInput) as refused:
        memory.remember(thread.id, "tool", "{}", tool_call_id=ORPHAN, user_id="ana")
    assert refused.value.field == "tool_call_id" and ORPHAN in str(refused.value)
    assert memory.entries.count(thread.id) == 1

    # answered from the store (the call is an earlier write) or from the same write
    memory.entries.add(thread.id, call("c1"))
    memory.entries.add(thread.id, result("c1"))
    memory.entries.add_many(thread.id, [call("c2"), result("c2")])
    assert memory.entries.count(thread.id) == 5
    # a batch is refused whole: one orphan among good messages writes nothing
    with pytest.raises(InvalidInput) as batch:
        memory.entries.add_many(thread.id, [call("c3"), result("c3"), result(ORPHAN)])
    assert batch.value.field == "tool_call_id"
    # a result before its call in the same write is an orphan too
    with pytest.raises(InvalidInput):
        memory.entries.add_many(thread.id, [result("c4"), call("c4")])
    assert memory.entries.count(thread.id) == 5

    # the bound: the call among the branch's newest TOOL_CALL_LOOKBACK entries
    fillers = [{"role": "user", "content": f"note {i}"} for i in range(TOOL_CALL_LOOKBACK - 1)]
    near = memory.threads.create(agent_id="atlas")
    memory.entries.add_many(near.id, [call("far"), *fillers])
    memory.entries.add(near.id, result("far"))  # the call is the 256th newest entry
    beyond = memory.threads.create(agent_id="atlas")
    memory.entries.add_many(beyond.id, [call("far"), *fillers, {"role": "user", "content": "x"}])
    with pytest.raises(InvalidInput) as far:
        memory.entries.add(beyond.id, result("far"))
    assert far.value.field == "tool_call_id"

    # ownership before anything about the thread's calls
    with pytest.raises(ThreadForbidden):
        memory.remember(thread.id, "tool", "{}", tool_call_id="c1", user_id="mallory")

    # what is stored stays consistent everywhere: no orphan to hide or show
    assert [m["role"] for m in memory.history(thread.id)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert len(memory.entries.list(thread.id)) == memory.entries.count(thread.id)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_library_refuses_orphans_on_every_store(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store, Memory(store) as memory:
        check_refusals(memory)


def test_remote_store_refuses_orphans(tmp_path: Path) -> None:
    """``Memory`` over the remote store (the HTTP store of a live server): the same rule."""
    with live_server(lambda: AsyncSQLiteStore(tmp_path / "remote.db"), ["acme"]) as live:
        store = HTTPStore(live.url, api_key=live.keys["acme"])
        try:
            with Memory(store, tenant_id="acme") as memory:
                check_refusals(memory)
        finally:
            store.close()


def test_cli_show_and_context_agree(tmp_path: Path) -> None:
    """The CLI's views of a thread with a tool call: ``show`` and ``context`` list the
    same entries (nothing is left out of one and shown in the other)."""
    from typer.testing import CliRunner

    from memorybank.cli import app

    url = f"sqlite:///{tmp_path}/cli.db"
    with Memory(url) as memory:
        thread = memory.threads.create(agent_id="atlas")
        memory.entries.add_many(thread.id, [call("c1"), result("c1", "sunny")])
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    shown = CliRunner().invoke(app, ["show", thread.id, "--url", url], env=env)
    built = CliRunner().invoke(
        app, ["context", thread.id, "--agent", "atlas", "--url", url], env=env
    )
    assert shown.exit_code == 0 and built.exit_code == 0
    for out in (shown.stdout, built.stdout):
        assert "→ forecast({})" in out and "[c1] sunny" in out
    assert "2 of 2 entries" in built.stdout and "showing 2 of 2 entries" in shown.stdout
