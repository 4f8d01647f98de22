"""The PostgreSQL store's change feed: triggers and a per-tenant counter row
(``memorybank.stores.sql.events``: why the counter, not a sequence); ``forget_user``'s
steps around the erasure are ``SQLCore._forget_program``'s."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from psycopg.errors import UndefinedTable

from memorybank.events.types import USER_FORGOTTEN
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.sql.events import (
    postgres_disable,
    postgres_emit,
    postgres_enable,
    postgres_tables,
)
from memorybank.stores.sql.program import Program, Statement

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

    async def events_enable(self, *, keep: timedelta) -> None:
        await self._transact(lambda: self._feed_switch(postgres_enable(self.prefix), keep))

    async def events_disable(self) -> None:
        await self._transact(lambda: self._feed_switch(postgres_disable(self.prefix)))

    def _feed_switch(
        self, statements: Sequence[str], keep: timedelta | None = None
    ) -> Program[None]:
        """Run DDL ``statements`` under the prefix's advisory lock, in one transaction;
        with ``keep`` (enabling), the feed's tables made first, the statements run only
        while its triggers are absent, and ``keep`` set."""
        p = self.prefix
        lock: Statement = ("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memorybank:{p}",))
        if keep is None:
            yield [lock, *((statement, None) for statement in statements)]
            return
        *_, (state, _) = yield [
            lock, *((statement, None) for statement in postgres_tables(p)), self._feed_state_read()
        ]  # fmt: skip
        yield [
            *((statement, None) for statement in (() if state[0][1] else statements)),
            self._keep_write(keep),
        ]

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        p = self.prefix
        if not (await self._feed_state())[0]:  # no feed tables
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
