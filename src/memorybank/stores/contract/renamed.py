"""The store-contract methods renamed to one naming order (``noun_verb``), old -> new.

The old names stay for one release: on every store they are deprecated aliases of
the new ones (``AsyncStoreBase``), a store written against the old names still works
(its old-name method answers the new name, with a ``DeprecationWarning``), and the
remote store's server accepts a call by either name.
"""

from __future__ import annotations

from typing import Final

__all__ = ["RENAMED"]

RENAMED: Final[dict[str, str]] = {
    "create_thread": "thread_create",
    "get_thread": "thread_get",
    "list_threads": "thread_list",
    "update_thread": "thread_update",
    "delete_thread": "thread_delete",
    "create_branch": "branch_create",
    "list_branches": "branch_list",
    "delete_branch": "branch_delete",
    "append_entries": "entry_append",
    "list_entries": "entry_list",
    "recent_messages": "entry_list_recent",
    "get_entry": "entry_get",
    "delete_entries": "entry_delete",
    "truncate_after": "entry_truncate_after",
    "clear_entries": "entry_clear",
    "count_entries": "entry_count",
    "count_entries_many": "entry_count_many",
    "compact_entries": "entry_compact",
    "update_entries": "entry_update",
}
