"""Per-run state of the MySQL store (working memory, snapshots), summaries, and
``forget_user``: a user's erasure across every table in one transaction.
"""

from __future__ import annotations

from datetime import datetime

from memorybank.errors import ThreadForbidden
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import BEGIN
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.dialect import MYSQL


class RunsMixin(MySQLBase):
    """Working memory, snapshots, summaries and a user's erasure."""

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
