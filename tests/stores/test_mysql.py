"""MySQL/MariaDB store specifics: processes, outages, pools, charset, retries.

Same server as ``test_contract_mysql.py`` (``$MEMORYBANK_MYSQL_URL``); every test
uses the session's fresh table prefix, dropped at the end.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import aiomysql
import pytest

from memorybank import AsyncMemory, Memory
from memorybank.errors import ConfigurationError, Conflict, StoreUnavailable, ThreadForbidden
from memorybank.stores.contract.types import UNSET, Record, RecordGuard
from memorybank.stores.mysql._async import AsyncMySQLStore
from memorybank.stores.mysql._sync import MySQLStore
from memorybank.stores.mysql.compat import MySQLPool
from memorybank.stores.mysql.rows import LockContention, idem_hash
from memorybank.stores.mysql.schema import MIGRATIONS
from tests.stores.test_contract_mysql import URL, connect, drop_tables, mysql_prefix

pytestmark = pytest.mark.server

__all__ = ["mysql_prefix"]  # the session fixture, re-exported for pytest

DOWN_URL = "mysql://root@127.0.0.1:1/test"  # nothing listens on port 1


def _writer(url: str, prefix: str, thread_id: str, writer: int, count: int) -> None:
    """One OS process appending ``count`` messages, one call at a time."""
    store = MySQLStore.from_url(url, prefix=prefix, pool_size=2)
    try:
        memory = Memory(store)
        for i in range(count):
            memory.remember(thread_id, "user", f"w{writer}-{i}")
    finally:
        store.close()


def test_two_processes_append_to_one_thread(mysql_prefix: str) -> None:
    # A fresh prefix: both processes also race to create the schema.
    prefix = f"{mysql_prefix}mp_"
    tid = f"t-{uuid.uuid4().hex[:8]}"
    store = MySQLStore.from_url(URL, prefix=prefix)
    try:
        with Memory(store) as memory:
            memory.threads.create(thread_id=tid)
            ctx = multiprocessing.get_context("spawn")
            procs = [ctx.Process(target=_writer, args=(URL, prefix, tid, w, 60)) for w in range(3)]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join(120)
                assert proc.exitcode == 0
            entries = memory.entries.list(tid)
            assert len(entries) == 180
            assert len({e.position for e in entries}) == 180
            assert [e.position for e in entries] == list(range(1, 181))  # gap-free
            for w in range(3):
                mine = [e.content for e in entries if (e.content or "").startswith(f"w{w}-")]
                assert mine == [f"w{w}-{i}" for i in range(60)]
    finally:
        store.close()
        drop_tables(prefix)


async def test_async_server_down_raises_store_unavailable_within_timeout() -> None:
    store = AsyncMySQLStore.from_url(DOWN_URL, timeout=2)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        await store.thread_get("default", "x")
    assert time.monotonic() - started < 3
    assert info.value.__cause__ is not None
    await store.close()


def test_sync_server_down_raises_store_unavailable_within_timeout() -> None:
    store = MySQLStore.from_url(DOWN_URL, timeout=2)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        store.thread_get("default", "x")
    assert time.monotonic() - started < 3
    store.close()


def _create_schema(prefix: str) -> None:
    """Create ``prefix``'s tables (a fresh schema takes seconds: more than a 1 s timeout)."""
    store = MySQLStore.from_url(URL, prefix=prefix)
    store.thread_get("default", "warm-up")
    store.close()


async def test_async_pool_exhaustion_raises_store_unavailable(mysql_prefix: str) -> None:
    _create_schema(mysql_prefix)
    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=1, timeout=1)
    await store.thread_get("default", "warm-up")
    raw = store._pool._pool
    assert raw is not None
    async with raw.acquire():  # hold the only connection of aiomysql's pool
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="pool exhausted"):
            await store.thread_get("default", "x")
        assert time.monotonic() - started < 2
    assert await store.thread_get("default", "x") is None  # usable again
    await store.close()


async def test_async_gate_exhaustion_raises_store_unavailable(mysql_prefix: str) -> None:
    """All of the store's own connections held: the next caller waits at the gate
    (queued, with a timer) and gets ``StoreUnavailable`` at the timeout; the gate
    is free again (no timer on the hot path) once the holder is done."""
    _create_schema(mysql_prefix)
    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=1, timeout=1)
    await store.thread_get("default", "warm-up")
    gate = store._pool._gate
    assert gate is not None
    await gate.acquire()  # its only slot (a held connection's block has a timer too)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="pool exhausted"):
            await store.thread_get("default", "x")
        assert time.monotonic() - started < 2
    finally:
        gate.release()
    assert await store.thread_get("default", "x") is None  # usable again
    await store.close()


def test_sync_pool_exhaustion_raises_store_unavailable(mysql_prefix: str) -> None:
    _create_schema(mysql_prefix)
    store = MySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=1, timeout=1)
    store.thread_get("default", "warm-up")
    with store._pool.acquire():
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="pool exhausted"):
            store.thread_get("default", "x")
        assert time.monotonic() - started < 2
    assert store.thread_get("default", "x") is None
    store.close()


def _kill_all(ids: list[int]) -> None:
    admin = connect()
    try:
        with admin.cursor() as cur:
            for conn_id in ids:
                cur.execute(f"KILL CONNECTION {int(conn_id)}")
    finally:
        admin.close()


