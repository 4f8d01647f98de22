"""The context builder: budgets, strategies, fallbacks, ordering, scoping, pairing."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memorybank import AsyncMemory, ContextBuilder, ContextOptions, InvalidInput, ThreadForbidden
from memorybank.context._async.builder import AsyncContextBuilder
from memorybank.errors import StoreUnavailable
from memorybank.stores import AsyncInMemoryStore
from memorybank.stores.contract._async.store import Record, VectorItem
from memorybank.tokens import count_message_tokens

from .conftest import BagOfWords, StepClock, Words, fill, new_id, words


async def thread(memory: AsyncMemory, user: str | None = "alice") -> str:
    return (await memory.threads.create(thread_id=new_id(), user_id=user, agent_id="a")).id


# -- budgets ---------------------------------------------------------------------------


def test_reserve_defaults_to_ten_percent_with_a_floor_of_100() -> None:
    assert ContextOptions(max_tokens=8192).reserve == 819
    assert ContextOptions(max_tokens=8192).available == 8192 - 819
    assert ContextOptions(max_tokens=500).reserve == 100
    assert ContextOptions(max_tokens=500, reserve_tokens=7).available == 493
    assert ContextOptions(max_tokens=50).available == 0


def test_options_are_validated_and_frozen() -> None:
    with pytest.raises(InvalidInput):
        ContextOptions(max_tokens=100, strategy="oldest")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        ContextOptions(max_tokens=-1)
    options = ContextOptions(max_tokens=100)
    with pytest.raises(AttributeError):
        options.max_tokens = 5  # type: ignore[misc]


async def test_recent_keeps_the_newest_run_that_fits(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    entries = await fill(memory, tid, [words(6, f"m{i}") for i in range(50)])
    assert {e.token_count for e in entries} == {10}
    context = await memory.build_context(tid, agent_id="a", user_id="alice", max_tokens=300)
    assert context.token_count == 200  # available = 300 - max(100, 30)
    assert context.included_entries == 20
    assert context.total_entries == 50
    assert context.truncated
    assert context.messages == [e.to_message() for e in entries[30:]]


async def test_recent_stops_at_the_first_entry_that_does_not_fit(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    texts = [words(6) for _ in range(20)]
    texts[15] = words(166)  # 170 tokens: with the 4 newer ones, 210 > 200
    entries = await fill(memory, tid, texts)
    context = await memory.build_context(tid, agent_id="a", user_id="alice", max_tokens=300)
    assert context.entries == entries[16:]
    assert context.token_count == 40


async def test_whole_thread_fits_and_is_not_truncated(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await fill(memory, tid, [words(6) for _ in range(5)])
    context = await memory.build_context(tid, agent_id="a", user_id="alice", max_tokens=300)
    assert (context.included_entries, context.total_entries, context.truncated) == (5, 5, False)


async def test_system_prompt_is_first_and_counted(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await fill(memory, tid, [words(6) for _ in range(50)])
    context = await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=300, system_prompt=words(10, "s")
    )
    assert context.messages[0] == {"role": "system", "content": words(10, "s")}
    assert context.included_entries == 18  # 200 - 14 = 186 -> 18 entries of 10
    assert context.token_count == 14 + 180


async def test_system_prompt_is_not_included_when_disabled(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await fill(memory, tid, [words(6) for _ in range(50)])
    builder = ContextBuilder(
        ContextOptions(max_tokens=300, include_system_prompt=False), memory=memory
    )
    context = await builder.build(tid, agent_id="a", user_id="alice", system_prompt="ignored")
    assert context.messages[0]["role"] == "user"
    assert context.token_count == 200


async def test_oversized_system_prompt_is_kept_with_a_warning(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await fill(memory, tid, [words(6) for _ in range(5)])
    context = await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=300, system_prompt=words(250)
    )
    assert [m["role"] for m in context.messages] == ["system"]
    assert context.token_count == 254
    assert context.warnings and "system prompt" in context.warnings[0]
    assert context.truncated


# -- facts -----------------------------------------------------------------------------


async def test_facts_block_takes_at_most_ten_percent(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await fill(memory, tid, [words(6) for _ in range(200)])
    await memory.facts.add(agent_id="a", content=words(200, "huge"), confidence=1.0)
    for i in range(12):
        await memory.facts.add(agent_id="a", content=words(9, f"f{i:02d}"), confidence=i / 20)
    context = await memory.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=1100,
        reserve_tokens=100,
        system_prompt="sys",
        include_facts=True,
    )
    # budget floor(1000 * 0.1) = 100; block = header 2 + 10 per fact -> 9 facts (92)
    assert [f.content.split()[0] for f in context.facts] == [f"f{i:02d}" for i in range(11, 2, -1)]
    system = context.messages[0]["content"]
    assert system.startswith("sys\n\nKnown facts:\n- f11 ")
    assert "huge" not in system
    system_tokens = 4 + 1 + 92
    assert context.token_count == system_tokens + 10 * ((1000 - system_tokens) // 10)
    assert context.token_count <= 1000


_PETS = ("hamster", "parrot", "tortoise", "goldfish", "ferret")


async def _many_facts(memory: AsyncMemory) -> str:
    """200 facts of alice (the dog one among the oldest, least confident); its text."""
    dog = "alice's dog, a golden retriever she adopted from a shelter, is called Biscuit"
    await memory.facts.add(agent_id="a", user_id="alice", content=dog, confidence=0.1)
    for i in range(199):
        await memory.facts.add(
            agent_id="a",
            user_id="alice",
            content=f"alice owns a {_PETS[i % 5]} number {i} named n{i}",
            confidence=0.5 + i / 1000,
        )
    return dog


async def test_facts_block_prefers_facts_relevant_to_the_input(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    dog = await _many_facts(memory)
    options: dict[str, Any] = {"max_tokens": 600, "reserve_tokens": 100, "include_facts": True}
    # without an input the order stays confidence first: the dog fact does not fit
    context = await memory.build_context(tid, agent_id="a", user_id="alice", **options)
    assert 0 < len(context.facts) < 200 and dog not in [f.content for f in context.facts]
    context = await memory.build_context(
        tid, agent_id="a", user_id="alice", current_input="What is my dog called?", **options
    )
    assert context.facts[0].content == dog
    block = context.messages[0]["content"]
    assert block.startswith("Known facts:\n- " + dog)
    # the block is counted exactly and stays within its share (floor(500 * 0.1) = 50)
    system_tokens = count_message_tokens(Words(), context.messages[0])
    assert system_tokens <= 50
    assert context.token_count == system_tokens + sum(e.token_count for e in context.entries)


async def test_facts_block_ranks_by_meaning_with_an_embedder(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    dog = await _many_facts(smart)
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=600,
        reserve_tokens=100,
        include_facts=True,
        current_input="dog Biscuit",
    )
    assert context.facts[0].content == dog


async def test_facts_block_keeps_its_order_when_every_fact_fits(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    for i in range(5):
        await memory.facts.add(
            agent_id="a", user_id="alice", content=f"fact {i} about tea", confidence=i / 10
        )
    await memory.facts.add(agent_id="a", user_id="alice", content="the dog is Rex")
    context = await memory.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=4000,
        include_facts=True,
        current_input="what is the dog's name?",
    )
    assert [f.content for f in context.facts] == [
        *(f"fact {i} about tea" for i in range(4, -1, -1)),
        "the dog is Rex",
    ]


async def test_facts_are_scoped_to_agent_and_user(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    now = memory._core.now()
    await memory.facts.add(agent_id="a", user_id="alice", content="alice likes tea")
    await memory.facts.add(agent_id="a", user_id="bob", content="bob likes coffee")
    await memory.facts.add(agent_id="a", content="the shop opens at nine")
    await memory.facts.add(agent_id=None, content="every agent knows this")
    await memory.facts.add(agent_id="other", content="other agent secret")
    await memory.facts.add(agent_id="a", content="expired news", expires_at=now)
    old = await memory.facts.add(agent_id="a", user_id="alice", content="alice lives in Rome")
    await memory.facts.supersede(old.id, "alice lives in Berlin")
    context = await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=4000, include_facts=True
    )
    assert sorted(f.content for f in context.facts) == [
        "alice likes tea",
        "alice lives in Berlin",
        "every agent knows this",
        "the shop opens at nine",
    ]
    shared = await thread(memory, user=None)
    context = await memory.build_context(shared, agent_id="a", max_tokens=4000, include_facts=True)
    assert sorted(f.content for f in context.facts) == [
        "every agent knows this",
        "the shop opens at nine",
    ]


async def test_a_failing_part_is_left_out_and_reported(tmp_path: Any) -> None:
    class FlakyRecords(AsyncInMemoryStore):
        async def record_list(self, *args: Any, **kwargs: Any) -> list[Record]:
            raise StoreUnavailable("records are down")

    memory = AsyncMemory(FlakyRecords(), clock=StepClock(), tokenizer=Words())
    tid = await thread(memory)
    await fill(memory, tid, [words(6) for _ in range(3)])
    context = await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=300, system_prompt="sys", include_facts=True
    )
    assert [e.source for e in context.errors] == ["facts"]
    assert isinstance(context.errors[0].error, StoreUnavailable)
    assert context.messages[0] == {"role": "system", "content": "sys"}
    assert context.included_entries == 3


# -- semantic and graph ------------------------------------------------------------------


async def _document(
    memory: AsyncMemory, text: str, *, agent: str | None = None, user: str | None = None
) -> None:
    now = memory._core.now()
    record = Record("document", new_id("d"), agent, user, text, {}, now, now)
    await memory.store.record_put(memory.tenant_id, [record])
    embedder = memory._core.embedder
    assert embedder is not None
    vector = embedder.embed([text])[0]
    await memory.store.vector_put(
        memory.tenant_id, [VectorItem("document", record.id, embedder.model_id, vector)]
    )


async def test_semantic_context_top5_scoring_at_least_07_visible_only(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    for i in range(7):
        await _document(smart, f"paris france travel tips{i}")  # cos = 3/sqrt(12) = 0.866
    await _document(smart, "paris france travel", agent="other")
    await _document(smart, "paris france travel", user="bob")
    await _document(smart, "paris weather rain umbrella today")  # cos 1/sqrt(15) < 0.7
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=1100,
        reserve_tokens=100,
        current_input="paris france travel",
        include_semantic_context=True,
    )
    assert len(context.semantic) == 5
    assert all(t.startswith("paris france travel tips") for t in context.semantic)
    assert context.messages[0]["content"].startswith("Relevant context:\n- paris france travel")


async def test_semantic_context_needs_an_input(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    await _document(smart, "paris france travel")
    context = await smart.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=1000, include_semantic_context=True
    )
    assert context.semantic == [] and context.messages == []


class Graph:
    def __init__(self, text: str = "Graph:\n- alice knows bob") -> None:
        self.text = text
        self.budgets: list[int] = []

    def context_block(
        self, query: str, *, agent_id: str, user_id: str | None, max_tokens: int
    ) -> str:
        self.budgets.append(max_tokens)
        return self.text


async def test_graph_block_gets_fifteen_percent_after_the_others(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await memory.facts.add(agent_id="a", content="fact one")
    graph = Graph()
    builder = AsyncContextBuilder(
        ContextOptions(
            max_tokens=1100, reserve_tokens=100, include_facts=True, include_graph_context=True
        ),
        memory,
        graph=graph,
    )
    context = await builder.build(
        tid, agent_id="a", user_id="alice", system_prompt="sys", current_input="who is bob"
    )
    assert graph.budgets == [150]  # floor(1000 * 0.15)
    assert (
        context.messages[0]["content"]
        == "sys\n\nKnown facts:\n- fact one\n\nGraph:\n- alice knows bob"
    )
    assert context.graph == "Graph:\n- alice knows bob"


async def test_graph_context_uses_memory_graph_and_an_empty_one_adds_nothing(
    memory: AsyncMemory,
) -> None:
    tid = await thread(memory)
    context = await memory.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=1000,
        current_input="hi",
        include_graph_context=True,
    )
    assert context.errors == [] and context.graph is None and context.messages == []


async def test_a_graph_object_without_the_hook_is_reported(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    builder = AsyncContextBuilder(
        ContextOptions(max_tokens=1000, include_graph_context=True), memory, graph=object()
    )
    context = await builder.build(tid, agent_id="a", user_id="alice", current_input="hi")
    assert [e.source for e in context.errors] == ["graph"]


async def test_graph_block_too_big_for_its_share_is_left_out(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    builder = AsyncContextBuilder(
        ContextOptions(max_tokens=1100, reserve_tokens=100, include_graph_context=True),
        memory,
        graph=Graph(words(200)),
    )
    context = await builder.build(tid, agent_id="a", user_id="alice", current_input="q")
    assert context.graph is None and context.messages == []


# -- relevant and hybrid -----------------------------------------------------------------


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "look", "arguments": "{}"}}


async def test_relevant_scores_only_user_and_assistant_text(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    entries = await fill(
        smart,
        tid,
        [
            {"role": "system", "content": "cats purr softly system"},
            {"role": "user", "content": "do cats purr softly"},
            {"role": "assistant", "content": "dogs bark loudly"},
            {"role": "assistant", "content": "checking cats purr", "tool_calls": [_call("c1")]},
            {"role": "tool", "content": "cats purr softly data", "tool_call_id": "c1"},
            {"role": "assistant", "content": "cats purr softly indeed"},
        ],
    )
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=1000,
        strategy="relevant",
        current_input="cats purr softly",
    )
    assert [e.id for e in context.entries] == [entries[i].id for i in (1, 3, 5)]  # chronological
    assert context.messages[1] == {"role": "assistant", "content": "checking cats purr"}
    assert all(m["role"] != "tool" for m in context.messages)
    assert context.truncated and context.total_entries == 6
    assert context.token_count == sum(e.token_count for e in context.entries)


async def test_relevant_is_greedy_and_skips_what_does_not_fit(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    entries = await fill(smart, tid, [" ".join(["cats purr softly"] * 30), "cats purr softly now"])
    assert entries[0].token_count == 94
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=150,
        strategy="relevant",
        current_input="cats purr softly",
    )
    assert context.entries == [entries[1]]


async def _hybrid_thread(memory: AsyncMemory, older: list[str]) -> tuple[str, list[Any]]:
    tid = await thread(memory)
    texts = [words(6, f"filler{i}") for i in range(30)]
    for index, text in zip(range(2, 30, 3), older, strict=False):
        texts[index] = text
    return tid, await fill(memory, tid, texts)


async def test_hybrid_spends_thirty_percent_on_similar_older_entries(smart: AsyncMemory) -> None:
    query = "what is the secret password swordfish"
    tid, entries = await _hybrid_thread(
        smart,
        [
            "the secret password is swordfish today",  # cos 5/6 > 0.6, 6 words: 10 tokens
            "secret password",  # similar but only 15 characters
            "the secret plans are hidden here",  # cos 1/3 <= 0.6
        ],
    )
    context = await smart.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=200, strategy="hybrid", current_input=query
    )
    # history budget 100: 30 on older entries -> the 10-token match, then 90 of recent ones
    assert context.entries == [entries[2], *entries[21:]]
    assert context.token_count == 100


async def test_hybrid_older_share_is_capped_at_thirty_percent(smart: AsyncMemory) -> None:
    match = "the secret password is swordfish today"
    tid, entries = await _hybrid_thread(smart, [match] * 6)  # positions 2, 5, ..., 17
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=200,
        strategy="hybrid",
        current_input="what is the secret password swordfish",
    )
    older = [e for e in context.entries if e.position < entries[20].position]
    assert len(older) == 3  # floor(100 * 0.3) = 30 -> three entries of 10
    assert context.entries[-7:] == entries[-7:]
    assert context.token_count == 100


async def test_hybrid_never_picks_the_last_ten_by_similarity(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    texts = [words(6, f"f{i}") for i in range(30)]
    texts[22] = "the secret password is swordfish today"
    entries = await fill(smart, tid, texts)
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=150,  # history 50: the 5 newest only
        strategy="hybrid",
        current_input="what is the secret password swordfish",
    )
    assert context.entries == entries[25:]


@pytest.mark.parametrize("strategy", ["relevant", "hybrid"])
async def test_fallbacks_to_recent(memory: AsyncMemory, smart: AsyncMemory, strategy: str) -> None:
    tid = await thread(smart)
    await fill(smart, tid, [f"the secret password is swordfish {i}" for i in range(30)])
    recent = await smart.build_context(tid, agent_id="a", user_id="alice", max_tokens=200)
    no_input = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=200,
        strategy=strategy,  # type: ignore[arg-type]
    )
    assert no_input.entries == recent.entries
    plain = AsyncMemory(smart.store, clock=StepClock(), tokenizer=Words())  # no embedder
    no_embedder = await plain.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=200,
        strategy=strategy,  # type: ignore[arg-type]
        current_input="secret password",
    )
    assert no_embedder.entries == recent.entries


async def test_hybrid_falls_back_to_recent_with_ten_entries_or_fewer(smart: AsyncMemory) -> None:
    tid = await thread(smart)
    entries = await fill(smart, tid, ["the secret password is swordfish"] + [words(6)] * 9)
    context = await smart.build_context(
        tid,
        agent_id="a",
        user_id="alice",
        max_tokens=150,
        strategy="hybrid",
        current_input="secret password swordfish",
    )
    assert context.entries == entries[-5:]  # recent: no similarity pick of entry 0


# -- pairing, access, cost -------------------------------------------------------------


async def test_a_window_never_starts_with_an_orphan_tool_result(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    entries = await fill(
        memory,
        tid,
        [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "tool_calls": [_call("c9")]},
            {"role": "tool", "content": "sunny", "tool_call_id": "c9"},
            {"role": "assistant", "content": "It is sunny."},
        ],
    )
    budget = entries[2].token_count + entries[3].token_count
    context = await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=budget + 100, reserve_tokens=100
    )
    assert context.messages == [{"role": "assistant", "content": "It is sunny."}]
    full = await memory.build_context(tid, agent_id="a", user_id="alice", max_tokens=1000)
    assert [m["role"] for m in full.messages] == ["user", "assistant", "tool", "assistant"]


async def test_the_thread_fails_closed(memory: AsyncMemory) -> None:
    tid = await thread(memory)
    await fill(memory, tid, ["hello"])
    with pytest.raises(ThreadForbidden):
        await memory.build_context(tid, agent_id="a", user_id="bob", max_tokens=500)
    with pytest.raises(ThreadForbidden):
        await memory.build_context(tid, agent_id="a", user_id=None, max_tokens=500)
    with pytest.raises(ThreadForbidden):
        await memory.scoped(user_id=None).build_context(tid, agent_id="a", max_tokens=500)
    missing = await memory.build_context(new_id(), agent_id="a", max_tokens=500)
    assert (missing.messages, missing.total_entries, missing.truncated) == ([], 0, False)


async def test_no_user_on_the_unscoped_handle_is_the_threads_owner(memory: AsyncMemory) -> None:
    """The trusted form, as ``history``: the context the owner's own turns see."""
    tid = await thread(memory)
    await fill(memory, tid, ["hello"])
    await memory.facts.add(content="alice likes tea", agent_id="a", user_id="alice")
    await memory.facts.add(content="bob likes coffee", agent_id="a", user_id="bob")
    trusted = await memory.build_context(tid, agent_id="a", max_tokens=500, include_facts=True)
    owner = await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=500, include_facts=True
    )
    assert trusted.messages == owner.messages
    assert [f.content for f in trusted.facts] == ["alice likes tea"]
    assert [m["content"] for m in await memory.history(tid)] == ["hello"]
    built = await ContextBuilder(ContextOptions(max_tokens=500), memory).build(tid, agent_id="a")
    assert built.messages == [{"role": "user", "content": "hello"}]


