"""SQLite specifics: files, URLs, processes, schema versions, query plans."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from memorybank import ConfigurationError, Memory, StoreError
from memorybank._sync.stores.open import sqlite_path
from memorybank.stores import SQLiteStore


def _append_many(path: str, thread_id: str, writer: int, count: int) -> None:
    memory = Memory(f"sqlite:///{path}")
    for i in range(count):
        memory.remember(thread_id, "user", f"w{writer}-{i}")
    memory.close()


def _check_writers(memory: Memory, thread_id: str, writers: int, count: int) -> None:
    entries = memory.entries.list(thread_id)
    assert len(entries) == writers * count
    positions = [e.position for e in entries]
    assert positions == list(range(1, writers * count + 1))
    for w in range(writers):
        mine = [e.content for e in entries if (e.content or "").startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(count)]


def test_two_processes_append_to_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    memory = Memory(f"sqlite:///{path}")
    thread_id = memory.threads.create().id
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, thread_id, w, 60)) for w in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    _check_writers(memory, thread_id, 2, 60)
    memory.close()


def test_several_threads_share_one_sync_store(tmp_path: Path) -> None:
    memory = Memory(SQLiteStore(tmp_path / "threads.db", synchronous="normal"))
    thread_id = memory.threads.create().id

    def write(w: int) -> None:
        for i in range(25):
            memory.remember(thread_id, "user", f"w{w}-{i}")

    workers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    _check_writers(memory, thread_id, 4, 25)


def test_data_survives_reopening(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'persist.db'}"
    with Memory(url) as memory:
        tid = memory.threads.create(user_id="alice").id
        memory.remember(tid, "user", "remember me")
    with Memory(url) as memory:
        assert memory.history(tid) == [{"role": "user", "content": "remember me"}]


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///relative/x.db", "relative/x.db"),
        ("sqlite:////abs/x.db", "/abs/x.db"),
        ("sqlite://", ":memory:"),
        ("sqlite:///:memory:", ":memory:"),
    ],
)
def test_sqlite_urls_read_as_sqlalchemy(url: str, path: str) -> None:
    assert sqlite_path(url) == path


def test_relative_url_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with Memory("sqlite:///sub/rel.db") as memory:
        memory.threads.create()
    assert (tmp_path / "sub" / "rel.db").exists()


def test_default_url_is_the_embedded_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMORYBANK_URL", raising=False)
    with Memory() as memory:
        memory.threads.create()
    assert (tmp_path / "memorybank.db").exists()
    monkeypatch.setenv("MEMORYBANK_URL", f"sqlite:///{tmp_path / 'env.db'}")
    with Memory() as memory:
        memory.threads.create()
    assert (tmp_path / "env.db").exists()


def test_bad_options_raise_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        SQLiteStore(tmp_path / "x.db", synchronous="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        SQLiteStore(tmp_path / "x.db", prefix="bad-prefix; DROP")
    with pytest.raises(ConfigurationError):
        Memory("sqlite:relative.db")
    with pytest.raises(ConfigurationError):
        Memory("nosuchstore://x")


def test_schema_is_versioned_and_created_once(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    for _ in range(2):
        with Memory(SQLiteStore(path)) as memory:
            memory.threads.create()
    conn = sqlite3.connect(path)
    versions = conn.execute("SELECT version FROM memorybank_schema_version").fetchall()
    assert versions == [(1,), (2,), (3,), (4,), (5,), (6,)]
    conn.execute("INSERT INTO memorybank_schema_version VALUES (99)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigurationError, match="newer"):
        Memory(SQLiteStore(path)).threads.list()


def test_last_n_is_an_index_range_read(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "plan.db")
    Memory(store).threads.create()
    conn = sqlite3.connect(tmp_path / "plan.db")
    plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM memorybank_entries WHERE tenant_id = 'd'"
            " AND thread_id = 't' AND branch = 'main' ORDER BY position DESC LIMIT 20"
        )
    )
    assert "memorybank_entries_position" in plan
    assert "TEMP B-TREE" not in plan


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as info:
        Memory(SQLiteStore(path)).threads.list()
    assert isinstance(info.value.__cause__, sqlite3.Error)


def test_prefix_lets_two_memories_share_a_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a = Memory(SQLiteStore(path, prefix="a_"))
    b = Memory(SQLiteStore(path, prefix="b_"))
    tid = a.threads.create().id
    assert b.threads.get(tid) is None


def test_migrations_upgrade_a_version_1_file(tmp_path: Path) -> None:
    from memorybank._sync.stores import sqlite as sqlite_module

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for statement in sqlite_module._migrations("memorybank_")[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO memorybank_schema_version VALUES (1)")
    conn.execute(
        "INSERT INTO memorybank_threads VALUES ('default', 't', NULL, NULL, NULL, '{}',"
        " 'active', 0, 0, 'main')"
    )
    conn.execute("INSERT INTO memorybank_branches VALUES ('default', 't', 'main', 0, NULL, NULL)")
    conn.execute(
        "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id, role,"
        " content, metadata, state, token_count, created_at) VALUES ('default', 't', 'main', 1,"
        " 'e1', 'user', 'an old walrus fact', '{}', '{}', 5, 0)"
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    memory = Memory(store)
    assert memory.history("t") == [{"role": "user", "content": "an old walrus fact"}]
    hits = store.text_search("default", "walrus", kinds=["entry"], k=5)
    assert [h.id for h in hits] == ["e1"]


def test_migration_3_gives_existing_records_revision_0(tmp_path: Path) -> None:
    from memorybank._sync.stores import sqlite as sqlite_module

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for statements in sqlite_module._migrations("memorybank_")[:2]:
        for statement in statements:
            conn.execute(statement)
    conn.execute("INSERT INTO memorybank_schema_version VALUES (1), (2)")
    conn.execute(
        "INSERT INTO memorybank_records (tenant_id, kind, id, content, data, created_at,"
        " updated_at) VALUES ('default', 'fact', 'f1', 'old', '{}', 0, 0)"
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    record = store.record_get("default", "fact", "f1")
    assert record is not None and record.revision == 0
    memory = Memory(store)
    assert memory.facts.supersede("f1", "new").version == 2
    assert [f.content for f in memory.facts.history("f1")] == ["old", "new"]
    store.close()


def test_keyed_rows_from_before_fingerprints_still_replay(tmp_path: Path) -> None:
    """A version-2 row has a key but no fingerprint: a retry returns it, whatever its payload."""
    from memorybank._sync.stores import sqlite as sqlite_module

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module._migrations("memorybank_")[:2], 1):
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO memorybank_schema_version VALUES (?)", (version,))
    conn.execute(
        "INSERT INTO memorybank_threads VALUES ('default', 't', NULL, NULL, NULL, '{}',"
        " 'active', 0, 0, 'main')"
    )
    conn.execute("INSERT INTO memorybank_branches VALUES ('default', 't', 'main', 0, NULL, NULL)")
    conn.execute(
        "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id, role,"
        " content, metadata, state, token_count, created_at, idempotency_key) VALUES"
        " ('default', 't', 'main', 1, 'e1', 'user', 'old', '{}', '{}', 5, 0, 'k')"
    )
    conn.commit()
    conn.close()
    memory = Memory(SQLiteStore(path))
    assert (
        memory.entries.add("t", {"role": "user", "content": "new"}, idempotency_key="k").id == "e1"
    )
    fresh = memory.entries.add("t", {"role": "user", "content": "x"}, idempotency_key="k2")
    assert memory.entries.add("t", {"role": "user", "content": "x"}, idempotency_key="k2") == fresh
    assert memory.entries.count("t") == 2


def test_records_of_schema_4_page_after_the_upgrade(tmp_path: Path) -> None:
    """Migration 5 adds the (tenant_id, kind, created_at, id) index; older rows page as new."""
    from memorybank._sync.stores import sqlite as sqlite_module

    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module._migrations("memorybank_")[:4], 1):
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO memorybank_schema_version VALUES (?)", (version,))
    conn.executemany(
        "INSERT INTO memorybank_records (tenant_id, kind, id, agent_id, user_id, key, content,"
        " data, created_at, updated_at, expires_at) VALUES ('d', 'fact', ?, NULL, ?, ?, ?, '{}',"
        " ?, ?, NULL)",
        [
            (f"r{i}", "u" if i % 3 == 0 else None, f"k{i % 4}", f"c{i}", i // 2, i // 2)
            for i in range(9)
        ],
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    try:
        first = store.record_page("d", "fact", limit=4)
        rest = store.record_page("d", "fact", limit=10, after=(first[-1].created_at, first[-1].id))
        assert [r.id for r in first + rest] == [f"r{i}" for i in range(9)]
        keyed = store.record_list_keys("d", "fact", ["k1", "k2"])
        assert [r.id for r in keyed] == ["r1", "r2", "r5", "r6"]
        assert set(store.record_get_many("d", "fact", ["r8", "r9", "r0"])) == {"r8", "r0"}
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT max(version) FROM memorybank_schema_version").fetchone() == (6,)
    page_plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM memorybank_records INDEXED BY"
            " memorybank_records_created WHERE tenant_id = 'd' AND kind = 'fact'"
            " AND (created_at, id) > (1, 'r2') AND user_id IS NULL ORDER BY created_at, id LIMIT 5"
        )
    )
    assert "memorybank_records_created" in page_plan and "TEMP B-TREE" not in page_plan
    keys_plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM memorybank_records WHERE tenant_id = 'd'"
            " AND kind = 'fact' AND key IN ('k1', 'k2')"
        )
    )
    assert "memorybank_records_key" in keys_plan
    conn.close()
