"""AsyncMySQLStore: threads and entries in MySQL 8 / MariaDB 10.6+ (InnoDB), via aiomysql.

The sync ``MySQLStore`` (PyMySQL) is generated from this file; the two drivers
differ only in their pools, wrapped in ``memorybank.stores._mysql_compat``.

Layout (``<p>`` is the table prefix, default ``memorybank_``; every table is
InnoDB, ``utf8mb4`` with a NO PAD binary collation (migration 3), so ids compare
exactly, trailing spaces and case included, and emoji/CJK round-trip; times are
BIGINT microseconds since the epoch; JSON columns are LONGTEXT holding compact
JSON text; every key and index leads with ``tenant_id``):

- ``<p>schema_version`` (id, version): the number of ``_MIGRATIONS`` applied.
- ``<p>threads``: PK (tenant_id, id); indexes (tenant_id, updated_at, id) and
  (tenant_id, user_id, updated_at).
- ``<p>branches``: PK (tenant_id, thread_id, name); ``last_position`` is the
  highest position ever given on the branch (the append counter).
- ``<p>entries``: PK (tenant_id, thread_id, branch, position); UNIQUE
  (tenant_id, thread_id, branch, idem_hash); index (tenant_id, thread_id, id).
  ``idem_hash`` is a 64-bit BLAKE2b of the idempotency key: with 255-character
  utf8mb4 ids the key itself would exceed InnoDB's 3072-byte index limit. The
  store matches the key itself under the branch lock; the unique index is a
  backstop (a hash collision between two different keys on one branch would
  surface as ``Conflict``, never as a lost entry). ``fingerprint`` (migration 5)
  is the payload hash of a keyed entry, compared under the same lock (NULL on
  older rows: they match any payload); ``idempotency_key`` is TEXT since
  migration 3, so batch members' longer keys fit.
  Migration 2 adds a FULLTEXT index on ``content`` (whose collation becomes
  ``utf8mb4_unicode_ci``, see "Keyword search").
- ``<p>working`` PK (tenant_id, run_id, k); ``<p>snapshots`` PK (tenant_id,
  run_id); ``<p>summaries`` PK (tenant_id, id), index (tenant_id, agent_id,
  created_at).
- ``<p>records`` (migration 2; facts, documents, core facts): PK (tenant_id,
  kind, id); indexes (tenant_id, kind, created_at), (tenant_id, user_id, kind,
  created_at), (tenant_id, kind, k) where ``k`` is the record's ``key``;
  FULLTEXT (content). ``kind`` is at most 64 characters so the keys fit
  InnoDB's 3072-byte limit. ``record_put`` is one transaction of
  ``INSERT ... ON DUPLICATE KEY UPDATE`` (explicit values, not ``VALUES()``,
  deprecated in MySQL 8). Migration 4 adds ``revision``; a guarded write first
  locks the guarded row (``SELECT ... FOR UPDATE``) or, when it must be absent,
  claims its key with a placeholder row (revision -1, never committed: the
  write replaces it or the transaction deletes it), then compares, then writes
  and commits (two round trips). Batch reads: ``record_get_many`` and
  ``record_list_keys`` send ``IN`` lists of up to 1,000 ids or keys as one
  multi-statement query (one round trip up to about 1 MiB of statements);
  ``record_page`` is one range of ``records_list`` from its cursor (InnoDB
  appends the primary key's ``id`` to the index, so it is ordered by
  (created_at, id) without a sort).
- ``<p>vectors`` (migration 2): PK (tenant_id, kind, id, model_id); indexes
  (tenant_id, model_id, kind, thread_id) and (tenant_id, thread_id, kind);
  ``vector`` is a MEDIUMBLOB of little-endian float32, scaled to unit length
  (sent as hex: aiomysql cannot escape bytes). ``vector_search`` ranks the
  vectors each store object keeps in process (``_vector_cache``), kept current
  by ``<p>vector_stamps`` (migration 6: per (tenant, model, kind) a version, bumped
  by ``vector_put`` and stamped on its rows as ``seq``, and a generation, bumped
  before any delete of vectors in the same transaction); the hits' scope is
  confirmed in SQL. Entry vectors go with their thread (``delete_thread``,
  ``forget_user``) and with their entry once no branch holds a copy of it
  (``delete_entries``, ``truncate_after``, ``clear_entries``, ``delete_branch``,
  ``compact_entries``: in the same transaction, the thread row locked); record
  vectors with their record.

Keyword search (``text_search``): InnoDB FULLTEXT, ``MATCH (content) AGAINST
(... IN NATURAL LANGUAGE MODE)`` over ``entries.content`` (joined to threads for
the ``Visibility`` scope; every branch, hits carry thread and branch) and
``records.content``; best first, ties by kind, id, branch. Only the query's
words are sent (runs of word characters, lower-cased): no operator or quote of user text
reaches the parser. InnoDB quirks, none of them memorybank's choice:

- Matching follows the column's collation, and a binary collation makes it
  case-sensitive, so searched ``content`` columns are ``utf8mb4_unicode_ci``
  (case- and accent-insensitive); ids keep the binary collation, and the text
  round-trips byte for byte either way.
- Words shorter than ``innodb_ft_min_token_size`` (default 3) or longer than
  ``innodb_ft_max_token_size`` (84) are not indexed, and InnoDB's stopword list
  ("the", "in", "it", ...) is left out: "ox" or "in it" find nothing. Changing
  either needs a server setting and an index rebuild.
- No stemming ("puppies" does not find "puppy"), and the built-in parser splits
  on spaces and punctuation, so CJK text without spaces is one long token
  (MySQL's ``ngram`` parser is not available on MariaDB, so it is not used).
- Scores are InnoDB's TF-IDF-like relevance computed over the whole table (all
  tenants), so they only compare within one query; a word in every row scores
  (nearly) zero but still matches. The 50% threshold of natural language mode
  is MyISAM-only: InnoDB returns common words.
- The index is updated at COMMIT: an entry is searchable once its append
  returned, never before.
- The full-text match runs before the tenant filter: a word common across all
  tenants costs a scan of its matches.

Schema: created on first use by the first operation of a store, under
``GET_LOCK`` so several processes starting together migrate once. Migration 2
rebuilds ``entries`` (``ALTER TABLE``: a copy of the table, slow on a big one);
a migration cut short is re-run, its "duplicate column/key" errors ignored.

Exact ids (migration 3): versions 1 and 2 used ``utf8mb4_bin``, a PAD SPACE
collation in which ``"acme" = "acme "``: a tenant, thread, user or key with a
trailing space reached another's rows. Migration 3 moves every string column
(all but the searched ``content``) to the server's NO PAD binary collation,
``utf8mb4_nopad_bin`` (MariaDB) or ``utf8mb4_0900_bin`` (MySQL 8.0.17+), one
``ALTER TABLE`` per table: each is rebuilt once, rows kept (no two rows can
merge: the new collation only tells more values apart). Rows written under a
padded look-alike before the upgrade keep the spelling they were written with.
While it runs, processes of an older memorybank on the same tables can get
"Illegal mix of collations" from joins across a converted and an unconverted
table; upgrade them together. A fresh schema takes about a second longer to
create (every table is made, then converted).

Appends: one transaction, sent as multi-statement queries (PyMySQL's
client-side escaping is the same either way). It starts with
``START TRANSACTION; SELECT ... FROM threads LEFT JOIN branches ... FOR UPDATE``, which locks the
thread and branch rows and so serialises the appenders of a thread across
processes (its row comes back as one ``JSON_ARRAY`` column, like "last N": the
driver parses each column's metadata in pure Python, so 13 columns cost the
client more than the rest of the append). A batch of up to 16 entries without
idempotency keys (every ``remember``) is ONE round trip: the same query goes on with
``INSERT ... SELECT`` rows positioned at ``branches.last_position + k`` and an
``UPDATE`` of the counter and ``updated_at``, both conditional on the thread,
owner and branch (a failed check writes nothing; the client reads the locked
row to raise ``NotFound``/``ThreadForbidden``), then ``COMMIT``. Bigger or
idempotent batches take TWO round trips: the first also reads the stored
idempotency keys, the second is a multi-row ``INSERT``, the updates and
``COMMIT``. Positions come from the branch's counter, so they are gap-free as
appended and never reused after deletes (the in-memory store reuses the
positions of truncated entries; both are allowed by the contract: strictly
increasing in adding order). At READ COMMITTED the transactions' locks are
record locks on primary keys, no gap locks. A deadlock (1213) or
lock-wait timeout (1205) rolls back and retries the transaction (3 attempts,
short backoff), then raises ``StoreUnavailable``.

Write combining (``memorybank._combine``): appends without idempotency keys (up
to 16 entries each) that one store object receives while two of its appends
for the same tenant are running wait, and then run together as ONE transaction
in two round trips whatever their number and threads: ``SELECT`` of the threads
named and their branches ``FOR UPDATE`` (ordered by thread id, so two such
transactions never deadlock), then one multi-row ``INSERT``, one ``UPDATE`` of
the counters and one of ``updated_at`` (``CASE`` per thread), ``COMMIT``. Each
caller returns once its entries are committed; callers of one thread get
consecutive positions in arrival order; a refused caller (no thread, another
owner, no branch) gets its own error and writes nothing, the others are stored;
an error of the transaction itself reaches every caller in it. With one append
in flight nothing waits: the path above runs unchanged.

Write transactions run at READ COMMITTED: the first transaction on a pooled
connection sets it for the session (in the same round trip), later ones only
send ``START TRANSACTION``.

Compaction (``compact_entries``) locks the thread row and the branch's entries
up to ``through_position`` (``FOR UPDATE``), compares their ids with the
caller's, and only then deletes them and inserts the summary, in one
transaction (two round trips; a mismatch rolls back and returns ``False``).
``update_entries`` is one transaction in one round trip.

Reads are autocommit statements in one round trip; "last N" is one statement,
``SELECT <thread> UNION ALL (SELECT <page>)``: the thread row (a primary-key
lookup) and a backward range scan of the entries PK, stopping after N rows. It
selects each row as one ``JSON_ARRAY``: PyMySQL decodes every column and its
metadata in pure Python, ``json.loads`` decodes a whole row in C, which halves
the client's work for a page (the JSON encoding is exact for text, integers
and NULL).

Durability is the server's (``innodb_flush_log_at_trx_commit``). ``timeout``
bounds connecting, waiting for a pooled connection, lock waits (half of it) and
each operation (async: the whole operation; sync: each socket read/write).
A refused or unreachable server raises ``StoreUnavailable`` at once; a rejected
login or unknown database raises ``ConfigurationError`` (the driver's error is
``__cause__`` of both).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import pymysql

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
from memorybank._concurrency import AsyncLock, asleep
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
from memorybank.stores._mysql_compat import AsyncMySQLConnection, AsyncMySQLPool, PoolTimeout
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
    scope_sql,
    to_us,
    tool_calls_to_json,
    unit_vector_bytes,
    vector_from_bytes,
)
from memorybank.stores._types import by_kind

if TYPE_CHECKING:  # numpy loads with the first vector search, not with the store
    from memorybank.stores._vectors import CachedRows

__all__ = ["TABLES", "AsyncMySQLStore"]

#: Table names after the prefix (to drop a prefix's tables, e.g. in tests).
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

_PREFIX = re.compile(r"[A-Za-z0-9_]{0,40}")
_ALL = 18446744073709551615  # MySQL's "no LIMIT" (an OFFSET needs a LIMIT)
_ATTEMPTS = 3
#: One caller's part of a combined append (one tenant): thread, branch, owner check,
#: entries and ``updated_at``.
#: Combined appends of one tenant in flight at once (each on its own connection): the
#: next batch's statements overlap the previous one's commit.
_APPEND_BATCHES = 2
_AppendItem = tuple[str, str | None, str | Unset | None, Sequence[NewEntry], datetime]
_FAST_BATCH = 16  # appends of up to this many entries without idempotency keys: one round trip
#: Server errors meaning "the server is going away / cannot serve": StoreUnavailable.
_UNAVAILABLE = {
    1040,
    1053,
    1077,
    1078,
    1079,
    1080,
    1081,
    1152,
    1153,
    1154,
    1155,
    1156,
    1157,
    1158,
    1159,
    1160,
    1161,
    1317,
    1927,
    4031,
}
_RETRY = {1205, 1213}  # lock wait timeout, deadlock
#: Connection refused for who or where we are (access denied, unknown database,
#: host not allowed): ConfigurationError, as retrying cannot help.
_REJECTED = {1044, 1045, 1049, 1130, 1698}

#: The table options of migrations 1 and 2 (kept as they were: migrations are never
#: edited). ``utf8mb4_bin`` is a PAD SPACE collation: "acme" = "acme " in it, so
#: migration 3 moves every compared column to the exact collation, ``{bin}``.
_TABLE = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
_ID = "VARCHAR(255) NOT NULL"
_OPT_ID = "VARCHAR(255) NULL"
_KIND = "VARCHAR(64) NOT NULL"  # record kinds; short, so composite keys fit InnoDB's 3072 bytes
_MODEL = "VARCHAR(191) NOT NULL"  # embedding model ids (191 x 4 bytes: the vectors key fits)
#: Text searched with FULLTEXT: case- and accent-insensitive (a binary collation would
#: make InnoDB's full-text matching case-sensitive). Only the search uses the collation;
#: the stored text round-trips byte for byte either way.
_SEARCHED = "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
_IGNORED_ON_RERUN = {1060, 1061}  # duplicate column / key name: a re-run of a half-done migration

# Exact ids (migration 3). Every id, tenant, key, owner, kind and model column gets a
# NO PAD binary collation, ``{bin}`` in the statements: MariaDB's ``utf8mb4_nopad_bin``
# or MySQL 8's ``utf8mb4_0900_bin`` (``_exact_collation`` asks the server which it has
# and checks that it really tells "x" from "x "). Binary: "X" <> "x" and no Unicode
# folding; NO PAD: trailing spaces count. Why not VARBINARY: the columns would come back
# as ``bytes`` on every read (a decode in every row mapper, and JSON_ARRAY pages would
# need HEX round trips), and a byte-length column would change what length of id fits,
# while a VARCHAR(255) holds exactly the 255 characters ``check_id`` accepts, whatever
# their UTF-8 length. Index key lengths do not change with the collation (utf8mb4: 4
# bytes a character): the widest keys, (tenant_id, thread_id, branch, position) and
# (tenant_id, kind, id, model_id), are 3068 and 3060 bytes, under InnoDB's 3072.
_X = "CHARACTER SET utf8mb4 COLLATE {bin}"
_XID = f"VARCHAR(255) {_X} NOT NULL"
_XOPT = f"VARCHAR(255) {_X} NULL"
_XKIND = f"VARCHAR(64) {_X} NOT NULL"
_XWORD = f"VARCHAR(16) {_X} NOT NULL"  # role, status
_XMODEL = f"VARCHAR(191) {_X} NOT NULL"
_XTEXT = f"TEXT {_X} NULL"
_XJSON = f"LONGTEXT {_X} NOT NULL"
_XTABLE = "DEFAULT CHARACTER SET utf8mb4 COLLATE {bin}"

#: ``_MIGRATIONS[:n]`` built schema version ``n``; append, never edit.
_MIGRATIONS: list[tuple[str, ...]] = [
    (
        f"""CREATE TABLE IF NOT EXISTS {{p}}threads (
            tenant_id {_ID}, id {_ID}, user_id {_OPT_ID}, agent_id {_OPT_ID}, title TEXT NULL,
            metadata LONGTEXT NOT NULL, status VARCHAR(16) NOT NULL,
            created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, current_branch {_ID},
            PRIMARY KEY (tenant_id, id),
            KEY {{p}}threads_updated (tenant_id, updated_at, id),
            KEY {{p}}threads_user (tenant_id, user_id, updated_at)
        ) {_TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}branches (
            tenant_id {_ID}, thread_id {_ID}, name {_ID}, created_at BIGINT NOT NULL,
            from_branch {_OPT_ID}, from_entry {_OPT_ID}, last_position BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, thread_id, name)
        ) {_TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}entries (
            tenant_id {_ID}, thread_id {_ID}, branch {_ID}, position BIGINT NOT NULL,
            id {_ID}, role VARCHAR(16) NOT NULL, content LONGTEXT NULL, name TEXT NULL,
            tool_calls LONGTEXT NULL, tool_call_id TEXT NULL, metadata LONGTEXT NOT NULL,
            state LONGTEXT NOT NULL, token_count INT NOT NULL, created_at BIGINT NOT NULL,
            idempotency_key {_OPT_ID}, idem_hash BIGINT UNSIGNED NULL,
            PRIMARY KEY (tenant_id, thread_id, branch, position),
            UNIQUE KEY {{p}}entries_idem (tenant_id, thread_id, branch, idem_hash),
            KEY {{p}}entries_id (tenant_id, thread_id, id)
        ) {_TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}working (
            tenant_id {_ID}, run_id {_ID}, k {_ID}, value LONGTEXT NOT NULL,
            PRIMARY KEY (tenant_id, run_id, k)
        ) {_TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}snapshots (
            tenant_id {_ID}, run_id {_ID}, user_id {_OPT_ID}, value LONGTEXT NOT NULL,
            saved_at BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, run_id),
            KEY {{p}}snapshots_user (tenant_id, user_id)
        ) {_TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}summaries (
            tenant_id {_ID}, id {_ID}, agent_id {_ID}, user_id {_OPT_ID},
            content LONGTEXT NOT NULL, created_at BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, id),
            KEY {{p}}summaries_agent (tenant_id, agent_id, created_at)
        ) {_TABLE}""",
    ),
    (
        # Keyword search over entries (one ALTER: one table rebuild).
        f"""ALTER TABLE {{p}}entries MODIFY content {_SEARCHED} NULL,
            ADD FULLTEXT KEY {{p}}entries_fts (content)""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}records (
            tenant_id {_ID}, kind {_KIND}, id {_ID}, agent_id {_OPT_ID}, user_id {_OPT_ID},
            k {_OPT_ID}, content {_SEARCHED} NOT NULL, data LONGTEXT NOT NULL,
            created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, expires_at BIGINT NULL,
            PRIMARY KEY (tenant_id, kind, id),
            KEY {{p}}records_list (tenant_id, kind, created_at),
            KEY {{p}}records_user (tenant_id, user_id, kind, created_at),
            KEY {{p}}records_key (tenant_id, kind, k),
            FULLTEXT KEY {{p}}records_fts (content)
        ) {_TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}vectors (
            tenant_id {_ID}, kind {_KIND}, id {_ID}, model_id {_MODEL}, thread_id {_OPT_ID},
            vector MEDIUMBLOB NOT NULL,
            PRIMARY KEY (tenant_id, kind, id, model_id),
            KEY {{p}}vectors_model (tenant_id, model_id, kind, thread_id),
            KEY {{p}}vectors_thread (tenant_id, thread_id, kind)
        ) {_TABLE}""",
    ),
    (
        # Exact ids: one ALTER per table (one rebuild each; rows kept). Every string
        # column moves, not only the compared ones: MySQL cannot pick between two
        # binary collations of one charset in an expression (JSON_ARRAY of a page row
        # would fail with "Illegal mix of collations"); searched ``content`` keeps
        # ``utf8mb4_unicode_ci``, which a binary collation outranks. The idempotency
        # key becomes TEXT: it is matched through ``idem_hash``, never indexed, so it
        # holds any key derived from a 255-character one.
        f"""ALTER TABLE {{p}}threads {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY id {_XID},
            MODIFY user_id {_XOPT}, MODIFY agent_id {_XOPT}, MODIFY title {_XTEXT},
            MODIFY metadata {_XJSON}, MODIFY status {_XWORD}, MODIFY current_branch {_XID}""",
        f"""ALTER TABLE {{p}}branches {_XTABLE}, MODIFY tenant_id {_XID},
            MODIFY thread_id {_XID}, MODIFY name {_XID}, MODIFY from_branch {_XOPT},
            MODIFY from_entry {_XOPT}""",
        f"""ALTER TABLE {{p}}entries {_XTABLE}, MODIFY tenant_id {_XID},
            MODIFY thread_id {_XID}, MODIFY branch {_XID}, MODIFY id {_XID},
            MODIFY role {_XWORD}, MODIFY name {_XTEXT}, MODIFY tool_calls LONGTEXT {_X} NULL,
            MODIFY tool_call_id {_XTEXT}, MODIFY metadata {_XJSON}, MODIFY state {_XJSON},
            MODIFY idempotency_key {_XTEXT}""",
        f"""ALTER TABLE {{p}}working {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY run_id {_XID},
            MODIFY k {_XID}, MODIFY value {_XJSON}""",
        f"""ALTER TABLE {{p}}snapshots {_XTABLE}, MODIFY tenant_id {_XID},
            MODIFY run_id {_XID}, MODIFY user_id {_XOPT}, MODIFY value {_XJSON}""",
        f"""ALTER TABLE {{p}}summaries {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY id {_XID},
            MODIFY agent_id {_XID}, MODIFY user_id {_XOPT}, MODIFY content {_XJSON}""",
        f"""ALTER TABLE {{p}}records {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY kind {_XKIND},
            MODIFY id {_XID}, MODIFY agent_id {_XOPT}, MODIFY user_id {_XOPT},
            MODIFY k {_XOPT}, MODIFY data {_XJSON}""",
        f"""ALTER TABLE {{p}}vectors {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY kind {_XKIND},
            MODIFY id {_XID}, MODIFY model_id {_XMODEL}, MODIFY thread_id {_XOPT}""",
    ),
    # Records carry the revision that ``RecordGuard`` compares (an instant ADD COLUMN).
    ("ALTER TABLE {p}records ADD COLUMN revision BIGINT NOT NULL DEFAULT 0",),
    # The payload fingerprint of keyed entries (NULL on older rows: they match any
    # payload). Batch members' longer keys (see memorybank._idempotency) fit the TEXT
    # key column of migration 3.
    (
        "ALTER TABLE {p}entries ADD COLUMN fingerprint"
        " CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL",
    ),
    # Change counters of the in-process vector cache (``_vector_cache``): ``seq`` is the
    # writing ``vector_put``'s version; deletes bump the generation.
    (
        "ALTER TABLE {p}vectors ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE {p}vectors ADD KEY {p}vectors_seq (tenant_id, model_id, kind, seq)",
        f"""CREATE TABLE IF NOT EXISTS {{p}}vector_stamps (
            tenant_id {_XID}, model_id {_XMODEL}, kind {_XKIND},
            version BIGINT NOT NULL DEFAULT 0, generation BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant_id, model_id, kind)
        ) ENGINE=InnoDB {_XTABLE}""",
        "INSERT IGNORE INTO {p}vector_stamps (tenant_id, model_id, kind)"
        " SELECT DISTINCT tenant_id, model_id, kind FROM {p}vectors",
    ),
]

_T_COLS = ", ".join(f"t.{c.strip()}" for c in THREAD_COLUMNS.split(","))
_E_COLS = ", ".join(f"e.{c.strip()}" for c in ENTRY_COLUMNS.split(","))
#: Entry columns of a page read (thread and branch are known): ``_page_entry`` reads them.
_PAGE_COLS = (
    "e.id, e.position, e.role, e.content, e.name, e.tool_calls, e.tool_call_id, e.metadata,"
    " e.state, e.token_count, e.created_at, e.idempotency_key"
)
_THREAD_WIDTH = len(THREAD_COLUMNS.split(","))  # 10, a page row has 12
_INSERT_COLS = (
    "tenant_id, thread_id, branch, position, id, role, content, name, tool_calls,"
    " tool_call_id, metadata, state, token_count, created_at, idempotency_key, idem_hash,"
    " fingerprint"
)
_INSERT_WIDTH = len(_INSERT_COLS.split(","))  # 17: (tenant_id, thread_id, branch, position)
#: ``RECORD_COLUMNS`` with the key column's name here (``key`` is a reserved word).
_R_COLS = RECORD_COLUMNS.replace(" key,", " k,")
_WORD = re.compile(r"\w+", re.UNICODE)
_BATCH_BYTES = 1 << 20  # a transaction's statements go in round trips of about this size
_IN_CHUNK = 1000  # ids or keys per ``IN (...)`` list of a batch read
#: Starts a write transaction. ``_run`` sends it as ``START TRANSACTION`` on a
#: connection whose session is already READ COMMITTED (set, in the same round
#: trip, the first time the store uses the connection); either way it takes
#: the first two results, so callers index results the same.
_BEGIN = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION"
_SESSION_BEGIN = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION"
_NO_RESULT: tuple[list[tuple[Any, ...]], int] = ([], 0)

_Statement = tuple[str, Sequence[Any] | None]


class _LockContention(StoreUnavailable):
    """Deadlock or lock-wait timeout: the transaction was rolled back and may be retried."""


def _idem_hash(key: str | None) -> int | None:
    """64 bits of BLAKE2b of an idempotency key (an int: aiomysql cannot escape bytes)."""
    if key is None:
        return None
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def _translate(error: BaseException) -> MemoryBankError:
    """The memorybank error for a driver/network exception (the caller chains it)."""
    if isinstance(error, PoolTimeout):
        return StoreUnavailable(str(error))
    if isinstance(error, TimeoutError):
        return StoreUnavailable("MySQL operation timed out")
    if isinstance(error, pymysql.err.IntegrityError) and error.args and error.args[0] == 1062:
        return Conflict("already exists")
    if isinstance(error, pymysql.err.Error):
        code = error.args[0] if error.args and isinstance(error.args[0], int) else 0
        if code in _RETRY:
            return _LockContention(f"MySQL lock contention: {error}")
        if code in _REJECTED:
            return ConfigurationError(f"MySQL refused the connection: {error}")
        if isinstance(error, pymysql.err.InterfaceError) or code >= 2000 or code in _UNAVAILABLE:
            return StoreUnavailable(f"MySQL unavailable: {error}")
        return StoreError(f"MySQL error: {error}")
    if isinstance(error, OSError):
        return StoreUnavailable(f"MySQL unreachable: {error}")
    return StoreError(f"MySQL store failed: {error!r}")


def _url_options(url: str) -> dict[str, Any]:
    """``pymysql.connect`` keyword arguments for a ``mysql://`` URL."""
    parts = urlsplit(url)
    if parts.scheme.split("+", 1)[0].lower() not in ("mysql", "mariadb"):
        raise ConfigurationError(f"not a MySQL URL: {url!r}")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ConfigurationError(f"MySQL URL {url!r} names no database (mysql://host/db)")
    try:
        port = parts.port or 3306
    except ValueError as error:
        raise ConfigurationError(f"bad port in MySQL URL {url!r}") from error
    options: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": port,
        "user": unquote(parts.username) if parts.username else "root",
        "password": unquote(parts.password) if parts.password else "",
        "database": database,
    }
    query = parse_qs(parts.query)
    if "unix_socket" in query:
        options["unix_socket"] = query["unix_socket"][-1]
    return options


def _entry_values(new: NewEntry) -> tuple[Any, ...]:
    """The 13 columns of an entry after (tenant_id, thread_id, branch, position)."""
    return (
        new.id,
        new.role,
        new.content,
        new.name,
        tool_calls_to_json(new.tool_calls, new.extra, new.item),
        new.tool_call_id,
        dump(new.metadata),
        dump(new.state),
        new.token_count,
        to_us(new.created_at),
        new.idempotency_key,
        _idem_hash(new.idempotency_key),
        None if new.idempotency_key is None else new.fingerprint,
    )


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    """``items`` in ``IN (...)`` lists of at most ``_IN_CHUNK``."""
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


def _search_words(text: str) -> str:
    """The words of ``text`` for ``AGAINST (... IN NATURAL LANGUAGE MODE)``.

    Only word characters reach the server: natural language mode has no operators
    except ``"phrases"``, and dropping everything else keeps user text from ever
    being parsed as syntax.
    """
    return " ".join(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


def _page_entry(row: Sequence[Any], thread_id: str, branch: str) -> Entry:
    """An ``Entry`` from a row of ``_PAGE_COLS`` (thread and branch are the query's)."""
    calls, extra, item = entry_payload(row[5])
    return Entry(
        id=row[0],
        thread_id=thread_id,
        branch=branch,
        position=row[1],
        role=row[2],
        content=row[3],
        name=row[4],
        tool_calls=calls,
        tool_call_id=row[6],
        metadata=load(row[7]) or {},
        state=load(row[8]) or {},
        token_count=row[9],
        created_at=from_us(row[10]),
        idempotency_key=row[11],
        extra=extra,
        item=item,
    )


def _build_thread(row: Sequence[Any]) -> Thread:
    return row_to_thread(row[:10])


#: About how much entry text one combined append transaction carries (a caller's own
#: bigger batch still goes alone, as it would without combining).
_COMBINED_BYTES = 1 << 20


def _by_size(items: Sequence[_AppendItem]) -> Iterator[Sequence[_AppendItem]]:
    """``items`` in runs of about ``_COMBINED_BYTES`` of text (``max_allowed_packet``)."""
    start, size = 0, 0
    for k, item in enumerate(items):
        weight = sum(
            400
            + len(e.content or "")
            + (len(str(e.metadata)) if e.metadata else 0)
            + (len(str(e.state)) if e.state else 0)
            + (len(str(e.tool_calls)) if e.tool_calls else 0)
            for e in item[3]
        )
        if k > start and size + weight > _COMBINED_BYTES:
            yield items[start:k]
            start, size = k, 0
        size += weight
    yield items[start:]


def _append_head(
    head: list[tuple[Any, ...]], thread_id: str, branch: str | None, owner: str | Unset | None
) -> tuple[Thread, str, int]:
    """The thread, branch name and counter from an append's lock row, or the refusal."""
    if not head:
        raise NotFound(f"thread {thread_id!r} not found")
    row = json.loads(head[0][0])
    thread = _build_thread(row)
    if not isinstance(owner, Unset) and not row[12]:
        raise ThreadForbidden()
    name = thread.current_branch if branch is None else branch
    if row[10] is None:
        raise NotFound(f"branch {name!r} not found")
    return thread, name, int(row[11])


def _stored_entry(new: NewEntry, thread_id: str, branch: str, position: int) -> Entry:
    """The ``Entry`` just stored from ``new``."""
    return Entry(
        id=new.id,
        thread_id=thread_id,
        branch=branch,
        position=position,
        role=new.role,  # type: ignore[arg-type]
        content=new.content,
        name=new.name,
        tool_calls=new.tool_calls,
        tool_call_id=new.tool_call_id,
        metadata=dict(new.metadata),
        state=dict(new.state),
        token_count=new.token_count,
        created_at=new.created_at,
        idempotency_key=new.idempotency_key,
        extra=new.extra,
        item=new.item,
    )


class AsyncMySQLStore(AsyncStore):
    """Memory in MySQL/MariaDB. See the module docstring for layout and guarantees."""

    capabilities = frozenset({"durable", "multi_process"})

    def __init__(
        self,
        pool: Any,
        *,
        prefix: str = "memorybank_",
        timeout: float = 10.0,
    ) -> None:
        """Use ``pool`` (an ``aiomysql.Pool``/``AsyncMySQLPool``; sync: a ``MySQLPool``).

        The caller owns the pool: ``close()`` leaves it open.
        """
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ConfigurationError(
                f"bad table prefix {prefix!r}: use up to 40 letters, digits or underscores"
            )
        self._pool = AsyncMySQLPool(pool, timeout=timeout)  # never closes a caller's pool
        self.prefix = prefix
        self.timeout = timeout
        self._closed = False
        self._ready = False
        self._schema_lock = AsyncLock()
        # concurrent appends without idempotency keys to one thread (with one owner
        # check) share a transaction: one commit for the lot (``_combine``)
        self._appends: AsyncCombiner[str, _AppendItem, AppendResult] = AsyncCombiner(
            self._append_combined, limit=_APPEND_BATCHES
        )
        #: Pooled connections whose session this store set to READ COMMITTED.
        self._read_committed: weakref.WeakSet[Any] = weakref.WeakSet()
        p = f"`{prefix}"
        self._threads = f"{p}threads`"
        self._branches = f"{p}branches`"
        self._entries = f"{p}entries`"
        self._working = f"{p}working`"
        self._snapshots = f"{p}snapshots`"
        self._summaries = f"{p}summaries`"
        self._records = f"{p}records`"
        self._vectors = f"{p}vectors`"
        self._stamps = f"{p}vector_stamps`"
        self._version = f"{p}schema_version`"

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int = 10,
        prefix: str = "memorybank_",
        timeout: float = 10.0,
    ) -> AsyncMySQLStore:
        """A store owning its pool: ``mysql://user:password@host:3306/database``."""
        if pool_size < 1:
            raise ConfigurationError("pool_size must be >= 1")
        if timeout <= 0:
            raise ConfigurationError("timeout must be > 0")
        pool = AsyncMySQLPool(size=pool_size, timeout=timeout, connect=_url_options(url))
        store = cls(pool, prefix=prefix, timeout=timeout)
        store._pool = pool  # owned: close() closes it
        return store

    async def close(self) -> None:
        """Close the pool if the store created it; later calls raise ``StoreClosed``."""
        if self._closed:
            return
        self._closed = True
        cached = self.__dict__.get("_cached_vectors")
        if cached is not None:
            cached.stop()  # the background ANN builders end with the store
        await self._pool.close()

    # -- plumbing ------------------------------------------------------------

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncMySQLConnection]:
        """A pooled connection with the schema in place; driver errors translated."""
        if self._closed:
            raise StoreClosed("the store is closed")
        try:
            async with self._pool.acquire() as conn:
                if not self._ready:
                    await self._migrate(conn)
                yield conn
        except MemoryBankError:
            raise
        except (pymysql.err.Error, OSError) as error:
            raise _translate(error) from error

    async def _retry(self, attempt: int, error: _LockContention) -> None:
        """Back off before retrying a rolled-back transaction, or give up."""
        if attempt + 1 >= _ATTEMPTS:
            raise error
        await asleep(0.01 * 2**attempt)

    async def _run_retried(
        self, statements: Sequence[_Statement]
    ) -> list[tuple[list[tuple[Any, ...]], int]]:
        """``_run`` on a pooled connection, retrying a transaction lost to lock contention."""
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await self._run(conn, statements)
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _run(
        self, conn: AsyncMySQLConnection, statements: Sequence[_Statement]
    ) -> list[tuple[list[tuple[Any, ...]], int]]:
        """Run ``statements`` in one round trip; per statement: (rows, affected rowcount)."""
        texts = [s if a is None else "" for s, a in statements]
        begin = bool(statements) and statements[0][0] is _BEGIN
        if begin:
            if conn in self._read_committed:
                texts[0] = "START TRANSACTION"
            else:
                texts[0] = _SESSION_BEGIN
                self._read_committed.add(conn)
        async with conn.cursor() as cur:
            sql = ";\n".join(
                cur.mogrify(s, a) if a is not None else text
                for (s, a), text in zip(statements, texts, strict=True)
            )
            await cur.execute(sql)
            results = [(list(await cur.fetchall() or ()), cur.rowcount)]
            while await cur.nextset():
                results.append((list(await cur.fetchall() or ()), cur.rowcount))
        if begin and texts[0] == "START TRANSACTION":
            results.insert(0, _NO_RESULT)  # where SET's result would be
        return results

    async def _one(
        self, conn: AsyncMySQLConnection, sql: str, args: Sequence[Any] | None = None
    ) -> tuple[list[tuple[Any, ...]], int]:
        async with conn.cursor() as cur:
            await cur.execute(sql, args)
            return list(await cur.fetchall() or ()), cur.rowcount

    async def _query(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            return (await self._one(conn, sql, args))[0]

    async def _execute(self, sql: str, args: Sequence[Any] | None = None) -> int:
        async with self._connection() as conn:
            return (await self._one(conn, sql, args))[1]

    async def _migrate(self, conn: AsyncMySQLConnection) -> None:
        """Create or upgrade the schema once per store (several processes: once in all)."""
        async with self._schema_lock:
            if self._ready:
                return
            if await self._schema_version(conn) == len(_MIGRATIONS):
                self._ready = True
                return
            lock = f"memorybank:{self.prefix}"
            rows, _ = await self._one(conn, "SELECT GET_LOCK(%s, %s)", (lock, self.timeout))
            if not rows or rows[0][0] != 1:
                raise StoreUnavailable("timed out waiting for another process's schema migration")
            try:
                # "already exists" notes would become Python warnings in aiomysql.
                await self._one(conn, "SET SESSION sql_notes = 0")
                await self._one(
                    conn,
                    f"CREATE TABLE IF NOT EXISTS {self._version} (id TINYINT NOT NULL PRIMARY KEY,"
                    f" version INT NOT NULL) {_TABLE}",
                )
                version = await self._schema_version(conn)
                if version > len(_MIGRATIONS):
                    raise ConfigurationError(
                        f"the MySQL schema (version {version}) is newer than this memorybank"
                        f" (version {len(_MIGRATIONS)}): upgrade memorybank"
                    )
                collation = await self._exact_collation(conn)
                for number in range(version, len(_MIGRATIONS)):
                    for statement in _MIGRATIONS[number]:
                        sql = statement.replace("{p}", self.prefix).replace("{bin}", collation)
                        try:
                            await self._one(conn, sql)
                        except pymysql.err.MySQLError as error:
                            if not error.args or error.args[0] not in _IGNORED_ON_RERUN:
                                raise
                    await self._one(
                        conn,
                        f"INSERT INTO {self._version} (id, version) VALUES (1, %s)"
                        " ON DUPLICATE KEY UPDATE version = %s",
                        (number + 1, number + 1),
                    )
            finally:
                await self._one(conn, "SET SESSION sql_notes = 1")
                await self._one(conn, "SELECT RELEASE_LOCK(%s)", (lock,))
            self._ready = True

    async def _exact_collation(self, conn: AsyncMySQLConnection) -> str:
        """The server's NO PAD binary utf8mb4 collation (see ``_X``), checked to be exact."""
        rows, _ = await self._one(
            conn,
            "SELECT COLLATION_NAME FROM information_schema.COLLATIONS"
            " WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')"
            " ORDER BY COLLATION_NAME DESC",  # MariaDB's name first where both exist
        )
        for (name,) in rows:
            probe, _ = await self._one(
                conn,
                f"SELECT _utf8mb4'x' = _utf8mb4'x ' COLLATE {name},"
                f" _utf8mb4'x' = _utf8mb4'X' COLLATE {name}",
            )
            if probe and not any(probe[0]):
                return str(name)
        raise ConfigurationError(
            "this MySQL server has no exact (NO PAD binary) utf8mb4 collation:"
            " memorybank needs MySQL 8.0.17+ (utf8mb4_0900_bin) or MariaDB 10.6+"
            " (utf8mb4_nopad_bin)"
        )

    async def _schema_version(self, conn: AsyncMySQLConnection) -> int:
        try:
            rows, _ = await self._one(conn, f"SELECT version FROM {self._version} WHERE id = 1")
        except pymysql.err.ProgrammingError as error:
            if error.args and error.args[0] == 1146:  # table does not exist
                return 0
            raise
        return int(rows[0][0]) if rows else 0

    async def _get_thread(self, conn: AsyncMySQLConnection, tenant: str, thread_id: str) -> Thread:
        rows, _ = await self._one(
            conn,
            f"SELECT {THREAD_COLUMNS} FROM {self._threads} WHERE tenant_id = %s AND id = %s",
            (tenant, thread_id),
        )
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return row_to_thread(rows[0])

    # -- threads -------------------------------------------------------------

    async def create_thread(self, thread: Thread) -> Thread:
        """Insert the thread and its first branch in one transaction."""
        async with self._connection() as conn:
            try:
                await self._run(
                    conn,
                    [
                        (_BEGIN, None),
                        (
                            f"INSERT INTO {self._threads} ({THREAD_COLUMNS})"
                            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
                        ),
                        (
                            f"INSERT INTO {self._branches} (tenant_id, thread_id, name, created_at,"
                            " from_branch, from_entry, last_position)"
                            " VALUES (%s, %s, %s, %s, NULL, NULL, 0)",
                            (
                                thread.tenant_id,
                                thread.id,
                                thread.current_branch,
                                to_us(thread.created_at),
                            ),
                        ),
                        ("COMMIT", None),
                    ],
                )
            except pymysql.err.IntegrityError as error:
                if error.args and error.args[0] == 1062:
                    raise Conflict(f"thread {thread.id!r} already exists") from error
                raise
        return dataclasses.replace(thread, metadata=dict(thread.metadata))

    async def get_thread(self, tenant: str, thread_id: str) -> Thread | None:
        """The thread, or ``None``."""
        rows = await self._query(
            f"SELECT {THREAD_COLUMNS} FROM {self._threads} WHERE tenant_id = %s AND id = %s",
            (tenant, thread_id),
        )
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
        """Threads of the tenant, most recently updated first."""
        where = ["tenant_id = %s"]
        args: list[Any] = [tenant]
        for column, value in (("user_id", user_id), ("agent_id", agent_id)):
            if isinstance(value, Unset):
                continue
            if value is None:
                where.append(f"{column} IS NULL")
            else:
                where.append(f"{column} = %s")
                args.append(value)
        if status is not None:
            where.append("status = %s")
            args.append(status)
        args.append(_ALL if limit is None else limit)
        rows = await self._query(
            f"SELECT {THREAD_COLUMNS} FROM {self._threads} WHERE {' AND '.join(where)}"
            " ORDER BY updated_at DESC, id DESC LIMIT %s",
            args,
        )
        return [row_to_thread(row) for row in rows]

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
        """Update the given fields and read the thread back, in one round trip."""
        sets = ["updated_at = %s"]
        args: list[Any] = [to_us(updated_at)]
        if not isinstance(title, Unset):
            sets.append("title = %s")
            args.append(title)
        if not isinstance(metadata, Unset):
            sets.append("metadata = %s")
            args.append(dump(metadata))
        if not isinstance(status, Unset):
            sets.append("status = %s")
            args.append(status)
        where = "tenant_id = %s AND id = %s"
        args += [tenant, thread_id]
        if not isinstance(current_branch, Unset):
            sets.append("current_branch = %s")
            args.insert(len(sets) - 1, current_branch)
            where += (
                f" AND EXISTS (SELECT 1 FROM {self._branches} b WHERE b.tenant_id = %s"
                " AND b.thread_id = %s AND b.name = %s)"
            )
            args += [tenant, thread_id, current_branch]
        results = await self._run_retried(
            [
                (f"UPDATE {self._threads} SET {', '.join(sets)} WHERE {where}", args),
                (
                    f"SELECT {THREAD_COLUMNS} FROM {self._threads}"
                    " WHERE tenant_id = %s AND id = %s",
                    (tenant, thread_id),
                ),
            ]
        )
        rows = results[1][0]
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        thread = row_to_thread(rows[0])
        if not isinstance(current_branch, Unset) and thread.current_branch != current_branch:
            raise NotFound(f"branch {current_branch!r} not found")
        return thread

    async def delete_thread(self, tenant: str, thread_id: str) -> bool:
        """Delete the thread, its branches and entries in one transaction."""
        key = (tenant, thread_id)
        results = await self._run_retried(
            [
                (_BEGIN, None),
                self._bump(tenant, "v.thread_id = %s AND v.kind = 'entry'", (thread_id,)),
                (f"DELETE FROM {self._threads} WHERE tenant_id = %s AND id = %s", key),
                (
                    f"DELETE FROM {self._branches} WHERE tenant_id = %s AND thread_id = %s",
                    key,
                ),
                (
                    f"DELETE FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s",
                    key,
                ),
                (
                    f"DELETE FROM {self._vectors}"
                    " WHERE tenant_id = %s AND thread_id = %s"
                    " AND kind = 'entry'",
                    key,
                ),
                ("COMMIT", None),
            ]
        )
        return results[3][1] > 0

    # -- entries -------------------------------------------------------------

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
        """Append in one transaction, two round trips (see the module docstring)."""
        if all(e.idempotency_key is None for e in entries) and 0 < len(entries) <= _FAST_BATCH:
            item = (thread_id, branch, owner, entries, updated_at)
            return await self._appends.submit(tenant, item)
        return await self._append_now(tenant, thread_id, entries, updated_at, branch, owner)

    async def _append_combined(
        self, tenant: str, items: Sequence[_AppendItem]
    ) -> list[AppendResult | Exception]:
        """The appends of concurrent callers, to any threads, in one transaction and a
        fixed number of statements (``_combine``): round trip 1 locks the threads (in
        id order: two such transactions never deadlock) and their branches named;
        round trip 2 inserts every allowed entry, sets each counter and ``updated_at``
        once, and commits. A refused caller (no thread, other owner, no branch) gets
        its error and wrote nothing; the others are stored."""
        out: list[AppendResult | Exception] = []
        for chunk in _by_size(items):  # no statement much bigger than an append alone
            if len(chunk) == 1:
                thread_id, branch, owner, sent, updated_at = chunk[0]
                try:
                    out.append(
                        await self._append_now(tenant, thread_id, sent, updated_at, branch, owner)
                    )
                except Exception as error:
                    if len(items) == 1:
                        raise
                    out.append(error)
                continue
            out += await self._append_chunk(tenant, chunk)
        return out

    async def _append_chunk(
        self, tenant: str, items: Sequence[_AppendItem]
    ) -> list[AppendResult | Exception]:
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await self._append_many(conn, tenant, items)
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _append_many(
        self, conn: AsyncMySQLConnection, tenant: str, items: Sequence[_AppendItem]
    ) -> list[AppendResult | Exception]:
        tids = sorted({item[0] for item in items})
        named = sorted({item[1] for item in items if item[1] is not None})
        branch_match = "b.name = t.current_branch"
        if named:
            branch_match = f"({branch_match} OR b.name IN ({_marks(len(named))}))"
        lock: _Statement = (
            f"SELECT JSON_ARRAY({_T_COLS}, b.name, b.last_position)"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            f" AND b.thread_id = t.id AND {branch_match}"
            f" WHERE t.tenant_id = %s AND t.id IN ({_marks(len(tids))})"
            " ORDER BY t.id, b.name FOR UPDATE",
            (*named, tenant, *tids),
        )
        results = await self._run(conn, [(_BEGIN, None), lock])
        threads: dict[str, Thread] = {}
        counters: dict[tuple[str, str], int] = {}
        for (text,) in results[2][0]:
            row = json.loads(text)
            read = _build_thread(row)
            threads.setdefault(read.id, read)
            if row[10] is not None:
                counters[read.id, row[10]] = int(row[11])
        out: list[AppendResult | Exception] = []
        values: list[Any] = []
        touched: dict[str, datetime] = {}
        for thread_id, branch, owner, sent, updated_at in items:
            thread = threads.get(thread_id)
            if thread is None:
                out.append(NotFound(f"thread {thread_id!r} not found"))
                continue
            if not isinstance(owner, Unset) and thread.user_id != owner:
                out.append(ThreadForbidden())
                continue
            name = thread.current_branch if branch is None else branch
            position = counters.get((thread_id, name))
            if position is None:
                out.append(NotFound(f"branch {name!r} not found"))
                continue
            stored = []
            for new in sent:
                position += 1
                stored.append(_stored_entry(new, thread_id, name, position))
                values += (tenant, thread_id, name, position, *_entry_values(new))
            counters[thread_id, name] = position
            touched[thread_id] = max(updated_at, touched.get(thread_id, updated_at))
            out.append(AppendResult(stored, dataclasses.replace(thread, updated_at=updated_at)))
        writes: list[_Statement] = []
        if values:
            rows = len(values) // _INSERT_WIDTH
            writes.append(
                (
                    f"INSERT INTO {self._entries} ({_INSERT_COLS}) VALUES "
                    + ", ".join([f"({_marks(_INSERT_WIDTH)})"] * rows),
                    values,
                )
            )
            moved = [(t, n, p) for (t, n), p in counters.items() if t in touched]
            writes.append(
                (
                    f"UPDATE {self._branches} SET last_position = CASE"
                    + " WHEN thread_id = %s AND name = %s THEN %s" * len(moved)
                    + " ELSE last_position END WHERE tenant_id = %s AND thread_id IN"
                    f" ({_marks(len(touched))})",
                    (*(v for m in moved for v in m), tenant, *touched),
                )
            )
            writes.append(
                (
                    f"UPDATE {self._threads} SET updated_at = CASE"
                    + " WHEN id = %s THEN %s" * len(touched)
                    + " ELSE updated_at END WHERE tenant_id = %s"
                    + f" AND id IN ({_marks(len(touched))})",
                    (
                        *(v for t, when in touched.items() for v in (t, to_us(when))),
                        tenant,
                        *touched,
                    ),
                )
            )
        writes.append(("COMMIT", None))
        await self._run(conn, writes)
        return out

    def _lock_statement(
        self, tenant: str, thread_id: str, branch: str | None, owner: str | Unset | None
    ) -> _Statement:
        """Lock the thread and branch rows; the thread, branch, counter and owner verdict."""
        return (
            # one JSON_ARRAY column: PyMySQL parses a column's metadata in pure Python
            f"SELECT JSON_ARRAY({_T_COLS}, b.name, b.last_position, t.user_id <=> %s)"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
            " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
            (None if isinstance(owner, Unset) else owner, branch, tenant, thread_id),
        )

    async def _append_now(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await self._append(
                        conn, tenant, thread_id, entries, updated_at, branch, owner
                    )
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _append(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        keys = [e.idempotency_key for e in entries if e.idempotency_key is not None]
        fast = not keys and 0 < len(entries) <= _FAST_BATCH
        # The owner verdict is the server's, computed in this transaction with the same
        # expression the fast path's writes are conditional on: the error raised below
        # and what was written can never disagree (a refused append writes nothing).
        lock = self._lock_statement(tenant, thread_id, branch, owner)
        statements: list[_Statement] = [(_BEGIN, None), lock]
        if fast:
            # One round trip: the writes are conditional on the checks (thread,
            # owner, branch), so a failed check writes nothing and the COMMIT
            # ends an empty transaction; positions come from the locked counter.
            statements += self._fast_writes(tenant, thread_id, entries, updated_at, branch, owner)
        elif keys:
            hashes = [_idem_hash(k) for k in keys]
            statements.append(
                (
                    f"SELECT {_E_COLS}, e.fingerprint FROM {self._entries} e JOIN {self._threads} t"
                    " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                    " WHERE e.tenant_id = %s AND e.thread_id = %s"
                    " AND e.branch = COALESCE(%s, t.current_branch)"
                    f" AND e.idem_hash IN ({', '.join(['%s'] * len(hashes))})",
                    (tenant, thread_id, branch, *hashes),
                )
            )
        results = await self._run(conn, statements)
        thread, name, position = _append_head(results[2][0], thread_id, branch, owner)
        by_key: dict[str, Entry] = {}
        if keys:
            prints: dict[str, str | None] = {}
            for found in results[3][0]:
                entry = row_to_entry(found[:-1])
                if entry.idempotency_key is not None:
                    by_key[entry.idempotency_key] = entry
                    prints[entry.idempotency_key] = found[-1]
            for new in entries:  # before any write; the exception rolls the transaction back
                if new.idempotency_key in prints and clash(
                    prints[new.idempotency_key], new.fingerprint
                ):
                    raise key_reused(new.idempotency_key)
        stored: list[Entry] = []
        values: list[Any] = []
        for new in entries:
            existing = by_key.get(new.idempotency_key) if new.idempotency_key else None
            if existing is not None:
                stored.append(existing)
                continue
            position += 1
            entry = _stored_entry(new, thread_id, name, position)
            if entry.idempotency_key is not None:
                by_key[entry.idempotency_key] = entry
            stored.append(entry)
            values += (tenant, thread_id, name, position, *_entry_values(new))
        thread = dataclasses.replace(thread, updated_at=updated_at)
        if fast:
            return AppendResult(stored, thread)
        writes: list[_Statement] = []
        added = len(values) // _INSERT_WIDTH
        if added:
            row_marks = "(" + ", ".join(["%s"] * _INSERT_WIDTH) + ")"
            writes.append(
                (
                    f"INSERT INTO {self._entries} ({_INSERT_COLS}) VALUES "
                    + ", ".join([row_marks] * added),
                    values,
                )
            )
            writes.append(
                (
                    f"UPDATE {self._branches} SET last_position = %s"
                    " WHERE tenant_id = %s AND thread_id = %s AND name = %s",
                    (position, tenant, thread_id, name),
                )
            )
        writes.append(
            (
                f"UPDATE {self._threads} SET updated_at = %s WHERE tenant_id = %s AND id = %s",
                (to_us(updated_at), tenant, thread_id),
            )
        )
        writes.append(("COMMIT", None))
        await self._run(conn, writes)
        return AppendResult(stored, thread)

    def _fast_writes(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> list[_Statement]:
        """INSERT ... SELECT and UPDATE that write only if thread, owner and branch check out."""
        source = (
            f" FROM {self._threads} t JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
            " WHERE t.tenant_id = %s AND t.id = %s"
        )
        where: list[Any] = [branch, tenant, thread_id]
        if not isinstance(owner, Unset):
            source += " AND t.user_id <=> %s"
            where.append(owner)
        marks = ", ".join(["%s"] * (_INSERT_WIDTH - 4))
        selects = []
        args: list[Any] = []
        for offset, new in enumerate(entries, start=1):
            selects.append(
                f"SELECT t.tenant_id, t.id, b.name, b.last_position + {offset}, {marks}{source}"
            )
            args += (*_entry_values(new), *where)
        return [
            (
                f"INSERT INTO {self._entries} ({_INSERT_COLS}) " + " UNION ALL ".join(selects),
                args,
            ),
            (
                f"UPDATE {self._threads} t JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
                " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
                f" SET b.last_position = b.last_position + {len(entries)}, t.updated_at = %s"
                " WHERE t.tenant_id = %s AND t.id = %s"
                + (" AND t.user_id <=> %s" if not isinstance(owner, Unset) else ""),
                (branch, to_us(updated_at), *where[1:]),
            ),
            ("COMMIT", None),
        ]

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
        """The thread and a page of entries: one statement, one round trip.

        ``SELECT thread UNION ALL (SELECT page)``: one statement is one read view,
        so the page is exactly of the branch the thread row names. Each row is
        one ``JSON_ARRAY`` (see the module docstring). The branch is a scalar
        subquery, not a join: MySQL then walks the entries primary key backwards
        and stops after ``limit`` rows (a join sorts the whole branch).
        """
        where = ""
        args: list[Any] = [tenant, thread_id, tenant, thread_id, branch, tenant, thread_id]
        if before is not None:
            where += " AND e.created_at < %s"
            args.append(to_us(before))
        if after is not None:
            where += " AND e.created_at > %s"
            args.append(to_us(after))
        args += [_ALL if limit is None else limit, offset]
        async with self._connection() as conn:
            rows, _ = await self._one(
                conn,
                f"SELECT JSON_ARRAY({THREAD_COLUMNS}) FROM {self._threads}"
                " WHERE tenant_id = %s AND id = %s"
                f" UNION ALL (SELECT JSON_ARRAY({_PAGE_COLS}) FROM {self._entries} e"
                " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.branch = COALESCE(%s,"
                f" (SELECT current_branch FROM {self._threads}"
                f" WHERE tenant_id = %s AND id = %s)){where}"
                " ORDER BY e.position DESC LIMIT %s OFFSET %s)",
                args,
            )
        thread: Thread | None = None
        values: list[list[Any]] = []
        for (text,) in rows:
            row = json.loads(text)
            if len(row) == _THREAD_WIDTH:
                thread = row_to_thread(row)
            else:
                values.append(row)
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        name = thread.current_branch if branch is None else branch
        values.sort(key=itemgetter(1), reverse=newest_first)  # UNION ALL promises no order
        return thread, [_page_entry(row, thread_id, name) for row in values]

    async def recent_messages(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """The owner and the last ``limit`` messages in one statement (``list_entries``'s
        shape, only the five columns a message needs), rows straight to provider dicts."""
        async with self._connection() as conn:
            rows, _ = await self._one(
                conn,
                f"SELECT JSON_ARRAY(user_id) FROM {self._threads} WHERE tenant_id = %s AND id = %s"
                " UNION ALL (SELECT JSON_ARRAY(e.position, e.role, e.content, e.name,"
                f" e.tool_calls, e.tool_call_id) FROM {self._entries} e"
                " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.branch ="
                f" (SELECT current_branch FROM {self._threads} WHERE tenant_id = %s AND id = %s)"
                " ORDER BY e.position DESC LIMIT %s)",
                (tenant, thread_id, tenant, thread_id, tenant, thread_id, limit),
            )
        owner: list[Any] | None = None
        page: list[list[Any]] = []
        for (text,) in rows:
            row = json.loads(text)
            if len(row) == 1:
                owner = row
            else:
                page.append(row)
        if owner is None:
            raise NotFound(f"thread {thread_id!r} not found")
        page.sort(key=itemgetter(0))  # UNION ALL promises no order
        return owner[0], messages_of_rows([row[1:] for row in page])

    async def get_entry(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        """One entry of the branch, or ``None``."""
        rows = await self._query(
            f"SELECT {_E_COLS} FROM {self._entries} e JOIN {self._threads} t"
            " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
            " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.id = %s"
            " AND e.branch = COALESCE(%s, t.current_branch)",
            (tenant, thread_id, entry_id, branch),
        )
        return row_to_entry(rows[0]) if rows else None

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """Entries of the branch by ids, in one round trip."""
        wanted = list(dict.fromkeys(entry_ids))
        if not wanted:
            return {}
        rows = await self._select_many(
            [
                (
                    f"SELECT {_E_COLS} FROM {self._entries} e JOIN {self._threads} t"
                    " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                    " WHERE e.tenant_id = %s AND e.thread_id = %s"
                    " AND e.branch = COALESCE(%s, t.current_branch)"
                    f" AND e.id IN ({_marks(len(chunk))})",
                    (tenant, thread_id, branch, *chunk),
                )
                for chunk in (wanted[i : i + _IN_CHUNK] for i in range(0, len(wanted), _IN_CHUNK))
            ]
        )
        found = {entry.id: entry for entry in map(row_to_entry, rows)}
        return {eid: found[eid] for eid in wanted if eid in found}

    async def _delete_where(
        self, tenant: str, thread_id: str, branch: str | None, condition: str, extra: Sequence[Any]
    ) -> int:
        """Delete the branch's entries matching ``condition`` (on ``e``) with the vectors
        of those no other branch holds, in one transaction; ``NotFound`` without the thread.
        """
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await self._delete_entries_in(
                        conn, tenant, thread_id, branch, condition, extra
                    )
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _delete_entries_in(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        branch: str | None,
        condition: str,
        extra: Sequence[Any],
    ) -> int:
        results = await self._run(
            conn,
            [
                (_BEGIN, None),
                (
                    f"SELECT COALESCE(%s, current_branch) FROM {self._threads}"
                    " WHERE tenant_id = %s AND id = %s FOR UPDATE",
                    (branch, tenant, thread_id),
                ),
                (
                    f"SELECT name FROM {self._branches} WHERE tenant_id = %s AND thread_id = %s",
                    (tenant, thread_id),
                ),
            ],
        )
        head = results[2][0]
        if not head:
            await self._one(conn, "ROLLBACK")
            raise NotFound(f"thread {thread_id!r} not found")
        name = head[0][0]
        where = (
            f"FROM {self._entries} e WHERE e.tenant_id = %s AND e.thread_id = %s"
            f" AND e.branch = %s{condition}"
        )
        args = (tenant, thread_id, name, *extra)
        rows, _ = await self._one(conn, f"SELECT e.id {where} FOR UPDATE", args)
        if not rows:
            await self._one(conn, "COMMIT")
            return 0
        others = [str(r[0]) for r in results[3][0] if r[0] != name]
        results = await self._run(
            conn,
            [
                (f"DELETE e {where}", args),
                *self._drop_entry_vectors(tenant, thread_id, [str(r[0]) for r in rows], others),
                ("COMMIT", None),
            ],
        )
        return results[0][1]

    def _drop_entry_vectors(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], others: Sequence[str]
    ) -> list[_Statement]:
        """Statements deleting the vectors of these deleted entries of one branch that no
        other branch (``others``) holds a copy of (a fork copies entries with their ids),
        after bumping the vector cache generation."""
        held = ""
        if others:
            held = (
                f" AND NOT EXISTS (SELECT 1 FROM {self._entries} o WHERE o.tenant_id = v.tenant_id"
                " AND o.thread_id = v.thread_id"
                f" AND o.branch IN ({_marks(len(others))}) AND o.id = v.id)"
            )
        statements: list[_Statement] = []
        ids = list(dict.fromkeys(entry_ids))
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            where = f"v.kind = 'entry' AND v.thread_id = %s AND v.id IN ({_marks(len(chunk))})"
            statements += [
                self._bump(tenant, where + held, (thread_id, *chunk, *others)),
                (
                    f"DELETE v FROM {self._vectors} v WHERE v.tenant_id = %s AND {where}{held}",
                    (tenant, thread_id, *chunk, *others),
                ),
            ]
        return statements

    async def delete_entries(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        """Delete these entries from the branch; how many."""
        ids = list(entry_ids)
        if not ids:
            async with self._connection() as conn:
                await self._get_thread(conn, tenant, thread_id)
            return 0
        total = 0
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            condition = f" AND e.id IN ({_marks(len(chunk))})"
            total += await self._delete_where(tenant, thread_id, branch, condition, chunk)
        return total

    async def truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        """Delete the entries after ``entry_id`` on the branch; how many."""
        async with self._connection() as conn:
            rows, _ = await self._one(
                conn,
                f"SELECT e.branch, e.position FROM {self._entries} e JOIN {self._threads} t"
                " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.id = %s"
                " AND e.branch = COALESCE(%s, t.current_branch)",
                (tenant, thread_id, entry_id, branch),
            )
            if not rows:
                await self._get_thread(conn, tenant, thread_id)
                raise NotFound(f"entry {entry_id!r} not found on this branch")
        return await self._delete_where(
            tenant, thread_id, rows[0][0], " AND e.position > %s", (rows[0][1],)
        )

    async def clear_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Delete every entry of the branch; how many."""
        return await self._delete_where(tenant, thread_id, branch, "", ())

    async def count_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Entries on the branch; ``NotFound`` without the thread."""
        rows = await self._query(
            f"SELECT (SELECT COUNT(*) FROM {self._entries} e WHERE e.tenant_id = t.tenant_id"
            " AND e.thread_id = t.id AND e.branch = COALESCE(%s, t.current_branch))"
            f" FROM {self._threads} t WHERE t.tenant_id = %s AND t.id = %s",
            (branch, tenant, thread_id),
        )
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][0])

    # -- branches ------------------------------------------------------------

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
        """Copy ``from_branch`` (up to ``from_entry``) into a new branch, in one transaction."""
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await self._branch(
                        conn, tenant, thread_id, name, from_branch, from_entry, created_at
                    )
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _branch(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        name: str,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        results = await self._run(
            conn,
            [
                (_BEGIN, None),
                (
                    "SELECT t.id, s.last_position, d.name,"
                    f" (SELECT e.position FROM {self._entries} e"
                    " WHERE e.tenant_id = t.tenant_id AND e.thread_id = t.id AND e.branch = s.name"
                    f" AND e.id = %s) FROM {self._threads} t"
                    f" LEFT JOIN {self._branches} s ON s.tenant_id = t.tenant_id"
                    " AND s.thread_id = t.id AND s.name = %s"
                    f" LEFT JOIN {self._branches} d ON d.tenant_id = t.tenant_id"
                    " AND d.thread_id = t.id AND d.name = %s"
                    " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
                    (from_entry, from_branch, name, tenant, thread_id),
                ),
            ],
        )
        head = results[2][0]
        if not head:
            raise NotFound(f"thread {thread_id!r} not found")
        _, source_last, existing, entry_position = head[0]
        if source_last is None:
            raise NotFound(f"branch {from_branch!r} not found")
        if existing is not None:
            raise Conflict(f"branch {name!r} already exists")
        if from_entry is not None and entry_position is None:
            raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
        upto = int(source_last) if from_entry is None else int(entry_position)
        columns = _INSERT_COLS.replace("branch, ", "")
        await self._run(
            conn,
            [
                (
                    f"INSERT INTO {self._branches} (tenant_id, thread_id, name, created_at,"
                    " from_branch, from_entry, last_position) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (tenant, thread_id, name, to_us(created_at), from_branch, from_entry, upto),
                ),
                (
                    f"INSERT INTO {self._entries} (branch, {columns}) SELECT %s, {columns}"
                    f" FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s AND branch = %s"
                    " AND position <= %s",
                    (name, tenant, thread_id, from_branch, upto),
                ),
                ("COMMIT", None),
            ],
        )
        return Branch(
            name=name,
            thread_id=thread_id,
            created_at=created_at,
            from_branch=from_branch,
            from_entry=from_entry,
        )

    async def list_branches(self, tenant: str, thread_id: str) -> list[Branch]:
        """The thread's branches, oldest first; ``NotFound`` without the thread."""
        rows = await self._query(
            f"SELECT b.name, t.id, b.created_at, b.from_branch, b.from_entry"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b"
            " ON b.tenant_id = t.tenant_id AND b.thread_id = t.id"
            " WHERE t.tenant_id = %s AND t.id = %s ORDER BY b.created_at, b.name",
            (tenant, thread_id),
        )
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return [row_to_branch(row) for row in rows if row[0] is not None]

    async def delete_branch(self, tenant: str, thread_id: str, name: str) -> bool:
        """Delete a branch and its entries (never the current one)."""
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    results = await self._run(
                        conn,
                        [
                            (_BEGIN, None),
                            (
                                f"SELECT current_branch FROM {self._threads}"
                                " WHERE tenant_id = %s AND id = %s FOR UPDATE",
                                (tenant, thread_id),
                            ),
                            (
                                f"SELECT name FROM {self._branches}"
                                " WHERE tenant_id = %s AND thread_id = %s",
                                (tenant, thread_id),
                            ),
                            (
                                f"SELECT id FROM {self._entries}"
                                " WHERE tenant_id = %s AND thread_id = %s AND branch = %s",
                                (tenant, thread_id, name),
                            ),
                        ],
                    )
                    head = results[2][0]
                    if not head:
                        raise NotFound(f"thread {thread_id!r} not found")
                    if head[0][0] == name:
                        raise Conflict(f"cannot delete the current branch {name!r}")
                    others = [str(r[0]) for r in results[3][0] if r[0] != name]
                    gone = [str(r[0]) for r in results[4][0]]
                    key = (tenant, thread_id, name)
                    results = await self._run(
                        conn,
                        [
                            (
                                f"DELETE FROM {self._branches}"
                                " WHERE tenant_id = %s AND thread_id = %s AND name = %s",
                                key,
                            ),
                            (
                                f"DELETE FROM {self._entries}"
                                " WHERE tenant_id = %s AND thread_id = %s AND branch = %s",
                                key,
                            ),
                            *self._drop_entry_vectors(tenant, thread_id, gone, others),
                            ("COMMIT", None),
                        ],
                    )
                return results[0][1] > 0
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    # -- working memory ------------------------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Upsert one key."""
        await self._execute(
            f"INSERT INTO {self._working} (tenant_id, run_id, k, value) VALUES (%s, %s, %s, %s)"
            " ON DUPLICATE KEY UPDATE value = %s",
            (tenant, run_id, key, value, value),
        )

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The JSON text under ``key``, or ``None``."""
        rows = await self._query(
            f"SELECT value FROM {self._working} WHERE tenant_id = %s AND run_id = %s AND k = %s",
            (tenant, run_id, key),
        )
        return str(rows[0][0]) if rows else None

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key; whether it existed."""
        return (
            await self._execute(
                f"DELETE FROM {self._working} WHERE tenant_id = %s AND run_id = %s AND k = %s",
                (tenant, run_id, key),
            )
            > 0
        )

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run."""
        rows = await self._query(
            f"SELECT k, value FROM {self._working} WHERE tenant_id = %s AND run_id = %s",
            (tenant, run_id),
        )
        return {str(k): str(v) for k, v in rows}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Forget the run's working memory."""
        await self._execute(
            f"DELETE FROM {self._working} WHERE tenant_id = %s AND run_id = %s", (tenant, run_id)
        )

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Distinct run ids (binary collation: compared bytewise)."""
        return await self._run_ids(self._working, tenant, after, limit)

    async def _run_ids(
        self, table: str, tenant: str, after: str | None, limit: int | None
    ) -> list[str]:
        sql, params = run_ids_sql(table, tenant, after, limit, "%s")
        return [str(row[0]) for row in await self._query(sql, params)]

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
        """Upsert the run's snapshot.

        Checked: the upsert's update applies only where the stored owner allows it
        (``user_id`` assigned last: MySQL evaluates the assignments in order, so the
        earlier conditions still see the old owner), then the row, still locked by
        the upsert, tells whether it did: the owner is ``user_id`` exactly then.
        """
        when = to_us(saved_at)
        insert = (
            f"INSERT INTO {self._snapshots} (tenant_id, run_id, user_id, value, saved_at)"
            " VALUES (%s, %s, %s, %s, %s)"
        )
        if not owner_check:
            await self._execute(
                insert + " ON DUPLICATE KEY UPDATE user_id = %s, value = %s, saved_at = %s",
                (tenant, run_id, user_id, value, when, user_id, value, when),
            )
            return
        mine = "(user_id IS NULL OR user_id <=> %s)"
        checked = (user_id, value, user_id, when, user_id, user_id)  # (mine, new value) x 3
        results = await self._run_retried(
            [
                (_BEGIN, None),
                (
                    insert + f" ON DUPLICATE KEY UPDATE value = IF({mine}, %s, value),"
                    f" saved_at = IF({mine}, %s, saved_at), user_id = IF({mine}, %s, user_id)",
                    (tenant, run_id, user_id, value, when, *checked),
                ),
                (
                    f"SELECT user_id <=> %s FROM {self._snapshots}"
                    " WHERE tenant_id = %s AND run_id = %s",
                    (user_id, tenant, run_id),
                ),
                ("COMMIT", None),
            ]
        )
        if not results[3][0][0][0]:
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner, JSON text)`` or ``None``."""
        rows = await self._query(
            f"SELECT user_id, value FROM {self._snapshots} WHERE tenant_id = %s AND run_id = %s",
            (tenant, run_id),
        )
        return (rows[0][0], str(rows[0][1])) if rows else None

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete the snapshot; whether it existed. Checked: one transaction, one round
        trip, the owner read under the row's lock and the delete conditional on it."""
        delete = f"DELETE FROM {self._snapshots} WHERE tenant_id = %s AND run_id = %s"
        if not owner_check:
            return await self._execute(delete, (tenant, run_id)) > 0
        results = await self._run_retried(
            [
                (_BEGIN, None),
                (
                    f"SELECT user_id FROM {self._snapshots} WHERE tenant_id = %s AND run_id = %s"
                    " FOR UPDATE",
                    (tenant, run_id),
                ),
                (delete + " AND (user_id IS NULL OR user_id <=> %s)", (tenant, run_id, user_id)),
                ("COMMIT", None),
            ]
        )
        found, deleted = results[2][0], results[3][1]
        if found and not deleted:
            raise ThreadForbidden("snapshot access forbidden")
        return deleted > 0

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Run ids with a snapshot."""
        return await self._run_ids(self._snapshots, tenant, after, limit)

    # -- summaries -------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Insert a summary."""
        await self._execute(
            f"INSERT INTO {self._summaries} (tenant_id, id, agent_id, user_id, content, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
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

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for the user plus the shared ones, oldest first."""
        rows = await self._query(
            f"SELECT id, agent_id, user_id, content, created_at FROM {self._summaries}"
            " WHERE tenant_id = %s AND agent_id = %s"
            " AND (%s OR user_id IS NULL OR user_id = %s) ORDER BY created_at, id",
            (tenant, agent_id, *any_user(user_id)),
        )
        return [row_to_summary(row) for row in rows]

    # -- erasure ---------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Erase the user's threads (with entries and their vectors), records (with theirs),
        snapshots and summaries, atomically."""
        key = (tenant, user_id)
        join = (
            f"JOIN {self._threads} t ON t.tenant_id = x.tenant_id AND t.id = x.thread_id"
            " WHERE t.tenant_id = %s AND t.user_id = %s"
        )
        results = await self._run_retried(
            [
                (_BEGIN, None),
                self._bump(
                    tenant,
                    f"v.kind = 'entry' AND v.thread_id IN (SELECT t.id FROM {self._threads} t"
                    " WHERE t.tenant_id = %s AND t.user_id = %s)",
                    key,
                ),
                self._bump(
                    tenant,
                    f"v.kind <> 'entry' AND v.id IN (SELECT r.id FROM {self._records} r"
                    " WHERE r.tenant_id = %s AND r.kind = v.kind AND r.user_id = %s)",
                    key,
                ),
                (f"DELETE x FROM {self._vectors} x {join} AND x.kind = 'entry'", key),
                (f"DELETE x FROM {self._entries} x {join}", key),
                (f"DELETE x FROM {self._branches} x {join}", key),
                (
                    f"DELETE FROM {self._threads} WHERE tenant_id = %s AND user_id = %s",
                    key,
                ),
                (
                    f"DELETE FROM {self._snapshots} WHERE tenant_id = %s AND user_id = %s",
                    key,
                ),
                (
                    f"DELETE FROM {self._summaries} WHERE tenant_id = %s AND user_id = %s",
                    key,
                ),
                (
                    f"DELETE v FROM {self._vectors} v JOIN {self._records} r"
                    " ON r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
                    " WHERE r.tenant_id = %s AND r.user_id = %s AND v.kind <> 'entry'",
                    key,
                ),
                (
                    f"DELETE FROM {self._records} WHERE tenant_id = %s AND user_id = %s",
                    key,
                ),
                ("COMMIT", None),
            ]
        )
        return sum(results[i][1] for i in (5, 7, 8, 9, 11))

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
        """Compare-and-swap the branch's prefix, under the thread row's lock (two round trips)."""
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await self._compact(
                        conn,
                        tenant,
                        thread_id,
                        branch,
                        through_position,
                        expected_ids,
                        summary,
                        updated_at,
                    )
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _compact(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        branch: str,
        through: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        prefix = (tenant, thread_id, branch, through)
        results = await self._run(
            conn,
            [
                (_BEGIN, None),
                (
                    f"SELECT b.name FROM {self._threads} t LEFT JOIN {self._branches} b"
                    " ON b.tenant_id = t.tenant_id AND b.thread_id = t.id AND b.name = %s"
                    " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
                    (branch, tenant, thread_id),
                ),
                (
                    # FOR UPDATE: a concurrent delete of one of these waits for the swap.
                    f"SELECT id FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s"
                    " AND branch = %s AND position <= %s ORDER BY position FOR UPDATE",
                    prefix,
                ),
                (
                    f"SELECT name FROM {self._branches} WHERE tenant_id = %s AND thread_id = %s",
                    (tenant, thread_id),
                ),
            ],
        )
        head = results[2][0]
        if not head:
            raise NotFound(f"thread {thread_id!r} not found")  # the pool rolls back
        if head[0][0] is None:
            raise NotFound(f"branch {branch!r} not found")
        if [row[0] for row in results[3][0]] != list(expected_ids):
            await self._one(conn, "ROLLBACK")
            return False
        others = [str(r[0]) for r in results[4][0] if r[0] != branch]
        writes: list[_Statement] = [
            (
                f"DELETE FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s"
                " AND branch = %s AND position <= %s",
                prefix,
            ),
            *self._drop_entry_vectors(tenant, thread_id, list(expected_ids), others),
        ]
        if summary is not None:
            writes.append(
                (
                    f"INSERT INTO {self._entries} ({_INSERT_COLS})"
                    f" VALUES ({', '.join(['%s'] * _INSERT_WIDTH)})",
                    (tenant, thread_id, branch, through, *_entry_values(summary)),
                )
            )
        writes += [
            (
                f"UPDATE {self._threads} SET updated_at = %s WHERE tenant_id = %s AND id = %s",
                (to_us(updated_at), tenant, thread_id),
            ),
            ("COMMIT", None),
        ]
        await self._run(conn, writes)
        return True

    async def update_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """Set content, state and token count by id in one transaction (one round trip)."""
        by_id = {c[0]: c for c in changes}  # the last change of an id wins
        statements: list[_Statement] = [
            (_BEGIN, None),
            (
                f"SELECT id FROM {self._threads} WHERE tenant_id = %s AND id = %s FOR UPDATE",
                (tenant, thread_id),
            ),
        ]
        if by_id:
            # Counted, not the UPDATEs' rowcounts: MySQL counts only rows whose value changed.
            statements.append(
                (
                    f"SELECT COUNT(*) FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s"
                    f" AND branch = %s AND id IN ({', '.join(['%s'] * len(by_id))})",
                    (tenant, thread_id, branch, *by_id),
                )
            )
        statements += [
            (
                f"UPDATE {self._entries} SET content = %s, state = %s, token_count = %s"
                " WHERE tenant_id = %s AND thread_id = %s AND branch = %s AND id = %s",
                (content, dump(state), tokens, tenant, thread_id, branch, entry_id),
            )
            for entry_id, content, state, tokens in by_id.values()
        ]
        statements.append(("COMMIT", None))
        results = await self._run_retried(statements)
        if not results[2][0]:
            raise NotFound(f"thread {thread_id!r} not found")  # nothing matched, nothing written
        return int(results[3][0][0][0]) if by_id else 0

    # -- records -----------------------------------------------------------------

    async def _transaction(
        self,
        statements: Sequence[_Statement],
        *,
        tenant: str = "",
        guard: RecordGuard | None = None,
    ) -> list[int]:
        """Run write statements as one transaction, in as few round trips as their size
        allows (about ``_BATCH_BYTES`` each, under ``max_allowed_packet``); their rowcounts.

        With ``guard``, a first round trip locks or claims the guarded record and the
        statements run only if it holds (``Conflict`` otherwise, rolled back).
        """
        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as conn:
                    tail: list[_Statement] = [("COMMIT", None)]
                    if guard is None:
                        batch: list[_Statement] = [(_BEGIN, None)]
                        skip = 2  # SET TRANSACTION, START TRANSACTION
                    else:
                        await self._check_guard(conn, tenant, guard)
                        batch, skip = [], 0
                        if guard.revision is None:
                            tail.insert(0, self._guard_release(tenant, guard))
                    counts: list[int] = []
                    size = 0
                    for statement in [*statements, *tail]:
                        batch.append(statement)
                        size += len(statement[0]) + sum(
                            len(a) for a in statement[1] or () if isinstance(a, str)
                        )
                        if size >= _BATCH_BYTES or statement[0] == "COMMIT":
                            results = await self._run(conn, batch)
                            counts += [r[1] for r in results]
                            batch, size = [], 0
                    return counts[skip : skip + len(statements)]
            except _LockContention as error:
                await self._retry(attempt, error)
        raise AssertionError("unreachable")

    async def _check_guard(
        self, conn: AsyncMySQLConnection, tenant: str, guard: RecordGuard
    ) -> None:
        """Start the transaction holding the guarded row's lock; ``Conflict`` if it fails.

        An absent row cannot be locked, so its key is claimed with a placeholder row
        (revision -1): a concurrent claimer's insert waits for this transaction, then
        finds the key taken. Placeholders are never committed, so -1 means ours.
        """
        key = (tenant, guard.kind, guard.id)
        statements: list[_Statement] = [(_BEGIN, None)]
        if guard.revision is None:
            statements.append(
                (
                    f"INSERT INTO {self._records} (tenant_id, kind, id, content, data,"
                    " created_at, updated_at, revision) VALUES (%s, %s, %s, '', '{}', 0, 0, -1)"
                    " ON DUPLICATE KEY UPDATE revision = revision",
                    key,
                )
            )
        statements.append(
            (
                f"SELECT revision FROM {self._records} WHERE tenant_id = %s AND kind = %s"
                " AND id = %s FOR UPDATE",
                key,
            )
        )
        rows = (await self._run(conn, statements))[-1][0]
        found = int(rows[0][0]) if rows else None
        if found != (-1 if guard.revision is None else guard.revision):
            raise guard.failed()  # the pool rolls back

    def _guard_release(self, tenant: str, guard: RecordGuard) -> _Statement:
        """Drop the placeholder of an absent guarded record (unless the write replaced it)."""
        return (
            f"DELETE FROM {self._records} WHERE tenant_id = %s AND kind = %s AND id = %s"
            " AND revision = -1",
            (tenant, guard.kind, guard.id),
        )

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """Upsert every record (by kind and id) in one transaction (guard: ``_check_guard``)."""
        statements: list[_Statement] = []
        for r in records:
            values = (
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
            statements.append(
                (
                    f"INSERT INTO {self._records} (tenant_id, kind, id, agent_id, user_id, k,"
                    " content, data, created_at, updated_at, expires_at, revision)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON DUPLICATE KEY UPDATE agent_id = %s, user_id = %s, k = %s, content = %s,"
                    " data = %s, created_at = %s, updated_at = %s, expires_at = %s, revision = %s",
                    (tenant, r.kind, r.id, *values, *values),
                )
            )
        if statements or guard is not None:
            await self._transaction(statements, tenant=tenant, guard=guard)

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        """One record, or ``None``."""
        rows = await self._query(
            f"SELECT {_R_COLS} FROM {self._records} WHERE tenant_id = %s AND kind = %s AND id = %s",
            (tenant, kind, record_id),
        )
        return row_to_record(rows[0]) if rows else None

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        """Delete records (and their vectors) by id, in one transaction; how many existed."""
        ids = list(dict.fromkeys(record_ids))
        if not ids and guard is None:
            return 0
        statements: list[_Statement] = []
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            marks = _marks(len(chunk))
            where = f" WHERE tenant_id = %s AND kind = %s AND id IN ({marks})"
            statements += [
                self._bump(tenant, f"v.kind = %s AND v.id IN ({marks})", (kind, *chunk)),
                (f"DELETE FROM {self._vectors}{where}", (tenant, kind, *chunk)),
                (f"DELETE FROM {self._records}{where}", (tenant, kind, *chunk)),
            ]
        counts = await self._transaction(statements, tenant=tenant, guard=guard)
        return sum(counts[2::3])

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
        """Records of ``kind``, oldest first (``created_at``, id), filtered."""
        where = ["tenant_id = %s", "kind = %s"]
        args: list[Any] = [tenant, kind]
        for column, value in (("agent_id", agent_id), ("user_id", user_id), ("k", key)):
            if not isinstance(value, Unset):
                where.append(f"{column} <=> %s")
                args.append(value)
        scope, scope_args = scope_sql("", visible_to, "%s")
        args += [*scope_args, _ALL if limit is None else limit]
        rows = await self._query(
            f"SELECT {_R_COLS} FROM {self._records} WHERE {' AND '.join(where)}{scope}"
            " ORDER BY created_at, id LIMIT %s",
            args,
        )
        return [row_to_record(row) for row in rows]

    async def _select_many(self, statements: Sequence[_Statement]) -> list[tuple[Any, ...]]:
        """The rows of several reads, sent as multi-statement queries: one round trip
        unless they exceed ``_BATCH_BYTES`` (then one per that many bytes)."""
        rows: list[tuple[Any, ...]] = []
        async with self._connection() as conn:
            batch: list[_Statement] = []
            size = 0
            for statement in statements:
                batch.append(statement)
                size += len(statement[0]) + sum(
                    len(a) for a in statement[1] or () if isinstance(a, str)
                )
                if size >= _BATCH_BYTES:
                    rows += [row for result, _ in await self._run(conn, batch) for row in result]
                    batch, size = [], 0
            if batch:
                rows += [row for result, _ in await self._run(conn, batch) for row in result]
        return rows

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """Primary-key reads, ``_IN_CHUNK`` ids per statement, in one round trip."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        rows = await self._select_many(
            [
                (
                    f"SELECT {_R_COLS} FROM {self._records} WHERE tenant_id = %s AND kind = %s"
                    f" AND id IN ({_marks(len(chunk))})",
                    (tenant, kind, *chunk),
                )
                for chunk in _chunks(ids)
            ]
        )
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
        """Reads of the ``records_key`` index, ``_IN_CHUNK`` keys per statement, in one
        round trip; oldest first."""
        return await self._list_keys(tenant, [kind], keys, visible_to)

    async def record_list_keys_by_kind(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, list[Record]]:
        """The same round trip for every kind (``kind IN (...)`` on the same index)."""
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
        scope, scope_args = scope_sql("", visible_to, "%s")
        rows = await self._select_many(
            [
                (
                    f"SELECT {_R_COLS} FROM {self._records} WHERE tenant_id = %s"
                    f" AND kind IN ({_marks(len(kinds))}) AND k IN ({_marks(len(chunk))}){scope}",
                    (tenant, *kinds, *chunk, *scope_args),
                )
                for chunk in _chunks(wanted)
            ]
        )
        rows.sort(key=lambda row: (row[6], row[1]))  # created_at (µs), id: binary order
        return [row_to_record(row) for row in rows]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One range of ``records_list`` (tenant_id, kind, created_at + the primary key's
        id, which InnoDB appends to every secondary index) from the cursor."""
        where = "tenant_id = %s AND kind = %s"
        args: list[Any] = [tenant, kind]
        if after is not None:
            at = to_us(after[0])
            where += " AND (created_at > %s OR (created_at = %s AND id > %s))"
            args += [at, at, after[1]]
        scope, scope_args = scope_sql("", visible_to, "%s")
        args += [*scope_args, limit]
        rows = await self._query(
            f"SELECT {_R_COLS} FROM {self._records} FORCE INDEX (`{self.prefix}records_list`)"
            f" WHERE {where}{scope} ORDER BY created_at, id LIMIT %s",
            args,
        )
        return [row_to_record(row) for row in rows]

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
        """FULLTEXT natural-language matches of entries and records, best first (one round trip).

        Scores are InnoDB's relevance (see the module docstring for its quirks).
        """
        words = _search_words(query)
        if not words or k <= 0:
            return []
        match = "MATCH ({}content) AGAINST (%s IN NATURAL LANGUAGE MODE)"
        statements: list[_Statement] = []
        if "entry" in kinds:
            sql = (
                f"SELECT 'entry', e.id, {match.format('e.')}, e.thread_id, e.branch"
                f" FROM {self._entries} e"
            )
            args: list[Any] = [words]
            if visible_to is not None:
                sql += (
                    f" JOIN {self._threads} t ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                )
            sql += f" WHERE {match.format('e.')} AND e.tenant_id = %s"
            args += [words, tenant]
            if thread_id is not None:
                sql += " AND e.thread_id = %s"
                args.append(thread_id)
            scope, scope_args = scope_sql("t.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((f"{sql} ORDER BY 3 DESC, e.id, e.branch LIMIT %s", [*args, k]))
        record_kinds = [kind for kind in kinds if kind != "entry"]
        if record_kinds and thread_id is None:
            sql = (
                f"SELECT r.kind, r.id, {match.format('r.')}, NULL, NULL FROM {self._records} r"
                f" WHERE {match.format('r.')} AND r.tenant_id = %s"
                f" AND r.kind IN ({_marks(len(record_kinds))})"
            )
            args = [words, words, tenant, *record_kinds]
            scope, scope_args = scope_sql("r.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((f"{sql} ORDER BY 3 DESC, r.kind, r.id LIMIT %s", [*args, k]))
        if not statements:
            return []
        async with self._connection() as conn:
            results = await self._run(conn, statements)
        hits = [
            SearchHit(row[0], row[1], float(row[2]), row[3], row[4])
            for rows, _ in results
            for row in rows
        ]
        hits.sort(key=lambda h: (-h.score, h.kind, h.id, h.branch or ""))
        return hits[:k]

    def _bump(self, tenant: str, where: str, args: Sequence[Any]) -> _Statement:
        """Bump the vector cache generation of the (model, kind)s of the tenant's vectors
        that ``where`` (on ``v``, with ``args``) selects: run before deleting them."""
        return (
            f"UPDATE {self._stamps} s SET s.generation = s.generation + 1"
            f" WHERE s.tenant_id = %s AND EXISTS (SELECT 1 FROM {self._vectors} v"
            " WHERE v.tenant_id = s.tenant_id AND v.model_id = s.model_id AND v.kind = s.kind"
            f" AND {where})",
            (tenant, *args),
        )

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Upsert embeddings (float32 unit vectors) in one transaction.

        Per (model, kind), in that order, the version in ``vector_stamps`` is bumped
        first (its row lock orders the writers) and stamped on the rows as ``seq``.
        """
        latest = {(i.model_id, i.kind, i.id): i for i in items}
        statements: list[_Statement] = []
        for model_id, kind in sorted({(m, k) for m, k, _ in latest}):
            group = (tenant, model_id, kind)
            statements.append(
                (
                    f"INSERT INTO {self._stamps} (tenant_id, model_id, kind, version)"
                    " VALUES (%s, %s, %s, 1) ON DUPLICATE KEY UPDATE version = version + 1",
                    group,
                )
            )
            seq = (
                f"(SELECT version FROM {self._stamps} WHERE tenant_id = %s AND model_id = %s"
                " AND kind = %s)"
            )
            for (m, kd, _), item in latest.items():
                if (m, kd) != (model_id, kind):
                    continue
                # Hex text: aiomysql cannot escape bytes.
                blob = unit_vector_bytes(item.vector).hex()
                statements.append(
                    (
                        f"INSERT INTO {self._vectors}"
                        " (tenant_id, kind, id, model_id, thread_id, vector, seq)"
                        f" VALUES (%s, %s, %s, %s, %s, UNHEX(%s), {seq})"
                        " ON DUPLICATE KEY UPDATE thread_id = VALUES(thread_id),"
                        " vector = VALUES(vector), seq = VALUES(seq)",
                        (tenant, kind, item.id, model_id, item.thread_id, blob, *group),
                    )
                )
        if statements:
            await self._transaction(statements)

    def _vector_statements(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        column: str,
        ids: Mapping[str, Sequence[str]] | None = None,
    ) -> list[_Statement]:
        """The scoped vector reads (entries, records), selecting ``column`` after
        (kind, id, thread); with ``ids``, only those ids of each kind."""
        statements: list[_Statement] = []
        if "entry" in kinds:
            sql = (
                f"SELECT 'entry', v.id, v.thread_id{column} FROM {self._vectors} v"
                f" JOIN {self._threads} t ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
                " WHERE v.tenant_id = %s AND v.model_id = %s AND v.kind = 'entry'"
            )
            args: list[Any] = [tenant, model_id]
            if thread_id is not None:
                sql += " AND v.thread_id = %s"
                args.append(thread_id)
            if ids is not None:
                wanted = list(ids.get("entry", ()))
                sql += f" AND v.id IN ({_marks(len(wanted))})"
                args += wanted
            scope, scope_args = scope_sql("t.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((sql, args))
        record_kinds = [kind for kind in kinds if kind != "entry"]
        if record_kinds and thread_id is None:
            sql = (
                f"SELECT v.kind, v.id, NULL{column} FROM {self._vectors} v"
                f" JOIN {self._records} r ON r.tenant_id = v.tenant_id AND r.kind = v.kind"
                " AND r.id = v.id WHERE v.tenant_id = %s AND v.model_id = %s"
                f" AND v.kind IN ({_marks(len(record_kinds))})"
            )
            args = [tenant, model_id, *record_kinds]
            if ids is not None:
                wanted = sorted({rid for kind in record_kinds for rid in ids.get(kind, ())})
                sql += f" AND v.id IN ({_marks(len(wanted))})"
                args += wanted
            scope, scope_args = scope_sql("r.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((sql, args))
        return statements

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
        """Cosine top ``k`` (numpy) over the vectors kept in process (``_vector_cache``),
        kept current through ``vector_stamps``; the hits' scope is confirmed in SQL."""
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

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int
    ) -> CachedRows:
        from memorybank.stores._vectors import CachedRows

        if kind == "entry":
            sql = (
                "SELECT v.seq, v.id, v.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL,"
                f" v.vector FROM {self._vectors} v LEFT JOIN {self._threads} t"
                " ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
            )
        else:
            sql = (
                "SELECT v.seq, v.id, NULL, r.agent_id, r.user_id, r.id IS NOT NULL,"
                f" v.vector FROM {self._vectors} v LEFT JOIN {self._records} r"
                " ON r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
            )
        sql += (
            " WHERE v.tenant_id = %s AND v.model_id = %s AND v.kind = %s AND v.seq > %s"
            " ORDER BY v.seq"
        )
        found = CachedRows()
        for seq, rid, tid, agent, user, alive, blob in await self._select_many(
            [(sql, (tenant, model_id, kind, after))]
        ):
            found.add(int(seq), rid, tid, agent, user, bool(alive), bytes(blob))
        return found

    async def _vc_live(self, tenant: str, model_id: str, kind: str) -> dict[str, int]:
        """``id -> seq`` of every stored vector of the key (no vector read)."""
        rows = await self._select_many(
            [
                (
                    f"SELECT id, seq FROM {self._vectors} WHERE tenant_id = %s AND model_id = %s"
                    " AND kind = %s",
                    (tenant, model_id, kind),
                )
            ]
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
        statements: list[_Statement] = []
        if kinds:  # the counters first; their rows have 4 columns, the confirmed ones 3
            statements.append(
                (
                    f"SELECT kind, version, generation, 0 FROM {self._stamps}"
                    f" WHERE tenant_id = %s AND model_id = %s AND kind IN ({_marks(len(kinds))})",
                    (tenant, model_id, *kinds),
                )
            )
        ids = {kind: [rid for rid, _ in pairs] for kind, pairs in shortlist.items()}
        # No thread filter in SQL (checked below): the ids are primary-key lookups.
        wanted = list(ids) if thread_id is None else [kind for kind in ids if kind == "entry"]
        statements += self._vector_statements(tenant, model_id, wanted, None, visible_to, "", ids)
        stamps: dict[str, tuple[int, int]] = {}
        confirmed: set[tuple[str, str]] = set()
        for row in await self._select_many(statements) if statements else []:
            if len(row) == 4:
                stamps[str(row[0])] = (int(row[1]), int(row[2]))
            elif thread_id is None or row[2] == thread_id:
                confirmed.add((str(row[0]), str(row[1])))
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
        """Exact cosine top ``k`` (numpy) over every scoped vector of ``model_id``."""
        from memorybank.stores._vectors import top_k

        statements = self._vector_statements(
            tenant, model_id, kinds, thread_id, visible_to, ", v.vector"
        )
        if not statements or k <= 0:
            return []
        rows = await self._select_many(statements)
        best = top_k(vector, [bytes(row[3]) for row in rows], k)
        return [SearchHit(rows[i][0], rows[i][1], score, rows[i][2]) for i, score in best]

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        """Stored vectors of ``model_id`` for these ids (missing ids are absent)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        statements: list[_Statement] = [
            (
                f"SELECT id, vector FROM {self._vectors} WHERE tenant_id = %s AND kind = %s"
                f" AND model_id = %s AND id IN ({_marks(len(chunk))})",
                (tenant, kind, model_id, *chunk),
            )
            for chunk in (wanted[i : i + 1000] for i in range(0, len(wanted), 1000))
        ]
        async with self._connection() as conn:
            results = await self._run(conn, statements)
        found = {row[0]: vector_from_bytes(bytes(row[1])) for rows, _ in results for row in rows}
        return {vid: found[vid] for vid in wanted if vid in found}
