"""The SQLite store's schema: its migrations and the SQL helpers they share with the store.

Pure SQL text, no I/O: one copy serves the async and sync stores.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable

from memorybank.stores.sql.common import THREAD_COLUMNS
from memorybank.stores.sql.events import (
    SQLITE_RANGE,
    sqlite_disable,
    sqlite_ranges,
    sqlite_tables,
    sqlite_triggers,
)

#: Vector deletions the ``vector_deletes`` log keeps (the newest). A cache or
#: persisted index that saw the log at an older sequence than the oldest kept one
#: cannot catch up from it and reloads (or checks its rows one by one).
VECTOR_LOG_KEEP = 100_000


#: A migration's step: a statement, or a function of the connection (in the migration's
#: transaction) for a change that depends on what the file holds.
Step = str | Callable[[sqlite3.Connection], None]


def apply_step(conn: sqlite3.Connection, step: Step) -> None:
    """Run one step of a migration."""
    if isinstance(step, str):
        conn.execute(step)
    else:
        step(conn)


def migrations(p: str) -> list[list[Step]]:
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
            *_fts_v1(p + "entries"),
            f"INSERT INTO {p}entries_fts ({p}entries_fts) VALUES ('rebuild')",
            *_fts_v1(p + "records"),
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
        # row. No index holds it now; ``thread_list`` sorts the tenant's (or the user's)
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
        # owner of the entry's thread (``scope_token``). A user-scoped search matches
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
            fts_scope_update(p, "<="),
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
        # The change feed's index of a user's events, for a database whose feed was on
        # before it existed. The feed's table is made here when there is none yet
        # (empty until the feed is switched on: SQLite cannot make an index on a table
        # that may be missing).
        [
            f"""CREATE TABLE IF NOT EXISTS {p}events (
                tenant_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
                at INTEGER NOT NULL, user_id TEXT, agent_id TEXT, thread_id TEXT,
                item_id TEXT, data TEXT, PRIMARY KEY (tenant_id, seq)) WITHOUT ROWID""",
            f"""CREATE INDEX IF NOT EXISTS {p}events_user ON {p}events
                (tenant_id, user_id, seq) WHERE user_id IS NOT NULL""",
        ],
        # The change feed writes less per event (``sqlite_tables``, ``_feed_v12``).
        [_feed_v12(p)],
        # Records without content (usage notes: one per item ever found, rewritten by
        # every flush of the use buffer) leave the keyword index, which now holds only
        # rows with words: their triggers did an index insert (and a 'delete') for
        # every such row. bm25's row count and mean length no longer count them, so a
        # record's keyword score no longer moves as usage notes accumulate. A row
        # whose content is unchanged by an update keeps its index entry as it is.
        [
            f"""INSERT INTO {p}records_fts ({p}records_fts, rowid, content)
                SELECT 'delete', rowid, content FROM {p}records WHERE content = ''""",
            f"DROP TRIGGER {p}records_fts_insert",
            f"DROP TRIGGER {p}records_fts_delete",
            f"DROP TRIGGER {p}records_fts_update",
            *_records_fts_v13(p + "records"),
        ],
    ]


def _fts_v1(t: str) -> list[Step]:
    """Schema 1's keyword index of the table ``t`` (prefixed), kept in step by triggers."""
    return [
        f"""CREATE VIRTUAL TABLE {t}_fts USING fts5(
                content, content='{t}', content_rowid='rowid',
                tokenize='porter unicode61 remove_diacritics 2')""",
        f"""CREATE TRIGGER {t}_fts_insert AFTER INSERT ON {t} BEGIN
                INSERT INTO {t}_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
        f"""CREATE TRIGGER {t}_fts_delete AFTER DELETE ON {t} BEGIN
                INSERT INTO {t}_fts ({t}_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                END""",
        f"""CREATE TRIGGER {t}_fts_update AFTER UPDATE OF content ON {t} BEGIN
                INSERT INTO {t}_fts ({t}_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                INSERT INTO {t}_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
    ]


def _records_fts_v13(t: str) -> list[Step]:
    """Schema 13's triggers of the records' keyword index: only rows with content are
    in it. Every step tests the same condition on the row it names, so a 'delete' is
    only ever given for a row the index holds (FTS5 takes the caller's word for it)."""
    return [
        f"""CREATE TRIGGER {t}_fts_insert AFTER INSERT ON {t} WHEN new.content <> '' BEGIN
                INSERT INTO {t}_fts (rowid, content) VALUES (new.rowid, new.content);
                END""",
        f"""CREATE TRIGGER {t}_fts_delete AFTER DELETE ON {t} WHEN old.content <> '' BEGIN
                INSERT INTO {t}_fts ({t}_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
                END""",
        f"""CREATE TRIGGER {t}_fts_update AFTER UPDATE OF content ON {t}
                WHEN old.content <> new.content BEGIN
                INSERT INTO {t}_fts ({t}_fts, rowid, content)
                SELECT 'delete', old.rowid, old.content WHERE old.content <> '';
                INSERT INTO {t}_fts (rowid, content)
                SELECT new.rowid, new.content WHERE new.content <> '';
                END""",
    ]


def _feed_v12(p: str) -> Callable[[sqlite3.Connection], None]:
    """The change feed's events move to a rowid table (``sqlite_tables``): each tenant
    gets a range of rowids (``events_ranges``, in tenant order), each event the rowid
    ``base + its number``, so every number and cursor stays what it was. The user index
    holds the users' events up to the tenant's mark (``listed``, marked in batches: an
    append writes none of it); the events there now are all in it. The triggers, which
    write the old table, are made again when the feed is on."""

    def step(conn: sqlite3.Connection) -> None:
        on = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?",
            (f"{p}events_entries_ins",),
        ).fetchone()
        table, index, ranges = sqlite_tables(p)[:3]
        for statement in [
            *sqlite_disable(p),
            ranges,
            f"""INSERT INTO {p}events_ranges (tenant_id, base, listed)
                SELECT tenant_id, {SQLITE_RANGE} * ROW_NUMBER() OVER (ORDER BY tenant_id),
                    MAX(seq)
                FROM {p}events GROUP BY tenant_id""",
            table.replace(f"{p}events (", f"{p}events_v12 (", 1),
            f"""INSERT INTO {p}events_v12 (pos, tenant_id, kind, at, user_id, agent_id,
                    thread_id, item_id, data, listed)
                SELECT r.base + e.seq, e.tenant_id, e.kind, e.at, e.user_id, e.agent_id,
                    e.thread_id, e.item_id, e.data, CASE WHEN e.user_id IS NOT NULL THEN 1 END
                FROM {p}events e JOIN {p}events_ranges r ON r.tenant_id = e.tenant_id
                ORDER BY 1""",
            f"DROP TABLE {p}events",
            f"ALTER TABLE {p}events_v12 RENAME TO {p}events",
            index,
            *((*sqlite_ranges(p), *sqlite_triggers(p)) if on else ()),
        ]:
            conn.execute(statement)

    return step


#: The SQL function (registered on every connection) that gives a thread owner's token.
SCOPE_FUNCTION = "memorybank_scope_token"
#: The token of shared threads (no user).
SHARED_TOKEN = "u0"


def scope_token(tenant: str, user_id: str | None) -> str:
    """The keyword index's token for the owner ``user_id`` of a thread in ``tenant``.

    Digits after a letter: one token for FTS5's tokenizer that the Porter stemmer
    leaves alone. A 56-bit hash, so two owners can share a token: that only makes
    the pre-filter let through another owner's rows, which the SQL scope check
    (always applied) then drops.
    """
    if user_id is None:
        return SHARED_TOKEN
    import hashlib  # on first use: a process that only reads history never needs it

    digest = hashlib.blake2b(f"{tenant}\x00{user_id}".encode(), digest_size=7).digest()
    return f"u{int.from_bytes(digest, 'big') + 1}"


#: ``scope_token`` for the append path, where most appends name a recent owner.
owner_token = functools.lru_cache(maxsize=1024)(scope_token)


def fts_scope_update(p: str, side: str, *, missing_only: bool = False) -> str:
    """Set ``fts_scope`` of the entries on one ``side`` of the keyword index's mark
    (``missing_only``: of those written without it; appends set it)."""
    return (
        f"UPDATE {p}entries SET fts_scope = {SCOPE_FUNCTION}(tenant_id, (SELECT t.user_id"
        f" FROM {p}threads t WHERE t.tenant_id = {p}entries.tenant_id"
        f" AND t.id = {p}entries.thread_id))"
        f" WHERE rowid {side} (SELECT indexed FROM {p}fts_state WHERE name = 'entries')"
        + (" AND fts_scope IS NULL" if missing_only else "")
    )


#: The columns an append inserts, in ``append_sqls``'s order.
INSERT_COLUMNS = (
    "tenant_id, thread_id, branch, position, id, role, content, name, tool_calls,"
    " tool_call_id, metadata, state, token_count, created_at, idempotency_key, fingerprint,"
    " fts_scope"
)


def append_sqls(p: str) -> tuple[str, str, str, str]:
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
    insert = f"INSERT INTO {p}entries ({INSERT_COLUMNS}) VALUES ({', '.join('?' * 17)})"
    return (
        head.replace("{branch}", "t.current_branch"),
        head.replace("{branch}", "?3"),
        bump,
        insert,
    )
