"""SQLite specifics: files, URLs, processes, schema versions, query plans."""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from memorybank import ConfigurationError, Memory, NotFound, StoreError
from memorybank.stores import SQLiteStore
from memorybank.stores._sync.open import sqlite_path
from memorybank.stores.contract.types import UNSET, SearchHit, Visibility
from memorybank.stores.sqlite.schema import apply_step


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
    assert versions == [(v,) for v in range(1, 14)]
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
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for statement in sqlite_module.migrations("memorybank_")[0]:
        apply_step(conn, statement)
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
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for statements in sqlite_module.migrations("memorybank_")[:2]:
        for statement in statements:
            apply_step(conn, statement)
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
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module.migrations("memorybank_")[:2], 1):
        for statement in statements:
            apply_step(conn, statement)
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
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module.migrations("memorybank_")[:4], 1):
        for statement in statements:
            apply_step(conn, statement)
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
    assert conn.execute("SELECT max(version) FROM memorybank_schema_version").fetchone() == (
        len(sqlite_module.migrations("memorybank_")),
    )
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


def _fts_complete(path: Path) -> None:
    """The entries' keyword index holds exactly the entries' content (FTS5's own check)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "INSERT INTO memorybank_entries_fts (memorybank_entries_fts, rank)"
            " VALUES ('integrity-check', 1)"
        )


def _mark(path: Path) -> tuple[int, int]:
    """(the keyword index's mark, the highest entries rowid)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        row = conn.execute(
            "SELECT indexed, (SELECT COALESCE(MAX(rowid), 0) FROM memorybank_entries)"
            " FROM memorybank_fts_state WHERE name = 'entries'"
        ).fetchone()
        return int(row[0]), int(row[1])


def test_migration_6_keeps_a_version_5_file_searchable_and_indexes_in_batches(
    tmp_path: Path,
) -> None:
    """Version 5 indexed every entry by trigger; version 6 moves appends in batches, and
    a search, a delete (also of the highest rowid, which SQLite then hands out again)
    and a content update keep the index exactly equal to the entries."""
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "v5.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module.migrations("memorybank_")[:5], 1):
        for statement in statements:
            apply_step(conn, statement)
        conn.execute("INSERT INTO memorybank_schema_version VALUES (?)", (version,))
    conn.execute(
        "INSERT INTO memorybank_threads VALUES ('default', 't', NULL, NULL, NULL, '{}',"
        " 'active', 0, 0, 'main')"
    )
    conn.execute("INSERT INTO memorybank_branches VALUES ('default', 't', 'main', 0, NULL, NULL)")
    conn.executemany(
        "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id, role,"
        " content, metadata, state, token_count, created_at) VALUES ('default', 't', 'main', ?,"
        " ?, 'user', ?, '{}', '{}', 5, 0)",
        [(1, "e1", "an old walrus fact"), (2, "e2", "an old narwhal fact")],
    )
    conn.commit()
    conn.close()

    store = SQLiteStore(path)
    memory = Memory(store)

    def found(word: str) -> list[str]:
        return sorted(h.id for h in store.text_search("default", word, kinds=["entry"], k=10))

    assert len(memory.history("t")) == 2  # opens the file: the migration runs
    assert _mark(path) == (2, 2)  # what version 5 indexed counts as indexed
    assert found("walrus") == ["e1"]
    new = memory.remember("t", "user", "a new walrus note").id
    assert _mark(path) == (2, 3)  # the append did not touch the index
    assert found("walrus") == sorted(["e1", new])  # the search indexed it first
    assert _mark(path) == (3, 3)
    memory.entries.delete("t", new)  # the highest rowid: SQLite reuses it next
    assert _mark(path) == (2, 2)
    again = memory.remember("t", "user", "another walrus note").id
    assert found("walrus") == sorted(["e1", again])
    memory.entries.delete("t", "e2")
    assert found("narwhal") == []
    _fts_complete(path)
    batch = sqlite_module.FTS_BATCH
    memory.entries.add_many("t", [{"role": "user", "content": "walrus"}] * (batch + 1))
    indexed, top = _mark(path)
    assert indexed == top  # a full batch indexes in the append's own transaction
    store.close()
    _fts_complete(path)