async def test_async_pool_recovers_after_server_kills_connections(mysql_prefix: str) -> None:
    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=2, timeout=5)
    async with AsyncMemory(store) as memory:
        tid = (await memory.threads.create()).id
        await memory.remember(tid, "user", "before")
        async with store._pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute("SELECT CONNECTION_ID()")
            ids = [row[0] for row in await cur.fetchall()]
        _kill_all(ids)
        await asyncio.sleep(0.2)
        await memory.remember(tid, "user", "after")
        assert [m["content"] for m in await memory.history(tid)] == ["before", "after"]
    await store.close()


def test_sync_pool_recovers_after_server_kills_connections(mysql_prefix: str) -> None:
    store = MySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=2, timeout=5)
    with Memory(store) as memory:
        tid = memory.threads.create().id
        memory.remember(tid, "user", "before")
        with store._pool.acquire() as conn, conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            ids = [row[0] for row in cur.fetchall()]
        _kill_all(ids)
        time.sleep(0.2)
        memory.remember(tid, "user", "after")
        assert [m["content"] for m in memory.history(tid)] == ["before", "after"]
    store.close()


def test_emoji_cjk_and_case_sensitive_ids_round_trip(mysql_prefix: str) -> None:
    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    with Memory(store) as memory:
        base = uuid.uuid4().hex[:8]
        upper = memory.threads.create(thread_id=f"Thread-{base}", title="🚀 标题")
        lower = memory.threads.create(thread_id=f"thread-{base}", metadata={"k": "ü😀"})
        assert upper.id != lower.id
        text = "emoji 😀🎉👨‍👩‍👧 CJK 漢字かなカナ한국어 and Ünïcödé"
        memory.remember(upper.id, "user", text, metadata={"tag": "😀"}, state={"名": "值"})
        assert [m["content"] for m in memory.history(upper.id)] == [text]
        assert memory.history(lower.id) == []
        got = memory.threads.get(upper.id)
        assert got is not None and got.title == "🚀 标题"
        assert memory.threads.get(lower.id).metadata == {"k": "ü😀"}  # type: ignore[union-attr]
        entry = memory.entries.list(upper.id)[0]
        assert (entry.metadata, entry.state) == ({"tag": "😀"}, {"名": "值"})
        memory.snapshots.save("run-😀", {"v": "漢字"})
        assert memory.snapshots.load("run-😀") == {"v": "漢字"}
    store.close()


async def test_caller_owned_aiomysql_pool_is_left_open(mysql_prefix: str) -> None:
    options = {"host": "127.0.0.1", "port": 3306, "user": "root", "db": "test"}
    pool = await aiomysql.create_pool(minsize=0, maxsize=2, **options)  # autocommit off, no charset
    try:
        store = AsyncMySQLStore(pool, prefix=mysql_prefix)
        async with AsyncMemory(store) as memory:
            tid = (await memory.threads.create()).id
            await memory.remember(tid, "user", "在 pool 😀")
            assert [m["content"] for m in await memory.history(tid)] == ["在 pool 😀"]
        async with pool.acquire() as conn, conn.cursor() as cur:  # still open
            await cur.execute("SELECT 1")
            assert await cur.fetchall() == ((1,),)
    finally:
        pool.close()
        await pool.wait_closed()


def test_caller_owned_sync_pool_is_shared_and_left_open(mysql_prefix: str) -> None:
    pool = MySQLPool(size=2, connect={"host": "127.0.0.1", "user": "root", "database": "test"})
    try:
        one, two = MySQLStore(pool, prefix=mysql_prefix), MySQLStore(pool, prefix=mysql_prefix)
        tid = Memory(one).threads.create().id
        one.close()
        assert Memory(two).threads.get(tid) is not None
        two.close()
        with pool.acquire() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchall() == ((1,),)
    finally:
        pool.close()


