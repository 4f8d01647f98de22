"""AsyncPostgresStore: PostgreSQL through psycopg 3 (``pip install 'memorybank[postgres]'``).

Layout (every name starts with the configurable ``prefix``, default ``memorybank_``;
every primary key and index leads with ``tenant_id``, and no statement joins
two tenants, so the tables can be distributed or partitioned by tenant)::

    threads(tenant_id, id, user_id, agent_id, title, metadata json, status,
            created_at, updated_at, current_branch)         PK (tenant_id, id)
        index (tenant_id, user_id); fillfactor 70, no index on updated_at (HOT appends)
    branches(tenant_id, thread_id, name, created_at, from_branch, from_entry,
             last_position)                                 PK (tenant_id, thread_id, name)
        fillfactor 70 (the counter update is heap-only)
    entries(tenant_id, thread_id, branch, position, id, role, content, name,
            tool_calls jsonb, tool_call_id, metadata json, state json,
            token_count, created_at, idempotency_key, fingerprint)
        PK (tenant_id, thread_id, branch, position)
        unique (tenant_id, thread_id, branch, id),
        unique (tenant_id, thread_id, branch, idempotency_key) where the key is not null
    working(tenant_id, run_id, key, value text)             PK (tenant_id, run_id, key)
    snapshots(tenant_id, run_id, user_id, value text, saved_at)   PK (tenant_id, run_id)
    summaries(tenant_id, id, agent_id, user_id, content, created_at, seq)  PK (tenant_id, id)
    records(tenant_id, kind, id, agent_id, user_id, key, content, data json,
            created_at, updated_at, expires_at, search tsvector, revision)
                                                            PK (tenant_id, kind, id)
        index (tenant_id, kind, created_at, id), (tenant_id, kind, user_id, created_at, id),
              (tenant_id, kind, key) where key is not null, (tenant_id, user_id)
    vectors(tenant_id, kind, id, model_id, thread_id, dim, embedding)
                                                            PK (tenant_id, kind, id, model_id)
        index (tenant_id, model_id, kind, thread_id), (tenant_id, thread_id)
    schema_version(id = 1, version)

Batch record reads are one statement each: ``record_get_many`` (primary key,
``id = ANY(array)``), ``record_list_keys`` (the key index, ``key = ANY(array)``;
``record_list_keys_by_kind`` adds ``kind = ANY(array)``) and ``record_page`` (a
row-value range ``(created_at, id) > cursor`` of the ``(tenant_id, kind,
created_at, id)`` index); an array is one parameter, so no list needs chunking.

Full text (schema version 2): ``entries`` and ``records`` carry a generated
``search tsvector`` column (``to_tsvector('english', content)``) with a GIN
index on it alone (a GIN index cannot lead with ``tenant_id`` without the
``btree_gin`` extension; the tenant, thread and visibility filters are applied
in the same query). ``text_search`` ORs the words of the question (runs of
letters and digits, so the user's text is never tsquery syntax) into
``to_tsquery('english', 'w1 | w2 | ...')``, ranks by ``ts_rank_cd`` and runs
entries (joined to their thread for the scope; every branch) and records as one
``UNION ALL`` statement. Scores are ``ts_rank_cd`` values (bigger is better).

Vectors: when the migration runs on a server where the ``vector`` extension is
installed or can be created (``CREATE EXTENSION`` needs the privilege;
failure is not an error), ``embedding`` is a pgvector ``vector`` column
*without* a dimension (one table for every model; ``dim`` stores each
vector's length and every search filters on it, so models of different sizes
never meet), and searches run in SQL: exact, ``ORDER BY embedding <=> q``
(cosine distance; score ``1 - distance``) over the rows in scope. Otherwise
``embedding`` is ``bytea`` holding float32 unit vectors, kept in process by
each store object (``_vector_cache``) and ranked with numpy there; the
``vector_stamps`` table (migration 6: per (tenant, model, kind) a version bumped
by ``vector_put`` and stamped on its rows as ``seq``, a generation bumped with
every delete of vectors) tells a search what changed, and the hits' scope is
confirmed in SQL. The choice is made once, when the table is created; ``capabilities``
holds ``"pgvector"`` when the table has the pgvector column. Vectors are
stored unit-length in both forms.

HNSW (pgvector only, optional): ``await store.create_vector_index(model_id,
dimensions)`` creates a partial expression index ``USING hnsw
((embedding::vector(n)) vector_cosine_ops) WHERE model_id = ... AND dim = n``
(named ``<prefix>vhnsw_<n>_<hash of the model id>``). Searches for that
model then order by the indexed expression and run with
``hnsw.iterative_scan = strict_order`` (and ``ef_search`` >= 2k) set
transaction-locally in the same pipeline as the query (one round trip; the
query, with the index's model and dimension as constants, is prepared once it
repeats), so tenant/visibility filters still fill ``k``: results are
approximate, and the planner may still prefer the exact scan for small scopes.
Vectors go to the server in pgvector's binary form (``_pgvector``): a
``vector_put`` of 10,000 vectors is one statement with one binary ``vector[]``. Stores learn the
existing HNSW indexes when they connect. Building one is slow (minutes per
100k 384-d vectors); ``concurrently=True`` avoids blocking writes meanwhile.

Times are ``timestamptz`` (microsecond precision, read back as UTC). Metadata,
state and record data are ``json`` (schema version 5; ``jsonb`` before): the
text as written, so every number comes back exactly (``jsonb`` turns ``1e16``
into an integer and ``-0.0`` into ``0``); the ``->``/``->>`` operators work on
them, ``@>`` and GIN indexes would need a ``::jsonb`` cast. Tool calls (strings
only) stay ``jsonb``; working-memory and snapshot values are ``text``. There
are no foreign keys: deletes remove a thread's branches and entries
explicitly, in one transaction.

The schema is created on first use and versioned: ``MIGRATIONS[i]`` takes the
schema from version ``i`` to ``i + 1``; the version lives in
``<prefix>schema_version``. Migrations run in one transaction under a
transaction-level advisory lock, so several processes starting at once are safe.

Appends are ONE statement (one round trip, autocommit). A batch without
idempotency keys (every ``remember``) runs the short form: ``UPDATE threads SET
updated_at`` where the thread exists, passes the owner check and has the branch
(this locks the row), ``UPDATE branches SET last_position`` (reserving the
positions), ``INSERT`` of the rows; no row back means nothing was written, and
only then a second query tells why (missing thread, other owner, no branch).
Both updates are HOT (schema version 6): no index holds ``updated_at`` or
``last_position``, and both tables keep 30% of each page free, so the new row
versions stay on their page and no index is touched. The general form: it checks the thread
and its owner, locks the thread row (``UPDATE ... updated_at``), then the
branch row, whose ``last_position`` counter reserves the batch's positions, and
inserts the batch; an entry whose idempotency key is stored already is not
inserted, and one stored with another fingerprint makes the statement write
nothing. The locks are held until the statement commits, so concurrent
appenders in any number of processes are serialised per thread: nothing is
lost, duplicated or interleaved, and positions follow commit order. A status
column tells the caller whether the thread was missing, forbidden, reused a
key for another payload (nothing written in all three) or had no such branch.
The statement's snapshot is taken before it waits for the thread lock, so a
key committed meanwhile by another writer is invisible to it: its insert then
fails on the unique key index, the statement rolls back whole, and the store
runs it again (up to 3 times), now comparing against that writer's entry.
A key's fingerprint lives in the ``fingerprint`` column (migration 4; NULL on
older rows, which match any payload).

Write combining (``memorybank._combine``; a store on a pool, not on a single
connection): plain appends that one store object receives while two of its
appends for the same tenant are running wait, and then run together as ONE
statement and one commit, whatever their number and threads: it locks the
threads named in id order (``FOR NO KEY UPDATE``, so two such statements never
deadlock), checks each caller's owner and branch, updates each thread and
branch counter touched once and inserts every allowed row, numbered per
(thread, branch) in arrival order. Each caller returns once its entries are
committed; a refused caller (nothing of it written) runs again alone, which
raises its own error; an error of the statement itself reaches every caller in
it. Concurrent appenders of one thread no longer wait for each other's commit
(the thread lock is still held through it), and 32 appenders of distinct
threads share commits too. With one append in flight nothing waits.

Positions are gap-free per branch while entries are only appended: the branch
counter never goes back, so after ``delete_entries``/``truncate_after``/
``clear_entries`` new entries continue after the highest position ever assigned
(a position is never reused).

"Last N" is one statement: the thread row ``UNION ALL`` a backward index scan of
``(tenant_id, thread_id, branch, position)`` with ``LIMIT``, so its cost does
not grow with the thread's length or the branch depth (branches are copies).

Isolation: single statements run in autocommit (READ COMMITTED: one snapshot
per statement). ``delete_thread``, ``delete_branch`` and ``forget_user`` run in
one short transaction whose first statement locks the thread row(s), so a
concurrent append lands fully before (and is deleted) or fully after (and
finds no thread); ``create_branch`` takes a key-share lock, which keeps the
thread from being deleted meanwhile without blocking appends, and copies the
source branch up to a position read in the same transaction.

Connections: ``AsyncPostgresStore.from_url(url, pool_size=20, prefix=..., timeout=10.0)``
owns an ``AsyncConnectionPool`` (autocommit, ``connect_timeout``/
``tcp_user_timeout`` from ``timeout``) and closes it in ``close()``; URL query
parameters ``prefix``, ``pool_size`` and ``timeout`` are accepted too, so
``open_store("postgresql://...?prefix=app_")`` works. ``AsyncPostgresStore(pool_or_connection)``
uses a pool or a single connection the caller owns (left open by ``close()``;
a single connection is used by one call at a time; a connection that is not in
autocommit is switched to autocommit while a call uses it, unless it is inside
a transaction of the caller, which the store's writes then join). An owned
pool opens only after a first direct connection succeeds: until then every call
tries that connection and fails at once, with the server's answer in the
message and the driver's error as ``__cause__``, raising ``ConfigurationError``
when the server rejects the login (unknown database or role, bad password, no
``pg_hba.conf`` entry; recognised by libpq's English messages, other locales
get ``StoreUnavailable``) and ``StoreUnavailable`` otherwise (refused, unreachable).
Waiting for a pool connection longer than ``timeout`` raises ``StoreUnavailable``
(server down or pool exhausted); when the pool's last connection attempt
failed, its error is in the message and at the end of the ``__cause__`` chain.
psycopg_pool's reconnection warnings go to the ``psycopg.pool`` logger, which
gets a ``NullHandler`` so that they reach stderr only through the application's
own logging configuration. After a lost connection (server restart, terminated
backend) the pool's idle connections are checked and dead ones dropped; reads
are retried once on a fresh connection, writes raise ``StoreUnavailable``
(they may or may not have been applied, retry with an idempotency key).

Capabilities: ``"pgvector"`` is added to ``capabilities`` when the vectors
table has a pgvector column (see above; the server lists ``vector`` in
``pg_available_extensions`` and the extension could be created when the schema
was). It is detected at first use (any call, or ``await store.connect()``);
before that ``capabilities`` is empty. A schema created without pgvector keeps
its ``bytea`` column after pgvector is installed (re-create the vectors table,
and re-embed, to switch).

Compaction: ``compact_entries`` runs in one transaction: it locks the thread row
(``FOR NO KEY UPDATE``, which appends also take) in a first statement, then
compares the ids up to ``through_position`` and deletes them in a second one
(a later snapshot, so it sees whatever the previous lock holder committed),
then inserts the summary and sets ``updated_at``. ``update_entries`` is one
statement for the batch. Records are upserted in one ``INSERT ... ON
CONFLICT DO UPDATE``. ``delete_thread`` and ``forget_user`` also delete the
entry vectors of the threads, ``forget_user`` the user's records and their
vectors; ``record_delete`` the records' vectors; the verbs deleting entries
(``delete_entries``, ``truncate_after``, ``clear_entries``, ``delete_branch``,
``compact_entries``) the vectors of those no other branch holds a copy of, in the
same statement.

Differences from the contract: none known. ``AsyncMemory`` refuses what
PostgreSQL cannot store (a NUL character in text or in a JSON string) before it
gets here; a value it still refuses raises ``StoreError``; nothing is written.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import re
import struct
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memorybank._async.stores.base import (
    UNSET,
    AppendResult,
    AsyncStore,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    Unset,
    VectorItem,
    Visibility,
)
from memorybank._combine import AsyncCombiner
from memorybank._concurrency import AsyncLock
from memorybank._idempotency import key_reused
from memorybank.errors import (
    ConfigurationError,
    Conflict,
    InvalidInput,
    NotFound,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores._pgvector import Vector, VectorParams, Vectors, register, registered
from memorybank.stores._sql import (
    ENTRY_COLUMNS,
    RECORD_COLUMNS,
    THREAD_COLUMNS,
    any_user,
    dump,
    entry_payload,
    from_us,
    load,
    messages_of_rows,
    row_to_branch,
    row_to_entry,
    row_to_record,
    row_to_summary,
    row_to_thread,
    run_ids_sql,
    tool_calls_value,
    unit_vector_bytes,
    vector_from_bytes,
)
from memorybank.stores._types import by_kind

try:
    import psycopg
    from psycopg import AsyncConnection, pq, sql
    from psycopg.rows import tuple_row
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the PostgreSQL store needs psycopg: pip install 'memorybank[postgres]'"
    ) from error

if TYPE_CHECKING:  # numpy loads with the first vector search, not with the store
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores._vectors import CachedRows

__all__ = ["MIGRATIONS", "AsyncPostgresStore"]

_PREFIX_RE = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_DISCONNECT_STATES = frozenset({"57P01", "57P02", "57P03"})
#: libpq's words (the server's, in English) for a connection refused for who or
#: where we are rather than for the server's state: retrying cannot help.
_REJECTED = re.compile(
    r"authentication failed|does not exist|no pg_hba\.conf entry|no password supplied"
    r"|not permitted to log in",
    re.IGNORECASE,
)

# psycopg_pool logs every failed reconnection as a WARNING on "psycopg.pool". With
# no handler on that logger's path, logging's last-resort handler prints it to
# stderr; a NullHandler counts as one, so nothing is printed unless the
# application configures logging (whose handlers still get every record:
# propagation is untouched).
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def _cols(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


_T_COLS = _cols("t", THREAD_COLUMNS)
_R_COLS = _cols("r", RECORD_COLUMNS)
# Record columns for the batch reads: ``data`` as its text (``json`` keeps it as
# written), parsed by ``row_to_record`` (the fast parser when installed) rather than
# by the driver's ``json.loads``.
_R_READ = _R_COLS.replace(", r.data,", ", r.data::text,")
_E_COLS = _cols("e", ENTRY_COLUMNS)
# Entry columns for reads: an empty metadata/state object comes back as NULL (no JSON
# to parse; ``row_to_entry`` maps NULL to ``{}``).
_E_READ = ", ".join(
    f"NULLIF(e.{c.strip()}::text, '{{}}')"
    if c.strip() in ("metadata", "state")
    else f"e.{c.strip()}"
    for c in ENTRY_COLUMNS.split(",")
)

_N_THREAD = len(THREAD_COLUMNS.split(","))
_N_ENTRY = len(ENTRY_COLUMNS.split(","))
_E_START = 2 + _N_THREAD + 2  # where an append row's stored entry columns start
_KEY_RACES = 3  # runs of an append that lost an idempotency-key race to concurrent writers
_NULL_ENTRY = (
    "NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::text,"
    " NULL::jsonb, NULL::text, NULL::json, NULL::json, NULL::integer, NULL::timestamptz,"
    " NULL::text"
)

#: One caller's part of a combined append (``_APPEND_MANY``, one tenant): thread,
#: branch, owner check, entries and ``updated_at``.
#: Combined appends of one tenant in flight at once (each on its own connection): the
#: next batch's statements overlap the previous one's commit.
_APPEND_BATCHES = 2
_AppendItem = tuple[str, str | None, str | Unset | None, Sequence[NewEntry], datetime]

#: ``MIGRATIONS[i]`` takes the schema from version ``i`` to ``i + 1`` (``{p}`` is the prefix).
MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE {p}threads (
            tenant_id text NOT NULL,
            id text NOT NULL,
            user_id text,
            agent_id text,
            title text,
            metadata jsonb NOT NULL DEFAULT '{{}}',
            status text NOT NULL,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            current_branch text NOT NULL,
            PRIMARY KEY (tenant_id, id))""",
        "CREATE INDEX {p}threads_updated ON {p}threads (tenant_id, updated_at DESC, id DESC)",
        "CREATE INDEX {p}threads_user ON {p}threads (tenant_id, user_id, updated_at DESC, id DESC)",
        """CREATE TABLE {p}branches (
            tenant_id text NOT NULL,
            thread_id text NOT NULL,
            name text NOT NULL,
            created_at timestamptz NOT NULL,
            from_branch text,
            from_entry text,
            last_position bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant_id, thread_id, name))""",
        """CREATE TABLE {p}entries (
            tenant_id text NOT NULL,
            thread_id text NOT NULL,
            branch text NOT NULL,
            position bigint NOT NULL,
            id text NOT NULL,
            role text NOT NULL,
            content text,
            name text,
            tool_calls jsonb,
            tool_call_id text,
            metadata jsonb NOT NULL DEFAULT '{{}}',
            state jsonb NOT NULL DEFAULT '{{}}',
            token_count integer NOT NULL,
            created_at timestamptz NOT NULL,
            idempotency_key text,
            PRIMARY KEY (tenant_id, thread_id, branch, position))""",
        "CREATE UNIQUE INDEX {p}entries_id ON {p}entries (tenant_id, thread_id, branch, id)",
        "CREATE UNIQUE INDEX {p}entries_key ON {p}entries"
        " (tenant_id, thread_id, branch, idempotency_key) WHERE idempotency_key IS NOT NULL",
        """CREATE TABLE {p}working (
            tenant_id text NOT NULL,
            run_id text NOT NULL,
            key text NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (tenant_id, run_id, key))""",
        """CREATE TABLE {p}snapshots (
            tenant_id text NOT NULL,
            run_id text NOT NULL,
            user_id text,
            value text NOT NULL,
            saved_at timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, run_id))""",
        "CREATE INDEX {p}snapshots_user ON {p}snapshots (tenant_id, user_id)",
        """CREATE TABLE {p}summaries (
            tenant_id text NOT NULL,
            id text NOT NULL,
            agent_id text NOT NULL,
            user_id text,
            content text NOT NULL,
            created_at timestamptz NOT NULL,
            seq bigint GENERATED ALWAYS AS IDENTITY,
            PRIMARY KEY (tenant_id, id))""",
        "CREATE INDEX {p}summaries_agent ON {p}summaries (tenant_id, agent_id, created_at, seq)",
        "CREATE INDEX {p}summaries_user ON {p}summaries (tenant_id, user_id)",
    ),
    (
        # Keyword search: a generated tsvector per entry and record, GIN-indexed.
        "ALTER TABLE {p}entries ADD COLUMN search tsvector"
        " GENERATED ALWAYS AS (to_tsvector('english', coalesce(content, ''))) STORED",
        "CREATE INDEX {p}entries_search ON {p}entries USING gin (search)",
        """CREATE TABLE {p}records (
            tenant_id text NOT NULL,
            kind text NOT NULL,
            id text NOT NULL,
            agent_id text,
            user_id text,
            key text,
            content text NOT NULL,
            data jsonb NOT NULL DEFAULT '{{}}',
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            expires_at timestamptz,
            search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
            PRIMARY KEY (tenant_id, kind, id))""",
        "CREATE INDEX {p}records_created ON {p}records (tenant_id, kind, created_at, id)",
        "CREATE INDEX {p}records_user ON {p}records (tenant_id, kind, user_id, created_at, id)",
        "CREATE INDEX {p}records_key ON {p}records (tenant_id, kind, key) WHERE key IS NOT NULL",
        "CREATE INDEX {p}records_owner ON {p}records (tenant_id, user_id)",
        "CREATE INDEX {p}records_search ON {p}records USING gin (search)",
        # Vectors: a pgvector column when the extension is (or can be) installed, else
        # float32 unit vectors as bytea searched client-side. Decided once, here.
        """DO $mb$
        DECLARE native boolean := EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector');
        BEGIN
            IF NOT native
               AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
                BEGIN
                    CREATE EXTENSION IF NOT EXISTS vector;
                    native := true;
                EXCEPTION WHEN OTHERS THEN  -- no privilege, broken install: fall back
                    native := false;
                END;
            END IF;
            EXECUTE format(
                'CREATE TABLE {p}vectors (
                    tenant_id text NOT NULL,
                    kind text NOT NULL,
                    id text NOT NULL,
                    model_id text NOT NULL,
                    thread_id text,
                    dim integer NOT NULL,
                    embedding %s NOT NULL,
                    PRIMARY KEY (tenant_id, kind, id, model_id))',
                CASE WHEN native THEN 'vector' ELSE 'bytea' END);
        END $mb$""",
        "CREATE INDEX {p}vectors_model ON {p}vectors (tenant_id, model_id, kind, thread_id)",
        "CREATE INDEX {p}vectors_thread ON {p}vectors (tenant_id, thread_id)"
        " WHERE thread_id IS NOT NULL",
    ),
    # Records carry the revision that ``RecordGuard`` compares (no table rewrite).
    ("ALTER TABLE {p}records ADD COLUMN revision bigint NOT NULL DEFAULT 0",),
    # The payload fingerprint of keyed entries (NULL on rows written before: no check).
    ("ALTER TABLE {p}entries ADD COLUMN fingerprint text",),
    (
        # JSON values as ``json`` (the text as written), not ``jsonb``: jsonb turns 1e16
        # into 10000000000000000 and -0.0 into 0, so numbers did not round-trip.
        # Existing rows keep their (already normalised) values; one rewrite per table.
        "ALTER TABLE {p}threads ALTER COLUMN metadata TYPE json USING metadata::json,"
        " ALTER COLUMN metadata SET DEFAULT '{{}}'",
        "ALTER TABLE {p}entries ALTER COLUMN metadata TYPE json USING metadata::json,"
        " ALTER COLUMN metadata SET DEFAULT '{{}}',"
        " ALTER COLUMN state TYPE json USING state::json, ALTER COLUMN state SET DEFAULT '{{}}'",
        "ALTER TABLE {p}records ALTER COLUMN data TYPE json USING data::json,"
        " ALTER COLUMN data SET DEFAULT '{{}}'",
    ),
    (
        # HOT appends: every append sets the thread's ``updated_at``; with that column in
        # an index each update wrote a new tuple into all three thread indexes (and every
        # appender of a tenant into the same right-most leaf of ``threads_updated``). With
        # no index on it, and free room on the page (fillfactor), the update stays on the
        # page (a heap-only tuple); ``list_threads`` sorts the tenant's (or the user's)
        # threads instead. The branch counter (``last_position``) is not indexed either.
        # Existing pages keep their fill until rewritten; no table is rewritten here.
        "DROP INDEX IF EXISTS {p}threads_updated",
        "DROP INDEX IF EXISTS {p}threads_user",
        "CREATE INDEX IF NOT EXISTS {p}threads_owner ON {p}threads (tenant_id, user_id)",
        "ALTER TABLE {p}threads SET (fillfactor = 70)",
        "ALTER TABLE {p}branches SET (fillfactor = 70)",
    ),
    (
        # Change counters for the in-process vector cache (``_vector_cache``): ``seq``
        # is the writing ``vector_put``'s version; deletes bump the generation.
        "ALTER TABLE {p}vectors ADD COLUMN seq bigint NOT NULL DEFAULT 0",
        "CREATE INDEX {p}vectors_seq ON {p}vectors (tenant_id, model_id, kind, seq)",
        """CREATE TABLE {p}vector_stamps (
            tenant_id text NOT NULL,
            model_id text NOT NULL,
            kind text NOT NULL,
            version bigint NOT NULL DEFAULT 0,
            generation bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant_id, model_id, kind))""",
        "INSERT INTO {p}vector_stamps (tenant_id, model_id, kind)"
        " SELECT DISTINCT tenant_id, model_id, kind FROM {p}vectors",
    ),
]

