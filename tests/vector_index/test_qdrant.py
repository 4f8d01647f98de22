"""QdrantIndex beside every store: the same hits as the store's own search, scope checked twice.

Qdrant runs in qdrant-client's local mode (``QdrantClient(":memory:")``): the
same client code that talks to a Qdrant server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memorybank import Memory, StoreUnavailable
from memorybank.records import Thread
from memorybank.stores import Store
from memorybank.stores.contract.types import UNSET, Record, VectorItem, Visibility
from memorybank.vector_index import QdrantIndex
from memorybank.vector_index._sync.index import indexed as with_index
from memorybank.vector_index.points import SHARED, collection_name, point_id
from tests.all_stores import STORE_KINDS, open_store
from tests.recall.conftest import HashEmbedder

MODEL = "test:qdrant@16"
DIM = 16
OWNERS = [(None, None), ("bot", None), (None, "alice"), ("bot", "alice"), ("other", "bob")]
SCOPES = [
    None,
    Visibility(UNSET, UNSET),
    Visibility(UNSET, "alice"),
    Visibility(UNSET, None),
    Visibility("bot", UNSET),
    Visibility("bot", "alice"),
    Visibility("bot", "bob"),
    Visibility(None, None),
    Visibility("other", "bob"),
]


def _vec(rng: np.random.Generator) -> list[float]:
    return [float(x) for x in rng.standard_normal(DIM)]


@pytest.fixture(params=STORE_KINDS)
def pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Store, Store, QdrantIndex]]:
    """A fresh store of each kind, the same store with a local-mode Qdrant index, the index."""
    with open_store(str(request.param), tmp_path) as store:
        index = QdrantIndex(QdrantClient(":memory:"), collection_prefix="t")
        try:
            yield store, with_index(store, index), index
        finally:
            index.client.close()


def _fill(indexed: Store, tenant: str, seed: int) -> dict[str, str]:
    """Threads, entries, facts and documents of every owner pair; thread id per owner."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    threads: dict[str, str] = {}
    items: list[VectorItem] = []
    records: list[Record] = []
    for n, (agent, user) in enumerate(OWNERS):
        tid = f"th-{n}-{uuid.uuid4().hex[:6]}"
        indexed.thread_create(Thread(tid, tenant, user, agent, None, {}, "active", now, now))
        threads[f"{agent}/{user}"] = tid
        items += [VectorItem("entry", f"e{n}-{i}", MODEL, _vec(rng), tid) for i in range(8)]
        for kind in ("fact", "document"):
            for i in range(5):
                rid = f"{kind}-{n}-{i}"
                records.append(Record(kind, rid, agent, user, f"text {rid}", {}, now, now))
                items.append(VectorItem(kind, rid, MODEL, _vec(rng)))
    indexed.record_put(tenant, records)
    indexed.vector_put(tenant, items)
    return threads


def _same(store_hits: list, index_hits: list) -> None:  # type: ignore[type-arg]
    assert [(h.kind, h.id, h.thread_id) for h in index_hits] == [
        (h.kind, h.id, h.thread_id) for h in store_hits
    ]
    for a, b in zip(store_hits, index_hits, strict=True):
        assert b.score == pytest.approx(a.score, abs=1e-5)


def test_hits_equal_the_stores_own_search_for_every_scope(
    pair: tuple[Store, Store, QdrantIndex],
) -> None:
    store, indexed, _ = pair
    tenant = f"q-{uuid.uuid4().hex[:8]}"
    threads = _fill(indexed, tenant, seed=1)
    _fill(indexed, f"{tenant}-other", seed=2)  # another tenant: never seen
    rng = np.random.default_rng(3)
    for scope in SCOPES:
        for kinds in (["entry"], ["fact"], ["entry", "document"], ["entry", "fact", "document"]):
            query = _vec(rng)
            mine = store.vector_search(
                tenant, query, model_id=MODEL, kinds=kinds, k=7, visible_to=scope
            )
            got = indexed.vector_search(
                tenant, query, model_id=MODEL, kinds=kinds, k=7, visible_to=scope
            )
            assert got, (scope, kinds)
            _same(mine, got)
        tid = threads["bot/alice"]
        query = _vec(rng)
        mine = store.vector_search(
            tenant, query, model_id=MODEL, kinds=["entry", "fact"], k=5, thread_id=tid
        )
        got = indexed.vector_search(
            tenant, query, model_id=MODEL, kinds=["entry", "fact"], k=5, thread_id=tid
        )
        assert {h.thread_id for h in got} == {tid}
        _same(mine, got)
    # another model or dimension is never mixed in
    assert indexed.vector_search(tenant, _vec(rng), model_id="x", kinds=["entry"], k=3) == []
    assert indexed.vector_search(tenant, [1.0, 0.0], model_id=MODEL, kinds=["fact"], k=3) == []


