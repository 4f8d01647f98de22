"""Every hot PostgreSQL statement filters on the tenant first (the distribution column).

The statements are the ones the store really sends: each hot call runs once with
the store's ``_rows`` wrapped to record (statement, parameters), then each recorded
statement is planned with ``EXPLAIN (FORMAT JSON)`` and the same parameters, on a
schema holding several tenants' data (analysed). Sequential scans are switched off
for the planning session, so the plan shows how the statement *can* reach its rows;
the assertion is that every scan of a memorybank table goes through an index whose
leading column is ``tenant_id`` with the tenant in its index condition, or (the
full-text GIN index, which cannot lead with a btree column) applies the tenant
filter on that same scan. This is what lets a Citus-style distribution by
``tenant_id`` route each statement to one shard (docs/postgres.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract._async.store import UNSET, VectorItem, Visibility
from memorybank.stores.contract.types import Record
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.vectors.exact import VectorScope
from tests.stores import _postgres
from tests.stores.test_contract_postgres import URL

pytestmark = pytest.mark.server

Captured = list[tuple[str, Any]]

prefix = _postgres.prefix  # the fixture: a fresh table prefix, dropped afterwards


@pytest.fixture
async def loaded(prefix: str) -> AsyncIterator[tuple[AsyncPostgresStore, AsyncMemory, str]]:
    """A store with three tenants' threads, entries, facts, documents and vectors."""
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2)
    root = AsyncMemory(store)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    thread_id = ""
    for tenant in ("acme", "globex", "initech"):
        memory = root.tenant(tenant)
        for t in range(4):
            tid = (await memory.threads.create(user_id=f"u{t % 2}")).id
            await memory.entries.add_many(
                tid,
                [{"role": "user", "content": f"note {i} about the invoice {t}"} for i in range(60)],
            )
            if tenant == "acme" and t == 0:
                thread_id = tid
            entries = await memory.entries.list(tid, limit=30)
            await store.vector_put(
                tenant,
                [
                    VectorItem("entry", e.id, "m3", [1.0, float(i % 7), 0.5], tid)
                    for i, e in enumerate(entries)
                ],
            )
        await store.record_put(
            tenant,
            [
                Record(
                    kind="fact",
                    id=f"{tenant}-f{i}",
                    agent_id=None,
                    user_id=f"u{i % 3}",
                    content=f"the customer prefers invoice number {i}",
                    data={},
                    created_at=now + timedelta(seconds=i),
                    updated_at=now + timedelta(seconds=i),
                    key=f"k{i}" if i % 5 == 0 else None,
                )
                for i in range(80)
            ],
        )
    with psycopg.connect(URL, autocommit=True) as conn:
        for table in ("threads", "branches", "entries", "records", "vectors"):
            conn.execute(f"ANALYZE {prefix}{table}")
    yield store, root.tenant("acme"), thread_id
    await store.close()


def _capture(store: AsyncPostgresStore) -> Captured:
    """Record every statement the store sends from now on."""
    captured: Captured = []
    run = store._rows

    async def rows(conn: Any, query: str, params: Any) -> list[tuple[Any, ...]]:
        captured.append((query, params))
        return await run(conn, query, params)

    store._rows = rows  # type: ignore[method-assign]
    return captured


def _first_columns(prefix: str) -> dict[str, str]:
    """Index name -> its leading column, for the prefix's tables."""
    with psycopg.connect(URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT i.relname, coalesce(a.attname, '(expression)') FROM pg_index x"
            " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
            " LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]"
            " WHERE t.relname LIKE %s",
            (prefix.replace("_", r"\_") + "%",),
        ).fetchall()
    return dict(rows)


