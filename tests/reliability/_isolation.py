"""Shared by the isolation tests (``test_isolation_*.py``).

Alice's world (her records of every kind, made through the root handle, and bob's
scoped handle) and the ``world`` fixture that builds it on every store; a store
opened twice (a writer, and a reader with caches of its own, as another process);
tenants filled with threads, documents, facts and graph records of several owners,
and the truth of who owns what. A test module uses the fixture by binding it:
``world = _isolation.world`` (pytest finds fixtures by module attribute).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memorybank import CoreFacts, Memory, SessionManager
from memorybank.stores import InMemoryStore
from memorybank.stores.contract.types import UNSET
from tests.all_stores import WITH_CLUSTER, open_store
from tests.reliability._harness import StoreSpec, provide

SECRET = "zanzibar-alice-secret"


@dataclass
class World:
    """Alice's records (made through the root handle) and bob's scoped handle."""

    root: Memory
    bob: Memory
    thread: str
    entry: str
    fact: str
    document: str
    run: str
    session: str
    bob_thread: str
    entity: str
    place: str
    relation: str
    bob_entity: str
    shared_thread: str


def build_world(root: Memory) -> World:
    alice = root.scoped(user_id="alice", agent_id="bot")
    thread = alice.threads.create(title=f"title {SECRET}", metadata={"s": SECRET})
    entry = alice.entries.add(thread.id, {"role": "user", "content": f"my pin is {SECRET}"})
    alice.entries.add(thread.id, {"role": "assistant", "content": f"noted {SECRET}"})
    alice.branches.create(thread.id, "alt")
    fact = alice.facts.add(content=f"alice likes {SECRET}")
    moved = alice.facts.add(content=f"alice lived in {SECRET} town")  # a fact with history
    alice.facts.supersede(moved.id, f"alice lives in {SECRET} city")
    document = alice.documents.add(f"alice notes on {SECRET}")
    alice.summaries.add(content=f"summary {SECRET}")
    alice.snapshots.save("run-1", {"s": SECRET})
    alice.working("run-1").set("k", SECRET)
    CoreFacts(memory=alice).set("pin", SECRET)
    session = SessionManager(alice).get_or_create(channel_type="web", channel_id="c1")
    alice.entries.add(session.id, {"role": "user", "content": f"session {SECRET}"})
    entity = alice.graph.add_entity(f"Alice {SECRET}", type="person", observations=[SECRET])
    place = alice.graph.add_entity(f"Flat {SECRET}", type="location")
    relation = alice.graph.add_relation(entity.id, "lives_in", place.id, label=SECRET)
    bob = root.scoped(user_id="bob", agent_id="bot")
    bob_entity = bob.graph.add_entity("Bob", type="person")
    bob.graph.add_relation(bob_entity.id, "works_at", bob.graph.add_entity("Acme").id)
    bob_thread = bob.threads.create().id
    bob.entries.add(bob_thread, {"role": "user", "content": "what do you know about zanzibar"})
    shared = root.scoped(user_id=None, agent_id=None).threads.create().id
    root.entries.add(shared, {"role": "user", "content": "tell me about Alice zanzibar"})
    if root.embedder is not None:
        root.embed_pending()
    return World(
        root=root,
        bob=bob,
        thread=thread.id,
        entry=entry.id,
        fact=fact.id,
        document=document.id,
        run="run-1",
        session=session.id,
        bob_thread=bob_thread,
        entity=entity.id,
        place=place.id,
        relation=relation.id,
        bob_entity=bob_entity.id,
        shared_thread=shared,
    )


def alice_intact(w: World) -> None:
    """Everything of alice's still there, unchanged (read through the root handle)."""
    root = w.root
    thread = root.threads.get(w.thread)
    assert thread is not None and thread.user_id == "alice" and thread.title == f"title {SECRET}"
    assert root.entries.count(w.thread) == 2
    assert [b.name for b in root.branches.list(w.thread)] == ["main", "alt"]
    assert thread.current_branch == "main"
    fact = root.facts.get(w.fact)
    assert fact is not None and fact.content == f"alice likes {SECRET}" and fact.version == 1
    assert len(root.facts.history(w.fact)) == 1
    assert root.documents.get(w.document) is not None
    assert [s.content for s in root.summaries.list(agent_id="bot", user_id="alice")] == [
        f"summary {SECRET}"
    ]
    assert root.snapshots.load(w.run) == {"s": SECRET}
    assert root.working(w.run, user_id="alice", agent_id="bot").items() == {"k": SECRET}
    assert CoreFacts(memory=root, user_id="alice").history("pin") != []
    assert CoreFacts(memory=root, user_id="alice").get("pin") == SECRET
    session = SessionManager(root).get(w.session)
    assert session is not None and session.status == "active" and session.message_count == 1
    graph = root.scoped(user_id="alice", agent_id="bot").graph
    entity = graph.get_entity(w.entity)
    assert entity is not None and entity.observations == (SECRET,)
    assert entity.name == f"Alice {SECRET}" and entity.aliases == ()
    relation = graph.get_relation(w.relation)
    assert relation is not None and relation.is_valid and relation.label == SECRET
    assert [r.id for r in graph.relations(w.entity)] == [w.relation]
    assert graph.get_entity(w.place) is not None


