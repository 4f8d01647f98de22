"""AsyncSQLiteStore: the embedded default. One file, no server.

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
HNSW indexes in ``<path>.ann/`` (``memorybank.stores._vector_files``), which a
new process loads, applying the deletions logged since they were saved,
instead of rebuilding. Deleting entries (``delete_entries``, ``truncate_after``,
``clear_entries``, ``delete_branch``, ``compact_entries``) deletes the vectors
of those no branch of the thread still holds (a fork copies entries with their
ids); ``delete_thread`` and ``forget_user`` delete the thread's.

Keyword search: FTS5 over entries and records. Entries reach their index in
batches (schema version 6): ``fts_state.indexed`` is the highest entries rowid
indexed; an appending store indexes the rows above it every ``_FTS_BATCH``
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

Sync and async: the store keeps one connection. ``SQLiteStore`` calls it inline
under a lock; ``AsyncSQLiteStore`` runs every call on one dedicated thread,
so the event loop never blocks on disk.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from memorybank._async.stores.base import UNSET, AsyncStore, Unset, Visibility
from memorybank._async.stores.open import sqlite_path
from memorybank._concurrency import AsyncWorker
from memorybank._idempotency import clash, key_reused
from memorybank.errors import (
    ConfigurationError,
    Conflict,
    MemoryBankError,
    NotFound,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores._sql import (
    ENTRY_COLUMNS,
    PAGE_COLUMNS,
    RECORD_COLUMNS,
    THREAD_COLUMNS,
    any_user,
    dump,
    fts_query,
    messages_of_rows,
    page_row_to_entry,
    row_to_branch,
    row_to_entry,
    row_to_record,
    row_to_summary,
    row_to_thread,
    run_ids_sql,
    scope_sql,
    to_us,
    tool_calls_to_json,
    unit_vector_bytes,
    vector_from_bytes,
)
from memorybank.stores._types import by_kind

if TYPE_CHECKING:  # numpy loads with the first vector search, not with the store
    from memorybank.stores._items import (
        AppendResult,
        NewEntry,
        Record,
        RecordGuard,
        SearchHit,
        VectorItem,
    )
    from memorybank.stores._vectors import CachedRows, ScopedRows, VectorCache, VectorSlot

__all__ = ["AsyncSQLiteStore"]

T = TypeVar("T")
Synchronous = Literal["full", "normal", "off"]
_BUSY_RETRIES = 5
_OPEN_RETRIES = 60  # about 2.5 s of waiting for another opener of a new file
#: Ids or keys per ``IN (...)`` list: under SQLite's bound-variable limit (999 before 3.32).
_IN_CHUNK = 500
#: Entries a store appends before it moves them into the keyword index in one batch
#: (``_fts_sync``); a keyword search moves any rest first, so it always sees them all.
_FTS_BATCH = 256
#: WAL pages between automatic checkpoints (SQLite's default is 1000).
_CHECKPOINT_PAGES = 4000
#: The connection's page cache, in KiB (SQLite's default is 2,000: 2 MB, which a
#: ``build_context`` over a large thread outgrows, so every build re-read its pages
#: from the OS: about 1 ms of system time of 11). Pages are allocated as they are
#: read, so a small database never uses more than its size.
_CACHE_KIB = 65_536


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


#: Vector deletions the ``vector_deletes`` log keeps (the newest). A cache or
#: persisted index that saw the log at an older sequence than the oldest kept one
#: cannot catch up from it and reloads (or checks its rows one by one).
VECTOR_LOG_KEEP = 100_000


def _migrations(p: str) -> list[list[str]]:
    """Schema changes; the index + 1 is the schema version they bring."""
    return [
        [
            f"""CREATE TABLE {p}threads (
                tenant_id TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT, agent_id TEXT,
                title TEXT, metadata TEXT NOT NULL, status TEXT NOT NULL,
                created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                current_branch TEXT NOT NULL,
                PRIMARY KEY (tenant_id, id)) WITHOUT ROWID""",
            f"CREATE INDEX {p}threads_updated ON {p}threads (tenant_id, updated_at, id)",
            f"CREATE INDEX {p}threads_user ON {p}threads (tenant_id, user_id, updated_at)",
            f"""CREATE TABLE {p}branches (
                tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, name TEXT NOT NULL,
                created_at INTEGER NOT NULL, from_branch TEXT, from_entry TEXT,
                PRIMARY KEY (tenant_id, thread_id, name)) WITHOUT ROWID""",
            f"""CREATE TABLE {p}entries (
                tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, branch TEXT NOT NULL,
                position INTEGER NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL,
                content TEXT, name TEXT, tool_calls TEXT, tool_call_id TEXT,
                metadata TEXT NOT NULL, state TEXT NOT NULL, token_count INTEGER NOT NULL,
                created_at INTEGER NOT NULL, idempotency_key TEXT)""",
            f"""CREATE UNIQUE INDEX {p}entries_position
                ON {p}entries (tenant_id, thread_id, branch, position)""",
            f"CREATE UNIQUE INDEX {p}entries_id ON {p}entries (tenant_id, thread_id, branch, id)",
            f"""CREATE UNIQUE INDEX {p}entries_idempotency
                ON {p}entries (tenant_id, thread_id, branch, idempotency_key)
                WHERE idempotency_key IS NOT NULL""",
            f"""CREATE TABLE {p}working (
                tenant_id TEXT NOT NULL, run_id TEXT NOT NULL, key TEXT NOT NULL,
                value TEXT NOT NULL, PRIMARY KEY (tenant_id, run_id, key)) WITHOUT ROWID""",
            f"""CREATE TABLE {p}snapshots (
                tenant_id TEXT NOT NULL, run_id TEXT NOT NULL, user_id TEXT,
                value TEXT NOT NULL, saved_at INTEGER NOT NULL,
                PRIMARY KEY (tenant_id, run_id)) WITHOUT ROWID""",
            f"""CREATE TABLE {p}summaries (
                tenant_id TEXT NOT NULL, id TEXT NOT NULL, agent_id TEXT NOT NULL,
                user_id TEXT, content TEXT NOT NULL, created_at INTEGER NOT NULL,
                PRIMARY KEY (tenant_id, id)) WITHOUT ROWID""",
            f"CREATE INDEX {p}summaries_agent ON {p}summaries (tenant_id, agent_id, created_at)",
        ],
        [
            f"""CREATE TABLE {p}records (
                tenant_id TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,
                agent_id TEXT, user_id TEXT, key TEXT, content TEXT NOT NULL,
                data TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                expires_at INTEGER)""",
            f"CREATE UNIQUE INDEX {p}records_id ON {p}records (tenant_id, kind, id)",
            f"""CREATE INDEX {p}records_scope
                ON {p}records (tenant_id, kind, user_id, agent_id, created_at)""",
            f"CREATE INDEX {p}records_key ON {p}records (tenant_id, kind, key)",
            # Keyword search: FTS5 indexes over the content columns, kept in step by triggers.
            f"""CREATE VIRTUAL TABLE {p}entries_fts USING fts5(
                content, content='{p}entries', content_rowid='rowid',
                tokenize='porter unicode61 remove_diacritics 2')""",
            f"""CREATE TRIGGER {p}entries_fts_insert AFTER INSERT ON {p}entries BEGIN
                INSERT INTO {p}entries_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
            f"""CREATE TRIGGER {p}entries_fts_delete AFTER DELETE ON {p}entries BEGIN
                INSERT INTO {p}entries_fts ({p}entries_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                END""",
            f"""CREATE TRIGGER {p}entries_fts_update AFTER UPDATE OF content ON {p}entries BEGIN
                INSERT INTO {p}entries_fts ({p}entries_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                INSERT INTO {p}entries_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
            f"INSERT INTO {p}entries_fts ({p}entries_fts) VALUES ('rebuild')",
            f"""CREATE VIRTUAL TABLE {p}records_fts USING fts5(
                content, content='{p}records', content_rowid='rowid',
                tokenize='porter unicode61 remove_diacritics 2')""",
            f"""CREATE TRIGGER {p}records_fts_insert AFTER INSERT ON {p}records BEGIN
                INSERT INTO {p}records_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
            f"""CREATE TRIGGER {p}records_fts_delete AFTER DELETE ON {p}records BEGIN
                INSERT INTO {p}records_fts ({p}records_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                END""",
            f"""CREATE TRIGGER {p}records_fts_update AFTER UPDATE OF content ON {p}records BEGIN
                INSERT INTO {p}records_fts ({p}records_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                INSERT INTO {p}records_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
            f"""CREATE TABLE {p}vectors (
                tenant_id TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,
                model_id TEXT NOT NULL, thread_id TEXT, vector BLOB NOT NULL,
                PRIMARY KEY (tenant_id, kind, id, model_id))""",
            f"CREATE INDEX {p}vectors_model ON {p}vectors (tenant_id, model_id, kind, thread_id)",
        ],
        # Records carry the revision that ``RecordGuard`` compares.
        [f"ALTER TABLE {p}records ADD COLUMN revision INTEGER NOT NULL DEFAULT 0"],
        # The payload fingerprint of keyed entries (NULL on rows written before: no check).
        [f"ALTER TABLE {p}entries ADD COLUMN fingerprint TEXT"],
        # Paged record reads (``record_page``, ``record_list``) in (created_at, id) order.
        [f"CREATE INDEX {p}records_created ON {p}records (tenant_id, kind, created_at, id)"],
        # Entries reach the keyword index in batches, not one per append (see ``_fts_sync``):
        # ``fts_state.indexed`` is the highest entries rowid the index holds; every row at
        # or below it is indexed, none above. Rows that exist now are all indexed.
        [
            f"""CREATE TABLE {p}fts_state (
                name TEXT NOT NULL PRIMARY KEY, indexed INTEGER NOT NULL) WITHOUT ROWID""",
            f"""INSERT INTO {p}fts_state (name, indexed)
                VALUES ('entries', COALESCE((SELECT MAX(rowid) FROM {p}entries), 0))""",
            f"DROP TRIGGER {p}entries_fts_insert",
            f"DROP TRIGGER {p}entries_fts_delete",
            f"DROP TRIGGER {p}entries_fts_update",
            # A deleted indexed row leaves the index; and the mark never stays above the
            # highest rowid left, so SQLite's next rowid (highest + 1) is always above
            # it: a new row can never be taken for an indexed one.
            f"""CREATE TRIGGER {p}entries_fts_delete AFTER DELETE ON {p}entries BEGIN
                INSERT INTO {p}entries_fts ({p}entries_fts, rowid, content)
                SELECT 'delete', old.rowid, old.content
                WHERE old.rowid <= (SELECT indexed FROM {p}fts_state WHERE name = 'entries');
                UPDATE {p}fts_state SET indexed = COALESCE((SELECT MAX(rowid) FROM {p}entries), 0)
                WHERE name = 'entries'
                AND indexed > COALESCE((SELECT MAX(rowid) FROM {p}entries), 0);
                END""",
            f"""CREATE TRIGGER {p}entries_fts_update AFTER UPDATE OF content ON {p}entries
                WHEN old.rowid <= (SELECT indexed FROM {p}fts_state WHERE name = 'entries')
                BEGIN
                INSERT INTO {p}entries_fts ({p}entries_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                INSERT INTO {p}entries_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
        ],
        # Deletions per (tenant, model, kind), counted by triggers whatever deletes the
        # rows: a persisted ANN index (``_vector_files``) that recorded the count it
        # saw is still exact for the rows up to its max rowid while the count holds.
        # (An ``INSERT OR REPLACE`` would delete without firing the trigger: vector
        # rows are only ever written by ``vector_put``'s DELETE + INSERT.)
        [
            f"""CREATE TABLE {p}vector_changes (
                tenant_id TEXT NOT NULL, model_id TEXT NOT NULL, kind TEXT NOT NULL,
                deletes INTEGER NOT NULL,
                PRIMARY KEY (tenant_id, model_id, kind)) WITHOUT ROWID""",
            f"""CREATE TRIGGER {p}vectors_deleted AFTER DELETE ON {p}vectors BEGIN
                INSERT INTO {p}vector_changes (tenant_id, model_id, kind, deletes)
                VALUES (old.tenant_id, old.model_id, old.kind, 1)
                ON CONFLICT (tenant_id, model_id, kind) DO UPDATE SET deletes = deletes + 1;
                END""",
            f"""CREATE TRIGGER {p}vectors_updated AFTER UPDATE ON {p}vectors BEGIN
                INSERT INTO {p}vector_changes (tenant_id, model_id, kind, deletes)
                VALUES (old.tenant_id, old.model_id, old.kind, 1)
                ON CONFLICT (tenant_id, model_id, kind) DO UPDATE SET deletes = deletes + 1;
                END""",
        ],
        # Every append sets its thread's ``updated_at``: with that column in two indexes,
        # each append rewrote a leaf of both (a delete and an insert each) besides the
        # row. No index holds it now; ``list_threads`` sorts the tenant's (or the user's)
        # threads instead, reaching a user's through ``threads_owner``.
        [
            f"DROP INDEX IF EXISTS {p}threads_updated",
            f"DROP INDEX IF EXISTS {p}threads_user",
            f"CREATE INDEX IF NOT EXISTS {p}threads_owner ON {p}threads (tenant_id, user_id)",
        ],
        # Deletions are logged, not counted (``_vector_slot`` applies them to the cached
        # vectors instead of reloading them all). The vectors table is rebuilt with an
        # AUTOINCREMENT rowid (same unique key and index, rowids kept), so a rowid is
        # never given again: a logged rowid names one row forever, and every new row's
        # rowid is above every earlier one. ``vector_deletes`` gets one row per deleted
        # vector (by trigger); ``vector_changes.deletes`` now counts updates only (rows
        # are never updated in place: ``vector_put`` deletes and inserts). The log keeps
        # the last ``VECTOR_LOG_KEEP`` deletions (the trigger prunes the oldest).
        [
            f"""CREATE TABLE {p}vectors_v9 (
                rowid INTEGER PRIMARY KEY AUTOINCREMENT,
                tenant_id TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,
                model_id TEXT NOT NULL, thread_id TEXT, vector BLOB NOT NULL,
                UNIQUE (tenant_id, kind, id, model_id))""",
            f"""INSERT INTO {p}vectors_v9 (rowid, tenant_id, kind, id, model_id, thread_id, vector)
                SELECT rowid, tenant_id, kind, id, model_id, thread_id, vector FROM {p}vectors
                ORDER BY rowid""",
            f"DROP TABLE {p}vectors",
            f"ALTER TABLE {p}vectors_v9 RENAME TO {p}vectors",
            f"CREATE INDEX {p}vectors_model ON {p}vectors (tenant_id, model_id, kind, thread_id)",
            f"""CREATE TABLE {p}vector_deletes (
                seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL,
                model_id TEXT NOT NULL, kind TEXT NOT NULL, deleted INTEGER NOT NULL)""",
            f"""CREATE INDEX {p}vector_deletes_key
                ON {p}vector_deletes (tenant_id, model_id, kind, seq)""",
            f"""CREATE TRIGGER {p}vectors_deleted AFTER DELETE ON {p}vectors BEGIN
                INSERT INTO {p}vector_deletes (tenant_id, model_id, kind, deleted)
                VALUES (old.tenant_id, old.model_id, old.kind, old.rowid);
                DELETE FROM {p}vector_deletes
                WHERE seq <= last_insert_rowid() - {VECTOR_LOG_KEEP};
                END""",
            f"""CREATE TRIGGER {p}vectors_updated AFTER UPDATE ON {p}vectors BEGIN
                INSERT INTO {p}vector_changes (tenant_id, model_id, kind, deletes)
                VALUES (old.tenant_id, old.model_id, old.kind, 1)
                ON CONFLICT (tenant_id, model_id, kind) DO UPDATE SET deletes = deletes + 1;
                END""",
        ],
        # The keyword index gets a second column, ``fts_scope``: one token naming the
        # owner of the entry's thread (``_scope_token``). A user-scoped search matches
        # ``(words) AND fts_scope : (own OR shared)``, so FTS5 walks the user's postings
        # instead of scoring every tenant's matches (the SQL scope check still decides).
        # Entries carry the token (set when they are indexed), so the triggers can hand
        # FTS5 the exact values it indexed. Rebuilding the index costs one pass over the
        # indexed entries.
        [
            f"ALTER TABLE {p}entries ADD COLUMN fts_scope TEXT",
            f"DROP TRIGGER {p}entries_fts_delete",
            f"DROP TRIGGER {p}entries_fts_update",
            f"DROP TABLE {p}entries_fts",
            f"""CREATE VIRTUAL TABLE {p}entries_fts USING fts5(
                content, fts_scope, content='{p}entries', content_rowid='rowid',
                tokenize='porter unicode61 remove_diacritics 2')""",
            _fts_scope_update(p, "<="),
            f"""INSERT INTO {p}entries_fts (rowid, content, fts_scope)
                SELECT rowid, content, fts_scope FROM {p}entries
                WHERE rowid <= (SELECT indexed FROM {p}fts_state WHERE name = 'entries')""",
            f"""CREATE TRIGGER {p}entries_fts_delete AFTER DELETE ON {p}entries BEGIN
                INSERT INTO {p}entries_fts ({p}entries_fts, rowid, content, fts_scope)
                SELECT 'delete', old.rowid, old.content, old.fts_scope
                WHERE old.rowid <= (SELECT indexed FROM {p}fts_state WHERE name = 'entries');
                UPDATE {p}fts_state SET indexed = COALESCE((SELECT MAX(rowid) FROM {p}entries), 0)
                WHERE name = 'entries'
                AND indexed > COALESCE((SELECT MAX(rowid) FROM {p}entries), 0);
                END""",
            f"""CREATE TRIGGER {p}entries_fts_update AFTER UPDATE OF content ON {p}entries
                WHEN old.rowid <= (SELECT indexed FROM {p}fts_state WHERE name = 'entries')
                BEGIN
                INSERT INTO {p}entries_fts ({p}entries_fts, rowid, content, fts_scope)
                VALUES ('delete', old.rowid, old.content, old.fts_scope);
                INSERT INTO {p}entries_fts (rowid, content, fts_scope)
                VALUES (new.rowid, new.content, new.fts_scope);
                END""",
        ],
    ]


