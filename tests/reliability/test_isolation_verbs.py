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

import functools
import importlib
import inspect
import re
from collections.abc import Callable
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
from memorybank.consolidation._sync.consolidation import Consolidation
from memorybank.context._sync.builder import ContextBuilder as SyncContextBuilder
from memorybank.context._sync.compaction import CompactionService as SyncCompaction
from memorybank.context._sync.sessions import SessionManager as SyncSessions
from memorybank.context._sync.turn import Turn
from memorybank.core._sync.embedding import Embedding
from memorybank.core._sync.facts import Facts
from memorybank.graph._sync import Graph
from memorybank.memory._sync.core_facts import CoreFacts as SyncCoreFacts
from memorybank.memory._sync.documents import Documents
from memorybank.memory._sync.events import Events
from memorybank.memory._sync.memory import (
    Branches,
    Entries,
    Snapshots,
    Summaries,
    Threads,
    WorkingMemory,
)
from memorybank.retention import RetentionPolicy
from memorybank.stores.contract.capabilities import Capability
from tests.reliability import _isolation
from tests.reliability._isolation import SECRET, World, alice_intact

#: The public surface: class name -> class. Async twins are checked to match below.
SURFACE: dict[str, type] = {
    "Memory": Memory,
    "Threads": Threads,
    "Entries": Entries,
    "Branches": Branches,
    "Snapshots": Snapshots,
    "Summaries": Summaries,
    "Facts": Facts,
    "Consolidation": Consolidation,
    "Graph": Graph,
    "Documents": Documents,
    "Events": Events,
    "Embedding": Embedding,
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
    "Embedding.status": "counts the handle's tenant's embedding backlog; no record in it",
    "Embedding.totals": "counts the memory's embedding backlog; no record or principal in it",
    "Embedding.flush": "waits for the embedding backlog; returns only whether it emptied",
    "Embedding.start": "queues the resumption of the journal; returns nothing",
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


def missing(call: Callable[[], Any]) -> bool:
    with pytest.raises(NotFound):
        call()
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
    return SyncContextBuilder(
        ContextOptions(max_tokens=2000, include_facts=True, include_profile=True), w.bob
    )


def _shared_twin(w: World) -> bool:
    """A shared entity of alice's private one's name is another entity (no merge into hers)."""
    twin = w.root.graph.add_entity(f"Alice {SECRET}", type="person", user_id=None, agent_id="bot")
    assert twin.id != w.entity and twin.observations == ()
    assert w.root.graph.delete_entity(twin.id, user_id=None, agent_id="bot")
    return True


def _alices_events_are_not_bobs(w: World) -> bool:
    """With the feed on, alice's changes (a thread made, written and deleted again: her
    world stays as it was) are in the tenant's feed and in hers, never in bob's or the
    shared user's, with their content (``content=True``) or without."""
    passing = None
    if Capability.EVENTS in w.root.store.capabilities:
        w.root.events.enable()
        alice = w.root.scoped(user_id="alice", agent_id="bot")
        passing = alice.threads.create(title=f"passing {SECRET}")
        alice.entries.add(passing.id, {"role": "user", "content": f"passing {SECRET}"})
        mine = [e for e in alice.events.list(limit=1000) if e.thread_id == passing.id]
        assert [e.kind for e in mine] == ["thread.created", "entry.added"]
        assert all(e.user_id == "alice" for e in alice.events.list(limit=1000))
        shown = alice.events.list(limit=1000, content=True)
        assert f"passing {SECRET}" in [e.content for e in shown]  # content is read for her
    for handle in _outsiders(w):
        for content in (False, True):
            listed = functools.partial(handle.events.list, limit=1000, content=content)
            seen: list[Any] = denied(listed)
            assert all(e.user_id != "alice" for e in seen), handle.scope
    if passing is not None:
        w.root.scoped(user_id="alice", agent_id="bot").threads.delete(passing.id)
    assert widening(lambda: w.bob.scoped(user_id="alice").events.list())
    return True


def _alices_run(w: World) -> str:
    """A consolidation run over alice's facts (nothing to merge: her world is unchanged)."""
    return w.root.consolidate(user_id="alice", agent_id="bot").run_id


def _consolidate(w: World) -> bool:
    widening(lambda: w.bob.consolidate(user_id="alice"))
    widening(lambda: w.bob.consolidate(user_id=None))
    mine = denied(lambda: w.bob.consolidate())
    assert mine.user_id == "bob" and all(c.into != w.fact for c in mine.changes)
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
                    include_profile=True,
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
    # bob's runs only: alice's working memory (the world's run) is not among them
    "Memory.working_runs": lambda w: denied(lambda: w.bob.working_runs()),
    "Memory.forget_user": lambda w: widening(lambda: w.bob.forget_user("alice")),
    "Memory.consolidate": _consolidate,
    "Memory.profile": lambda w: (
        widening(lambda: w.bob.profile("alice"))
        and widening(lambda: w.root.scoped(user_id=None).profile("alice"))
        and denied(lambda: w.bob.profile()).user_id == "bob"
        and denied(lambda: w.bob.profile()).facts == 0
    ),
    "Memory.feedback": lambda w: (
        missing(lambda: w.bob.feedback(w.fact, useful=False)),
        widening(lambda: w.bob.feedback(w.fact, useful=False, user_id="alice")),
    ),
    "Consolidation.run": lambda w: widening(lambda: w.bob.consolidation.run(user_id="alice")),
    "Consolidation.runs": lambda w: (
        (_alices_run(w) not in [r.run_id for r in denied(lambda: w.bob.consolidation.runs())])
        or pytest.fail("bob lists alice's run")
    ),
    "Consolidation.report": lambda w: missing(lambda: w.bob.consolidation.report(_alices_run(w))),
    "Consolidation.undo": lambda w: missing(lambda: w.bob.consolidation.undo(_alices_run(w))),
    # bob completes only interrupted runs he may see (none of alice's)
    "Consolidation.resume": lambda w: denied(lambda: w.bob.consolidation.resume()) == [],
    # the background worker acts for every owner: a scoped handle may not drive it
    "Consolidation.tick": lambda w: refused(lambda: w.bob.consolidation.tick(), "scope"),
    "Consolidation.start": lambda w: refused(lambda: w.bob.consolidation.start(), "scope"),
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
    "Snapshots.list": lambda w: (
        denied(lambda: w.bob.snapshots.list()),
        widening(lambda: w.bob.snapshots.list(user_id="alice")),
    ),
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
    # -- the change feed -----------------------------------------------------------------
    "Events.list": lambda w: _alices_events_are_not_bobs(w),
    "Events.enable": lambda w: refused(lambda: w.bob.events.enable(), "scope"),
    "Events.disable": lambda w: refused(lambda: w.bob.events.disable(), "scope"),
    "Events.keep": lambda w: denied(lambda: w.bob.events.keep()),
    "Events.prune": lambda w: refused(lambda: w.bob.events.prune(), "scope"),
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
        module = importlib.import_module(re.sub(r"\._sync(?=\.|$)", "._async", cls.__module__))
        twin = getattr(module, "Async" + cls.__name__)
        names = {n for n in vars(twin) if not n.startswith("_")}
        assert names == {n for n in vars(cls) if not n.startswith("_")}, cls.__name__


world = _isolation.world  # the fixture: alice's world on every store


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


def test_search_and_context_on_the_store_native_paths_keep_scope(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search and context cases again with every search on the store-native path (as
    for a caller with too many threads or entries to rank whole): candidates from the
    stores' keyword and vector searches, scoped there, resolved in batches."""
    from memorybank.recall._sync import search as sync_search

    monkeypatch.setattr(sync_search, "HYBRID_CANDIDATES", 30)
    for name in ("Memory.search", "Memory.build_context", "ContextBuilder.build"):
        CASES[name](world)
    alice_intact(world)
    # the path does find what its caller may see (not vacuous)
    mine = world.bob.search("zanzibar", k=10, mode="hybrid")
    assert any(h.entry is not None and h.entry.thread_id == world.bob_thread for h in mine)


def test_usage_of_alices_items_is_not_bobs(world: World) -> None:
    """``memory.usage`` (a library namespace, not a declared verb) keeps the one scope
    rule: bob can neither read nor change the importance of alice's fact, and naming
    alice widens his scope; her item's usage is as it was."""
    w = world
    before = w.root.usage.get("fact", w.fact, user_id="alice")
    assert missing(lambda: w.bob.usage.get("fact", w.fact))
    assert missing(lambda: w.bob.usage.set("fact", w.fact, 0.9))
    assert missing(lambda: w.bob.usage.rate("fact", w.fact, useful=True))
    assert widening(lambda: w.bob.usage.set("fact", w.fact, 0.9, user_id="alice"))
    assert w.root.usage.get("fact", w.fact, user_id="alice") == before
    alice_intact(w)
