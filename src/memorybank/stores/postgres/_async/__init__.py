"""AsyncPostgresStore: PostgreSQL through psycopg 3 (``pip install 'memorybank[postgres]'``).

The store is composed of one mixin per concern, each in a module of its own,
over ``_base.PostgresBase``, the shared state and plumbing (pool or connection,
first connection, migrations, autocommit statements, transactions, errors):

- ``_threads``: threads and branches.
- ``_appends``: appends, one statement each or combined (the append path).
- ``_entries``: entry reads ("last N"), counts, deletes, compaction and updates.
- ``_runs``: working memory, snapshots, summaries and ``forget_user``.
- ``_records``: records (facts, documents, core facts), guarded writes.
- ``_search``: keyword search (``tsvector``).
- ``_vectors``: vectors (pgvector, HNSW, or the in-process cache's reads).
- ``memorybank.stores.postgres.schema``: the migrations and table names;
  ``memorybank.stores.postgres.statements``: the SQL statements;
  ``memorybank.stores.postgres.rows``: sync-free helpers (limits, error
  translation, URL options, row mapping).

Layout (every name starts with the configurable ``prefix``, default ``memorybank_``;
every primary key and index leads with ``tenant_id``, and no statement joins
two tenants, so the tables can be distributed or partitioned by tenant)::

    threads(tenant_id, id, user_id, agent_id, title, metadata json, status,
            created_at, updated_at, current_branch)         PK (tenant_id, id)
        index (tenant_id, user_id); fillfactor 70, no index on updated_at (HOT appends)
    branches(tenant_id, thread_id, name, created_at, from_branch, from_entry,
             last_position, entry_count)                    PK (tenant_id, thread_id, name)
        fillfactor 70 (the counters' update is heap-only)
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

Batch record reads are one statement each: ``record_get_many`` (a primary-key
descent per id, ``unnest(array)``), ``record_list_keys`` (a probe of the key index per
key, the scope filtered on the rows found, so no statistics can pick another index;
``record_list_keys_by_kind`` probes per (kind, key); ``record_list_links`` also checks
the far end's ``data ->> field = ANY(array)``; ``record_list_keys_linked`` adds a
primary-key descent per far end named) and ``record_page`` (a
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
A search with a scope and no thread (one user, one agent, or shared-only on
either axis: ``visible_to`` checks at least one axis) asks
``ARRAY[thread_id] && ARRAY(<the threads in scope>)`` instead of joining the
threads, which the second GIN index ``entries_scoped (search, (ARRAY[thread_id]))``
(schema version 9, both opclasses built in) answers inside the index: only the
matches in scope are read from the heap, not every match of the tenant.
Both GIN indexes keep a 64 kB pending list (schema version 10; the default 4 MB
list is read whole by every search until a VACUUM merges it: with autovacuum off
or lagging, 10-25 ms per rare-word search instead of 0.5, and plans that read a
tenant's entries by a btree instead of the GIN index).

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
((embedding::vector(n)) vector_cosine_ops) WITH (m = 16, ef_construction = 128)
WHERE model_id = ... AND dim = n``
(named ``<prefix>vhnsw_<n>_<hash of the model id>``). Searches for that
model then order by the indexed expression and run with
``hnsw.iterative_scan = strict_order`` (and ``ef_search`` >= max(100, 2k)) set
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

Write combining (``memorybank.runtime.combine``; a store on a pool, not on a single
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
counter never goes back, so after ``entry_delete``/``entry_truncate_after``/
``entry_clear`` new entries continue after the highest position ever assigned
(a position is never reused). ``entry_count`` is the branch's exact number of
entries, changed in the same statement as the entries by every verb that adds
or removes some (appends, deletes, truncation, clearing, forks, compaction), so
``entry_count`` reads one row instead of counting the branch.

"Last N" is one statement: the thread row ``UNION ALL`` a backward index scan of
``(tenant_id, thread_id, branch, position)`` with ``LIMIT``, so its cost does
not grow with the thread's length or the branch depth (branches are copies).

Isolation: single statements run in autocommit (READ COMMITTED: one snapshot
per statement). ``thread_delete``, ``branch_delete`` and ``forget_user`` run in
one short transaction whose first statement locks the thread row(s), so a
concurrent append lands fully before (and is deleted) or fully after (and
finds no thread); ``branch_create`` takes a key-share lock, which keeps the
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

Compaction: ``entry_compact`` runs in one transaction: it locks the thread row
(``FOR NO KEY UPDATE``, which appends also take) in a first statement, then
compares the ids up to ``through_position`` and deletes them in a second one
(a later snapshot, so it sees whatever the previous lock holder committed),
then inserts the summary and sets ``updated_at``. ``entry_update`` is one
statement for the batch. Records are upserted in one ``INSERT ... ON
CONFLICT DO UPDATE``. ``thread_delete`` and ``forget_user`` also delete the
entry vectors of the threads, ``forget_user`` the user's records and their
vectors; ``record_delete`` the records' vectors; the verbs deleting entries
(``entry_delete``, ``entry_truncate_after``, ``entry_clear``, ``branch_delete``,
``entry_compact``) the vectors of those no other branch holds a copy of, in the
same statement.

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
from memorybank.stores.postgres._async._records import RecordsMixin
from memorybank.stores.postgres._async._runs import RunsMixin
from memorybank.stores.postgres._async._search import SearchMixin
from memorybank.stores.postgres._async._threads import ThreadsMixin
from memorybank.stores.postgres._async._vectors import VectorsMixin
from memorybank.stores.postgres.rows import tsquery as tsquery
from memorybank.stores.postgres.schema import MIGRATIONS
from memorybank.stores.postgres.schema import TABLES as TABLES

__all__ = ["MIGRATIONS", "AsyncPostgresStore"]


class AsyncPostgresStore(
    ThreadsMixin, AppendsMixin, EntriesMixin, RunsMixin, RecordsMixin, SearchMixin, VectorsMixin
):
    """Threads, entries and the rest in PostgreSQL tables. See the module docstring."""