#: Every table a schema holds (for tools that drop a prefix's tables).
TABLES = (
    "threads",
    "branches",
    "entries",
    "working",
    "snapshots",
    "summaries",
    "records",
    "vectors",
    "vector_stamps",
    "schema_version",
)

_WORD = re.compile(r"[^\W_]+")
_MAX_WORD = 100  # longer "words" are not indexed by to_tsvector either

_APPEND = """
WITH input AS (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS i(
        id text, role text, content text, name text, tool_calls jsonb, tool_call_id text,
        metadata json, state json, token_count integer, created_at timestamptz,
        idempotency_key text, fingerprint text, ord bigint)
),
probe AS (
    SELECT user_id, current_branch FROM {p}threads
    WHERE tenant_id = %(tenant)s AND id = %(thread)s
),
allowed AS (
    SELECT coalesce(%(branch)s::text, current_branch) AS branch FROM probe
    WHERE NOT %(check_owner)s::bool OR user_id IS NOT DISTINCT FROM %(owner)s::text
),
existing AS (
    SELECT {e_cols}, i.ord, coalesce(e.fingerprint <> i.fingerprint, false) AS clash
    FROM input i
    JOIN allowed a ON true
    JOIN {p}entries e ON e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s
        AND e.branch = a.branch AND e.idempotency_key = i.idempotency_key
),
fresh AS (
    SELECT i.*, row_number() OVER (ORDER BY i.ord) AS rn
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM existing x WHERE x.ord = i.ord)
),
th AS (
    UPDATE {p}threads t SET updated_at = %(now)s
    FROM allowed a
    WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s
      AND EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = %(tenant)s
                  AND b.thread_id = %(thread)s AND b.name = a.branch)
      AND NOT EXISTS (SELECT 1 FROM existing WHERE clash)
    RETURNING {t_cols}
),
br AS (
    UPDATE {p}branches b SET last_position = b.last_position + (SELECT count(*) FROM fresh)
    FROM allowed a, th
    WHERE b.tenant_id = %(tenant)s AND b.thread_id = %(thread)s AND b.name = a.branch
    RETURNING b.name, b.last_position - (SELECT count(*) FROM fresh) AS base
),
ins AS (
    INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content, name,
        tool_calls, tool_call_id, metadata, state, token_count, created_at, idempotency_key,
        fingerprint)
    SELECT %(tenant)s, %(thread)s, br.name, br.base + f.rn, f.id, f.role, f.content, f.name,
        f.tool_calls, f.tool_call_id, f.metadata, f.state, f.token_count,
        f.created_at, f.idempotency_key, f.fingerprint
    FROM fresh f CROSS JOIN br
    RETURNING id, position
),
result AS (
    -- inserted rows: only where they went (the caller has the rest); stored ones: all
    SELECT f.ord, ins.position, {null_entry} FROM ins JOIN fresh f ON f.id = ins.id
    UNION ALL
    SELECT x.ord, x.position, {x_cols} FROM existing x
)
SELECT
    CASE WHEN NOT EXISTS (SELECT 1 FROM probe) THEN 1
         WHEN NOT EXISTS (SELECT 1 FROM allowed) THEN 2
         WHEN EXISTS (SELECT 1 FROM existing WHERE clash) THEN 4
         WHEN NOT EXISTS (SELECT 1 FROM th) THEN 3
         ELSE 0 END,
    (SELECT branch FROM allowed),
    {th_cols},
    r.*
FROM (SELECT 1) AS one
LEFT JOIN th ON true
LEFT JOIN result r ON true
"""

# The append of a batch without idempotency keys (every ``remember``): the thread row
# is updated (and so locked) only when it exists, passes the owner check and has the
# branch; then the branch counter reserves the positions and the rows go in. No row back
# means nothing was written: ``_append_refusal`` then says why (a second round trip,
# only on that error path).
_APPEND_PLAIN = """
WITH th AS (
    UPDATE {p}threads t SET updated_at = %(now)s
    WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s
      AND (NOT %(check_owner)s::bool OR t.user_id IS NOT DISTINCT FROM %(owner)s::text)
      AND EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = %(tenant)s
                  AND b.thread_id = %(thread)s
                  AND b.name = coalesce(%(branch)s::text, t.current_branch))
    RETURNING {t_cols}
),
br AS (
    UPDATE {p}branches b SET last_position = b.last_position + %(count)s::bigint
    FROM th
    WHERE b.tenant_id = %(tenant)s AND b.thread_id = %(thread)s
      AND b.name = coalesce(%(branch)s::text, th.current_branch)
    RETURNING b.name, b.last_position - %(count)s::bigint AS base
),
ins AS (
    INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content, name,
        tool_calls, tool_call_id, metadata, state, token_count, created_at)
    SELECT %(tenant)s, %(thread)s, br.name, br.base + i.ord, i.id, i.role, i.content, i.name,
        i.tool_calls, i.tool_call_id, i.metadata, i.state, i.token_count, i.created_at
    FROM br CROSS JOIN {rows}
)
SELECT br.name, br.base, {th_cols} FROM th LEFT JOIN br ON true
"""
# Concurrent plain appends of one tenant, to any threads, as ONE statement (write
# combining, see ``_combine``): the threads named are locked in id order (so two such
# statements never deadlock), each caller's rows pass its own owner and branch checks,
# every thread and branch counter touched is updated once, and the rows go in with
# positions numbered per (thread, branch) in queue order. Rows back: one per stored
# entry, with its thread row; a caller whose entries are missing wrote nothing and is
# run again alone (which raises its error, or stores it if the world changed).
_APPEND_MANY = """
WITH input AS (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS i(
        ord integer, thread text, branch text, check_owner boolean, owner text,
        now timestamptz, id text, role text, content text, name text, tool_calls jsonb,
        tool_call_id text, metadata json, state json, token_count integer,
        created_at timestamptz)
),
locked AS (
    SELECT t.id, t.user_id, t.current_branch FROM {p}threads t
    WHERE t.tenant_id = %(tenant)s AND t.id IN (SELECT thread FROM input)
    ORDER BY t.id
    FOR NO KEY UPDATE
),
ok AS (
    SELECT i.*, coalesce(i.branch, l.current_branch) AS bname
    FROM input i JOIN locked l ON l.id = i.thread
    WHERE (NOT i.check_owner OR l.user_id IS NOT DISTINCT FROM i.owner)
      AND EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = %(tenant)s
                  AND b.thread_id = i.thread AND b.name = coalesce(i.branch, l.current_branch))
),
th AS (
    UPDATE {p}threads t SET updated_at = m.now
    FROM (SELECT thread, max(now) AS now FROM ok GROUP BY thread) m
    WHERE t.tenant_id = %(tenant)s AND t.id = m.thread
    RETURNING {t_cols}
),
br AS (
    UPDATE {p}branches b SET last_position = b.last_position + c.n
    FROM (SELECT thread, bname, count(*) AS n FROM ok GROUP BY thread, bname) c
    WHERE b.tenant_id = %(tenant)s AND b.thread_id = c.thread AND b.name = c.bname
    RETURNING b.thread_id, b.name, b.last_position - c.n AS base
),
ins AS (
    INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content, name,
        tool_calls, tool_call_id, metadata, state, token_count, created_at)
    SELECT %(tenant)s, o.thread, o.bname,
        br.base + row_number() OVER (PARTITION BY o.thread, o.bname ORDER BY o.ord),
        o.id, o.role, o.content, o.name, o.tool_calls, o.tool_call_id, o.metadata, o.state,
        o.token_count, o.created_at
    FROM ok o JOIN br ON br.thread_id = o.thread AND br.name = o.bname
    RETURNING thread_id, branch, id, position
)
SELECT ins.thread_id, ins.branch, ins.id, ins.position, {th_cols}
FROM ins JOIN th ON th.id = ins.thread_id
"""
# Where ``_APPEND_PLAIN``'s rows come from: a JSON batch, or (one entry, every
# ``remember``) plain parameters, which neither side has to encode or parse as JSON.
_BATCH_ROWS = """json_to_recordset(%(batch)s::json) AS i(
        id text, role text, content text, name text, tool_calls jsonb, tool_call_id text,
        metadata json, state json, token_count integer, created_at timestamptz, ord bigint)"""
