"""The SQLite store's erasure and maintenance: forget a user, reclaim space."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memorybank.stores.sql._async.core import Statement
from memorybank.stores.sqlite._async._base import SQLiteStoreBase, vector_files
from memorybank.stores.sqlite._async._events import forget_events_begin, forget_events_end


class AdminMixin(SQLiteStoreBase):
    """Forgetting a user and reclaiming space."""

    # -- erasure -----------------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """The shared erasure (``SQLCore.forget_user``; the vector rows' deletions are
        logged by trigger), then the upkeep that leaves none of the user's words in the
        file's bytes: both full-text indexes merged, the vector files, the WAL emptied."""
        removed = await super().forget_user(tenant, user_id)
        p = self.prefix

        def optimize(conn: sqlite3.Connection) -> None:
            # The FTS triggers only add 'delete' markers: the words stay in the index's
            # segments until they are merged into one.
            for fts in ("entries_fts", "records_fts"):
                conn.execute(f"INSERT INTO {p}{fts} ({p}{fts}) VALUES ('optimize')")

        def tidy() -> None:
            if removed:
                self._write(optimize)
            self._forget_vector_files(tenant)
            if removed and self.path != ":memory:":
                # The WAL still holds the pages as they were before: copy the
                # new ones into the database and empty it. Best effort: a
                # reader on another connection may still need old frames.
                self._read(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())

        await self._run(tidy)
        return removed

    async def _forget_write(
        self, tenant: str, user_id: str, statements: Sequence[Statement]
    ) -> list[int]:
        """The erasure between the change feed's two steps, in one transaction: the
        tenant's delete events muted first, one ``user.forgotten`` (and the user's other
        events gone) after."""
        p = self.prefix

        def op(conn: sqlite3.Connection) -> list[int]:
            feed = forget_events_begin(conn, p, tenant)
            counts = [conn.execute(sql, params or ()).rowcount for sql, params in statements]
            if feed:
                forget_events_end(conn, p, tenant, user_id)
            return counts

        return await self._run(lambda: self._write(op))

    def _forget_vector_files(self, tenant: str) -> None:
        """Drop the tenant's in-process vectors and persisted ANN files (rebuilt when needed)."""
        cache = self.__dict__.get("_vector_cache")
        if cache is not None:
            with cache.lock:  # the read connections' searches use them meanwhile
                for key in [key for key in cache.slots if key[0] == tenant]:
                    del cache.slots[key]
        if self.path != ":memory:":
            files = vector_files()
            files.remove_tenant(files.directory(self.path), self.prefix, tenant)

    async def reclaim_space(self) -> None:
        def vacuum() -> None:
            # VACUUM rewrites the file without its free pages; it cannot run in a
            # transaction, hence _read. The WAL then holds the whole rewrite:
            # truncating it returns that space too.
            self._read(lambda conn: conn.execute("VACUUM"))
            if self.path != ":memory:":
                self._read(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())

        await self._run(vacuum)
