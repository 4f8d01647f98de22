"""PostgreSQL store schema: versioned, every btree index led by ``tenant_id``, the
full-text GIN indexes and the backward index scan of "last n" in use. (The upgrades
from each earlier version are in ``test_postgres_migrations.py``.)

Uses the server at ``$MEMORYBANK_POSTGRES_URL`` (see ``_postgres.py``): skipped
locally when it is down, failed in CI. Every test works under its own table
prefix, dropped after.
"""

from __future__ import annotations

import re

import psycopg
import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.postgres._async import MIGRATIONS, AsyncPostgresStore
from tests.stores import _postgres
from tests.stores._postgres import admin, gin_options
from tests.stores.test_contract_postgres import URL

pytestmark = pytest.mark.server

prefix = _postgres.prefix  # the fixture: a fresh table prefix, dropped afterwards


async def test_schema_is_versioned_and_every_key_leads_with_tenant(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    await store.connect()
    await store.connect()  # idempotent
    assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    indexes = admin(
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE %s",
        (prefix.replace("_", r"\_") + "%",),
    )
    data = [i for i in indexes if i[0] != f"{prefix}schema_version"]
    assert len(data) >= 18
    for table, name, definition in data:
        if " USING gin " in definition:  # full text: the tsvector (and the entry's thread)
            ends = ("USING gin (search)", "USING gin (search, (ARRAY[thread_id]))")
            short = tuple(f"{e} WITH (gin_pending_list_limit='64')" for e in ends)
            assert definition.endswith(short), (table, name, definition)
            continue
        first = re.search(r"USING btree \((\w+)", definition)
        assert first is not None and first.group(1) == "tenant_id", (table, name, definition)
    assert gin_options(prefix) == {
        f"{prefix}entries_scoped": ["gin_pending_list_limit=64"],
        f"{prefix}records_search": ["gin_pending_list_limit=64"],
    }
    await store.close()
    # a second store on the same prefix finds the schema in place
    again = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    await again.connect()
    await again.close()


async def test_text_search_reads_the_gin_index(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await memory.entries.add_many(
        tid, [{"role": "user", "content": f"note {i} about w{i}"} for i in range(2000)]
    )
    admin(f"ANALYZE {prefix}entries")
    with psycopg.connect(URL) as conn:
        # 2,000 rows: a sequential scan is as cheap; the question is whether the index serves
        # a search on the words alone (its first column; schema version 9)
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                f"EXPLAIN SELECT id FROM {prefix}entries"
                " WHERE search @@ to_tsquery('english', %s) AND tenant_id = 'default'",
                ("w17 | w42",),
            ).fetchall()
        )
    assert f"{prefix}entries_scoped" in plan, plan
    hits = await store.text_search("default", "what about w17?", kinds=["entry"], k=3)
    assert hits[0].id == (await memory.entries.list(tid))[17].id
    await store.close()


async def test_last_n_is_a_backward_index_scan(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await memory.entries.add_many(tid, [{"role": "user", "content": f"m{i}"} for i in range(3000)])
    admin(f"ANALYZE {prefix}entries")
    query = store._sql.entry_list[(False, False)]
    params = {"tenant": "default", "thread": tid, "branch": None, "limit": 20, "offset": 0}
    with psycopg.connect(URL) as conn:
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query, params).fetchall())
    assert f"Index Scan Backward using {prefix}entries_pkey" in plan, plan
    assert "Sort" not in plan, plan
    await store.close()