def test_deadlock_is_retried_then_reported(
    mysql_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    memory = Memory(store)
    tid = memory.threads.create().id
    real = store._append_lone  # a lone append's transaction
    calls: list[int] = []

    def flaky(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise LockContention("deadlock (simulated)")
        return real(*args)

    monkeypatch.setattr(store, "_append_lone", flaky)
    memory.remember(tid, "user", "retried")
    assert len(calls) == 2 and memory.entries.count(tid) == 1

    def always(*args: Any) -> Any:
        raise LockContention("deadlock (simulated)")

    monkeypatch.setattr(store, "_append_lone", always)
    with pytest.raises(StoreUnavailable):
        memory.remember(tid, "user", "never")
    store.close()


def test_url_options_and_bad_prefix() -> None:
    with pytest.raises(ConfigurationError):
        MySQLStore.from_url("mysql://root@127.0.0.1:3306/")
    with pytest.raises(ConfigurationError):
        MySQLStore.from_url(URL, prefix="bad-prefix;")
    with pytest.raises(ConfigurationError):
        MySQLStore.from_url(URL, pool_size=0)


def test_schema_is_versioned(mysql_prefix: str) -> None:
    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    Memory(store).threads.get("anything")
    store.close()
    conn = connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT version FROM `{mysql_prefix}schema_version`")
            assert cur.fetchall() == ((len(MIGRATIONS),),)
            for table in ("entries", "records", "vectors"):
                cur.execute(
                    "SELECT ENGINE, TABLE_COLLATION FROM information_schema.TABLES"
                    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
                    (f"{mysql_prefix}{table}",),
                )
                assert cur.fetchall() == (("InnoDB", _exact_collation()),)
            # Searched text is case-insensitive (FULLTEXT under a binary collation is not).
            cur.execute(
                "SELECT TABLE_NAME, COLLATION_NAME FROM information_schema.COLUMNS"
                " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (%s, %s)"
                " AND COLUMN_NAME = 'content' ORDER BY TABLE_NAME",
                (f"{mysql_prefix}entries", f"{mysql_prefix}records"),
            )
            assert [row[1] for row in cur.fetchall()] == ["utf8mb4_unicode_ci"] * 2
    finally:
        conn.close()


def test_one_round_trip_append_checks_before_writing(mysql_prefix: str) -> None:
    from memorybank.errors import NotFound, ThreadForbidden
    from memorybank.stores.contract._sync.store import NewEntry

    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    memory = Memory(store)
    tid = memory.threads.create(user_id="alice").id
    before = memory.threads.get(tid)
    later = datetime(2030, 1, 1, tzinfo=UTC)
    new = NewEntry(
        id=f"e-{uuid.uuid4().hex[:8]}",
        role="user",
        content="x",
        name=None,
        tool_calls=(),
        tool_call_id=None,
        metadata={},
        state={},
        token_count=1,
        created_at=later,
    )
    with pytest.raises(ThreadForbidden):
        store.entry_append("default", tid, [new], updated_at=later, owner="bob")
    with pytest.raises(NotFound):
        store.entry_append("default", tid, [new], updated_at=later, branch="nope")
    with pytest.raises(NotFound):
        store.entry_append("default", "missing-thread", [new], updated_at=later)
    assert memory.entries.count(tid) == 0
    assert memory.threads.get(tid) == before  # updated_at untouched
    result = store.entry_append(
        "default",
        tid,
        [
            new,
            new.__class__(
                **{**{f: getattr(new, f) for f in new.__dataclass_fields__}, "id": "second"}
            ),
        ],
        updated_at=later,
        owner="alice",
    )
    assert [e.position for e in result.entries] == [1, 2]
    assert result.thread.updated_at == later
    assert [e.id for e in memory.entries.list(tid)] == [new.id, "second"]
    store.close()


def test_migration_2_upgrades_a_version_1_schema_in_place(mysql_prefix: str) -> None:
    prefix = f"{mysql_prefix}v1_"
    conn = connect()
    try:
        with conn.cursor() as cur:
            _schema_at(cur, prefix, 1)
            cur.execute(
                f"INSERT INTO `{prefix}threads` VALUES ('default', 'old', NULL, NULL, NULL,"
                " '{}', 'active', 1, 1, 'main')"
            )
            cur.execute(
                f"INSERT INTO `{prefix}branches` VALUES ('default', 'old', 'main', 1,"
                " NULL, NULL, 1)"
            )
            cur.execute(
                f"INSERT INTO `{prefix}entries` VALUES ('default', 'old', 'main', 1, 'e1', 'user',"
                " 'Kept from VERSION one 🦊', NULL, NULL, NULL, '{}', '{}', 3, 1, 'k', %s)",
                (idem_hash("k"),),
            )
        store = MySQLStore.from_url(URL, prefix=prefix)
        try:
            hits = store.text_search("default", "version", kinds=["entry"], k=5)
            assert [(h.id, h.thread_id, h.branch) for h in hits] == [("e1", "old", "main")]
            entry = store.entry_get("default", "old", "e1")
            assert entry is not None and entry.content == "Kept from VERSION one 🦊"
            # Appends after the upgrade continue the branch's positions.
            added = Memory(store).remember("old", "user", "second")
            assert added.position == 2
            # A key stored before fingerprints (migration 5) replays whatever the payload.
            again = Memory(store).entries.add(
                "old", {"role": "user", "content": "other"}, idempotency_key="k"
            )
            assert again.id == "e1"
        finally:
            store.close()
        _assert_latest_version(conn, prefix)
    finally:
        conn.close()
        drop_tables(prefix)


def _exact_collation() -> str:
    """The NO PAD binary collation of the test server (MariaDB's or MySQL 8's name)."""
    conn = connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return "utf8mb4_nopad_bin" if "MariaDB" in cur.fetchall()[0][0] else "utf8mb4_0900_bin"
    finally:
        conn.close()


def _string_columns(prefix: str) -> dict[str, set[str]]:
    """Collation -> the ``table.column`` names of ``prefix``'s tables under it."""
    conn = connect()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS"
                " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE %s"
                " AND COLLATION_NAME IS NOT NULL",
                (prefix.replace("_", "\\_") + "%",),
            )
            found: dict[str, set[str]] = {}
            for table, column, collation in cur.fetchall():
                found.setdefault(collation, set()).add(f"{table[len(prefix) :]}.{column}")
            return found
    finally:
        conn.close()


def _schema_at(cur: Any, prefix: str, version: int) -> None:
    """The tables of schema ``version`` under ``prefix``, from the migrations as they were."""
    cur.execute(
        f"CREATE TABLE `{prefix}schema_version` (id TINYINT NOT NULL PRIMARY KEY,"
        " version INT NOT NULL) ENGINE=InnoDB"
    )
    collation = _exact_collation() if version > 2 else ""  # {bin} appears from migration 3
    for step in MIGRATIONS[:version]:
        for statement in step:
            cur.execute(statement.replace("{p}", prefix).replace("{bin}", collation))
    cur.execute(f"INSERT INTO `{prefix}schema_version` VALUES (1, %s)", (version,))


def _assert_latest_version(conn: Any, prefix: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"SELECT version FROM `{prefix}schema_version`")
        assert cur.fetchall() == ((len(MIGRATIONS),),)


def test_migration_3_makes_a_version_2_schema_exact_in_place(mysql_prefix: str) -> None:
    """Tables of schema version 2 (PAD SPACE ids) keep their rows and stop padding.

    The version-2 tables and rows are written with the version-2 DDL and plain
    SQL (today's store would write today's columns).
    """
    prefix = f"{mysql_prefix}v2ids_"
    conn = connect()
    try:
        with conn.cursor() as cur:
            _schema_at(cur, prefix, 2)
            cur.execute(
                f"INSERT INTO `{prefix}threads` (tenant_id, id, user_id, title, metadata, status,"
                " created_at, updated_at, current_branch)"
                " VALUES ('acme', 't1', 'alice', 'kept', '{}', 'active', 1, 1, 'main')"
            )
            cur.execute(
                f"INSERT INTO `{prefix}branches` (tenant_id, thread_id, name, created_at,"
                " last_position) VALUES ('acme', 't1', 'main', 1, 0)"
            )
            cur.execute(f"INSERT INTO `{prefix}working` VALUES ('acme', 'run', 'k', '\"kept\"')")
            cur.execute(
                f"INSERT INTO `{prefix}snapshots` VALUES ('acme', 'run', NULL, '{{\"v\": 1}}', 1)"
            )
            # What the audit found: under PAD SPACE "acme " is "acme".
            cur.execute(
                f"SELECT COUNT(*) FROM `{prefix}threads` WHERE tenant_id = 'acme ' AND id = 't1 '"
            )
            assert cur.fetchall() == ((1,),)
        assert set(_string_columns(prefix)) == {"utf8mb4_bin", "utf8mb4_unicode_ci"}
        store = MySQLStore.from_url(URL, prefix=prefix)
        try:
            memory = Memory(store).tenant("acme")
            assert memory.threads.get("t1").title == "kept"  # type: ignore[union-attr]
            assert memory.working("run").get("k") == "kept"
            assert memory.snapshots.load("run") == {"v": 1}
            # Now exact: look-alikes are other ids, and can be created beside the old ones.
            spaced = Memory(store).tenant("acme ")
            assert spaced.threads.get("t1") is None
            assert memory.threads.get("t1 ") is None
            assert memory.working("run ").get("k") is None
            spaced.threads.create(thread_id="t1")
            memory.threads.create(thread_id="t1 ", user_id="alice ")
            with pytest.raises(ThreadForbidden):
                memory.remember("t1", "user", "intruder", user_id="alice ")
            assert memory.entries.count("t1") == 0
            assert memory.remember("t1", "user", "first", user_id="alice").position == 1
            hits = memory.search("first", mode="keyword", user_id="alice")
            assert [h.entry.content for h in hits if h.entry] == ["first"]
            columns = _string_columns(prefix)
            assert columns.pop("utf8mb4_unicode_ci") == {"entries.content", "records.content"}
            assert columns.pop("ascii_bin") == {"entries.fingerprint"}
            assert list(columns) == [_exact_collation()]
        finally:
            store.close()
        _assert_latest_version(conn, prefix)
    finally:
        conn.close()
        drop_tables(prefix)


def test_full_text_search_quirks(mysql_prefix: str) -> None:
    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    memory = Memory(store).tenant(f"ft-{uuid.uuid4().hex[:8]}")
    try:
        tid = memory.threads.create().id
        memory.remember(tid, "user", "Café au LAIT in Zürich")
        memory.remember(tid, "user", "an ox is in it")
        tenant = memory.tenant_id

        def found(query: str) -> int:
            return len(store.text_search(tenant, query, kinds=["entry"], k=5))

        assert found("cafe") == 1 and found("zurich") == 1 and found("lait") == 1  # ci, ai
        assert found("ox") == 0  # shorter than innodb_ft_min_token_size (3)
        assert found("in it") == 0  # stopwords only
        assert found('"café au" -lait* +(zürich)') == 1  # operators are dropped, words kept
        memory.entries.clear(tid)
        assert found("cafe") == 0
    finally:
        store.close()


async def test_concurrent_compactions_of_one_prefix_apply_once(mysql_prefix: str) -> None:
    from memorybank.stores.contract._async.store import NewEntry

    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=4)
    memory = AsyncMemory(store)
    try:
        tid = (await memory.threads.create()).id
        ids = [(await memory.remember(tid, "user", f"m{i}")).id for i in range(4)]
        entries = await memory.entries.list(tid)

        def summary(n: int) -> NewEntry:
            return NewEntry(
                id=f"s{n}-{uuid.uuid4().hex[:6]}",
                role="system",
                content=f"summary {n}",
                name=None,
                tool_calls=(),
                tool_call_id=None,
                metadata={},
                state={},
                token_count=2,
                created_at=entries[2].created_at,
            )

        results = await asyncio.gather(
            *(
                store.entry_compact(
                    "default",
                    tid,
                    branch="main",
                    through_position=entries[2].position,
                    expected_ids=ids[:3],
                    summary=summary(n),
                    updated_at=entries[3].created_at,
                )
                for n in range(4)
            )
        )
        assert sorted(results) == [False, False, False, True]
        after = await memory.entries.list(tid)
        assert len(after) == 2 and after[1].id == ids[3]
        assert after[0].content is not None and after[0].content.startswith("summary")
    finally:
        await store.close()


