"""The rerank stage of hybrid search, with small in-process rerankers (real objects)."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from memorybank import AsyncMemory, ConfigurationError, InvalidInput, Memory
from memorybank.records import Hit
from memorybank.rerank import MAX_RERANK_TOP, RERANK_TOP, RerankCandidate, Reranker
from tests.all_stores import STORE_KINDS, open_store

WORDS = ["garden", "garden roses", "garden tools", "garden shed", "garden hose", "garden party",
         "garden gnome", "garden bench"]  # fmt: skip


class Reverse:
    """Scores the last candidate highest: a reranked list comes back reversed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[RerankCandidate]]] = []

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        self.calls.append((query, list(candidates)))
        return [float(i) for i in range(len(candidates))]

    async def arerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        return self.rerank(query, candidates)


class Broken(Reverse):
    """Fails the way a model can: an exception, or scores a search cannot use."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        self.calls.append((query, list(candidates)))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer  # type: ignore[return-value]


def fill(memory: Memory, user_id: str = "u1", texts: Sequence[str] = WORDS) -> str:
    thread = memory.threads.create(user_id=user_id, agent_id="bot")
    memory.entries.add_many(thread.id, [{"role": "user", "content": t} for t in texts])
    return thread.id


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


@pytest.fixture
def reverse() -> Reverse:
    return Reverse()


@pytest.fixture
def memory(reverse: Reverse) -> Iterator[Memory]:
    with Memory("memory://", reranker=reverse) as mem:
        yield mem


def test_the_protocol_is_what_the_rerankers_implement(reverse: Reverse) -> None:
    assert isinstance(reverse, Reranker)
    assert not isinstance(object(), Reranker)


def test_off_by_default_and_off_per_call(tmp_path: Path, reverse: Reverse) -> None:
    with Memory("memory://") as plain:
        thread = fill(plain)
        hits = plain.search("garden", k=5, thread_id=thread)
        assert len(hits) == 5
        assert all("rerank" not in h.signals for h in hits)
        with pytest.raises(ConfigurationError):
            plain.search("garden", rerank=True)
    with Memory("memory://", reranker=reverse) as mem:
        thread = fill(mem)
        mem.search("garden", k=5, thread_id=thread, rerank=False)
        mem.search("garden", k=5, thread_id=thread, mode="keyword")
        assert reverse.calls == []  # no model call
        mem.search("garden", k=5, thread_id=thread)
        assert len(reverse.calls) == 1


def test_ordering_is_applied_and_scores_stay_on_the_hybrid_scale(
    memory: Memory, reverse: Reverse
) -> None:
    thread = fill(memory)
    hybrid = memory.search("garden", k=5, thread_id=thread, rerank=False)
    reranked = memory.search("garden", k=5, thread_id=thread, rerank_top=5)
    assert ids(reranked) == ids(hybrid)[::-1]
    assert [h.score for h in reranked] == [h.score for h in hybrid]  # descending, same scale
    by_id = {h.id: h for h in hybrid}
    for hit in reranked:
        assert hit.signals["hybrid"] == by_id[hit.id].score
        assert "rerank" in hit.signals
    query, candidates = reverse.calls[0]
    assert query == "garden"
    assert [c.id for c in candidates] == ["e:" + i for i in ids(hybrid)]
    assert [c.text for c in candidates] == [h.content for h in hybrid]


def test_only_the_top_n_are_reranked(memory: Memory, reverse: Reverse) -> None:
    thread = fill(memory)
    hybrid = ids(memory.search("garden", k=8, thread_id=thread, rerank=False))
    assert len(hybrid) == 8
    got = ids(memory.search("garden", k=8, thread_id=thread, rerank_top=3))
    assert len(reverse.calls[-1][1]) == 3
    assert got == hybrid[:3][::-1] + hybrid[3:]
    # a top N larger than k: the reranker sees N hybrid hits, the caller gets k
    got = ids(memory.search("garden", k=2, thread_id=thread, rerank_top=6))
    assert len(reverse.calls[-1][1]) == 6
    assert got == hybrid[:6][::-1][:2]


def test_default_top_n(reverse: Reverse) -> None:
    with Memory("memory://", reranker=reverse) as mem:
        thread = fill(mem, texts=[f"note {i} about the garden" for i in range(RERANK_TOP + 5)])
        assert len(mem.search("garden", k=3, thread_id=thread)) == 3
        assert len(reverse.calls[-1][1]) == RERANK_TOP


@pytest.mark.parametrize(
    "answer",
    [
        RuntimeError("model crashed"),
        TimeoutError("too slow"),
        ConfigurationError("closed"),
        [1.0, 2.0],  # too few scores
        [math.nan] * 5,
        ["high"] * 5,
        None,
    ],
    ids=["exception", "timeout", "typed-error", "short", "nan", "strings", "none"],
)
def test_errors_never_fail_a_search(answer: object, caplog: pytest.LogCaptureFixture) -> None:
    broken = Broken(answer)
    with Memory("memory://", reranker=broken) as mem:
        thread = fill(mem)
        hybrid = ids(mem.search("garden", k=5, thread_id=thread, rerank=False))
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            got = mem.search("garden", k=5, thread_id=thread)
    assert len(broken.calls) == 1
    assert ids(got) == hybrid
    assert all("rerank" not in h.signals for h in got)
    assert "keeping the hybrid order" in caplog.text


def test_bad_input_is_a_typed_error(memory: Memory) -> None:
    thread = fill(memory)
    for bad in ("yes", 1, 0.5):
        with pytest.raises(InvalidInput) as info:
            memory.search("garden", thread_id=thread, rerank=bad)  # type: ignore[arg-type]
        assert info.value.field == "rerank"
    for top in (0, -1, MAX_RERANK_TOP + 1, True, 2.5, "3"):
        with pytest.raises(InvalidInput) as info:
            memory.search("garden", thread_id=thread, rerank_top=top)  # type: ignore[arg-type]
        assert info.value.field == "rerank_top"
    with pytest.raises(InvalidInput):
        memory.search("garden", thread_id=thread, mode="keyword", rerank=True)
    with pytest.raises(ConfigurationError):
        Memory("memory://", reranker=object())  # type: ignore[arg-type]


async def test_async_memory_uses_arerank() -> None:
    calls: list[int] = []

    class AsyncOnly(Reverse):
        def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
            raise AssertionError("the async memory must await arerank")

        async def arerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
            calls.append(len(candidates))
            return [float(i) for i in range(len(candidates))]

    async with AsyncMemory("memory://", reranker=AsyncOnly()) as mem:
        thread = await mem.threads.create(user_id="u1", agent_id="bot")
        await mem.entries.add_many(thread.id, [{"role": "user", "content": t} for t in WORDS])
        hybrid = await mem.search("garden", k=4, thread_id=thread.id, rerank=False)
        got = await mem.search("garden", k=4, thread_id=thread.id, rerank_top=4)
    assert calls == [4]
    assert ids(got) == ids(hybrid)[::-1]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_the_reranker_sees_only_what_the_caller_may_see(kind: str, tmp_path: Path) -> None:
    secret = f"garden secret {uuid.uuid4().hex}"
    with open_store(kind, tmp_path) as store:
        reverse = Reverse()
        with Memory(store, reranker=reverse) as root:
            alice = fill(root, "alice-" + uuid.uuid4().hex, [secret, "garden of alice"])
            bob_id = "bob-" + uuid.uuid4().hex
            bob_thread = fill(root, bob_id, ["garden of bob", "the garden gate", "garden tea"])
            shared = root.documents.add("the garden club meets on sunday")
            bob = root.scoped(user_id=bob_id, agent_id="bot")
            visible = {e.id for e in root.entries.list(bob_thread)} | {shared.id}
            for query, thread_id in (("garden secret", None), ("garden", None),
                                     ("garden", bob_thread)):  # fmt: skip
                hits = bob.search(query, k=10, thread_id=thread_id)
                assert hits and {h.id for h in hits} <= visible
            assert len(reverse.calls) == 3
            for _, candidates in reverse.calls:
                assert {c.id[2:] for c in candidates} <= visible
                assert all(secret not in c.text for c in candidates)
            assert alice  # alice's thread exists and holds the secret
            assert any(secret in (e.content or "") for e in root.entries.list(alice))
