"""memory.profile on every store: a user's current facts by attribute with provenance,
kept current by consolidation, never another user's or a shared fact; the context
builder's include_profile and decay; GET /v1/users/{user_id}/profile."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memorybank import ContextOptions, Memory
from memorybank.consolidation.profile import attribute_of
from memorybank.context._sync.builder import ContextBuilder
from memorybank.errors import InvalidInput
from memorybank.importance import HalfLife
from memorybank.testing._embedder import SynonymEmbedder
from tests.all_stores import STORE_KINDS, open_store

START = datetime(2026, 3, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture(params=STORE_KINDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with open_store(request.param, tmp_path) as store:
        yield Memory(store, clock=Clock(), embedder=SynonymEmbedder(), tenant_id="prof")


def test_the_profile_groups_a_users_current_facts_with_provenance(memory: Memory) -> None:
    name = memory.facts.add(content="User's name is Ana", user_id="ana", source_entries=["e1"])
    old_home = memory.facts.add(content="Ana lives in Lisbon", user_id="ana")
    tea = memory.facts.add(content="Ana likes green tea", user_id="ana")
    trip = memory.facts.add(content="Ana plans to visit Japan in May", user_id="ana")
    note = memory.facts.add(content="Ana has a blue bicycle", user_id="ana")
    diet = memory.facts.add(content="No dairy", user_id="ana", category="diet")
    memory.facts.add(content="Bob lives in Oslo", user_id="bob")
    memory.facts.add(content="The office closes at six", user_id=None)
    new_home = memory.facts.add(content="Ana lives in Porto", user_id="ana", source_entries=["e9"])
    profile = memory.profile("ana")
    assert profile.user_id == "ana"
    assert list(profile.attributes) == ["name", "lives_in", "preferences", "plans", "diet", "other"]
    assert [i.fact_id for i in profile.attributes["name"]] == [name.id]
    assert profile.attributes["name"][0].source_entries == ("e1",)
    # two values of one attribute: newest first, until consolidation supersedes the older
    assert [i.fact_id for i in profile.attributes["lives_in"]] == [new_home.id, old_home.id]
    assert [i.fact_id for i in profile.attributes["preferences"]] == [tea.id]
    assert [i.fact_id for i in profile.attributes["plans"]] == [trip.id]
    assert [i.fact_id for i in profile.attributes["diet"]] == [diet.id]
    assert [i.fact_id for i in profile.attributes["other"]] == [note.id]
    assert profile.facts == 7  # neither bob's nor the shared fact
    report = memory.consolidate(user_id="ana")
    assert report.superseded == 1
    [home] = memory.profile("ana").attributes["lives_in"]
    assert (home.fact_id, home.value) == (new_home.id, "porto")
    assert home.created_at == new_home.created_at and home.version >= 1
    assert memory.profile("nobody").attributes == {}
    with pytest.raises(InvalidInput):
        memory.profile()  # the root handle names no user
    scoped = memory.scoped(user_id="ana")
    assert scoped.profile().facts == memory.profile("ana").facts
    with pytest.raises(InvalidInput):
        scoped.profile("bob")


def test_the_context_builder_includes_the_profile_and_weighs_decay(memory: Memory) -> None:
    thread = memory.threads.create(user_id="ana").id
    memory.entries.add(thread, {"role": "user", "content": "hello"})
    memory.facts.add(content="The shop opens at nine", user_id=None, importance=0.9)
    memory.facts.add(content="User's name is Ana", user_id="ana")
    memory.facts.add(content="Ana has a cat called Miso", user_id="ana", importance=0.1)
    built = memory.build_context(
        thread, max_tokens=2000, agent_id="bot", include_profile=True, include_facts=True
    )
    system = built.messages[0]["content"]
    assert "User profile:\n- name: User's name is Ana" in system
    assert built.profile == ["name: User's name is Ana", "other: Ana has a cat called Miso"]
    # a fact the profile shows is not repeated among the known facts
    assert [f.content for f in built.facts] == ["The shop opens at nine"]
    plain = memory.build_context(thread, max_tokens=2000, agent_id="bot", include_facts=True)
    assert [f.content for f in plain.facts] == [
        "Ana has a cat called Miso",
        "User's name is Ana",
        "The shop opens at nine",
    ]  # newest first
    # with decay, by importance and recency: the important fact first, the unimportant last
    options = ContextOptions(max_tokens=2000, include_facts=True, decay=HalfLife(days=30))
    decayed = ContextBuilder(options, memory).build(thread, agent_id="bot", user_id="ana")
    assert [f.content for f in decayed.facts] == [
        "The shop opens at nine",
        "User's name is Ana",
        "Ana has a cat called Miso",
    ]
    with pytest.raises(InvalidInput):
        ContextOptions(max_tokens=100, decay=30)  # type: ignore[arg-type]


def test_attributes_by_category_and_words() -> None:
    from memorybank.records import Fact

    def fact(content: str, category: str | None = None) -> Fact:
        return Fact("f", None, "u", content, category, None, None, {}, (), START, START)

    assert attribute_of(fact("I work at Acme")) == ("works_at", "acme")
    assert attribute_of(fact("Sam lives in Rome")) == ("other", None)  # not about the user
    assert attribute_of(fact("loves jazz")) == ("preferences", None)
    assert attribute_of(fact("is going to run a marathon")) == ("plans", None)
    assert attribute_of(fact("anything", "Preference")) == ("preferences", None)
