"""AsyncPostgresStore: PostgreSQL through psycopg 3 (``pip install 'memorybank[postgres]'``).

The store is composed of one mixin per concern, each in a module of its own, over
``_base.PostgresBase`` (the pool or connection, first connection, migrations, autocommit
statements, transactions, errors), itself over the verbs the SQL engines share
(``memorybank.stores.sql._async.core.SQLCore``, ``writes.SQLWrites``,
``entry_reads.EntryBatchReads``): ``_threads`` (a thread's creation in one statement),
``_appends`` (one statement each, or combined), ``_entries`` (reads, compaction's insert,
updates), ``_events`` (the change feed), ``_records`` (one-statement writes, reads), ``_search``
(``tsvector``), ``_vectors`` (pgvector and HNSW, or the in-process cache's reads);
``memorybank.stores.postgres.schema`` (migrations), ``.statements`` (the SQL) and
``.rows`` (sync-free helpers).

What each verb does and why it is written so (the tables, one-statement appends and
write combining, full text, vectors, isolation, connections, compaction) is in
docs/postgres.md ("Schema, appends and distribution by tenant", "How the store works").

Differences from the contract: none known. ``AsyncMemory`` refuses what
PostgreSQL cannot store (a NUL character in text or in a JSON string) before it
gets here; a value it still refuses raises ``StoreError``; nothing is written.
"""

from __future__ import annotations

try:
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the PostgreSQL store needs psycopg: pip install 'memorybank[postgres]'"
    ) from error

from memorybank.stores.postgres._async._appends import AppendsMixin
from memorybank.stores.postgres._async._entries import EntriesMixin
from memorybank.stores.postgres._async._events import EventsMixin
from memorybank.stores.postgres._async._records import RecordsMixin
from memorybank.stores.postgres._async._search import SearchMixin
from memorybank.stores.postgres._async._threads import ThreadsMixin
from memorybank.stores.postgres._async._vectors import VectorsMixin
from memorybank.stores.postgres.rows import tsquery as tsquery
from memorybank.stores.postgres.schema import MIGRATIONS
from memorybank.stores.postgres.schema import TABLES as TABLES

__all__ = ["MIGRATIONS", "AsyncPostgresStore"]


class AsyncPostgresStore(
    ThreadsMixin, AppendsMixin, EntriesMixin, EventsMixin, RecordsMixin, SearchMixin, VectorsMixin
):
    """Threads, entries and the rest in PostgreSQL tables. See the module docstring."""
