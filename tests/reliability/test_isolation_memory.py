"""Isolation through ``Memory`` beyond the per-verb cases (``test_isolation_verbs.py``):
tenants and scopes composed on one handle, and ``forget_user`` leaving nothing of
alice's to any reader, the trusted root and the store's vector search included."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable

from memorybank import CoreFacts, SessionManager
from tests.reliability import _isolation
from tests.reliability._isolation import SECRET, World

world = _isolation.world  # the fixture: alice's world on every store


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