def _plan(query: str, params: Any) -> dict[str, Any]:
    with psycopg.connect(URL) as conn:
        conn.execute("SET enable_seqscan = off")
        row = conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()
        conn.rollback()
    assert row is not None
    plan = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return plan[0]["Plan"]  # type: ignore[no-any-return]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def _tenant_first(plan: dict[str, Any], prefix: str, leading: dict[str, str]) -> list[str]:
    """The scans of memorybank tables in ``plan``; fails on one not led by the tenant."""
    scans: list[str] = []
    for node in _nodes(plan):
        relation = node.get("Relation Name", "")
        kind = node["Node Type"]
        if not relation.startswith(prefix) or kind == "ModifyTable":
            continue
        assert kind != "Seq Scan", f"sequential scan of {relation}"
        if kind in ("Index Scan", "Index Only Scan"):
            index = node["Index Name"]
            assert leading[index] == "tenant_id", (relation, index, leading[index])
            assert "tenant_id" in node.get("Index Cond", ""), node
            scans.append(index)
            continue
        assert kind == "Bitmap Heap Scan", node
        bitmaps = [n for n in _nodes(node) if n["Node Type"] == "Bitmap Index Scan"]
        led = [
            n
            for n in bitmaps
            if leading[n["Index Name"]] == "tenant_id" and "tenant_id" in n.get("Index Cond", "")
        ]
        if led:
            scans.extend(n["Index Name"] for n in led)
            continue
        # the full-text GIN index (``search`` alone): the tenant filter is on this scan
        assert all(leading[n["Index Name"]] == "search" for n in bitmaps), node
        assert "tenant_id = " in node.get("Filter", ""), node
        scans.extend(f"{n['Index Name']} + tenant filter" for n in bitmaps)
    return scans


async def test_every_hot_statement_filters_on_the_tenant_first(
    loaded: tuple[AsyncPostgresStore, AsyncMemory, str], prefix: str
) -> None:
    store, memory, thread_id = loaded
    leading = _first_columns(prefix)
    hot: dict[str, Captured] = {}

    async def record(name: str, call: Any) -> None:
        captured = _capture(store)
        await call
        store._rows = type(store)._rows  # type: ignore[method-assign]
        assert captured, name
        hot[name] = captured

    fact_ids = [f"acme-f{i}" for i in range(10)]
    scope = Visibility(agent_id=None, user_id="u1")
    await record("append", memory.remember(thread_id, "user", "one more note"))
    await record(
        "append (idempotency key)",
        memory.entries.add(thread_id, {"role": "user", "content": "keyed"}, idempotency_key="k1"),
    )
    await record("last 20", memory.history(thread_id, last=20))
    await record(
        "keyword search",
        store.text_search("acme", "invoice note", kinds=["entry", "fact"], k=10, visible_to=scope),
    )
    await record(
        "keyword search (thread)",
        store.text_search("acme", "invoice", kinds=["entry"], k=10, thread_id=thread_id),
    )
    await record(
        "vector search",
        store.vector_search(
            "acme", [1.0, 2.0, 0.5], model_id="m3", kinds=["entry"], k=5, visible_to=scope
        ),
    )
    await record(
        "vector search (thread)",
        store.vector_search(
            "acme", [1.0, 2.0, 0.5], model_id="m3", kinds=["entry"], k=5, thread_id=thread_id
        ),
    )
    await record("record get", store.record_get("acme", "fact", "acme-f3"))
    await record("record get many", store.record_get_many("acme", "fact", fact_ids))
    await record("record list", store.record_list("acme", "fact", visible_to=scope, limit=20))
    await record("record list by key", store.record_list("acme", "fact", key="k5"))
    await record("record keys", store.record_list_keys("acme", "fact", ["k0", "k10"]))
    await record("record page", store.record_page("acme", "fact", limit=20, visible_to=scope))
    await record("facts list", memory.facts.list(user_id="u1"))
    await record("thread list", memory.threads.list(user_id="u1"))
    # one round trip each: an append (keyed or not) and "last 20" are one statement
    for name in ("append", "append (idempotency key)", "last 20"):
        assert len(hot[name]) == 1, (name, hot[name])
    covered: dict[str, list[str]] = {}
    for name, statements in hot.items():
        for query, params in statements:
            scans = _tenant_first(_plan(query, params), prefix, leading)
            assert scans, (name, query)  # every hot statement reads at least one table
            covered.setdefault(name, []).extend(scans)
    # the indexes the hot paths rely on are the ones planned
    assert any(s.startswith(f"{prefix}entries_") for s in covered["last 20"])
    assert f"{prefix}threads_pkey" in covered["append"] + covered["last 20"]
    assert any(s.startswith(f"{prefix}records_") for s in covered["facts list"])
    assert any(s.startswith(f"{prefix}vectors_") for s in covered["vector search"])


