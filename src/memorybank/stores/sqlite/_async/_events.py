"""The SQLite store's change feed: triggers in the file (``memorybank.stores.sql.events``)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

from memorybank.events.types import USER_FORGOTTEN
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.events import (
    sqlite_disable,
    sqlite_emit,
    sqlite_enable,
    sqlite_tables,
)
from memorybank.stores.sqlite._async._base import SQLiteStoreBase

__all__ = ["EventsMixin", "forget_events_begin", "forget_events_end"]


def _has_feed(conn: sqlite3.Connection, p: str) -> bool:
    """Whether the feed's tables exist (it was on once)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (f"{p}events_mute",)
    ).fetchone()
    return row is not None


def _is_on(conn: sqlite3.Connection, p: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?",
        (f"{p}events_entries_ins",),
    ).fetchone()
    return row is not None


def forget_events_begin(conn: sqlite3.Connection, p: str, tenant: str) -> bool:
    """In ``forget_user``'s transaction, before its deletes: mute the tenant's delete
    events. Whether the database has a feed."""
    if not _has_feed(conn, p):
        return False
    conn.execute(f"INSERT OR IGNORE INTO {p}events_mute (tenant_id) VALUES (?)", (tenant,))
    return True


def forget_events_end(conn: sqlite3.Connection, p: str, tenant: str, user_id: str) -> None:
    """After the deletes: one ``user.forgotten`` is recorded (also while the feed is off:
    it keeps the tenant's numbering from going back), then the user's other events go."""
    conn.execute(f"DELETE FROM {p}events_mute WHERE tenant_id = ?", (tenant,))
    conn.execute(sqlite_emit(p), (tenant, USER_FORGOTTEN, user_id))
    conn.execute(
        f"DELETE FROM {p}events WHERE tenant_id = ? AND user_id = ? AND kind != ?",
        (tenant, user_id, USER_FORGOTTEN),
    )


class EventsMixin(SQLiteStoreBase):
    """``events_enable``, ``events_disable``, ``events_prune`` (``events_keep`` and
    ``events_list`` are ``SQLCore``'s)."""

    async def events_enable(self, *, keep: timedelta) -> None:
        p = self.prefix
        seconds = max(1, int(keep.total_seconds()))

        def op(conn: sqlite3.Connection) -> None:
            for statement in sqlite_tables(p):
                conn.execute(statement)
            if not _is_on(conn, p):
                for statement in sqlite_enable(p):
                    conn.execute(statement)
            conn.execute(
                f"INSERT INTO {p}events_config (name, value) VALUES ('keep', ?)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (seconds,),
            )

        await self._run(lambda: self._write(op))

    async def events_disable(self) -> None:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> None:
            for statement in sqlite_disable(p):
                conn.execute(statement)

        await self._run(lambda: self._write(op))

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> int:
            if not _has_feed(conn, p):
                return 0
            row = conn.execute(f"SELECT value FROM {p}events_config WHERE name = 'keep'").fetchone()
            if row is None:
                return 0
            cutoff = to_us(datetime.now(UTC) - timedelta(seconds=row[0]))
            last, newest = conn.execute(
                f"SELECT (SELECT MAX(seq) FROM (SELECT seq FROM {p}events WHERE tenant_id = ?1"
                " AND at < ?2 ORDER BY seq LIMIT ?3)),"
                f" (SELECT MAX(seq) FROM {p}events WHERE tenant_id = ?1)",
                (tenant, cutoff, limit),
            ).fetchone()
            if last is None or newest is None:
                return 0
            last = min(last, newest - 1)  # the newest stays: numbers never come again
            if last < 1:
                return 0
            gone = conn.execute(
                f"DELETE FROM {p}events WHERE tenant_id = ? AND seq <= ?", (tenant, last)
            ).rowcount
            conn.execute(
                f"INSERT INTO {p}events_tenants (tenant_id, floor) VALUES (?, ?)"
                " ON CONFLICT (tenant_id) DO UPDATE SET floor = MAX(floor, excluded.floor)",
                (tenant, last),
            )
            return gone

        return await self._run(lambda: self._write(op))
