"""``forget_user`` of the PostgreSQL store: everything a user owns, in one transaction."""

from __future__ import annotations

from memorybank.stores.postgres._async._events import EventsMixin


class RunsMixin(EventsMixin):
    """The ``_runs`` part of the store (see the module docstring)."""

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
