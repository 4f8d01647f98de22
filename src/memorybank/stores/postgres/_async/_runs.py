"""The PostgreSQL store's part of ``forget_user`` (``SQLCore.forget_user``): the erasure's
transaction with the change feed's steps around it."""

from __future__ import annotations

from collections.abc import Sequence

from memorybank.stores.postgres._async._events import EventsMixin
from memorybank.stores.sql.program import Statement


class RunsMixin(EventsMixin):
    """The ``_runs`` part of the store (see the module docstring)."""

    # -- erasure -----------------------------------------------------------------

    async def _forget_write(
        self, tenant: str, user_id: str, statements: Sequence[Statement]
    ) -> list[int]:
        """The erasure between the change feed's two steps, in one transaction."""
        async with self._transaction() as conn:
            feed = await self._forget_events_begin(conn, tenant)
            results = await self._step(conn, statements)
            if feed:
                await self._forget_events_end(conn, tenant, user_id)
        return [count for _, count in results]