async def test_entries_by_ids_use_the_id_index_on_a_never_analyzed_table(prefix: str) -> None:
    """Before statistics exist the id index (tenant, thread, branch, id) and the primary
    key (tenant, thread, branch, position) cost the same for "id = x" in a generic plan;
    the batch read must still probe the id index per id, not read the branch per id
    (10,000 entries: the primary key was chosen, 0.7 s per call)."""
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        memory = AsyncMemory(store)
        tid = (await memory.threads.create()).id
        await memory.entries.add_many(
            tid, [{"role": "user", "content": f"note {i}"} for i in range(10000)]
        )
        wanted = [e.id for e in await memory.entries.list(tid, limit=5)]
        got = await store.entry_get_many(memory.tenant_id, tid, [*wanted, "missing"])
        assert list(got) == wanted
        _never_analyzed(prefix, "entries")
        with psycopg.connect(URL, autocommit=True) as conn:
            # the generic plan a prepared statement (psycopg prepares repeated ones) ends with
            statement = store._sql.entry_get_many
            for n, name in enumerate(("ids", "tenant", "thread", "branch"), 1):
                statement = statement.replace(f"%({name})s", f"${n}")
            conn.execute(f"PREPARE batch (text[], text, text, text) AS {statement}")
            conn.execute("SET plan_cache_mode = force_generic_plan")
            explain = sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE batch ({}, {}, {}, NULL)")
            values = (sql.Literal(v) for v in (wanted, memory.tenant_id, tid))
            plan = conn.execute(explain.format(*values)).fetchone()
        text = json.dumps(plan)
        assert f'"{prefix}entries_id"' in text
        assert f'"{prefix}entries_pkey"' not in text
    finally:
        await store.close()


def _generic_plan(statement: str, values: dict[str, tuple[str, Any]]) -> str:
    """The JSON of the generic plan ``statement`` (named ``%(name)s`` parameters: name ->
    (type, value)) gets as a prepared statement (psycopg prepares repeated ones), run."""
    names: list[str] = []
    for name in re.findall(r"%\((\w+)\)s", statement):
        if name not in names:
            names.append(name)
    assert sorted(names) == sorted(values), (names, values)
    for n, name in enumerate(names, 1):
        statement = statement.replace(f"%({name})s", f"${n}")
    types = ", ".join(values[name][0] for name in names)
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"PREPARE probe ({types}) AS {statement}")
        conn.execute("SET plan_cache_mode = force_generic_plan")
        explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE probe ({})").format(
            sql.SQL(", ").join(sql.Literal(values[name][1]) for name in names)
        )
        row = conn.execute(explain).fetchone()
    assert row is not None
    return json.dumps(row[0])


def _never_analyzed(prefix: str, table: str) -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        analyzed = conn.execute(
            "SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE relname = %s",
            (f"{prefix}{table}",),
        ).fetchone()
    if analyzed is not None and any(analyzed):
        pytest.skip("autovacuum analysed the table already")


