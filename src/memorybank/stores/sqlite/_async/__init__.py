"""AsyncSQLiteStore: the embedded default. One file, no server.

The store is composed of one mixin per concern, each in a module of its own, over
``_base.SQLiteStoreBase`` (the connection and its read pool, transactions retried while
the file is busy, migrations, keyword-index batches, close), itself over the verbs the
SQL engines share (``memorybank.stores.sql._async.core.SQLCore``, ``writes.SQLWrites``):
``_threads``, ``_entries``, ``_search`` (FTS5, the in-process vector slots), ``_admin``
and ``_events`` (the change feed); ``memorybank.stores.sqlite.schema`` (migrations and
the append's SQL).

What each part does and why it is written so (tables and indexes, keyword-index batches,
vectors and their deletion log, concurrency, durability, errors, forgetting, the read
connections) is in docs/sqlite.md ("How the store works").
"""

from __future__ import annotations

from typing import Any

from memorybank.stores._async.open import sqlite_path
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.sqlite._async._admin import AdminMixin
from memorybank.stores.sqlite._async._base import FTS_BATCH as FTS_BATCH
from memorybank.stores.sqlite._async._base import SQLiteStoreBase
from memorybank.stores.sqlite._async._base import Synchronous as Synchronous
from memorybank.stores.sqlite._async._entries import EntriesMixin
from memorybank.stores.sqlite._async._events import EventsMixin
from memorybank.stores.sqlite._async._search import SearchMixin
from memorybank.stores.sqlite._async._threads import ThreadsMixin
from memorybank.stores.sqlite.schema import SHARED_TOKEN as SHARED_TOKEN
from memorybank.stores.sqlite.schema import VECTOR_LOG_KEEP as VECTOR_LOG_KEEP
from memorybank.stores.sqlite.schema import migrations as migrations
from memorybank.stores.sqlite.schema import scope_token as scope_token

__all__ = ["AsyncSQLiteStore"]


class AsyncSQLiteStore(
    ThreadsMixin,
    EntriesMixin,
    SearchMixin,
    AdminMixin,
    EventsMixin,
    SQLiteStoreBase,
):
    """A SQLite file (or ``":memory:"``). The guarantees: docs/sqlite.md.

    Args:
        path: the database file; created (with its tables) on first use.
        synchronous: durability level, ``"full"`` (default), ``"normal"`` or ``"off"``.
        busy_timeout: seconds a writer waits for another writer before retrying.
        prefix: table name prefix, to share a file with other tables.
    """

    capabilities = SQLiteStoreBase.capabilities | {Capability.FTS5}  # and ``SQLCore``'s

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncSQLiteStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://`` (in memory)."""
        return cls(sqlite_path(url), **options)