def test_scope_is_filtered_inside_qdrant(pair: tuple[Store, Store, QdrantIndex]) -> None:
    _, indexed, index = pair
    tenant = f"q-{uuid.uuid4().hex[:8]}"
    _fill(indexed, tenant, seed=4)
    query = _vec(np.random.default_rng(5))
    raw = index.search(
        tenant,
        query,
        model_id=MODEL,
        kinds=["entry", "fact", "document"],
        k=200,
        visible_to=Visibility("bot", "alice"),
    )
    assert len(raw) == 4 * (8 + 5 + 5)  # shared, bot's, alice's and bot+alice's: not bob's
    points = index.client.scroll(
        collection_name("t", MODEL, DIM),
        scroll_filter=models.Filter(
            must=[models.FieldCondition(key="tenant", match=models.MatchValue(value=tenant))]
        ),
        limit=1000,
    )[0]
    owners = {(p.payload or {}).get("user_id") for p in points}
    assert owners == {SHARED, "alice", "bob"}


def test_a_wrong_payload_never_leaks_another_users_record(tmp_path: Path) -> None:
    index = QdrantIndex(QdrantClient(":memory:"), collection_prefix="leak")
    store_url = f"sqlite:///{tmp_path / 'leak.db'}"
    with Memory(store_url, embedder=HashEmbedder(), vector_index=index) as memory:
        alice = memory.scoped(user_id="alice", agent_id="bot")
        bob = memory.scoped(user_id="bob", agent_id="bot")
        doc = alice.documents.add("the automobile secret of alice")
        thread = alice.threads.create()
        entry = alice.entries.add(thread.id, {"role": "user", "content": "automobile secret"})
        bob_thread = bob.threads.create()
        # Corrupt the index: alice's points claim to be shared, and her entry bob's.
        name = collection_name("leak", memory.embedder.model_id, 64)  # type: ignore[union-attr]
        tenant = memory.tenant_id
        for kind, rid, tid in (("document", doc.id, None), ("entry", entry.id, bob_thread.id)):
            index.client.set_payload(
                name,
                payload={"user_id": SHARED, "thread_id": tid},
                points=[point_id(tenant, kind, rid)],
                wait=True,
            )
        query = HashEmbedder().embed(["automobile secret"])[0]
        raw = index.search(
            tenant,
            query,
            model_id=memory.embedder.model_id,  # type: ignore[union-attr]
            kinds=["document", "entry"],
            k=10,
            visible_to=Visibility("bot", "bob"),
        )
        assert {h.id for h in raw} == {doc.id, entry.id}  # the index alone would leak
        store_hits = memory.store.vector_search(
            tenant,
            query,
            model_id=memory.embedder.model_id,  # type: ignore[union-attr]
            kinds=["document"],
            k=10,
            visible_to=Visibility("bot", "bob"),
        )
        assert store_hits == []  # the store re-check drops alice's document
        for mode in ("semantic", "hybrid"):
            hits = bob.search("automobile secret", mode=mode, kinds=("entries", "documents"))
            assert "secret" not in repr(hits), mode
        assert [h.id for h in alice.search("automobile", mode="semantic")] != []