def test_record_and_vector_writes_bigger_than_one_round_trip(mysql_prefix: str) -> None:
    from memorybank.stores.contract.types import VectorItem

    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    tenant = f"big-{uuid.uuid4().hex[:8]}"
    when = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        records = [
            Record("document", f"d{i:03}", None, None, f"chunk {i} " + "x" * 40_000, {}, when, when)
            for i in range(60)  # ~2.4 MB: three round trips of one transaction
        ]
        store.record_put(tenant, records)
        assert len(store.record_list(tenant, "document")) == 60
        store.vector_put(
            tenant,
            [
                VectorItem("document", r.id, "m", [float(i), 1.0] * 1024)
                for i, r in enumerate(records)
            ],
        )
        got = store.vector_get(tenant, "document", ["d001", "d059"], model_id="m")
        assert list(got) == ["d001", "d059"] and len(got["d059"]) == 2048
        assert store.record_delete(tenant, "document", [r.id for r in records]) == 60
        assert store.vector_get(tenant, "document", ["d001"], model_id="m") == {}
    finally:
        store.close()


def test_migration_4_gives_existing_records_revision_0(mysql_prefix: str) -> None:
    prefix = f"{mysql_prefix}v2rev_"
    conn = connect()
    try:
        with conn.cursor() as cur:
            _schema_at(cur, prefix, 2)
            cur.execute(
                f"INSERT INTO `{prefix}records` (tenant_id, kind, id, content, data, created_at,"
                " updated_at) VALUES ('default', 'fact', 'f1', 'old', '{}', 1, 1)"
            )
        store = MySQLStore.from_url(URL, prefix=prefix)
        try:
            record = store.record_get("default", "fact", "f1")
            assert record is not None and record.revision == 0
            fact = Memory(store).facts.supersede("f1", "new")
            assert [f.content for f in Memory(store).facts.history("f1")] == ["old", "new"]
            assert fact.version == 2
        finally:
            store.close()
    finally:
        conn.close()
        drop_tables(prefix)


