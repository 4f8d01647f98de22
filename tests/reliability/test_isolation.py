"""Isolation, generated from the public API: every verb, acting for bob, on alice's data.

The surface is read off the classes (every public method of ``Memory`` and of the
helpers it hands out), so a new verb without a case here fails
``test_every_public_verb_has_an_isolation_case``. Each case acts through a handle
scoped to bob (``memory.scoped(user_id="bob", agent_id="bot")``), targets alice's
records by id where the verb takes one, and checks that bob learns nothing and
changes nothing: the call raises ``ThreadForbidden``/``NotFound``/``InvalidInput``
or returns what a missing id returns, and no return value holds alice's secret.
After every case alice's world is read back whole through the root handle.
The async twins are generated from the same source; a test checks their
surface is the same.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memorybank import (
    Conflict,
    ContextOptions,
    CoreFacts,
    InvalidInput,
    Memory,
    NotFound,
    SessionManager,
    ThreadForbidden,
)
from memorybank._sync.compaction import CompactionService as SyncCompaction
from memorybank._sync.context import ContextBuilder as SyncContextBuilder
from memorybank._sync.core_facts import CoreFacts as SyncCoreFacts
from memorybank._sync.documents import Documents
from memorybank._sync.facts import Facts
from memorybank._sync.graph import Graph
from memorybank._sync.memory import (
    Branches,
    Entries,
    Snapshots,
    Summaries,
    Threads,
    WorkingMemory,
)
from memorybank._sync.sessions import SessionManager as SyncSessions
from memorybank._sync.turn import Turn
from memorybank.retention import RetentionPolicy
from memorybank.stores import InMemoryStore
from memorybank.stores._types import LAST_POSITION, UNSET, Record, Visibility
from tests.all_stores import STORE_KINDS, WITH_CLUSTER, open_store
from tests.reliability._harness import StoreSpec, provide

SECRET = "zanzibar-alice-secret"

#: The public surface: class name -> class. Async twins are checked to match below.
SURFACE: dict[str, type] = {
    "Memory": Memory,
    "Threads": Threads,
    "Entries": Entries,
    "Branches": Branches,
    "Snapshots": Snapshots,
    "Summaries": Summaries,
    "Facts": Facts,
    "Graph": Graph,
    "Documents": Documents,
    "WorkingMemory": WorkingMemory,
    "CoreFacts": SyncCoreFacts,
    "SessionManager": SyncSessions,
    "CompactionService": SyncCompaction,
    "ContextBuilder": SyncContextBuilder,
    "Turn": Turn,
}

#: Verbs that touch no user- or agent-owned data, with the reason.
EXEMPT = {
    "Memory.close": "releases the store; reads and writes nothing",
    "Memory.tenant": "makes a handle; the handle keeps the scope (case: Memory.scoped)",
    "Memory.now": "reads the memory's clock; touches no store",
    "CoreFacts.close": "closes the file it opened; reads nothing",
    "Turn.add": "buffers a message of the caller's own turn (saved by the thread rule)",
    "Turn.add_many": "buffers messages of the caller's own turn (saved by the thread rule)",
    "Graph.pending": "counts the memory's extraction backlog; no record or principal in it",
    "Graph.drain": "waits for the extraction backlog; returns only whether it emptied",
}


def public_verbs() -> set[str]:
    verbs = set()
    for name, cls in SURFACE.items():
        for attr, value in vars(cls).items():
            if attr.startswith("_") or isinstance(value, property | staticmethod):
                continue
            if callable(value) or inspect.isfunction(value):
                verbs.add(f"{name}.{attr}")
    return verbs


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


def denied(call: Callable[[], Any]) -> Any:
    """The call is refused, or returns nothing of alice's."""
    try:
        result = call()
    except (ThreadForbidden, NotFound, InvalidInput):
        return None
    assert SECRET not in repr(result)
    return result


def forbidden(call: Callable[[], Any]) -> bool:
    with pytest.raises(ThreadForbidden):
        call()
    return True


def refused(call: Callable[[], Any], field: str) -> bool:
    with pytest.raises(InvalidInput) as caught:
        call()
    assert caught.value.field == field
    return True


def conflict(call: Callable[[], Any]) -> bool:
    with pytest.raises(Conflict) as caught:
        call()
    assert SECRET not in str(caught.value) and "alice" not in str(caught.value)
    return True


def widening(call: Callable[[], Any]) -> bool:
    with pytest.raises(InvalidInput):
        call()
    return True


def _outsiders(w: World) -> tuple[Memory, ...]:
    """Handles that may not see alice's records: bob (with the agent, with another
    agent, with any agent) and the shared-only user (with the agent, any agent)."""
    return (
        w.bob,
        w.root.scoped(user_id="bob"),
        w.root.scoped(user_id="bob", agent_id="other"),
        w.root.scoped(user_id=None, agent_id="bot"),
        w.root.scoped(user_id=None),
    )


def _outsiders_with_threads(w: World) -> list[tuple[Memory, str, str]]:
    """Each outsider with a thread it may read (bob's own, or the shared one) and the
    agent to build for: its own, or "bot" when its scope names none."""
    out = []
    for handle in _outsiders(w):
        agent = handle.scope.agent_id
        thread = w.bob_thread if handle.scope.user_id == "bob" else w.shared_thread
        out.append((handle, thread, agent if isinstance(agent, str) else "bot"))
    return out


