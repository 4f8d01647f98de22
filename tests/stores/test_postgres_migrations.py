"""PostgreSQL store migrations: a schema of each earlier version, with rows in it,
upgraded in place on first use, the rows kept and still read and written as before.

Uses the server at ``$MEMORYBANK_POSTGRES_URL`` (see ``_postgres.py``): skipped
locally when it is down, failed in CI. Every test works under its own table
prefix, dropped after.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.stores.contract._async.store import Visibility
from memorybank.stores.postgres._async import MIGRATIONS, AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from tests.stores import _postgres
from tests.stores._postgres import admin, gin_options
from tests.stores.test_contract_postgres import URL

pytestmark = pytest.mark.server


def _schema_at(conn: psycopg.Connection[Any], prefix: str, version: int) -> None:
    """The schema as the first ``version`` migrations left it (for upgrade tests)."""
    conn.execute(
        f"CREATE TABLE {prefix}schema_version"
        " (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
    )
    for step in MIGRATIONS[:version]:
        for statement in step:
            conn.execute(statement.format(p=prefix))
    conn.execute(f"INSERT INTO {prefix}schema_version VALUES (1, %s)", (version,))


def _old_thread(conn: psycopg.Connection[Any], prefix: str) -> None:
    """Thread ``old`` with its ``main`` branch at position 1, as an early schema stored them."""
    conn.execute(
        f"INSERT INTO {prefix}threads (tenant_id, id, status, created_at, updated_at,"
        " current_branch) VALUES ('default', 'old', 'active', now(), now(), 'main')"
    )
    conn.execute(
        f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at, last_position)"
        " VALUES ('default', 'old', 'main', now(), 1)"
    )


prefix = _postgres.prefix  # the fixture: a fresh table prefix, dropped afterwards


async def test_migration_2_upgrades_a_version_1_schema_in_place(prefix: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 1)
        _old_thread(conn, prefix)
        conn.execute(
            f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, token_count, created_at)"
            " VALUES ('default', 'old', 'main', 1, 'e1', 'user', 'Elephants never forget', 3,"
            " now())"
        )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    hits = await store.text_search("default", "elephant", kinds=["entry"], k=5)
    assert [(h.id, h.thread_id, h.branch) for h in hits] == [("e1", "old", "main")]
    assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    await store.close()


def test_migration_3_gives_existing_records_revision_0(prefix: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 2)
        conn.execute(
            f"INSERT INTO {prefix}records (tenant_id, kind, id, content, created_at, updated_at)"
            " VALUES ('default', 'fact', 'f1', 'old', now(), now())"
        )
    store = PostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        record = store.record_get("default", "fact", "f1")
        assert record is not None and record.revision == 0
        memory = Memory(store)
        assert memory.facts.supersede("f1", "new").version == 2
        assert [f.content for f in memory.facts.history("f1")] == ["old", "new"]
        assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    finally:
        store.close()


async def test_keyed_rows_from_before_fingerprints_still_replay(prefix: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 2)
        _old_thread(conn, prefix)
        conn.execute(
            f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, token_count, created_at, idempotency_key)"
            " VALUES ('default', 'old', 'main', 1, 'e1', 'user', 'old', 3, now(), 'k')"
        )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    again = await memory.entries.add("old", {"role": "user", "content": "new"}, idempotency_key="k")
    assert again.id == "e1"
    assert await memory.entries.count("old") == 1
    assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    await store.close()


async def test_migration_5_turns_jsonb_into_json_keeping_data(prefix: str) -> None:
    """jsonb normalised numbers (1e16 -> integer, -0.0 -> 0); json keeps the text as written."""
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 2)
        conn.execute(
            f"INSERT INTO {prefix}threads (tenant_id, id, metadata, status, created_at,"
            " updated_at, current_branch) VALUES"
            """ ('default', 'old', '{"a": [1, "x"]}', 'active', now(), now(), 'main')"""
        )
        conn.execute(
            f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at, last_position)"
            " VALUES ('default', 'old', 'main', now(), 1)"
        )
        conn.execute(
            f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, metadata, state, token_count, created_at) VALUES ('default', 'old',"
            """ 'main', 1, 'e1', 'user', 'hi', '{"m": 1}', '{"s": true}', 3, now())"""
        )
        conn.execute(
            f"INSERT INTO {prefix}records (tenant_id, kind, id, content, data, created_at,"
            """ updated_at) VALUES ('default', 'document', 'd1', 'doc', '{"metadata": {"k": 2}}',"""
            " now(), now())"
        )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    thread = await memory.threads.get("old")
    assert thread is not None and thread.metadata == {"a": [1, "x"]}
    (entry,) = await memory.entries.list("old")
    assert (entry.metadata, entry.state) == ({"m": 1}, {"s": True})
    document = await memory.documents.get("d1")
    assert document is not None and document.metadata == {"k": 2}
    assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    types = admin(
        "SELECT table_name, column_name, data_type, column_default FROM information_schema.columns"
        " WHERE table_name LIKE %s AND column_name IN ('metadata', 'state', 'data')",
        (prefix.replace("_", r"\_") + "%",),
    )
    assert {(t, c, d) for t, c, d, _ in types} == {
        (f"{prefix}threads", "metadata", "json"),
        (f"{prefix}entries", "metadata", "json"),
        (f"{prefix}entries", "state", "json"),
        (f"{prefix}records", "data", "json"),
    }
    assert {default for *_, default in types} == {"'{}'::json"}
    # new values keep their numbers exactly, and the empty-object shortcut still reads
    numbers = {"big": 1e16, "neg_zero": -0.0, "int": 2**63 - 1, "small": 5e-324}
    await memory.threads.update("old", metadata=numbers)
    added = await memory.entries.add("old", {"role": "user", "content": "x", "state": numbers})
    got = await memory.threads.get("old")
    assert got is not None and repr(got.metadata) == repr(numbers)
    again = await memory.entries.get("old", added.id)
    assert again is not None and repr(again.state) == repr(numbers) and again.metadata == {}
    await store.close()


async def test_migration_6_makes_thread_updates_hot_keeping_data(prefix: str) -> None:
    """A version-5 schema (updated_at indexed) upgrades in place: rows kept, positions go on,
    no thread index holds ``updated_at``, and appends update the thread row HOT."""
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 5)
        conn.execute(
            f"INSERT INTO {prefix}threads (tenant_id, id, user_id, status, created_at,"
            " updated_at, current_branch) VALUES ('default', 'old', 'u1', 'active',"
            " now() - interval '1 day', now() - interval '1 day', 'main'),"
            " ('default', 'other', 'u1', 'active', now(), now(), 'main')"
        )
        conn.execute(
            f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at, last_position)"
            " VALUES ('default', 'old', 'main', now(), 7), ('default', 'other', 'main', now(), 0)"
        )
        conn.execute(
            f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, token_count, created_at)"
            " VALUES ('default', 'old', 'main', 7, 'e7', 'user', 'kept', 3, now())"
        )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    assert [t.id for t in await memory.threads.list(user_id="u1")] == ["other", "old"]
    added = await memory.remember("old", "user", "after the upgrade")
    assert added.position == 8  # the counter went on from the stored one
    assert [(e.id, e.position) for e in await memory.entries.list("old")] == [
        ("e7", 7),
        (added.id, 8),
    ]
    # the appended thread is now the most recently updated
    assert [t.id for t in await memory.threads.list(user_id="u1")] == ["old", "other"]
    assert [t.id for t in await memory.threads.list()] == ["old", "other"]
    assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    indexed = admin(
        "SELECT a.attname FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid"
        " AND a.attnum = ANY(x.indkey) WHERE x.indrelid = to_regclass(%s)",
        (f"{prefix}threads",),
    )
    assert {name for (name,) in indexed} == {"tenant_id", "id", "user_id"}
    options = admin(
        "SELECT relname, reloptions FROM pg_class WHERE relname IN (%s, %s) ORDER BY relname",
        (f"{prefix}branches", f"{prefix}threads"),
    )
    assert [o for _, o in options] == [["fillfactor=70"], ["fillfactor=70"]]
    # appends now update the thread and branch rows heap-only (no index tuples)
    before = admin(
        "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
        " WHERE relname IN (%s, %s) ORDER BY relname",
        (f"{prefix}branches", f"{prefix}threads"),
    )
    for i in range(5):
        await memory.remember("other", "user", f"m{i}")
    await asyncio.sleep(0.6)  # statistics reach the views at most every 500 ms

    def grown() -> list[tuple[int, int]]:
        after = admin(
            "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " WHERE relname IN (%s, %s) ORDER BY relname",
            (f"{prefix}branches", f"{prefix}threads"),
        )
        return [(a[1] - b[1], a[2] - b[2]) for a, b in zip(after, before, strict=True)]

    for _ in range(20):  # wait for the counters (flushed asynchronously)
        if all(upd >= 5 for upd, _ in grown()):
            break
        await asyncio.sleep(0.5)
    for updates, hot in grown():
        assert updates >= 5 and hot == updates
    await store.close()


async def test_migration_8_counts_every_existing_branch(prefix: str) -> None:
    """A version-7 schema upgrades in place: each branch's ``entry_count`` is its stored
    entries (gaps left by deletes included), and the counts go on from there."""
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 7)
        conn.execute(
            f"INSERT INTO {prefix}threads (tenant_id, id, user_id, status, created_at,"
            " updated_at, current_branch) VALUES ('default', 'old', 'u1', 'active', now(),"
            " now(), 'main'), ('default', 'empty', 'u1', 'active', now(), now(), 'main'),"
            " ('other', 'old', NULL, 'active', now(), now(), 'main')"
        )
        conn.execute(
            f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at, last_position)"
            " VALUES ('default', 'old', 'main', now(), 9), ('default', 'old', 'alt', now(), 2),"
            " ('default', 'empty', 'main', now(), 0), ('other', 'old', 'main', now(), 1)"
        )
        rows = [("default", "old", "main", p) for p in (1, 2, 5, 9)]  # 3, 4, 6-8 deleted
        rows += [("default", "old", "alt", p) for p in (1, 2)] + [("other", "old", "main", 1)]
        for tenant, thread, branch, position in rows:
            conn.execute(
                f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id,"
                " role, content, token_count, created_at)"
                " VALUES (%s, %s, %s, %s, %s, 'user', 'kept', 3, now())",
                (tenant, thread, branch, position, f"e{position}"),
            )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        assert await store.entry_count("default", "old") == 4
        assert await store.entry_count("default", "old", branch="alt") == 2
        assert await store.entry_count("default", "empty") == 0
        assert await store.entry_count("other", "old") == 1
        assert await store.entry_count_many("default", ["old", "empty"]) == {
            "old": 4,
            "empty": 0,
        }
        assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
        memory = AsyncMemory(store)
        added = await memory.remember("old", "user", "after the upgrade")
        assert added.position == 10
        assert await store.entry_count("default", "old") == 5
        assert await store.entry_delete("default", "old", ["e1", added.id]) == 2
        assert await store.entry_count("default", "old") == 3
        assert len(await memory.entries.list("old")) == 3
    finally:
        await store.close()


async def test_migration_9_indexes_words_with_threads_keeping_data(prefix: str) -> None:
    """A version-8 schema (words-only GIN index) upgrades in place: the entries are kept,
    ``entries_scoped`` (words and thread) replaces ``entries_search``, and a search for
    one user finds that user's stored entries, not another user's."""
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 8)
        for tid, user in (("mine", "u1"), ("theirs", "u2"), ("shared", None)):
            conn.execute(
                f"INSERT INTO {prefix}threads (tenant_id, id, user_id, status, created_at,"
                " updated_at, current_branch) VALUES ('default', %s, %s, 'active', now(), now(),"
                " 'main')",
                (tid, user),
            )
            conn.execute(
                f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at,"
                " last_position, entry_count) VALUES ('default', %s, 'main', now(), 1, 1)",
                (tid,),
            )
            conn.execute(
                f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
                " content, token_count, created_at) VALUES ('default', %s, 'main', 1, %s,"
                " 'user', 'the invoice is paid', 3, now())",
                (tid, f"e-{tid}"),
            )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        scope = Visibility("agent", "u1")
        hits = await store.text_search(
            "default", "invoice", kinds=["entry"], k=10, visible_to=scope
        )
        assert sorted(h.id for h in hits) == ["e-mine", "e-shared"]
        assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
        indexes = {
            name
            for (name,) in admin(
                "SELECT indexname FROM pg_indexes WHERE tablename = %s", (f"{prefix}entries",)
            )
        }
        assert f"{prefix}entries_scoped" in indexes
        assert f"{prefix}entries_search" not in indexes
        memory = AsyncMemory(store)
        added = await memory.remember("mine", "user", "another invoice")
        hits = await store.text_search(
            "default", "invoice", kinds=["entry"], k=10, visible_to=scope
        )
        assert sorted(h.id for h in hits) == sorted(["e-mine", "e-shared", added.id])
    finally:
        await store.close()


async def test_migration_10_shortens_the_gin_pending_lists_keeping_data(prefix: str) -> None:
    """A version-9 schema upgrades in place: both GIN indexes get a 64 kB pending list
    (every search reads the list whole; autovacuum off or lagging never merges it),
    the list the rows written before left is merged once, and searches find the old
    rows and the new ones."""
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 9)
        conn.execute(
            f"INSERT INTO {prefix}threads (tenant_id, id, user_id, status, created_at,"
            " updated_at, current_branch) VALUES ('default', 'mine', 'u1', 'active', now(),"
            " now(), 'main')"
        )
        conn.execute(
            f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at,"
            " last_position, entry_count) VALUES ('default', 'mine', 'main', now(), 300, 300)"
        )
        conn.execute(
            f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, token_count, created_at) SELECT 'default', 'mine', 'main', i,"
            " 'e' || i, 'user', 'note ' || i || CASE WHEN i % 100 = 0 THEN ' invoice' ELSE ''"
            " END, 3, now() FROM generate_series(1, 300) i"
        )
        conn.execute(
            f"INSERT INTO {prefix}records (tenant_id, kind, id, content, created_at,"
            " updated_at) VALUES ('default', 'fact', 'f1', 'the invoice is paid', now(), now())"
        )
    assert gin_options(prefix) == {
        f"{prefix}entries_scoped": None,
        f"{prefix}records_search": None,
    }
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        scope = Visibility("agent", "u1")
        hits = await store.text_search(
            "default", "invoice", kinds=["entry", "fact"], k=10, visible_to=scope
        )
        assert sorted(h.id for h in hits) == ["e100", "e200", "e300", "f1"]
        assert admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
        assert gin_options(prefix) == {
            f"{prefix}entries_scoped": ["gin_pending_list_limit=64"],
            f"{prefix}records_search": ["gin_pending_list_limit=64"],
        }
        # the pending list the old rows were in was merged by the migration
        assert admin(
            f"SELECT gin_clean_pending_list('{prefix}entries_scoped'::regclass),"
            f" gin_clean_pending_list('{prefix}records_search'::regclass)"
        ) == [(0, 0)]
        added = await AsyncMemory(store).remember("mine", "user", "another invoice")
        hits = await store.text_search(
            "default", "invoice", kinds=["entry"], k=10, visible_to=scope
        )
        assert sorted(h.id for h in hits) == sorted(["e100", "e200", "e300", added.id])
    finally:
        await store.close()
