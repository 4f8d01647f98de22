"""The SQLite store's threads: its list and count reads, and the columns a fork copies
(the other thread and branch verbs are the shared core's)."""

from __future__ import annotations

from memorybank.stores.contract._async.store import Unset
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sqlite._async._base import SQLiteStoreBase
from memorybank.stores.sqlite.schema import INSERT_COLUMNS

#: The columns a fork copies: all but the branch and ``fts_scope`` (left NULL: the
#: keyword indexer fills it, as for every row written without it).
_COPIED = INSERT_COLUMNS.replace("branch, ", "").replace(", fts_scope", "")


class ThreadsMixin(SQLiteStoreBase):
    """Threads (see the module docstring)."""

    _copied_columns = _COPIED

    # -- threads -------------------------------------------------------------------

    def _thread_source(self, user_id: str | Unset | None) -> str:
        # No index holds ``updated_at`` (schema version 8: appends set it): the tenant's
        # threads, or one user's through ``threads_owner``, are sorted here.
        if isinstance(user_id, Unset):
            return f"{self.prefix}threads"
        return f"{self.prefix}threads" + SQLITE.hint(f"{self.prefix}threads_owner")

    def _branch_count(self, branch: str) -> str:
        return (
            f"(SELECT COUNT(*) FROM {self.prefix}entries e WHERE e.tenant_id = t.tenant_id"
            f" AND e.thread_id = t.id AND e.branch = {branch})"
        )