async def test_records_by_ids_descend_the_primary_key_on_a_never_analyzed_table(
    prefix: str,
) -> None:
    """Before statistics exist "kind = k AND id = i" costs the same on the primary key
    (tenant, kind, id) as on records_user (tenant, kind, user_id, created_at, id), and
    the planner took records_user: every record of the kind read per id (20,000
    documents: about 1 ms per id, build_context's document block 20 ms). Reads by id
    (record_get, record_get_many, the vector cache's confirmation of documents) must
    touch a few index pages per id."""
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        now = datetime(2026, 1, 1, tzinfo=UTC)
        count = 20_000
        for start in range(0, count, 5_000):
            await store.record_put(
                "acme",
                [
                    Record(
                        "document",
                        f"d{i:06d}",
                        None,
                        "u1" if i % 2 else None,
                        f"text {i}",
                        {},
                        now,
                        now,
                    )
                    for i in range(start, start + 5_000)
                ],
            )
        await store.vector_put(
            "acme",
            [
                VectorItem("document", f"d{i:06d}", "m3", [1.0, float(i % 7), 0.5])
                for i in range(count)
            ],
        )
        wanted = [f"d{i:06d}" for i in range(count - 20, count)]  # the kind's last ids
        got = await store.record_get_many("acme", "document", [*wanted, "missing"])
        assert list(got) == wanted
        assert (await store.record_get("acme", "document", wanted[-1])) is not None
        scope = Visibility("agent", "u1")
        _, confirmed = await store._vc_check(
            VectorScope("acme", "m3", None, scope), [], {"document": [(i, None) for i in wanted]}, 3
        )
        assert confirmed == {("document", i) for i in wanted}
        _never_analyzed(prefix, "records")
        captured = _capture(store)
        await store._vc_check(
            VectorScope("acme", "m3", None, scope), [], {"document": [(i, None) for i in wanted]}, 3
        )
        check, params = captured[-1]
        one = {"tenant": ("text", "acme"), "kind": ("text", "document")}
        types = {"tenant": "text", "model": "text", "dim": "smallint", "rkinds": "text[]"}
        types |= {"rids": "text[]", "v_agent_id": "text", "v_user_id": "text"}
        plans = {  # (record_get is record_get_many of one id)
            "record_get_many": _generic_plan(
                store._sql.record_get_many, one | {"ids": ("text[]", wanted)}
            ),
            "vector check": _generic_plan(
                check, {name: (kind, params[name]) for name, kind in types.items()}
            ),
        }
    finally:
        await store.close()
    for name, text in plans.items():
        assert f'"{prefix}records_pkey"' in text, name
        assert f'"{prefix}records_user"' not in text, name
        assert f'"{prefix}records_created"' not in text, name
        plan = json.loads(text)[0]
        # a few pages per id (the old plan read every record of the kind: thousands)
        pages = plan["Plan"].get("Shared Hit Blocks", 0) + plan["Plan"].get("Shared Read Blocks", 0)
        assert pages <= 20 * len(wanted), (name, pages)


# Keyword-search scopes with no thread: (scope, the (agent_id, user_id) of the 4 threads
# it sees, of the 40 it does not (by thread number)).
_SCOPES: dict[str, tuple[Visibility, tuple[str | None, str | None], Any]] = {
    "one user": (Visibility("agent", "u1"), ("agent", "u1"), lambda t: ("agent", f"o{t % 10}")),
    "one agent": (Visibility("a1", UNSET), ("a1", "u1"), lambda t: (f"a{t % 10 + 2}", "u1")),
    "agent-shared only": (Visibility(None, UNSET), (None, "u1"), lambda t: (f"a{t % 10}", "u1")),
    "user-shared only": (Visibility(UNSET, None), ("agent", None), lambda t: ("agent", f"u{t}")),
    "shared only": (
        Visibility(None, None),
        (None, None),
        lambda t: (None, f"u{t}") if t % 2 else (f"a{t}", None),
    ),
    "one agent, user-shared": (
        Visibility("a1", None),
        ("a1", None),
        lambda t: ("a1", f"u{t}") if t % 2 else (f"a{t}", None),
    ),
}