#: The SQL function (registered on every connection) that gives a thread owner's token.
_SCOPE_FUNCTION = "memorybank_scope_token"
#: The token of shared threads (no user).
_SHARED_TOKEN = "u0"


def _scope_token(tenant: str, user_id: str | None) -> str:
    """The keyword index's token for the owner ``user_id`` of a thread in ``tenant``.

    Digits after a letter: one token for FTS5's tokenizer that the Porter stemmer
    leaves alone. A 56-bit hash, so two owners can share a token: that only makes
    the pre-filter let through another owner's rows, which the SQL scope check
    (always applied) then drops.
    """
    if user_id is None:
        return _SHARED_TOKEN
    import hashlib  # on first use: a process that only reads history never needs it

    digest = hashlib.blake2b(f"{tenant}\x00{user_id}".encode(), digest_size=7).digest()
    return f"u{int.from_bytes(digest, 'big') + 1}"


#: ``_scope_token`` for the append path, where most appends name a recent owner.
_owner_token = functools.lru_cache(maxsize=1024)(_scope_token)


def _fts_scope_update(p: str, side: str, *, missing_only: bool = False) -> str:
    """Set ``fts_scope`` of the entries on one ``side`` of the keyword index's mark
    (``missing_only``: of those written without it; appends set it)."""
    return (
        f"UPDATE {p}entries SET fts_scope = {_SCOPE_FUNCTION}(tenant_id, (SELECT t.user_id"
        f" FROM {p}threads t WHERE t.tenant_id = {p}entries.tenant_id"
        f" AND t.id = {p}entries.thread_id))"
        f" WHERE rowid {side} (SELECT indexed FROM {p}fts_state WHERE name = 'entries')"
        + (" AND fts_scope IS NULL" if missing_only else "")
    )


#: The columns an append inserts, in ``_append_sqls``'s order.
_INSERT_COLUMNS = (
    "tenant_id, thread_id, branch, position, id, role, content, name, tool_calls,"
    " tool_call_id, metadata, state, token_count, created_at, idempotency_key, fingerprint,"
    " fts_scope"
)


def _append_sqls(p: str) -> tuple[str, str, str, str]:
    """The append's statements: read the thread and its (current, or a named) branch's
    last position, bump the thread, insert.

    No ``RETURNING`` and no ``INSERT ... SELECT`` from the table written: SQLite runs
    each of those through a temporary table (three per append, a third of its
    instructions). The read and the writes share one ``BEGIN IMMEDIATE``
    transaction, so nothing else writes in between. The insert sets ``fts_scope``
    (the owner's token) itself, so indexing the entries later rewrites none of them.
    """
    head = (
        f"SELECT {THREAD_COLUMNS}, (SELECT MAX(e.position) FROM {p}entries e"
        " WHERE e.tenant_id = t.tenant_id AND e.thread_id = t.id AND e.branch = {branch})"
        f" FROM {p}threads t WHERE t.tenant_id = ?1 AND t.id = ?2"
    )
    bump = f"UPDATE {p}threads SET updated_at = ? WHERE tenant_id = ? AND id = ?"
    insert = f"INSERT INTO {p}entries ({_INSERT_COLUMNS}) VALUES ({', '.join('?' * 17)})"
    return (
        head.replace("{branch}", "t.current_branch"),
        head.replace("{branch}", "?3"),
        bump,
        insert,
    )


_is_none = functools.partial(operator.is_, None)


@functools.lru_cache(maxsize=256)
def _insert_without_nulls(p: str, nulls: tuple[bool, ...]) -> tuple[str, Callable[..., Any]]:
    """An insert of one entry with ``NULL`` written in for the values that are ``None``,
    and what picks the other values: the ``sqlite3`` module binds ``None`` through its
    adapter lookup (failed attribute lookups, ~3,000 instructions a value; an append
    has five or six), other values directly."""
    kept = [i for i, null in enumerate(nulls) if not null]
    marks = ", ".join("NULL" if null else "?" for null in nulls)
    return (
        f"INSERT INTO {p}entries ({_INSERT_COLUMNS}) VALUES ({marks})",
        operator.itemgetter(*kept),
    )


def _json_object(value: dict[str, Any]) -> str:
    return "{}" if not value else dump(value)


def _entry_values(new: NewEntry, scope: str) -> tuple[Any, ...]:
    """The columns of a new entry from ``id`` on (the insert's fifth value on);
    ``scope`` is its thread owner's ``fts_scope`` token."""
    calls = (
        None
        if not new.tool_calls and not new.extra and new.item is None
        else tool_calls_to_json(new.tool_calls, new.extra, new.item)
    )
    return (
        new.id,
        new.role,
        new.content,
        new.name,
        calls,
        new.tool_call_id,
        _json_object(new.metadata),
        _json_object(new.state),
        new.token_count,
        to_us(new.created_at),
        new.idempotency_key,
        None if new.idempotency_key is None else new.fingerprint,
        scope,
    )


