"""The SQLite store's schema: its version and the SQL helpers the store and its migrations share.

Pure SQL text, no I/O: one copy serves the async and sync stores.
"""

from __future__ import annotations

import functools

from memorybank.stores._sql import THREAD_COLUMNS

#: Vector deletions the ``vector_deletes`` log keeps (the newest). A cache or
#: persisted index that saw the log at an older sequence than the oldest kept one
#: cannot catch up from it and reloads (or checks its rows one by one).
VECTOR_LOG_KEEP = 100_000


#: The schema version the migrations bring (``len(_migrations(p))``): a store opens a
#: current database without loading them (``_sqlite_migrations``: cold start).
SCHEMA_VERSION = 10


def __getattr__(name: str) -> object:
    if name == "_migrations":  # its old home; loaded on first use
        from memorybank.stores._sqlite_migrations import _migrations

        return _migrations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