@pytest.fixture(params=[*WITH_CLUSTER, "sqlite+qdrant", "pgvector", "pgvector-hnsw"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """Alice's world on one store, searched by vectors too (a small real embedder):
    Qdrant for ``sqlite+qdrant``, pgvector exactly or through an HNSW index."""
    from tests.recall.conftest import HashEmbedder

    embedder = HashEmbedder()
    tenant = f"iso-{uuid.uuid4().hex[:8]}"
    if request.param == "sqlite+qdrant":  # vectors searched in Qdrant (local mode)
        from memorybank.vector_index import QdrantIndex

        index = QdrantIndex(":memory:")
        with (
            open_store("sqlite", tmp_path) as store,
            Memory(store, embedder=embedder, vector_index=index) as root,
        ):
            yield build_world(root.tenant(tenant))
        return
    if str(request.param).startswith("pgvector"):
        with two_stores(str(request.param), tmp_path) as (store, _, _):
            if request.param == "pgvector-hnsw":
                assert store.create_vector_index(embedder.model_id, embedder.dimensions)
            with Memory(store, embedder=embedder) as root:
                yield build_world(root.tenant(tenant))
        return
    with (
        open_store(str(request.param), tmp_path) as store,
        Memory(store, embedder=embedder) as root,
    ):
        yield build_world(root.tenant(tenant))


# -- the stores' fast paths, attacked below the defence in depth of ``Memory`` --------------
#
# ``Memory`` re-checks what a store returns (threads of hits, records' owners), so a
# store that over-shares would not show in the per-verb cases (test_isolation_verbs.py).
# test_isolation_search.py and test_isolation_reads.py call the stores' own reads with
# another tenant's ids and with scopes, through a second store object (another
# process's caches: stale vector slots, ANN indexes built before deletes), on every
# store, PostgreSQL with pgvector (exact and HNSW) included.

#: Scopes the store reads are asked with: (agent, user); UNSET leaves an axis unchecked.
SCOPES: tuple[tuple[Any, Any], ...] = (
    ("bot", "alice"),
    ("bot", "bob"),
    (UNSET, "bob"),  # one user, any agent
    ("other", UNSET),  # one agent, any user
    (UNSET, None),  # shared users only
    (None, UNSET),  # shared agents only
    (None, None),
    ("bot", None),
)


def _open_more(spec: StoreSpec, opened: list[Any], index: Any = None) -> Any:
    """Another store object on ``spec`` (its vectors in ``index`` when given)."""
    from memorybank.vector_index._sync.index import indexed

    opened.append(spec.open() if index is None else indexed(spec.open(), index))
    return opened[-1]


@contextmanager
def two_stores(kind: str, tmp_path: Path) -> Iterator[tuple[Any, Any, Callable[[], Any]]]:
    """A writer, a reader (its own caches, as another process) and a way to open more."""
    if kind == "memory":
        store = InMemoryStore()
        try:
            yield store, store, lambda: store
        finally:
            store.close()
        return
    index: Any = None
    if kind == "sqlite+qdrant":  # vectors searched in one Qdrant index (local mode)
        from memorybank.vector_index import QdrantIndex

        index = QdrantIndex(":memory:")
    if kind.startswith("pgvector"):
        from tests.stores.test_contract_postgres import pgvector_url

        spec = StoreSpec(kind, "postgres", pgvector_url(), f"v{uuid.uuid4().hex[:10]}_")
        specs: Iterator[StoreSpec] = iter([spec])
    else:
        specs = provide("sqlite-full" if kind.startswith("sqlite") else kind, tmp_path)
    for spec in specs:
        opened: list[Any] = []
        more = functools.partial(_open_more, spec, opened, index)
        try:
            yield more(), more(), more
        finally:
            for store in opened:
                store.close()
            if index is not None:
                index.close()
            spec.drop()


@dataclass
class Truth:
    """Who owns what, per tenant, as written."""

    owners: dict[str, tuple[str | None, str | None]]  # thread id -> (agent, user)
    entries: dict[str, str]  # entry id -> thread id
    records: dict[tuple[str, str], tuple[str | None, str | None]]  # (kind, id) -> owner
    gone: set[str]  # ids deleted since


def fill(root: Memory, tag: str) -> Truth:
    """Threads (caller-chosen ids, the same in every tenant) of alice, bob, carol,
    another agent and nobody; documents, facts (with history), graph records."""
    truth = Truth({}, {}, {}, set())
    plan = {
        "ta": ("bot", "alice", 80),
        "tb": ("bot", "bob", 6),
        "to": ("other", "alice", 6),
        "ts": ("bot", None, 4),
        "tn": (None, None, 4),
        "tc": ("bot", "carol", 6),
        "tu": (None, "bob", 4),  # bob's, for any agent
    }
    for tid, (agent, user, n) in plan.items():
        handle = root.scoped(user_id=user, agent_id=agent)
        handle.threads.create(thread_id=tid)
        truth.owners[tid] = (agent, user)
        for i in range(n):
            text = f"{tag} {user} {agent} zanzibar note {i}"
            truth.entries[handle.remember(tid, "user", text).id] = tid
    owners = (("bot", "alice"), ("bot", "bob"), (None, "alice"), (None, None), ("other", "carol"))
    for agent, user in owners:
        handle = root.scoped(user_id=user, agent_id=agent)
        for i in range(3):
            doc = handle.documents.add(f"{tag} {user} zanzibar document {i}")
            truth.records[("document", doc.id)] = (agent, user)
        fact = handle.facts.add(content=f"{tag} {user} zanzibar fact")
        truth.records[("fact", fact.id)] = (agent, user)
        handle.facts.supersede(fact.id, f"{tag} {user} zanzibar fact, moved")
        entity = handle.graph.add_entity(f"{tag} {user} Zanzibar", type="person")
        place = handle.graph.add_entity(f"{tag} {user} Stone Town", type="location")
        handle.graph.add_relation(entity.id, "lives_in", place.id)
        for rid in (entity.id, place.id):
            truth.records[("graph_entity", rid)] = (agent, user)
    if root.embedder is not None:
        root.embed_pending()
    return truth
