"""Per-run state of the MySQL store (working memory, snapshots), summaries, and
``forget_user``: a user's erasure across every table in one transaction.
"""

from __future__ import annotations

from datetime import datetime

from memorybank.errors import ThreadForbidden
from memorybank.records import Summary
from memorybank.stores.contract._async.store import Unset
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import BEGIN
from memorybank.stores.sql.common import any_user, row_to_summary, run_ids_sql, to_us
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    FORGET_COUNTED,
    RunStatements,
    forget_user_queries,
    run_statements,
)


class RunsMixin(MySQLBase):
    """Working memory, snapshots, summaries and a user's erasure."""

    @property
    def _runs_sql(self) -> RunStatements:
        return run_statements(MYSQL, self._working, self._snapshots, self._summaries)

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Upsert one key."""
        sql = self._runs_sql
        await self._execute(
            sql.working_set, sql.working_set_params(MYSQL, tenant, run_id, key, value)
        )

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The JSON text under ``key``, or ``None``."""
        rows = await self._query(self._runs_sql.working_get, (tenant, run_id, key))
        return str(rows[0][0]) if rows else None

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key; whether it existed."""
        return await self._execute(self._runs_sql.working_delete, (tenant, run_id, key)) > 0

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run."""
        rows = await self._query(self._runs_sql.working_items, (tenant, run_id))
        return {str(k): str(v) for k, v in rows}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Forget the run's working memory."""
        await self._execute(self._runs_sql.working_clear, (tenant, run_id))

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Distinct run ids (binary collation: compared bytewise)."""
        return await self._run_ids(self._working, tenant, after, limit)

    async def _run_ids(
        self, table: str, tenant: str, after: str | None, limit: int | None
    ) -> list[str]:
        sql, params = run_ids_sql(table, tenant, after, limit, "%s")
        return [str(row[0]) for row in await self._query(sql, params)]

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        """Upsert the run's snapshot.

        Checked: the upsert's update applies only where the stored owner allows it
        (``user_id`` assigned last: MySQL evaluates the assignments in order, so the
        earlier conditions still see the old owner), then the row, still locked by
        the upsert, tells whether it did: the owner is ``user_id`` exactly then.
        """
        when = to_us(saved_at)
        insert = (
            f"INSERT INTO {self._snapshots} (tenant_id, run_id, user_id, value, saved_at)"
            " VALUES (%s, %s, %s, %s, %s)"
        )
        if not owner_check:
            sql = self._runs_sql
            params = sql.snapshot_save_params(MYSQL, tenant, run_id, user_id, value, saved_at)
            await self._execute(sql.snapshot_save, params)
            return
        mine = "(user_id IS NULL OR user_id <=> %s)"
        checked = (user_id, value, user_id, when, user_id, user_id)  # (mine, new value) x 3
        results = await self._run_retried(
            [
                (BEGIN, None),
                (
                    insert + f" ON DUPLICATE KEY UPDATE value = IF({mine}, %s, value),"
                    f" saved_at = IF({mine}, %s, saved_at), user_id = IF({mine}, %s, user_id)",
                    (tenant, run_id, user_id, value, when, *checked),
                ),
                (
                    f"SELECT user_id <=> %s FROM {self._snapshots}"
                    " WHERE tenant_id = %s AND run_id = %s",
                    (user_id, tenant, run_id),
                ),
                ("COMMIT", None),
            ]
        )
        if not results[3][0][0][0]:
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner, JSON text)`` or ``None``."""
        rows = await self._query(self._runs_sql.snapshot_load, (tenant, run_id))
        return (rows[0][0], str(rows[0][1])) if rows else None

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete the snapshot; whether it existed. Checked: one transaction, one round
        trip, the owner read under the row's lock and the delete conditional on it."""
        delete = self._runs_sql.snapshot_delete
        if not owner_check:
            return await self._execute(delete, (tenant, run_id)) > 0
        results = await self._run_retried(
            [
                (BEGIN, None),
                (
                    f"SELECT user_id FROM {self._snapshots} WHERE tenant_id = %s AND run_id = %s"
                    " FOR UPDATE",
                    (tenant, run_id),
                ),
                (delete + " AND (user_id IS NULL OR user_id <=> %s)", (tenant, run_id, user_id)),
                ("COMMIT", None),
            ]
        )
        found, deleted = results[2][0], results[3][1]
        if found and not deleted:
            raise ThreadForbidden("snapshot access forbidden")
        return deleted > 0

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Run ids with a snapshot."""
        return await self._run_ids(self._snapshots, tenant, after, limit)

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Insert a summary."""
        sql = self._runs_sql
        await self._execute(sql.summary_add, sql.summary_params(MYSQL, tenant, summary))
        return summary

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Agent ids with a summary."""
        sql, params = run_ids_sql(self._summaries, tenant, after, limit, "%s", "agent_id")
        return [str(row[0]) for row in await self._query(sql, params)]

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for the user plus the shared ones, oldest first."""
        params = (tenant, agent_id, *any_user(user_id))
        rows = await self._query(self._runs_sql.summary_list, params)
        return [row_to_summary(row) for row in rows]

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Erase the user's threads (with entries and their vectors), records (with theirs),
        snapshots and summaries, atomically."""
        key = (tenant, user_id)
        results = await self._run_retried(
            [
                (BEGIN, None),
                # the vector cache's counters, before their vectors go (MySQL's own: no
                # trigger logs the deletions)
                self._bump(
                    tenant,
                    f"v.kind = 'entry' AND v.thread_id IN (SELECT t.id FROM {self._threads} t"
                    " WHERE t.tenant_id = %s AND t.user_id = %s)",
                    key,
                ),
                self._bump(
                    tenant,
                    f"v.kind <> 'entry' AND v.id IN (SELECT r.id FROM {self._records} r"
                    " WHERE r.tenant_id = %s AND r.kind = v.kind AND r.user_id = %s)",
                    key,
                ),
                *forget_user_queries(MYSQL, self._table, tenant, user_id),
                ("COMMIT", None),
            ]
        )
        return sum(results[4 + i][1] for i in FORGET_COUNTED)  # BEGIN is two results
