"""LLMExtractor against a real chat-completions server running in a thread."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("httpx", reason="httpx not installed (pip install memorybank[openai])")

from memorybank.errors import ConfigurationError, ExtractionError, InvalidInput, StoreUnavailable
from memorybank.extract import Extractor, LLMExtractor
from tests.llm_server import Planned, ScriptedLLM, extraction_model, running

MODEL = "test-extract"


@pytest.fixture
def chat() -> Iterator[ScriptedLLM]:
    yield from running(ScriptedLLM(MODEL, extraction_model))


def make(chat: ScriptedLLM, **kwargs: Any) -> LLMExtractor:
    options: dict[str, Any] = {
        "base_url": chat.base_url,
        "model": MODEL,
        "api_key": "sk-test",
        "backoff": 0.01,
        "timeout": 5.0,
    }
    options.update(kwargs)
    return LLMExtractor(**options)


def answer(**fields: Any) -> str:
    body: dict[str, Any] = {"entities": [], "relations": [], "observations": [], "facts": []}
    body.update(fields)
    return json.dumps(body)


def person(name: str, confidence: float = 0.9) -> dict[str, Any]:
    return {"name": name, "type": "person", "aliases": [], "confidence": confidence}


def relation(source: str, type: str, target: str, confidence: float = 0.9, **times: Any) -> Any:
    return {
        "source": source,
        "type": type,
        "target": target,
        "valid_at": times.get("valid_at"),
        "invalid_at": times.get("invalid_at"),
        "confidence": confidence,
    }


def test_valid_answer_is_parsed_and_the_request_is_well_formed(chat: ScriptedLLM) -> None:
    with make(chat) as extractor:
        assert isinstance(extractor, Extractor)
        found = extractor.extract(
            "Alice moved to Berlin on 2024-03-01. Bob works at Acme.",
            known_entities=["Alice", "Acme"],
            reference_time=datetime(2024, 6, 1, tzinfo=UTC),
        )
    assert [(e.name, e.type) for e in found.entities] == [
        ("Alice", "person"),
        ("Berlin", "location"),
        ("Bob", "person"),
        ("Acme", "organization"),
    ]
    moved = found.relations[0]
    assert (moved.source, moved.type, moved.target) == ("Alice", "lives_in", "Berlin")
    assert moved.valid_at == datetime(2024, 3, 1, tzinfo=UTC)
    assert {(f.subject, f.attribute, f.value) for f in found.facts} == {
        ("Alice", "lives_in", "Berlin"),
        ("Bob", "works_at", "Acme"),
    }
    request = chat.requests[0]
    assert request["model"] == MODEL
    assert request["temperature"] == 0
    assert request["max_tokens"] == 4096
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema"
    assert schema["properties"]["entities"]["maxItems"] == 20
    assert schema["properties"]["relations"]["maxItems"] == 30
    prompt = request["messages"][-1]["content"]
    assert 'Known entities: ["Alice", "Acme"]' in prompt
    assert "Reference time: 2024-06-01T00:00:00+00:00" in prompt
    assert chat.headers[0]["authorization"] == "Bearer sk-test"


async def test_async_twin_gives_the_same_answer(chat: ScriptedLLM) -> None:
    text = "Carol is Dan's sister. Carol lives in Rome."
    with make(chat) as extractor:
        sync = await asyncio.to_thread(extractor.extract, text)
        async with extractor:
            both = await asyncio.gather(extractor.aextract(text), extractor.aextract(text))
    assert both[0] == both[1] == sync
    assert ("Carol", "sister_of", "Dan") in {(r.source, r.type, r.target) for r in sync.relations}


def test_not_json_is_an_extraction_error(chat: ScriptedLLM) -> None:
    chat.add(Planned(content="Sure! Here are the entities: Alice, Bob"))
    with make(chat) as extractor, pytest.raises(ExtractionError, match="not JSON"):
        extractor.extract("Alice knows Bob.")
    assert len(chat.requests) == 1  # an unusable answer is not retried


@pytest.mark.parametrize(
    "content",
    ["[1, 2]", '{"entities": {"name": "Alice"}}', '"just a string"'],
)
def test_wrong_shape_is_an_extraction_error(chat: ScriptedLLM, content: str) -> None:
    chat.add(Planned(content=content))
    with make(chat) as extractor, pytest.raises(ExtractionError):
        extractor.extract("Alice knows Bob.")


def test_malformed_items_are_dropped_and_counted(chat: ScriptedLLM) -> None:
    chat.add(
        Planned(
            content=answer(
                entities=[person("Alice"), "Bob", {"name": "", "type": "person", "confidence": 1},
                          {"name": "Carol", "type": "person", "aliases": [], "confidence": "high"},
                          person("Dan")],
                relations=[relation("Alice", "knows", "Dan"), relation("Alice", "knows", "Zed"),
                           relation("Alice", "knows", "Alice"), [1]],
            )
        )
    )  # fmt: skip
    with make(chat) as extractor:
        found = extractor.extract("Alice knows Dan.")
    assert [e.name for e in found.entities] == ["Alice", "Dan"]
    assert [(r.source, r.target) for r in found.relations] == [("Alice", "Dan")]
    assert found.dropped == 6


def test_low_confidence_is_dropped(chat: ScriptedLLM) -> None:
    chat.add(
        Planned(
            content=answer(
                entities=[person("Alice", 0.95), person("Bob", 0.69), person("Carol", 0.7)],
                relations=[
                    relation("Alice", "knows", "Carol", 0.5),
                    relation("Carol", "knows", "Alice", 0.8),
                ],
                observations=[
                    {"entity": "Alice", "text": "likes tea", "confidence": 0.71},
                    {"entity": "Alice", "text": "maybe likes coffee", "confidence": 0.3},
                ],
                facts=[
                    {"subject": "Alice", "attribute": "diet", "value": "vegan",
                     "statement": "Alice is vegan", "confidence": 0.6},
                ],
            )
        )
    )  # fmt: skip
    with make(chat) as extractor:
        found = extractor.extract("...")
    assert [e.name for e in found.entities] == ["Alice", "Carol"]
    assert [(r.source, r.target) for r in found.relations] == [("Carol", "Alice")]
    assert [o.text for o in found.observations] == ["likes tea"]
    assert found.facts == ()
    assert found.dropped == 4


def test_min_confidence_is_configurable(chat: ScriptedLLM) -> None:
    chat.add(Planned(content=answer(entities=[person("Alice", 0.5)])))
    with make(chat, min_confidence=0.4) as extractor:
        assert [e.name for e in extractor.extract("Alice").entities] == ["Alice"]


def test_too_many_entities_and_relations_keep_the_most_confident(chat: ScriptedLLM) -> None:
    names = [f"Person {i:02d}" for i in range(25)]
    entities = [person(n, 0.7 + i / 100) for i, n in enumerate(names)]
    relations = [relation(names[-1], f"knows_{i}", names[-2], 0.7 + i / 200) for i in range(35)]
    chat.add(Planned(content=answer(entities=entities, relations=relations)))
    with make(chat) as extractor:
        found = extractor.extract("a crowd")
    assert [e.name for e in found.entities] == names[5:]
    assert [r.type for r in found.relations] == [f"knows_{i}" for i in range(5, 35)]
    assert found.dropped == 5 + 5


def test_relation_to_a_known_entity_is_kept(chat: ScriptedLLM) -> None:
    works = relation("Bob", "works at", "ACME corp")
    chat.add(Planned(content=answer(entities=[person("Bob")], relations=[works])))
    with make(chat) as extractor:
        found = extractor.extract("Bob joined them.", known_entities=["Acme Corp"])
    assert [(r.source, r.type, r.target) for r in found.relations] == [
        ("Bob", "works_at", "Acme Corp")
    ]


def test_times_are_parsed_and_nonsense_times_dropped(chat: ScriptedLLM) -> None:
    chat.add(
        Planned(
            content=answer(
                entities=[person("Alice"), {"name": "Paris", "type": "location", "aliases": [],
                                            "confidence": 0.9},
                          {"name": "Acme", "type": "organization", "aliases": [],
                           "confidence": 0.9}],
                relations=[
                    relation("Alice", "lives_in", "Paris", valid_at="2020-01-05",
                             invalid_at="2023-06-30T12:00:00Z"),
                    relation("Alice", "works_at", "Acme", valid_at="last spring",
                             invalid_at="2019-01-01"),
                ],
            )
        )
    )  # fmt: skip
    with make(chat) as extractor:
        lives, works = extractor.extract("...").relations
    assert lives.valid_at == datetime(2020, 1, 5, tzinfo=UTC)
    assert lives.invalid_at == datetime(2023, 6, 30, 12, tzinfo=UTC)
    assert works.valid_at is None
    assert works.invalid_at == datetime(2019, 1, 1, tzinfo=UTC)


def test_http_500_is_retried_once(chat: ScriptedLLM) -> None:
    chat.add(Planned(status=500, raw=b'{"error": {"message": "boom"}}'))
    with make(chat) as extractor:
        found = extractor.extract("Alice works at Acme.")
    assert [e.name for e in found.entities] == ["Alice", "Acme"]
    assert len(chat.requests) == 2


def test_persistent_500_is_store_unavailable_without_a_storm(chat: ScriptedLLM) -> None:
    chat.add(*[Planned(status=503, raw=b"overloaded") for _ in range(10)])
    with make(chat) as extractor, pytest.raises(StoreUnavailable, match="2 attempt"):
        extractor.extract("Alice works at Acme.")
    assert len(chat.requests) == 2
    with make(chat, max_retries=0) as extractor, pytest.raises(StoreUnavailable):
        extractor.extract("Alice works at Acme.")
    assert len(chat.requests) == 3


async def test_async_500_is_store_unavailable(chat: ScriptedLLM) -> None:
    chat.add(*[Planned(status=502, raw=b"bad gateway") for _ in range(3)])
    async with make(chat) as extractor:
        with pytest.raises(StoreUnavailable):
            await extractor.aextract("Alice works at Acme.")
    assert len(chat.requests) == 2


def test_long_retry_after_is_not_waited_for(chat: ScriptedLLM) -> None:
    chat.add(Planned(status=429, raw=b"slow down", headers={"Retry-After": "120"}))
    with make(chat) as extractor, pytest.raises(StoreUnavailable, match="429"):
        extractor.extract("Alice works at Acme.")
    assert len(chat.requests) == 1  # given up at once, not after two minutes


def test_short_retry_after_is_honoured(chat: ScriptedLLM) -> None:
    chat.add(Planned(status=429, raw=b"slow down", headers={"Retry-After": "0.2"}))
    with make(chat) as extractor:
        extractor.extract("Alice works at Acme.")
    assert len(chat.arrivals) == 2
    assert chat.arrivals[1] - chat.arrivals[0] >= 0.2  # waited as asked


def test_timeout_is_store_unavailable(chat: ScriptedLLM) -> None:
    chat.add(Planned(delay=1.0), Planned(delay=1.0))
    with make(chat, timeout=0.2) as extractor, pytest.raises(StoreUnavailable, match="timed out"):
        extractor.extract("Alice works at Acme.")
    assert len(chat.requests) == 2


async def test_async_timeout_is_store_unavailable(chat: ScriptedLLM) -> None:
    chat.add(Planned(delay=1.0))
    async with make(chat, timeout=0.2, max_retries=0) as extractor:
        with pytest.raises(StoreUnavailable, match="timed out"):
            await extractor.aextract("Alice works at Acme.")


def test_unreachable_endpoint_is_store_unavailable() -> None:
    extractor = LLMExtractor(base_url="http://127.0.0.1:9/v1", model=MODEL, backoff=0.01)
    with extractor, pytest.raises(StoreUnavailable):
        extractor.extract("Alice")


def test_refused_requests_are_typed(chat: ScriptedLLM) -> None:
    chat.add(
        Planned(status=401, raw=b'{"error": {"message": "bad key"}}'),
        Planned(status=400, raw=b'{"error": {"message": "context too long"}}'),
    )
    with make(chat) as extractor:
        with pytest.raises(ConfigurationError, match="bad key"):
            extractor.extract("x")
        with pytest.raises(InvalidInput, match="context too long") as refused:
            extractor.extract("x")
    assert refused.value.field == "text"
    with make(chat, model="no-such-model") as extractor, pytest.raises(ConfigurationError):
        extractor.extract("x")
    assert len(chat.requests) == 3


def test_refusal_and_cut_off_answers_are_extraction_errors(chat: ScriptedLLM) -> None:
    chat.add(
        Planned(choice={"message": {"role": "assistant", "content": None, "refusal": "no"}}),
        Planned(content='{"entities": [', choice={"finish_reason": "length"}),
        Planned(raw=b"<html>gateway</html>"),
    )
    with make(chat) as extractor:
        with pytest.raises(ExtractionError, match="refused"):
            extractor.extract("x")
        with pytest.raises(ExtractionError, match="cut off"):
            extractor.extract("x")
        with pytest.raises(ExtractionError, match="not JSON"):
            extractor.extract("x")


def test_max_tokens_can_be_left_out(chat: ScriptedLLM) -> None:
    with make(chat, max_tokens=None) as extractor:
        extractor.extract("Alice")
    assert "max_tokens" not in chat.requests[0]


def test_known_entities_are_bounded_names(chat: ScriptedLLM) -> None:
    known = [f"Entity {i}" for i in range(80)]
    with make(chat) as extractor:
        extractor.extract("Alice", known_entities=known)
    prompt = chat.requests[0]["messages"][-1]["content"]
    sent = json.loads(prompt.split("Known entities: ", 1)[1].split("\n", 1)[0])
    assert sent == known[:50]


def test_bad_configuration_and_closed_extractor(chat: ScriptedLLM) -> None:
    with pytest.raises(ConfigurationError):
        LLMExtractor(base_url="ftp://example.com", model=MODEL)
    with pytest.raises(ConfigurationError):
        LLMExtractor(base_url=chat.base_url, model="")
    with pytest.raises(ConfigurationError):
        LLMExtractor(base_url=chat.base_url, model=MODEL, min_confidence=1.5)
    extractor = make(chat)
    extractor.close()
    with pytest.raises(ConfigurationError, match="closed"):
        extractor.extract("x")
    with pytest.raises(InvalidInput):
        make(chat).extract("x" * 40_000)
    assert chat.requests == []


# -- connections: one sync client, one async client per event loop -------------------


async def test_async_calls_on_one_loop_share_one_connection(chat: ScriptedLLM) -> None:
    extractor = make(chat)
    try:
        async with extractor:
            for name in ("Alice", "Bob", "Carol"):
                found = await extractor.aextract(f"{name} works at Acme.")
                assert found.entities[0].name == name
        assert chat.accepted == 1
        assert len(chat.peers) == 3 and len(set(chat.peers)) == 1
        assert chat.wait_closed(1)  # leaving ``async with`` closed the loop's connection
        # aclose() left the extractor usable: the next call opens a new connection
        async with extractor:
            await extractor.aextract("Dan works at Acme.")
            await extractor.aextract("Erin works at Acme.")
        assert chat.accepted == 2 and len(set(chat.peers)) == 2
        assert chat.wait_closed(2)
    finally:
        extractor.close()


async def test_a_memory_extracting_every_write_reuses_one_connection(chat: ScriptedLLM) -> None:
    from memorybank import AsyncMemory
    from tests.reliability._harness import Words

    async with make(chat) as extractor:
        async with AsyncMemory(
            "memory://", tokenizer=Words(), extractor=extractor, extract_on_write=True,
            extract_concurrency=1,
        ) as memory:  # fmt: skip
            thread = await memory.ensure_thread(None, user_id="u1", agent_id="bot")
            for name in ("Alice", "Bob", "Carol", "Dan"):
                await memory.remember(thread.id, "user", f"{name} lives in Paris.")
            assert await memory.graph.drain(10)
            assert memory.graph.pending().done == 4
        assert chat.accepted == 1 and len(chat.requests) == 4
        assert chat.closed == 0  # closing the memory left the caller's extractor open
        await extractor.aextract("Frank lives in Rome.")  # and usable
        assert chat.accepted == 1
    assert chat.wait_closed(1)
    extractor.close()


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_client_on_a_closed_loop_is_not_reused(chat: ScriptedLLM) -> None:
    extractor = make(chat)

    async def one() -> None:
        await extractor.aextract("Alice works at Acme.")
        await extractor.aextract("Bob works at Acme.")

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(one())
        # the loop ends without aclose(): its client must not serve another loop
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
    assert extractor._clients.open_loops() == 1
    asyncio.run(_and_close(extractor, one))
    assert chat.accepted == 2
    assert chat.peers[0] == chat.peers[1] != chat.peers[2] == chat.peers[3]
    assert extractor._clients.open_loops() == 0  # the dead loop's client was dropped
    extractor.close()
    gc.collect()  # the dead loop's socket is closed by the garbage collector


async def _and_close(extractor: LLMExtractor, calls: Any) -> None:
    await calls()
    await extractor.aclose()


def test_close_closes_the_sync_client_and_refuses_later_calls(chat: ScriptedLLM) -> None:
    extractor = make(chat)
    with extractor:
        for name in ("Alice", "Bob", "Carol"):
            extractor.extract(f"{name} works at Acme.")
    assert chat.accepted == 1 and len(set(chat.peers)) == 1
    assert chat.wait_closed(1)
    with pytest.raises(ConfigurationError, match="closed"):
        extractor.extract("Dan works at Acme.")
    with pytest.raises(ConfigurationError, match="closed"):
        asyncio.run(extractor.aextract("Dan works at Acme."))
    assert len(chat.requests) == 3  # nothing was sent after close()
