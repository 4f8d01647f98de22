"""Facts in ``memory.search`` (``kinds=(..., "facts")``) on every store and the remote one.

Two ranking paths are covered: a caller who sees few threads and facts has them
ranked whole ("whole"); with the limits forced to zero the same questions go
through the stores' keyword and vector candidates ("candidates").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from memorybank import InvalidInput, Memory
from memorybank.recall._sync import fact_recall
from memorybank.records import Hit
from memorybank.stores import Store
from memorybank.stores.http._sync.store import HTTPStore
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from tests.all_stores import STORE_KINDS, open_store
from tests.stores.http_server import live_server

from .conftest import HashEmbedder

ALL = ("entries", "documents", "facts")
DOG = "The user's dog is named Biscuit"


@contextmanager
def any_store(kind: str, tmp_path: Path) -> Iterator[Store]:
    if kind != "http":
        with open_store(kind, tmp_path) as store:
            yield store
        return
    with live_server(lambda: AsyncSQLiteStore(tmp_path / "server.db"), ["t"]) as server:
        store = HTTPStore(server.url, api_key=server.keys["t"], timeout=30)
        try:
            yield store
        finally:
            store.close()


@pytest.fixture(params=["whole", "candidates"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "candidates":
        monkeypatch.setattr(fact_recall, "FACT_RANK_LIMIT", 0)
    return str(request.param)


def _seed(memory: Memory) -> dict[str, str]:
    """Alice's conversation about her dog, the fact drawn from it, and others' facts."""
    thread = memory.threads.create(user_id="alice", agent_id="a")
    turns = memory.entries.add_many(
        thread.id,
        [
            {"role": "user", "content": "Guess what, we got a puppy last week!"},
            {"role": "assistant", "content": "Congratulations! What is its name?"},
            {"role": "user", "content": "We call him Biscuit, he is a golden retriever."},
            {"role": "assistant", "content": "Biscuit is a lovely name for a retriever."},
            {"role": "user", "content": "I'm allergic to cilantro, never suggest it."},
            {"role": "assistant", "content": "Noted, no cilantro."},
        ],
    )
    dog = memory.facts.add(content=DOG, user_id="alice", agent_id="a", source_entries=[turns[2].id])
    other = memory.facts.add(content="Bob's dog is named Rex", user_id="bob", agent_id="a")
    shared = memory.facts.add(content="The pet shop opens at nine", agent_id="a")
    foreign = memory.facts.add(content="The dog park is closed", agent_id="other")
    expired = memory.facts.add(
        content="Dog grooming discount this week",
        user_id="alice",
        agent_id="a",
        expires_at=memory._core.now() - timedelta(seconds=1),
    )
    return {
        "dog": dog.id,
        "other": other.id,
        "shared": shared.id,
        "foreign": foreign.id,
        "expired": expired.id,
        "turn": turns[2].id,
    }


def _fact_ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits if h.kind == "fact"]


@pytest.mark.parametrize("kind", [*STORE_KINDS, "http"])
def test_facts_join_search_scoped_and_ranked(kind: str, path: str, tmp_path: Path) -> None:
    with any_store(kind, tmp_path) as store:
        memory = Memory(store, embedder=HashEmbedder())
        ids = _seed(memory)
        question = "What is the name of my dog?"
        hits = memory.search(question, user_id="alice", agent_id="a", kinds=ALL)
        # the fact answers the question: it outranks the turn it came from
        assert hits[0].kind == "fact" and hits[0].id == ids["dog"], [h.content for h in hits]
        assert hits[0].fact is not None and hits[0].fact.content == DOG
        assert hits[0].content == DOG and not hits[0].superseded
        assert hits[0].fact.source_entries == (ids["turn"],)
        turn = [h for h in hits if h.kind == "entry" and h.id == ids["turn"]]
        assert turn and turn[0].score < hits[0].score
        # default kinds: no facts (unchanged behaviour)
        assert "fact" not in {h.kind for h in memory.search(question, user_id="alice")}
        for mode in ("hybrid", "keyword", "semantic"):
            for query in (question, "dog", "pet shop nine", "dog park grooming"):
                seen = _fact_ids(
                    memory.search(query, mode=mode, user_id="alice", agent_id="a", kinds=ALL, k=50)
                )
                # never another user's or another agent's fact, never an expired one
                assert not {ids["other"], ids["foreign"], ids["expired"]} & set(seen), (mode, query)
            shop = memory.search(
                "pet shop nine", mode=mode, user_id="alice", agent_id="a", kinds=("facts",)
            )
            assert _fact_ids(shop)[:1] == [ids["shared"]], mode  # shared facts are visible
            bob = memory.search("dog", mode=mode, user_id="bob", agent_id="a", kinds=("facts",))
            assert ids["other"] in _fact_ids(bob) and ids["dog"] not in _fact_ids(bob)
        # user_id=None sees shared facts only
        nobody = memory.search("dog shop", user_id=None, agent_id="a", kinds=("facts",), k=50)
        assert set(_fact_ids(nobody)) == {ids["shared"]}
        # a scoped handle is confined the same way
        scoped = memory.scoped(user_id="bob", agent_id="a")
        assert ids["dog"] not in _fact_ids(scoped.search("dog Biscuit", kinds=ALL, k=50))


@pytest.mark.parametrize("kind", [*STORE_KINDS, "http"])
def test_include_history_adds_superseded_values(kind: str, path: str, tmp_path: Path) -> None:
    with any_store(kind, tmp_path) as store:
        memory = Memory(store, embedder=HashEmbedder())
        fact = memory.facts.add(content="Alice lives in Rome", user_id="alice", agent_id="a")
        memory.facts.supersede(fact.id, "Alice lives in Berlin", user_id="alice")
        bob = memory.facts.add(content="Bob lives in Oslo", user_id="bob", agent_id="a")
        memory.facts.supersede(bob.id, "Bob lives in Rome", user_id="bob")
        for mode in ("hybrid", "keyword", "semantic"):
            hits = memory.search(
                "Where does Alice live, Rome?", mode=mode, user_id="alice", kinds=("facts",)
            )
            assert [(h.content, h.superseded) for h in hits] == [("Alice lives in Berlin", False)]
            hits = memory.search(
                "Where does Alice live, Rome?",
                mode=mode,
                user_id="alice",
                kinds=("facts",),
                include_history=True,
            )
            found = {(h.content, h.superseded, h.fact.version) for h in hits if h.fact}
            assert ("Alice lives in Rome", True, 1) in found, mode
            assert ("Alice lives in Berlin", False, 2) in found, mode
            assert {h.id for h in hits} == {fact.id}  # never bob's values, old or new
            assert not [h for h in hits if "Oslo" in (h.content or "")]


def test_bad_kinds_and_history_are_refused(tmp_path: Path) -> None:
    memory = Memory(f"sqlite:///{tmp_path / 'x.db'}")
    memory.facts.add(content="Alice lives in Rome", user_id="alice")
    bad: list[object] = [("facts", "bogus"), ("fact",), [1]]
    for kinds in bad:
        with pytest.raises(InvalidInput) as error:
            memory.search("Rome", kinds=kinds)  # type: ignore[arg-type]
        assert error.value.field == "kinds"
    for kinds, history in ((("entries", "documents"), True), (ALL, "yes"), (ALL, 1)):
        with pytest.raises(InvalidInput) as error:
            memory.search("Rome", kinds=kinds, include_history=history)  # type: ignore[arg-type]
        assert error.value.field == "include_history"
    # a thread search holds entries only, as for documents
    thread = memory.threads.create(user_id="alice")
    memory.entries.add(thread.id, {"role": "user", "content": "I moved to Rome"})
    hits = memory.search("Rome", thread_id=thread.id, user_id="alice", kinds=ALL)
    assert [h.kind for h in hits] == ["entry"]


def test_facts_rank_without_an_embedder(tmp_path: Path) -> None:
    memory = Memory(f"sqlite:///{tmp_path / 'x.db'}")
    ids = _seed(memory)
    hits = memory.search("What is the name of my dog?", user_id="alice", agent_id="a", kinds=ALL)
    assert hits[0].id == ids["dog"]


def test_facts_written_before_the_embedder_are_ranked_by_meaning(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    with Memory(url) as plain:  # no vectors stored for these facts
        plain.facts.add(content="Alice drives an automobile to work", user_id="alice")
        plain.facts.add(content="Alice is allergic to cilantro", user_id="alice")
    embedder = HashEmbedder()
    with Memory(url, embedder=embedder) as memory:
        for mode in ("semantic", "hybrid"):  # "car" and "automobile" share no keyword
            hits = memory.search("car", mode=mode, user_id="alice", kinds=("facts",), k=1)
            assert [h.content for h in hits] == ["Alice drives an automobile to work"], mode
        calls = len(embedder.calls)
        memory.search("my car", user_id="alice", kinds=("facts",), k=1)
        assert len(embedder.calls) == calls + 1  # only the query: the facts' vectors are cached


def test_search_sees_facts_as_they_change(tmp_path: Path) -> None:
    memory = Memory(f"sqlite:///{tmp_path / 'x.db'}", embedder=HashEmbedder())
    thread = memory.threads.create(user_id="alice")
    memory.entries.add(thread.id, {"role": "user", "content": "I like walking by the river"})

    def facts(query: str) -> list[str | None]:
        hits = memory.search(query, user_id="alice", kinds=ALL)
        return [h.content for h in hits if h.kind == "fact"]

    assert facts("river") == []
    fact = memory.facts.add(content="Alice walks by the river daily", user_id="alice")
    assert facts("river") == ["Alice walks by the river daily"]
    memory.facts.update(fact.id, content="Alice swims in the lake", user_id="alice")
    assert facts("river") == facts("lake") == ["Alice swims in the lake"]  # only the new value
    memory.facts.delete(fact.id, user_id="alice")
    assert facts("lake") == []


async def test_async_search_returns_facts() -> None:
    from memorybank import AsyncMemory

    async with AsyncMemory("memory://", embedder=HashEmbedder()) as memory:
        fact = await memory.facts.add(content=DOG, user_id="alice")
        await memory.facts.supersede(fact.id, "The user's dog is named Rex", user_id="alice")
        hits = await memory.search(
            "dog named Biscuit", user_id="alice", kinds=("facts",), include_history=True
        )
        assert (hits[0].kind, hits[0].content, hits[0].superseded) == ("fact", DOG, True)
        with pytest.raises(InvalidInput):
            await memory.search("dog", include_history=True)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_fact_that_matches_nothing_is_no_hit(kind: str, tmp_path: Path, path: str) -> None:
    """Every visible fact is a candidate of a hybrid search: one sharing no term with the
    query (and, without an embedder, no meaning either) is not returned with score 0."""
    with any_store(kind, tmp_path) as store, Memory(store) as memory:
        memory.facts.add(content="the office opens at nine")
        memory.facts.add(content="Alice is allergic to peanuts")
        found = memory.search("allergic to peanuts", kinds=ALL)
        assert [hit.content for hit in found] == ["Alice is allergic to peanuts"]
        assert memory.search("secret plan tulips", kinds=ALL) == []