def _stored(new: NewEntry, thread_id: str, branch: str, position: int) -> Entry:
    return Entry(
        new.id,
        thread_id,
        branch,
        position,
        new.role,  # type: ignore[arg-type]
        new.content,
        new.name,
        new.tool_calls,
        new.tool_call_id,
        new.metadata,
        new.state,
        new.token_count,
        new.created_at,
        new.idempotency_key,
        new.extra,
        new.item,
    )


def _is_busy(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


class AsyncSQLiteStore(AsyncStore):
    """A SQLite file (or ``":memory:"``). See the module docstring for the guarantees.

    Args:
        path: the database file; created (with its tables) on first use.
        synchronous: durability level, ``"full"`` (default), ``"normal"`` or ``"off"``.
        busy_timeout: seconds a writer waits for another writer before retrying.
        prefix: table name prefix, to share a file with other tables.
    """

    capabilities = frozenset({"fts5"})

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "full",
        busy_timeout: float = 30.0,
        prefix: str = "memorybank_",
    ) -> None:
        if synchronous not in ("full", "normal", "off"):
            raise ConfigurationError("synchronous must be 'full', 'normal' or 'off'")
        if not prefix.replace("_", "").isalnum() and prefix != "":
            raise ConfigurationError("prefix must be letters, digits and underscores")
        self.path = str(path)
        if "\x00" in self.path:
            raise ConfigurationError(f"SQLite path {self.path!r} contains a NUL character")
        self.synchronous: Synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.prefix = prefix
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._worker = AsyncWorker("memorybank-sqlite")
        #: Entries this store appended that may not be in the keyword index yet.
        self._fts_backlog = 0
        (self._append_head, self._append_head_branch, self._append_bump, self._append_insert) = (
            _append_sqls(prefix)
        )

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncSQLiteStore:
        """``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://`` (in memory)."""
        return cls(sqlite_path(url), **options)

    # -- plumbing ---------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosed("the store is closed")
        if self._conn is not None:
            return self._conn
        try:
            if self.path != ":memory:":
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except (OSError, sqlite3.Error) as error:
            raise StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}") from error
        for attempt in range(_OPEN_RETRIES):
            try:
                self._prepare(conn)
                break
            except sqlite3.Error as error:
                # Switching a new file to WAL takes an exclusive lock that the busy
                # timeout does not wait for: several processes opening one new file
                # at once see "database is locked" here, so retry, then give up typed.
                busy = isinstance(error, sqlite3.OperationalError) and _is_busy(error)
                if busy and attempt < _OPEN_RETRIES - 1:
                    time.sleep(min(0.05, 0.002 * (attempt + 1)))
                    continue
                conn.close()
                raise self._open_error(error, busy=busy) from error
            except BaseException:
                conn.close()
                raise
        self._conn = conn
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # One call for the settings (``connect(timeout=...)`` set the busy timeout).
        # Checkpoints (each syncs the WAL and the database file) every ~16 MB of WAL
        # rather than SQLite's ~4 MB: a quarter of the syncs an append stream pays for.
        # Deleted rows are overwritten with zeros rather than left in free space.
        conn.executescript(
            ("" if self.path == ":memory:" else "PRAGMA journal_mode = WAL;")
            + f"PRAGMA synchronous = {self.synchronous.upper()};"
            f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_PAGES};"
            f"PRAGMA cache_size = -{_CACHE_KIB};"
            "PRAGMA foreign_keys = OFF; PRAGMA secure_delete = ON;"
        )
        conn.create_function(_SCOPE_FUNCTION, 2, _scope_token, deterministic=True)
        self._migrate(conn)

    def _open_error(self, error: sqlite3.Error, *, busy: bool) -> StoreError:
        """The error for a file that could not be opened and prepared."""
        name = getattr(error, "sqlite_errorname", "")
        if busy:
            return StoreUnavailable(f"SQLite database busy: {error}")
        if name == "SQLITE_FULL" or name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
            return self._translate(error)
        # not a database, corrupt, no access: nothing a retry of this call can fix
        return StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}")

    def _translate(self, error: sqlite3.Error) -> StoreError:
        """The memorybank error for a SQLite error (the caller chains it)."""
        name = getattr(error, "sqlite_errorname", "")
        if name == "SQLITE_FULL":
            return StoreError(
                f"SQLite database {self.path!r} is full (disk or max_page_count):"
                " the write was rolled back"
            )
        if name.startswith("SQLITE_READONLY"):
            return StoreError(f"SQLite database {self.path!r} is read-only: {error}")
        if name.startswith("SQLITE_CANTOPEN"):
            if self.path != ":memory:" and not os.access(
                os.path.dirname(os.path.abspath(self.path)), os.W_OK
            ):
                return StoreError(
                    f"SQLite database {self.path!r} is in a read-only directory, where"
                    f" WAL mode cannot create its -wal and -shm files: {error}"
                )
            return StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}")
        return StoreError(f"SQLite error: {error}")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        p = self.prefix
        migrations = _migrations(p)
        version_table = f"{p}schema_version"
        try:  # the common open: one read says the schema is current
            row = conn.execute(f"SELECT MAX(version) FROM {version_table}").fetchone()
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
            row = (None,)
        if row[0] is not None and row[0] > len(migrations):
            raise ConfigurationError(
                f"database schema version {row[0]} is newer than this memorybank supports"
                f" ({len(migrations)}); upgrade memorybank"
            )
        if row[0] is not None and row[0] == len(migrations):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {version_table} (version INTEGER NOT NULL)")
            row = conn.execute(f"SELECT MAX(version) FROM {version_table}").fetchone()
            current = row[0] or 0
            if current > len(migrations):
                raise ConfigurationError(
                    f"database schema version {current} is newer than this memorybank supports"
                )
            for version in range(current, len(migrations)):
                for statement in migrations[version]:
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {version_table} (version) VALUES (?)", (version + 1,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return fn(self._connect())
        except MemoryBankError:
            raise
        except sqlite3.Error as error:
            raise self._translate(error) from error

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction, retrying while busy."""
        conn = self._connect()
        for attempt in range(_BUSY_RETRIES):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise self._translate(error) from error
                if attempt < _BUSY_RETRIES - 1:
                    continue
                raise StoreUnavailable(f"SQLite database busy: {error}") from error
            try:
                result = fn(conn)
                conn.execute("COMMIT")
                return result
            except BaseException as error:
                if conn.in_transaction:
                    # SQLite may have rolled back already (a full disk, an I/O error).
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and _is_busy(error):
                    if attempt < _BUSY_RETRIES - 1:
                        continue
                    raise StoreUnavailable(f"SQLite database busy: {error}") from error
                if isinstance(error, sqlite3.IntegrityError):
                    raise Conflict(f"conflicting write: {error}") from error
                if isinstance(error, sqlite3.Error):
                    raise self._translate(error) from error
                raise
        raise AssertionError("unreachable")

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StoreClosed("the store is closed")
        return await self._worker.run(fn)

    # -- keyword index of entries ---------------------------------------------------
    #
    # An append does not index its entries: the FTS5 insert (a new index segment per
    # transaction, merged later) was half of an append's page writes. Entries above
    # ``fts_state.indexed`` (a rowid) are moved in batches: by the appending store
    # every ``_FTS_BATCH`` entries, and by a keyword search before it runs, so a
    # search always sees every committed entry. Deletes and content updates of
    # indexed rows reach the index through triggers (schema version 6).

    def _fts_sync(self, conn: sqlite3.Connection) -> None:
        """Index every entry above the mark (inside a write transaction)."""
        p = self.prefix
        conn.execute(_fts_scope_update(p, ">", missing_only=True))
        conn.execute(
            f"INSERT INTO {p}entries_fts (rowid, content, fts_scope)"
            f" SELECT rowid, content, fts_scope FROM {p}entries"
            f" WHERE rowid > (SELECT indexed FROM {p}fts_state WHERE name = 'entries')"
        )
        conn.execute(
            f"UPDATE {p}fts_state SET indexed = COALESCE((SELECT MAX(rowid) FROM {p}entries), 0)"
            " WHERE name = 'entries'"
        )
        self._fts_backlog = 0

    def _fts_added(self, conn: sqlite3.Connection, count: int) -> None:
        """Count appended entries; index them once a batch is due (same transaction)."""
        self._fts_backlog += count
        if self._fts_backlog >= _FTS_BATCH:
            self._fts_sync(conn)

    def _fts_lag(self, conn: sqlite3.Connection) -> bool:
        p = self.prefix
        row = conn.execute(
            f"SELECT indexed < COALESCE((SELECT MAX(rowid) FROM {p}entries), 0)"
            f" FROM {p}fts_state WHERE name = 'entries'"
        ).fetchone()
        return bool(row[0])

    def _fts_catch_up(self) -> bool:
        """Index the entries not indexed yet; ``False`` when some stay out (read-only file)."""
        if not self._read(self._fts_lag):
            return True
        try:
            self._write(self._fts_sync)
        except StoreError as error:
            if "read-only" not in str(error):
                raise
            return False
        return True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            cache = self.__dict__.get("_vector_cache")
            if cache is not None:  # leave the ANN indexes current on disk for the next process
                cache.stop()  # background builds: what they built so far is saved
                for key, slot in cache.slots.items():
                    self._vector_save(key, slot, final=True)
            if self._conn is not None:
                if self._fts_backlog:
                    # Leave the keyword index complete (a reader of a read-only copy
                    # then needs no catch-up); a failure here only delays it.
                    with contextlib.suppress(MemoryBankError):
                        self._write(self._fts_sync)
                self._conn.close()
                self._conn = None

        await self._worker.run(shut)
        self._worker.shutdown()

    # -- threads -------------------------------------------------------------------

    def _get_thread(self, conn: sqlite3.Connection, tenant: str, thread_id: str) -> Thread | None:
        row = conn.execute(
            f"SELECT {THREAD_COLUMNS} FROM {self.prefix}threads WHERE tenant_id = ? AND id = ?",
            (tenant, thread_id),
        ).fetchone()
        return None if row is None else row_to_thread(row)

    def _require_thread(self, conn: sqlite3.Connection, tenant: str, thread_id: str) -> Thread:
        thread = self._get_thread(conn, tenant, thread_id)
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        return thread

    def _has_branch(self, conn: sqlite3.Connection, tenant: str, thread_id: str, name: str) -> bool:
        return (
            conn.execute(
                f"SELECT 1 FROM {self.prefix}branches"
                " WHERE tenant_id = ? AND thread_id = ? AND name = ?",
                (tenant, thread_id, name),
            ).fetchone()
            is not None
        )

    async def create_thread(self, thread: Thread) -> Thread:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> Thread:
            if self._get_thread(conn, thread.tenant_id, thread.id) is not None:
                raise Conflict(f"thread {thread.id!r} already exists")
            conn.execute(
                f"INSERT INTO {p}threads ({THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    thread.id,
                    thread.tenant_id,
                    thread.user_id,
                    thread.agent_id,
                    thread.title,
                    dump(thread.metadata),
                    thread.status,
                    to_us(thread.created_at),
                    to_us(thread.updated_at),
                    thread.current_branch,
                ),
            )
            conn.execute(
                f"INSERT INTO {p}branches (tenant_id, thread_id, name, created_at)"
                " VALUES (?, ?, ?, ?)",
                (thread.tenant_id, thread.id, thread.current_branch, to_us(thread.created_at)),
            )
            return thread

        return await self._run(lambda: self._write(op))

    async def get_thread(self, tenant: str, thread_id: str) -> Thread | None:
        return await self._run(lambda: self._read(lambda c: self._get_thread(c, tenant, thread_id)))

    async def list_threads(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        where = ["tenant_id = ?"]
        params: list[Any] = [tenant]
        for column, value in (("user_id", user_id), ("agent_id", agent_id)):
            if not isinstance(value, Unset):
                where.append(f"{column} IS ?")
                params.append(value)
        if status is not None:
            where.append("status = ?")
            params.append(status)
        # No index holds ``updated_at`` (schema version 8: appends set it): the tenant's
        # threads, or one user's through ``threads_owner``, are sorted here.
        source = f"{self.prefix}threads"
        if not isinstance(user_id, Unset):
            source += f" INDEXED BY {self.prefix}threads_owner"
        sql = (
            f"SELECT {THREAD_COLUMNS} FROM {source} WHERE {' AND '.join(where)}"
            " ORDER BY updated_at DESC, id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)

        def op(conn: sqlite3.Connection) -> list[Thread]:
            return [row_to_thread(r) for r in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    async def update_thread(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        sets = ["updated_at = ?"]
        params: list[Any] = [to_us(updated_at)]
        if not isinstance(title, Unset):
            sets.append("title = ?")
            params.append(title)
        if not isinstance(metadata, Unset):
            sets.append("metadata = ?")
            params.append(dump(metadata))
        if not isinstance(status, Unset):
            sets.append("status = ?")
            params.append(status)
        if not isinstance(current_branch, Unset):
            sets.append("current_branch = ?")
            params.append(current_branch)

        def op(conn: sqlite3.Connection) -> Thread:
            self._require_thread(conn, tenant, thread_id)
            if not isinstance(current_branch, Unset) and not self._has_branch(
                conn, tenant, thread_id, current_branch
            ):
                raise NotFound(f"branch {current_branch!r} not found")
            conn.execute(
                f"UPDATE {self.prefix}threads SET {', '.join(sets)} WHERE tenant_id = ? AND id = ?",
                [*params, tenant, thread_id],
            )
            return self._require_thread(conn, tenant, thread_id)

        return await self._run(lambda: self._write(op))

    async def delete_thread(self, tenant: str, thread_id: str) -> bool:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> bool:
            key = (tenant, thread_id)
            cursor = conn.execute(f"DELETE FROM {p}threads WHERE tenant_id = ? AND id = ?", key)
            conn.execute(f"DELETE FROM {p}branches WHERE tenant_id = ? AND thread_id = ?", key)
            conn.execute(f"DELETE FROM {p}entries WHERE tenant_id = ? AND thread_id = ?", key)
            conn.execute(
                f"DELETE FROM {p}vectors WHERE tenant_id = ? AND kind = 'entry' AND thread_id = ?",
                key,
            )
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))

    # -- entries -------------------------------------------------------------------

    async def append_entries(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        updated_at: datetime,
        branch: str | None = None,
        owner: str | Unset | None = UNSET,
    ) -> AppendResult:
        from memorybank.stores._items import AppendResult  # not at import: cold start

        p = self.prefix

        def op(conn: sqlite3.Connection) -> AppendResult:
            stamp = to_us(updated_at)
            if branch is None:
                row = conn.execute(self._append_head, (tenant, thread_id)).fetchone()
            else:
                head = self._append_head_branch
                row = conn.execute(head, (tenant, thread_id, branch)).fetchone()
            if row is None:
                raise NotFound(f"thread {thread_id!r} not found")
            # A failed check raises before any write: nothing is written.
            if not isinstance(owner, Unset) and row[2] != owner:
                raise ThreadForbidden()
            name = row[9] if branch is None else branch
            if branch is not None and not self._has_branch(conn, tenant, thread_id, name):
                raise NotFound(f"branch {name!r} not found")
            conn.execute(self._append_bump, (stamp, tenant, thread_id))
            thread = row_to_thread((*row[:8], stamp, row[9]))
            position: int = row[10] or 0
            scope = _owner_token(tenant, row[2])
            if len(entries) == 1 and entries[0].idempotency_key is None:  # the common append
                new = entries[0]
                position += 1
                values = (tenant, thread_id, name, position, *_entry_values(new, scope))
                sql, pick = _insert_without_nulls(p, tuple(map(_is_none, values)))
                conn.execute(sql, pick(values))
                self._fts_added(conn, 1)
                return AppendResult([_stored(new, thread_id, name, position)], thread)
            existing: dict[str, Entry] = {}
            keys = [e.idempotency_key for e in entries if e.idempotency_key is not None]
            if keys:
                marks = ", ".join("?" * len(keys))
                rows = conn.execute(
                    f"SELECT {ENTRY_COLUMNS}, fingerprint FROM {p}entries WHERE tenant_id = ?"
                    f" AND thread_id = ? AND branch = ? AND idempotency_key IN ({marks})",
                    (tenant, thread_id, name, *keys),
                ).fetchall()
                existing = {r[13]: row_to_entry(r[:14]) for r in rows}
                prints = {r[13]: r[14] for r in rows}
                for new in entries:  # before any write: a reused key writes nothing
                    if new.idempotency_key in prints and clash(
                        prints[new.idempotency_key], new.fingerprint
                    ):
                        raise key_reused(new.idempotency_key)
            stored: list[Entry] = []
            params: list[tuple[Any, ...]] = []
            for new in entries:
                if new.idempotency_key is not None and new.idempotency_key in existing:
                    stored.append(existing[new.idempotency_key])
                    continue
                position += 1
                entry = _stored(new, thread_id, name, position)
                if new.idempotency_key is not None:
                    existing[new.idempotency_key] = entry
                stored.append(entry)
                params.append((tenant, thread_id, name, position, *_entry_values(new, scope)))
            if params:
                conn.executemany(self._append_insert, params)
                self._fts_added(conn, len(params))
            return AppendResult(stored, thread)

        return await self._run(lambda: self._write(op))

    async def list_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> tuple[Thread, list[Entry]]:
            thread = self._require_thread(conn, tenant, thread_id)
            name = thread.current_branch if branch is None else branch
            sql = (
                f"SELECT {PAGE_COLUMNS} FROM {p}entries"
                " WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
            )
            params: list[Any] = [tenant, thread_id, name]
            if before is not None:
                sql += " AND created_at < ?"
                params.append(to_us(before))
            if after is not None:
                sql += " AND created_at > ?"
                params.append(to_us(after))
            sql += " ORDER BY position DESC LIMIT ? OFFSET ?"
            params += [-1 if limit is None else limit, offset]
            rows = [page_row_to_entry(r, thread_id, name) for r in conn.execute(sql, params)]
            if not newest_first:
                rows.reverse()
            return thread, rows

        return await self._run(lambda: self._read(op))

    async def recent_messages(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        p = self.prefix
        # One statement for the thread and its page: an empty thread gives one row of
        # NULL entry columns, an absent one none.
        sql = (
            f"SELECT t.user_id, e.role, e.content, e.name, e.tool_calls, e.tool_call_id"
            f" FROM {p}threads t LEFT JOIN {p}entries e ON e.tenant_id = t.tenant_id"
            " AND e.thread_id = t.id AND e.branch = t.current_branch"
            " WHERE t.tenant_id = ? AND t.id = ? ORDER BY e.position DESC LIMIT ?"
        )

        def op(conn: sqlite3.Connection) -> tuple[str | None, list[dict[str, Any]]]:
            rows = conn.execute(sql, (tenant, thread_id, max(limit, 1))).fetchall()
            if not rows:
                raise NotFound(f"thread {thread_id!r} not found")
            owner = rows[0][0]
            if limit == 0 or rows[0][1] is None:  # no entry (role is never NULL)
                return owner, []
            rows.reverse()
            return owner, messages_of_rows([r[1:] for r in rows])

        return await self._run(lambda: self._read(op))

    def _entry(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        thread_id: str,
        entry_id: str,
        branch: str | None,
    ) -> tuple[str, Entry | None]:
        thread = self._get_thread(conn, tenant, thread_id)
        if thread is None:
            return "", None
        name = thread.current_branch if branch is None else branch
        row = conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM {self.prefix}entries"
            " WHERE tenant_id = ? AND thread_id = ? AND branch = ? AND id = ?",
            (tenant, thread_id, name, entry_id),
        ).fetchone()
        return name, None if row is None else row_to_entry(row)

    async def get_entry(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        return await self._run(
            lambda: self._read(lambda c: self._entry(c, tenant, thread_id, entry_id, branch)[1])
        )

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        wanted = list(dict.fromkeys(entry_ids))

        def op(conn: sqlite3.Connection) -> dict[str, Entry]:
            thread = self._get_thread(conn, tenant, thread_id)
            if thread is None or not wanted:
                return {}
            name = thread.current_branch if branch is None else branch
            found: dict[str, Entry] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                for row in conn.execute(
                    f"SELECT {ENTRY_COLUMNS} FROM {self.prefix}entries"
                    " WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
                    f" AND id IN ({', '.join('?' * len(chunk))})",
                    (tenant, thread_id, name, *chunk),
                ):
                    entry = row_to_entry(row)
                    found[entry.id] = entry
            return {eid: found[eid] for eid in wanted if eid in found}

        return await self._run(lambda: self._read(op))

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        wanted = list(dict.fromkeys(thread_ids))

        def op(conn: sqlite3.Connection) -> dict[str, Thread]:
            found: dict[str, Thread] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                for row in conn.execute(
                    f"SELECT {THREAD_COLUMNS} FROM {self.prefix}threads WHERE tenant_id = ?"
                    f" AND id IN ({', '.join('?' * len(chunk))})",
                    (tenant, *chunk),
                ):
                    thread = row_to_thread(row)
                    found[thread.id] = thread
            return {tid: found[tid] for tid in wanted if tid in found}

        return await self._run(lambda: self._read(op)) if wanted else {}

    async def entry_get_across(
        self, tenant: str, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], Entry]:
        """One read: a statement per thread inside it (an embedded store pays per hop)."""
        asked = {tid: list(dict.fromkeys(ids)) for tid, ids in wanted.items() if ids}

        def op(conn: sqlite3.Connection) -> dict[tuple[str, str], Entry]:
            found: dict[tuple[str, str], Entry] = {}
            for thread_id, ids in asked.items():
                thread = self._get_thread(conn, tenant, thread_id)
                if thread is None:
                    continue
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    for row in conn.execute(
                        f"SELECT {ENTRY_COLUMNS} FROM {self.prefix}entries"
                        " WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
                        f" AND id IN ({', '.join('?' * len(chunk))})",
                        (tenant, thread_id, thread.current_branch, *chunk),
                    ):
                        entry = row_to_entry(row)
                        found[(thread_id, entry.id)] = entry
            return found

        return await self._run(lambda: self._read(op)) if asked else {}

    async def count_entries_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(thread_ids))

        def op(conn: sqlite3.Connection) -> dict[str, int]:
            counts: dict[str, int] = {}
            for thread_id in wanted:
                thread = self._get_thread(conn, tenant, thread_id)
                if thread is not None:
                    counts[thread_id] = conn.execute(
                        f"SELECT count(*) FROM {self.prefix}entries"
                        " WHERE tenant_id = ? AND thread_id = ? AND branch = ?",
                        (tenant, thread_id, thread.current_branch),
                    ).fetchone()[0]
            return counts

        return await self._run(lambda: self._read(op)) if wanted else {}

    async def entry_windows(
        self, tenant: str, windows: Sequence[tuple[str, int, int]]
    ) -> list[list[Entry]]:
        """One read: each window is a range of the position index."""
        asked = list(windows)

        def op(conn: sqlite3.Connection) -> list[list[Entry]]:
            branches: dict[str, str | None] = {}
            out: list[list[Entry]] = []
            for thread_id, first, last in asked:
                if thread_id not in branches:
                    thread = self._get_thread(conn, tenant, thread_id)
                    branches[thread_id] = None if thread is None else thread.current_branch
                branch = branches[thread_id]
                if branch is None:
                    out.append([])
                    continue
                out.append(
                    [
                        row_to_entry(row)
                        for row in conn.execute(
                            f"SELECT {ENTRY_COLUMNS} FROM {self.prefix}entries"
                            " WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
                            " AND position BETWEEN ? AND ? ORDER BY position",
                            (tenant, thread_id, branch, first, last),
                        )
                    ]
                )
            return out

        return await self._run(lambda: self._read(op)) if asked else []

    def _drop_entry_vectors(
        self, conn: sqlite3.Connection, tenant: str, thread_id: str, entry_ids: Sequence[str]
    ) -> None:
        """Delete the vectors of these deleted entries that no branch of the thread holds.

        A forked branch copies entries with their ids, and a vector is keyed by the
        entry id: it goes with the last copy. Each id is checked on each branch
        through ``entries_id`` (a primary-key-like lookup, not a scan of the thread).
        """
        if not entry_ids:
            return
        p = self.prefix
        branches = [
            r[0]
            for r in conn.execute(
                f"SELECT name FROM {p}branches WHERE tenant_id = ? AND thread_id = ?",
                (tenant, thread_id),
            )
        ]
        held = f"SELECT 1 FROM {p}entries e WHERE e.tenant_id = ? AND e.thread_id = ?"
        held += f" AND e.branch = ? AND e.id = {p}vectors.id"
        copies = " OR ".join(f"EXISTS ({held})" for _ in branches) or "0"
        copy_params = [x for name in branches for x in (tenant, thread_id, name)]
        for chunk in _chunks(list(dict.fromkeys(entry_ids))):
            marks = ", ".join("?" * len(chunk))
            conn.execute(
                f"DELETE FROM {p}vectors WHERE tenant_id = ? AND kind = 'entry'"
                f" AND id IN ({marks}) AND thread_id = ? AND NOT ({copies})",
                (tenant, *chunk, thread_id, *copy_params),
            )

    def _branch_of(
        self, conn: sqlite3.Connection, tenant: str, thread_id: str, branch: str | None
    ) -> str:
        thread = self._require_thread(conn, tenant, thread_id)
        return thread.current_branch if branch is None else branch

    async def delete_entries(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        ids = list(entry_ids)

        def op(conn: sqlite3.Connection) -> int:
            name = self._branch_of(conn, tenant, thread_id, branch)
            if not ids:
                return 0
            removed = 0
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ", ".join("?" * len(chunk))
                removed += conn.execute(
                    f"DELETE FROM {self.prefix}entries WHERE tenant_id = ? AND thread_id = ?"
                    f" AND branch = ? AND id IN ({marks})",
                    (tenant, thread_id, name, *chunk),
                ).rowcount
            if removed:
                self._drop_entry_vectors(conn, tenant, thread_id, ids)
            return removed

        return await self._run(lambda: self._write(op))

    async def truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        def op(conn: sqlite3.Connection) -> int:
            name, entry = self._entry(conn, tenant, thread_id, entry_id, branch)
            if entry is None:
                self._require_thread(conn, tenant, thread_id)
                raise NotFound(f"entry {entry_id!r} not found on this branch")
            where = (
                f"FROM {self.prefix}entries WHERE tenant_id = ? AND thread_id = ?"
                " AND branch = ? AND position > ?"
            )
            params = (tenant, thread_id, name, entry.position)
            gone = [r[0] for r in conn.execute(f"SELECT id {where}", params)]
            cursor = conn.execute(f"DELETE {where}", params)
            self._drop_entry_vectors(conn, tenant, thread_id, gone)
            return cursor.rowcount

        return await self._run(lambda: self._write(op))

    async def clear_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        def op(conn: sqlite3.Connection) -> int:
            name = self._branch_of(conn, tenant, thread_id, branch)
            where = f"FROM {self.prefix}entries WHERE tenant_id = ? AND thread_id = ?"
            where += " AND branch = ?"
            params = (tenant, thread_id, name)
            gone = [r[0] for r in conn.execute(f"SELECT id {where}", params)]
            cursor = conn.execute(f"DELETE {where}", params)
            self._drop_entry_vectors(conn, tenant, thread_id, gone)
            return cursor.rowcount

        return await self._run(lambda: self._write(op))

    async def count_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        def op(conn: sqlite3.Connection) -> int:
            name = self._branch_of(conn, tenant, thread_id, branch)
            row = conn.execute(
                f"SELECT COUNT(*) FROM {self.prefix}entries"
                " WHERE tenant_id = ? AND thread_id = ? AND branch = ?",
                (tenant, thread_id, name),
            ).fetchone()
            return int(row[0])

        return await self._run(lambda: self._read(op))

    # -- branches ------------------------------------------------------------------

    async def create_branch(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> Branch:
            self._require_thread(conn, tenant, thread_id)
            if not self._has_branch(conn, tenant, thread_id, from_branch):
                raise NotFound(f"branch {from_branch!r} not found")
            if self._has_branch(conn, tenant, thread_id, name):
                raise Conflict(f"branch {name!r} already exists")
            upto: int | None = None
            if from_entry is not None:
                _, entry = self._entry(conn, tenant, thread_id, from_entry, from_branch)
                if entry is None:
                    raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
                upto = entry.position
            conn.execute(
                f"INSERT INTO {p}branches (tenant_id, thread_id, name, created_at, from_branch,"
                " from_entry) VALUES (?, ?, ?, ?, ?, ?)",
                (tenant, thread_id, name, to_us(created_at), from_branch, from_entry),
            )
            conn.execute(
                f"INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role,"
                " content, name, tool_calls, tool_call_id, metadata, state, token_count,"
                " created_at, idempotency_key, fingerprint)"
                " SELECT tenant_id, thread_id, ?, position, id, role, content, name, tool_calls,"
                " tool_call_id, metadata, state, token_count, created_at, idempotency_key,"
                f" fingerprint FROM {p}entries WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
                " AND position <= ?",
                (name, tenant, thread_id, from_branch, upto if upto is not None else 2**62),
            )
            return Branch(name, thread_id, created_at, from_branch, from_entry)

        return await self._run(lambda: self._write(op))

    async def list_branches(self, tenant: str, thread_id: str) -> list[Branch]:
        def op(conn: sqlite3.Connection) -> list[Branch]:
            self._require_thread(conn, tenant, thread_id)
            rows = conn.execute(
                f"SELECT name, thread_id, created_at, from_branch, from_entry"
                f" FROM {self.prefix}branches WHERE tenant_id = ? AND thread_id = ?"
                " ORDER BY created_at, name",
                (tenant, thread_id),
            ).fetchall()
            return [row_to_branch(r) for r in rows]

        return await self._run(lambda: self._read(op))

    async def delete_branch(self, tenant: str, thread_id: str, name: str) -> bool:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> bool:
            thread = self._require_thread(conn, tenant, thread_id)
            if name == thread.current_branch:
                raise Conflict(f"cannot delete the current branch {name!r}")
            key = (tenant, thread_id, name)
            cursor = conn.execute(
                f"DELETE FROM {p}branches WHERE tenant_id = ? AND thread_id = ? AND name = ?", key
            )
            where = f"FROM {p}entries WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
            gone = [r[0] for r in conn.execute(f"SELECT id {where}", key)]
            conn.execute(f"DELETE {where}", key)
            self._drop_entry_vectors(conn, tenant, thread_id, gone)
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))

    # -- working memory ------------------------------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT INTO {self.prefix}working (tenant_id, run_id, key, value)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, run_id, key)"
                " DO UPDATE SET value = excluded.value",
                (tenant, run_id, key, value),
            )

        await self._run(lambda: self._write(op))

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                f"SELECT value FROM {self.prefix}working"
                " WHERE tenant_id = ? AND run_id = ? AND key = ?",
                (tenant, run_id, key),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._run(lambda: self._read(op))

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                f"DELETE FROM {self.prefix}working WHERE tenant_id = ? AND run_id = ? AND key = ?",
                (tenant, run_id, key),
            )
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        def op(conn: sqlite3.Connection) -> dict[str, str]:
            rows = conn.execute(
                f"SELECT key, value FROM {self.prefix}working WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            ).fetchall()
            return {str(k): str(v) for k, v in rows}

        return await self._run(lambda: self._read(op))

    async def working_clear(self, tenant: str, run_id: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"DELETE FROM {self.prefix}working WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            )

        await self._run(lambda: self._write(op))

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        return await self._run_ids(f"{self.prefix}working", tenant, after, limit)

    async def _run_ids(
        self, table: str, tenant: str, after: str | None, limit: int | None
    ) -> list[str]:
        sql, params = run_ids_sql(table, tenant, after, limit, "?")

        def op(conn: sqlite3.Connection) -> list[str]:
            return [str(row[0]) for row in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    # -- snapshots -------------------------------------------------------------------

    def _snapshot_owner_check(
        self, conn: sqlite3.Connection, tenant: str, run_id: str, user_id: str | None
    ) -> None:
        """Inside the write transaction: ``ThreadForbidden`` if another user owns the run."""
        row = conn.execute(
            f"SELECT user_id FROM {self.prefix}snapshots WHERE tenant_id = ? AND run_id = ?",
            (tenant, run_id),
        ).fetchone()
        if row is not None and row[0] not in (None, user_id):
            raise ThreadForbidden("snapshot access forbidden")

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
        def op(conn: sqlite3.Connection) -> None:
            if owner_check:
                self._snapshot_owner_check(conn, tenant, run_id, user_id)
            conn.execute(
                f"INSERT INTO {self.prefix}snapshots (tenant_id, run_id, user_id, value, saved_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, run_id) DO UPDATE SET"
                " user_id = excluded.user_id, value = excluded.value, saved_at = excluded.saved_at",
                (tenant, run_id, user_id, value, to_us(saved_at)),
            )

        await self._run(lambda: self._write(op))

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        def op(conn: sqlite3.Connection) -> tuple[str | None, str] | None:
            row = conn.execute(
                f"SELECT user_id, value FROM {self.prefix}snapshots"
                " WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            ).fetchone()
            return None if row is None else (row[0], str(row[1]))

        return await self._run(lambda: self._read(op))

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            if owner_check:
                self._snapshot_owner_check(conn, tenant, run_id, user_id)
            cursor = conn.execute(
                f"DELETE FROM {self.prefix}snapshots WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            )
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        return await self._run_ids(f"{self.prefix}snapshots", tenant, after, limit)

    # -- summaries -------------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        def op(conn: sqlite3.Connection) -> Summary:
            conn.execute(
                f"INSERT INTO {self.prefix}summaries"
                " (tenant_id, id, agent_id, user_id, content, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    summary.id,
                    summary.agent_id,
                    summary.user_id,
                    summary.content,
                    to_us(summary.created_at),
                ),
            )
            return summary

        return await self._run(lambda: self._write(op))

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        def op(conn: sqlite3.Connection) -> list[Summary]:
            rows = conn.execute(
                f"SELECT id, agent_id, user_id, content, created_at FROM {self.prefix}summaries"
                " WHERE tenant_id = ? AND agent_id = ?"
                " AND (? OR user_id IS NULL OR user_id = ?) ORDER BY created_at, id",
                (tenant, agent_id, *any_user(user_id)),
            ).fetchall()
            return [row_to_summary(r) for r in rows]

        return await self._run(lambda: self._read(op))

    # -- erasure -----------------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> int:
            threads = [
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM {p}threads WHERE tenant_id = ? AND user_id = ?",
                    (tenant, user_id),
                ).fetchall()
            ]
            removed = 0
            for thread_id in threads:
                key = (tenant, thread_id)
                conn.execute(
                    f"DELETE FROM {p}vectors WHERE tenant_id = ? AND kind = 'entry'"
                    " AND thread_id = ?",
                    key,
                )
                removed += conn.execute(
                    f"DELETE FROM {p}entries WHERE tenant_id = ? AND thread_id = ?", key
                ).rowcount
                conn.execute(f"DELETE FROM {p}branches WHERE tenant_id = ? AND thread_id = ?", key)
                removed += conn.execute(
                    f"DELETE FROM {p}threads WHERE tenant_id = ? AND id = ?", key
                ).rowcount
            conn.execute(
                f"DELETE FROM {p}vectors WHERE tenant_id = ? AND kind != 'entry' AND id IN"
                f" (SELECT id FROM {p}records WHERE tenant_id = ? AND user_id = ?)",
                (tenant, tenant, user_id),
            )
            for table in ("snapshots", "summaries", "records"):
                removed += conn.execute(
                    f"DELETE FROM {p}{table} WHERE tenant_id = ? AND user_id = ?",
                    (tenant, user_id),
                ).rowcount
            if removed:
                # The FTS triggers only add 'delete' markers: the words stay in
                # the index's segments until they are merged into one.
                for fts in ("entries_fts", "records_fts"):
                    conn.execute(f"INSERT INTO {p}{fts} ({p}{fts}) VALUES ('optimize')")
            return removed

        def forget() -> int:
            removed = self._write(op)
            self._forget_vector_files(tenant)
            if removed and self.path != ":memory:":
                # The WAL still holds the pages as they were before: copy the
                # new ones into the database and empty it. Best effort: a
                # reader on another connection may still need old frames.
                self._read(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
            return removed

        return await self._run(forget)

    def _forget_vector_files(self, tenant: str) -> None:
        """Drop the tenant's in-process vectors and persisted ANN files (rebuilt when needed)."""
        cache = self.__dict__.get("_vector_cache")
        if cache is not None:
            for key in [key for key in cache.slots if key[0] == tenant]:
                del cache.slots[key]
        if self.path != ":memory:":
            from memorybank.stores import _vector_files

            _vector_files.remove_tenant(_vector_files.directory(self.path), self.prefix, tenant)

    async def reclaim_space(self) -> None:
        def vacuum() -> None:
            # VACUUM rewrites the file without its free pages; it cannot run in a
            # transaction, hence _read. The WAL then holds the whole rewrite:
            # truncating it returns that space too.
            self._read(lambda conn: conn.execute("VACUUM"))
            if self.path != ":memory:":
                self._read(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())

        await self._run(vacuum)

    # -- compaction ----------------------------------------------------------------------

    async def compact_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> bool:
            self._require_thread(conn, tenant, thread_id)
            key = (tenant, thread_id, branch, through_position)
            ids = [
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM {p}entries WHERE tenant_id = ? AND thread_id = ?"
                    " AND branch = ? AND position <= ? ORDER BY position",
                    key,
                ).fetchall()
            ]
            if ids != list(expected_ids):
                return False
            conn.execute(
                f"DELETE FROM {p}entries WHERE tenant_id = ? AND thread_id = ? AND branch = ?"
                " AND position <= ?",
                key,
            )
            self._drop_entry_vectors(conn, tenant, thread_id, ids)
            if summary is not None:
                conn.execute(
                    f"INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role,"
                    " content, name, tool_calls, tool_call_id, metadata, state, token_count,"
                    " created_at, idempotency_key, fingerprint)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        tenant,
                        thread_id,
                        branch,
                        through_position,
                        summary.id,
                        summary.role,
                        summary.content,
                        summary.name,
                        tool_calls_to_json(summary.tool_calls, summary.extra, summary.item),
                        summary.tool_call_id,
                        dump(summary.metadata),
                        dump(summary.state),
                        summary.token_count,
                        to_us(summary.created_at),
                        summary.idempotency_key,
                        summary.fingerprint,
                    ),
                )
            conn.execute(
                f"UPDATE {p}threads SET updated_at = ? WHERE tenant_id = ? AND id = ?",
                (to_us(updated_at), tenant, thread_id),
            )
            return True

        return await self._run(lambda: self._write(op))

    async def update_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        def op(conn: sqlite3.Connection) -> int:
            self._require_thread(conn, tenant, thread_id)
            changed = 0
            for entry_id, content, state, tokens in changes:
                changed += conn.execute(
                    f"UPDATE {self.prefix}entries SET content = ?, state = ?, token_count = ?"
                    " WHERE tenant_id = ? AND thread_id = ? AND branch = ? AND id = ?",
                    (content, dump(state), tokens, tenant, thread_id, branch, entry_id),
                ).rowcount
            return changed

        return await self._run(lambda: self._write(op))

    # -- records ---------------------------------------------------------------------------

    def _check_guard(
        self, conn: sqlite3.Connection, tenant: str, guard: RecordGuard | None
    ) -> None:
        """Inside the write transaction (``BEGIN IMMEDIATE``: no other writer meanwhile)."""
        if guard is None:
            return
        row = conn.execute(
            f"SELECT revision FROM {self.prefix}records"
            " WHERE tenant_id = ? AND kind = ? AND id = ?",
            (tenant, guard.kind, guard.id),
        ).fetchone()
        if (None if row is None else row[0]) != guard.revision:
            raise guard.failed()

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        rows = [
            (
                tenant,
                r.kind,
                r.id,
                r.agent_id,
                r.user_id,
                r.key,
                r.content,
                dump(r.data),
                to_us(r.created_at),
                to_us(r.updated_at),
                None if r.expires_at is None else to_us(r.expires_at),
                r.revision,
            )
            for r in records
        ]

        def op(conn: sqlite3.Connection) -> None:
            self._check_guard(conn, tenant, guard)
            conn.executemany(
                f"INSERT INTO {self.prefix}records (tenant_id, kind, id, agent_id, user_id, key,"
                " content, data, created_at, updated_at, expires_at, revision)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (tenant_id, kind, id) DO UPDATE SET agent_id = excluded.agent_id,"
                " user_id = excluded.user_id, key = excluded.key, content = excluded.content,"
                " data = excluded.data, created_at = excluded.created_at,"
                " updated_at = excluded.updated_at, expires_at = excluded.expires_at,"
                " revision = excluded.revision",
                rows,
            )

        await self._run(lambda: self._write(op))

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        def op(conn: sqlite3.Connection) -> Record | None:
            row = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records"
                " WHERE tenant_id = ? AND kind = ? AND id = ?",
                (tenant, kind, record_id),
            ).fetchone()
            return None if row is None else row_to_record(row)

        return await self._run(lambda: self._read(op))

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        ids = list(dict.fromkeys(record_ids))

        def op(conn: sqlite3.Connection) -> int:
            self._check_guard(conn, tenant, guard)
            if not ids:
                return 0
            marks = ", ".join("?" * len(ids))
            conn.execute(
                f"DELETE FROM {self.prefix}vectors WHERE tenant_id = ? AND kind = ?"
                f" AND id IN ({marks})",
                (tenant, kind, *ids),
            )
            return conn.execute(
                f"DELETE FROM {self.prefix}records WHERE tenant_id = ? AND kind = ?"
                f" AND id IN ({marks})",
                (tenant, kind, *ids),
            ).rowcount

        return await self._run(lambda: self._write(op))

    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        where = ["tenant_id = ?", "kind = ?"]
        params: list[Any] = [tenant, kind]
        for column, value in (("agent_id", agent_id), ("user_id", user_id), ("key", key)):
            if not isinstance(value, Unset):
                where.append(f"{column} IS ?")
                params.append(value)
        scope, scope_params = scope_sql("", visible_to, "?")
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records WHERE {' AND '.join(where)}"
            f"{scope} ORDER BY created_at, id LIMIT ?"
        )
        params += [*scope_params, -1 if limit is None else limit]

        def op(conn: sqlite3.Connection) -> list[Record]:
            return [row_to_record(r) for r in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """One read: ``IN`` lists of ``_IN_CHUNK`` ids (under SQLite's variable limit)."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records"
            " WHERE tenant_id = ? AND kind = ? AND id IN ({marks})"
        )

        def op(conn: sqlite3.Connection) -> dict[str, Record]:
            found: dict[str, Record] = {}
            for chunk in _chunks(ids):
                query = sql.format(marks=", ".join("?" * len(chunk)))
                for row in conn.execute(query, (tenant, kind, *chunk)):
                    found[row[1]] = row_to_record(row)
            return {i: found[i] for i in ids if i in found}

        return await self._run(lambda: self._read(op))

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One read over the ``records_key`` index, ``_IN_CHUNK`` keys per statement."""
        return await self._list_keys(tenant, [kind], keys, visible_to)

    async def record_list_keys_by_kind(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, list[Record]]:
        """One read for every kind (``kind IN (...)`` on the same index)."""
        wanted = list(dict.fromkeys(kinds))
        return by_kind(wanted, await self._list_keys(tenant, wanted, keys, visible_to))

    async def _list_keys(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        visible_to: Visibility | None,
    ) -> list[Record]:
        wanted = list(dict.fromkeys(keys))
        if not wanted or not kinds:
            return []
        scope, scope_params = scope_sql("", visible_to, "?")
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records WHERE tenant_id = ?"
            f" AND kind IN ({', '.join('?' * len(kinds))}) AND key IN ({{marks}})" + scope
        )

        def op(conn: sqlite3.Connection) -> list[Record]:
            rows: list[Any] = []
            for chunk in _chunks(wanted):
                query = sql.format(marks=", ".join("?" * len(chunk)))
                rows += conn.execute(query, (tenant, *kinds, *chunk, *scope_params)).fetchall()
            rows.sort(key=lambda row: (row[6], row[1]))  # created_at (µs), id: as SQL sorts
            return [row_to_record(row) for row in rows]

        return await self._run(lambda: self._read(op))

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """A range of the ``records_created`` index from the cursor (a row-value bound)."""
        scope, scope_params = scope_sql("", visible_to, "?")
        params: list[Any] = [tenant, kind]
        where = "tenant_id = ? AND kind = ?"
        if after is not None:
            where += " AND (created_at, id) > (?, ?)"
            params += [to_us(after[0]), after[1]]
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records INDEXED BY"
            f" {self.prefix}records_created WHERE {where}{scope} ORDER BY created_at, id LIMIT ?"
        )
        params += [*scope_params, limit]

        def op(conn: sqlite3.Connection) -> list[Record]:
            return [row_to_record(r) for r in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    # -- search ----------------------------------------------------------------------------

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        from memorybank.stores._items import SearchHit  # not at import: cold start

        p = self.prefix
        match = fts_query(query)

        def owner_tokens(conn: sqlite3.Connection) -> list[str] | None:
            """The owner tokens the hits can carry (``fts_scope``), or None for any."""
            if thread_id is not None:
                row = conn.execute(
                    f"SELECT user_id FROM {p}threads WHERE tenant_id = ? AND id = ?",
                    (tenant, thread_id),
                ).fetchone()
                return None if row is None else [_scope_token(tenant, row[0])]
            if visible_to is None or isinstance(visible_to.user_id, Unset):
                return None
            if visible_to.user_id is None:
                return [_SHARED_TOKEN]
            return [_scope_token(tenant, visible_to.user_id), _SHARED_TOKEN]

        def entry_hits(conn: sqlite3.Connection, fts: str, scoped: bool) -> list[SearchHit]:
            """Hits of the entries index ``fts``; ``scoped``: it has the owner column."""
            tokens = owner_tokens(conn) if scoped else None
            rank = f"bm25({fts}, 1.0, 0.0)" if scoped else f"bm25({fts})"
            sql = (
                f"SELECT e.id, e.thread_id, e.branch, -{rank}"
                f" FROM {fts} JOIN {p}entries e ON e.rowid = {fts}.rowid"
                f" JOIN {p}threads t ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                f" WHERE {fts} MATCH ? AND e.tenant_id = ?"
            )
            owners = " OR ".join(f'"{token}"' for token in tokens or ())
            # The owner clause only narrows what FTS5 walks; the scope check below decides.
            query = f"content : ({match}) AND fts_scope : ({owners})" if owners else match
            params: list[Any] = [query, tenant]
            if thread_id is not None:
                sql += " AND e.thread_id = ?"
                params.append(thread_id)
            scope, scope_params = scope_sql("t.", visible_to, "?")
            sql += scope
            params += scope_params
            sql += f" ORDER BY {rank} LIMIT ?"
            params.append(k)
            return [
                SearchHit("entry", r[0], float(r[3]), r[1], r[2])
                for r in conn.execute(sql, params).fetchall()
            ]

        def tail_hits(conn: sqlite3.Connection) -> list[SearchHit]:
            """A read-only file's entries above the mark, searched in a temporary index
            (their scores come from that small index: the order among them is exact)."""
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{p}tail_fts USING fts5("
                " content, tokenize='porter unicode61 remove_diacritics 2')"
            )
            conn.execute(f"DELETE FROM temp.{p}tail_fts")
            conn.execute(
                f"INSERT INTO temp.{p}tail_fts (rowid, content) SELECT rowid, content"
                f" FROM {p}entries WHERE content IS NOT NULL AND rowid >"
                f" (SELECT indexed FROM {p}fts_state WHERE name = 'entries')"
            )
            return entry_hits(conn, f"{p}tail_fts", False)  # the temp schema is searched first

        complete = True

        def op(conn: sqlite3.Connection) -> list[SearchHit]:
            if not match or k <= 0:
                return []
            hits: list[SearchHit] = []
            if "entry" in kinds:
                hits += entry_hits(conn, f"{p}entries_fts", True)
                if not complete:
                    hits += tail_hits(conn)
            record_kinds = [kind for kind in kinds if kind != "entry"]
            if record_kinds and thread_id is None:
                marks = ", ".join("?" * len(record_kinds))
                sql = (
                    f"SELECT r.kind, r.id, -bm25({p}records_fts)"
                    f" FROM {p}records_fts JOIN {p}records r ON r.rowid = {p}records_fts.rowid"
                    f" WHERE {p}records_fts MATCH ? AND r.tenant_id = ? AND r.kind IN ({marks})"
                )
                params: list[Any] = [match, tenant, *record_kinds]
                scope, scope_params = scope_sql("r.", visible_to, "?")
                sql += scope
                params += scope_params
                sql += f" ORDER BY bm25({p}records_fts) LIMIT ?"
                params.append(k)
                hits += [
                    SearchHit(r[0], r[1], float(r[2])) for r in conn.execute(sql, params).fetchall()
                ]
            hits.sort(key=lambda h: (-h.score, h.kind, h.id, h.branch or ""))
            return hits[:k]

        def search() -> list[SearchHit]:
            nonlocal complete
            if match and k > 0 and "entry" in kinds:
                complete = self._fts_catch_up()
            return self._read(op)

        return await self._run(search)

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        latest = {(i.kind, i.id, i.model_id): i for i in items}  # the last one of a key wins
        rows = [
            (tenant, i.kind, i.id, i.model_id, i.thread_id, unit_vector_bytes(i.vector))
            for i in latest.values()
        ]

        def op(conn: sqlite3.Connection) -> None:
            # Replace = delete + insert, so a changed vector gets a new rowid: the
            # in-process vector caches detect changes by rowids and counts.
            conn.executemany(
                f"DELETE FROM {self.prefix}vectors WHERE tenant_id = ? AND kind = ? AND id = ?"
                " AND model_id = ?",
                [r[:4] for r in rows],
            )
            conn.executemany(
                f"INSERT INTO {self.prefix}vectors (tenant_id, kind, id, model_id, thread_id,"
                " vector) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

        await self._run(lambda: self._write(op))

    def _vector_sql(
        self, kind: str, thread_id: str | None, visible_to: Visibility | None
    ) -> tuple[str, list[Any]]:
        """The id-producing scoped query of one kind (without tenant/model parameters)."""
        p = self.prefix
        params: list[Any] = []
        if kind == "entry":
            sql = (
                f"SELECT v.id FROM {p}vectors v"
                f" JOIN {p}threads t ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
                " WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = 'entry'"
            )
            if thread_id is not None:
                sql += " AND v.thread_id = ?"
                params.append(thread_id)
            owner = "t"
        else:
            sql = (
                f"SELECT v.id FROM {p}vectors v"
                f" JOIN {p}records r ON r.tenant_id = v.tenant_id AND r.kind = v.kind"
                " AND r.id = v.id WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = ?"
            )
            params.append(kind)
            owner = "r"
        scope, scope_params = scope_sql(owner + ".", visible_to, "?")
        return sql + scope, params + scope_params

    def _vector_rows(
        self, conn: sqlite3.Connection, tenant: str, model_id: str, kind: str, after: int
    ) -> CachedRows:
        p = self.prefix
        if kind == "entry":
            sql = (
                f"SELECT v.rowid, v.id, v.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL,"
                f" v.vector FROM {p}vectors v LEFT JOIN {p}threads t"
                " ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
                " WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = ? AND v.rowid > ?"
            )
        else:
            sql = (
                f"SELECT v.rowid, v.id, NULL, r.agent_id, r.user_id, r.id IS NOT NULL,"
                f" v.vector FROM {p}vectors v LEFT JOIN {p}records r"
                " ON r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
                " WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = ? AND v.rowid > ?"
            )
        params = (tenant, model_id, kind, after)
        if after > 0:
            # the rows above a rowid (only ever new ones: AUTOINCREMENT) as one range of
            # the table, not a walk of the key's whole index range
            sql = sql.replace(
                "WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = ?",
                "WHERE +v.tenant_id = ? AND +v.model_id = ? AND +v.kind = ?",
            )
        from memorybank.stores._vectors import CachedRows

        found = conn.execute(sql + " ORDER BY v.rowid", params).fetchall()
        rows = CachedRows()
        if found:
            rowids, ids, threads, agents, users, alive, blobs = map(list, zip(*found, strict=True))
            rows = CachedRows(rowids, ids, threads, agents, users, [bool(a) for a in alive], blobs)
        return rows

    def _vector_slot(
        self, conn: sqlite3.Connection, tenant: str, model_id: str, kind: str, dim: int
    ) -> VectorSlot:
        """The cached vectors of (tenant, model, kind), brought up to date.

        Unchanged database (same ``PRAGMA data_version`` and connection change
        count): used as is. Otherwise, in one snapshot, an indexed
        ``count``/``max(rowid)`` read, the key's deletions logged since the
        slot's log sequence (``vector_deletes``) and the rows above its max
        rowid bring it up to date incrementally: deleted rows are marked dead
        (``VectorSlot.forget``: out of every search and of the HNSW index) and
        new rows appended. Rowids are AUTOINCREMENT (never reused, new ones above
        every older one) and ``vector_put`` gives every written vector a new
        rowid, so a replaced vector is a logged deletion plus a new row. The slot
        is reloaded instead when it cannot catch up: the log no longer holds
        every deletion since its sequence (pruned), rows were updated in place
        (``vector_changes``), the counts disagree, or a quarter of its rows are
        dead (the reload compacts them away; the HNSW index is reused, checked
        row by row).
        """
        from memorybank.stores._vectors import VectorCache, VectorSlot

        cache: VectorCache = self.__dict__.setdefault("_vector_cache", VectorCache())
        key = (tenant, model_id, kind)
        slot = cache.slots.get(key)
        stamp = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        if slot is not None and slot.dim == dim and slot.stamp == stamp:
            return slot
        p = self.prefix
        conn.execute("BEGIN")  # one snapshot for the checks and the reads
        try:
            (count,) = conn.execute(
                f"SELECT count(*) FROM {p}vectors"
                " WHERE tenant_id = ? AND model_id = ? AND kind = ?",
                key,
            ).fetchone()
            row = conn.execute(
                f"SELECT deletes FROM {p}vector_changes"
                " WHERE tenant_id = ? AND model_id = ? AND kind = ?",
                key,
            ).fetchone()
            updates = 0 if row is None else int(row[0])
            log_min, log_top = conn.execute(
                f"SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) FROM {p}vector_deletes"
            ).fetchone()
            if (
                slot is not None
                and slot.dim == dim
                and slot.deletes == updates
                and slot.log_seq is not None
                and (log_min == 0 or log_min <= slot.log_seq + 1)
            ):
                gone = self._vector_deleted(conn, key, slot.log_seq, slot.max_rowid)
                added = self._vector_rows(conn, tenant, model_id, kind, slot.max_rowid)
                if slot.count - len(gone) + len(added.rowids) == count:
                    slot.forget(gone)
                    slot.append(added)
                    slot.count, slot.stamp, slot.log_seq = count, stamp, log_top
                    if slot.dead * 4 < max(slot.n, 1):
                        return slot
            old = slot if slot is not None and slot.dim == dim else None
            slot = None
            if old is None:
                slot = self._vector_slot_from_files(
                    conn, key, dim, count, updates, (log_min, log_top)
                )
            if slot is None:
                slot = VectorSlot(dim)
                slot.append(self._vector_rows(conn, tenant, model_id, kind, 0))
                if old is not None and old.has_ann():
                    # the index of the earlier rows, checked row by row when next used
                    index = old.ann_index()  # its builder stopped first
                    rows = old.ann_rows()
                    live = old.alive[:rows]
                    slot.inherit_ann(index, old.rowids[:rows][live], old.matrix[:rows][live])
            slot.count, slot.stamp, slot.deletes, slot.log_seq = count, stamp, updates, log_top
            cache.slots[key] = slot
            return slot
        finally:
            conn.execute("COMMIT")

    def _vector_deleted(
        self, conn: sqlite3.Connection, key: tuple[str, str, str], after: int, upto: int
    ) -> list[int]:
        """Rowids (at most ``upto``) of the key's vectors deleted after log sequence ``after``."""
        return [
            r[0]
            for r in conn.execute(
                f"SELECT deleted FROM {self.prefix}vector_deletes"
                " WHERE tenant_id = ? AND model_id = ? AND kind = ? AND seq > ? AND deleted <= ?",
                (*key, after, upto),
            )
        ]

    def _vector_slot_from_files(
        self,
        conn: sqlite3.Connection,
        key: tuple[str, str, str],
        dim: int,
        count: int,
        updates: int,
        log: tuple[int, int],
    ) -> VectorSlot | None:
        """The slot with the ANN index and vectors persisted by an earlier process, or None.

        Used only when the files pass their own checks (``_vector_files.load``).
        If the database's update count for the key is the one the files
        recorded, the deletion log still holds every deletion since the files'
        log sequence (``log``: the log's lowest and highest sequence now), and
        once the rows deleted since are dropped the rowids and ids up to their
        max rowid are the ones they hold, the vectors are read from the files and
        only later rows from the database; otherwise every row is read from the
        database and the index is checked row by row against it
        (``VectorSlot.inherit_ann``). The scope of every row always comes from
        the database.
        """
        import numpy as np

        from memorybank.stores import _vector_files, _vectors

        if self.path == ":memory:" or count < _vectors.ANN_THRESHOLD:
            return None
        if not _vectors.ann_available():
            return None
        tenant, model_id, kind = key
        found = _vector_files.load(
            _vector_files.directory(self.path), self.prefix, tenant, model_id, kind, dim
        )
        if found is None:
            return None
        slot = _vectors.VectorSlot(dim)
        log_min, _ = log
        if (
            found.deletes == updates
            and found.log_seq is not None
            and (log_min == 0 or log_min <= found.log_seq + 1)
        ):
            gone = self._vector_deleted(conn, key, found.log_seq, found.max_rowid)
            index, rowids, vectors, ids = found.index, found.rowids, found.vectors, found.ids
            if gone:
                keep = ~np.isin(rowids, np.asarray(gone, dtype=np.int64))
                dropped = rowids[~keep]
                if len(dropped):
                    index = slot.drop_keys(index, dropped)
                rowids, vectors = rowids[keep], vectors[keep]
                ids = [i for i, k in zip(ids, keep.tolist(), strict=True) if k]
            known = self._vector_scopes(conn, key, found.max_rowid, ids)
            if known is not None and np.array_equal(known.rowids, rowids):
                slot.append_scoped(known, ids, vectors)
                slot.set_ann(index, slot.n, "loaded")
                slot.saved_rows = slot.n
                slot.dead_since_save = len(found.rowids) - len(rowids)
                slot.append(self._vector_rows(conn, tenant, model_id, kind, found.max_rowid))
                return slot
            if gone:  # the index lost keys above: let inherit_ann see only what it holds
                found.rowids, found.vectors = rowids, vectors
        slot.append(self._vector_rows(conn, tenant, model_id, kind, 0))
        slot.inherit_ann(found.index, found.rowids, found.vectors)
        return slot

    def _vector_scopes(
        self, conn: sqlite3.Connection, key: tuple[str, str, str], upto: int, ids: list[str]
    ) -> ScopedRows | None:
        """Rows up to rowid ``upto`` with the ``ids`` persisted for them, scoped from the database.

        Rowids and thread ids come from the ``vectors_model`` index alone (no
        vector is read), entries' as one row per thread (its rowids joined in
        SQL), so a load costs no Python object per row; agent, user and
        liveness from the owning threads (one lookup per thread) or records.
        None when the row count differs from ``ids``.
        """
        import numpy as np

        from memorybank.stores._vectors import ScopedRows

        p = self.prefix
        tenant, _, kind = key
        rows = f"{p}vectors INDEXED BY {p}vectors_model"
        where = "WHERE tenant_id = ? AND model_id = ? AND kind = ? AND rowid <= ?"
        if kind == "entry":
            found = conn.execute(
                f"SELECT g.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL, g.n, g.rowids"
                f" FROM (SELECT thread_id, count(*) AS n, group_concat(rowid) AS rowids"
                f" FROM {rows} {where} GROUP BY thread_id) g"
                f" LEFT JOIN {p}threads t ON t.tenant_id = ? AND t.id = g.thread_id",
                (*key, upto, tenant),
            ).fetchall()
            counts = np.asarray([r[4] for r in found], dtype=np.int64)
            if int(counts.sum()) != len(ids):
                return None
            text = ",".join(r[5] for r in found)
            rowids = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)
            if len(rowids) != len(ids):
                return None
            groups = [(r[0], r[1], r[2], bool(r[3])) for r in found]
            group_of = np.repeat(np.arange(len(found), dtype=np.intp), counts)
            order = np.argsort(rowids, kind="stable")
            return ScopedRows(rowids[order], group_of[order], groups)
        found = conn.execute(f"SELECT rowid FROM {rows} {where}", (*key, upto)).fetchall()
        listed = sorted(r[0] for r in found)
        if len(listed) != len(ids):
            return None
        owners = {
            r[0]: (r[1], r[2])
            for r in conn.execute(
                f"SELECT id, agent_id, user_id FROM {p}records WHERE tenant_id = ? AND kind = ?",
                (tenant, kind),
            )
        }
        numbered: dict[tuple[str | None, str | None, str | None, bool], int] = {}
        nobody = (None, None)
        of = [
            numbered.setdefault((None, *owners.get(i, nobody), i in owners), len(numbered))
            for i in ids
        ]
        return ScopedRows(
            np.asarray(listed, dtype=np.int64), np.asarray(of, dtype=np.intp), list(numbered)
        )

    def _vector_save(
        self, key: tuple[str, str, str], slot: VectorSlot, *, final: bool = False
    ) -> None:
        """Persist the slot's ANN index when it grew enough since the files (or ``final``).

        Called by the slot's builder thread when it has built or extended the
        index, and by ``close`` once the builders are stopped: never while the
        index is being written to.
        """
        if self.path == ":memory:" or not slot.has_ann() or slot.deletes is None:
            return
        from memorybank.stores import _vector_files

        rows = slot.ann_rows()
        saved = slot.saved_rows
        if saved is not None:
            # rows forgotten since count as change too: the files still hold them
            grown = rows - saved + slot.dead_since_save
            due = max(_vector_files.SAVE_AFTER_ROWS, int(saved * _vector_files.SAVE_AFTER_SHARE))
            if grown <= 0 or (not final and grown < due):
                return
        slot.saved_rows = rows  # also on failure: not retried on every search
        slot.dead_since_save = 0
        live = slot.alive[:rows]  # the index holds exactly the live rows of [0, rows)
        _vector_files.save(
            _vector_files.directory(self.path),
            self.prefix,
            *key,
            slot.ann_index(),
            slot.matrix[:rows][live],
            slot.rowids[:rows][live],
            [i for i, keep in zip(slot.ids[:rows], live.tolist(), strict=True) if keep],
            slot.deletes,
            slot.log_seq,
        )

    async def vector_search(
        self,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:

        from memorybank.stores._items import SearchHit
        from memorybank.stores._vectors import unit_query

        prepared = unit_query(vector, kinds, k, thread_id)
        if prepared is None:
            return []
        query, wanted = prepared
        dim = int(query.shape[0])

        def op(conn: sqlite3.Connection) -> list[SearchHit]:
            hits: list[SearchHit] = []
            for kind in wanted:
                slot = self._vector_slot(conn, tenant, model_id, kind, dim)
                if slot.persist is None:  # the slot's builder saves what it built
                    slot.persist = functools.partial(self._vector_save, (tenant, model_id, kind))
                mask = slot.mask(thread_id, visible_to)
                fetch = 2 * k + 10
                best = slot.search(query, fetch, mask)
                if not best:
                    continue
                # The scope of the hits is re-checked in SQL: the cache is only a shortlist.
                # The best k first (normally all of them pass); the rest of the shortlist
                # only when some failed.
                sql, params = self._vector_sql(kind, thread_id, visible_to)
                confirmed = self._vector_confirm(
                    conn, tenant, model_id, kind, thread_id, visible_to, slot, best[:k]
                )
                kept = [(i, score) for i, score in best[:k] if slot.ids[i] in confirmed]
                if len(kept) < min(k, len(best)) and len(best) > k:
                    confirmed |= self._vector_confirm(
                        conn, tenant, model_id, kind, thread_id, visible_to, slot, best[k:]
                    )
                    kept = [(i, score) for i, score in best if slot.ids[i] in confirmed]
                if len(kept) < min(k, len(best)) and len(best) == fetch:
                    exact = self._exact_vectors(conn, query, tenant, model_id, kind, sql, params, k)
                    hits += [SearchHit(kind, rid, score, tid) for rid, tid, score in exact]
                    continue
                hits += [
                    SearchHit(kind, slot.ids[i], score, slot.threads[i]) for i, score in kept[:k]
                ]
            hits.sort(key=lambda h: (-h.score, h.kind, h.id))
            return hits[:k]

        return await self._run(lambda: self._read(op))

    def _vector_confirm(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        model_id: str,
        kind: str,
        thread_id: str | None,
        visible_to: Visibility | None,
        slot: VectorSlot,
        best: Sequence[tuple[int, float]],
    ) -> set[str]:
        """The ids among the rows ``best`` of ``slot`` that are in scope now, checked in SQL."""
        if not best:
            return set()
        p = self.prefix
        ids = list(dict.fromkeys(slot.ids[i] for i, _ in best))
        marks = ", ".join("?" * len(ids))
        if kind == "entry" and thread_id is not None:
            # One thread: its scope is checked once, and each row from two index lookups
            # (the primary key gives the rowid of an id, ``vectors_model`` whether that
            # rowid is in the thread); no table page is read, the rows' vectors included.
            scope, scope_params = scope_sql("t.", visible_to, "?")
            sql = (
                f"SELECT v.id FROM {p}vectors v WHERE v.tenant_id = ? AND v.kind = 'entry'"
                f" AND v.model_id = ? AND v.id IN ({marks})"
                f" AND EXISTS (SELECT 1 FROM {p}vectors w INDEXED BY {p}vectors_model"
                " WHERE w.tenant_id = v.tenant_id AND w.model_id = v.model_id"
                " AND w.kind = 'entry' AND w.thread_id = ? AND w.rowid = v.rowid)"
                f" AND EXISTS (SELECT 1 FROM {p}threads t WHERE t.tenant_id = ? AND t.id = ?"
                f"{scope})"
            )
            params = [tenant, model_id, *ids, thread_id, tenant, thread_id, *scope_params]
        else:
            base, base_params = self._vector_sql(kind, thread_id, visible_to)
            # "+" keeps the planner off the thread index: the shortlist is a few
            # primary-key lookups, not a scan of the whole thread's vectors.
            sql = base.replace(" AND v.thread_id = ?", " AND +v.thread_id = ?")
            sql += f" AND v.id IN ({marks})"
            params = [tenant, model_id, *base_params, *ids]
        return {r[0] for r in conn.execute(sql, params)}

    def _exact_vectors(
        self,
        conn: sqlite3.Connection,
        query: Any,
        tenant: str,
        model_id: str,
        kind: str,
        sql: str,
        params: list[Any],
        k: int,
    ) -> list[tuple[str, str | None, float]]:
        """Uncached exact search (when the cache's scope information was stale)."""
        from memorybank.stores._vectors import top_k

        select = sql.replace("SELECT v.id FROM", "SELECT v.id, v.thread_id, v.vector FROM", 1)
        rows = conn.execute(select, [tenant, model_id, *params]).fetchall()
        return [
            (rows[i][0], rows[i][1], score) for i, score in top_k(query, [r[2] for r in rows], k)
        ]

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        wanted = list(dict.fromkeys(ids))

        def op(conn: sqlite3.Connection) -> dict[str, list[float]]:
            found: dict[str, list[float]] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ", ".join("?" * len(chunk))
                for vid, blob in conn.execute(
                    f"SELECT id, vector FROM {self.prefix}vectors WHERE tenant_id = ?"
                    f" AND kind = ? AND model_id = ? AND id IN ({marks})",
                    (tenant, kind, model_id, *chunk),
                ).fetchall():
                    found[vid] = vector_from_bytes(blob)
            return found

        return await self._run(lambda: self._read(op))