def _turn(w: World) -> None:
    with pytest.raises(ThreadForbidden), w.bob.turn(w.thread, input="hi", raise_errors=True) as t:
        t.add({"role": "assistant", "content": "x"})
    with w.bob.turn(w.bob_thread, input="zanzibar?", raise_errors=True) as turn:
        assert SECRET not in repr(turn.messages)


def _compaction(w: World) -> SyncCompaction:
    return SyncCompaction(memory=w.bob, summarize=lambda *_: "s", pre_rot_threshold=10)


def _context(w: World) -> SyncContextBuilder:
    return SyncContextBuilder(ContextOptions(max_tokens=2000, include_facts=True), w.bob)


def _shared_twin(w: World) -> bool:
    """A shared entity of alice's private one's name is another entity (no merge into hers)."""
    twin = w.root.graph.add_entity(f"Alice {SECRET}", type="person", user_id=None, agent_id="bot")
    assert twin.id != w.entity and twin.observations == ()
    assert w.root.graph.delete_entity(twin.id, user_id=None, agent_id="bot")
    return True


def _bob_core(w: World) -> SyncCoreFacts:
    return SyncCoreFacts(memory=w.bob)


CASES: dict[str, Callable[[World], object]] = {
    # -- Memory --------------------------------------------------------------------------
    "Memory.scoped": lambda w: (
        widening(lambda: w.bob.scoped(user_id="alice")),
        widening(lambda: w.bob.tenant(w.root.tenant_id).scoped(user_id=None)),
        forbidden(lambda: w.bob.tenant(w.root.tenant_id).history(w.thread)),
    ),
    "Memory.ensure_thread": lambda w: forbidden(lambda: w.bob.ensure_thread(w.thread)),
    "Memory.remember": lambda w: forbidden(lambda: w.bob.remember(w.thread, "user", "x")),
    "Memory.history": lambda w: (
        forbidden(lambda: w.bob.history(w.thread)),
        widening(lambda: w.bob.history(w.thread, user_id="alice")),
    ),
    "Memory.build_context": lambda w: (
        forbidden(lambda: w.bob.build_context(w.thread, max_tokens=500)),
        denied(
            lambda: w.bob.build_context(
                w.bob_thread, max_tokens=2000, include_facts=True, current_input="zanzibar"
            )
        ),
        # every block that reads long-term memory, for each scope shape that excludes
        # alice, in a thread that scope sees: facts, semantic hits, graph
        *(
            denied(
                functools.partial(
                    handle.build_context,
                    thread,
                    agent_id=agent,
                    max_tokens=4000,
                    include_facts=True,
                    include_semantic_context=True,
                    include_graph_context=True,
                    current_input=f"Alice {SECRET} zanzibar: where does she live?",
                )
            )
            for handle, thread, agent in _outsiders_with_threads(w)
        ),
    ),
    "Memory.turn": _turn,
    "Memory.working": lambda w: (
        denied(lambda: w.bob.working(w.run).items()),
        widening(lambda: w.bob.working(w.run, user_id="alice")),
    ),
    "Memory.forget_user": lambda w: widening(lambda: w.bob.forget_user("alice")),
    # retention covers a whole tenant: a scoped handle may not prune at all
    "Memory.prune": lambda w: refused(
        lambda: w.bob.prune(RetentionPolicy(max_entries_per_thread=0)), "scope"
    ),
    "Memory.search": lambda w: (
        denied(lambda: w.bob.search(SECRET, k=50)),
        denied(lambda: w.bob.search(SECRET, k=50, mode="keyword")),
        forbidden(lambda: w.bob.search(SECRET, thread_id=w.thread)),
        # facts join search in the scope of facts.list, earlier values too
        *(
            denied(
                functools.partial(
                    handle.search, SECRET, k=50, mode=mode, kinds=kinds, include_history=history
                )
            )
            for handle in _outsiders(w)
            for mode in ("hybrid", "semantic", "keyword")
            for kinds, history in ((("facts",), False), (("entries", "documents", "facts"), True))
        ),
    ),
    "Memory.embed_pending": lambda w: forbidden(lambda: w.bob.embed_pending(thread_id=w.thread)),
    # -- threads -------------------------------------------------------------------------
    # a caller-chosen id that is taken is a Conflict (it names no owner and no content)
    "Threads.create": lambda w: conflict(lambda: w.bob.threads.create(thread_id=w.thread)),
    "Threads.get": lambda w: forbidden(lambda: w.bob.threads.get(w.thread)),
    "Threads.require": lambda w: forbidden(lambda: w.bob.threads.require(w.thread)),
    "Threads.list": lambda w: (
        denied(lambda: w.bob.threads.list()),
        widening(lambda: w.bob.threads.list(user_id=None)),
    ),
    "Threads.update": lambda w: forbidden(lambda: w.bob.threads.update(w.thread, title="x")),
    "Threads.delete": lambda w: forbidden(lambda: w.bob.threads.delete(w.thread)),
    # -- entries -------------------------------------------------------------------------
    "Entries.add": lambda w: forbidden(
        lambda: w.bob.entries.add(w.thread, {"role": "user", "content": "x"})
    ),
    "Entries.add_many": lambda w: forbidden(
        lambda: w.bob.entries.add_many(w.thread, [{"role": "user", "content": "x"}])
    ),
    "Entries.list": lambda w: (
        forbidden(lambda: w.bob.entries.list(w.thread)),
        # an existing and a missing branch answer alike: no branch names leak
        forbidden(lambda: w.bob.entries.list(w.thread, branch="alt")),
        forbidden(lambda: w.bob.entries.list(w.thread, branch="no-such-branch")),
        forbidden(lambda: w.bob.entries.list(w.thread, max_tokens=100)),
    ),
    "Entries.get": lambda w: forbidden(lambda: w.bob.entries.get(w.thread, w.entry)),
    "Entries.delete": lambda w: forbidden(lambda: w.bob.entries.delete(w.thread, w.entry)),
    "Entries.clear": lambda w: forbidden(lambda: w.bob.entries.clear(w.thread)),
    "Entries.count": lambda w: forbidden(lambda: w.bob.entries.count(w.thread)),
    # -- branches ------------------------------------------------------------------------
    "Branches.create": lambda w: forbidden(lambda: w.bob.branches.create(w.thread, "b")),
    "Branches.checkout": lambda w: forbidden(lambda: w.bob.branches.checkout(w.thread, "alt")),
    "Branches.rewind": lambda w: forbidden(lambda: w.bob.branches.rewind(w.thread, w.entry)),
    "Branches.list": lambda w: forbidden(lambda: w.bob.branches.list(w.thread)),
    "Branches.delete": lambda w: forbidden(lambda: w.bob.branches.delete(w.thread, "alt")),
    # -- snapshots, working memory, summaries ------------------------------------------------
    "Snapshots.save": lambda w: forbidden(lambda: w.bob.snapshots.save(w.run, {"x": 1})),
    "Snapshots.load": lambda w: forbidden(lambda: w.bob.snapshots.load(w.run)),
    "Snapshots.delete": lambda w: forbidden(lambda: w.bob.snapshots.delete(w.run)),
    "WorkingMemory.set": lambda w: w.bob.working(w.run).set("k", "bob's"),
    "WorkingMemory.get": lambda w: denied(lambda: w.bob.working(w.run).get("k")),
    "WorkingMemory.delete": lambda w: denied(lambda: w.bob.working(w.run).delete("k")),
    "WorkingMemory.items": lambda w: denied(lambda: w.bob.working(w.run).items()),
    "WorkingMemory.clear": lambda w: w.bob.working(w.run).clear(),
    "Summaries.add": lambda w: (
        denied(lambda: w.bob.summaries.add(content="bob's")),
        widening(lambda: w.bob.summaries.add(content="x", user_id="alice")),
    ),
    "Summaries.list": lambda w: (
        denied(lambda: w.bob.summaries.list()),
        widening(lambda: w.bob.summaries.list(user_id=None)),
    ),
    # -- facts ---------------------------------------------------------------------------
    "Facts.add": lambda w: (
        denied(lambda: w.bob.facts.add(content="bob's fact")),
        widening(lambda: w.bob.facts.add(content="x", user_id="alice")),
    ),
    "Facts.get": lambda w: (
        denied(lambda: w.bob.facts.get(w.fact)),
        denied(lambda: w.root.facts.get(w.fact, user_id="bob")),
        denied(lambda: w.root.facts.get(w.fact, user_id=None)),
    ),
    "Facts.update": lambda w: (
        denied(lambda: w.bob.facts.update(w.fact, content="bob was here")),
        denied(lambda: w.root.facts.update(w.fact, content="x", user_id="bob")),
    ),
    "Facts.supersede": lambda w: denied(lambda: w.bob.facts.supersede(w.fact, "bob was here")),
    "Facts.delete": lambda w: denied(lambda: w.bob.facts.delete(w.fact)),
    "Facts.history": lambda w: denied(lambda: w.bob.facts.history(w.fact)),
    "Facts.list": lambda w: (
        denied(lambda: w.bob.facts.list()),
        denied(lambda: w.root.facts.list(user_id=None)),
    ),
    "Facts.search": lambda w: (
        denied(lambda: w.bob.facts.search(SECRET)),
        denied(lambda: w.root.facts.search(SECRET, user_id=None)),
    ),
    # -- graph ---------------------------------------------------------------------------
    "Graph.add_entity": lambda w: (
        denied(lambda: w.bob.graph.add_entity(f"alice  {SECRET.upper()}", type="person")),
        widening(lambda: w.bob.graph.add_entity("x", user_id="alice")),
        _shared_twin(w),
    ),
    "Graph.get_entity": lambda w: (
        denied(lambda: w.bob.graph.get_entity(w.entity)),
        denied(lambda: w.root.graph.get_entity(w.entity)),
        denied(lambda: w.root.graph.get_entity(w.entity, user_id=None, agent_id="bot")),
    ),
    "Graph.update_entity": lambda w: denied(lambda: w.bob.graph.update_entity(w.entity, name="b")),
    "Graph.add_observations": lambda w: denied(
        lambda: w.bob.graph.add_observations(w.entity, ["bob was here"])
    ),
    "Graph.delete_observations": lambda w: denied(
        lambda: w.bob.graph.delete_observations(w.entity, [SECRET])
    ),
    "Graph.delete_entity": lambda w: denied(lambda: w.bob.graph.delete_entity(w.entity)),
    "Graph.find_entities": lambda w: (
        denied(lambda: w.bob.graph.find_entities()),
        denied(lambda: w.bob.graph.find_entities(SECRET)),
        denied(lambda: w.root.graph.find_entities(SECRET)),
        denied(lambda: w.bob.graph.find_entities(types="location")),
    ),
    "Graph.search_entities": lambda w: (
        denied(lambda: w.bob.graph.search_entities(SECRET, k=50)),
        denied(lambda: w.root.graph.search_entities(SECRET, k=50)),
    ),
    "Graph.merge_entities": lambda w: (
        denied(lambda: w.bob.graph.merge_entities(w.bob_entity, w.entity)),
        denied(lambda: w.bob.graph.merge_entities(w.entity, w.bob_entity)),
    ),
    "Graph.add_relation": lambda w: (
        denied(lambda: w.bob.graph.add_relation(w.bob_entity, "knows", w.entity)),
        denied(lambda: w.bob.graph.add_relation(w.entity, "lives_in", w.bob_entity)),
    ),
    "Graph.get_relation": lambda w: denied(lambda: w.bob.graph.get_relation(w.relation)),
    "Graph.update_relation": lambda w: denied(
        lambda: w.bob.graph.update_relation(w.relation, label="bob")
    ),
    "Graph.invalidate_relation": lambda w: denied(
        lambda: w.bob.graph.invalidate_relation(w.relation)
    ),
    "Graph.delete_relation": lambda w: denied(lambda: w.bob.graph.delete_relation(w.relation)),
    "Graph.relations": lambda w: (
        denied(lambda: w.bob.graph.relations(w.entity, include_invalid=True)),
        denied(lambda: w.bob.graph.relations(w.bob_entity, include_invalid=True)),
    ),
    "Graph.neighbors": lambda w: (
        denied(lambda: w.bob.graph.neighbors(w.entity, depth=5)),
        denied(lambda: w.bob.graph.neighbors(w.bob_entity, depth=5)),
    ),
    "Graph.traverse": lambda w: (
        denied(lambda: w.bob.graph.traverse([w.bob_entity, w.entity])),
        denied(lambda: w.bob.graph.traverse([w.bob_entity], max_depth=10)),
    ),
    "Graph.shortest_path": lambda w: denied(
        lambda: w.bob.graph.shortest_path(w.bob_entity, w.place)
    ),
    "Graph.stats": lambda w: denied(lambda: w.bob.graph.stats()),
    "Graph.clear": lambda w: (
        denied(lambda: w.bob.graph.clear()),
        widening(lambda: w.bob.graph.clear(user_id="alice")),
    ),
    "Graph.infer": lambda w: denied(lambda: w.bob.graph.infer()),
    "Graph.context_block": lambda w: (
        denied(lambda: w.bob.graph.context_block(f"Alice {SECRET} lives where?", max_tokens=2000)),
        denied(lambda: w.root.graph.context_block(f"Alice {SECRET}", max_tokens=2000)),
    ),
    "Graph.ingest": lambda w: forbidden(lambda: w.bob.graph.ingest(w.thread)),
    # -- documents -----------------------------------------------------------------------
    "Documents.add": lambda w: denied(lambda: w.bob.documents.add("bob's notes")),
    "Documents.get": lambda w: denied(lambda: w.bob.documents.get(w.document)),
    "Documents.delete": lambda w: denied(lambda: w.bob.documents.delete(w.document)),
    "Documents.list": lambda w: denied(lambda: w.bob.documents.list()),
    "Documents.search": lambda w: denied(lambda: w.bob.documents.search(SECRET, k=50)),
    # -- core facts ----------------------------------------------------------------------
    "CoreFacts.set": lambda w: (
        denied(lambda: _bob_core(w).set("pin", "bob's")),
        widening(lambda: CoreFacts(memory=w.bob, user_id="alice")),
        widening(lambda: _bob_core(w).set("pin", "x", user_id="alice")),
    ),
    "CoreFacts.get": lambda w: denied(lambda: _bob_core(w).get("pin")),
    "CoreFacts.delete": lambda w: denied(lambda: _bob_core(w).delete("pin")),
    "CoreFacts.history": lambda w: denied(lambda: _bob_core(w).history("pin")),
    "CoreFacts.all": lambda w: denied(lambda: _bob_core(w).all()),
    "CoreFacts.format_for_prompt": lambda w: denied(lambda: _bob_core(w).format_for_prompt()),
    # -- sessions ------------------------------------------------------------------------
    "SessionManager.get_or_create": lambda w: (
        denied(lambda: SessionManager(w.bob).get_or_create(channel_type="web", channel_id="c1")),
        widening(
            lambda: SessionManager(w.bob).get_or_create(
                channel_type="web", channel_id="c1", user_id="alice"
            )
        ),
    ),
    "SessionManager.get": lambda w: forbidden(lambda: SessionManager(w.bob).get(w.session)),
    "SessionManager.update": lambda w: forbidden(
        lambda: SessionManager(w.bob).update(w.session, status="paused")
    ),
    "SessionManager.archive": lambda w: forbidden(lambda: SessionManager(w.bob).archive(w.session)),
    "SessionManager.delete": lambda w: forbidden(lambda: SessionManager(w.bob).delete(w.session)),
    "SessionManager.list": lambda w: denied(lambda: SessionManager(w.bob).list()),
    "SessionManager.compact": lambda w: forbidden(
        lambda: SessionManager(w.bob, _compaction(w)).compact(w.session, threshold=0, keep_recent=0)
    ),
    # -- compaction, context -------------------------------------------------------------
    "CompactionService.compact": lambda w: forbidden(
        lambda: _compaction(w).compact(w.thread, threshold=0, keep_recent=0)
    ),
    "CompactionService.auto_compact": lambda w: forbidden(
        lambda: _compaction(w).auto_compact(w.thread)
    ),
    "CompactionService.restore": lambda w: forbidden(lambda: _compaction(w).restore(w.thread)),
    "ContextBuilder.build": lambda w: (
        forbidden(lambda: _context(w).build(w.thread)),
        denied(lambda: _context(w).build(w.bob_thread, current_input="zanzibar")),
    ),
}


