"""Runs of the PostgreSQL store: working memory, snapshots, summaries, and
``forget_user`` (everything a user owns, in one transaction).
"""

from __future__ import annotations

from datetime import datetime

from memorybank.errors import ThreadForbidden
from memorybank.stores.postgres._async._events import EventsMixin


class RunsMixin(EventsMixin):
    """The ``_runs`` part of the store (see the module docstring)."""

    # -- snapshots -------------------------------------------------------------

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
        """Upsert the run's snapshot; checked: one upsert whose update is conditional."""
        params = (tenant, run_id, user_id, value, saved_at)
        if not owner_check:
            await self._fetch(self._sql.snapshot_save, params, retry=True)
        elif not await self._fetch(self._sql.snapshot_save_checked, params, retry=True):
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete the run's snapshot; checked: under its row lock, in one transaction."""
        if not owner_check:
            return bool(await self._fetch(self._sql.snapshot_delete, (tenant, run_id)))
        async with self._transaction() as conn:
            found = await self._rows(conn, self._sql.snapshot_lock, (tenant, run_id))
            if not found:
                return False
            if found[0][0] not in (None, user_id):
                raise ThreadForbidden("snapshot access forbidden")
            return bool(await self._rows(conn, self._sql.snapshot_delete, (tenant, run_id)))

    # -- erasure -----------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Lock the user's threads, then delete them with everything else the user owns."""
        async with self._transaction() as conn:
            feed = await self._forget_events_begin(conn, tenant)
            locked = await self._rows(conn, self._sql.lock_user_threads, (tenant, user_id))
            ids = [r[0] for r in locked]
            rows = await self._rows(
                conn, self._sql.forget_user, {"tenant": tenant, "user": user_id, "ids": ids}
            )
            if feed:
                await self._forget_events_end(conn, tenant, user_id)
            return int(rows[0][0])
