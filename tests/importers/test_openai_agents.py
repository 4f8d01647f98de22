"""``import-from openai-agents``: SQLiteSession and SQLAlchemySession databases, written by
the Agents SDK itself, into SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from agents import SQLiteSession
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

from memorybank import AsyncMemory, Memory
from memorybank.importers import apply, openai_agents
from memorybank.importers.plan import as_utc
from memorybank.integrations.openai_agents import MemorybankSession
from tests.importers.conftest import run

CHAT: list[Any] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call-1",
        "name": "weather",
        "arguments": '{"city": "Paris"}',
        "id": "fc-1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call-1", "output": "18C, cloudy"},
    {
        "type": "message",
        "id": "msg-1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "18C and cloudy.", "annotations": []}],
    },
]
OTHER: list[Any] = [
    {"role": "user", "content": "Remember: I take the train."},
    {"role": "assistant", "content": "Noted, you take the train."},
]


async def _write(session: Any) -> None:
    await session.add_items(CHAT[:1])
    await session.add_items(CHAT[1:])


def _sqlite_source(path: Path) -> None:
    async def write() -> None:
        first, second = SQLiteSession("trip", str(path)), SQLiteSession("notes", str(path))
        await _write(first)
        await second.add_items(OTHER)
        first.close()
        second.close()

    asyncio.run(write())


async def _items(url: str, session_id: str, user: str) -> list[Any]:
    memory = AsyncMemory(url)
    try:
        return await MemorybankSession(session_id, memory, user_id=user).get_items()
    finally:
        await memory.close()


def test_sqlite_session_arrives_exactly_and_once(tmp_path: Path, target: str) -> None:
    source = tmp_path / "sessions.db"
    _sqlite_source(source)
    first = run(
        "import-from",
        "openai-agents",
        "--source",
        str(source),
        "--url",
        target,
        "--user",
        "alice",
        "--agent",
        "travel",
    )
    assert first.exit_code == 0, first.output
    assert "added 8 new items (entry: 6, thread: 2)" in first.output
    again = run(
        "import-from", "openai-agents", "--source", str(source), "--url", target, "--user", "alice"
    )
    assert again.exit_code == 0, again.output
    assert "added 0 new items" in again.output

    with sqlite3.connect(source) as conn:
        rows = conn.execute(
            "SELECT id, session_id, message_data, created_at FROM agent_messages ORDER BY id"
        ).fetchall()
        sessions = dict(conn.execute("SELECT session_id, created_at FROM agent_sessions"))
    assert asyncio.run(_items(target, "trip", "alice")) == CHAT
    assert asyncio.run(_items(target, "notes", "alice")) == OTHER
    with Memory(target) as memory:
        for session_id, created in sessions.items():
            thread = memory.threads.get(session_id, user_id="alice")
            assert thread is not None
            assert (thread.user_id, thread.agent_id) == ("alice", "travel")
            assert thread.metadata["source"] == {"system": "openai-agents", "id": session_id}
            assert thread.created_at == as_utc(created, thread.created_at)
            entries = memory.entries.list(session_id, user_id="alice")
            mine = [r for r in rows if r[1] == session_id]
            assert [e.metadata["source"]["id"] for e in entries] == [str(r[0]) for r in mine]
            assert [e.created_at for e in entries] == [
                as_utc(r[3], thread.created_at) for r in mine
            ]
        assert [e.role for e in memory.entries.list("trip", user_id="alice")] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]


def test_sqlalchemy_session_on_postgresql(pg_schema: str, target: str) -> None:
    url = pg_schema.replace("postgresql://", "postgresql+psycopg://", 1)

    async def write() -> None:
        session = SQLAlchemySession.from_url("pg-trip", url=url, create_tables=True)
        await _write(session)
        await session.engine.dispose()

    asyncio.run(write())
    plan = openai_agents.read(url, user_id="bob")
    with Memory(target) as memory:
        dry = apply(memory, plan, dry_run=True)
        assert (dry.found, dry.new) == ({"thread": 1, "entry": 4}, {"thread": 1, "entry": 4})
        assert memory.threads.list(user_id="bob") == []  # a dry run writes nothing
        assert apply(memory, plan).total_new == 5
        assert apply(memory, openai_agents.read(url, user_id="bob")).new == {}
        assert [e.to_message() for e in memory.entries.list("pg-trip", user_id="bob")] == CHAT


def test_a_missing_database_is_an_error_and_writes_nothing(tmp_path: Path, target: str) -> None:
    result = run(
        "import-from", "openai-agents", "--source", str(tmp_path / "nope.db"), "--url", target
    )
    assert result.exit_code == 1
    assert "no SQLiteSession database" in result.output


def test_a_session_that_grew_adds_only_its_new_items(tmp_path: Path, target: str) -> None:
    source = tmp_path / "sessions.db"
    _sqlite_source(source)
    args = (
        "import-from",
        "openai-agents",
        "--source",
        str(source),
        "--url",
        target,
        "--user",
        "alice",
    )
    assert run(*args).exit_code == 0
    later: Any = {"role": "user", "content": "And tomorrow?"}

    async def grow() -> None:
        session = SQLiteSession("trip", str(source))
        await session.add_items([later])
        session.close()

    asyncio.run(grow())
    result = run(*args)
    assert "added 1 new items (entry: 1)" in result.output, result.output
    assert asyncio.run(_items(target, "trip", "alice")) == [*CHAT, later]
    assert "added 0 new items" in run(*args).output


def test_a_dry_run_checks_what_it_would_write(tmp_path: Path, target: str) -> None:
    source = tmp_path / "sessions.db"

    async def write() -> None:
        session = SQLiteSession("bad", str(source))
        wrong: Any = {"role": "wizard", "content": "abracadabra"}  # a role no one has
        await session.add_items([wrong])
        session.close()

    asyncio.run(write())
    args = ("import-from", "openai-agents", "--source", str(source), "--url", target)
    for extra in ("--dry-run", "--user=alice"):
        result = run(*args, extra)
        assert result.exit_code == 1, result.output
        assert "error [invalid_input]" in result.output
    with Memory(target) as memory:
        assert memory.threads.list() == []