def test_every_public_verb_has_an_isolation_case() -> None:
    verbs = public_verbs()
    missing = sorted(verbs - set(CASES) - set(EXEMPT))
    assert not missing, f"public verbs without an isolation case: {missing}"
    stale = sorted((set(CASES) | set(EXEMPT)) - verbs)
    assert not stale, f"cases for verbs that no longer exist: {stale}"


def test_async_surface_matches_the_sync_one() -> None:
    for cls in SURFACE.values():
        module = importlib.import_module(cls.__module__.replace("._sync.", "._async."))
        twin = getattr(module, "Async" + cls.__name__)
        names = {n for n in vars(twin) if not n.startswith("_")}
        assert names == {n for n in vars(cls) if not n.startswith("_")}, cls.__name__


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
        with _two_stores(str(request.param), tmp_path) as (store, _, _):
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


def test_bob_learns_and_changes_nothing_of_alices(world: World) -> None:
    alice_intact(world)
    failures = []
    for name, case in sorted(CASES.items()):
        try:
            case(world)
            alice_intact(world)
        except Exception as error:  # collect all, so one run shows every leak
            failures.append(f"{name}: {type(error).__name__}: {error}")
    assert not failures, "\n".join(failures)


def test_tenant_and_scope_compose(world: World) -> None:
    other = world.root.tenant(f"other-{uuid.uuid4().hex[:6]}")
    assert other.scoped(user_id="alice").threads.get(world.thread) is None
    handle = world.root.scoped(user_id="alice").tenant(world.root.tenant_id)
    assert handle.scope.user_id == "alice"
    assert handle.history(world.thread)[-1]["content"] == f"noted {SECRET}"
    narrowed = world.root.scoped(user_id="alice").scoped(agent_id="bot")
    assert (narrowed.scope.user_id, narrowed.scope.agent_id) == ("alice", "bot")
    assert narrowed.facts.get(world.fact) is not None
    assert world.root.scoped(user_id="alice", agent_id="other").facts.get(world.fact) is None


