"""AsyncSQLiteStore: the embedded default. One file, no server.

The store is composed of one mixin per concern, each in a module of its own, over
``_base.SQLiteStoreBase`` (the connection, transactions retried while the file is
busy, the migration runner, keyword-index batches, close):

- ``_threads``: threads and branches.
- ``_entries``: appends, entry reads, deletes, compaction and updates.
- ``_records``: records (facts, documents, core facts), working memory, snapshots
  and summaries.
- ``_search``: keyword search (FTS5) and vectors (the in-process vector slots and
  their persisted ANN files).
- ``_admin``: ``forget_user`` and ``reclaim_space``.
- ``_events``: the change feed (triggers in the file: ``memorybank.stores.sql.events``).
- ``memorybank.stores.sqlite.schema``: the migrations and the SQL they and the
  append share (no I/O, not generated twice).

Layout: tables ``<prefix>threads``, ``<prefix>branches``, ``<prefix>entries``,
``<prefix>working``, ``<prefix>snapshots``, ``<prefix>summaries`` and
``<prefix>schema_version``; every key and index leads with ``tenant_id``.
Entries are indexed by ``(tenant_id, thread_id, branch, position)``, so "last N"
is one index range read whatever the thread's length.
A keyed entry's payload fingerprint is in ``entries.fingerprint`` (schema
version 3; NULL on older rows, which match any payload), compared with the
new one inside the append's transaction.
Threads are keyed by ``(tenant_id, id)`` and indexed by ``(tenant_id, user_id)``
(schema version 8): no index holds ``updated_at``, which every append sets, so
an append rewrites the thread's row and nothing else of it; listing sorts the
tenant's (or the user's) threads.
Records are indexed by ``(tenant_id, kind, id)``, ``(tenant_id, kind, key)``
and (schema version 5) ``(tenant_id, kind, created_at, id)``: the batch reads
(``record_get_many``, ``record_list_keys``, ``record_list_keys_by_kind``) are one
call on the store's thread
with ``IN`` lists of at most 500 values per statement, and ``record_page`` is
one range of the last index from its cursor.
Vectors (schema version 9): rowids are AUTOINCREMENT (never given twice);
``<prefix>vector_deletes`` logs, by trigger, every deleted vector row (tenant,
model, kind, rowid) under an increasing ``seq`` and keeps the newest
``VECTOR_LOG_KEEP``; ``<prefix>vector_changes`` counts updates in place (none
are made). The in-process vector cache applies the logged deletions to its rows
(``_vector_slot``) instead of reloading them, and a file database keeps its
HNSW indexes in ``<path>.ann/`` (``memorybank.stores.vectors.files``), which a
new process loads, applying the deletions logged since they were saved,
instead of rebuilding. Deleting entries (``entry_delete``, ``entry_truncate_after``,
``entry_clear``, ``branch_delete``, ``entry_compact``) deletes the vectors
of those no branch of the thread still holds (a fork copies entries with their
ids); ``thread_delete`` and ``forget_user`` delete the thread's.

Keyword search: FTS5 over entries and records. Entries reach their index in
batches (schema version 6): ``fts_state.indexed`` is the highest entries rowid
indexed; an appending store indexes the rows above it every ``FTS_BATCH``
entries, inside that append's transaction, and a keyword search first indexes
whatever is left, so it always sees every committed entry (a read-only file's
rest is searched in a temporary index). Deletes and content updates of indexed
rows reach the index through triggers. An append thus writes about half the
pages it would with one index update per transaction. The index's second
column (schema version 10) holds one token per entry naming its thread's owner:
a search for one user (or inside one thread) adds ``fts_scope : (owner OR
shared)`` to the match, so FTS5 scores that owner's matches rather than every
match in the file; the owner check in SQL still decides what is returned.
An append writes the token into the entry's ``fts_scope`` column; rows written
without it (forks, compaction summaries, older versions) get it when indexed.

Concurrency: WAL journal (readers never block the writer), a busy timeout, and
every write is one ``BEGIN IMMEDIATE`` transaction (one writer at a time,
across threads and processes), retried when SQLite still reports the database
busy or locked. Positions are ``max + 1`` inside that transaction: gap-free
while nothing is deleted.

Durability: ``synchronous="full"`` (default) fsyncs the WAL at every commit, so
a write that returned survives a power cut; ``"normal"`` survives a crash of
the process but not of the machine; ``"off"`` trusts the OS.

Errors: a write that does not fit (disk full, or ``max_page_count`` reached)
raises ``StoreError`` ("is full") and is rolled back whole; a read-only
database file serves reads and refuses writes with ``StoreError``
("read-only"); a database in a read-only directory cannot be opened in WAL
mode at all (no ``-wal``/``-shm`` files can be made there): every call raises
``StoreError`` ("read-only directory"). A file that cannot be opened otherwise
raises ``StoreUnavailable``. None of these changes the file.

Forgetting: ``secure_delete`` is on, so deleted rows are overwritten with
zeros instead of lingering in free space; ``forget_user`` also merges both
full-text indexes into one segment (``'optimize'``: a deleted row's words
otherwise stay in the index until segments merge, and this costs a rewrite of
the indexes) and truncates the WAL (``wal_checkpoint(TRUNCATE)``; a reader on
another connection that still needs old frames keeps them until its next
checkpoint). Afterwards none of the user's words is in the database's bytes.

Sync and async: ``SQLiteStore`` keeps one connection and calls it inline under a
lock. ``AsyncSQLiteStore`` writes on one connection and its dedicated thread, and
reads (entries, keyword and vector search, a search's batch reads) on up to
``READ_CONNECTIONS`` read connections, each on a thread of its own, in one
snapshot each: WAL lets them run beside each other and the writer, and a write
is committed before it returns, so a read issued after it sees it (``NORMAL`` or
``FULL`` only decides when the WAL is synced). ``":memory:"`` (one database per
connection) and the views of ``snapshot`` and ``atomic`` read on their one
connection. The in-process vector slots are shared by those threads: a search
holds the cache's lock while it brings a slot up to date and ranks it, and
confirms its hits after, beside other searches. ``close`` waits for the reads
under way and closes the read connections. The event loop never blocks on disk.
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
from memorybank.stores.sqlite._async._records import RecordsMixin
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
    RecordsMixin,
    SearchMixin,
    AdminMixin,
    EventsMixin,
    SQLiteStoreBase,
):
    """A SQLite file (or ``":memory:"``). See the module docstring for the guarantees.

    Args:
        path: the database file; created (with its tables) on first use.
        synchronous: durability level, ``"full"`` (default), ``"normal"`` or ``"off"``.
        busy_timeout: seconds a writer waits for another writer before retrying.
        prefix: table name prefix, to share a file with other tables.
    """

    capabilities = frozenset(
        {
            Capability.ATOMIC,
            Capability.EVENTS,
            Capability.FTS5,
            Capability.DURABLE,
            Capability.MULTI_PROCESS,
            Capability.SNAPSHOT,
            Capability.RUN_STATE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
        }
    )

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncSQLiteStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://`` (in memory)."""
        return cls(sqlite_path(url), **options)