def _count(index: QdrantIndex, model_id: str, dim: int, **match: str) -> int:
    must: list[Any] = [
        models.FieldCondition(key=key, match=models.MatchValue(value=value))
        for key, value in match.items()
    ]
    name = collection_name(index.prefix, model_id, dim)
    return index.client.count(name, count_filter=models.Filter(must=must), exact=True).count


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_deletes_and_forget_user_remove_points(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store:
        index = QdrantIndex(":memory:", collection_prefix="del")
        embedder = HashEmbedder()
        model = embedder.model_id
        with Memory(store, embedder=embedder, vector_index=index) as memory:
            root = memory.tenant(f"d-{uuid.uuid4().hex[:8]}")
            tenant = root.tenant_id
            alice = root.scoped(user_id="alice", agent_id="bot")
            bob = root.scoped(user_id="bob", agent_id="bot")
            docs = [alice.documents.add(f"alice doc {i}") for i in range(3)]
            bob_doc = bob.documents.add("bob doc")
            fact = alice.facts.add(content="alice likes tea")
            thread = alice.threads.create()
            alice.entries.add(thread.id, {"role": "user", "content": "hello there"})
            alice.entries.add(thread.id, {"role": "user", "content": "tea please"})
            other = alice.threads.create()
            alice.entries.add(other.id, {"role": "user", "content": "other thread"})
            assert alice.embed_pending() == 0  # embedded on write
            assert _count(index, model, 64, tenant=tenant, kind="entry", thread_id=thread.id) == 2
            assert _count(index, model, 64, tenant=tenant, kind="fact") == 1

            first = alice.entries.list(thread.id)[0]
            alice.branches.create(thread.id, "alt")  # a copy of both entries
            assert alice.entries.delete(thread.id, first.id)
            assert _count(index, model, 64, tenant=tenant, rid=first.id) == 1  # still on "alt"
            assert alice.entries.delete(thread.id, first.id, branch="alt")
            assert _count(index, model, 64, tenant=tenant, rid=first.id) == 0
            assert _count(index, model, 64, tenant=tenant, kind="entry", thread_id=thread.id) == 1

            assert alice.documents.delete(docs[0].id)
            assert _count(index, model, 64, tenant=tenant, rid=docs[0].id) == 0
            assert _count(index, model, 64, tenant=tenant, kind="document") == 3
            alice.facts.delete(fact.id)
            assert _count(index, model, 64, tenant=tenant, kind="fact") == 0
            assert alice.threads.delete(thread.id)
            assert _count(index, model, 64, tenant=tenant, thread_id=thread.id) == 0
            assert _count(index, model, 64, tenant=tenant, thread_id=other.id) == 1

            assert root.forget_user("alice") > 0
            assert _count(index, model, 64, tenant=tenant, user_id="alice") == 0
            assert _count(index, model, 64, tenant=tenant) == 1  # bob's document stays
            assert [h.id for h in bob.search("bob doc", mode="semantic")] == [bob_doc.id]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_every_entry_delete_removes_the_points_of_the_last_copies(
    kind: str, tmp_path: Path
) -> None:
    """Rewind, clear, branch delete and compaction remove the points of the entries they
    delete once no branch holds them; other users' and tenants' points stay."""
    from datetime import timedelta

    from memorybank.stores.contract.types import NewEntry

    with open_store(kind, tmp_path) as store:
        index = QdrantIndex(":memory:", collection_prefix="del2")
        embedder = HashEmbedder()
        model = embedder.model_id
        with Memory(store, embedder=embedder, vector_index=index) as memory:
            root = memory.tenant(f"d-{uuid.uuid4().hex[:8]}")
            tenant = root.tenant_id
            alice = root.scoped(user_id="alice", agent_id="bot")
            bob = root.scoped(user_id="bob", agent_id="bot")
            elsewhere = memory.tenant(f"e-{uuid.uuid4().hex[:8]}")
            thread = alice.threads.create()
            ids = [
                alice.entries.add(thread.id, {"role": "user", "content": f"m{i}"}).id
                for i in range(8)
            ]
            bob_thread = bob.threads.create()
            bob.entries.add(bob_thread.id, {"role": "user", "content": "bob"})
            far = elsewhere.threads.create()
            elsewhere.entries.add(far.id, {"role": "user", "content": "far"})

            def points(**match: str) -> int:
                return _count(index, model, 64, tenant=tenant, kind="entry", **match)

            assert points(thread_id=thread.id) == 8
            alice.branches.create(thread.id, "alt", from_entry=ids[5])  # copies ids[0..5]
            assert alice.branches.rewind(thread.id, ids[3]) == 4  # ids[6], ids[7]: no copy
            assert points(thread_id=thread.id) == 6
            entries = alice.entries.list(thread.id)
            summary = NewEntry(
                "s1", "system", "summary", None, (), None, {}, {}, 1,
                entries[2].created_at - timedelta(milliseconds=1),
            )  # fmt: skip
            assert memory.store.entry_compact(
                tenant,
                thread.id,
                branch="main",
                through_position=entries[1].position,
                expected_ids=ids[:2],
                summary=summary,
                updated_at=entries[-1].created_at,
            )
            assert points(thread_id=thread.id) == 6  # ids[0], ids[1] still on "alt"
            assert alice.entries.clear(thread.id, branch="alt") == 6
            assert points(thread_id=thread.id) == 2  # ids[2], ids[3] on main
            assert {p for p in ids if points(rid=p)} == {ids[2], ids[3]}
            alice.branches.create(thread.id, "alt2")
            alice.entries.clear(thread.id)
            assert points(thread_id=thread.id) == 2  # held by "alt2"
            assert alice.branches.delete(thread.id, "alt2")
            assert points(thread_id=thread.id) == 0
            assert points(thread_id=bob_thread.id) == 1
            assert _count(index, model, 64, tenant=elsewhere.tenant_id, kind="entry") == 1
            assert memory.store.vector_get(tenant, "entry", ids, model_id=model) == {}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_memory_search_is_the_same_with_and_without_the_index(kind: str, tmp_path: Path) -> None:
    words = ["car", "tea", "glad", "rain", "music", "paris", "code", "bread"]
    rng = np.random.default_rng(7)
    with open_store(kind, tmp_path) as store:
        embedder = HashEmbedder()
        plain = Memory(store, embedder=embedder).tenant(f"s-{uuid.uuid4().hex[:8]}")
        with Memory(store, embedder=embedder, vector_index=QdrantIndex(":memory:")) as memory:
            root = memory.tenant(plain.tenant_id)
            for user in ("alice", "bob", None):
                handle = root.scoped(user_id=user, agent_id="bot")
                thread = handle.threads.create()
                for _ in range(6):
                    text = " ".join(rng.choice(words, size=3))
                    handle.entries.add(thread.id, {"role": "user", "content": text})
                    handle.documents.add(text)
            for user in ("alice", "bob", None):
                for query in ("automobile tea", "joyful paris", "rain code bread"):
                    a = plain.scoped(user_id=user, agent_id="bot")
                    b = root.scoped(user_id=user, agent_id="bot")
                    assert _ranked(b.search(query, mode="semantic", k=50)) == _ranked(
                        a.search(query, mode="semantic", k=50)
                    )
                    assert b.search(query, mode="semantic", k=50)


def _ranked(hits: list) -> list[tuple[float, str, str]]:  # type: ignore[type-arg]
    """Hits in rank order, equal scores (identical texts) in a fixed order."""
    return sorted((-round(h.score, 5), h.kind, h.id) for h in hits)


def test_a_failed_index_write_is_surfaced_and_reindex_recovers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    nowhere = QdrantClient(url="http://127.0.0.1:9", check_compatibility=False)  # nothing listens
    down = QdrantIndex(nowhere, collection_prefix="down")
    embedder = HashEmbedder()
    with Memory(url, embedder=embedder, vector_index=down) as memory:
        with pytest.raises(StoreUnavailable, match="vector index"):
            memory.documents.add("an automobile in the rain")
        # the store has the document and its vector; searches fall back to the store
        hits = memory.search("vehicle", mode="semantic", kinds=("documents",))
        assert [h.content for h in hits] == ["an automobile in the rain"]
    nowhere.close()
    index = QdrantIndex(":memory:", collection_prefix="up")
    with Memory(url, embedder=embedder, vector_index=index) as memory:
        assert (
            index.search(
                memory.tenant_id,
                embedder.embed(["car"])[0],
                model_id=embedder.model_id,
                kinds=["document"],
                k=5,
            )
            == []
        )
        assert index.reindex(memory) == 1
        hits = memory.search("vehicle", mode="semantic", kinds=("documents",))
        assert [h.content for h in hits] == ["an automobile in the rain"]
        assert index.reindex(memory) == 1  # idempotent: rebuilt, not doubled
        name = collection_name("up", embedder.model_id, 64)
        assert index.client.count(name, exact=True).count == 1


def test_a_persisted_local_index_survives_a_new_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    path = str(tmp_path / "qdrant")
    embedder = HashEmbedder()
    with Memory(url, embedder=embedder, vector_index=QdrantIndex(path)) as memory:
        memory.documents.add("a happy vehicle")
    index = QdrantIndex(path)
    with Memory(url, embedder=embedder, vector_index=index) as memory:
        found = index.search(
            memory.tenant_id,
            embedder.embed(["joyful car"])[0],
            model_id=embedder.model_id,
            kinds=["document"],
            k=5,
        )
        assert len(found) == 1
        assert [h.content for h in memory.search("glad automobile", mode="semantic")] == [
            "a happy vehicle"
        ]