#: Writers per side and appends per writer in the concurrent cross-user race.
RACERS = 4
RACE_APPENDS = 8


def test_concurrent_appends_by_another_user_are_refused(world: World) -> None:
    """Bob's appends to alice's thread, racing alice's own, are all refused with
    ``ThreadForbidden`` and write nothing (no entry, on no branch), while every one
    of alice's lands once, at gap-free positions."""
    alice = world.root.scoped(user_id="alice", agent_id="bot")
    before = world.root.entries.list(world.thread)
    alt_before = world.root.entries.count(world.thread, branch="alt")
    start = threading.Barrier(2 * RACERS)

    def owner(writer: int) -> list[str]:
        start.wait()
        ids = []
        for i in range(RACE_APPENDS):
            message = {"role": "user", "content": f"alice {writer} {i}"}
            if i % 2:
                ids += [e.id for e in alice.entries.add_many(world.thread, [message, message])]
            else:
                ids.append(alice.entries.add(world.thread, message).id)
        return ids

    def intruder(writer: int) -> int:
        start.wait()
        attempts: list[Callable[[], object]] = [
            lambda: world.bob.remember(world.thread, "user", f"bob {writer}"),
            lambda: world.bob.entries.add_many(
                world.thread, [{"role": "user", "content": f"bob {writer}"}] * 2
            ),
            lambda: world.bob.entries.add(
                world.thread, {"role": "user", "content": f"bob {writer}"}, branch="alt"
            ),
        ]
        for i in range(RACE_APPENDS):
            with pytest.raises(ThreadForbidden):
                attempts[i % len(attempts)]()
        return RACE_APPENDS

    with ThreadPoolExecutor(2 * RACERS) as pool:
        owners = [pool.submit(owner, w) for w in range(RACERS)]
        intruders = [pool.submit(intruder, w) for w in range(RACERS)]
        landed = [i for f in owners for i in f.result()]
        assert sum(f.result() for f in intruders) == RACERS * RACE_APPENDS
    after = world.root.entries.list(world.thread)
    assert len(landed) == len(set(landed)) == RACERS * RACE_APPENDS * 3 // 2
    ids = [e.id for e in after]
    assert ids[: len(before)] == [e.id for e in before]
    assert sorted(ids[len(before) :]) == sorted(landed)
    contents = [e.content for e in after[len(before) :]]
    for batch in {c for c in contents if c is not None and int(c.split()[-1]) % 2}:
        first = contents.index(batch)  # a batch of two lands together
        assert contents[first + 1] == batch and contents.count(batch) == 2
    assert [e.position for e in after] == list(range(1, len(after) + 1))
    assert not any("bob" in (e.content or "") for e in after)
    assert world.root.entries.count(world.thread, branch="alt") == alt_before
    thread = world.root.threads.get(world.thread)
    assert thread is not None and thread.user_id == "alice"


