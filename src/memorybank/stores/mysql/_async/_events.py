"""The MySQL/MariaDB store's change feed: triggers and a per-tenant counter row, as on
PostgreSQL (``memorybank.stores.sql.events``: why triggers, why the counter).

A number is drawn from the tenant's row of ``events_tenants`` in the writing
transaction; InnoDB keeps the row locked until that transaction ends, so the tenant's
next writer draws the next number only after the previous one committed (or rolled back,
leaving its number unused): the numbers are commit-ordered per tenant.

MySQL's DDL commits at once (no transaction holds a trigger's creation), so turning the
feed on or off runs under the server's named lock of the store's prefix (the one the
schema migrations take): floors raised first, then each trigger created. A statement
already running when a trigger is created finishes without it (``CREATE TRIGGER`` waits
for the table's metadata lock): the changes of the switch's moment belong to the time
the feed was off, whose cursors are expired anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from memorybank.events.types import USER_FORGOTTEN
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import Statement
from memorybank.stores.sql.events import (
    mysql_disable,
    mysql_emit,
    mysql_enable,
    mysql_tables,
)

__all__ = ["EventsMixin"]

#: Both lookups name the table: the server opens that table alone (by name only, it
#: opens every table of the schema, and warns of one another process is altering).
_FEED_STATE = (
    "SELECT EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"
    " AND TABLE_NAME = %s), EXISTS (SELECT 1 FROM information_schema.TRIGGERS"
    " WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = %s"
    " AND TRIGGER_NAME = %s)"
)


class EventsMixin(MySQLBase):
    """``events_enable``, ``events_disable``, ``events_prune``, and ``forget_user``'s
    feed steps (``_forget_write``); ``events_keep`` and ``events_list`` are ``SQLCore``'s."""

    def _feed_state_read(self) -> Statement:
        p = self.prefix
        return _FEED_STATE, (f"{p}events_mute", f"{p}entries", f"{p}events_entries_ins")

    async def _feed_switch(self, statements: Sequence[str], *, enable: bool) -> None:
        """Run DDL ``statements`` under the prefix's named lock (``enable``: the feed's
        tables made first, and the statements run only while its triggers are absent)."""
        async with self._connection() as conn, self._ddl_lock(conn, "feed switch"):
            if enable:
                collation = await self._exact_collation(conn)
                for statement in mysql_tables(self.prefix, collation):
                    await self._one(conn, statement)
            if not (enable and (await self._one(conn, *self._feed_state_read()))[0][0][1]):
                for statement in statements:
                    await self._one(conn, statement)

    async def events_enable(self, *, keep: timedelta) -> None:
        await self._feed_switch(mysql_enable(self.prefix), enable=True)
        await self._write_one(*self._keep_write(keep))

    async def events_disable(self) -> None:
        await self._feed_switch(mysql_disable(self.prefix), enable=False)

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        p = self.prefix
        tables, _ = await self._feed_state()
        if not tables:
            return 0
        # The server's clock, as the triggers' ``at``; the last doomed number kept in a
        # session variable between the statements of the one round trip.
        counts = await self._write_many(
            [
                (
                    "SELECT MAX(seq) INTO @memorybank_doomed FROM (SELECT seq"
                    f" FROM {p}events WHERE tenant_id = %s AND at < CAST(UNIX_TIMESTAMP(NOW(6))"
                    " * 1000000 AS SIGNED) - (SELECT value * 1000000"
                    f" FROM {p}events_config WHERE name = 'keep') ORDER BY seq LIMIT %s) d",
                    (tenant, limit),
                ),
                (
                    f"DELETE FROM {p}events WHERE tenant_id = %s AND seq <= @memorybank_doomed",
                    (tenant,),
                ),
                (
                    f"UPDATE {p}events_tenants SET floor = GREATEST(floor, @memorybank_doomed)"
                    " WHERE tenant_id = %s AND @memorybank_doomed IS NOT NULL",
                    (tenant,),
                ),
            ]
        )
        return counts[1]

    async def _forget_write(
        self, tenant: str, user_id: str, statements: Sequence[Statement]
    ) -> list[int]:
        """The erasure in one transaction with the feed's steps around it (when the
        database has a feed): the tenant's delete events muted first (a row no other
        transaction sees), then the user's events gone and one ``user.forgotten``
        recorded (while the feed is on)."""
        tables, on = await self._feed_state()
        if not tables:
            return await self._write_many(statements)
        p = self.prefix
        mute = f"{p}events_mute"
        draw, emit = mysql_emit(p)
        after: list[Statement] = [
            (f"DELETE FROM {mute} WHERE tenant_id = %s", (tenant,)),
            (f"DELETE FROM {p}events WHERE tenant_id = %s AND user_id = %s", (tenant, user_id)),
        ]
        if on:
            after += [(draw, (tenant,)), (emit, (tenant, USER_FORGOTTEN, user_id))]
        counts = await self._write_many(
            [
                (f"INSERT IGNORE INTO {mute} (tenant_id) VALUES (%s)", (tenant,)),
                *statements,
                *after,
            ]
        )
        return counts[1 : 1 + len(statements)]
