"""Isolation of the stores' own searches, below the defence in depth of ``Memory``.

Keyword and vector search of every store (PostgreSQL with pgvector, exact and HNSW,
and SQLite with Qdrant included), every scope shape and one thread at a time, in
tenants holding the same thread ids, before and after another store object deletes:
stale caches and ANN indexes built before the deletes return nothing they should not.
See ``_isolation.py`` for the stores opened twice and the tenants filled."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory
from memorybank.stores.contract.types import Visibility
from tests.all_stores import WITH_CLUSTER
from tests.reliability._isolation import SCOPES, Truth, fill, two_stores

#: Vectors of a tenant's entries above which the vector caches build an ANN index here.
ANN_ROWS = 40
STORE_KINDS_VEC = (*WITH_CLUSTER, "sqlite+qdrant", "pgvector", "pgvector-hnsw")


def _check_hits(hits: Sequence[Any], truth: Truth, scope: Visibility, what: str) -> None:
    for hit in hits:
        if hit.kind == "entry":
            assert hit.id in truth.entries, f"{what}: entry {hit.id} of another tenant or gone"
            assert hit.id not in truth.gone, f"{what}: deleted entry {hit.id} came back"
            tid = truth.entries[hit.id]
            assert hit.thread_id in (None, tid), f"{what}: entry {hit.id} in thread {hit.thread_id}"
            owner = truth.owners[tid]
        else:
            key = (hit.kind, hit.id)
            if hit.kind == "fact_version":
                continue  # an earlier value: checked by Memory.search's cases
            assert key in truth.records, f"{what}: {key} of another tenant or gone"
            assert hit.id not in truth.gone, f"{what}: deleted {key} came back"
            owner = truth.records[key]
        assert scope.admits(*owner), f"{what}: {hit.kind} {hit.id} of {owner} leaked to {scope}"


def _probe(store: Any, tenant: str, truth: Truth, embedder: Any, what: str) -> int:
    """Every scoped search of ``store`` in ``tenant`` returns only what its scope sees."""
    query = embedder.embed(["zanzibar note document fact"])[0]
    seen = 0
    kinds = ["entry", "document", "fact", "fact_version"]
    for agent, user in SCOPES:
        scope = Visibility(agent, user)
        label = f"{what} {scope}"
        text = store.text_search(tenant, "zanzibar", kinds=kinds, k=500, visible_to=scope)
        _check_hits(text, truth, scope, label + " text")
        vec = store.vector_search(
            tenant, query, model_id=embedder.model_id, kinds=kinds[:3], k=500, visible_to=scope
        )
        _check_hits(vec, truth, scope, label + " vector")
        for k in (1, 5, 25):  # small k: the HNSW parts run short and are redone exactly
            few = store.vector_search(
                tenant, query, model_id=embedder.model_id, kinds=kinds[:3], k=k, visible_to=scope
            )
            _check_hits(few, truth, scope, f"{label} vector k={k}")
        seen += len(text) + len(vec)
        for tid in truth.owners:  # one thread, seen or not: only what the scope sees
            for k in (3, 500):
                one = store.vector_search(
                    tenant, query, model_id=embedder.model_id, kinds=["entry"], k=k,
                    thread_id=tid, visible_to=scope,
                )  # fmt: skip
                _check_hits(one, truth, scope, f"{label} vector thread {tid}")
                assert all(truth.entries[h.id] == tid for h in one)
            one = store.text_search(
                tenant, "zanzibar", kinds=["entry"], k=500, thread_id=tid, visible_to=scope
            )
            _check_hits(one, truth, scope, f"{label} text thread {tid}")
            assert all(truth.entries[h.id] == tid for h in one)
    return seen


def _fast_path_used(store: Any, kind: str, tenant: str) -> bool:
    """Whether ``store`` answered the tenant's entry searches by the path under attack:
    an ANN index of its vector cache, pgvector's HNSW index, or pgvector exactly."""
    if kind in ("memory", "sqlite+qdrant"):
        return True  # searched exactly in process, or in Qdrant
    if kind.startswith("pgvector"):
        return bool(store._native) and bool(store._hnsw) == (kind == "pgvector-hnsw")
    cache = store.__dict__.get("_vector_cache") or store.__dict__["_cached_vectors"].cache
    return any(key[0] == tenant and slot.has_ann() for key, slot in cache.slots.items())