# -- the stores' fast paths, attacked below the defence in depth of ``Memory`` --------------
#
# ``Memory`` re-checks what a store returns (threads of hits, records' owners), so a
# store that over-shares would not show in the cases above. These tests call the stores'
# own reads with another tenant's ids and with scopes, through a second store object
# (another process's caches: stale vector slots, ANN indexes built before deletes), on
# every store, PostgreSQL with pgvector (exact and HNSW) included.

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
#: Vectors of a tenant's entries above which the vector caches build an ANN index here.
ANN_ROWS = 40
STORE_KINDS_VEC = (*WITH_CLUSTER, "sqlite+qdrant", "pgvector", "pgvector-hnsw")


def _open_more(spec: StoreSpec, opened: list[Any], index: Any = None) -> Any:
    """Another store object on ``spec`` (its vectors in ``index`` when given)."""
    from memorybank._sync.vector_index import indexed

    opened.append(spec.open() if index is None else indexed(spec.open(), index))
    return opened[-1]


@contextmanager
def _two_stores(kind: str, tmp_path: Path) -> Iterator[tuple[Any, Any, Callable[[], Any]]]:
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


def _fill(root: Memory, tag: str) -> Truth:
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
    from memorybank.stores import _vector_files, _vectors

    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", ANN_ROWS)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", ANN_ROWS // 2)
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
    with _two_stores(kind, tmp_path) as (writer, reader, more):
        with Memory(writer, embedder=embedder) as memory:
            root = memory.tenant(tenant)
            truth = _fill(root, "one")
            # the same thread ids, user and agent names in tenants that differ by a space/case
            others = {
                name: _fill(memory.tenant(name), tag)
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
                from memorybank._sync.stores.postgres import _vectors as pg_vectors

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


#: The graph's record kinds: relations stored under each end, names, entities.
GRAPH_KINDS = ("graph_out", "graph_in", "graph_name", "graph_entity")


def _graph_owners(store: Any, tenant: str) -> dict[str, tuple[str | None, str | None]]:
    """Every graph record of ``tenant`` (read unscoped) -> its owner."""
    return {
        r.id: (r.agent_id, r.user_id)
        for kind in GRAPH_KINDS
        for r in store.record_list(tenant, kind)
    }


def _entity_of(truth: Truth, agent: str | None, user: str | None) -> str:
    """The first graph entity of this owner."""
    return next(
        r for (k, r), o in truth.records.items() if k == "graph_entity" and o == (agent, user)
    )


@pytest.mark.parametrize("kind", WITH_CLUSTER)
def test_store_batch_reads_by_id_stay_in_tenant_thread_and_scope(kind: str, tmp_path: Path) -> None:
    """The batch reads by id (``thread_get_many``, ``entry_get_many``,
    ``entry_get_across``, ``record_get_many``, ``count_entries_many``,
    ``entry_windows``) and the graph's linked reads (``record_list_keys_linked``,
    ``record_list_links``) given another tenant's ids, ids of another thread, or deleted
    ids, in tenants that hold the same thread ids: what they return is the asking
    tenant's, of the thread named, alive, and (linked reads) in scope."""
    tenant = f"iso-{uuid.uuid4().hex[:6]}"
    other = tenant + " "  # differs by a trailing space only: another tenant
    with _two_stores(kind, tmp_path) as (writer, store, _):
        with Memory(writer) as memory:
            one = _fill(memory.tenant(tenant), "one")
            two = _fill(memory.tenant(other), "two")
            alice = memory.tenant(tenant).scoped(user_id="alice", agent_id="bot")
            ta = [e for e, t in one.entries.items() if t == "ta"]
            alice.entries.delete("ta", ta[0])
            one.gone.add(ta[0])
        # shared links (written under the graph, as no Memory call writes them) from a
        # shared entity to alice's, and to the other tenant's: the far ends are scoped
        for here, there in ((tenant, one), (other, two)):
            shared = _entity_of(there, None, None)
            now = memory.now()
            writer.record_put(here, [
                Record("graph_out", f"x-out-{n}", None, None, "", {"target_id": far}, now,
                       now, key=shared)
                for n, far in enumerate((_entity_of(there, "bot", "alice"), _entity_of(
                    two if there is one else one, None, None)))
            ] + [
                Record("graph_in", f"x-in-{n}", None, None, "", {"source_id": far}, now,
                       now, key=shared)
                for n, far in enumerate((_entity_of(there, "bot", "alice"), _entity_of(
                    two if there is one else one, None, None)))
            ] + [
                Record("graph_name", "x-name", None, None, "",
                       {"entity_id": _entity_of(there, "bot", "alice")}, now, now, key="x-name")
            ])  # fmt: skip
        by_thread = {t: [e for e, tt in one.entries.items() if tt == t] for t in one.owners}
        every = [e for ids in by_thread.values() for e in ids]
        # threads: the asking tenant's own, of the same ids
        threads = store.thread_get_many(other, [*one.owners, "missing"])
        assert set(threads) == set(two.owners)
        assert {t.tenant_id for t in threads.values()} == {other}
        # entries by id: never another tenant's, another thread's, or a deleted one
        for tid in one.owners:
            assert store.entry_get_many(other, tid, every) == {}
            got = store.entry_get_many(tenant, tid, every)
            assert set(got) == set(by_thread[tid]) - one.gone
            assert all(e.thread_id == tid for e in got.values())
        assert store.entry_get_across(other, dict.fromkeys(one.owners, every)) == {}
        across = store.entry_get_across(tenant, dict.fromkeys(one.owners, every))
        assert set(across) == {(one.entries[e], e) for e in every if e not in one.gone}
        counts = store.count_entries_many(other, list(one.owners))
        assert counts == {t: len([e for e in two.entries.values() if e == t]) for t in two.owners}
        windows = store.entry_windows(other, [(t, 1, LAST_POSITION) for t in one.owners])
        assert {e.id for w in windows for e in w} == set(two.entries)
        # records by id: another tenant's ids are missing ids
        for rkind in ("document", "fact", "graph_entity"):
            ids = [r for (k, r) in one.records if k == rkind]
            assert store.record_get_many(other, rkind, ids) == {}
            assert set(store.record_get_many(tenant, rkind, ids)) == set(ids)
        # the graph's linked reads, keyed by both tenants' entity ids
        owners = {t: _graph_owners(store, t) for t in (tenant, other)}
        keys = [r for (k, r) in (*one.records, *two.records) if k == "graph_entity"]
        links = {"graph_out": "target_id", "graph_in": "source_id"}
        for asking in (tenant, other):
            mine = owners[asking]
            for agent, user in SCOPES:
                scope = Visibility(agent, user)
                label = f"{asking!r} {scope}"
                by, far = store.record_list_keys_linked(
                    asking, links, keys, "graph_entity", visible_to=scope
                )
                read = [*(r for rs in by.values() for r in rs), *far.values()]
                for record in read:
                    assert record.id in mine, f"{label}: {record.kind} {record.id} elsewhere"
                    assert scope.admits(*mine[record.id]), f"{label}: {record.id} leaked"
                assert all(far_id == r.id for far_id, r in far.items())
                for lkind, field in links.items():
                    for record in store.record_list_links(
                        asking, lkind, keys, field, keys, visible_to=scope
                    ):
                        assert record.id in mine and scope.admits(*mine[record.id]), label
                names = store.record_list_keys_linked(
                    asking, {"graph_name": "entity_id"}, [
                        r.key for r in store.record_list(asking, "graph_name") if r.key
                    ] + [r.key for r in store.record_list(tenant, "graph_name") if r.key],
                    "graph_entity", visible_to=scope,
                )  # fmt: skip
                if scope.admits(None, None):  # the crafted shared links were read
                    assert {r.id for rs in by.values() for r in rs} >= {"x-out-0", "x-in-0"}
                    assert any(r.id == "x-name" for r in names[0]["graph_name"])
                for record in [*names[0]["graph_name"], *names[1].values()]:
                    assert record.id in mine and scope.admits(*mine[record.id]), label
            # a positive control: alice's scope reads her relations and their far ends
            by, far = store.record_list_keys_linked(
                asking, links, keys, "graph_entity", visible_to=Visibility("bot", "alice")
            )
            assert by["graph_out"] and far


#: Owners of the combined-append race (two differ from "alice" by case or a space only)
#: and appends per owner.
RACE_OWNERS = ("alice", "Alice", "alice ", "bob")
COMBINED_APPENDS = 12


@pytest.fixture(params=STORE_KINDS)
def race_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec | None]:
    """Where the combined-append race runs: a fresh spec, or ``None`` (in memory)."""
    if request.param == "memory":
        yield None
        return
    yield from provide("sqlite-full" if request.param == "sqlite" else request.param, tmp_path)


