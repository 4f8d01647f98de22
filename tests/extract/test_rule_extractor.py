"""RuleExtractor: the offline demo extractor reads exactly the shapes it documents."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memorybank.extract import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    Extractor,
    RuleExtractor,
    finish,
    normalize_name,
)


def triples(found: Extraction) -> list[tuple[str, str, str]]:
    return [(r.source, r.type, r.target) for r in found.relations]


def test_is_an_extractor() -> None:
    assert isinstance(RuleExtractor(), Extractor)


def test_possessive_works_at_lives_in() -> None:
    found = RuleExtractor().extract(
        "Bob is Alice's manager. Alice works at Acme Corp. Bob lives in New York."
    )
    assert {(e.name, e.type) for e in found.entities} == {
        ("Bob", "person"),
        ("Alice", "person"),
        ("Acme Corp", "organization"),
        ("New York", "location"),
    }
    assert triples(found) == [
        ("Bob", "manager_of", "Alice"),
        ("Alice", "works_at", "Acme Corp"),
        ("Bob", "lives_in", "New York"),
    ]
    assert [(o.entity, o.text) for o in found.observations] == [("Bob", "Alice's manager")]
    assert [(f.subject, f.attribute, f.value, f.statement) for f in found.facts] == [
        ("Alice", "works_at", "Acme Corp", "Alice works at Acme Corp"),
        ("Bob", "lives_in", "New York", "Bob lives in New York"),
    ]


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("Alice moved to Berlin on 2024-03-01.", datetime(2024, 3, 1, tzinfo=UTC)),
        ("On March 5, 2021 Alice moved to Berlin.", datetime(2021, 3, 5, tzinfo=UTC)),
        ("Alice lives in Berlin since 7 Sept 2019!", datetime(2019, 9, 7, tzinfo=UTC)),
        ("Alice has lived in Berlin since 2018. Alice lives in Berlin.", None),
        ("Alice lives in Berlin since 2018", datetime(2018, 1, 1, tzinfo=UTC)),
        ("Alice lives in Berlin.", None),
        ("Alice lives in Berlin, 2024-02-31 was no day.", None),
    ],
)
def test_dates_become_valid_at(text: str, when: datetime | None) -> None:
    found = RuleExtractor().extract(text)
    assert triples(found) == [("Alice", "lives_in", "Berlin")]
    assert found.relations[0].valid_at == when


def test_born_on_is_an_observation_and_a_fact() -> None:
    found = RuleExtractor().extract("Carol was born on 3 March 1990.")
    assert [(o.entity, o.text) for o in found.observations] == [("Carol", "born on 1990-03-03")]
    assert [(f.subject, f.attribute, f.value) for f in found.facts] == [
        ("Carol", "born_on", "1990-03-03")
    ]


def test_capitalised_names_but_not_sentence_starts_or_times() -> None:
    found = RuleExtractor().extract(
        "Yesterday I met Carol and Dan in Lisbon. The weather was great on Monday."
    )
    assert [(e.name, e.type, e.confidence) for e in found.entities] == [
        ("Carol", "concept", 0.75),
        ("Dan", "concept", 0.75),
        ("Lisbon", "concept", 0.75),
    ]
    assert found.relations == ()


def test_a_known_name_counts_at_the_start_of_a_sentence() -> None:
    assert RuleExtractor().extract("Paris is lovely.").entities == ()
    found = RuleExtractor().extract("Paris is lovely.", known_entities=["paris"])
    assert [e.name for e in found.entities] == ["Paris"]


def test_nothing_to_find() -> None:
    found = RuleExtractor().extract("i think it will rain, maybe.")
    assert not found
    assert found == Extraction()


def test_min_confidence_applies() -> None:
    found = RuleExtractor(min_confidence=0.8).extract("I met Carol. Alice lives in Rome.")
    assert [e.name for e in found.entities] == ["Alice", "Rome"]


async def test_async_twin() -> None:
    text = "Dan works for Globex."
    assert await RuleExtractor().aextract(text) == RuleExtractor().extract(text)


def test_finish_merges_names_and_bounds() -> None:
    raw = Extraction(
        entities=(
            ExtractedEntity("  Alice   Smith ", "Person", ("Ali", "alice smith"), 0.8),
            ExtractedEntity("ALICE SMITH", "person", ("A. S.",), 0.95),
            ExtractedEntity("Bob", "person", (), 1.5),
        ),
        relations=(
            ExtractedRelation("Ali", "Friend Of", "alice smith"),
            ExtractedRelation("Ali", "Knows", "Eve"),
            ExtractedRelation("alice smith", "knows", "Eve"),
        ),
    )
    done = finish(raw, known_entities=["eve"])
    assert done.entities == (ExtractedEntity("Alice Smith", "person", ("Ali", "A. S."), 0.95),)
    # aliases and known names stand for their entity: a self-relation through an
    # alias is dropped, and so is the same edge named twice
    assert triples(done) == [("Alice Smith", "knows", "eve")]
    assert done.dropped == 1 + 1 + 1
    assert normalize_name("  ÉVE\u00a0 Smith") == "éve smith"