async def test_concurrent_big_appends_are_combined_in_bounded_transactions(
    mysql_prefix: str,
) -> None:
    """Write combining never builds one statement of every queued caller's text:
    30 concurrent 0.9 MB messages to distinct threads (more than a 16 MiB
    ``max_allowed_packet`` together) all land, each in place."""
    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=4)
    memory = AsyncMemory(store)
    tids = [(await memory.threads.create()).id for _ in range(30)]
    big = "x" * 900_000
    entries = await asyncio.gather(*(memory.remember(tid, "user", big + tid) for tid in tids))
    for tid, entry in zip(tids, entries, strict=True):
        [stored] = await memory.entries.list(tid)
        assert stored.id == entry.id and stored.position == entry.position == 1
        assert stored.content == big + tid
    await store.close()


def test_migration_7_counts_every_existing_branch(mysql_prefix: str) -> None:
    """A version-6 schema upgrades in place: each branch's ``entry_count`` is its stored
    entries (gaps left by deletes included), and the counts go on from there."""
    prefix = f"{mysql_prefix}v6count_"
    conn = connect()
    try:
        with conn.cursor() as cur:
            _schema_at(cur, prefix, 6)
            cur.execute(
                f"INSERT INTO `{prefix}threads` (tenant_id, id, user_id, metadata, status,"
                " created_at, updated_at, current_branch) VALUES"
                " ('default', 'old', 'u1', '{}', 'active', 1, 1, 'main'),"
                " ('default', 'empty', 'u1', '{}', 'active', 1, 1, 'main'),"
                " ('other', 'old', NULL, '{}', 'active', 1, 1, 'main')"
            )
            cur.execute(
                f"INSERT INTO `{prefix}branches` (tenant_id, thread_id, name, created_at,"
                " last_position) VALUES ('default', 'old', 'main', 1, 9),"
                " ('default', 'old', 'alt', 1, 2), ('default', 'empty', 'main', 1, 0),"
                " ('other', 'old', 'main', 1, 1)"
            )
            rows = [("default", "old", "main", p) for p in (1, 2, 5, 9)]  # 3, 4, 6-8 deleted
            rows += [("default", "old", "alt", p) for p in (1, 2)] + [("other", "old", "main", 1)]
            for tenant, thread, branch, position in rows:
                cur.execute(
                    f"INSERT INTO `{prefix}entries` (tenant_id, thread_id, branch, position, id,"
                    " role, content, metadata, state, token_count, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, 'user', 'kept', '{}', '{}', 3, 1)",
                    (tenant, thread, branch, position, f"e{position}"),
                )
        store = MySQLStore.from_url(URL, prefix=prefix)
        try:
            assert store.entry_count("default", "old") == 4
            assert store.entry_count("default", "old", branch="alt") == 2
            assert store.entry_count("default", "empty") == 0
            assert store.entry_count("other", "old") == 1
            assert store.entry_count_many("default", ["old", "empty", "gone"]) == {
                "old": 4,
                "empty": 0,
            }
            memory = Memory(store)
            added = memory.remember("old", "user", "after the upgrade")
            assert added.position == 10
            assert store.entry_count("default", "old") == 5
            assert store.entry_delete("default", "old", ["e1", added.id]) == 2
            assert store.entry_count("default", "old") == 3
            assert len(memory.entries.list("old")) == 3
            assert store.entry_count("other", "old") == 1
        finally:
            store.close()
        _assert_latest_version(conn, prefix)
    finally:
        conn.close()
        drop_tables(prefix)


