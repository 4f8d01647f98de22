"""A user-scoped read of the change feed reads that user's events, not the tenant's.

``events_user`` (tenant, user, seq) is the index a user-scoped ``memory.events.list``
reads by, on SQLite (``EXPLAIN QUERY PLAN``) and PostgreSQL (``EXPLAIN``, after
``ANALYZE``, with the tenant's events mostly other users'); a database whose feed was
on before the index existed gets it when opened (the schema's last migration). And a
user-scoped list returns exactly that user's events, in order, page by page.

On SQLite the index holds a tenant's events up to a mark (``events_ranges.listed``): an
append writes none of it, a user-scoped read (or a prune) moves the mark to the newest
event first, and a reader that cannot write (a read-only file) reads the events above
the mark from the tenant's. (A SQLite file of schema 11: ``test_feed_migration.py``.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memorybank.memory._sync.memory import Memory
from memorybank.stores.contract.types import UNSET
from memorybank.stores.sql.events import events_list_query, sqlite_list_query
from memorybank.stores.sqlite._sync._events import LIST_BATCH
from tests.reliability._harness import StoreSpec, provide, store_params
from tests.reliability.test_sqlite_faults import _read_only

#: Other users' events around the one user's: enough that a read of the tenant's
#: events after the cursor would be the costlier plan.
OTHERS = 30
ROUNDS = 20


@pytest.fixture(params=store_params(("sqlite-normal", "postgres")))
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


def _fill(memory: Memory) -> list[tuple[str, str | None, str | None]]:
    """Events of ``OTHERS`` users and of ``alice``, interleaved; alice's, as (kind,
    thread, item), in the order written."""
    memory.events.enable()
    mine = memory.threads.create(user_id="alice")
    theirs = [memory.threads.create(user_id=f"u{i}") for i in range(OTHERS)]
    shared = memory.threads.create()
    expected: list[tuple[str, str | None, str | None]] = [("thread.created", mine.id, None)]
    for round_ in range(ROUNDS):
        for thread in theirs:
            memory.entries.add(thread.id, {"role": "user", "content": f"x{round_}"})
        memory.entries.add(shared.id, {"role": "user", "content": "shared"})
        entry = memory.entries.add(mine.id, {"role": "user", "content": f"mine {round_}"})
        expected.append(("entry.added", mine.id, entry.id))
    fact = memory.facts.add(content="alice likes tea", user_id="alice")
    expected.append(("fact.added", None, fact.id))
    return expected


def test_a_user_scoped_list_returns_that_users_events_in_order(spec: StoreSpec) -> None:
    with spec.memory() as memory:
        expected = _fill(memory)
        alice = memory.scoped(user_id="alice")
        seen = []
        after = None
        while page := alice.events.list(after=after, limit=7):
            seen.extend(page)
            after = page[-1].cursor
        assert [(e.kind, e.thread_id, e.item_id) for e in seen] == expected
        assert {e.user_id for e in seen} == {"alice"}
        numbers = [int(e.cursor) for e in seen]
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
        # the tenant's feed holds the others' events between alice's
        assert len(memory.events.list(limit=1000)) > len(seen) + OTHERS * ROUNDS


def _user_query(prefix: str, mark: str) -> tuple[str, list[Any]]:
    return events_list_query(
        prefix, mark, "default", 0, kinds=None, user_id="alice", agent_id=UNSET, limit=100
    )


def _sqlite_plan(path: str, prefix: str) -> str:
    # SQLiteStore.events_list's read of a user's events up to the tenant's mark
    with sqlite3.connect(path) as conn:
        base, mark = conn.execute(
            f"SELECT base, listed FROM {prefix}events_ranges WHERE tenant_id = 'default'"
        ).fetchone()
        sql, params = sqlite_list_query(
            prefix, "default", base, 0, mark + 1, kinds=None, user_id="alice",
            agent_id=UNSET, limit=100, listed=True,
        )  # fmt: skip
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    return " | ".join(str(row[-1]) for row in rows)


def _postgres_plan(spec: StoreSpec) -> str:
    sql, params = _user_query(spec.prefix, "%s")
    with psycopg.connect(spec.target, autocommit=True) as conn:
        conn.execute(f"ANALYZE {spec.prefix}events")
        rows = conn.execute(f"EXPLAIN {sql}", params).fetchall()
    return " | ".join(str(row[0]) for row in rows)


def _plan(spec: StoreSpec) -> str:
    if spec.kind == "sqlite":
        return _sqlite_plan(spec.target, spec.prefix)
    return _postgres_plan(spec)


def test_a_user_scoped_list_reads_by_the_users_index(spec: StoreSpec) -> None:
    with spec.memory() as memory:
        _fill(memory)
    plan = _plan(spec)
    assert f"{spec.prefix}events_user" in plan, plan
    if spec.kind == "sqlite":
        assert "(user_id=? AND rowid>? AND rowid<?)" in plan, plan
        assert "TEMP B-TREE" not in plan, plan  # read in order: no sort


def _drop_index_and_step_back(spec: StoreSpec) -> None:
    """Leave the database as the schema before ``events_user`` left a feed that was on."""
    index, version = f"{spec.prefix}events_user", f"{spec.prefix}schema_version"
    with psycopg.connect(spec.target, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {index}")
        conn.execute(f"UPDATE {version} SET version = version - 1")


def test_a_feed_from_before_the_index_gets_it_when_opened(spec: StoreSpec) -> None:
    if spec.kind == "sqlite":
        pytest.skip("SQLite files of schema 10 and 11: test_feed_migration.py")
    with spec.memory() as memory:
        expected = _fill(memory)
    _drop_index_and_step_back(spec)
    assert f"{spec.prefix}events_user" not in _plan(spec)
    with spec.memory() as memory:  # opening migrates
        seen = memory.scoped(user_id="alice").events.list(limit=1000)
        assert [(e.kind, e.thread_id, e.item_id) for e in seen] == expected
    assert f"{spec.prefix}events_user" in _plan(spec)


def _listed(path: str, prefix: str) -> tuple[int, int, int]:
    """The tenant's mark, its newest event's number, and how many of alice's events are
    in the user index."""
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            f"SELECT r.listed, (SELECT MAX(pos) FROM {prefix}events) - r.base,"
            f" (SELECT COUNT(*) FROM {prefix}events WHERE user_id = 'alice' AND listed = 1)"
            f" FROM {prefix}events_ranges r WHERE r.tenant_id = 'default'"
        ).fetchone()
    return row[0], row[1], row[2]


@pytest.fixture
def sqlite_spec(tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide("sqlite-normal", tmp_path)


def test_an_append_writes_no_index_entry_until_a_user_reads(sqlite_spec: StoreSpec) -> None:
    """Appends to a user's thread leave the user index as it was; a user-scoped read
    reads up to ``LIST_BATCH`` of them from the tenant's events, and marks them once
    there are more; a reader of a read-only file, which cannot, still reads them all."""
    spec = sqlite_spec
    with spec.memory() as memory:
        expected = _fill(memory)
        memory.events.prune()  # a prune marks the events
        mark, newest, marked = _listed(spec.target, spec.prefix)
        assert mark == newest and marked == len(expected)
        thread = next(t for t in memory.threads.list(user_id="alice"))

        def append(count: int) -> None:
            items = [{"role": "user", "content": f"late {i}"} for i in range(count)]
            for entry in memory.entries.add_many(thread.id, items):
                expected.append(("entry.added", thread.id, entry.id))

        append(LIST_BATCH)
        alice = memory.scoped(user_id="alice")
        assert [(e.kind, e.item_id) for e in alice.events.list(limit=1000)] == [
            (k, i) for k, _, i in expected
        ]
        assert _listed(spec.target, spec.prefix) == (mark, newest + LIST_BATCH, marked)
        append(1)
    with _read_only(Path(spec.target).parent), spec.memory() as memory:
        alice = memory.scoped(user_id="alice")
        seen, after = [], None
        while page := alice.events.list(after=after, limit=100):  # across the mark
            seen.extend(page)
            after = page[-1].cursor
        assert [(e.kind, e.thread_id, e.item_id) for e in seen] == expected
    top = newest + LIST_BATCH + 1
    assert _listed(spec.target, spec.prefix) == (mark, top, marked)
    with spec.memory() as memory:
        tail = memory.scoped(user_id="alice").events.list(after=str(newest), limit=1000)
        assert [(e.kind, e.item_id) for e in tail] == [
            (k, i) for k, _, i in expected[-(LIST_BATCH + 1) :]
        ]
    assert _listed(spec.target, spec.prefix) == (top, top, marked + LIST_BATCH + 1)
