"""AsyncMySQLStore: threads and entries in MySQL 8 / MariaDB 10.6+ (InnoDB), via aiomysql.

The sync ``MySQLStore`` (PyMySQL) is generated from this package; the two drivers
differ only in their pools, wrapped in ``memorybank.stores.mysql.compat``.

The store is composed of one mixin per concern, each in a module of its own (with
its own notes) over ``_base.MySQLBase``, the shared state and plumbing (pool,
connections, round trips, transactions retried after lock contention):

- ``_threads``: threads and branches.
- ``_appends``: appends, one transaction each or combined (the append path).
- ``_entries``: entry reads ("last N"), deletes, compaction and updates.
- ``_runs``: working memory, snapshots, summaries and ``forget_user``.
- ``_records``: records (facts, documents, core facts), guarded writes.
- ``_search``: keyword search (InnoDB FULLTEXT and its quirks) and vectors.
- ``_events``: the change feed (triggers; ``memorybank.stores.sql.events``).
- ``memorybank.stores.mysql.schema``: the tables and migrations (schema creation,
  exact ids); ``memorybank.stores.mysql.rows``: sync-free helpers (SQL fragments,
  error translation, URL options, row mapping).

Layout (``<p>`` is the table prefix, default ``memorybank_``; every table is
InnoDB, ``utf8mb4`` with a NO PAD binary collation (migration 3), so ids compare
exactly, trailing spaces and case included, and emoji/CJK round-trip; times are
BIGINT microseconds since the epoch; JSON columns are LONGTEXT holding compact
JSON text; every key and index leads with ``tenant_id``):

- ``<p>schema_version`` (id, version): the number of ``MIGRATIONS`` applied.
- ``<p>threads``: PK (tenant_id, id); indexes (tenant_id, updated_at, id) and
  (tenant_id, user_id, updated_at).
- ``<p>branches``: PK (tenant_id, thread_id, name); ``last_position`` is the
  highest position ever given on the branch (the append counter);
  ``entry_count`` (migration 7) its entries now, kept by every write that adds or
  removes them and read by ``entry_count``.
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
  ``utf8mb4_unicode_ci``, see "Keyword search"). Migration 8 adds ``id_hash``
  (64 bits of SHA-256 of the entry id) and UNIQUE (tenant_id, thread_id,
  branch, id_hash): entry ids are unique on a branch, refused in the append's
  transaction (see ``_appends``).
- ``<p>events``, ``<p>events_tenants``, ``<p>events_config``, ``<p>events_mute``:
  the change feed's tables, made when it is first turned on (``_events``).
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
  confirmed in SQL. Entry vectors go with their thread (``thread_delete``,
  ``forget_user``) and with their entry once no branch holds a copy of it
  (``entry_delete``, ``entry_truncate_after``, ``entry_clear``, ``branch_delete``,
  ``entry_compact``: in the same transaction, the thread row locked); record
  vectors with their record.

Durability is the server's (``innodb_flush_log_at_trx_commit``). ``timeout``
bounds connecting, waiting for a pooled connection, lock waits (half of it) and
each operation (async: the whole operation; sync: each socket read/write).
A refused or unreachable server raises ``StoreUnavailable`` at once; a rejected
login or unknown database raises ``ConfigurationError`` (the driver's error is
``__cause__`` of both).
"""

from __future__ import annotations

from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.mysql._async._appends import AppendsMixin
from memorybank.stores.mysql._async._entries import EntriesMixin
from memorybank.stores.mysql._async._events import EventsMixin
from memorybank.stores.mysql._async._records import RecordsMixin
from memorybank.stores.mysql._async._runs import RunsMixin
from memorybank.stores.mysql._async._search import SearchMixin
from memorybank.stores.mysql._async._threads import ThreadsMixin
from memorybank.stores.mysql.rows import LockContention as LockContention

# Private names that tests and benchmarks import from this module, as before the split.
from memorybank.stores.mysql.rows import idem_hash as idem_hash
from memorybank.stores.mysql.rows import url_options as url_options
from memorybank.stores.mysql.schema import MIGRATIONS as MIGRATIONS
from memorybank.stores.mysql.schema import TABLES

__all__ = ["TABLES", "AsyncMySQLStore"]


class AsyncMySQLStore(
    ThreadsMixin, AppendsMixin, EntriesMixin, RunsMixin, RecordsMixin, SearchMixin, EventsMixin
):
    """Memory in MySQL/MariaDB. See the package docstring (and each part's module) for
    layout and guarantees."""

    capabilities = frozenset(
        {
            Capability.ATOMIC,
            Capability.DURABLE,
            Capability.EVENTS,
            Capability.MULTI_PROCESS,
            Capability.SNAPSHOT,
            Capability.RUN_STATE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
        }
    )