class _Recorder:
    """Wraps a store's append combiner's batch function (sync or async: the call is
    passed through): who shared each batch."""

    def __init__(self, combiner: Any) -> None:
        self.run = combiner._run
        self.batches: list[list[tuple[str, Any]]] = []
        combiner._run = self

    def __call__(self, tenant: str, items: Sequence[Any]) -> Any:
        self.batches.append([(tenant, item[2]) for item in items])
        return self.run(tenant, items)

    def check(self) -> None:
        """The race did combine different owners in one batch, and never two tenants."""
        assert any(len({owner for _, owner in b}) > 1 for b in self.batches), self.batches[:5]
        assert all(len({t for t, _ in b}) == 1 for b in self.batches)


class _Race:
    """The combined-append race: four owners (two differ from "alice" by case or a
    space) own a thread each in two tenants that differ by a trailing space, the same
    thread ids with the owners rotated; every owner appends to every thread."""

    def __init__(self) -> None:
        tenant = f"iso-{uuid.uuid4().hex[:6]}"
        self.tenants = {tenant: RACE_OWNERS, tenant + " ": RACE_OWNERS[1:] + RACE_OWNERS[:1]}
        self.threads = [f"t{n}" for n in range(len(RACE_OWNERS))]
        self.calls = [
            (name, owner, tid, i)
            for i in range(COMBINED_APPENDS)
            for name, owners in self.tenants.items()
            for owner in owners
            for tid in self.threads
        ]

    def owned(self) -> list[tuple[str, str, str]]:
        """(tenant, thread, owner) of every thread."""
        return [
            (name, tid, owner)
            for name, owners in self.tenants.items()
            for tid, owner in zip(self.threads, owners, strict=True)
        ]

    @staticmethod
    def message(name: str, owner: str, tid: str, i: int) -> dict[str, str]:
        return {"role": "user", "content": f"{name}|{owner}|{tid}|{i}"}

    def check_results(self, results: Sequence[str | None]) -> None:
        """Each owner's appends landed, every other one was refused."""
        owner_of = {(name, tid): owner for name, tid, owner in self.owned()}
        for (name, owner, tid, _), landed in zip(self.calls, results, strict=True):
            assert (landed is not None) == (owner_of[name, tid] == owner), (name, owner, tid)

    def check_thread(self, name: str, tid: str, owner: str, entries: Any, count: int) -> None:
        """The thread holds its owner's appends only, gap-free, counted."""
        assert [e.content.rsplit("|", 1)[0] for e in entries if e.content] == [
            f"{name}|{owner}|{tid}"
        ] * COMBINED_APPENDS
        assert [e.position for e in entries] == list(range(1, COMBINED_APPENDS + 1))
        assert count == COMBINED_APPENDS


