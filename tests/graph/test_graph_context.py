"""``build_context(include_graph_context=True)`` over ``memory.graph`` on real stores.

SQLite and PostgreSQL (a real server; skipped locally, failed in CI when it is
down), the real tokenizer, sync and async.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory, ContextBuilder, ContextOptions, InvalidInput, Memory
from memorybank.graph import GraphContextOptions
from memorybank.tokens import count_message_tokens
from tests.reliability._harness import provide

D = datetime(2024, 1, 1, tzinfo=UTC)
START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> datetime:
        self.ticks += 1
        return START + timedelta(milliseconds=self.ticks)


@pytest.fixture(params=["sqlite-full", "postgres"], ids=["sqlite", "postgres"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    for spec in provide(str(request.param), tmp_path):
        store = spec.open_async()
        memory = AsyncMemory(store, clock=Clock())
        try:
            yield memory
        finally:
            await memory.close()
            await store.close()


async def build(memory: AsyncMemory, text: str, *, user: str | None = "u1", **kw: Any) -> Any:
    thread = await memory.threads.create(user_id=user, agent_id="a")
    options: dict[str, Any] = {
        "max_tokens": 4000,
        "include_graph_context": True,
        "current_input": text,
    } | kw
    return await memory.build_context(thread.id, agent_id="a", user_id=user, **options)


async def family(memory: AsyncMemory, user: str | None = None) -> dict[str, Any]:
    """Alice (aka Ally) works at Acme and lives in Paris (in France); Bob knows Alice."""
    g = memory.graph
    alice = await g.add_entity(
        "Alice", type="person", user_id=user, aliases=("Ally",), observations=("likes tea",)
    )
    bob = await g.add_entity("Bob", type="person", user_id=user)
    acme = await g.add_entity("Acme", type="organization", user_id=user)
    paris = await g.add_entity("Paris", type="location", user_id=user)
    france = await g.add_entity("France", type="location", user_id=user)
    await g.add_relation(alice.id, "works_at", acme.id, user_id=user, valid_at=D)
    await g.add_relation(alice.id, "lives_in", paris.id, user_id=user, valid_at=D)
    await g.add_relation(paris.id, "located_in", france.id, user_id=user, valid_at=D)
    await g.add_relation(bob.id, "knows", alice.id, user_id=user, valid_at=D)
    return {"alice": alice, "bob": bob, "acme": acme, "paris": paris, "france": france}


EXPECTED = """Entities:
- Alice (person; aka Ally): likes tea
- Paris (location)
- Acme (organization)
- Bob (person)
- France (location)
Relationships:
- Alice lives_in Paris (since 2024-01-01)
- Bob knows Alice (since 2024-01-01)
- Alice works_at Acme (since 2024-01-01)
- Paris located_in France (since 2024-01-01)"""


async def test_the_block_names_the_input_entities_and_their_relationships(
    memory: AsyncMemory,
) -> None:
    await family(memory)
    context = await build(memory, "Where does Ally live these days?")
    assert context.errors == []
    assert context.graph == EXPECTED
    assert context.messages[0] == {"role": "system", "content": EXPECTED}
    assert context.graph_entities[0].name == "Alice"
    assert context.graph_relations[0].type == "lives_in"
    # the input's words rank the relations: "work" brings works_at first
    context = await build(memory, "Where does Alice work?")
    assert context.graph_relations[0].type == "works_at"
    assert [e.name for e in context.graph_entities][:2] == ["Alice", "Acme"]


async def test_the_block_fits_the_fifteen_percent_share_exactly(memory: AsyncMemory) -> None:
    await family(memory)
    g = memory.graph
    alice = (await g.find_entities("Alice"))[0]
    for i in range(30):
        friend = await g.add_entity(
            f"Friend {i:02d}", type="person", observations=(f"met in {2000 + i}",)
        )
        await g.add_relation(alice.id, "knows", friend.id, valid_at=D)
    tokenizer = memory._core.tokenizer
    seen = set()
    for max_tokens in (300, 450, 700, 1000, 1600, 2500, 4000):
        context = await build(
            memory,
            "Who does Alice know?",
            max_tokens=max_tokens,
            system_prompt="You are helpful.",
            graph_options=GraphContextOptions(max_nodes=40, max_edges=60, max_depth=1),
        )
        available = max_tokens - max(100, math.floor(max_tokens * 0.1))
        share = math.floor(available * 0.15)
        system = context.messages[0]
        prompt_only = count_message_tokens(
            tokenizer, {"role": "system", "content": "You are helpful."}
        )
        assert context.token_count == count_message_tokens(tokenizer, system)
        assert context.token_count - prompt_only <= share
        assert system["content"] == "You are helpful.\n\n" + context.graph
        assert context.graph.startswith("Entities:\n- Alice (person; aka Ally)")
        seen.add(len(context.graph_entities) + len(context.graph_relations))
        # nothing left out would still have fit: the next line costs more than what is left
        assert share - (context.token_count - prompt_only) < 16
    assert len(seen) >= 5  # more budget, more lines


async def test_bounds_and_entity_types(memory: AsyncMemory) -> None:
    people = await family(memory)
    for i in range(12):
        place = await memory.graph.add_entity(f"Town {i:02d}", type="location")
        await memory.graph.add_relation(people["alice"].id, "visited", place.id, valid_at=D)
    context = await build(
        memory, "Alice", graph_options=GraphContextOptions(max_nodes=4, max_edges=2)
    )
    assert len(context.graph_entities) <= 4 and len(context.graph_relations) <= 2
    assert context.graph_entities[0].name == "Alice"
    context = await build(
        memory, "Alice", graph_options=GraphContextOptions(entity_types=("person",))
    )
    assert {e.name for e in context.graph_entities} == {"Alice", "Bob"}
    assert [r.type for r in context.graph_relations] == ["knows"]
    context = await build(memory, "Alice", graph_options=GraphContextOptions(max_depth=0))
    assert [e.name for e in context.graph_entities] == ["Alice"]


async def test_only_current_relations_unless_history_or_as_of(memory: AsyncMemory) -> None:
    g = memory.graph
    alice = await g.add_entity("Alice", type="person")
    london = await g.add_entity("London", type="location")
    paris = await g.add_entity("Paris", type="location")
    await g.add_relation(alice.id, "lives_in", london.id, valid_at=datetime(2020, 1, 1, tzinfo=UTC))
    await g.add_relation(alice.id, "lives_in", paris.id, valid_at=D)  # functional: closes London
    now = await build(memory, "Where does Alice live?")
    assert now.graph.endswith("Relationships:\n- Alice lives_in Paris (since 2024-01-01)")
    history = await build(
        memory,
        "Where does Alice live?",
        graph_options=GraphContextOptions(include_history=True),
    )
    assert history.graph.endswith(
        "Relationships:\n- Alice lives_in Paris (since 2024-01-01)"
        "\n- Alice lives_in London (from 2020-01-01 to 2024-01-01)"
    )
    then = await build(
        memory,
        "Where does Alice live?",
        graph_options=GraphContextOptions(as_of=datetime(2022, 6, 1, tzinfo=UTC)),
    )
    assert then.graph.endswith(
        "Relationships:\n- Alice lives_in London (since 2020-01-01; until 2024-01-01)"
    )


async def test_another_users_private_graph_never_appears(memory: AsyncMemory) -> None:
    shared = await family(memory)  # shared by every user
    g = memory.graph
    secret = await g.add_entity(
        "Alice", type="person", user_id="u2", observations=("secret diagnosis",)
    )
    clinic = await g.add_entity("Clinic", type="organization", user_id="u2")
    await g.add_relation(secret.id, "visits", clinic.id, user_id="u2", valid_at=D)
    await g.add_relation(shared["alice"].id, "visits", clinic.id, user_id="u2", valid_at=D)
    await g.add_relation(shared["alice"].id, "sees", shared["bob"].id, user_id="u2", valid_at=D)
    mine = await g.add_entity("Mallory", type="person", user_id="u1")
    await g.add_relation(shared["alice"].id, "knows", mine.id, user_id="u1", valid_at=D)

    for user in ("u1", None):
        context = await build(memory, "What about Alice and the Clinic?", user=user)
        assert context.errors == []
        assert "secret" not in context.graph and "Clinic" not in context.graph
        assert " sees " not in context.graph and " visits " not in context.graph
        assert {e.user_id for e in context.graph_entities} <= {user, None}
        assert {r.user_id for r in context.graph_relations} <= {user, None}
        assert ("Mallory" in context.graph) == (user == "u1")
    theirs = await build(memory, "What about Alice and the Clinic?", user="u2")
    assert "Alice (person) visits Clinic" in theirs.graph and "Mallory" not in theirs.graph
    assert "secret diagnosis" in theirs.graph


async def test_no_block_for_an_empty_graph_or_an_input_naming_nothing(
    memory: AsyncMemory,
) -> None:
    empty = await build(memory, "Where does Alice live?")
    assert empty.graph is None and empty.errors == [] and empty.messages == []
    await family(memory)
    unrelated = await build(memory, "zzz qqq")
    assert unrelated.graph is None and unrelated.errors == []
    no_input = await build(memory, "")
    assert no_input.graph is None


async def test_options_as_a_dict_and_bad_options(memory: AsyncMemory) -> None:
    await family(memory)
    thread = await memory.threads.create(user_id="u1", agent_id="a")
    builder = ContextBuilder(
        ContextOptions(max_tokens=4000, include_graph_context=True, graph_options={"max_depth": 0}),
        memory=memory,
    )
    context = await builder.build(thread.id, agent_id="a", user_id="u1", current_input="Alice")
    assert [e.name for e in context.graph_entities] == ["Alice"]
    with pytest.raises(InvalidInput) as caught:
        await build(memory, "Alice", graph_options={"max_nodes": 0})
    assert caught.value.field == "graph_options"


@pytest.fixture(params=["sqlite-full", "postgres"], ids=["sqlite", "postgres"])
def sync_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    for spec in provide(str(request.param), tmp_path):
        store = spec.open()
        memory = Memory(store, clock=Clock())
        try:
            yield memory
        finally:
            memory.close()
            store.close()


def test_sync_memory_builds_the_same_block(sync_memory: Memory) -> None:
    g = sync_memory.graph
    alice = g.add_entity("Alice", type="person", aliases=("Ally",), observations=("likes tea",))
    paris = g.add_entity("Paris", type="location")
    g.add_relation(alice.id, "lives_in", paris.id, valid_at=D)
    thread = sync_memory.threads.create(user_id="u1", agent_id="a")
    context = sync_memory.build_context(
        thread.id,
        agent_id="a",
        user_id="u1",
        max_tokens=4000,
        current_input="Where does Ally live?",
        include_graph_context=True,
    )
    assert context.graph == (
        "Entities:\n- Alice (person; aka Ally): likes tea\n- Paris (location)"
        "\nRelationships:\n- Alice lives_in Paris (since 2024-01-01)"
    )


async def test_entities_found_by_search_when_the_input_names_none(memory: AsyncMemory) -> None:
    await family(memory)
    context = await build(memory, "anyone who likes tea?")  # Alice's observation
    assert context.graph_entities[0].name == "Alice"
    assert context.graph.startswith("Entities:\n- Alice (person; aka Ally): likes tea")


async def test_inferred_relations_only_when_asked(memory: AsyncMemory) -> None:
    people = await family(memory)
    await memory.graph.infer(["transitive_located_in", "knows_symmetry"])
    plain = await build(memory, "Where does Alice live?")
    assert all(r.source != "inferred" for r in plain.graph_relations)
    rich = await build(
        memory, "Where does Alice live?", graph_options=GraphContextOptions(include_inferred=True)
    )
    inferred = [r for r in rich.graph_relations if r.source == "inferred"]
    assert [(r.source_id, r.type, r.target_id) for r in inferred] == [
        (people["alice"].id, "knows", people["bob"].id)
    ]
    assert "- Alice knows Bob (inferred; since " in rich.graph


async def test_the_same_graph_built_in_another_order_gives_the_same_block(
    memory: AsyncMemory,
) -> None:
    g = memory.graph
    first = await family(memory, user="u1")
    # the same facts again for another user, written in the reverse order
    names = [("France", "location"), ("Paris", "location"), ("Acme", "organization")]
    made = {n: await g.add_entity(n, type=t, user_id="u3") for n, t in names}
    made["Bob"] = await g.add_entity("Bob", type="person", user_id="u3")
    made["Alice"] = await g.add_entity(
        "Alice", type="person", user_id="u3", aliases=("Ally",), observations=("likes tea",)
    )
    for s, t, o in [
        ("Bob", "knows", "Alice"),
        ("Paris", "located_in", "France"),
        ("Alice", "lives_in", "Paris"),
        ("Alice", "works_at", "Acme"),
    ]:
        await g.add_relation(made[s].id, t, made[o].id, user_id="u3", valid_at=D)
    assert first["alice"].id != made["Alice"].id
    mine = await build(memory, "Where does Ally live these days?", user="u1")
    theirs = await build(memory, "Where does Ally live these days?", user="u3")
    assert mine.graph == theirs.graph == EXPECTED


async def test_the_graph_hook_itself(memory: AsyncMemory) -> None:
    await family(memory)
    g = memory.graph
    text = await g.context_block("Where does Ally live these days?", max_tokens=1000)
    assert text == EXPECTED
    small = await g.context_block("Ally", max_tokens=1000, max_depth=0)
    assert small == "Entities:\n- Alice (person; aka Ally): likes tea"
    same = await g.context_block("Ally", max_tokens=1000, options=GraphContextOptions(max_depth=0))
    assert same == small
    tokens = memory._core.tokenizer.count(EXPECTED)
    fitted = await g.context_block("Where does Ally live these days?", max_tokens=tokens - 1)
    assert fitted is not None and memory._core.tokenizer.count(fitted) <= tokens - 1
    assert await g.context_block("Ally", max_tokens=0) is None
    with pytest.raises(InvalidInput):
        await g.context_block("Ally", max_tokens=10, options=GraphContextOptions(), max_depth=1)


async def test_a_small_budget_keeps_the_relation_over_bare_names(memory: AsyncMemory) -> None:
    """At 300 tokens the share (30) holds one entity line and one relation line, not all
    three: it keeps "Bob plans_to_visit Paris" (which names Paris too) over "Paris"."""
    g = memory.graph
    bob = await g.add_entity("Bob", type="person", user_id="u1")
    paris = await g.add_entity("Paris", type="city")
    await g.add_relation(bob.id, "plans_to_visit", paris.id, valid_at=D, user_id="u1")
    ask = "Where is Bob going? Paris?"
    small = await build(memory, ask, max_tokens=300)
    assert "Bob plans_to_visit Paris (since 2024-01-01)" in small.graph
    assert [e.name for e in small.graph_entities] == ["Bob"]
    large = await build(memory, ask, max_tokens=2000)
    assert large.graph == (
        "Entities:\n- Bob (person)\n- Paris (city)\n"
        "Relationships:\n- Bob plans_to_visit Paris (since 2024-01-01)"
    )