def test_a_read_only_file_finds_entries_not_yet_in_the_keyword_index(tmp_path: Path) -> None:
    """A writer that stopped before indexing its last entries: a reader of a read-only
    file cannot index them, and still finds them."""
    from tests.reliability.test_sqlite_faults import _read_only

    path = tmp_path / "ro.db"
    with Memory(f"sqlite:///{path}") as memory:
        thread = memory.threads.create()
        memory.remember(thread.id, "user", "the walrus in the index")
    with contextlib.closing(sqlite3.connect(path)) as conn:  # as a crashed writer leaves it
        conn.execute(
            "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id, role,"
            " content, metadata, state, token_count, created_at) VALUES ('default', ?, 'main',"
            " 2, 'late', 'user', 'a walrus after the mark', '{}', '{}', 5, 0)",
            (thread.id,),
        )
        conn.commit()
    indexed, top = _mark(path)
    assert indexed < top
    with _read_only(path), Memory(f"sqlite:///{path}") as memory:
        hits = memory.store.text_search("default", "walrus", kinds=["entry"], k=10)
        assert len(hits) == 2 and "late" in {h.id for h in hits}
        assert memory.store.text_search("default", "after", kinds=["entry"], k=10)[0].id == "late"
    with Memory(f"sqlite:///{path}") as memory:  # writable again: indexed on the next search
        assert len(memory.store.text_search("default", "walrus", kinds=["entry"], k=10)) == 2
    assert _mark(path)[0] == _mark(path)[1]
    _fts_complete(path)


def test_recent_messages_equals_the_generic_read_for_every_window(tmp_path: Path) -> None:
    """The one-statement ``history()`` read gives exactly what ``entry_list`` +
    pairing + ``to_message`` give, for every window (tool results cut off included)."""
    from memorybank.stores.contract._sync.store import Store

    store = SQLiteStore(tmp_path / "h.db")
    memory = Memory(store)
    tid = memory.threads.create(user_id="u").id
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    memory.entries.add_many(
        tid,
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi", "name": "ann"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "content": "42", "tool_call_id": "c1"},
            {"role": "assistant", "content": "no", "refusal": "no", "annotations": []},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "x", "y": 1}]},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "ok"},
        ],
    )
    # An orphan tool result: refused by the library, but a store may hold one (written
    # before the rule, or by a store-level writer): the reads must still agree.
    from datetime import UTC, datetime

    from memorybank.stores.contract.items import NewEntry

    now = datetime.now(UTC)
    orphan = NewEntry("orphan-1", "tool", "orphan", None, (), "nobody", {}, {}, 3, now)
    store.entry_append("default", tid, [orphan], updated_at=now)
    memory.entries.add(tid, {"role": "assistant", "content": "done", "metadata": {"m": 1}})
    assert Store.entry_list_recent(store, "default", tid, 3)[0] == "u"
    for limit in range(12):
        fast = store.entry_list_recent("default", tid, limit)
        assert fast == Store.entry_list_recent(store, "default", tid, limit), limit
        assert memory.history(tid, last=limit) == fast[1]
    empty = memory.threads.create().id
    assert store.entry_list_recent("default", empty, 5) == (None, [])
    with pytest.raises(NotFound):
        store.entry_list_recent("default", "absent", 5)
    with pytest.raises(NotFound):
        store.entry_list_recent("other", tid, 0)


def test_append_positions_owner_check_and_thread_bump(tmp_path: Path) -> None:
    """One statement reads the thread and its branch's last position before the
    writes: positions follow on, a refused append writes nothing, and the thread
    returned and stored carries the append's time."""
    from memorybank import ThreadForbidden

    with Memory(SQLiteStore(tmp_path / "r.db")) as memory:
        tid = memory.threads.create(user_id="u").id
        first = memory.remember(tid, "user", "one", user_id="u")
        second = memory.remember(tid, "assistant", "two", user_id="u")
        assert (first.position, second.position) == (1, 2)
        thread = memory.threads.get(tid)
        assert thread is not None and thread.updated_at == second.created_at
        with pytest.raises(ThreadForbidden):
            memory.remember(tid, "user", "not yours", user_id="v")
        after = memory.threads.get(tid)
        assert after is not None and after.updated_at == thread.updated_at  # rolled back
        with pytest.raises(NotFound):
            memory.remember("absent", "user", "x")
        assert [m["content"] for m in memory.history(tid, user_id="u")] == ["one", "two"]
        memory.branches.create(tid, "alt", from_entry=first.id, user_id="u")
        message = {"role": "assistant", "content": "three", "name": "bot"}  # other NULLs
        third = memory.entries.add(tid, message, branch="alt", user_id="u")
        assert (third.branch, third.position) == ("alt", 2)
        with pytest.raises(NotFound):
            memory.entries.add(tid, message, branch="absent", user_id="u")
        assert [e.content for e in memory.entries.list(tid, branch="alt")] == ["one", "three"]
        assert memory.entries.get(tid, third.id, branch="alt") == third
        assert memory.entries.count(tid) == 2