@pytest.fixture
def small_ann(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process vector caches build (and SQLite saves) ANN indexes at test sizes."""
    from memorybank.stores.vectors import exact as _vectors
    from memorybank.stores.vectors import files as _vector_files

    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", ANN_ROWS)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", ANN_ROWS // 2)
    # user-scoped searches through the index too (the scoped exact path, which scores
    # a user's own rows, is held to a mask's answers in tests/recall/test_scoped_vectors.py)
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", ANN_ROWS // 2)
    monkeypatch.setattr(_vectors, "BACKGROUND_BUILD", False)
    monkeypatch.setattr(_vector_files, "SAVE_AFTER_ROWS", 10)


@pytest.mark.parametrize("kind", STORE_KINDS_VEC)
def test_store_searches_keep_scope_tenant_and_deletes(
    kind: str, tmp_path: Path, small_ann: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyword and vector search of every store, every scope shape (one user, one agent,
    shared-only on either axis) and one thread at a time, in two tenants holding the same
    thread ids: only what the scope may see, of its own tenant. Then another store object
    deletes entries, a thread, a document and a whole user, and a thread id freed by a
    delete is taken by bob: the first reader's caches (built before, an ANN index among
    them), and a store opened afterwards (SQLite: from the saved index files), return no
    deleted row, and nothing of bob's new thread to alice."""
    from tests.recall.conftest import HashEmbedder

    embedder = HashEmbedder()
    tenant = f"iso-{uuid.uuid4().hex[:6]}"
    with two_stores(kind, tmp_path) as (writer, reader, more):
        with Memory(writer, embedder=embedder) as memory:
            root = memory.tenant(tenant)
            truth = fill(root, "one")
            # the same thread ids, user and agent names in tenants that differ by a space/case
            others = {
                name: fill(memory.tenant(name), tag)
                for name, tag in ((tenant + " ", "two"), (tenant.upper(), "three"))
            }
            if kind == "pgvector-hnsw":
                # alice's thread large enough that one thread's search may take the index
                # (over sqrt(32·k·N) vectors for small k, once EXACT_SCOPE allows)
                alice = root.scoped(user_id="alice", agent_id="bot")
                for start in range(0, 300, 50):
                    batch = [
                        {"role": "user", "content": f"one alice bot zanzibar more {start + i}"}
                        for i in range(50)
                    ]
                    for entry in alice.entries.add_many("ta", batch):
                        truth.entries[entry.id] = "ta"
                root.embed_pending()
                assert writer.create_vector_index(embedder.model_id, embedder.dimensions)
            assert _probe(reader, tenant, truth, embedder, "before") > 0
            assert _fast_path_used(reader, kind, tenant)
            if kind == "pgvector-hnsw":  # one thread through the index too, not exactly
                from memorybank.stores.postgres._sync import _vectors as pg_vectors

                with monkeypatch.context() as patch:
                    patch.setattr(pg_vectors, "EXACT_SCOPE", 1)
                    _probe(reader, tenant, truth, embedder, "thread by HNSW")
            # another process deletes; the reader's caches were built before
            alice = root.scoped(user_id="alice", agent_id="bot")
            ta = [e for e, t in truth.entries.items() if t == "ta"]
            alice.entries.delete("ta", ta[0])
            alice.entries.delete("ta", ta[1])
            truth.gone |= {ta[0], ta[1]}
            root.scoped(user_id="alice", agent_id="other").entries.clear("to")
            truth.gone |= {e for e, t in truth.entries.items() if t == "to"}
            doc = next(r for (k, r), o in truth.records.items() if k == "document" and o[1])
            owner = truth.records[("document", doc)]
            root.scoped(agent_id=owner[0], user_id=owner[1]).documents.delete(doc)
            truth.gone.add(doc)
            root.forget_user("carol")
            truth.gone |= {e for e, t in truth.entries.items() if t == "tc"}
            truth.gone |= {r for (_, r), o in truth.records.items() if o[1] == "carol"}
            root.scoped(user_id=None, agent_id=None).threads.delete("tn")
            truth.gone |= {e for e, t in truth.entries.items() if t == "tn"}
            # the freed id "tn" is taken by bob: never shared again, in any cache
            bob = root.scoped(user_id="bob", agent_id="bot")
            bob.threads.create(thread_id="tn")
            truth.owners["tn"] = ("bot", "bob")
            for i in range(5):
                truth.entries[bob.remember("tn", "user", f"bob zanzibar note later {i}").id] = "tn"
            root.embed_pending()
            _probe(reader, tenant, truth, embedder, "after, stale reader")
            fresh = more()
            _probe(fresh, tenant, truth, embedder, "after, new reader")
            if kind == "sqlite":  # the paths attacked: deletes applied to a built index
                # in place (the stale reader), a saved index loaded with them (a new one)
                key = (tenant, embedder.model_id, "entry")
                assert reader.__dict__["_vector_cache"].slots[key].dead > 0
                assert fresh.__dict__["_vector_cache"].slots[key].ann_source == "loaded"
            for name, theirs in others.items():  # their own indexes (SQLite: own files)
                _probe(fresh, name, theirs, embedder, f"{name!r}, new reader")
                _probe(reader, name, theirs, embedder, f"{name!r}, reader")
                assert _fast_path_used(fresh, kind, name)
