"""SQLite's in-process vector cache stays exact across connections, deletes and replacements."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem, Visibility
from memorybank.stores.contract.types import Record
from memorybank.stores.sql.common import unit_vector_bytes
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors

from .conftest import HashEmbedder

MODEL = "test:m"


def _thread(store: SQLiteStore, tid: str, user: str | None = None) -> None:
    now = datetime.now(UTC)
    store.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))


def _vec(seed: int, dim: int = 16) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in rng.standard_normal(dim)]


def _ids(store: SQLiteStore, vec: list[float], **kw: object) -> list[str]:
    hits = store.vector_search("t", vec, model_id=MODEL, kinds=["entry"], k=5, **kw)  # type: ignore[arg-type]
    return [h.id for h in hits]


def _alices_threads(store: SQLiteStore, a: int, b: int) -> None:
    """Threads "a" and "b" of alice's, with ``a`` and ``b`` entry vectors ("a0", "b0", ...)."""
    _thread(store, "a", "alice")
    _thread(store, "b", "alice")
    items = [VectorItem("entry", f"a{i}", MODEL, _vec(i), "a") for i in range(a)]
    items += [VectorItem("entry", f"b{i}", MODEL, _vec(i), "b") for i in range(b)]
    store.vector_put("t", items)


def test_two_connections_see_each_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    try:
        _thread(a, "th1")
        a.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, _vec(i), "th1") for i in range(10)])
        assert _ids(b, _vec(3))[0] == "e3"  # b builds its cache
        a.vector_put("t", [VectorItem("entry", "new", MODEL, _vec(100), "th1")])
        assert _ids(b, _vec(100))[0] == "new"  # appended rows are read
        a.vector_put("t", [VectorItem("entry", "e3", MODEL, _vec(200), "th1")])
        assert _ids(b, _vec(200))[0] == "e3"  # a replaced vector is re-read
        assert "e3" not in _ids(b, _vec(3))[:1]
        a.thread_delete("t", "th1")
        assert _ids(b, _vec(100)) == []  # deleted with its thread
        _thread(a, "th1")
        a.vector_put("t", [VectorItem("entry", "again", MODEL, _vec(100), "th1")])
        assert _ids(b, _vec(100)) == ["again"]  # a reused rowid is noticed
    finally:
        a.close()
        b.close()