def test_migration_8_drops_the_updated_at_indexes_and_lists_threads_as_before(
    tmp_path: Path,
) -> None:
    """Version 8 drops the two thread indexes holding ``updated_at`` (every append
    rewrote both) for one on (tenant_id, user_id); a version-7 file's threads list in
    the same order, filtered the same way, and an append still moves its thread first."""
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "v7.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module.migrations("memorybank_")[:7], 1):
        for statement in statements:
            apply_step(conn, statement)
        conn.execute("INSERT INTO memorybank_schema_version VALUES (?)", (version,))
    # Threads t0..t8: users u0/u1/none, updated_at with ties (order: updated_at, then id).
    conn.executemany(
        "INSERT INTO memorybank_threads (tenant_id, id, user_id, agent_id, title, metadata,"
        " status, created_at, updated_at, current_branch)"
        " VALUES ('default', ?, ?, NULL, NULL, '{}', 'active', 0, ?, 'main')",
        [(f"t{i}", [f"u{i % 2}", None][i % 3 == 2], 1_000_000 * (i // 2)) for i in range(9)],
    )
    conn.executemany(
        "INSERT INTO memorybank_branches (tenant_id, thread_id, name, created_at)"
        " VALUES ('default', ?, 'main', 0)",
        [(f"t{i}",) for i in range(9)],
    )
    conn.execute(
        "INSERT INTO memorybank_threads (tenant_id, id, user_id, agent_id, title, metadata,"
        " status, created_at, updated_at, current_branch)"
        " VALUES ('other', 'x', 'u0', NULL, NULL, '{}', 'active', 0, 99000000, 'main')"
    )
    conn.commit()
    conn.close()
    with Memory(SQLiteStore(path)) as memory:
        assert [t.id for t in memory.threads.list()] == [
            "t8", "t7", "t6", "t5", "t4", "t3", "t2", "t1", "t0"
        ]  # fmt: skip
        assert [t.id for t in memory.threads.list(limit=3)] == ["t8", "t7", "t6"]
        assert [t.id for t in memory.threads.list(user_id="u0")] == ["t6", "t4", "t0"]
        assert [t.id for t in memory.threads.list(user_id=None)] == ["t8", "t5", "t2"]
        memory.remember("t1", "user", "hello", user_id="u1")
        assert [t.id for t in memory.threads.list(limit=2)] == ["t1", "t8"]
        assert [t.id for t in memory.threads.list(user_id="u1", limit=2)] == ["t1", "t7"]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT max(version) FROM memorybank_schema_version").fetchone() == (
            len(sqlite_module.migrations("memorybank_")),
        )
        indexes = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index'"
                " AND tbl_name = 'memorybank_threads' AND sql IS NOT NULL"
            )
        }
        assert indexes == {"memorybank_threads_owner"}
        plan = " ".join(
            str(row[3])
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT id FROM memorybank_threads INDEXED BY"
                " memorybank_threads_owner WHERE tenant_id = 'default'"
                " AND user_id IS 'u0' ORDER BY updated_at DESC, id DESC"
            )
        )
        assert "memorybank_threads_owner" in plan
    finally:
        conn.close()


def _entry_ids(hits: list[SearchHit]) -> list[str]:
    return [hit.id for hit in hits]