_ONE_ROW = """(VALUES (%(id)s::text, %(role)s::text, %(content)s::text, %(name)s::text,
        %(tool_calls)s::jsonb, %(tool_call_id)s::text, %(metadata)s::json, %(state)s::json,
        %(token_count)s::integer, %(created_at)s::timestamptz, 1::bigint)) AS i(
        id, role, content, name, tool_calls, tool_call_id, metadata, state, token_count,
        created_at, ord)"""

# "Last N": the thread row, then the page, in one statement (one snapshot). Page rows
# leave out the thread id and branch (the caller knows them) and send an empty
# metadata/state object as NULL, so there is less to parse.
_PAGE_COLUMNS = (
    "id, position, role, content, name, tool_calls, tool_call_id, NULLIF(metadata::text, '{}'),"
    " NULLIF(state::text, '{}'), token_count, created_at, idempotency_key"
)
_NULL_PAGE = (
    "NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::text,"
    " NULL::text, NULL::text, NULL::integer, NULL::timestamptz, NULL::text"
)
_NULL_THREAD = (
    "NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::json, NULL::text,"
    " NULL::timestamptz, NULL::timestamptz, NULL::text"
)
_LIST = """
(SELECT {thread_columns}, {null_page} FROM {p}threads
 WHERE tenant_id = %(tenant)s AND id = %(thread)s)
UNION ALL
(SELECT {null_thread}, {page_columns} FROM {p}entries
 WHERE tenant_id = %(tenant)s AND thread_id = %(thread)s
   AND branch = coalesce(%(branch)s::text, (
       SELECT current_branch FROM {p}threads WHERE tenant_id = %(tenant)s AND id = %(thread)s
   )){filters}
 ORDER BY position DESC
 LIMIT %(limit)s::bigint OFFSET %(offset)s::bigint)
"""


def _page_entry(row: Sequence[Any], thread_id: str, branch: str) -> Entry:
    """An ``Entry`` from a page row of ``_LIST`` (``row_to_entry`` for the shorter row)."""
    calls, extra, item = entry_payload(row[15])
    return Entry(
        id=row[10],
        thread_id=thread_id,
        branch=branch,
        position=int(row[11]),
        role=row[12],
        content=row[13],
        name=row[14],
        tool_calls=calls,
        tool_call_id=row[16],
        metadata=load(row[17]) or {},
        state=load(row[18]) or {},
        token_count=int(row[19]),
        created_at=from_us(row[20]),
        idempotency_key=row[21],
        extra=extra,
        item=item,
    )


def _new_entry(new: NewEntry, thread_id: str, branch: str, position: int) -> Entry:
    """The ``Entry`` just stored from ``new`` (its JSON values copied, not shared)."""
    return Entry(
        id=new.id,
        thread_id=thread_id,
        branch=branch,
        position=int(position),
        role=new.role,  # type: ignore[arg-type]
        content=new.content,
        name=new.name,
        tool_calls=new.tool_calls,
        tool_call_id=new.tool_call_id,
        metadata=copy.deepcopy(new.metadata) if new.metadata else {},
        state=copy.deepcopy(new.state) if new.state else {},
        token_count=new.token_count,
        created_at=new.created_at,
        idempotency_key=new.idempotency_key,
        extra=copy.deepcopy(new.extra) if new.extra else {},
        item=copy.deepcopy(new.item),
    )


def _position(entry: Entry) -> int:
    return entry.position


def _hit_order(hit: SearchHit) -> tuple[float, str, str, str]:
    return (-hit.score, hit.kind, hit.id, hit.branch or "")


def _tsquery(text: str) -> str:
    """A ``to_tsquery`` text OR-ing the words of ``text``.

    Words are runs of letters and digits only, so nothing in the user's text is
    ever read as tsquery syntax (quotes, ``&``, ``!``, ``:*`` ...).
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text) if len(w) <= _MAX_WORD)
    return " | ".join(words)


def _unit_query(vector: Sequence[float]) -> NDArray[np.float32] | None:
    """The unit vector as float32 (``None`` for a zero vector)."""
    import numpy as np

    unit = np.frombuffer(unit_vector_bytes(vector), dtype="<f4")
    return unit if unit.any() else None


def _row_check(table: str, condition: str) -> str:
    """A filter the planner keeps as a per-row subplan (``EXISTS`` would become a join).

    Under an HNSW index scan this checks each candidate as it comes, and keeps
    the row estimate of the vectors scan, so the planner still picks the index.
    """
    return f"coalesce((SELECT true FROM {table} WHERE {condition} LIMIT 1), false)"


def _bump(p: str, deleted: str) -> str:
    """An UPDATE bumping the vector cache generation of the (model, kind)s in ``deleted``."""
    return (
        f"UPDATE {p}vector_stamps s SET generation = s.generation + 1"
        " WHERE s.tenant_id = %(tenant)s AND (s.model_id, s.kind) IN"
        f" (SELECT model_id, kind FROM {deleted})"
    )


def _drop_entry_vectors(p: str, deleted: str) -> str:
    """CTEs deleting the vectors of the entries in ``deleted`` (``id``, ``branch``) whose
    last copy they were, and bumping the cache generation.

    Every delete of entries is on one branch and a branch holds an id once, so
    another copy is one on another branch: checked per branch through ``entries_id``.
    (The statement's snapshot still shows the deleted rows; other branches' rows are
    what they were.)
    """
    return (
        f" dv AS (DELETE FROM {p}vectors v USING (SELECT DISTINCT id, branch FROM {deleted}) x"
        " WHERE v.tenant_id = %(tenant)s AND v.kind = 'entry' AND v.id = x.id"
        " AND v.thread_id = %(thread)s AND NOT EXISTS (SELECT 1"
        f" FROM {p}branches b JOIN {p}entries o ON o.tenant_id = b.tenant_id"
        " AND o.thread_id = b.thread_id AND o.branch = b.name AND o.id = x.id"
        " WHERE b.tenant_id = %(tenant)s AND b.thread_id = %(thread)s AND b.name <> x.branch)"
        " RETURNING v.model_id, v.kind),"
        f" dg AS ({_bump(p, 'dv')})"
    )


def _scope(alias: str, visible: Visibility | None, params: dict[str, Any]) -> str:
    """SQL keeping the rows ``visible`` may see (index-friendly: no ``IS NOT DISTINCT``)."""
    if visible is None:
        return ""
    where = ""
    for column, value in (("agent_id", visible.agent_id), ("user_id", visible.user_id)):
        if isinstance(value, Unset):
            continue
        if value is None:
            where += f" AND {alias}.{column} IS NULL"
        else:
            params[f"v_{column}"] = value
            where += f" AND ({alias}.{column} IS NULL OR {alias}.{column} = %(v_{column})s)"
    return where


def _new_entry_json(e: NewEntry) -> dict[str, Any]:
    """One row of the JSON batches the append and compaction statements read."""
    return {
        "id": e.id,
        "role": e.role,
        "content": e.content,
        "name": e.name,
        "tool_calls": tool_calls_value(e.tool_calls, e.extra, e.item),
        "tool_call_id": e.tool_call_id,
        "metadata": e.metadata,
        "state": e.state,
        "token_count": e.token_count,
        "created_at": e.created_at.isoformat(),
        "idempotency_key": e.idempotency_key,
        "fingerprint": None if e.idempotency_key is None else e.fingerprint,
    }


_INT2 = struct.Struct(">h").unpack_from
_INT4 = struct.Struct(">i").unpack_from
_VECTOR_HEAD = struct.Struct(">hiqi").unpack_from  # fields, 8, seq, embedding length


class _VectorRows:
    """``seq, embedding, id, thread_id`` rows of a binary COPY: vectors of ``dim``
    appended to one buffer, rows of another length left out (``last`` counts them)."""

    def __init__(self, dim: int) -> None:
        self.width = dim * 4
        self.seqs: list[int] = []
        self.ids: list[str] = []
        self.threads: list[str | None] = []
        self.vectors = bytearray()
        self.last = -1

    def add(self, row: memoryview) -> None:  # per vector: kept short
        _, _, seq, size = _VECTOR_HEAD(row, 0)
        if seq > self.last:
            self.last = seq
        if size != self.width:
            return
        at = 18 + size
        self.vectors += row[18:at]
        (size,) = _INT4(row, at)
        at += 4 + size
        self.ids.append(str(row[at - size : at], "utf-8"))
        (size,) = _INT4(row, at)
        self.threads.append(None if size < 0 else str(row[at + 4 : at + 4 + size], "utf-8"))
        self.seqs.append(seq)


def _is_disconnect(error: BaseException) -> bool:
    """Whether ``error`` means the connection is gone (not a timeout, not a query error)."""
    if not isinstance(error, psycopg.OperationalError) or isinstance(error, PoolTimeout):
        return False
    if isinstance(error, psycopg.errors.ConnectionException):
        return True
    state = getattr(error, "sqlstate", None)
    return state is None or state in _DISCONNECT_STATES


def _translate(error: psycopg.Error) -> Exception:
    """The memorybank error for a driver error (the caller chains it)."""
    if isinstance(error, PoolTimeout):
        return StoreUnavailable(f"no PostgreSQL connection within the timeout: {error}")
    if isinstance(error, psycopg.errors.UniqueViolation):
        return Conflict(f"already exists: {error.diag.constraint_name or error}")
    if isinstance(error, psycopg.errors.TransactionRollback):
        return Conflict(f"concurrent change, retry: {error}")
    if isinstance(error, psycopg.OperationalError):
        return StoreUnavailable(f"PostgreSQL unavailable: {error}")
    if isinstance(error, psycopg.DataError):  # AsyncMemory validates: a store-level caller's bug
        return StoreError(f"PostgreSQL cannot store this value: {error}")
    if isinstance(error, psycopg.InterfaceError):
        return StoreUnavailable(f"PostgreSQL connection unusable: {error}")
    return StoreError(f"PostgreSQL error: {error}")


def _connect_error(error: psycopg.OperationalError) -> Exception:
    """The memorybank error for a failed connection attempt (the caller chains it)."""
    if _REJECTED.search(str(error)):
        return ConfigurationError(f"PostgreSQL refused the connection: {error}")
    return StoreUnavailable(f"cannot connect to PostgreSQL: {error}")


class _ConnectFailures:
    """The last failed connection attempt of a pool the store owns, ``None`` after a success.

    psycopg_pool only logs why a connection attempt failed; its ``PoolTimeout``
    says nothing of it. The store puts this failure into its message and chain.
    """

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: psycopg.OperationalError | None = None


def _recording_connection(failures: _ConnectFailures) -> type[AsyncConnection[Any]]:
    """A connection class for a pool that records each failed attempt in ``failures``."""

    class _RecordingConnection(AsyncConnection[Any]):
        @classmethod
        async def connect(cls, *args: Any, **kwargs: Any) -> Self:
            try:
                conn = await super().connect(*args, **kwargs)
            except psycopg.OperationalError as error:
                failures.last = error
                raise
            failures.last = None
            return conn

    return _RecordingConnection


def _parse_url(url: str) -> tuple[str, dict[str, str]]:
    """The libpq URL (``+driver`` and memorybank's own query options removed) and those options."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0].lower()
    if scheme not in ("postgresql", "postgres"):
        raise ConfigurationError(f"not a PostgreSQL URL: {url!r}")
    ours: dict[str, str] = {}
    kept: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in ("prefix", "pool_size", "timeout"):
            ours[key] = value
        else:
            kept.append((key, value))
    clean = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept), parts.fragment))
    return clean, ours