@pytest.mark.parametrize("analyzed", [True, False], ids=["analyzed", "never analyzed"])
@pytest.mark.parametrize("shape", list(_SCOPES))
async def test_scoped_keyword_search_reads_only_the_matches_in_scope(
    prefix: str, shape: str, analyzed: bool
) -> None:
    """A keyword search with a scope and no thread (one user, one agent, shared-only on
    either axis) must not fetch every match of the tenant from the heap and join them to
    the threads afterwards (1M other entries: 19k rows per query, 40-130 ms), nor read
    every entry of the threads in scope (a generic plan: 10k rows), nor take a words-only
    GIN index and filter the threads after the heap (the planner did, with
    ``entries_search`` still there); ``entries_scoped`` (words and thread in one GIN
    index) leaves only the matches in scope. In the generic and in a custom plan, on
    analysed tables (as the bench's) and on tables never analysed (autovacuum off):
    there, with a long GIN pending list (before schema version 10: up to 4 MB, here
    120 pages), the planner counted the pending pages and read all 11k entries of the
    tenant by a btree (the primary key or ``entries_id``) instead."""
    scope, visible_owner, other_owner = _SCOPES[shape]
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        await store.connect()
        with psycopg.connect(URL, autocommit=True) as conn:
            for table in ("entries", "threads"):
                conn.execute(f"ALTER TABLE {prefix}{table} SET (autovacuum_enabled = off)")
        memory = AsyncMemory(store)
        mine: set[str] = set()
        for t in range(44):
            agent, user = visible_owner if t < 4 else other_owner(t)
            tid = (await memory.threads.create(user_id=user, agent_id=agent)).id
            if t < 4:
                mine.add(tid)
            await memory.entries.add_many(
                tid,
                [
                    {"role": "user", "content": f"invoice {i} note" if i % 5 == 0 else f"n{i}"}
                    for i in range(250)
                ],
            )
        if analyzed:
            with psycopg.connect(URL, autocommit=True) as conn:
                for table in ("entries", "threads"):
                    conn.execute(f"ANALYZE {prefix}{table}")
        else:
            _never_analyzed(prefix, "entries")
        captured = _capture(store)
        hits = await store.text_search(
            "default", "invoice", kinds=["entry"], k=500, visible_to=scope
        )
        assert len(hits) == 4 * 50 and {h.thread_id for h in hits} == mine
        statement, params = captured[-1]
        types = {
            "tenant": "text",
            "q": "text",
            "k": "int",
            "v_agent_id": "text",
            "v_user_id": "text",
        }
        generic = json.loads(
            _generic_plan(statement, {name: (types[name], params[name]) for name in params})
        )
        with psycopg.connect(URL, autocommit=True) as conn:
            conn.execute("SET plan_cache_mode = force_custom_plan")
            custom = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params).fetchone()
        assert custom is not None
        for plan in (generic[0]["Plan"], custom[0][0]["Plan"]):
            scans = [n for n in _nodes(plan) if n.get("Relation Name") == f"{prefix}entries"]
            assert len(scans) == 1, scans
            scan = scans[0]
            assert scan["Node Type"] == "Bitmap Heap Scan", scan
            assert scan["Actual Rows"] * scan["Actual Loops"] == 4 * 50, scan
            assert [n["Index Name"] for n in _nodes(scan) if "Index Name" in n] == [
                f"{prefix}entries_scoped"
            ], scan
    finally:
        await store.close()


def _key_reads_relations(count: int, nodes: int) -> list[Record]:
    """``count`` shared relations between ``nodes`` shared entities, both directions
    stored (``rel_out`` keyed by the source, ``rel_in`` by the target), and the entities."""
    import random

    rng = random.Random(7)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    records = [
        Record("ent", f"n{i:05d}", None, None, f"node {i}", {}, now, now) for i in range(nodes)
    ]
    for i in range(count):
        a, b = f"n{rng.randrange(nodes):05d}", f"n{rng.randrange(nodes):05d}"
        data = {"source_id": a, "target_id": b}
        at = now + timedelta(microseconds=i)
        records.append(Record("rel_out", f"o{i:06d}", None, None, "", data, at, at, key=a))
        records.append(Record("rel_in", f"i{i:06d}", None, None, "", data, at, at, key=b))
    # a user's private relation on the same nodes: in the key index, out of scope
    private = {"source_id": "n00000", "target_id": "n00001"}
    records.append(Record("rel_out", "private", None, "u1", "", private, now, now, key="n00000"))
    return records


