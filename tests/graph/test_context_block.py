"""The graph block's ranking, format and fitting (``memorybank.graph._context``), no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memorybank.errors import InvalidInput
from memorybank.graph import Entity, GraphContextOptions, Relation
from memorybank.graph._context import Seed, as_options, fit_block, name_keys, named_in, rank
from memorybank.tokens import get_tokenizer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
TOKENS = get_tokenizer("gpt-4o")


def entity(
    name: str, type: str = "person", *, aliases: tuple[str, ...] = (), obs: tuple[str, ...] = ()
) -> Entity:
    return Entity(
        id=f"e-{name.lower().replace(' ', '-')}-{type}",
        tenant_id="default",
        name=name,
        type=type,
        agent_id=None,
        user_id=None,
        aliases=aliases,
        observations=obs,
        properties={},
        confidence=1.0,
        source="user",
        created_at=T0,
        updated_at=T0,
    )


def relation(
    source: Entity,
    type: str,
    target: Entity,
    *,
    valid_at: datetime | None = None,
    invalid_at: datetime | None = None,
    confidence: float = 1.0,
    inferred: bool = False,
) -> Relation:
    return Relation(
        id=f"r-{source.id}-{type}-{target.id}",
        tenant_id="default",
        source_id=source.id,
        type=type,
        target_id=target.id,
        agent_id=None,
        user_id=None,
        label=None,
        weight=1.0,
        bidirectional=False,
        properties={},
        confidence=confidence,
        source="inferred" if inferred else "user",
        provenance=(),
        valid_at=valid_at,
        invalid_at=invalid_at,
        created_at=T0,
        expired_at=invalid_at,
    )


ALICE = entity("Alice", aliases=("Ally",), obs=("likes green tea", "plays chess"))
BOB = entity("Bob")
ACME = entity("Acme", "organization")
PARIS = entity("Paris", "location")
FRANCE = entity("France", "location")
WORKS = relation(ALICE, "works_at", ACME, valid_at=T0 + timedelta(days=59))
LIVES = relation(ALICE, "lives_in", PARIS)
IN = relation(PARIS, "located_in", FRANCE)
KNOWS = relation(BOB, "knows", ALICE, confidence=0.5)
GRAPH = ([ALICE, BOB, ACME, PARIS, FRANCE], [WORKS, LIVES, IN, KNOWS])


def ranked(query: str, seeds: list[Seed], depth: int = 3) -> tuple[list, list]:  # type: ignore[type-arg]
    return rank(query, seeds, *GRAPH, when=NOW, max_depth=depth)


def test_name_keys_are_word_runs_with_and_without_punctuation() -> None:
    keys = name_keys("Where does Alice  Smith work, at Acme Inc.?")
    assert "alice smith" in keys and "acme inc." in keys and "acme inc" in keys
    assert "work," in keys and "work" in keys
    assert "where" not in keys and "does" not in keys  # single common words
    assert keys.index("alice") < keys.index("acme")


def test_names_match_whole_words_only() -> None:
    assert named_in("Ask Alice's brother", ["alice"]) == 4
    assert named_in("Ask Alicia", ["alice", "Al"]) is None
    assert named_in("new  YORK city", ["New York"]) == 0


def test_neighbours_decay_with_hops_and_relevant_relations_come_first() -> None:
    entities, relations = ranked("Where does Alice live?", [Seed(ALICE, 1.0)])
    names = [e.name for e, _, _ in entities]
    assert names[0] == "Alice"
    assert set(names[1:4]) == {"Acme", "Bob", "Paris"} and names[4] == "France"
    assert next(r.type for r, _, _ in relations) == "lives_in"  # "live" matches lives_in
    assert [r.type for r, _, _ in relations][-1] == "located_in"  # two hops away


def test_depth_bounds_the_neighbourhood() -> None:
    entities, relations = ranked("Alice", [Seed(ALICE, 1.0)], depth=1)
    assert "France" not in [e.name for e, _, _ in entities]
    assert "located_in" not in [r.type for r, _, _ in relations]
    entities, _ = ranked("Alice", [Seed(ALICE, 1.0)], depth=0)
    assert [e.name for e, _, _ in entities] == ["Alice"]


def test_lines_show_types_aliases_observations_and_validity() -> None:
    entities, relations = ranked("Alice", [Seed(ALICE, 1.0)])
    lines = {e.name: line for e, _, line in entities}
    assert lines["Alice"] == "Alice (person; aka Ally): likes green tea; plays chess"
    assert lines["Acme"] == "Acme (organization)"
    text = {r.type: line for r, _, line in relations}
    assert text["works_at"] == "Alice works_at Acme (since 2026-03-01)"
    assert text["lives_in"] == "Alice lives_in Paris (since 2026-01-01)"


def test_a_past_relation_shows_its_interval_and_ranks_below_a_current_one() -> None:
    old = relation(ALICE, "lives_in", FRANCE, valid_at=T0, invalid_at=T0 + timedelta(days=30))
    _, relations = rank(
        "Alice lives",
        [Seed(ALICE, 1.0)],
        [ALICE, PARIS, FRANCE],
        [LIVES, old],
        when=NOW,
        max_depth=1,
    )
    assert [line for _, _, line in relations] == [
        "Alice lives_in Paris (since 2026-01-01)",
        "Alice lives_in France (from 2026-01-01 to 2026-01-31)",
    ]


def test_inferred_relations_and_shared_names_are_marked() -> None:
    paris_hilton = entity("Paris", "person")
    inferred = relation(ALICE, "knows", paris_hilton, inferred=True)
    _, relations = rank(
        "Alice",
        [Seed(ALICE, 1.0)],
        [ALICE, PARIS, paris_hilton],
        [LIVES, inferred],
        when=NOW,
        max_depth=1,
    )
    assert sorted(line for _, _, line in relations) == [
        "Alice knows Paris (person) (inferred; since 2026-01-01)",
        "Alice lives_in Paris (location) (since 2026-01-01)",
    ]


def test_block_format_and_exact_budget() -> None:
    entities, relations = ranked("Where does Alice live?", [Seed(ALICE, 1.0)])
    block = fit_block(entities, relations, budget=10_000, count=TOKENS.count)
    assert block is not None
    assert block.text.startswith("Entities:\n- Alice (person; aka Ally)")
    assert "\nRelationships:\n- Alice lives_in Paris (since 2026-01-01)\n" in block.text
    full = TOKENS.count(block.text)
    for budget in range(full, 0, -7):
        small = fit_block(entities, relations, budget=budget, count=TOKENS.count)
        if small is None:
            assert budget < TOKENS.count("Entities:\n- Acme (organization)")
            break
        assert TOKENS.count(small.text) <= budget
        # what is kept is the best: the named entity goes last
        if small.entities:
            assert small.entities[0].name == "Alice" or ALICE not in small.entities


def test_lines_that_do_not_fit_are_skipped_for_smaller_ones() -> None:
    talker = entity("Alice", obs=tuple(f"observation number {i} is long" for i in range(5)))
    entities, relations = rank(
        "Alice",
        [Seed(talker, 1.0)],
        [talker, ACME],
        [relation(talker, "works_at", ACME)],
        when=NOW,
        max_depth=1,
    )
    budget = TOKENS.count(
        "Entities:\n- Acme (organization)\nRelationships:\n- Alice works_at Acme (since 2026-01-01)"
    )
    block = fit_block(entities, relations, budget=budget, count=TOKENS.count)
    assert block is not None and [e.name for e in block.entities] == ["Acme"]
    assert block.text.endswith("Relationships:\n- Alice works_at Acme (since 2026-01-01)")


def test_nothing_fits_or_nothing_found_gives_no_block() -> None:
    entities, relations = ranked("Alice", [Seed(ALICE, 1.0)])
    assert fit_block(entities, relations, budget=3, count=TOKENS.count) is None
    assert fit_block([], [], budget=1000, count=TOKENS.count) is None
    assert rank("x", [], *GRAPH, when=NOW, max_depth=3) == ([], [])


def test_output_is_deterministic_whatever_the_input_order() -> None:
    seeds = [Seed(ALICE, 1.0), Seed(PARIS, 0.6)]
    first = rank("Alice Paris", seeds, *GRAPH, when=NOW, max_depth=2)
    again = rank("Alice Paris", seeds[::-1], GRAPH[0][::-1], GRAPH[1][::-1], when=NOW, max_depth=2)
    assert [line for *_, line in first[0]] == [line for *_, line in again[0]]
    assert [line for *_, line in first[1]] == [line for *_, line in again[1]]


def test_options_from_a_dict_and_bad_options() -> None:
    assert as_options({"max_nodes": 5, "entity_types": ["person"]}) == GraphContextOptions(
        max_nodes=5, entity_types=("person",)
    )
    assert as_options(None) == GraphContextOptions()
    for bad in (
        {"max_hops": 2},
        {"max_nodes": 0},
        {"max_depth": -1},
        {"entity_types": "person"},
        {"as_of": datetime(2026, 1, 1)},  # noqa: DTZ001
        "max_nodes=3",
    ):
        with pytest.raises(InvalidInput) as caught:
            as_options(bad)
        assert caught.value.field == "graph_options"
