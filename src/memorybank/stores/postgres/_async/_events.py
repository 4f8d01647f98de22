"""The PostgreSQL store's change feed: triggers and a per-tenant counter row
(``memorybank.stores.sql.events``: why the counter, not a sequence); ``forget_user``'s
steps around the erasure are ``SQLCore._forget_program``'s."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg.errors import UndefinedTable

from memorybank.events.types import USER_FORGOTTEN
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.sql._async.core import Statement
from memorybank.stores.sql.events import (
    postgres_disable,
    postgres_emit,
    postgres_enable,
    postgres_tables,
)

__all__ = ["EventsMixin"]

_FEED_STATE = (
    "SELECT to_regclass(%s) IS NOT NULL,"
    " EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = %s AND NOT tgisinternal)"
)


class EventsMixin(PostgresBase):
    """``events_enable``, ``events_disable``, ``events_prune`` (``events_keep``,
    ``events_list`` and ``forget_user``'s feed steps are ``SQLCore``'s)."""

    def _feed_state_read(self) -> Statement:
        p = self.prefix
        return _FEED_STATE, (f"{p}events_mute", f"{p}events_entries_ins")

    def _missing_table(self, error: BaseException) -> bool:
        return isinstance(error, UndefinedTable) or isinstance(error.__cause__, UndefinedTable)

    async def _feed_state(self, conn: AsyncConnection[Any] | None = None) -> tuple[bool, bool]:
        """(the feed's tables exist, its triggers are on)."""
        sql, params = self._feed_state_read()
        if conn is None:
            rows = await self._fetch(sql, params, retry=True)
        else:
            rows = await self._rows(conn, sql, params)
        return bool(rows[0][0]), bool(rows[0][1])

    async def events_enable(self, *, keep: timedelta) -> None:
        p = self.prefix
        seconds = max(1, int(keep.total_seconds()))
        async with self._transaction() as conn:
            await self._rows(
                conn, "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memorybank:{p}",)
            )
            for statement in postgres_tables(p):
                await self._rows(conn, statement, None)
            _, on = await self._feed_state(conn)
            if not on:
                for statement in postgres_enable(p):
                    await self._rows(conn, statement, None)
            await self._rows(
                conn,
                f"INSERT INTO {p}events_config (name, value) VALUES ('keep', %s)"
                " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (seconds,),
            )

    async def events_disable(self) -> None:
        p = self.prefix
        async with self._transaction() as conn:
            await self._rows(
                conn, "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memorybank:{p}",)
            )
            for statement in postgres_disable(p):
                await self._rows(conn, statement, None)

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        p = self.prefix
        tables, _ = await self._feed_state()
        if not tables:
            return 0
        rows = await self._fetch(
            f"""WITH keep AS (SELECT value FROM {p}events_config WHERE name = 'keep'),
                doomed AS (SELECT seq FROM {p}events, keep WHERE tenant_id = %(t)s
                           AND at < now() - make_interval(secs => keep.value)
                           ORDER BY seq LIMIT %(n)s),
                last AS (SELECT max(seq) AS seq FROM doomed),
                gone AS (DELETE FROM {p}events e USING last
                         WHERE e.tenant_id = %(t)s AND e.seq <= last.seq RETURNING 1),
                raised AS (UPDATE {p}events_tenants c SET floor = GREATEST(c.floor, last.seq)
                           FROM last WHERE c.tenant_id = %(t)s AND last.seq IS NOT NULL)
            SELECT count(*) FROM gone""",
            {"t": tenant, "n": limit},
        )
        return int(rows[0][0])

    def _forgotten(self, tenant: str, user_id: str) -> list[Statement]:
        return [(postgres_emit(self.prefix), (tenant, USER_FORGOTTEN, user_id))]