def test_migration_8_hashes_every_stored_id_and_keeps_repeated_ones(mysql_prefix: str) -> None:
    """A version-7 schema upgrades in place: the server hashes each stored id as Python
    does (non-ASCII too), a branch already holding an id twice (imported before the
    rule) keeps both copies, the later one unhashed, and from then on an id the
    branch holds is refused while the data reads as before."""
    from memorybank.errors import Conflict
    from memorybank.stores.mysql.rows import entry_id_hash

    prefix = f"{mysql_prefix}v7ids_"
    conn = connect()
    try:
        with conn.cursor() as cur:
            _schema_at(cur, prefix, 7)
            cur.execute(
                f"INSERT INTO `{prefix}threads` (tenant_id, id, user_id, metadata, status,"
                " created_at, updated_at, current_branch) VALUES"
                " ('default', 'old', NULL, '{}', 'active', 1, 1, 'main')"
            )
            cur.execute(
                f"INSERT INTO `{prefix}branches` (tenant_id, thread_id, name, created_at,"
                " last_position, entry_count) VALUES ('default', 'old', 'main', 1, 4, 4),"
                " ('default', 'old', 'alt', 1, 1, 1)"
            )
            rows = [("main", 1, "e1"), ("main", 2, "é✓ 名"), ("main", 3, "dup")]
            rows += [("main", 4, "dup"), ("alt", 1, "dup")]
            for branch, position, entry_id in rows:
                cur.execute(
                    f"INSERT INTO `{prefix}entries` (tenant_id, thread_id, branch, position, id,"
                    " role, content, metadata, state, token_count, created_at)"
                    " VALUES ('default', 'old', %s, %s, %s, 'user', %s, '{}', '{}', 3, 1)",
                    (branch, position, entry_id, f"{branch}{position}"),
                )
        store = MySQLStore.from_url(URL, prefix=prefix)
        try:
            memory = Memory(store)
            assert [e.content for e in memory.entries.list("old")] == [
                "main1",
                "main2",
                "main3",
                "main4",
            ]
            with conn.cursor() as cur:
                cur.execute(
                    f"SELECT branch, position, id, id_hash FROM `{prefix}entries`"
                    " ORDER BY branch, position"
                )
                hashed = {(b, p): (i, h) for b, p, i, h in cur.fetchall()}
            assert hashed.pop(("main", 4)) == ("dup", None)
            assert all(h == entry_id_hash(i) for i, h in hashed.values())
            when = datetime(2030, 1, 1, tzinfo=UTC)
            for entry_id, branch in (("é✓ 名", "main"), ("dup", "main"), ("dup", "alt")):
                with pytest.raises(Conflict, match=f"{entry_id!r} is already on branch {branch!r}"):
                    store.entry_append(
                        "default",
                        "old",
                        [_new_entry(entry_id, "x")],
                        updated_at=when,
                        branch=branch,
                    )
            added = memory.remember("old", "user", "after the upgrade")
            assert added.position == 5
            assert memory.entries.count("old") == 5
        finally:
            store.close()
        _assert_latest_version(conn, prefix)
    finally:
        conn.close()
        drop_tables(prefix)


async def test_lone_append_refused_after_an_allowed_one_writes_nothing(
    mysql_prefix: str,
) -> None:
    """A lone append keeps its counter and branch in session variables of a pooled
    connection: each append starts them afresh, so a refused append (no thread,
    another owner, no branch) after an allowed one on the same connection gets its
    own error and writes nothing (no entry, counter, count or ``updated_at``)."""
    from memorybank.errors import NotFound

    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create(user_id="alice")).id
    first = await memory.remember(tid, "user", "one", user_id="alice")
    before = await memory.threads.get(tid)
    refused: list[tuple[str, dict[str, Any], type[Exception]]] = [
        ("nope", {}, NotFound),
        (tid, {"user_id": "bob"}, ThreadForbidden),
        (tid, {"user_id": "alice", "branch": "gone"}, NotFound),
    ]
    for thread_id, options, error in refused:
        branch = options.pop("branch", None)
        with pytest.raises(error):
            await memory.entries.add(
                thread_id, {"role": "user", "content": "x"}, branch=branch, **options
            )
    assert [e.content for e in await memory.entries.list(tid)] == ["one"]
    assert await memory.entries.count(tid) == 1
    assert await memory.threads.get(tid) == before
    assert await memory.threads.get("nope") is None
    second = await memory.remember(tid, "user", "two", user_id="alice")
    assert (first.position, second.position) == (1, 2)
    await store.close()