def test_migration_10_gives_the_keyword_index_owner_tokens(tmp_path: Path) -> None:
    """Version 10 rebuilds the entries' keyword index with an owner column: a version-9
    file's indexed entries get their thread owner's token, searches for one user (or in
    one thread) find exactly what the SQL scope check allows, with the same scores, and
    deletes, content updates and later batches keep the index equal to the entries."""
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "v9.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memorybank_schema_version (version INTEGER NOT NULL)")
    for version, statements in enumerate(sqlite_module.migrations("memorybank_")[:9], 1):
        for statement in statements:
            apply_step(conn, statement)
        conn.execute("INSERT INTO memorybank_schema_version VALUES (?)", (version,))
    owners = {"ta": "alice", "tb": "bob", "ts": None}
    for tenant in ("default", "other"):
        for thread, user in owners.items():
            conn.execute(
                "INSERT INTO memorybank_threads (tenant_id, id, user_id, agent_id, title,"
                " metadata, status, created_at, updated_at, current_branch)"
                " VALUES (?, ?, ?, NULL, NULL, '{}', 'active', 0, 0, 'main')",
                (tenant, thread, user),
            )
            conn.execute(
                "INSERT INTO memorybank_branches (tenant_id, thread_id, name, created_at)"
                " VALUES (?, ?, 'main', 0)",
                (tenant, thread),
            )
            conn.executemany(
                "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id,"
                " role, content, metadata, state, token_count, created_at)"
                " VALUES (?, ?, 'main', ?, ?, 'user', ?, '{}', '{}', 5, 0)",
                [
                    (tenant, thread, i, f"{tenant}-{thread}-{i}", f"walrus {'tusk ' * i}note")
                    for i in range(1, 4)
                ],
            )
    # everything so far is indexed (as version 8 left it), and one entry is above the mark
    conn.execute(
        "INSERT INTO memorybank_entries_fts (rowid, content) SELECT rowid, content"
        " FROM memorybank_entries"
    )
    conn.execute(
        "UPDATE memorybank_fts_state SET indexed = (SELECT MAX(rowid) FROM memorybank_entries)"
    )
    conn.execute(
        "INSERT INTO memorybank_entries (tenant_id, thread_id, branch, position, id, role,"
        " content, metadata, state, token_count, created_at)"
        " VALUES ('default', 'ta', 'main', 4, 'late', 'user', 'a late walrus', '{}', '{}', 5, 0)"
    )
    conn.commit()
    before = {
        row[0]: row[1]
        for row in conn.execute(
            "SELECT e.id, -bm25(memorybank_entries_fts) FROM memorybank_entries_fts"
            " JOIN memorybank_entries e ON e.rowid = memorybank_entries_fts.rowid"
            ' WHERE memorybank_entries_fts MATCH \'"walrus" OR "tusk"\''
        )
    }
    conn.close()

    store = SQLiteStore(path)
    memory = Memory(store)

    def search(visible_to: Visibility | None = None, thread: str | None = None) -> list[str]:
        hits = store.text_search(
            "default", "walrus tusk", kinds=["entry"], k=1000, thread_id=thread,
            visible_to=visible_to,
        )  # fmt: skip
        return sorted(_entry_ids(hits))

    everything = search()
    assert len(everything) == 10  # the migration ran; the search indexed the late entry
    alice = search(Visibility(UNSET, "alice"))
    assert alice == sorted(
        [f"default-{t}-{i}" for t in ("ta", "ts") for i in range(1, 4)] + ["late"]
    )
    assert search(Visibility(UNSET, None)) == [f"default-ts-{i}" for i in range(1, 4)]
    assert search(thread="tb") == [f"default-tb-{i}" for i in range(1, 4)]
    scores = {
        hit.id: hit.score
        for hit in store.text_search("default", "walrus tusk", kinds=["entry"], k=50)
    }
    for entry_id, score in before.items():
        if entry_id.startswith("default-"):
            assert scores[entry_id] == pytest.approx(score, rel=0.05)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tokens = dict(
            conn.execute(
                "SELECT thread_id, fts_scope FROM memorybank_entries WHERE tenant_id = 'default'"
            ).fetchall()
        )
    assert tokens["ts"] == sqlite_module.SHARED_TOKEN
    assert tokens["ta"] == sqlite_module.scope_token("default", "alice") != tokens["tb"]
    _fts_complete(path)
    memory.entries.delete("ta", "default-ta-2")
    store.entry_update(
        "default", "tb", branch="main", changes=[("default-tb-1", "a narwhal now", {}, 3)]
    )
    memory.threads.delete("ts")
    _fts_complete(path)
    assert search(Visibility(UNSET, "alice")) == ["default-ta-1", "default-ta-3", "late"]
    assert search(Visibility(UNSET, "bob")) == ["default-tb-2", "default-tb-3"]
    batch = sqlite_module.FTS_BATCH
    memory.entries.add_many("tb", [{"role": "user", "content": "walrus"}] * (batch + 1))
    indexed, top = _mark(path)
    assert indexed == top
    assert len(search(Visibility(UNSET, "bob"))) == 2 + batch + 1
    assert search(Visibility(UNSET, "alice")) == ["default-ta-1", "default-ta-3", "late"]
    store.close()
    _fts_complete(path)