async def test_combined_appends_of_many_owners_and_tenants_stay_apart(
    race_spec: StoreSpec | None,
) -> None:
    """Concurrent appends (the server stores combine them: one transaction for many
    callers of a tenant) by four owners to their own threads, and by each to every other
    owner's thread, in two tenants holding the same thread ids (``_Race``): every owner's
    append lands in its own thread of its own tenant, gap-free, counted; every other one
    is refused and writes nothing."""
    from memorybank import AsyncMemory
    from memorybank._async.stores.memory import AsyncInMemoryStore

    store = AsyncInMemoryStore() if race_spec is None else race_spec.open_async(pool_size=8)
    combiner = getattr(store, "_appends", None)
    recorder = None if combiner is None else _Recorder(combiner)
    race = _Race()
    try:
        async with AsyncMemory(store) as memory:
            for name, tid, owner in race.owned():
                await memory.tenant(name).threads.create(thread_id=tid, user_id=owner)

            async def append(name: str, owner: str, tid: str, i: int) -> str | None:
                handle = memory.tenant(name).scoped(user_id=owner, agent_id="bot")
                message = race.message(name, owner, tid, i)
                try:
                    if i % 3:
                        return (await handle.remember(tid, "user", message["content"])).id
                    return (await handle.entries.add_many(tid, [message]))[0].id
                except ThreadForbidden:
                    return None

            race.check_results(await asyncio.gather(*(append(*c) for c in race.calls)))
            for name, tid, owner in race.owned():
                handle = memory.tenant(name)
                entries = await handle.entries.list(tid)
                race.check_thread(name, tid, owner, entries, await handle.entries.count(tid))
    finally:
        await store.close()
    if recorder is not None:
        recorder.check()


