"""The PostgreSQL store's schema: the migrations that build it, as SQL text
(``{p}`` is the table prefix), and its table names.

``MIGRATIONS[i]`` takes the schema from version ``i`` to ``i + 1``; the store runs
them (``memorybank.stores.postgres._async._base``) in one transaction under an
advisory lock. The layout is described in ``memorybank.stores.postgres._async``.
"""

from __future__ import annotations

from memorybank.stores.sql.common import TABLES as TABLES
from memorybank.stores.sql.events import events_user_index

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
        # page (a heap-only tuple); ``thread_list`` sorts the tenant's (or the user's)
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
    (
        # The exact entry count of each branch, kept by every statement that adds or
        # removes a branch's entries (appends, deletes, truncation, clearing, forks,
        # compaction): ``entry_count`` reads one row instead of counting the branch
        # (10k entries on a never-vacuumed table, no index-only scan: 4-12 ms). Not
        # indexed, so appends still update the branch row heap-only.
        "ALTER TABLE {p}branches ADD COLUMN entry_count bigint NOT NULL DEFAULT 0",
        "UPDATE {p}branches b SET entry_count = c.n FROM (SELECT tenant_id, thread_id,"
        " branch, count(*) AS n FROM {p}entries GROUP BY tenant_id, thread_id, branch) c"
        " WHERE b.tenant_id = c.tenant_id AND b.thread_id = c.thread_id AND b.name = c.branch",
    ),
    (
        # User-scoped keyword search: the words and the entry's thread in one GIN index
        # (both opclasses built in: tsvector, text[]), so a search for one user's threads
        # intersects the words' postings with those threads' inside the index and reads
        # only the matches in scope from the heap. Through ``entries_search`` the plan
        # was either every match of every user fetched from the heap, then joined to the
        # threads (1M other entries: 19k rows, 40-130 ms), or every entry of the user's
        # threads read and filtered (10k rows, 12 ms); with this index: 182 rows, 1.5 ms.
        # It replaces ``entries_search`` (a search on the words alone uses its first
        # column), so an append still updates one GIN index, and the planner cannot
        # take the words-only index and filter the threads afterwards. Built once here
        # (1M entries: 5 s); no table is rewritten.
        "CREATE INDEX IF NOT EXISTS {p}entries_scoped ON {p}entries"
        " USING gin (search, (ARRAY[thread_id]))",
        "DROP INDEX IF EXISTS {p}entries_search",
    ),
    (
        # A short GIN pending list (64 kB, 8 pages; the default is 4 MB). New rows of a
        # GIN index go to an unsorted pending list that every search reads whole, until
        # a VACUUM (autovacuum off or lagging: never) or an insert finding it over the
        # limit merges it. At 4 MB a rare-word search took 10-25 ms, not 0.5, and the
        # planner, which counts the pending pages, read all of a tenant's entries by a
        # btree instead of this index (2k-30k entries never analyzed; at 256 kB still
        # up to 11k, at 64 kB up to about 5k: a few ms). Measured (bench_postgres
        # --only clients, 32 clients, load ~1): appends 4.7k/5.1k per s at 64 kB
        # against 5.7k/4.3k at 4 MB; with ``fastupdate`` off (no list: every insert
        # into the index) 3.6k/3.6k. A storage parameter: no rebuild; the list already
        # there is merged here, once, not by the first append after the upgrade.
        "ALTER INDEX {p}entries_scoped SET (gin_pending_list_limit = 64)",
        "ALTER INDEX {p}records_search SET (gin_pending_list_limit = 64)",
        "SELECT gin_clean_pending_list('{p}entries_scoped'::regclass),"
        " gin_clean_pending_list('{p}records_search'::regclass)",
    ),
    (
        # The change feed's index of a user's events (a user-scoped read reads that
        # user's, not the tenant's), for a schema whose feed was on before it existed;
        # a feed switched on later makes it with its tables (memorybank.stores.sql.events).
        "DO $$ BEGIN IF to_regclass('{p}events') IS NOT NULL THEN"
        f" {events_user_index('{p}')}; END IF; END $$",
    ),
]