def test_owner_tokens_that_collide_still_keep_users_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner token only narrows the keyword search: with every user given the same
    token, each still finds only their own and shared entries."""
    from memorybank.stores.sqlite import _sync as sqlite_module

    monkeypatch.setattr(sqlite_module._base, "scope_token", lambda tenant, user: "u7")
    monkeypatch.setattr(sqlite_module._search, "scope_token", lambda tenant, user: "u7")
    # appends
    monkeypatch.setattr(sqlite_module._entries, "owner_token", lambda tenant, user: "u7")
    with Memory(SQLiteStore(tmp_path / "c.db")) as memory:
        for user in ("alice", "bob"):
            thread = memory.threads.create(user_id=user)
            memory.remember(thread.id, "user", f"the walrus of {user}", user_id=user)
        found = memory.search("walrus", user_id="alice", mode="keyword")
        assert [hit.content for hit in found] == ["the walrus of alice"]
        found = memory.search("walrus", user_id="bob", mode="keyword")
        assert [hit.content for hit in found] == ["the walrus of bob"]


def test_appends_write_the_owner_token_and_indexing_fills_the_rest(tmp_path: Path) -> None:
    """An append stores its thread owner's ``fts_scope`` token itself; rows written
    without one (a fork's copies) get the same token when indexed, so every row,
    and the keyword index, carries the token of its thread's owner."""
    from memorybank.stores.sqlite import _sync as sqlite_module

    path = tmp_path / "s.db"
    with Memory(SQLiteStore(path)) as memory:
        threads = {}
        for user in ("alice", "bob", None):
            thread = memory.threads.create(user_id=user)
            threads[thread.id] = user
            memory.remember(thread.id, "user", f"the heron of {user}", user_id=user)
        token = {t: sqlite_module.scope_token("default", u) for t, u in threads.items()}
        conn = sqlite3.connect(path)
        appended = conn.execute("SELECT thread_id, fts_scope FROM memorybank_entries").fetchall()
        assert dict(appended) == token
        for user in ("alice", "bob"):
            found = memory.search("heron", user_id=user, mode="keyword")
            assert sorted(str(h.entry.content) for h in found if h.entry is not None) == sorted(
                [f"the heron of {user}", "the heron of None"]
            )
        for thread_id, user in threads.items():
            memory.branches.create(thread_id, "fork", user_id=user)  # copies, no token
        missing = "SELECT COUNT(*) FROM memorybank_entries WHERE fts_scope IS NULL"
        assert conn.execute(missing).fetchone() == (3,)
        memory.search("heron", mode="keyword")  # indexes the copies first
        rows = conn.execute("SELECT rowid, thread_id, fts_scope FROM memorybank_entries").fetchall()
        assert len(rows) == 6 and all(s == token[t] for _, t, s in rows)
        for thread_id, scope in token.items():
            indexed = conn.execute(
                "SELECT rowid FROM memorybank_entries_fts WHERE memorybank_entries_fts"
                " MATCH ? ORDER BY rowid",
                (f"heron AND fts_scope : {scope}",),
            ).fetchall()
            assert indexed == sorted((r,) for r, t, _ in rows if t == thread_id)
        conn.close()


def test_remembered_datetimes_equal_exact_conversions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored microseconds convert to the exact UTC datetime, the first time and when
    remembered, also once the bounded memory of conversions was emptied."""
    import random
    from datetime import UTC, datetime, timedelta, timezone

    from memorybank.stores.sql import common as _sql

    monkeypatch.setattr(_sql, "_DATETIMES", {})
    monkeypatch.setattr(_sql, "_DATETIMES_MAX", 64)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    rng = random.Random(3)
    values = [0, 1, 999_999, 1_000_000, _sql._FAST_LIMIT_US - 1, _sql._FAST_LIMIT_US]
    values += [rng.randrange(0, 2 * _sql._FAST_LIMIT_US) for _ in range(300)]
    for _ in range(3):
        for value in rng.sample(values, len(values)):
            got = _sql.from_us(value)
            assert got == epoch + timedelta(microseconds=value)
            assert got.tzinfo is UTC
            assert len(_sql._DATETIMES) <= 64
    assert _sql._DATETIMES
    for value, remembered in _sql._DATETIMES.items():
        assert remembered == epoch + timedelta(microseconds=value)
    aware = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    passed = _sql.from_us(aware.astimezone(timezone(timedelta(hours=2))))
    assert passed == aware and passed.tzinfo is UTC  # a datetime passes through as UTC
