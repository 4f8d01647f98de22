"""LLMReranker against a real chat-completions server running in a thread."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("httpx", reason="httpx not installed (pip install memorybank[openai])")

from memorybank import AsyncMemory, Memory
from memorybank.errors import ConfigurationError, ExtractionError, StoreUnavailable
from memorybank.rerank import LLMReranker, RerankCandidate, Reranker
from memorybank.rerank.llm import parse_ranking, ranking_scores
from tests.llm_server import Planned, ScriptedLLM, reversed_ranking, running
from tests.rerank.test_stage import WORDS, fill, ids

MODEL = "test-rerank"


@pytest.fixture
def rank() -> Iterator[ScriptedLLM]:
    yield from running(ScriptedLLM(MODEL, reversed_ranking))


def make(rank: ScriptedLLM, **kwargs: Any) -> LLMReranker:
    options: dict[str, Any] = {"api_key": "sk-test", "timeout": 5.0}
    options.update(kwargs)
    return LLMReranker(rank.base_url, MODEL, **options)


def candidates(*texts: str) -> list[RerankCandidate]:
    return [RerankCandidate(f"e:{i}", text) for i, text in enumerate(texts)]


def test_the_request_numbers_the_candidates(rank: ScriptedLLM) -> None:
    with make(rank, max_chars=21) as reranker:
        assert isinstance(reranker, Reranker)
        scores = reranker.rerank(
            "which  pet?", candidates("a dog\nnamed Biscuit", "oat milk", "x" * 40)
        )
    assert scores == [1 / 3, 2 / 3, 1.0]  # the server's model lists 3, 2, 1
    request = rank.requests[0]
    assert request["model"] == MODEL
    assert request["temperature"] == 0
    assert request["response_format"]["json_schema"]["schema"]["required"] == ["ranking"]
    prompt = request["messages"][-1]["content"]
    assert "Query: which pet?" in prompt
    assert "[1] a dog named Biscuit\n[2] oat milk\n[3] " + "x" * 20 + "…\n" in prompt
    assert rank.headers[0]["authorization"] == "Bearer sk-test"


def test_search_applies_the_models_order(rank: ScriptedLLM) -> None:
    with make(rank) as reranker, Memory("memory://", reranker=reranker) as mem:
        thread = fill(mem)
        hybrid = mem.search("garden", k=5, thread_id=thread, rerank=False)
        got = mem.search("garden", k=5, thread_id=thread, rerank_top=5)
    assert ids(got) == ids(hybrid)[::-1]
    assert [h.signals["rerank"] for h in got] == [1.0, 0.8, 0.6, 0.4, 0.2]
    assert len(rank.requests) == 1


def test_sync_searches_share_one_connection(rank: ScriptedLLM) -> None:
    with make(rank) as reranker, Memory("memory://", reranker=reranker) as mem:
        thread = fill(mem)
        for _ in range(3):
            mem.search("garden", k=5, thread_id=thread)
    assert len(rank.peers) == 3 and len(set(rank.peers)) == 1


def test_left_out_and_unknown_ids_keep_the_hybrid_order(rank: ScriptedLLM) -> None:
    rank.add(Planned(content=json.dumps({"ranking": [4, 99, 2, 4, 0, -1]})))
    with make(rank) as reranker, Memory("memory://", reranker=reranker) as mem:
        thread = fill(mem)
        hybrid = ids(mem.search("garden", k=6, thread_id=thread, rerank=False))
        got = ids(mem.search("garden", k=6, thread_id=thread, rerank_top=6))
    assert got == [hybrid[3], hybrid[1], hybrid[0], hybrid[2], hybrid[4], hybrid[5]]


def test_parsing_is_strict() -> None:
    assert parse_ranking("[2, 1]", 2) == [1, 0]
    assert parse_ranking('{"ranking": [3]}', 3) == [2]
    assert parse_ranking('{"ranking": []}', 3) == []
    for bad in ('```json\n{"ranking": [1]}\n```', '{"order": [1]}', '{"ranking": ["1"]}',
                "[1.0]", "[true]", '"1"', "", None):  # fmt: skip
        with pytest.raises(ExtractionError):
            parse_ranking(bad, 3)
    assert ranking_scores([2, 0], 3) == [0.5, 0.0, 1.0]


@pytest.mark.parametrize(
    "planned",
    [
        Planned(status=500, raw=b'{"error": {"message": "boom"}}'),
        Planned(status=429),
        Planned(status=401),
        Planned(content="the best is number 2"),
        Planned(content='{"ranking": ["two"]}'),
        Planned(raw=b"not json at all"),
        Planned(raw=b'{"choices": []}'),
        Planned(),
    ],
    ids=["http-500", "http-429", "http-401", "prose", "non-integer", "body", "no-choice", "ok"],
)
def test_errors_keep_the_hybrid_order(
    rank: ScriptedLLM, planned: Planned, caplog: pytest.LogCaptureFixture
) -> None:
    rank.add(planned)
    with make(rank) as reranker, Memory("memory://", reranker=reranker) as mem:
        thread = fill(mem)
        hybrid = ids(mem.search("garden", k=5, thread_id=thread, rerank=False))
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            got = ids(mem.search("garden", k=5, thread_id=thread, rerank_top=5))
    if planned == Planned():  # a good answer: reranked
        assert got == hybrid[::-1]
        assert "keeping the hybrid order" not in caplog.text
    else:
        assert got == hybrid
        assert "keeping the hybrid order" in caplog.text
    assert len(rank.requests) == 1


def test_a_timeout_keeps_the_hybrid_order(
    rank: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    rank.add(Planned(delay=30.0))
    with make(rank, timeout=0.3) as reranker, Memory("memory://", reranker=reranker) as mem:
        thread = fill(mem)
        hybrid = ids(mem.search("garden", k=5, thread_id=thread, rerank=False))
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            got = ids(mem.search("garden", k=5, thread_id=thread))
        rank.release.set()
        assert got == hybrid
        assert "timed out" in caplog.text
        # the next search is reranked again
        assert ids(mem.search("garden", k=5, thread_id=thread, rerank_top=5)) == hybrid[::-1]


async def test_async_timeout_and_one_client_per_event_loop(
    rank: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    reranker = make(rank, timeout=0.3)
    async with AsyncMemory("memory://", reranker=reranker) as mem:
        thread = await mem.threads.create(user_id="u1", agent_id="bot")
        await mem.entries.add_many(thread.id, [{"role": "user", "content": t} for t in WORDS])
        hybrid = await mem.search("garden", k=5, thread_id=thread.id, rerank=False)
        for _ in range(3):
            got = await mem.search("garden", k=5, thread_id=thread.id, rerank_top=5)
            assert ids(got) == ids(hybrid)[::-1]
        rank.add(Planned(delay=30.0))
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            got = await mem.search("garden", k=5, thread_id=thread.id, rerank_top=5)
        rank.release.set()
        assert ids(got) == ids(hybrid)
        assert "timed out" in caplog.text
    assert len(set(rank.peers[:3])) == 1  # one connection, kept alive: one client
    await reranker.aclose()


def test_each_event_loop_gets_its_own_client(rank: ScriptedLLM) -> None:
    reranker = make(rank)

    async def twice() -> list[float]:
        async with reranker:
            await reranker.arerank("q", candidates("a", "b"))
            return await reranker.arerank("q", candidates("a", "b"))

    assert asyncio.run(twice()) == [0.5, 1.0]
    assert asyncio.run(twice()) == [0.5, 1.0]  # aclose() left the reranker usable
    assert len(rank.peers) == 4
    assert rank.peers[0] == rank.peers[1]  # one client, its connection kept alive
    assert rank.peers[2] == rank.peers[3]
    assert rank.peers[1] != rank.peers[2]  # a new loop, a new client
    reranker.close()
    with pytest.raises(ConfigurationError):
        reranker.rerank("q", candidates("a", "b"))


def test_bad_configuration() -> None:
    with pytest.raises(ConfigurationError):
        LLMReranker("ftp://x", MODEL)
    with pytest.raises(ConfigurationError):
        LLMReranker("http://127.0.0.1:9/v1", "")
    with pytest.raises(ConfigurationError):
        LLMReranker("http://127.0.0.1:9/v1", MODEL, timeout=0)


def test_unreachable_endpoint_is_unavailable() -> None:
    with LLMReranker("http://127.0.0.1:9/v1", MODEL, timeout=2) as reranker:
        with pytest.raises(StoreUnavailable):
            reranker.rerank("q", candidates("a", "b"))