def test_max_row_deleted_and_rowid_reused(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    try:
        now = datetime.now(UTC)
        docs = [Record("document", f"d{i}", None, None, f"doc {i}", {}, now, now) for i in range(3)]
        a.record_put("t", docs)
        a.vector_put("t", [VectorItem("document", f"d{i}", MODEL, _vec(i)) for i in range(3)])
        hits = b.vector_search("t", _vec(2), model_id=MODEL, kinds=["document"], k=1)
        assert [h.id for h in hits] == ["d2"]
        a.record_delete("t", "document", ["d2"])  # the row with the largest rowid
        a.record_put("t", [Record("document", "d9", None, None, "doc 9", {}, now, now)])
        a.vector_put("t", [VectorItem("document", "d9", MODEL, _vec(9))])  # takes its rowid
        hits = b.vector_search("t", _vec(9), model_id=MODEL, kinds=["document"], k=1)
        assert [h.id for h in hits] == ["d9"]
        hits = b.vector_search("t", _vec(2), model_id=MODEL, kinds=["document"], k=3)
        assert "d2" not in [h.id for h in hits]
    finally:
        a.close()
        b.close()


def test_stale_scope_is_rechecked_in_sql(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    store = SQLiteStore(tmp_path / "v.db")
    try:
        store.record_put("t", [Record("document", "d", None, None, "x", {}, now, now)])
        store.vector_put("t", [VectorItem("document", "d", MODEL, _vec(1))])
        alice = Visibility(None, "alice")
        hits = store.vector_search(
            "t",
            _vec(1),
            model_id=MODEL,
            kinds=["document"],
            k=1,
            visible_to=Visibility(None, "bob"),
        )
        assert [h.id for h in hits] == ["d"]  # shared
        # the owner changes without touching the vector (the cache still says "shared")
        store.record_put("t", [Record("document", "d", None, "alice", "x", {}, now, now)])
        hits = store.vector_search(
            "t",
            _vec(1),
            model_id=MODEL,
            kinds=["document"],
            k=1,
            visible_to=Visibility(None, "bob"),
        )
        assert hits == []
        hits = store.vector_search(
            "t", _vec(1), model_id=MODEL, kinds=["document"], k=1, visible_to=alice
        )
        assert [h.id for h in hits] == ["d"]
    finally:
        store.close()


def test_stale_thread_scope_of_entries_is_rechecked_in_sql(tmp_path: Path) -> None:
    """A thread's search checks the thread's owner and each hit's thread in SQL."""
    import sqlite3

    path = tmp_path / "v.db"
    store = SQLiteStore(path)
    try:
        _alices_threads(store, 30, 30)
        alice, bob = Visibility(None, "alice"), Visibility(None, "bob")
        assert _ids(store, _vec(3), thread_id="a", visible_to=alice)[0] == "a3"
        assert _ids(store, _vec(3), thread_id="a", visible_to=bob) == []
        # another writer gives the thread to bob: the cache still says alice's
        raw = sqlite3.connect(path)
        raw.execute("UPDATE memorybank_threads SET user_id = 'bob' WHERE id = 'a'")
        raw.commit()
        raw.close()
        assert _ids(store, _vec(3), thread_id="a", visible_to=alice) == []
        hits = store.vector_search(
            "t", _vec(3), model_id=MODEL, kinds=["entry"], k=40, thread_id="b"
        )
        assert {h.id for h in hits} == {f"b{i}" for i in range(30)}
        assert _ids(store, _vec(3), thread_id="gone") == []
    finally:
        store.close()


def test_a_user_search_sees_threads_deleted_or_given_away_by_other_writers(
    tmp_path: Path,
) -> None:
    """A user's entry search answers from the cache alone while no thread changed scope;
    a thread deleted (its vectors left behind) or given to another user by another
    writer is counted, and the hits the cache still holds for it are checked in SQL."""
    import sqlite3

    path = tmp_path / "v.db"
    store = SQLiteStore(path)
    try:
        _alices_threads(store, 30, 30)
        alice, bob = Visibility(None, "alice"), Visibility(None, "bob")
        hits = store.vector_search(
            "t", _vec(3), model_id=MODEL, kinds=["entry"], k=80, visible_to=alice
        )
        assert {h.id for h in hits} == {f"{t}{i}" for t in "ab" for i in range(30)}
        assert _ids(store, _vec(3), visible_to=bob) == []
        raw = sqlite3.connect(path)
        raw.execute("DELETE FROM memorybank_threads WHERE id = 'a'")  # vectors stay
        raw.commit()
        hits = store.vector_search(
            "t", _vec(3), model_id=MODEL, kinds=["entry"], k=80, visible_to=alice
        )
        assert {h.id for h in hits} == {f"b{i}" for i in range(30)}
        raw.execute("UPDATE memorybank_threads SET user_id = 'bob' WHERE id = 'b'")
        raw.commit()
        raw.close()
        assert _ids(store, _vec(3), visible_to=alice) == []
        hits = store.vector_search("t", _vec(3), model_id=MODEL, kinds=["entry"], k=80)
        assert {h.id for h in hits} == {f"b{i}" for i in range(30)}
    finally:
        store.close()


def test_a_thread_search_confirms_each_hit_like_a_read_of_its_row(tmp_path: Path) -> None:
    """A thread-scoped entry search confirms its hits in SQL by the rows the cache
    scored: exactly those still a vector of the model in that thread, the thread in
    scope, as a read of each row finds, also when other writers changed them since."""
    import sqlite3

    path = tmp_path / "v.db"
    store = SQLiteStore(path)
    try:
        _alices_threads(store, 30, 5)
        conn = store._connect()
        slot = store._vector_slot(conn, "t", MODEL, "entry", 16)
        query = np.asarray(_vec(3), dtype=np.float32)
        query /= np.linalg.norm(query)
        best = slot.search(query, 30, slot.mask("a", None))
        assert len(best) == 30
        alice, bob = Visibility(None, "alice"), Visibility(None, "bob")

        def per_row(visible_to: Visibility | None) -> set[str]:
            owner = conn.execute("SELECT user_id FROM memorybank_threads WHERE id = 'a'").fetchone()
            if owner is None or (
                visible_to is not None and visible_to.user_id not in (None, owner[0])
            ):
                return set()
            ids = set()
            for i, _ in best:
                row = conn.execute(
                    "SELECT id FROM memorybank_vectors WHERE rowid = ? AND tenant_id = 't'"
                    " AND model_id = ? AND kind = 'entry' AND thread_id = 'a'",
                    (int(slot.rowids[i]), MODEL),
                ).fetchone()
                if row is not None:
                    assert row[0] == slot.ids[i]
                    ids.add(row[0])
            return ids

        def confirmed(visible_to: Visibility | None) -> set[str]:
            return store._vector_confirm(conn, "t", MODEL, "entry", "a", visible_to, slot, best)

        assert confirmed(None) == confirmed(alice) == per_row(alice) == {f"a{i}" for i in range(30)}
        assert confirmed(bob) == per_row(bob) == set()
        # other writers change rows the (now stale) cache scored
        raw = sqlite3.connect(path)
        raw.execute("DELETE FROM memorybank_vectors WHERE id = 'a1'")
        raw.execute("UPDATE memorybank_vectors SET thread_id = 'b' WHERE id = 'a2'")
        raw.commit()
        other = SQLiteStore(path)
        other.vector_put("t", [VectorItem("entry", "a3", MODEL, _vec(300), "a")])  # a new row
        other.close()
        expected = {f"a{i}" for i in range(30)} - {"a1", "a2", "a3"}
        assert confirmed(None) == confirmed(alice) == per_row(alice) == expected
        raw.execute("UPDATE memorybank_threads SET user_id = 'bob' WHERE id = 'a'")
        raw.commit()
        assert confirmed(alice) == per_row(alice) == set()
        assert confirmed(bob) == per_row(bob) == expected
        raw.execute("DELETE FROM memorybank_threads WHERE id = 'a'")
        raw.commit()
        raw.close()
        assert confirmed(None) == per_row(None) == set()
    finally:
        store.close()


def test_a_best_hit_out_of_scope_gives_way_to_the_next(tmp_path: Path) -> None:
    """The best k of the shortlist are checked first; when one fails, the rest are."""
    now = datetime.now(UTC)
    store = SQLiteStore(tmp_path / "v.db")
    try:
        docs = [Record("document", f"d{i}", None, None, "x", {}, now, now) for i in range(8)]
        store.record_put("t", docs)
        store.vector_put("t", [VectorItem("document", f"d{i}", MODEL, _vec(i)) for i in range(8)])
        bob = Visibility(None, "bob")
        query = [x + 0.3 * y for x, y in zip(_vec(3), _vec(5), strict=True)]

        def docs_of(k: int) -> list[str]:
            hits = store.vector_search(
                "t", query, model_id=MODEL, kinds=["document"], k=k, visible_to=bob
            )
            return [h.id for h in hits]

        assert docs_of(2) == ["d3", "d5"]
        every = docs_of(8)
        store.record_put("t", [Record("document", "d3", None, "alice", "x", {}, now, now)])
        assert docs_of(2) == [d for d in every if d != "d3"][:2]
        assert docs_of(7) == [d for d in every if d != "d3"]
    finally:
        store.close()


@pytest.mark.skipif(not _vectors.ann_available(), reason="usearch not installed")
def test_ann_path_matches_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", 100)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", 50)
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", 50)  # scoped searches too
    monkeypatch.setattr(_vectors, "BACKGROUND_BUILD", False)
    store = SQLiteStore(tmp_path / "v.db")
    try:
        _thread(store, "a", "alice")
        _thread(store, "b", "bob")
        items = [VectorItem("entry", f"a{i}", MODEL, _vec(i), "a") for i in range(300)]
        items += [VectorItem("entry", f"b{i}", MODEL, _vec(1000 + i), "b") for i in range(300)]
        store.vector_put("t", items)
        for seed in (5, 17, 1005):
            exact = sorted(
                (
                    (
                        float(
                            np.dot(
                                np.asarray(_vec(seed)) / np.linalg.norm(_vec(seed)),
                                np.frombuffer(unit_vector_bytes(i.vector), "<f4"),
                            )
                        ),
                        i.id,
                    )
                    for i in items
                    if i.thread_id == "a"
                ),
                reverse=True,
            )[:5]
            got = _ids(store, _vec(seed), visible_to=Visibility(None, "alice"))
            assert all(g.startswith("a") for g in got)
            assert len(set(got) & {e[1] for e in exact}) >= 4
    finally:
        store.close()


def test_duplicate_ids_in_one_put(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "v.db")
    try:
        _thread(store, "a")
        store.vector_put("t", [VectorItem("entry", "x", MODEL, _vec(i), "a") for i in range(3)])
        assert _ids(store, _vec(2)) == ["x"]
    finally:
        store.close()


def test_hash_embedder_is_unit_length() -> None:
    vec = HashEmbedder().embed(["hello world"])[0]
    assert abs(sum(x * x for x in vec) - 1) < 1e-9