async def test_the_thread_is_never_read_whole() -> None:
    class Counting(AsyncInMemoryStore):
        rows = 0

        async def entry_list(self, *args: Any, **kwargs: Any) -> Any:
            thread, rows = await super().entry_list(*args, **kwargs)
            Counting.rows += len(rows)
            return thread, rows

    memory = AsyncMemory(Counting(), clock=StepClock(), tokenizer=Words(), embedder=BagOfWords())
    tid = await thread(memory)
    entries = [{"role": "user", "content": words(6, f"x{i}")} for i in range(3000)]
    for start in range(0, 3000, 500):
        await memory.entries.add_many(tid, entries[start : start + 500])
    Counting.rows = 0
    context = await memory.build_context(tid, agent_id="a", user_id="alice", max_tokens=300)
    assert context.included_entries == 20 and context.total_entries == 3000
    assert Counting.rows <= 64
    Counting.rows = 0
    await memory.build_context(
        tid, agent_id="a", user_id="alice", max_tokens=300, strategy="hybrid", current_input="x5"
    )
    assert Counting.rows <= 64


async def test_token_count_never_exceeds_available_with_a_real_tokenizer(store: Any) -> None:
    memory = AsyncMemory(store, clock=StepClock())  # exact o200k counts
    tid = await thread(memory)
    for i in range(40):
        await memory.facts.add(agent_id="a", content=f"Fact number {i}: the user likes item {i}.")
    await fill(memory, tid, [f"Message {i}: " + "lorem ipsum dolor " * (i % 7) for i in range(120)])
    for max_tokens in (150, 300, 777, 2048):
        context = await memory.build_context(
            tid,
            agent_id="a",
            user_id="alice",
            max_tokens=max_tokens,
            system_prompt="You are a helpful assistant.",
            include_facts=True,
        )
        options = ContextOptions(max_tokens=max_tokens)
        assert context.token_count <= options.available
        assert context.facts or max_tokens < 700
        facts_message = {"role": "system", "content": context.messages[0]["content"]}
        system = count_message_tokens(memory._core.tokenizer, facts_message)
        assert context.token_count == system + sum(e.token_count for e in context.entries)
        base = count_message_tokens(
            memory._core.tokenizer, {"role": "system", "content": "You are a helpful assistant."}
        )
        assert system - base <= math.floor(options.available * 0.1)