class AsyncPostgresStore(AsyncStore):
    """Threads, entries and the rest in PostgreSQL tables. See the module docstring."""

    def __init__(
        self,
        pool_or_connection: AsyncConnectionPool[Any] | AsyncConnection[Any],
        *,
        prefix: str = "memorybank_",
        timeout: float = 10.0,
    ) -> None:
        """Use a pool or connection the caller owns (``close()`` leaves it open)."""
        if not isinstance(prefix, str) or not _PREFIX_RE.fullmatch(prefix):
            raise ConfigurationError(
                f"bad table prefix {prefix!r}: use 1-40 of a-z, 0-9 and _,"
                " not starting with a digit"
            )
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds: {timeout!r}")
        self._pool: AsyncConnectionPool[Any] | None = None
        self._conn: AsyncConnection[Any] | None = None
        if isinstance(pool_or_connection, AsyncConnectionPool):
            self._pool = pool_or_connection
        elif isinstance(pool_or_connection, AsyncConnection):
            self._conn = pool_or_connection
        else:
            raise ConfigurationError(
                "AsyncPostgresStore takes a psycopg AsyncConnectionPool or AsyncConnection"
            )
        self.prefix = prefix
        self.timeout = float(timeout)
        self._owns_pool = False
        self._pool_opened = False
        self._ready = False
        self._closed = False
        self._setup_lock = AsyncLock()
        self._conn_lock = AsyncLock()
        # concurrent plain appends to one thread (with one owner check) share a statement
        self._appends: AsyncCombiner[str, _AppendItem, AppendResult] = AsyncCombiner(
            self._append_combined, limit=_APPEND_BATCHES
        )
        self._sql = _Statements(prefix)
        self._native = False  # vectors in a pgvector column (known after the first use)
        self._hnsw: set[str] = set()  # names of the HNSW indexes on the vectors table
        self._vector_oid = 0  # pgvector's ``vector`` type (the column's), 0 without pgvector
        # An owned pool's target (from_url): connected to once directly before the
        # pool opens, and its failed attempts recorded.
        self._conninfo: tuple[str, dict[str, Any]] | None = None
        self._connect_failures = _ConnectFailures()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int | None = None,
        prefix: str | None = None,
        timeout: float | None = None,
    ) -> AsyncPostgresStore:
        """A store owning a pool of up to ``pool_size`` connections to ``url``.

        Keyword arguments win over the URL's ``prefix``/``pool_size``/``timeout``
        query parameters; defaults are ``20``, ``"memorybank_"`` and ``10.0`` s.
        """
        conninfo, options = _parse_url(url)
        try:
            size = pool_size if pool_size is not None else int(options.get("pool_size", 20))
            wait = timeout if timeout is not None else float(options.get("timeout", 10.0))
        except ValueError as error:
            raise ConfigurationError(f"bad pool_size/timeout in {url!r}") from error
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigurationError(f"pool_size must be a positive integer: {size!r}")
        if not isinstance(wait, int | float) or isinstance(wait, bool) or wait <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds: {wait!r}")
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, math.ceil(wait)),
            "tcp_user_timeout": max(1000, int(wait * 1000)),
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        }
        failures = _ConnectFailures()
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            conninfo,
            kwargs=kwargs,
            connection_class=_recording_connection(failures),
            min_size=1,
            max_size=size,
            open=False,
            timeout=wait,
            name="memorybank",
        )
        store = cls(pool, prefix=prefix or options.get("prefix", "memorybank_"), timeout=wait)
        store._owns_pool = True
        store._conninfo = (conninfo, kwargs)
        store._connect_failures = failures
        return store

    # -- plumbing ------------------------------------------------------------

    async def connect(self) -> None:
        """Connect, create/migrate the schema and detect capabilities now (else: first use)."""
        await self._ensure_ready()

    async def _ensure_ready(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
        if self._ready:
            return
        async with self._setup_lock:
            if self._closed:
                raise StoreClosed("the store is closed")
            if self._ready:
                return
            try:
                if self._owns_pool and not self._pool_opened:
                    await self._first_connect()
                else:
                    async with self._connection() as conn:
                        await self._migrate(conn)
            except psycopg.Error as error:
                raise await self._failed(error) from error
            self._ready = True

    async def _first_connect(self) -> None:
        """Migrate on one direct connection, then open the owned pool.

        A server that refuses the store (down, unknown database or role, bad
        password) fails the call at once with the server's own words: an open
        pool would retry in the background until the timeout and then raise a
        ``PoolTimeout`` saying nothing of why. The pool stays closed until a
        first connection succeeds, so nothing retries between calls.
        """
        assert self._pool is not None and self._conninfo is not None
        conninfo, kwargs = self._conninfo
        try:
            conn = await AsyncConnection.connect(conninfo, **kwargs)
        except psycopg.OperationalError as error:
            raise _connect_error(error) from error
        try:
            await self._migrate(conn)
        finally:
            await conn.close()
        await self._pool.open(wait=False)
        self._pool_opened = True

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        p = self.prefix
        target = len(MIGRATIONS)
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT to_regclass(%s) IS NOT NULL,"
                " EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
                (f"{p}schema_version",),
            )
            row = await cur.fetchone()
            assert row is not None
            has_table, has_vector = bool(row[0]), bool(row[1])
            version = -1
            if has_table:
                await cur.execute(f"SELECT version FROM {p}schema_version WHERE id = 1")
                found = await cur.fetchone()
                version = -1 if found is None else int(found[0])
            if version < target:
                async with conn.transaction():
                    await cur.execute(
                        "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memorybank:{p}",)
                    )
                    await cur.execute(
                        f"CREATE TABLE IF NOT EXISTS {p}schema_version"
                        " (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
                    )
                    await cur.execute(f"SELECT version FROM {p}schema_version WHERE id = 1")
                    found = await cur.fetchone()
                    version = 0 if found is None else int(found[0])
                    for step in MIGRATIONS[version:]:
                        for statement in step:
                            await cur.execute(statement.format(p=p))
                    await cur.execute(
                        f"INSERT INTO {p}schema_version (id, version) VALUES (1, %s)"
                        " ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
                        (max(version, target),),
                    )
            if version > target:
                raise ConfigurationError(
                    f"the {p}* tables are at schema version {version}, newer than this"
                    f" memorybank ({target}): upgrade memorybank"
                )
            await cur.execute(
                "SELECT format_type(a.atttypid, NULL), (SELECT array_agg(i.relname::text)"
                "  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
                "  WHERE x.indrelid = a.attrelid AND i.relname LIKE %s), a.atttypid::bigint"
                " FROM pg_attribute a WHERE a.attrelid = to_regclass(%s)"
                " AND a.attname = 'embedding'",
                (f"{p}vhnsw%", f"{p}vectors"),
            )
            found = await cur.fetchone()
        self._native = found is not None and found[0] == "vector"
        self._hnsw = set(found[1] or ()) if found is not None else set()
        self._vector_oid = int(found[2]) if self._native and found is not None else 0
        caps = set(type(self).capabilities)
        if self._native and has_vector:
            caps.add("pgvector")
        self.capabilities = frozenset(caps)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection in autocommit (driver errors pass through untranslated)."""
        if self._pool is not None:
            async with self._pool.connection(timeout=self.timeout) as conn:
                async with self._autocommit(conn):
                    yield conn
        else:
            assert self._conn is not None
            async with self._conn_lock:
                async with self._autocommit(self._conn):
                    yield self._conn

    @asynccontextmanager
    async def _autocommit(self, conn: AsyncConnection[Any]) -> AsyncIterator[None]:
        if conn.autocommit or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            yield
            return
        await conn.set_autocommit(True)
        try:
            yield
        finally:
            with suppress(psycopg.Error):
                await conn.set_autocommit(False)

    async def _failed(self, error: psycopg.Error) -> Exception:
        """Translate ``error``; after a lost connection, drop the pool's dead connections."""
        if self._closed:
            return StoreClosed("the store is closed")
        last = self._connect_failures.last
        if isinstance(error, PoolTimeout) and last is not None:
            error.__cause__ = last  # the chain then ends with the server's answer
            return StoreUnavailable(
                f"no PostgreSQL connection within {self.timeout:g} s;"
                f" the last connection attempt failed: {last}"
            )
        if _is_disconnect(error) and self._pool is not None:
            with suppress(psycopg.Error):
                await self._pool.check()
        return _translate(error)

    async def _fetch(
        self,
        query: str,
        params: Sequence[Any] | dict[str, Any] | None = None,
        *,
        retry: bool = False,
    ) -> list[tuple[Any, ...]]:
        """Run one statement in autocommit; its rows ([] without a result set).

        ``retry``: run it once more on a fresh connection if the connection was
        lost (only for reads and idempotent writes).
        """
        if not self._ready or self._closed:
            await self._ensure_ready()
        try:
            return await self._execute(query, params)
        except psycopg.Error as error:
            failure = await self._failed(error)
            if not (retry and self._pool is not None and _is_disconnect(error)) or self._closed:
                raise failure from error
        try:
            return await self._execute(query, params)
        except psycopg.Error as error:
            raise await self._failed(error) from error

    async def _execute(
        self, query: str, params: Sequence[Any] | dict[str, Any] | None
    ) -> list[tuple[Any, ...]]:
        # getconn/putconn rather than nested context managers: this is the hot path.
        pool = self._pool
        if pool is None:
            assert self._conn is not None
            async with self._conn_lock, self._autocommit(self._conn):
                return await self._rows(self._conn, query, params)
        conn = await pool.getconn(self.timeout)
        try:
            if conn.autocommit:
                return await self._rows(conn, query, params)
            async with self._autocommit(conn):
                return await self._rows(conn, query, params)
        finally:
            await pool.putconn(conn)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection inside a transaction; driver errors translated."""
        await self._ensure_ready()
        try:
            async with self._connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as error:
            raise await self._failed(error) from error

    @staticmethod
    async def _rows(
        conn: AsyncConnection[Any], query: str, params: Sequence[Any] | dict[str, Any] | None
    ) -> list[tuple[Any, ...]]:
        if isinstance(params, VectorParams) and not registered(conn.adapters):
            register(conn.adapters)  # a connection made before the dumpers were registered
        cur = conn.cursor(row_factory=tuple_row)
        await cur.execute(query, params)
        rows = await cur.fetchall() if cur.pgresult and cur.pgresult.nfields else []
        await cur.close()
        return rows

    async def close(self) -> None:
        """Close the pool if the store owns it; a caller's pool or connection stays open."""
        if self._closed:
            return
        self._closed = True
        cached = self.__dict__.get("_cached_vectors")
        if cached is not None:
            cached.stop()  # the background ANN builders end with the store
        if self._owns_pool and self._pool_opened and self._pool is not None:
            await self._pool.close()

    # -- threads -----------------------------------------------------------

    async def create_thread(self, thread: Thread) -> Thread:
        """Insert the thread and its first branch in one statement."""
        await self._fetch(
            self._sql.create_thread,
            {
                "tenant": thread.tenant_id,
                "id": thread.id,
                "user": thread.user_id,
                "agent": thread.agent_id,
                "title": thread.title,
                "metadata": dump(thread.metadata),
                "status": thread.status,
                "created": thread.created_at,
                "updated": thread.updated_at,
                "branch": thread.current_branch,
            },
        )
        return thread

    async def get_thread(self, tenant: str, thread_id: str) -> Thread | None:
        """The thread row, or ``None``."""
        rows = await self._fetch(self._sql.get_thread, (tenant, thread_id), retry=True)
        return row_to_thread(rows[0]) if rows else None

    async def list_threads(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads by ``updated_at`` then id, newest first, filtered."""
        where = ["tenant_id = %(tenant)s"]
        params: dict[str, Any] = {"tenant": tenant, "limit": limit}
        for column, value in (("user_id", user_id), ("agent_id", agent_id)):
            if isinstance(value, Unset):
                continue
            if value is None:
                where.append(f"{column} IS NULL")
            else:
                where.append(f"{column} = %({column})s")
                params[column] = value
        if status is not None:
            where.append("status = %(status)s")
            params["status"] = status
        query = (
            f"SELECT {THREAD_COLUMNS} FROM {self.prefix}threads WHERE {' AND '.join(where)}"
            " ORDER BY updated_at DESC, id DESC LIMIT %(limit)s::bigint"
        )
        return [row_to_thread(r) for r in await self._fetch(query, params, retry=True)]

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
        """One ``UPDATE ... RETURNING``; a new current branch must exist."""
        sets = ["updated_at = %(updated)s"]
        params: dict[str, Any] = {"tenant": tenant, "id": thread_id, "updated": updated_at}
        if not isinstance(title, Unset):
            sets.append("title = %(title)s::text")
            params["title"] = title
        if not isinstance(metadata, Unset):
            sets.append("metadata = %(metadata)s::json")
            params["metadata"] = dump(metadata)
        if not isinstance(status, Unset):
            sets.append("status = %(status)s")
            params["status"] = status
        branch_check = ""
        if not isinstance(current_branch, Unset):
            sets.append("current_branch = %(branch)s")
            params["branch"] = current_branch
            branch_check = (
                f" AND EXISTS (SELECT 1 FROM {self.prefix}branches b"
                " WHERE b.tenant_id = t.tenant_id"
                " AND b.thread_id = t.id AND b.name = %(branch)s)"
            )
        query = (
            f"UPDATE {self.prefix}threads t SET {', '.join(sets)}"
            f" WHERE t.tenant_id = %(tenant)s AND t.id = %(id)s{branch_check}"
            f" RETURNING {_T_COLS}"
        )
        rows = await self._fetch(query, params)
        if rows:
            return row_to_thread(rows[0])
        if branch_check and await self.get_thread(tenant, thread_id) is not None:
            raise NotFound(f"branch {current_branch!r} not found")
        raise NotFound(f"thread {thread_id!r} not found")

    async def delete_thread(self, tenant: str, thread_id: str) -> bool:
        """Lock the thread row, then delete it with its branches and entries."""
        async with self._transaction() as conn:
            if not await self._rows(conn, self._sql.lock_thread, (tenant, thread_id)):
                return False
            await self._rows(conn, self._sql.delete_thread, {"tenant": tenant, "id": thread_id})
            return True

    # -- entries -----------------------------------------------------------

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
        """One statement: owner check, thread and branch locks, positions, insert."""
        # A key repeated within the batch is sent once; later copies get its entry.
        first_of: dict[str, int] = {}
        sent: list[NewEntry] = []
        slot: list[int] = []
        for new in entries:
            key = new.idempotency_key
            if key is not None and key in first_of:
                slot.append(first_of[key])
                continue
            if key is not None:
                first_of[key] = len(sent)
            slot.append(len(sent))
            sent.append(new)
        if all(e.idempotency_key is None for e in sent):
            if self._pool is None:  # one connection: the caller's, maybe in its transaction
                return await self._append_plain(tenant, thread_id, sent, updated_at, branch, owner)
            return await self._appends.submit(tenant, (thread_id, branch, owner, sent, updated_at))
        batch = dump([{**_new_entry_json(e), "ord": index} for index, e in enumerate(sent, 1)])
        params = {
            "tenant": tenant,
            "thread": thread_id,
            "branch": branch,
            "check_owner": not isinstance(owner, Unset),
            "owner": None if isinstance(owner, Unset) else owner,
            "now": updated_at,
            "batch": batch,
        }
        rows = await self._append_rows(params)
        status, resolved = rows[0][0], rows[0][1]
        if status == 1:
            raise NotFound(f"thread {thread_id!r} not found")
        if status == 2:
            raise ThreadForbidden()
        if status == 4:
            raise key_reused(rows[0][_E_START + _N_ENTRY - 1])
        if status == 3:
            raise NotFound(f"branch {resolved!r} not found")
        thread = row_to_thread(rows[0][2 : 2 + _N_THREAD])
        stored: dict[int, Entry] = {}
        for row in rows:
            ord_ = row[2 + _N_THREAD]
            if ord_ is None:
                continue
            index = int(ord_) - 1
            if row[_E_START] is not None:  # already on the branch (idempotency key)
                stored[index] = row_to_entry(row[_E_START : _E_START + _N_ENTRY])
            else:
                stored[index] = _new_entry(sent[index], thread_id, resolved, row[3 + _N_THREAD])
        if len(stored) < len(sent):  # the branch was deleted after the statement's checks
            raise NotFound(f"branch {resolved!r} not found")
        return AppendResult([stored[i] for i in slot], thread)

    async def _append_combined(
        self, tenant: str, items: Sequence[_AppendItem]
    ) -> list[AppendResult | Exception]:
        """The plain appends of concurrent callers as one statement (``_combine``)."""
        if len(items) == 1:
            thread_id, branch, owner, sent, updated_at = items[0]
            return [await self._append_plain(tenant, thread_id, sent, updated_at, branch, owner)]
        batch: list[dict[str, Any]] = []
        for thread_id, branch, owner, sent, updated_at in items:
            check = not isinstance(owner, Unset)
            for e in sent:
                batch.append(
                    {
                        "ord": len(batch),
                        "thread": thread_id,
                        "branch": branch,
                        "check_owner": check,
                        "owner": owner if check else None,
                        "now": updated_at.isoformat(),
                        **_new_entry_json(e),  # (no idempotency keys here: ignored)
                    }
                )
        rows = await self._fetch(self._sql.append_many, {"tenant": tenant, "batch": dump(batch)})
        stored: dict[tuple[str, str], tuple[str, int]] = {}
        threads: dict[str, Thread] = {}
        for row in rows:
            stored[row[0], row[2]] = (row[1], int(row[3]))
            if row[0] not in threads:
                threads[row[0]] = row_to_thread(row[4 : 4 + _N_THREAD])
        results: list[AppendResult | Exception] = []
        for thread_id, branch, owner, sent, updated_at in items:
            got = [stored.get((thread_id, e.id)) for e in sent]
            if all(g is not None for g in got):
                results.append(
                    AppendResult(
                        [
                            _new_entry(e, thread_id, g[0], g[1])
                            for e, g in zip(sent, got, strict=True)
                            if g is not None
                        ],
                        threads[thread_id],
                    )
                )
                continue
            try:  # refused (nothing of it written): alone, it raises why
                results.append(
                    await self._append_plain(tenant, thread_id, sent, updated_at, branch, owner)
                )
            except Exception as error:
                results.append(error)
        return results

    async def _append_plain(
        self,
        tenant: str,
        thread_id: str,
        sent: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        """A batch without idempotency keys: one statement, nothing to compare."""
        params: dict[str, Any] = {
            "tenant": tenant,
            "thread": thread_id,
            "branch": branch,
            "check_owner": not isinstance(owner, Unset),
            "owner": None if isinstance(owner, Unset) else owner,
            "now": updated_at,
            "count": len(sent),
        }
        if len(sent) == 1:
            one = sent[0]
            calls = tool_calls_value(one.tool_calls, one.extra, one.item)
            params.update(
                id=one.id,
                role=one.role,
                content=one.content,
                name=one.name,
                tool_calls=None if calls is None else dump(calls),
                tool_call_id=one.tool_call_id,
                metadata=dump(one.metadata) if one.metadata else "{}",
                state=dump(one.state) if one.state else "{}",
                token_count=one.token_count,
                created_at=one.created_at,
            )
            query = self._sql.append_one
        else:
            params["batch"] = dump(
                [
                    {
                        "id": e.id,
                        "role": e.role,
                        "content": e.content,
                        "name": e.name,
                        "tool_calls": tool_calls_value(e.tool_calls, e.extra, e.item),
                        "tool_call_id": e.tool_call_id,
                        "metadata": e.metadata,
                        "state": e.state,
                        "token_count": e.token_count,
                        "created_at": e.created_at.isoformat(),
                        "ord": index,
                    }
                    for index, e in enumerate(sent, 1)
                ]
            )
            query = self._sql.append_plain
        rows = await self._fetch(query, params)
        if not rows:
            refusal = await self._fetch(self._sql.append_refusal, params)
            if not refusal:
                raise NotFound(f"thread {thread_id!r} not found")
            user_id, resolved = refusal[0]
            if not isinstance(owner, Unset) and user_id != owner:
                raise ThreadForbidden()
            raise NotFound(f"branch {resolved!r} not found")
        name, base = rows[0][0], rows[0][1]
        if name is None:  # the branch was deleted after the statement's checks
            resolved = branch if branch is not None else rows[0][2 + _N_THREAD - 1]
            raise NotFound(f"branch {resolved!r} not found")
        thread = row_to_thread(rows[0][2 : 2 + _N_THREAD])
        return AppendResult(
            [_new_entry(e, thread_id, name, base + i) for i, e in enumerate(sent, 1)], thread
        )

    async def _append_rows(self, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run the append statement; again when it lost an idempotency-key race.

        The statement's snapshot predates the lock it waits for, so a key stored by
        a writer that committed meanwhile is invisible to it: its insert then fails
        on the unique index and the whole statement rolls back (nothing written).
        The next run sees that entry and compares fingerprints like any other.
        """
        for attempt in range(_KEY_RACES):
            try:
                return await self._fetch(self._sql.append, params)
            except Conflict as error:
                cause = error.__cause__
                lost = (
                    isinstance(cause, psycopg.errors.UniqueViolation)
                    and cause.diag.constraint_name == f"{self.prefix}entries_key"
                    # a caller's transaction is aborted by the error: it cannot go on
                    and (
                        self._conn is None
                        or self._conn.info.transaction_status == pq.TransactionStatus.IDLE
                    )
                )
                if not lost or attempt == _KEY_RACES - 1:
                    raise
        raise AssertionError("unreachable")

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
        """The thread row and a page (backward index scan) in one query."""
        query = self._sql.list_entries[(before is not None, after is not None)]
        rows = await self._fetch(
            query,
            {
                "tenant": tenant,
                "thread": thread_id,
                "branch": branch,
                "limit": limit,
                "offset": offset,
                "before": before,
                "after": after,
            },
            retry=True,
        )
        thread: Thread | None = None
        for row in rows:
            if row[0] is not None:
                thread = row_to_thread(row)
                break
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        name = thread.current_branch if branch is None else branch
        page = [_page_entry(r, thread_id, name) for r in rows if r[0] is None]
        page.sort(key=_position, reverse=newest_first)
        return thread, page

    async def recent_messages(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """One statement, tuple rows straight to provider dicts (no ``Entry`` objects)."""
        rows = await self._fetch(self._sql.recent_messages, (limit, tenant, thread_id), retry=True)
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        if rows[0][1] is None:  # no entry (role is never NULL)
            return rows[0][0], []
        return rows[0][0], messages_of_rows([r[1:] for r in rows])

    async def get_entry(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        """One entry by id on the branch (current when ``None``)."""
        rows = await self._fetch(
            self._sql.get_entry,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "id": entry_id},
            retry=True,
        )
        return row_to_entry(rows[0]) if rows else None

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """Entries by ids on the branch (current when ``None``), in one statement."""
        wanted = list(dict.fromkeys(entry_ids))
        if not wanted:
            return {}
        rows = await self._fetch(
            self._sql.entry_get_many,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "ids": wanted},
            retry=True,
        )
        found = {entry.id: entry for entry in map(row_to_entry, rows)}
        return {eid: found[eid] for eid in wanted if eid in found}

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """Threads by ids, in one statement."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        rows = await self._fetch(self._sql.thread_get_many, (tenant, wanted), retry=True)
        found = {thread.id: thread for thread in map(row_to_thread, rows)}
        return {tid: found[tid] for tid in wanted if tid in found}

    async def entry_get_across(
        self, tenant: str, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], Entry]:
        """Entries of several threads (each on its current branch), in one statement."""
        pairs = list(dict.fromkeys((tid, eid) for tid, ids in wanted.items() for eid in ids))
        if not pairs:
            return {}
        rows = await self._fetch(
            self._sql.entry_get_across,
            {"tenant": tenant, "threads": [t for t, _ in pairs], "ids": [e for _, e in pairs]},
            retry=True,
        )
        return {(entry.thread_id, entry.id): entry for entry in map(row_to_entry, rows)}

    async def count_entries_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, int]:
        """Entries on each thread's current branch, in one statement."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        rows = await self._fetch(self._sql.count_entries_many, (tenant, wanted), retry=True)
        return {str(r[0]): int(r[1]) for r in rows}

    async def entry_windows(
        self, tenant: str, windows: Sequence[tuple[str, int, int]]
    ) -> list[list[Entry]]:
        """Position ranges of several threads' current branches, in one statement."""
        if not windows:
            return []
        rows = await self._fetch(
            self._sql.entry_windows,
            {
                "tenant": tenant,
                "threads": [w[0] for w in windows],
                "firsts": [w[1] for w in windows],
                "lasts": [w[2] for w in windows],
            },
            retry=True,
        )
        out: list[list[Entry]] = [[] for _ in windows]
        for row in rows:
            out[int(row[0]) - 1].append(row_to_entry(row[1:]))
        return out

    async def delete_entries(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        """Delete by ids on the branch; ``NotFound`` for a missing thread."""
        rows = await self._fetch(
            self._sql.delete_entries,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "ids": list(entry_ids)},
        )
        if not rows[0][0]:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][1])

    async def truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        """Delete the entries positioned after ``entry_id`` on the branch."""
        rows = await self._fetch(
            self._sql.truncate_after,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "id": entry_id},
        )
        has_thread, has_entry, removed = rows[0]
        if not has_thread:
            raise NotFound(f"thread {thread_id!r} not found")
        if not has_entry:
            raise NotFound(f"entry {entry_id!r} not found on this branch")
        return int(removed)

    async def clear_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Delete every entry of the branch."""
        rows = await self._fetch(
            self._sql.clear_entries, {"tenant": tenant, "thread": thread_id, "branch": branch}
        )
        if not rows[0][0]:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][1])

    async def count_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """``count(*)`` over the branch's index range."""
        rows = await self._fetch(
            self._sql.count_entries,
            {"tenant": tenant, "thread": thread_id, "branch": branch},
            retry=True,
        )
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][0])

    # -- branches ----------------------------------------------------------

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
        """Check under a key-share lock of the thread, then copy the source's entries."""
        params: dict[str, Any] = {
            "tenant": tenant,
            "thread": thread_id,
            "name": name,
            "from": from_branch,
            "entry": from_entry,
            "created": created_at,
        }
        async with self._transaction() as conn:
            rows = await self._rows(conn, self._sql.branch_check, params)
            if not rows:
                raise NotFound(f"thread {thread_id!r} not found")
            source_last, taken, entry_position = rows[0]
            if source_last is None:
                raise NotFound(f"branch {from_branch!r} not found")
            if taken:
                raise Conflict(f"branch {name!r} already exists")
            if from_entry is not None and entry_position is None:
                raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
            params["upto"] = source_last if from_entry is None else entry_position
            await self._rows(conn, self._sql.branch_copy, params)
        return Branch(
            name=name,
            thread_id=thread_id,
            created_at=created_at,
            from_branch=from_branch,
            from_entry=from_entry,
        )

    async def list_branches(self, tenant: str, thread_id: str) -> list[Branch]:
        """Branches by creation time, then name."""
        rows = await self._fetch(self._sql.list_branches, (tenant, thread_id), retry=True)
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return [row_to_branch(r) for r in rows if r[0] is not None]

    async def delete_branch(self, tenant: str, thread_id: str, name: str) -> bool:
        """Lock the thread row, refuse the current branch, delete the branch and its entries."""
        async with self._transaction() as conn:
            rows = await self._rows(conn, self._sql.lock_thread_branch, (tenant, thread_id))
            if not rows:
                raise NotFound(f"thread {thread_id!r} not found")
            if rows[0][0] == name:
                raise Conflict(f"cannot delete the current branch {name!r}")
            done = await self._rows(
                conn, self._sql.delete_branch, {"tenant": tenant, "thread": thread_id, "name": name}
            )
            return bool(done[0][0])

    # -- working memory ------------------------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Upsert one key."""
        await self._fetch(self._sql.working_set, (tenant, run_id, key, value), retry=True)

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The stored text or ``None``."""
        rows = await self._fetch(self._sql.working_get, (tenant, run_id, key), retry=True)
        return str(rows[0][0]) if rows else None

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key."""
        return bool(await self._fetch(self._sql.working_delete, (tenant, run_id, key)))

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run."""
        rows = await self._fetch(self._sql.working_items, (tenant, run_id), retry=True)
        return {str(k): str(v) for k, v in rows}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Delete every key of the run."""
        await self._fetch(self._sql.working_clear, (tenant, run_id), retry=True)

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Distinct run ids, compared bytewise (``COLLATE "C"``)."""
        return await self._run_ids(f"{self.prefix}working", tenant, after, limit)

    async def _run_ids(
        self, table: str, tenant: str, after: str | None, limit: int | None
    ) -> list[str]:
        sql, params = run_ids_sql(table, tenant, after, limit, "%s", 'run_id COLLATE "C"')
        return [str(row[0]) for row in await self._fetch(sql, params, retry=True)]

    # -- snapshots -------------------------------------------------------------

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
        """Upsert the run's snapshot; checked: one upsert whose update is conditional."""
        params = (tenant, run_id, user_id, value, saved_at)
        if not owner_check:
            await self._fetch(self._sql.snapshot_save, params, retry=True)
        elif not await self._fetch(self._sql.snapshot_save_checked, params, retry=True):
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner, text)`` or ``None``."""
        rows = await self._fetch(self._sql.snapshot_load, (tenant, run_id), retry=True)
        return (rows[0][0], str(rows[0][1])) if rows else None

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete the run's snapshot; checked: under its row lock, in one transaction."""
        if not owner_check:
            return bool(await self._fetch(self._sql.snapshot_delete, (tenant, run_id)))
        async with self._transaction() as conn:
            found = await self._rows(conn, self._sql.snapshot_lock, (tenant, run_id))
            if not found:
                return False
            if found[0][0] not in (None, user_id):
                raise ThreadForbidden("snapshot access forbidden")
            return bool(await self._rows(conn, self._sql.snapshot_delete, (tenant, run_id)))

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Run ids with a snapshot, compared bytewise."""
        return await self._run_ids(f"{self.prefix}snapshots", tenant, after, limit)

    # -- summaries ---------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Insert one summary."""
        await self._fetch(
            self._sql.summary_add,
            (
                tenant,
                summary.id,
                summary.agent_id,
                summary.user_id,
                summary.content,
                summary.created_at,
            ),
        )
        return summary

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for the user and the shared ones, oldest first."""
        params = (tenant, agent_id, *any_user(user_id))
        rows = await self._fetch(self._sql.summary_list, params, retry=True)
        return [row_to_summary(r) for r in rows]

    # -- compaction --------------------------------------------------------------

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
        """Lock the thread row, compare-and-delete the prefix, insert the summary.

        One transaction: the lock comes first, in its own statement, so the
        comparison (a later statement, a later snapshot) sees every change
        committed by a compaction or append that held the lock before.
        """
        params: dict[str, Any] = {
            "tenant": tenant,
            "thread": thread_id,
            "branch": branch,
            "through": through_position,
            "expected": list(expected_ids),
            "updated": updated_at,
            "summary": dump([] if summary is None else [_new_entry_json(summary)]),
        }
        async with self._transaction() as conn:
            locked = await self._rows(
                conn, self._sql.lock_thread_has_branch, (branch, tenant, thread_id)
            )
            if not locked:
                raise NotFound(f"thread {thread_id!r} not found")
            if not locked[0][0]:
                raise NotFound(f"branch {branch!r} not found")
            rows = await self._rows(conn, self._sql.compact_delete, params)
            if not rows[0][0]:
                return False
            await self._rows(conn, self._sql.compact_insert, params)
            return True

    async def update_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """One statement: every change of the batch (the last one per id wins)."""
        by_id = {c[0]: c for c in changes}
        batch = dump(
            [
                {"id": i, "content": content, "state": state, "token_count": tokens}
                for i, content, state, tokens in by_id.values()
            ]
        )
        rows = await self._fetch(
            self._sql.update_entries,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "changes": batch},
        )
        if not rows[0][0]:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][1])

    # -- records -----------------------------------------------------------------

    @asynccontextmanager
    async def _guarded(self, tenant: str, guard: RecordGuard | None) -> AsyncIterator[Any]:
        """A transaction in which ``guard`` holds until it commits (``Conflict`` if not).

        Without a guard: no transaction, the caller's statements run in autocommit.
        """
        if guard is None:
            yield None
            return
        key = (tenant, guard.kind, guard.id)
        async with self._transaction() as conn:
            if guard.revision is None:
                if not await self._rows(conn, self._sql.guard_claim, key):
                    raise guard.failed()
            else:
                found = await self._rows(conn, self._sql.guard_lock, key)
                if not found or found[0][0] != guard.revision:
                    raise guard.failed()
            yield conn
            if guard.revision is None:
                await self._rows(conn, self._sql.guard_release, key)

    async def _write_in(
        self, conn: AsyncConnection[Any] | None, query: str, params: dict[str, Any]
    ) -> list[tuple[Any, ...]]:
        """Run a write in ``conn``'s transaction, or alone in autocommit when ``None``."""
        if conn is None:
            return await self._fetch(query, params)
        return await self._rows(conn, query, params)

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """One ``INSERT ... ON CONFLICT DO UPDATE`` for the batch (the last copy of an id wins).

        Guarded: in a transaction after the guard's check (see ``_guarded``).
        """
        if not records and guard is None:
            return
        latest = {(r.kind, r.id): r for r in records}
        batch = dump(
            [
                {
                    "kind": r.kind,
                    "id": r.id,
                    "agent_id": r.agent_id,
                    "user_id": r.user_id,
                    "key": r.key,
                    "content": r.content,
                    "data": r.data,
                    "created_at": r.created_at.isoformat(),
                    "updated_at": r.updated_at.isoformat(),
                    "expires_at": None if r.expires_at is None else r.expires_at.isoformat(),
                    "revision": r.revision,
                }
                for r in latest.values()
            ]
        )
        async with self._guarded(tenant, guard) as conn:
            if records:
                await self._write_in(conn, self._sql.record_put, {"tenant": tenant, "batch": batch})

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        """One record by primary key."""
        rows = await self._fetch(self._sql.record_get, (tenant, kind, record_id), retry=True)
        return row_to_record(rows[0]) if rows else None

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        """Delete the records and their vectors in one statement (guarded: see ``_guarded``)."""
        ids = list(dict.fromkeys(record_ids))
        if not ids and guard is None:
            return 0
        params = {"tenant": tenant, "kind": kind, "ids": ids}
        async with self._guarded(tenant, guard) as conn:
            rows = await self._write_in(conn, self._sql.record_delete, params) if ids else [(0,)]
        return int(rows[0][0])

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
        """Records of ``kind`` by ``(created_at, id)``, filtered."""
        where = "r.tenant_id = %(tenant)s AND r.kind = %(kind)s"
        params: dict[str, Any] = {"tenant": tenant, "kind": kind, "limit": limit}
        for column, value in (("agent_id", agent_id), ("user_id", user_id), ("key", key)):
            if isinstance(value, Unset):
                continue
            if value is None:
                where += f" AND r.{column} IS NULL"
            else:
                where += f" AND r.{column} = %({column})s"
                params[column] = value
        where += _scope("r", visible_to, params)
        query = (
            f"SELECT {_R_READ} FROM {self.prefix}records r WHERE {where}"
            " ORDER BY r.created_at, r.id LIMIT %(limit)s::bigint"
        )
        return [row_to_record(r) for r in await self._fetch(query, params, retry=True)]

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """One statement: primary-key lookups of ``id = ANY(array)`` (one parameter)."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        rows = await self._fetch(self._sql.record_get_many, (ids, tenant, kind), retry=True)
        found = {row[1]: row_to_record(row) for row in rows}
        return {i: found[i] for i in ids if i in found}

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One statement over the ``records_key`` index (``key = ANY(array)``)."""
        return await self._list_keys(tenant, [kind], keys, visible_to)

    async def record_list_keys_by_kind(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, list[Record]]:
        """One statement for every kind (``kind = ANY(array)`` on the same index)."""
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
        params: dict[str, Any] = {"tenant": tenant, "kinds": list(kinds), "keys": wanted}
        query = (
            f"SELECT {_R_READ} FROM {self.prefix}records r WHERE r.tenant_id = %(tenant)s"
            " AND r.kind = ANY(%(kinds)s::text[]) AND r.key = ANY(%(keys)s::text[])"
            f"{_scope('r', visible_to, params)} ORDER BY r.created_at, r.id"
        )
        return [row_to_record(r) for r in await self._fetch(query, params, retry=True)]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One range of the ``records_created`` index from a row-value cursor."""
        params: dict[str, Any] = {"tenant": tenant, "kind": kind, "limit": limit}
        where = "r.tenant_id = %(tenant)s AND r.kind = %(kind)s"
        if after is not None:
            where += " AND (r.created_at, r.id) > (%(at)s::timestamptz, %(after)s::text)"
            params["at"], params["after"] = after
        where += _scope("r", visible_to, params)
        query = (
            f"SELECT {_R_READ} FROM {self.prefix}records r WHERE {where}"
            " ORDER BY r.created_at, r.id LIMIT %(limit)s::bigint"
        )
        return [row_to_record(r) for r in await self._fetch(query, params, retry=True)]

    # -- search ------------------------------------------------------------------

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
        """Full text search over the generated tsvectors, ranked by ``ts_rank_cd``.

        One statement: the best ``k`` entries ``UNION ALL`` the best ``k`` records.
        """
        terms = _tsquery(query)
        record_kinds = [kind for kind in dict.fromkeys(kinds) if kind != "entry"]
        want_entries = "entry" in kinds
        if thread_id is not None:
            record_kinds = []
        if not terms or k <= 0 or not (want_entries or record_kinds):
            return []
        p = self.prefix
        params: dict[str, Any] = {"tenant": tenant, "q": terms, "k": k}
        # A scalar subquery: computed once per statement, even in a generic plan
        # (psycopg prepares repeated statements), and still usable by the GIN index.
        tsq = "(SELECT to_tsquery('english', %(q)s))"
        parts: list[str] = []
        if want_entries:
            where = ""
            if thread_id is not None:
                where += " AND e.thread_id = %(thread)s"
                params["thread"] = thread_id
            where += _scope("t", visible_to, params)
            parts.append(
                f"(SELECT 'entry', e.id, e.thread_id, e.branch, ts_rank_cd(e.search, {tsq}) AS s"
                f" FROM {p}entries e JOIN {p}threads t ON t.tenant_id = e.tenant_id"
                f" AND t.id = e.thread_id WHERE e.search @@ {tsq} AND e.tenant_id = %(tenant)s"
                f"{where} ORDER BY s DESC, e.id LIMIT %(k)s)"
            )
        if record_kinds:
            params["kinds"] = record_kinds
            where = _scope("r", visible_to, params)
            parts.append(
                f"(SELECT r.kind, r.id, NULL, NULL, ts_rank_cd(r.search, {tsq}) AS s"
                f" FROM {p}records r WHERE r.search @@ {tsq} AND r.tenant_id = %(tenant)s"
                f" AND r.kind = ANY(%(kinds)s::text[]){where} ORDER BY s DESC, r.id LIMIT %(k)s)"
            )
        rows = await self._fetch(" UNION ALL ".join(parts), params, retry=True)
        hits = [SearchHit(r[0], r[1], float(r[4]), r[2], r[3]) for r in rows]
        hits.sort(key=_hit_order)
        return hits[:k]

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Upsert unit vectors (pgvector or float32 bytea) in one statement.

        The vectors go as one binary parameter (pgvector's binary ``vector[]``,
        or ``bytea[]``): no float is turned into text on either side.
        """
        if not items:
            return
        await self._ensure_ready()
        latest = {(i.kind, i.id, i.model_id): i for i in items}
        columns: dict[str, list[Any]] = {
            "kinds": [],
            "ids": [],
            "models": [],
            "threads": [],
            "dims": [],
            "embeddings": [],
        }
        for item in latest.values():
            blob = unit_vector_bytes(item.vector)
            columns["kinds"].append(item.kind)
            columns["ids"].append(item.id)
            columns["models"].append(item.model_id)
            columns["threads"].append(item.thread_id)
            columns["dims"].append(len(blob) // 4)
            columns["embeddings"].append(blob)
        if self._native:
            params = VectorParams(tenant=tenant, **columns)
            params["embeddings"] = Vectors(columns["embeddings"], self._vector_oid)
            await self._fetch(self._sql.vector_put, params)
        else:
            await self._fetch(self._sql.vector_put_stamped, {"tenant": tenant, **columns})

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
        """Cosine top ``k``: in SQL with pgvector (``<=>``), else numpy over cached vectors.

        Without pgvector the vectors are kept in process (``_vector_cache``), kept
        current through the ``vector_stamps`` counters, and the hits' scope is
        confirmed in SQL.
        """
        await self._ensure_ready()
        if not self._native:
            from memorybank._async.stores._vector_cache import CachedVectors

            cache: CachedVectors | None = self.__dict__.get("_cached_vectors")
            if cache is None:
                cache = self.__dict__.setdefault("_cached_vectors", CachedVectors())
            return await cache.search(
                self,
                tenant,
                vector,
                model_id=model_id,
                kinds=kinds,
                k=k,
                thread_id=thread_id,
                visible_to=visible_to,
            )
        return await self._vc_exact(tenant, vector, model_id, kinds, k, thread_id, visible_to)

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int
    ) -> CachedRows:
        import numpy as np

        from memorybank._async.stores._vector_cache import BlockRows

        # Vectors, then their owners' scope: two single-table reads, joined here (a join
        # in SQL can become a nested loop over every record before the tables have
        # statistics, minutes at 20k rows). The vectors come by COPY in binary, appended
        # to one buffer: no object per vector, half the bytes of bytea's hex text.
        rows = await self._copy_vectors((tenant, model_id, kind, after), dim)
        block = np.frombuffer(rows.vectors, dtype="<f4").reshape(len(rows.ids), dim)
        found = BlockRows(block=block, last=rows.last)
        if not rows.ids:
            return found
        if kind == "entry":
            owners = sorted({t for t in rows.threads if t is not None})
            scope = await self._fetch(self._sql.vector_owner_threads, (tenant, owners), retry=True)
        elif after < 0:  # every record of the kind: one range of the primary key
            scope = await self._fetch(self._sql.vector_owner_kind, (tenant, kind), retry=True)
        else:
            wanted = sorted(set(rows.ids))
            scope = await self._fetch(
                self._sql.vector_owner_records, (tenant, kind, wanted), retry=True
            )
        owner: dict[str | None, tuple[Any, Any]] = {str(r[0]): (r[1], r[2]) for r in scope}
        keys: list[str] | list[str | None] = rows.threads if kind == "entry" else rows.ids
        scopes = [owner.get(key) for key in keys]
        found.rowids, found.ids, found.threads = rows.seqs, rows.ids, rows.threads
        found.agents = [None if s is None else s[0] for s in scopes]
        found.users = [None if s is None else s[1] for s in scopes]
        found.visible = [s is not None for s in scopes]
        return found

    async def _copy_vectors(self, params: Sequence[Any], dim: int) -> _VectorRows:
        """``vector_rows`` by ``COPY ... TO STDOUT`` in binary, each row (the header and
        trailer left out) parsed by ``_VectorRows``; retried once on a lost connection."""
        statement = f"COPY ({self._sql.vector_rows}) TO STDOUT (FORMAT binary)"
        for attempt in (1, 2):
            into = _VectorRows(dim)
            try:
                async with self._connection() as conn:
                    async with conn.cursor().copy(statement, params) as stream:
                        first = True
                        async for data in stream:
                            view = memoryview(data)
                            if first:  # the header comes with the first row
                                view = view[19 + _INT4(view, 15)[0] :]
                                first = False
                            if len(view) >= 2 and _INT2(view, 0)[0] != -1:
                                into.add(view)
                return into
            except psycopg.Error as error:
                failure = await self._failed(error)
                if attempt == 2 or self._closed or not _is_disconnect(error):
                    raise failure from error
        raise AssertionError("unreachable")

    async def _vc_live(self, tenant: str, model_id: str, kind: str) -> dict[str, int]:
        """``id -> seq`` of every stored vector of the key (no vector read)."""
        rows = await self._fetch(
            f"SELECT id, seq FROM {self.prefix}vectors WHERE tenant_id = %s AND model_id = %s"
            " AND kind = %s",
            (tenant, model_id, kind),
            retry=True,
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def _vc_check(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        shortlist: Mapping[str, Sequence[tuple[str, str | None]]],
        dim: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> tuple[dict[str, tuple[int, int]], set[tuple[str, str]]]:
        ids = {kind: [rid for rid, _ in pairs] for kind, pairs in shortlist.items()}
        pairs = [
            (kind, rid)
            for kind, got in ids.items()
            if kind == "entry" or thread_id is None
            for rid in dict.fromkeys(got)
        ]
        p = self.prefix
        params: dict[str, Any] = {"tenant": tenant, "model": model_id, "dim": dim}
        # One statement (one snapshot): the counters, then the confirmation of the ids.
        parts: list[str] = []
        if kinds:
            params["kinds"] = list(kinds)
            parts.append(
                "SELECT 's'::text, kind, NULL::text, NULL::text, version, generation"
                f" FROM {p}vector_stamps WHERE tenant_id = %(tenant)s"
                " AND model_id = %(model)s AND kind = ANY(%(kinds)s::text[])"
            )
        # Driven by the ids (primary-key lookups, whatever the statistics say), with the
        # owner's scope as in the exact search; the thread is checked below. LIMIT 1
        # keeps each subquery per id (not flattened into a scan of every vector), and
        # "model_id || ''" keeps the planner on the primary key (tenant, kind, id) even
        # before the table has statistics (else the model index looks as cheap).
        vector = (
            "v.tenant_id = %(tenant)s AND v.kind = x.kind AND v.id = x.id"
            " AND v.model_id || '' = %(model)s AND v.dim = %(dim)s"
        )
        entries = [rid for kind, rid in pairs if kind == "entry"]
        records = [(kind, rid) for kind, rid in pairs if kind != "entry"]
        if entries:
            params["eids"] = entries
            parts.append(
                "SELECT 'c', 'entry', x.id, o.thread_id, NULL::bigint, NULL::bigint"
                " FROM unnest(%(eids)s::text[]) AS x(id),"
                f" LATERAL (SELECT v.thread_id FROM {p}vectors v"
                f" WHERE {vector.replace('x.kind', chr(39) + 'entry' + chr(39))} LIMIT 1) o,"
                f" LATERAL (SELECT 1 FROM {p}threads t WHERE t.tenant_id = %(tenant)s"
                f" AND t.id = o.thread_id{_scope('t', visible_to, params)} LIMIT 1) th"
            )
        if records:
            params["rkinds"] = [kind for kind, _ in records]
            params["rids"] = [rid for _, rid in records]
            parts.append(
                "SELECT 'c', x.kind, x.id, NULL, NULL::bigint, NULL::bigint"
                " FROM unnest(%(rkinds)s::text[], %(rids)s::text[])"
                f" AS x(kind, id), LATERAL (SELECT 1 FROM {p}vectors v WHERE {vector} LIMIT 1) o,"
                f" LATERAL (SELECT 1 FROM {p}records r WHERE r.tenant_id = %(tenant)s"
                " AND r.kind = x.kind AND r.id = x.id"
                f"{_scope('r', visible_to, params)} LIMIT 1) rr"
            )
        stamps: dict[str, tuple[int, int]] = {}
        confirmed: set[tuple[str, str]] = set()
        if not parts:
            return stamps, confirmed
        for row in await self._fetch(" UNION ALL ".join(parts), params, retry=True):
            if row[0] == "s":
                stamps[str(row[1])] = (int(row[4]), int(row[5]))
            elif thread_id is None or row[3] == thread_id:
                confirmed.add((str(row[1]), str(row[2])))
        return stamps, confirmed

    async def _vc_exact(
        self,
        tenant: str,
        vector: Sequence[float],
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[SearchHit]:
        """Exact (or HNSW) search in SQL with pgvector; without it, numpy over every row."""
        unit = _unit_query(vector)
        record_kinds = [kind for kind in dict.fromkeys(kinds) if kind != "entry"]
        want_entries = "entry" in kinds
        if thread_id is not None:
            record_kinds = []
        if unit is None or k <= 0 or not (want_entries or record_kinds):
            return []
        await self._ensure_ready()
        dim = int(unit.shape[0])
        index = self._hnsw_name(model_id, dim) if self._native else None
        if index is not None and index not in self._hnsw:
            index = None
        if not self._native:
            select, tail = ", v.embedding", ")"
        elif index is None:  # exact: every vector in scope, distances computed in SQL
            # the query vector parsed once (a scalar subquery), not once per row
            select = ", v.embedding <=> (SELECT %(q)s::vector) AS d"
            tail = " ORDER BY d, v.id LIMIT %(k)s)"
        else:  # the ORDER BY is the indexed expression (the typed cast), nothing else
            distance = f"v.embedding::vector({dim}) <=> %(q)s::vector({dim})"
            select = f", {distance} AS d"
            tail = f" ORDER BY {distance} LIMIT %(k)s)"
        query, params = self._vector_query(
            tenant,
            model_id,
            dim,
            want_entries,
            record_kinds,
            thread_id,
            visible_to,
            select,
            tail,
            index,
        )
        params["k"] = k
        if not self._native:
            from memorybank.stores._vectors import top_k

            rows = await self._fetch(query, params, retry=True)
            best = top_k(vector, [bytes(r[3]) for r in rows], k)
            return [SearchHit(rows[i][0], rows[i][1], score, rows[i][2]) for i, score in best]
        bound = VectorParams(params, q=Vector(unit))
        if index is not None:
            rows = await self._hnsw_search(query, bound, k)
        else:
            rows = await self._fetch(query, bound, retry=True)
        hits = [SearchHit(r[0], r[1], 1.0 - float(r[3]), r[2]) for r in rows]
        hits.sort(key=_hit_order)
        return hits[:k]

    def _vector_query(
        self,
        tenant: str,
        model_id: str,
        dim: int,
        want_entries: bool,
        record_kinds: list[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        select: str,
        tail: str,
        index: str | None,
    ) -> tuple[str, dict[str, Any]]:
        """The scoped vector query (entries and records parts)."""
        p = self.prefix
        params: dict[str, Any] = {"tenant": tenant, "model": model_id, "dim": dim}
        parts: list[str] = []
        if want_entries:
            where = ""
            if thread_id is not None:
                where += " AND v.thread_id = %(thread)s"
                params["thread"] = thread_id
            scope = _scope("t", visible_to, params)
            owner = "t.tenant_id = v.tenant_id AND t.id = v.thread_id"
            if index is None:  # exact: a hash join over every vector in scope
                source = f"{p}vectors v JOIN {p}threads t ON {owner}"
                check = scope
            else:  # HNSW: a per-candidate check the index scan's rows go through
                source = f"{p}vectors v"
                check = f" AND {_row_check(f'{p}threads t', owner + scope)}"
            parts.append(
                f"(SELECT 'entry', v.id, v.thread_id{select} FROM {source}"
                " WHERE v.tenant_id = %(tenant)s AND v.model_id = %(model)s"
                f" AND v.dim = %(dim)s AND v.kind = 'entry'{where}{check}{tail}"
            )
        if record_kinds:
            params["kinds"] = record_kinds
            scope = _scope("r", visible_to, params)
            owner = "r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
            if index is None:
                source = f"{p}vectors v JOIN {p}records r ON {owner}"
                check = scope
            else:
                source = f"{p}vectors v"
                check = f" AND {_row_check(f'{p}records r', owner + scope)}"
            parts.append(
                f"(SELECT v.kind, v.id, NULL{select} FROM {source}"
                " WHERE v.tenant_id = %(tenant)s AND v.model_id = %(model)s"
                f" AND v.dim = %(dim)s AND v.kind = ANY(%(kinds)s::text[]){check}{tail}"
            )
        return " UNION ALL ".join(parts), params

    async def _hnsw_search(
        self,
        query: str,
        params: VectorParams,
        k: int,
        *,
        settings: Mapping[str, str] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Run ``query`` with pgvector's iterative index scan on, in one round trip.

        The settings and the query go out as one pipeline (extended protocol,
        one Sync): one implicit transaction, so the transaction-local settings
        (``set_config(..., true)``) apply to the query and never outlive it. The
        query is prepared by psycopg once it repeats; the query vector is bound
        in binary. ``settings``: more transaction-local settings (tests force plans).
        """
        if not self._ready or self._closed:
            await self._ensure_ready()
        ef = max(40, min(1000, 2 * k))
        local = {"hnsw.iterative_scan": "strict_order", "hnsw.ef_search": str(ef)}
        local.update(settings or {})
        apply = "SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(local))
        try:
            async with self._connection() as conn:
                if not registered(conn.adapters):
                    register(conn.adapters)
                # The partial index's predicate as constants, so that the plan psycopg
                # prepares (and the server may cache) can use the index.
                for name in ("model", "dim"):
                    constant = sql.Literal(params[name]).as_string(conn).replace("%", "%%")
                    query = query.replace(f"%({name})s", constant)
                cur = conn.cursor(row_factory=tuple_row)
                async with conn.pipeline():  # results are read at its end (the Sync)
                    await conn.execute(apply, [v for pair in local.items() for v in pair])
                    await cur.execute(query, params)
                rows = await cur.fetchall()
                await cur.close()
                return rows
        except psycopg.Error as error:
            raise await self._failed(error) from error

    def _hnsw_name(self, model_id: str, dimensions: int) -> str:
        digest = hashlib.sha1(model_id.encode()).hexdigest()[:10]  # a name, not security
        return f"{self.prefix}vhnsw_{dimensions}_{digest}"

    async def create_vector_index(
        self, model_id: str, dimensions: int, *, concurrently: bool = False
    ) -> bool:
        """Create (if missing) an HNSW index for ``model_id``'s ``dimensions``-d vectors.

        pgvector only: a partial expression index ``(embedding::vector(n))
        vector_cosine_ops WHERE model_id = ... AND dim = n``. Searches of this
        store for that model then use it (approximate, with pgvector's iterative
        scan so filters still fill ``k``); other stores notice it when they
        connect. ``concurrently`` builds it without blocking writes (slower).
        Returns ``False`` without pgvector.
        """
        await self._ensure_ready()
        if not self._native:
            return False
        if (
            isinstance(dimensions, bool)
            or not isinstance(dimensions, int)
            or not (0 < dimensions <= 2000)
        ):
            raise InvalidInput("HNSW indexes take 1 to 2000 dimensions", field="dimensions")
        name = self._hnsw_name(model_id, dimensions)
        try:
            async with self._connection() as conn:
                statement = sql.SQL(
                    "CREATE INDEX {how} IF NOT EXISTS {name} ON {table} USING hnsw"
                    " ((embedding::vector({dim})) vector_cosine_ops)"
                    " WHERE model_id = {model} AND dim = {dim}"
                ).format(
                    how=sql.SQL("CONCURRENTLY" if concurrently else ""),
                    name=sql.Identifier(name),
                    table=sql.Identifier(f"{self.prefix}vectors"),
                    dim=sql.Literal(dimensions),
                    model=sql.Literal(model_id),
                )
                await conn.execute(statement)
        except psycopg.Error as error:
            raise await self._failed(error) from error
        self._hnsw.add(name)
        return True

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        """The stored (unit) vectors by id."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        await self._ensure_ready()
        query = self._sql.vector_get.format(text="::text" if self._native else "")
        rows = await self._fetch(query, (tenant, kind, model_id, wanted), retry=True)
        found = {
            str(vid): (
                [float(x) for x in json.loads(value)]
                if self._native
                else vector_from_bytes(bytes(value))
            )
            for vid, value in rows
        }
        return {vid: found[vid] for vid in wanted if vid in found}

    # -- erasure -----------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Lock the user's threads, then delete them with everything else the user owns."""
        async with self._transaction() as conn:
            locked = await self._rows(conn, self._sql.lock_user_threads, (tenant, user_id))
            ids = [r[0] for r in locked]
            rows = await self._rows(
                conn, self._sql.forget_user, {"tenant": tenant, "user": user_id, "ids": ids}
            )
            return int(rows[0][0])


class _Statements:
    """Every SQL statement of one prefix, built once."""

    def __init__(self, p: str) -> None:
        self.create_thread = (
            f"WITH t AS (INSERT INTO {p}threads (tenant_id, id, user_id, agent_id, title, metadata,"
            " status, created_at, updated_at, current_branch) VALUES (%(tenant)s, %(id)s,"
            " %(user)s::text, %(agent)s::text, %(title)s::text, %(metadata)s::json, %(status)s,"
            " %(created)s, %(updated)s, %(branch)s) RETURNING tenant_id, id, created_at,"
            " current_branch)"
            f" INSERT INTO {p}branches (tenant_id, thread_id, name, created_at)"
            " SELECT tenant_id, id, current_branch, created_at FROM t"
        )
        self.get_thread = (
            f"SELECT {THREAD_COLUMNS} FROM {p}threads WHERE tenant_id = %s AND id = %s"
        )
        self.lock_thread = f"SELECT 1 FROM {p}threads WHERE tenant_id = %s AND id = %s FOR UPDATE"
        self.lock_thread_branch = (
            f"SELECT current_branch FROM {p}threads WHERE tenant_id = %s AND id = %s"
            " FOR NO KEY UPDATE"
        )
        self.delete_thread = (
            f"WITH b AS (DELETE FROM {p}branches WHERE tenant_id = %(tenant)s"
            " AND thread_id = %(id)s),"
            f" e AS (DELETE FROM {p}entries WHERE tenant_id = %(tenant)s AND thread_id = %(id)s),"
            f" v AS (DELETE FROM {p}vectors WHERE tenant_id = %(tenant)s AND thread_id = %(id)s"
            " AND kind = 'entry' RETURNING model_id, kind),"
            f" g AS ({_bump(p, 'v')})"
            f" DELETE FROM {p}threads WHERE tenant_id = %(tenant)s AND id = %(id)s"
        )
        self.append = _APPEND.format(
            p=p,
            e_cols=_E_COLS,
            t_cols=_T_COLS,
            th_cols=_cols("th", THREAD_COLUMNS),
            x_cols=_cols("x", ENTRY_COLUMNS),
            null_entry=_NULL_ENTRY,
        )
        self.append_plain = _APPEND_PLAIN.format(
            p=p, t_cols=_T_COLS, th_cols=_cols("th", THREAD_COLUMNS), rows=_BATCH_ROWS
        )
        self.append_one = _APPEND_PLAIN.format(
            p=p, t_cols=_T_COLS, th_cols=_cols("th", THREAD_COLUMNS), rows=_ONE_ROW
        )
        self.append_many = _APPEND_MANY.format(
            p=p, t_cols=_T_COLS, th_cols=_cols("th", THREAD_COLUMNS)
        )
        self.append_refusal = (
            f"SELECT t.user_id, coalesce(%(branch)s::text, t.current_branch) FROM {p}threads t"
            " WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s"
        )
        # history(): the owner and the current branch's last N (role, content, name,
        # tool_calls, tool_call_id), oldest first, in one statement; an empty thread
        # gives one row of NULLs, an absent one none.
        self.recent_messages = (
            "SELECT t.user_id, e.role, e.content, e.name, e.tool_calls, e.tool_call_id"
            f" FROM {p}threads t LEFT JOIN LATERAL (SELECT position, role, content, name,"
            f" tool_calls, tool_call_id FROM {p}entries WHERE tenant_id = t.tenant_id"
            " AND thread_id = t.id AND branch = t.current_branch"
            " ORDER BY position DESC LIMIT %s::bigint) e ON true"
            " WHERE t.tenant_id = %s AND t.id = %s ORDER BY e.position"
        )
        self.list_entries: dict[tuple[bool, bool], str] = {}
        for has_before in (False, True):
            for has_after in (False, True):
                filters = ""
                if has_before:
                    filters += " AND created_at < %(before)s"
                if has_after:
                    filters += " AND created_at > %(after)s"
                self.list_entries[(has_before, has_after)] = _LIST.format(
                    p=p,
                    thread_columns=THREAD_COLUMNS,
                    null_page=_NULL_PAGE,
                    null_thread=_NULL_THREAD,
                    page_columns=_PAGE_COLUMNS,
                    filters=filters,
                )
        current = (
            f"coalesce(%(branch)s::text, (SELECT current_branch FROM {p}threads"
            " WHERE tenant_id = %(tenant)s AND id = %(thread)s))"
        )
        self.get_entry = (
            f"SELECT {_E_READ} FROM {p}entries e WHERE tenant_id = %(tenant)s"
            f" AND thread_id = %(thread)s AND branch = {current} AND id = %(id)s"
        )
        # Per id, the first row at or after (tenant, thread, branch, id) in the id index,
        # kept when it is that row: a row comparison only that index serves in order.
        # (With plain equalities a never-analyzed table ties it with the primary key
        # (tenant, thread, branch, position), and the planner picked the primary key,
        # reading the whole branch per id: 0.7 s per call at 10,000 entries.)
        self.entry_get_many = (
            f"SELECT {_E_READ} FROM unnest(%(ids)s::text[]) AS x(id), LATERAL (SELECT *"
            f" FROM {p}entries WHERE (tenant_id, thread_id, branch, id)"
            f" >= (%(tenant)s, %(thread)s, {current}, x.id)"
            " ORDER BY tenant_id, thread_id, branch, id LIMIT 1) e"
            f" WHERE e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s"
            f" AND e.branch = {current} AND e.id = x.id"
        )
        self.thread_get_many = (
            f"SELECT {THREAD_COLUMNS} FROM {p}threads WHERE tenant_id = %s AND id = ANY(%s::text[])"
        )
        self.count_entries_many = (
            f"SELECT t.id, (SELECT count(*) FROM {p}entries e WHERE e.tenant_id = t.tenant_id"
            " AND e.thread_id = t.id AND e.branch = t.current_branch)"
            f" FROM {p}threads t WHERE t.tenant_id = %s AND t.id = ANY(%s::text[])"
        )
        on_current = (
            f" JOIN {p}threads t ON t.tenant_id = %(tenant)s AND t.id = w.thread_id"
            f" JOIN {p}entries e ON e.tenant_id = t.tenant_id AND e.thread_id = t.id"
            " AND e.branch = t.current_branch"
        )
        self.entry_get_across = (
            f"SELECT {_E_READ} FROM unnest(%(threads)s::text[], %(ids)s::text[])"
            f" AS w(thread_id, id){on_current} AND e.id = w.id"
        )
        self.entry_windows = (
            f"SELECT w.n, {_E_READ} FROM unnest(%(threads)s::text[], %(firsts)s::bigint[],"
            f" %(lasts)s::bigint[]) WITH ORDINALITY AS w(thread_id, first, last, n){on_current}"
            " AND e.position BETWEEN w.first AND w.last ORDER BY w.n, e.position"
        )
        thread_cte = (
            f"WITH t AS (SELECT coalesce(%(branch)s::text, current_branch) AS branch"
            f" FROM {p}threads WHERE tenant_id = %(tenant)s AND id = %(thread)s)"
        )
        in_branch = "e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s AND e.branch = t.branch"
        self.delete_entries = (
            f"{thread_cte}, d AS (DELETE FROM {p}entries e USING t WHERE {in_branch}"
            " AND e.id = ANY(%(ids)s::text[]) RETURNING e.id, e.branch),"
            f"{_drop_entry_vectors(p, 'd')}"
            " SELECT EXISTS (SELECT 1 FROM t), (SELECT count(*) FROM d)"
        )
        self.truncate_after = (
            f"{thread_cte}, x AS (SELECT e.position FROM {p}entries e, t WHERE {in_branch}"
            " AND e.id = %(id)s),"
            f" d AS (DELETE FROM {p}entries e USING t, x WHERE {in_branch}"
            " AND e.position > x.position RETURNING e.id, e.branch),"
            f"{_drop_entry_vectors(p, 'd')}"
            " SELECT EXISTS (SELECT 1 FROM t), EXISTS (SELECT 1 FROM x), (SELECT count(*) FROM d)"
        )
        self.clear_entries = (
            f"{thread_cte}, d AS (DELETE FROM {p}entries e USING t WHERE {in_branch}"
            f" RETURNING e.id, e.branch),{_drop_entry_vectors(p, 'd')}"
            " SELECT EXISTS (SELECT 1 FROM t), (SELECT count(*) FROM d)"
        )
        self.count_entries = (
            f"{thread_cte} SELECT (SELECT count(*) FROM {p}entries e WHERE {in_branch}) FROM t"
        )
        self.branch_check = (
            f"SELECT (SELECT b.last_position FROM {p}branches b WHERE b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = %(from)s),"
            f" EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = %(name)s),"
            f" (SELECT e.position FROM {p}entries e WHERE e.tenant_id = t.tenant_id"
            " AND e.thread_id = t.id AND e.branch = %(from)s AND e.id = %(entry)s::text)"
            f" FROM {p}threads t WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s"
            " FOR KEY SHARE OF t"
        )
        self.branch_copy = (
            f"WITH b AS (INSERT INTO {p}branches (tenant_id, thread_id, name, created_at,"
            " from_branch, from_entry, last_position) VALUES (%(tenant)s, %(thread)s, %(name)s,"
            " %(created)s, %(from)s, %(entry)s::text, %(upto)s))"
            f" INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content,"
            " name, tool_calls, tool_call_id, metadata, state, token_count, created_at,"
            " idempotency_key, fingerprint)"
            " SELECT tenant_id, thread_id, %(name)s, position, id, role, content, name, tool_calls,"
            " tool_call_id, metadata, state, token_count, created_at, idempotency_key, fingerprint"
            f" FROM {p}entries WHERE tenant_id = %(tenant)s AND thread_id = %(thread)s"
            " AND branch = %(from)s AND position <= %(upto)s"
        )
        self.list_branches = (
            "SELECT b.name, b.thread_id, b.created_at, b.from_branch, b.from_entry"
            f" FROM {p}threads t LEFT JOIN {p}branches b ON b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id WHERE t.tenant_id = %s AND t.id = %s"
            " ORDER BY b.created_at, b.name"
        )
        self.delete_branch = (
            f"WITH b AS (DELETE FROM {p}branches WHERE tenant_id = %(tenant)s"
            " AND thread_id = %(thread)s AND name = %(name)s RETURNING 1),"
            f" d AS (DELETE FROM {p}entries WHERE tenant_id = %(tenant)s"
            " AND thread_id = %(thread)s AND branch = %(name)s RETURNING id, branch),"
            f"{_drop_entry_vectors(p, 'd')}"
            " SELECT EXISTS (SELECT 1 FROM b)"
        )
        self.working_set = (
            f"INSERT INTO {p}working (tenant_id, run_id, key, value) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (tenant_id, run_id, key) DO UPDATE SET value = EXCLUDED.value"
        )
        self.working_get = (
            f"SELECT value FROM {p}working WHERE tenant_id = %s AND run_id = %s AND key = %s"
        )
        self.working_delete = (
            f"DELETE FROM {p}working WHERE tenant_id = %s AND run_id = %s AND key = %s RETURNING 1"
        )
        self.working_items = (
            f"SELECT key, value FROM {p}working WHERE tenant_id = %s AND run_id = %s ORDER BY key"
        )
        self.working_clear = f"DELETE FROM {p}working WHERE tenant_id = %s AND run_id = %s"
        self.snapshot_save = (
            f"INSERT INTO {p}snapshots (tenant_id, run_id, user_id, value, saved_at)"
            " VALUES (%s, %s, %s::text, %s, %s) ON CONFLICT (tenant_id, run_id) DO UPDATE"
            " SET user_id = EXCLUDED.user_id, value = EXCLUDED.value, saved_at = EXCLUDED.saved_at"
        )
        # The conflicting row is locked before the WHERE is evaluated: no row comes back
        # exactly when another user owns the run (the check and the write are one step).
        self.snapshot_save_checked = (
            self.snapshot_save + f" WHERE {p}snapshots.user_id IS NULL"
            f" OR {p}snapshots.user_id = EXCLUDED.user_id RETURNING 1"
        )
        self.snapshot_lock = (
            f"SELECT user_id FROM {p}snapshots WHERE tenant_id = %s AND run_id = %s FOR UPDATE"
        )
        self.snapshot_load = (
            f"SELECT user_id, value FROM {p}snapshots WHERE tenant_id = %s AND run_id = %s"
        )
        self.snapshot_delete = (
            f"DELETE FROM {p}snapshots WHERE tenant_id = %s AND run_id = %s RETURNING 1"
        )
        self.summary_add = (
            f"INSERT INTO {p}summaries (tenant_id, id, agent_id, user_id, content, created_at)"
            " VALUES (%s, %s, %s, %s::text, %s, %s)"
        )
        self.summary_list = (
            f"SELECT id, agent_id, user_id, content, created_at FROM {p}summaries"
            " WHERE tenant_id = %s AND agent_id = %s"
            " AND (%s::boolean OR user_id IS NULL OR user_id = %s::text) ORDER BY created_at, seq"
        )
        self.lock_user_threads = (
            f"SELECT id FROM {p}threads WHERE tenant_id = %s AND user_id = %s FOR UPDATE"
        )
        self.forget_user = (
            f"WITH t AS (DELETE FROM {p}threads WHERE tenant_id = %(tenant)s"
            " AND id = ANY(%(ids)s::text[]) RETURNING 1),"
            f" b AS (DELETE FROM {p}branches WHERE tenant_id = %(tenant)s"
            " AND thread_id = ANY(%(ids)s::text[])),"
            f" e AS (DELETE FROM {p}entries WHERE tenant_id = %(tenant)s"
            " AND thread_id = ANY(%(ids)s::text[]) RETURNING 1),"
            f" s AS (DELETE FROM {p}snapshots WHERE tenant_id = %(tenant)s"
            " AND user_id = %(user)s RETURNING 1),"
            f" m AS (DELETE FROM {p}summaries WHERE tenant_id = %(tenant)s"
            " AND user_id = %(user)s RETURNING 1),"
            f" r AS (DELETE FROM {p}records WHERE tenant_id = %(tenant)s"
            " AND user_id = %(user)s RETURNING kind, id),"
            f" ve AS (DELETE FROM {p}vectors WHERE tenant_id = %(tenant)s"
            " AND thread_id = ANY(%(ids)s::text[]) AND kind = 'entry' RETURNING model_id, kind),"
            f" vr AS (DELETE FROM {p}vectors v USING r WHERE v.tenant_id = %(tenant)s"
            " AND v.kind = r.kind AND v.id = r.id RETURNING v.model_id, v.kind),"
            f" g AS ({_bump(p, '(SELECT * FROM ve UNION SELECT * FROM vr) x')})"
            " SELECT (SELECT count(*) FROM t) + (SELECT count(*) FROM e)"
            " + (SELECT count(*) FROM s) + (SELECT count(*) FROM m) + (SELECT count(*) FROM r)"
        )
        self.lock_thread_has_branch = (
            f"SELECT EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = %s)"
            f" FROM {p}threads t WHERE t.tenant_id = %s AND t.id = %s FOR NO KEY UPDATE OF t"
        )
        in_prefix = (
            "tenant_id = %(tenant)s AND thread_id = %(thread)s AND branch = %(branch)s"
            " AND position <= %(through)s"
        )
        self.compact_delete = (
            f"WITH cur AS (SELECT coalesce(array_agg(id ORDER BY position), '{{}}') AS ids"
            f" FROM {p}entries WHERE {in_prefix}),"
            f" d AS (DELETE FROM {p}entries e USING cur WHERE cur.ids = %(expected)s::text[]"
            f" AND e.{in_prefix.replace(' AND ', ' AND e.')} RETURNING e.id, e.branch),"
            f"{_drop_entry_vectors(p, 'd')}"
            " SELECT cur.ids = %(expected)s::text[] FROM cur"
        )
        self.compact_insert = (
            f"WITH s AS (INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, name, tool_calls, tool_call_id, metadata, state, token_count, created_at,"
            " idempotency_key, fingerprint)"
            " SELECT %(tenant)s, %(thread)s, %(branch)s, %(through)s, i.id, i.role, i.content,"
            " i.name, i.tool_calls, i.tool_call_id, i.metadata, i.state, i.token_count,"
            " i.created_at, i.idempotency_key, i.fingerprint"
            " FROM json_to_recordset(%(summary)s::json) AS i(id text, role text, content text,"
            " name text, tool_calls jsonb, tool_call_id text, metadata json, state json,"
            " token_count integer, created_at timestamptz, idempotency_key text,"
            " fingerprint text))"
            f" UPDATE {p}threads SET updated_at = %(updated)s"
            " WHERE tenant_id = %(tenant)s AND id = %(thread)s"
        )
        self.update_entries = (
            f"WITH th AS (SELECT 1 FROM {p}threads WHERE tenant_id = %(tenant)s"
            " AND id = %(thread)s),"
            " c AS (SELECT * FROM json_to_recordset(%(changes)s::json)"
            " AS c(id text, content text, state json, token_count integer)),"
            f" u AS (UPDATE {p}entries e SET content = c.content, state = c.state,"
            " token_count = c.token_count FROM c WHERE EXISTS (SELECT 1 FROM th)"
            " AND e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s"
            " AND e.branch = %(branch)s AND e.id = c.id RETURNING 1)"
            " SELECT EXISTS (SELECT 1 FROM th), (SELECT count(*) FROM u)"
        )
        self.record_put = (
            f"INSERT INTO {p}records (tenant_id, kind, id, agent_id, user_id, key, content, data,"
            " created_at, updated_at, expires_at, revision)"
            " SELECT %(tenant)s, i.kind, i.id, i.agent_id, i.user_id, i.key, i.content, i.data,"
            " i.created_at, i.updated_at, i.expires_at, i.revision"
            " FROM json_to_recordset(%(batch)s::json) AS i(kind text, id text, agent_id text,"
            " user_id text, key text, content text, data json, created_at timestamptz,"
            " updated_at timestamptz, expires_at timestamptz, revision bigint)"
            " ON CONFLICT (tenant_id, kind, id) DO UPDATE SET agent_id = EXCLUDED.agent_id,"
            " user_id = EXCLUDED.user_id, key = EXCLUDED.key, content = EXCLUDED.content,"
            " data = EXCLUDED.data, created_at = EXCLUDED.created_at,"
            " updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at,"
            " revision = EXCLUDED.revision"
        )
        # Guards run in the write's transaction: an existing row is locked and compared;
        # an absent one is claimed by a placeholder row (revision -1), which a concurrent
        # claimer's insert waits on, and which the write replaces or ``guard_release`` drops.
        self.guard_lock = (
            f"SELECT revision FROM {p}records WHERE tenant_id = %s AND kind = %s AND id = %s"
            " FOR UPDATE"
        )
        self.guard_claim = (
            f"INSERT INTO {p}records (tenant_id, kind, id, content, created_at, updated_at,"
            " revision) VALUES (%s, %s, %s, '', now(), now(), -1)"
            " ON CONFLICT (tenant_id, kind, id) DO NOTHING RETURNING 1"
        )
        self.guard_release = (
            f"DELETE FROM {p}records WHERE tenant_id = %s AND kind = %s AND id = %s"
            " AND revision = -1"
        )
        self.record_get = (
            f"SELECT {RECORD_COLUMNS} FROM {p}records WHERE tenant_id = %s AND kind = %s"
            " AND id = %s"
        )
        # Batch reads by ids are driven by the ids: a LIMIT 1 subquery per id (never
        # flattened) is a primary-key lookup whatever the statistics say. With "id =
        # ANY(array)" a table never analyzed (autovacuum off) was read whole per call.
        self.record_get_many = (
            f"SELECT {_R_READ} FROM unnest(%s::text[]) AS x(id), LATERAL (SELECT *"
            f" FROM {p}records WHERE tenant_id = %s AND kind = %s AND id = x.id LIMIT 1) r"
        )
        self.record_delete = (
            f"WITH v AS (DELETE FROM {p}vectors WHERE tenant_id = %(tenant)s AND kind = %(kind)s"
            " AND id = ANY(%(ids)s::text[]) RETURNING model_id, kind),"
            f" g AS ({_bump(p, 'v')}),"
            f" d AS (DELETE FROM {p}records WHERE tenant_id = %(tenant)s AND kind = %(kind)s"
            " AND id = ANY(%(ids)s::text[]) RETURNING 1)"
            " SELECT count(*) FROM d"
        )
        self.vector_put = (
            f"INSERT INTO {p}vectors (tenant_id, kind, id, model_id, thread_id, dim, embedding)"
            " SELECT %(tenant)s, i.kind, i.id, i.model_id, i.thread_id, i.dim, i.embedding"
            " FROM unnest(%(kinds)s::text[], %(ids)s::text[], %(models)s::text[],"
            " %(threads)s::text[], %(dims)s::integer[], %(embeddings)s::vector[])"
            " AS i(kind, id, model_id, thread_id, dim, embedding)"
            " ON CONFLICT (tenant_id, kind, id, model_id) DO UPDATE"
            " SET thread_id = EXCLUDED.thread_id, dim = EXCLUDED.dim,"
            " embedding = EXCLUDED.embedding"
        )
        # Without pgvector: the (tenant, model, kind) version is bumped first (its row
        # lock orders the writers) and stamped on the rows as ``seq``.
        self.vector_put_stamped = (
            "WITH i AS (SELECT * FROM unnest(%(kinds)s::text[], %(ids)s::text[],"
            " %(models)s::text[], %(threads)s::text[], %(dims)s::integer[],"
            " %(embeddings)s::bytea[]) AS i(kind, id, model_id, thread_id, dim, embedding)),"
            f" s AS (INSERT INTO {p}vector_stamps AS s (tenant_id, model_id, kind, version)"
            " SELECT DISTINCT %(tenant)s, model_id, kind, 1 FROM i ORDER BY 2, 3"
            " ON CONFLICT (tenant_id, model_id, kind) DO UPDATE SET version = s.version + 1"
            " RETURNING model_id, kind, version)"
            f" INSERT INTO {p}vectors (tenant_id, kind, id, model_id, thread_id, dim, embedding,"
            " seq) SELECT %(tenant)s, i.kind, i.id, i.model_id, i.thread_id, i.dim, i.embedding,"
            " s.version FROM i JOIN s ON s.model_id = i.model_id AND s.kind = i.kind"
            " ON CONFLICT (tenant_id, kind, id, model_id) DO UPDATE"
            " SET thread_id = EXCLUDED.thread_id, dim = EXCLUDED.dim,"
            " embedding = EXCLUDED.embedding, seq = EXCLUDED.seq"
        )
        self.vector_rows = (
            f"SELECT seq, embedding, id, thread_id FROM {p}vectors WHERE tenant_id = %s"
            " AND model_id = %s AND kind = %s AND seq > %s ORDER BY seq"
        )
        self.vector_owner_threads = (
            f"SELECT id, agent_id, user_id FROM {p}threads WHERE tenant_id = %s"
            " AND id = ANY(%s::text[])"
        )
        self.vector_owner_kind = (
            f"SELECT id, agent_id, user_id FROM {p}records WHERE tenant_id = %s AND kind = %s"
        )
        self.vector_owner_records = (
            f"SELECT id, agent_id, user_id FROM {p}records WHERE tenant_id = %s AND kind = %s"
            " AND id = ANY(%s::text[])"
        )
        self.vector_get = (
            f"SELECT id, embedding{{text}} FROM {p}vectors WHERE tenant_id = %s AND kind = %s"
            " AND model_id = %s AND id = ANY(%s::text[])"
        )
