"""memory.graph.ingest end to end on SQLite and PostgreSQL: graph, facts and provenance."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory, ConfigurationError, InvalidInput, NotFound, ThreadForbidden
from memorybank.extract import LLMExtractor, RuleExtractor
from memorybank.graph._async.formation import fact_slot_id
from memorybank.records import Entry
from tests.llm_server import ScriptedLLM, extraction_model, running
from tests.reliability._harness import StoreSpec, Words, provide, store_params

OWNER: dict[str, Any] = {"user_id": "alice", "agent_id": "helper"}


MODEL = "test-extract"


@pytest.fixture(params=store_params(("sqlite-normal", "postgres")))
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(str(request.param), tmp_path)


@pytest.fixture
async def memory(spec: StoreSpec) -> AsyncIterator[AsyncMemory]:
    store = spec.open_async()
    memory = AsyncMemory(store, tokenizer=Words(), extractor=RuleExtractor())
    try:
        yield memory
    finally:
        await memory.close()
        await store.close()


@pytest.fixture
def chat() -> Iterator[ScriptedLLM]:
    yield from running(ScriptedLLM(MODEL, extraction_model))


async def say(memory: AsyncMemory, thread_id: str, *texts: str, role: str = "user") -> list[Entry]:
    return [await memory.remember(thread_id, role, text) for text in texts]


async def alice(memory: AsyncMemory) -> Any:
    found = await memory.graph.find_entities("Alice", **OWNER)
    assert [e.name for e in found] == ["Alice"]
    return found[0]


async def test_ingest_writes_graph_and_facts_with_provenance(memory: AsyncMemory) -> None:
    thread = await memory.ensure_thread(None, **OWNER)
    lives, manager, works = await say(
        memory,
        thread.id,
        "Alice lives in Paris.",
        "Bob is Alice's manager.",
        "Alice works at Acme Corp since 2019.",
    )
    await memory.remember(thread.id, "system", "Zed lives in Oslo.")  # not conversation
    report = await memory.graph.ingest(thread.id)
    assert (report.entries, report.skipped) == (3, 1)
    assert (report.relations, report.facts_added) == (3, 2)

    person = await alice(memory)
    assert (person.type, person.source, person.user_id, person.agent_id) == (
        "person",
        "extracted",
        "alice",
        "helper",
    )
    relations = await memory.graph.relations(person.id, **OWNER)
    by_type = {r.type: r for r in relations}
    assert set(by_type) == {"lives_in", "manager_of", "works_at"}
    assert by_type["lives_in"].provenance == (lives.id,)
    assert by_type["lives_in"].valid_at == lives.created_at  # no date said: when it was said
    assert by_type["works_at"].valid_at == datetime(2019, 1, 1, tzinfo=UTC)
    assert by_type["manager_of"].provenance == (manager.id,)
    assert all(r.source == "extracted" and r.user_id == "alice" for r in relations)

    facts = {f.category: f for f in await memory.facts.list(**OWNER)}
    assert facts["lives_in"].content == "Alice lives in Paris"
    assert facts["lives_in"].source_entries == (lives.id,)
    assert facts["works_at"].source_entries == (works.id,)
    assert facts["works_at"].metadata == {
        "subject": "Alice",
        "attribute": "works_at",
        "value": "Acme Corp",
        "said_at": works.created_at.isoformat(),
    }
    bob = (await memory.graph.find_entities("Bob", **OWNER))[0]
    assert "Alice's manager" in bob.observations

    # private to the thread's owner: another user, or nobody, sees none of it
    assert await memory.graph.find_entities("Alice", user_id="bob", agent_id="helper") == []
    assert await memory.graph.find_entities("Alice", user_id=None, agent_id="helper") == []
    assert await memory.facts.list(user_id="bob", agent_id="helper") == []


async def test_reingest_is_idempotent(memory: AsyncMemory) -> None:
    thread = await memory.ensure_thread(None, **OWNER)
    await say(memory, thread.id, "Alice lives in Paris.", "Alice works at Acme.")
    first = await memory.graph.ingest(thread.id)
    assert first.entries == 2
    again = await memory.graph.ingest(thread.id)
    assert (again.entries, again.skipped, again.relations) == (0, 2, 0)
    person = await alice(memory)
    relations = await memory.graph.relations(person.id, **OWNER)
    assert sorted((r.type, r.weight) for r in relations) == [("lives_in", 1.0), ("works_at", 1.0)]
    assert len(await memory.facts.list(**OWNER)) == 2
    # a new entry is all a later ingest reads
    await say(memory, thread.id, "Alice works at Acme.")
    later = await memory.graph.ingest(thread.id)
    assert (later.entries, later.skipped, later.facts_confirmed) == (1, 2, 1)


async def test_a_new_value_supersedes_the_fact_and_closes_the_relation(
    memory: AsyncMemory,
) -> None:
    thread = await memory.ensure_thread(None, **OWNER)
    paris, berlin = await say(
        memory,
        thread.id,
        "Alice lives in Paris since 2015.",
        "Alice moved to Berlin on 2024-03-01.",
    )
    report = await memory.graph.ingest(thread.id)
    assert (report.facts_added, report.facts_superseded) == (1, 1)
    facts = await memory.facts.list(**OWNER)
    assert [f.content for f in facts] == ["Alice lives in Berlin"]
    assert facts[0].id == fact_slot_id("helper", "alice", "alice", "lives_in")
    history = await memory.facts.history(facts[0].id, **OWNER)
    assert [(h.content, h.source_entries) for h in history] == [
        ("Alice lives in Paris", (paris.id,)),
        ("Alice lives in Berlin", (berlin.id,)),
    ]
    person = await alice(memory)
    now = await memory.graph.relations(person.id, types=["lives_in"], **OWNER)
    assert [r.provenance for r in now] == [(berlin.id,)]
    every = await memory.graph.relations(
        person.id, types=["lives_in"], include_invalid=True, **OWNER
    )
    old = next(r for r in every if r.provenance == (paris.id,))
    assert old.valid_at == datetime(2015, 1, 1, tzinfo=UTC)
    assert old.invalid_at == datetime(2024, 3, 1, tzinfo=UTC)  # closed when Berlin began

    # the same value again only adds provenance
    again = await say(memory, thread.id, "Alice lives in Berlin.")
    report = await memory.graph.ingest(thread.id)
    assert report.facts_confirmed == 1
    fact = (await memory.facts.list(**OWNER))[0]
    assert fact.source_entries == (berlin.id, again[0].id)
    assert fact.version == 2

    # an older message ingested late does not bring the old value back
    await memory.graph.ingest(thread.id, [paris])  # already done: skipped
    late = await memory.remember(
        thread.id, "user", "Alice lives in Rome.", created_at=datetime(2020, 1, 1, tzinfo=UTC)
    )
    report = await memory.graph.ingest(thread.id, [late])
    assert report.facts_outdated == 1
    assert [f.content for f in await memory.facts.list(**OWNER)] == ["Alice lives in Berlin"]


async def test_other_subjects_and_attributes_coexist(memory: AsyncMemory) -> None:
    thread = await memory.ensure_thread(None, **OWNER)
    await say(
        memory,
        thread.id,
        "Alice lives in Paris. Bob lives in Rome.",
        "Alice works at Acme.",
    )
    await memory.graph.ingest(thread.id)
    assert sorted(f.content for f in await memory.facts.list(**OWNER)) == [
        "Alice lives in Paris",
        "Alice works at Acme",
        "Bob lives in Rome",
    ]


async def test_deleting_the_source_entry_cascades(memory: AsyncMemory) -> None:
    thread = await memory.ensure_thread(None, **OWNER)
    lives, _ = await say(memory, thread.id, "Alice lives in Paris.", "Alice works at Acme.")
    await memory.graph.ingest(thread.id)
    await memory.entries.delete(thread.id, lives.id, cascade_facts=True, user_id="alice")
    person = await alice(memory)
    relations = await memory.graph.relations(person.id, include_invalid=True, **OWNER)
    assert [r.type for r in relations] == ["works_at"]
    assert [f.category for f in await memory.facts.list(**OWNER)] == ["works_at"]


async def test_ingest_given_entries_and_errors(memory: AsyncMemory) -> None:
    thread = await memory.ensure_thread(None, **OWNER)
    other = await memory.ensure_thread(None, user_id="bob")
    first, second = await say(memory, thread.id, "Alice lives in Paris.", "Alice works at Acme.")
    (stranger,) = await say(memory, other.id, "Bob lives in Rome.")
    report = await memory.graph.ingest(thread.id, [second.id])
    assert (report.entries, report.facts_added) == (1, 1)
    assert [f.category for f in await memory.facts.list(**OWNER)] == ["works_at"]
    report = await memory.graph.ingest(thread.id, [first, second])
    assert (report.entries, report.skipped) == (1, 1)
    with pytest.raises(InvalidInput) as wrong:
        await memory.graph.ingest(thread.id, [stranger])
    assert wrong.value.field == "entries"
    with pytest.raises(NotFound):
        await memory.graph.ingest(thread.id, ["no-such-entry"])
    with pytest.raises(ThreadForbidden):
        await memory.scoped(user_id="bob").graph.ingest(thread.id)
    with pytest.raises(NotFound):
        await memory.graph.ingest("no-such-thread")


async def test_ingest_needs_an_extractor(spec: StoreSpec) -> None:
    store = spec.open_async()
    try:
        async with AsyncMemory(store, tokenizer=Words()) as memory:
            thread = await memory.ensure_thread(None)
            await memory.remember(thread.id, "user", "Alice lives in Paris.")
            with pytest.raises(ConfigurationError, match="extractor"):
                await memory.graph.ingest(thread.id)
    finally:
        await store.close()


async def test_shared_entities_are_linked_but_never_changed(memory: AsyncMemory) -> None:
    paris = await memory.graph.add_entity("Paris", type="location", agent_id=None, user_id=None)
    thread = await memory.ensure_thread(None, **OWNER)
    await say(memory, thread.id, "Alice lives in Paris.")
    await memory.graph.ingest(thread.id)
    found = await memory.graph.find_entities("Paris", **OWNER)
    assert [e.id for e in found] == [paris.id]  # no private twin
    person = await alice(memory)
    (lives,) = await memory.graph.relations(person.id, **OWNER)
    assert (lives.target_id, lives.user_id) == (paris.id, "alice")
    # nobody else learns where Alice lives through the shared node
    shared = await memory.graph.relations(paris.id, user_id=None, agent_id=None)
    assert shared == []


async def test_llm_extractor_end_to_end(spec: StoreSpec, chat: ScriptedLLM) -> None:
    store = spec.open_async()
    extractor = LLMExtractor(base_url=chat.base_url, model=MODEL, api_key="k")
    try:
        async with AsyncMemory(store, tokenizer=Words(), extractor=extractor) as memory:
            thread = await memory.ensure_thread(None, **OWNER)
            first, second = await say(
                memory, thread.id, "Alice lives in Paris.", "Alice works at Acme."
            )
            report = await memory.graph.ingest(thread.id)
            assert report.entries == 2
            person = await alice(memory)
            relations = await memory.graph.relations(person.id, **OWNER)
            assert {(r.type, r.provenance) for r in relations} == {
                ("lives_in", (first.id,)),
                ("works_at", (second.id,)),
            }
        # the second call knew the first one's entities, by name only
        prompt = chat.requests[1]["messages"][-1]["content"]
        known = prompt.split("Known entities: ", 1)[1].split("\n", 1)[0]
        assert "Alice" in known and "Paris" in known and "{" not in known
    finally:
        await extractor.aclose()  # the memory left its extractor open: the caller owns it
        extractor.close()
        await store.close()