def _count_round_trips(store: AsyncMySQLStore) -> list[int]:
    """A list that gets an item for each round trip ``store`` makes from now on."""
    trips: list[int] = []
    run = store._run

    async def counted(conn: Any, statements: Any) -> Any:
        trips.append(len(statements))
        return await run(conn, statements)

    store._run = counted  # type: ignore[method-assign]
    return trips


@pytest.mark.parametrize("two_owners_of_one_thread", [False, True])
async def test_combined_appends_refuse_callers_alone_in_one_transaction(
    mysql_prefix: str, two_owners_of_one_thread: bool
) -> None:
    """Concurrent appends of a tenant run as one transaction of two round trips, with
    one owner or two on a thread: a refused caller (no thread, another owner, no
    branch) gets its own error and writes nothing; the others get consecutive
    positions in order."""
    from memorybank.errors import NotFound
    from memorybank.stores.contract._async.store import UNSET, NewEntry
    from memorybank.stores.mysql.rows import APPEND_BATCHES

    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=4)
    memory = AsyncMemory(store)
    a, b = [(await memory.threads.create(user_id="alice")).id for _ in range(2)]
    c, f = [(await memory.threads.create()).id for _ in range(2)]
    trips = _count_round_trips(store)
    when = datetime.now(UTC)

    def call(thread_id: str, branch: str | None, owner: Any, text: str) -> Any:
        new = NewEntry(uuid.uuid4().hex, "user", text, None, (), None, {}, {}, 1, when)
        return store.entry_append(
            "default", thread_id, [new], updated_at=when, branch=branch, owner=owner
        )

    calls = [call(f, None, UNSET, f"f{i}") for i in range(APPEND_BATCHES)]  # run alone
    calls += [
        call(a, None, "alice", "a1"),
        call(b, None, "bob", "b-bob"),
        call("nope", None, UNSET, "x"),
        call(a, None, "alice", "a2"),
        call(c, "gone", UNSET, "c"),
        call(a, None, "alice", "a3"),
    ]
    if two_owners_of_one_thread:
        calls.append(call(b, None, "alice", "b-alice"))
    out = await asyncio.gather(*calls, return_exceptions=True)
    # the first APPEND_BATCHES calls alone (one round trip each), then one batch of the
    # rest (two)
    assert len(trips) == APPEND_BATCHES + 2
    assert isinstance(out[APPEND_BATCHES + 1], ThreadForbidden)
    assert isinstance(out[APPEND_BATCHES + 2], NotFound)
    assert isinstance(out[APPEND_BATCHES + 4], NotFound)
    got_a = [out[APPEND_BATCHES + k].entries[0].position for k in (0, 3, 5)]  # type: ignore[union-attr]
    assert got_a == [1, 2, 3]
    stored = {t: await memory.entries.list(t) for t in (a, b, c, f)}
    assert [(e.position, e.content) for e in stored[a]] == [(1, "a1"), (2, "a2"), (3, "a3")]
    assert [e.content for e in stored[b]] == (["b-alice"] if two_owners_of_one_thread else [])
    assert stored[c] == [] and len(stored[f]) == APPEND_BATCHES
    assert [await memory.entries.count(t) for t in (a, b, c)] == [3, len(stored[b]), 0]
    assert await memory.threads.get("nope") is None
    assert (await memory.threads.get(a)).updated_at == when  # type: ignore[union-attr]
    await store.close()


def _new_entry(entry_id: str, text: str, key: str | None = None) -> Any:
    from memorybank.stores.contract._async.store import NewEntry

    when = datetime(2030, 1, 1, tzinfo=UTC)
    return NewEntry(entry_id, "user", text, None, (), None, {}, {}, 1, when, idempotency_key=key)


async def test_combined_appends_refuse_a_taken_id_alone(mysql_prefix: str) -> None:
    """Of one combined transaction, a caller whose entry id the branch holds, or one
    that an earlier caller of the same transaction wrote to the branch, gets
    ``Conflict`` naming it and writes nothing; the other callers are stored in order,
    and the same id on another thread is free."""
    from memorybank.errors import Conflict

    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=4)
    memory = AsyncMemory(store)
    a, b = [(await memory.threads.create()).id for _ in range(2)]
    held = (await memory.remember(a, "user", "held")).id
    trips = _count_round_trips(store)
    when = datetime(2030, 1, 1, tzinfo=UTC)

    def call(thread_id: str, *entries: Any) -> Any:
        return store.entry_append("default", thread_id, list(entries), updated_at=when)

    fresh = uuid.uuid4().hex
    out = await asyncio.gather(
        call(b, _new_entry(uuid.uuid4().hex, "alone")),  # runs alone; the rest wait
        call(a, _new_entry(uuid.uuid4().hex, "a1")),
        call(a, _new_entry(uuid.uuid4().hex, "x"), _new_entry(held, "x")),
        call(a, _new_entry(fresh, "a2")),
        call(a, _new_entry(fresh, "again")),
        call(b, _new_entry(held, "b's own")),
        return_exceptions=True,
    )
    # alone (one round trip); the batch (two), refused by the id key at its INSERT; then
    # each of its five callers alone (one each)
    assert len(trips) == 1 + 2 + 5
    assert isinstance(out[2], Conflict) and f"{held!r} is already on branch" in str(out[2])
    assert isinstance(out[4], Conflict) and f"{fresh!r} is already on branch" in str(out[4])
    contents = [e.content for e in await memory.entries.list(a)]
    assert contents == ["held", "a1", "a2"]
    assert await memory.entries.count(a) == 3
    assert [e.content for e in await memory.entries.list(b)] == ["alone", "b's own"]
    await store.close()


