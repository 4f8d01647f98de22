"""The SQLite records' keyword index holds the records with content, and only them.

Usage notes (``memory_usage``) and other records without content stay out of it since
schema 13: the checks compare the index with one built afresh from the records with
content (the same terms, rows and bm25 scores), so an index 'delete' given for a row it
does not hold, or one missing, shows.
"""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memorybank.stores import SQLiteStore
from memorybank.stores.contract._sync.store import Record
from memorybank.stores.contract.types import SearchHit
from memorybank.stores.sqlite import _sync as sqlite_module
from memorybank.stores.sqlite._sync import _base

NOW = datetime(2026, 12, 1, tzinfo=UTC)
QUERY = "walrus tusk narwhal"


def _record(kind: str, record_id: str, content: str, user: str | None = "alice") -> Record:
    return Record(kind, record_id, "a1", user, content, {"n": 1}, NOW, NOW)


def _notes(ids: range, user: str | None = "alice") -> list[Record]:
    return [_record("memory_usage", f"u{i}", "", user) for i in ids]


def _search(store: SQLiteStore, kinds: tuple[str, ...] = ("fact",)) -> list[SearchHit]:
    return store.text_search("default", QUERY, kinds=list(kinds), k=100)


def _ids(hits: list[SearchHit]) -> list[str]:
    return [hit.id for hit in hits]


def _indexed(conn: sqlite3.Connection, schema: str, table: str) -> tuple[object, ...]:
    """The index ``schema.table`` as FTS5 reads it: its terms (rows, occurrences) and
    the bm25 scores of a search (which use its row count and mean length)."""
    vocab = f"vocab_{schema}"
    conn.execute(f"CREATE VIRTUAL TABLE temp.{vocab} USING fts5vocab({schema}, {table}, row)")
    terms = conn.execute(f"SELECT term, doc, cnt FROM temp.{vocab} ORDER BY term").fetchall()
    words = " OR ".join(f'"{w}"' for w in QUERY.split())
    scores = conn.execute(
        f"SELECT rowid, bm25({table}) FROM {schema}.{table} WHERE {table} MATCH ? ORDER BY rowid",
        (words,),
    ).fetchall()
    return terms, scores


def _index_is_exact(path: Path) -> int:
    """The records' index equals one built from the records with content; how many rows
    it holds. FTS5's own check runs first."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "INSERT INTO memorybank_records_fts (memorybank_records_fts) VALUES ('integrity-check')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE temp.fresh USING fts5(content,"
            " tokenize='porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "INSERT INTO temp.fresh (rowid, content)"
            " SELECT rowid, content FROM memorybank_records WHERE content <> ''"
        )
        held = {
            row[0]
            for row in conn.execute(
                "SELECT id FROM memorybank_records_fts_docsize ORDER BY id"
            ).fetchall()
        }
        wanted = {
            row[0]
            for row in conn.execute(
                "SELECT rowid FROM memorybank_records WHERE content <> ''"
            ).fetchall()
        }
        assert held == wanted
        assert _indexed(conn, "main", "memorybank_records_fts") == _indexed(conn, "temp", "fresh")
        return len(held)


def test_migration_13_drops_usage_notes_from_the_keyword_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written with schema 12 (every record indexed, usage notes too) migrates:
    the index then holds the records with content only, searches find the same
    records, and updates and deletes keep the index exact."""
    path = tmp_path / "v12.db"
    every = sqlite_module.migrations
    monkeypatch.setattr(_base, "migrations", lambda p: every(p)[:12])
    store = SQLiteStore(path)
    facts = [
        _record("fact", "f1", "the walrus has a tusk"),
        _record("fact", "f2", "walrus"),
        _record("fact", "f3", "a narwhal tusk is a long tooth, and a walrus tusk is not"),
        _record("fact", "f4", "ice floes", user="bob"),
        _record("fact", "f5", "walrus walrus narwhal"),
    ]
    floes = [_record("fact", f"g{i}", f"ice floe number {i}") for i in range(20)]
    store.record_put("default", [*facts, *floes, *_notes(range(40))])
    store.record_put("default", _notes(range(30, 60)))  # upserts and inserts
    store.record_put("default", [_record("fact", "f2", "a walrus sleeps")])
    assert store.record_delete("default", "memory_usage", ["u3", "u50"]) == 2
    assert store.record_delete("default", "fact", ["f5"]) == 1
    before = _search(store)
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT MAX(version) FROM memorybank_schema_version").fetchone() == (
            12,
        )
        # schema 12 indexed every record: 24 facts and 58 notes
        assert conn.execute("SELECT COUNT(*) FROM memorybank_records_fts_docsize").fetchone() == (
            82,
        )
    monkeypatch.undo()

    store = SQLiteStore(path)
    after = _search(store)  # opens the file: the migration runs
    # the same records; their order is bm25's over the records with content: the notes
    # no longer shrink the mean length that demoted the long f3
    assert sorted(_ids(after)) == sorted(_ids(before)) == ["f1", "f2", "f3"]
    assert _ids(after) == ["f3", "f1", "f2"]
    assert _index_is_exact(path) == 24
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT MAX(version) FROM memorybank_schema_version").fetchone() == (
            len(every("memorybank_")),
        )

    # a note that gets content is indexed, and leaves the index when it loses it
    store.record_put("default", [_record("memory_usage", "u7", "a narwhal tusk")])
    assert "u7" in _ids(_search(store, ("fact", "memory_usage")))
    assert _index_is_exact(path) == 25
    store.record_put("default", [_record("memory_usage", "u7", "")])
    assert _ids(_search(store, ("fact", "memory_usage"))) == _ids(after)
    assert _index_is_exact(path) == 24
    # a fact whose content changes, and one rewritten as it was
    store.record_put("default", [_record("fact", "f1", "the narwhal"), facts[2]])
    assert _ids(_search(store)) == ["f3", "f1", "f2"]
    assert _index_is_exact(path) == 24
    # deletes of notes never indexed (written before the migration, and after it)
    store.record_put("default", _notes(range(60, 80)))
    assert store.record_delete("default", "memory_usage", ["u0", "u7", "u61", "u79"]) == 4
    assert _index_is_exact(path) == 24
    assert store.record_delete("default", "fact", ["f2", "f4"]) == 2
    store.record_put("default", _notes(range(80, 90)))  # rowids freed by the deletes
    assert _ids(_search(store)) == ["f3", "f1"]
    assert _index_is_exact(path) == 22
    store.close()


def test_a_records_keyword_score_does_not_move_with_usage_notes(tmp_path: Path) -> None:
    """bm25's row count and mean length are the records with content: a fact scores the
    same before and after thousands of usage notes (once, their empty rows counted)."""
    store = SQLiteStore(tmp_path / "s.db")
    store.record_put(
        "default",
        [
            _record("fact", "f1", "the walrus has a tusk"),
            _record("fact", "f2", "a narwhal"),
            _record("fact", "f3", "ice floes and a walrus tusk and more ice"),
        ],
    )
    first = [(hit.id, hit.score) for hit in _search(store)]
    store.record_put("default", _notes(range(2000)))
    store.record_put("default", _notes(range(1000, 3000)))
    assert [(hit.id, hit.score) for hit in _search(store)] == first
    assert _index_is_exact(tmp_path / "s.db") == 3
    store.close()
