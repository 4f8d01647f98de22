"""A SQLite change feed of schema 11 (``data/feed_v11.db``, written by that library with
``data/make_feed_v11.py``: events keyed by ``(tenant_id, seq)``, two tenants, a pruned
start) opens with today's library, whose events are in a rowid table with a range per
tenant (schema 12), and reads back as it was: every tenant's events with the same
cursors, each user's (through the user index), the floor (``CursorExpired`` below it),
the keep time; the feed stays on and numbers on from each tenant's newest. Also from
schema 10 (a feed from before ``events_user``): both migrations in one open.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.errors import CursorExpired
from memorybank.events.types import Event
from memorybank.stores.contract.types import UNSET
from memorybank.stores.sql.events import sqlite_list_query

DATA = Path(__file__).parent / "data"
PREFIX = "memorybank_"


def _row(event: Event) -> list[object]:
    return [event.cursor, event.kind, event.user_id, event.thread_id, event.item_id]


def _legacy(tmp_path: Path, version: int) -> Path:
    path = tmp_path / "feed.db"
    shutil.copy(DATA / "feed_v11.db", path)
    if version == 10:
        with sqlite3.connect(path) as conn:
            conn.execute(f"DROP INDEX {PREFIX}events_user")
            conn.execute(f"DELETE FROM {PREFIX}schema_version WHERE version = 11")
    return path


def _user_plan(path: Path, tenant: str, user: str) -> str:
    with sqlite3.connect(path) as conn:
        base, mark = conn.execute(
            f"SELECT base, listed FROM {PREFIX}events_ranges WHERE tenant_id = ?", (tenant,)
        ).fetchone()
        sql, params = sqlite_list_query(
            PREFIX, tenant, base, 0, mark + 1, kinds=None, user_id=user, agent_id=UNSET,
            limit=100, listed=True,
        )  # fmt: skip
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    return " | ".join(str(row[-1]) for row in rows)


@pytest.mark.parametrize("version", [10, 11])
def test_a_feed_of_an_older_schema_reads_back_as_it_was(tmp_path: Path, version: int) -> None:
    path = _legacy(tmp_path, version)
    expected = json.loads((DATA / "feed_v11.json").read_text())
    for tenant, want in expected.items():
        with Memory(f"sqlite:///{path}", tenant_id=tenant) as memory:
            assert memory.events.keep() == timedelta(days=7)
            assert [_row(e) for e in memory.events.list(limit=1000)] == want["events"]
            for user, rows in want["users"].items():
                scoped = memory.scoped(user_id=user)
                assert [_row(e) for e in scoped.events.list(limit=1000)] == rows
                assert "events_user" in _user_plan(path, tenant, user)
            cursors = [row[0] for row in want["events"]]
            half = len(cursors) // 2
            later = memory.events.list(after=cursors[half], limit=1000)
            assert [_row(e) for e in later] == want["events"][half + 1 :]
            thread = memory.threads.create(user_id="ana")  # numbered on from the newest
            memory.remember(thread.id, "user", "after the upgrade")
            new = memory.events.list(after=cursors[-1], limit=10)
            assert [(e.cursor, e.kind) for e in new] == [
                (str(int(cursors[-1]) + 1), "thread.created"),
                (str(int(cursors[-1]) + 2), "entry.added"),
            ]
            ana = memory.scoped(user_id="ana").events.list(after=cursors[-1], limit=10)
            assert [e.cursor for e in ana] == [e.cursor for e in new]
    with Memory(f"sqlite:///{path}", tenant_id="acme") as memory:
        with pytest.raises(CursorExpired):
            memory.events.list(after="1")
        assert memory.events.list(after="2", limit=1)[0].cursor == "3"