async def test_lone_append_refused_for_a_taken_id_leaves_the_connection_clean(
    mysql_prefix: str,
) -> None:
    """The one-round-trip append keeps "an id is taken" in a session variable: it is
    set afresh by each append, so the refused append writes nothing (no entry,
    counter, count or ``updated_at``) and the next one on the same pooled connection
    is stored at the next position."""
    from memorybank.errors import Conflict

    store = AsyncMySQLStore.from_url(URL, prefix=mysql_prefix, pool_size=1)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    first = await memory.remember(tid, "user", "one")
    before = await memory.threads.get(tid)
    when = datetime(2030, 1, 1, tzinfo=UTC)
    batch = [_new_entry(uuid.uuid4().hex, "x"), _new_entry(first.id, "y")]
    with pytest.raises(Conflict, match=f"{first.id!r} is already on branch 'main'"):
        await store.entry_append("default", tid, batch, updated_at=when)
    assert await memory.threads.get(tid) == before
    assert await memory.entries.count(tid) == 1
    second = await memory.remember(tid, "user", "two")
    assert (first.position, second.position) == (1, 2)
    await store.close()


def test_big_and_keyed_appends_refuse_a_taken_id(mysql_prefix: str) -> None:
    """The two-round-trip append (more than 16 entries, or idempotency keys): a taken
    id anywhere in a batch of 1,500 refuses it, named by a read of the batch's ids in
    chunks of 500 (``SQLAppends``), as does a keyed entry's; a replayed key's entry is not
    checked."""
    from memorybank.errors import Conflict

    store = MySQLStore.from_url(URL, prefix=mysql_prefix)
    memory = Memory(store)
    tid = memory.threads.create().id
    when = datetime(2030, 1, 1, tzinfo=UTC)
    held = [_new_entry(f"h{i}", f"h{i}") for i in range(20)]
    store.entry_append("default", tid, held, updated_at=when)
    big = [_new_entry(uuid.uuid4().hex, "n") for _ in range(1499)] + [held[19]]
    with pytest.raises(Conflict, match="'h19' is already on branch"):
        store.entry_append("default", tid, big, updated_at=when)
    key = uuid.uuid4().hex
    keyed = [_new_entry(uuid.uuid4().hex, "k", key), _new_entry("h3", "k2", uuid.uuid4().hex)]
    with pytest.raises(Conflict, match="'h3' is already on branch"):
        store.entry_append("default", tid, keyed, updated_at=when)
    assert memory.entries.count(tid) == 20
    stored = store.entry_append("default", tid, keyed[:1], updated_at=when).entries
    assert [e.position for e in stored] == [21]
    replay = store.entry_append(
        "default", tid, [*keyed[:1], _new_entry("fresh", "f")], updated_at=when
    ).entries
    assert [e.position for e in replay] == [21, 22]
    store.close()


def test_change_feed_skips_a_guarded_writes_placeholder(mysql_prefix: str) -> None:
    """A guarded write of an absent record claims its key with a placeholder row: the
    feed records the write once (``fact.added``, when the upsert makes the placeholder a
    record), a refused guarded write nothing, and an unchanged graph upsert nothing."""
    prefix = f"{mysql_prefix}fg_"
    store = MySQLStore.from_url(URL, prefix=prefix)
    try:
        store.events_enable(keep=timedelta(days=1))
        now = datetime.now(UTC)

        def record(kind: str, rid: str, revision: int, content: str = "c") -> Record:
            return Record(kind, rid, None, "u", content, {}, now, now, revision=revision)

        store.record_put("t", [record("fact", "f", 1)], guard=RecordGuard("fact", "f", None))
        with pytest.raises(Conflict):
            store.record_put("t", [record("fact", "f", 2)], guard=RecordGuard("fact", "f", None))
        entity = record("graph_entity", "e", 1)
        store.record_put("t", [entity], guard=RecordGuard("graph_entity", "e", None))
        store.record_put("t", [entity])  # the same row again: no change
        store.record_put("t", [record("graph_entity", "e", 2, "d")])
        events = store.events_list(
            "t", after=None, kinds=None, user_id=UNSET, agent_id=UNSET, limit=100
        )
        assert [(e.kind, e.item_id, (e.data or {}).get("op")) for e in events] == [
            ("fact.added", "f", None),
            ("graph.changed", "e", "added"),
            ("graph.changed", "e", "updated"),
        ]
    finally:
        store.close()
        drop_tables(prefix)