@pytest.mark.parametrize("analyzed", [False, True], ids=["never analyzed", "analyzed"])
async def test_shared_key_reads_probe_the_key_index(prefix: str, analyzed: bool) -> None:
    """The graph's key reads (``record_list_keys``, ``_by_kind``, ``_linked``,
    ``record_list_links``) in a shared-only scope read the records of the keys asked
    for through the key index, whatever the statistics say. With the scope in the same
    scan as ``kind = ANY(kinds) AND key = ANY(keys)``, a table never analyzed took
    ``records_user`` (``user_id IS NULL``: every shared relation read per call; 20k
    graph entities, 200k relation records: 35-300 ms per statement) and a generic plan
    (psycopg prepares repeated statements) ``records_owner``: 1-2 s per call."""
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    try:
        await store.connect()
        with psycopg.connect(URL, autocommit=True) as conn:
            conn.execute(f"ALTER TABLE {prefix}records SET (autovacuum_enabled = off)")
        records = _key_reads_relations(20_000, 20_000)
        for start in range(0, len(records), 10_000):
            await store.record_put("acme", records[start : start + 10_000])
        if analyzed:
            with psycopg.connect(URL, autocommit=True) as conn:
                conn.execute(f"ANALYZE {prefix}records")
        else:
            _never_analyzed(prefix, "records")
        shared = Visibility(None, None)
        nodes = [f"n{i:05d}" for i in range(0, 20_000, 250)]  # 80 keys: a level's frontier
        links = {"rel_out": "target_id", "rel_in": "source_id"}
        captured = _capture(store)
        by, near = await store.record_list_keys_linked(
            "acme", links, nodes, "ent", visible_to=shared
        )
        keys = await store.record_list_keys("acme", "rel_out", nodes, visible_to=shared)
        both = await store.record_list_keys_by_kind("acme", list(links), nodes, visible_to=shared)
        closing = await store.record_list_links(
            "acme", "rel_out", nodes, "target_id", nodes, visible_to=shared
        )
        store._rows = type(store)._rows  # type: ignore[method-assign]
    finally:
        await store.close()
    expected_out = sorted(
        (r.created_at, r.id)
        for r in records
        if r.kind == "rel_out" and r.key in nodes and r.user_id is None
    )
    assert [(r.created_at, r.id) for r in by["rel_out"]] == expected_out
    assert [(r.created_at, r.id) for r in keys] == expected_out
    assert both["rel_in"] == by["rel_in"] and both["rel_out"] == keys
    assert set(near) == {r.data["target_id"] for r in keys} | {
        r.data["source_id"] for r in by["rel_in"]
    }
    assert [r.id for r in closing] == [r.id for r in keys if r.data["target_id"] in nodes]
    types = {"tenant": "text", "kinds": "text[]", "fields": "text[]", "keys": "text[]"}
    types |= {"linked": "text", "field": "text", "targets": "text[]"}
    assert len(captured) == 4
    rows = len(expected_out) * 2 + len(near)
    for statement, params in captured:
        values = {name: (types[name], value) for name, value in params.items()}
        generic = _generic_plan(statement, values)
        with psycopg.connect(URL, autocommit=True) as conn:
            custom = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, params
            ).fetchone()
        assert custom is not None
        for text in (generic, json.dumps(custom[0])):
            assert f'"{prefix}records_key"' in text, statement
            for index in ("records_user", "records_owner", "records_created"):
                assert f'"{prefix}{index}"' not in text, (index, statement)
            plan = json.loads(text)[0]["Plan"]
            # a descent per (kind, key) and per far end, a page per row (the old plans
            # read every shared record of the kinds: 40k rows, 40k+ pages)
            pages = plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
            assert pages <= 5 * (2 * len(nodes) + len(near)) + 2 * rows, (pages, statement)