def test_combined_appends_from_threads_stay_apart(race_spec: StoreSpec | None) -> None:
    """The same race through the sync stores, from threads (their combiner's sync twin)."""
    store = InMemoryStore() if race_spec is None else race_spec.open()
    combiner = getattr(store, "_appends", None)
    recorder = None if combiner is None else _Recorder(combiner)
    race = _Race()
    try:
        with Memory(store) as memory:
            for name, tid, owner in race.owned():
                memory.tenant(name).threads.create(thread_id=tid, user_id=owner)

            def append(name: str, owner: str, tid: str, i: int) -> str | None:
                handle = memory.tenant(name).scoped(user_id=owner, agent_id="bot")
                message = race.message(name, owner, tid, i)
                try:
                    if i % 3:
                        return handle.remember(tid, "user", message["content"]).id
                    return handle.entries.add_many(tid, [message])[0].id
                except ThreadForbidden:
                    return None

            with ThreadPoolExecutor(16) as pool:
                race.check_results(list(pool.map(lambda c: append(*c), race.calls)))
            for name, tid, owner in race.owned():
                handle = memory.tenant(name)
                entries = handle.entries.list(tid)
                race.check_thread(name, tid, owner, entries, handle.entries.count(tid))
    finally:
        store.close()
    if recorder is not None:
        recorder.check()


def test_forget_user_leaves_nothing_of_alice_to_any_reader(world: World) -> None:
    """After ``forget_user("alice")`` no read finds anything of hers, not even the trusted
    root's: searches in every mode with earlier fact values, her fact's history, the
    fact, document and graph lists, her core facts, snapshot and summaries; the store's
    vector search finds none of her ids (embedded and pgvector stores alike)."""
    root = world.root
    assert root.forget_user("alice") > 0
    reads: list[Callable[[], object]] = [
        *(
            functools.partial(
                root.search,
                SECRET,
                k=100,
                mode=mode,
                kinds=("entries", "documents", "facts"),
                include_history=True,
            )
            for mode in ("hybrid", "semantic", "keyword")
        ),
        lambda: root.facts.list(),
        lambda: root.facts.history(world.fact),
        lambda: root.facts.search(SECRET),
        lambda: root.documents.list(),
        lambda: root.documents.search(SECRET, k=100),
        lambda: root.graph.find_entities(),
        lambda: root.graph.search_entities(SECRET, k=100),
        lambda: root.threads.list(),
        lambda: root.summaries.list(agent_id="bot"),
        lambda: CoreFacts(memory=root, user_id="alice").all(),
        lambda: root.snapshots.load(world.run),
        lambda: SessionManager(root).list(),
    ]
    for read in reads:
        assert SECRET not in repr(read())
    store = root._core.store
    embedder = root.embedder
    assert embedder is not None
    query = embedder.embed([f"alice {SECRET} zanzibar"])[0]
    ids = {world.entry, world.fact, world.document, world.entity, world.place}
    hits = store.vector_search(
        root.tenant_id,
        query,
        model_id=embedder.model_id,
        kinds=["entry", "document", "fact", "graph_entity"],
        k=500,
    )
    assert not ids & {h.id for h in hits}


def test_search_and_context_on_the_store_native_paths_keep_scope(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search and context cases again with every search on the store-native path (as
    for a caller with too many threads or entries to rank whole): candidates from the
    stores' keyword and vector searches, scoped there, resolved in batches."""
    from memorybank._sync import search as sync_search

    monkeypatch.setattr(sync_search, "SCOPE_THREAD_LIMIT", 0)
    monkeypatch.setattr(sync_search, "THREAD_RANK_LIMIT", 0)
    for name in ("Memory.search", "Memory.build_context", "ContextBuilder.build"):
        CASES[name](world)
    alice_intact(world)
    # the path does find what its caller may see (not vacuous)
    mine = world.bob.search("zanzibar", k=10, mode="hybrid")
    assert any(h.entry is not None and h.entry.thread_id == world.bob_thread for h in mine)
