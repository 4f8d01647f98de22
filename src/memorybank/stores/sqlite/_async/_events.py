"""The SQLite store's change feed: triggers in the file (``memorybank.stores.sql.events``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memorybank.errors import StoreError
from memorybank.events.types import USER_FORGOTTEN, Event, check_floor, cursor_number, no_feed
from memorybank.stores.contract.types import Unset
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.events import (
    SQLITE_LISTED,
    SQLITE_RANGE,
    event_of_row,
    sqlite_disable,
    sqlite_emit,
    sqlite_enable,
    sqlite_list_query,
    sqlite_list_users,
    sqlite_newest,
    sqlite_tables,
)
from memorybank.stores.sqlite._async._base import SQLiteStoreBase

__all__ = ["LIST_BATCH", "EventsMixin", "forget_events_begin", "forget_events_end", "list_users"]

#: Events a tenant may have above its mark before a user-scoped read marks them (in a
#: write transaction); up to that many, the read takes them from the tenant's events.
LIST_BATCH = 256


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


def list_users(conn: sqlite3.Connection, p: str, tenant: str) -> None:
    """Put the tenant's events of a user not in the user index yet into it (in a write
    transaction): ``sqlite_list_users``."""
    for statement in sqlite_list_users(p):
        conn.execute(statement, (tenant,))


def _range(conn: sqlite3.Connection, p: str, tenant: str) -> tuple[int, int] | None:
    """The tenant's range (its ``base``) and mark (its events of a user numbered up to it
    are in the user index); ``None``: it has no events."""
    row = conn.execute(
        f"SELECT base, listed FROM {p}events_ranges WHERE tenant_id = ?", (tenant,)
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def _unlisted(conn: sqlite3.Connection, p: str, tenant: str) -> bool:
    """Whether the tenant has events numbered more than ``LIST_BATCH`` above its mark
    (fewer are read from the tenant's events: a user-scoped read then writes nothing)."""
    found = _range(conn, p, tenant)
    if found is None:
        return False
    base, mark = found
    row = conn.execute(
        f"SELECT 1 FROM {p}events WHERE pos > ? AND pos < ? LIMIT 1",
        (base + mark + LIST_BATCH, base + SQLITE_RANGE),
    ).fetchone()
    return row is not None


def forget_events_end(conn: sqlite3.Connection, p: str, tenant: str, user_id: str) -> None:
    """After the deletes: one ``user.forgotten`` is recorded (also while the feed is off:
    it keeps the tenant's numbering from going back), then the user's other events go
    (all in the user index once it is caught up: read through it)."""
    conn.execute(f"DELETE FROM {p}events_mute WHERE tenant_id = ?", (tenant,))
    make_range, emit = sqlite_emit(p)
    conn.execute(make_range, (tenant,))
    conn.execute(emit, (tenant, USER_FORGOTTEN, user_id))
    list_users(conn, p, tenant)
    found = _range(conn, p, tenant)
    assert found is not None  # made above
    base = found[0]
    conn.execute(
        f"DELETE FROM {p}events WHERE user_id = ?{SQLITE_LISTED} AND pos > ? AND pos < ?"
        " AND kind != ?",
        (user_id, base, base + SQLITE_RANGE, USER_FORGOTTEN),
    )


class EventsMixin(SQLiteStoreBase):
    """``events_enable``, ``events_disable``, ``events_prune``, ``events_list``.

    ``events_keep`` is ``SQLCore``'s; ``events_list`` is SQLite's own, because its events
    are a range of rowids per tenant and its user index is filled lazily (docs/events.md)."""

    async def events_enable(self, *, keep: timedelta) -> None:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> None:
            for statement in sqlite_tables(p):
                conn.execute(statement)
            if not _is_on(conn, p):
                for statement in sqlite_enable(p):
                    conn.execute(statement)
            conn.execute(*self._keep_write(keep))

        await self._run(lambda: self._write(op))

    async def events_disable(self) -> None:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> None:
            for statement in sqlite_disable(p):
                conn.execute(statement)

        await self._run(lambda: self._write(op))

    async def events_list(
        self,
        tenant: str,
        *,
        after: str | None,
        kinds: Sequence[str] | None,
        user_id: str | Unset | None,
        agent_id: str | Unset | None,
        limit: int,
    ) -> list[Event]:
        p = self.prefix
        number = cursor_number(after)
        scoped = isinstance(user_id, str)
        if scoped:
            await self._list_users(tenant)

        def op(conn: sqlite3.Connection) -> list[Event]:
            if not _has_feed(conn, p):
                return no_feed(number)
            if after is not None:
                row = conn.execute(
                    f"SELECT COALESCE((SELECT floor FROM {p}events_tenants"
                    " WHERE tenant_id = ?), 0)",
                    (tenant,),
                ).fetchone()
                check_floor(after, number, row[0])
            found = _range(conn, p, tenant)
            if found is None:
                return []
            base, mark = found

            def read(start: int, stop: int, count: int, *, listed: bool = False) -> list[Event]:
                sql, params = sqlite_list_query(
                    p, tenant, base, start, stop, kinds=kinds, user_id=user_id,
                    agent_id=agent_id, limit=count, listed=listed,
                )  # fmt: skip
                return [event_of_row(r) for r in conn.execute(sql, params).fetchall()]

            if not scoped:
                return read(number, SQLITE_RANGE, limit)
            # The user's events up to the mark through the user index; any above it (a
            # write since, or a file this store cannot write) from the tenant's events.
            events = read(number, mark + 1, limit, listed=True) if number < mark else []
            if len(events) == limit:
                return events
            return events + read(max(number, mark), SQLITE_RANGE, limit - len(events))

        return await self._run_read(op)

    async def _list_users(self, tenant: str) -> None:
        """Bring the user index up to the tenant's newest event (``list_users``), when it
        is behind; on a file this store cannot write it stays behind (reads still see it
        all: ``events_list``)."""
        p = self.prefix

        def behind(conn: sqlite3.Connection) -> bool:
            return _has_feed(conn, p) and _unlisted(conn, p, tenant)

        if not await self._run_read(behind):
            return
        try:
            await self._run(lambda: self._write(lambda conn: list_users(conn, p, tenant)))
        except StoreError as error:
            if "read-only" not in str(error):
                raise

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> int:
            if not _has_feed(conn, p):
                return 0
            list_users(conn, p, tenant)  # a prune from cron keeps the user index current
            row = conn.execute(f"SELECT value FROM {p}events_config WHERE name = 'keep'").fetchone()
            found = _range(conn, p, tenant)
            if row is None or found is None:
                return 0
            base = found[0]
            cutoff = to_us(datetime.now(UTC) - timedelta(seconds=row[0]))
            last, newest = conn.execute(
                f"SELECT (SELECT MAX(pos) FROM (SELECT pos FROM {p}events WHERE pos > ?1"
                " AND pos < ?1 + ?2 AND at < ?3 ORDER BY pos LIMIT ?4)),"
                f" {sqlite_newest(p, '?1')}",
                (base, SQLITE_RANGE, cutoff, limit),
            ).fetchone()
            if last is None or newest is None:
                return 0
            last = min(last, newest - 1)  # the newest stays: numbers never come again
            if last <= base:
                return 0
            gone = conn.execute(
                f"DELETE FROM {p}events WHERE pos > ? AND pos <= ?", (base, last)
            ).rowcount
            conn.execute(
                f"INSERT INTO {p}events_tenants (tenant_id, floor) VALUES (?, ?)"
                " ON CONFLICT (tenant_id) DO UPDATE SET floor = MAX(floor, excluded.floor)",
                (tenant, last - base),
            )
            return gone

        return await self._run(lambda: self._write(op))
