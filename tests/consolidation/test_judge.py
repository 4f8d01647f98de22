"""``Memory(..., judge=LLMJudge(...))``: an LLM judge decides, in ``consolidate``, what
the rules leave undecided. Against a real scripted OpenAI-compatible server of the
test's own (``_judge_server``): its decisions applied exactly; invalid answers, errors,
timeouts and ids it was not shown decide nothing; the budget holds; SQLite and memory."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory, Memory
from memorybank.core.judge import LLMJudge, parse_decisions
from memorybank.errors import ConfigurationError
from tests.all_stores import open_store
from tests.llm_server import JudgeModel, Planned, ScriptedLLM, running, shown

MODEL = "test-judge"

START = datetime(2026, 3, 1, tzinfo=UTC)

HIKE = "User likes hiking in the Alps"
HIKE_AGAIN = "User enjoys hiking trips in the Alps"
VEGGIE = "User is vegetarian"
NOT_VEGGIE = "User stopped being vegetarian and eats steak"
CHESS = "User plays chess on Sundays"
TENNIS = "User plays tennis on Sundays"
TEA = "User likes green tea"
TEA_AGAIN = "user likes green tea!"


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    yield from running(ScriptedLLM(MODEL, JudgeModel(), tokens=40))


def says(server: ScriptedLLM, relation: str, a: str, b: str) -> None:
    """Script the judge's model: the pair of texts ``a``, ``b`` is ``relation``."""
    assert isinstance(server.answer, JudgeModel)
    server.answer.says(relation, a, b)


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def judged(
    kind: str, tmp_path: Path, server: ScriptedLLM, **options: Any
) -> Iterator[tuple[Memory, LLMJudge]]:
    judge = LLMJudge(base_url=server.base_url, model=MODEL, api_key="k", **options)
    with open_store(kind, tmp_path) as store:
        try:
            yield Memory(store, clock=Clock(), tenant_id="judge", judge=judge), judge
        finally:
            judge.close()


def state(memory: Memory, user: str) -> list[tuple[str, str, int, dict[str, Any]]]:
    return [(f.id, f.content, f.version, f.metadata) for f in memory.facts.list(user_id=user)]


def test_the_judges_decisions_are_applied_exactly(
    store_kind: str, tmp_path: Path, server: ScriptedLLM
) -> None:
    for memory, judge in judged(store_kind, tmp_path, server):
        ids = {
            text: memory.facts.add(content=text, user_id="u").id
            for text in (HIKE, HIKE_AGAIN, VEGGIE, NOT_VEGGIE, CHESS, TENNIS, TEA, TEA_AGAIN)
        }
        other = memory.facts.add(content="User enjoys hiking trips in the Alps", user_id="v").id
        says(server, "duplicate", HIKE, HIKE_AGAIN)
        says(server, "contradiction", VEGGIE, NOT_VEGGIE)
        says(server, "neither", CHESS, TENNIS)
        before = state(memory, "u")

        report = memory.consolidate(user_id="u")

        got = {(c.fact_id, c.into, c.reason, c.decided_by) for c in report.changes}
        assert got == {
            (ids[HIKE_AGAIN], ids[HIKE], "duplicate", "judge"),  # the older stays
            (ids[VEGGIE], ids[NOT_VEGGIE], "contradiction", "judge"),  # the later value wins
            (ids[TEA_AGAIN], ids[TEA], "duplicate", "rules"),
        }
        assert report.judge is not None
        assert (report.judge.model, report.judge.failed, report.judge.exhausted) == (
            MODEL,
            0,
            False,
        )
        assert report.judge.calls == len(server.requests) == report.judge.asked
        assert report.judge.tokens == 40 * report.judge.calls
        left = {f.content for f in memory.facts.list(user_id="u")}
        assert left == {HIKE, NOT_VEGGIE, CHESS, TENNIS, TEA}
        kept = memory.facts.get(ids[HIKE], user_id="u")
        assert kept is not None and kept.metadata["merged_from"] == [ids[HIKE_AGAIN]]
        [last] = memory.facts.history(ids[VEGGIE], user_id="u")
        assert last.metadata["superseded_by"] == ids[NOT_VEGGIE]
        # the stored report says the same, judge and all
        stored = memory.consolidation.report(report.run_id)
        assert stored.changes == report.changes
        assert stored.judge == report.judge
        # every request: the JSON schema allows only the ids shown, all of this user's
        # and older than the fact; the other user's fact was never shown
        for request in server.requests:
            fact, candidates = shown(request)
            allowed = request["response_format"]["json_schema"]["schema"]["properties"][
                "decisions"
            ]["items"]["properties"]["id"]["enum"]
            assert allowed == list(candidates)
            assert set(candidates) <= set(ids.values())
            order = list(ids)
            assert all(order.index(t) < order.index(fact) for t in candidates.values())
            assert other not in json.dumps(request)
            assert request["max_tokens"] == judge.max_tokens
        # undo restores exactly
        memory.consolidation.undo(report.run_id)
        assert state(memory, "u") == before


def two_facts(memory: Memory) -> tuple[str, str]:
    first = memory.facts.add(content=HIKE, user_id="u").id
    second = memory.facts.add(content=HIKE_AGAIN, user_id="u").id
    return first, second


@pytest.mark.parametrize(
    "answers",
    [
        [Planned(content="not json"), Planned(content='{"decisions": "duplicate"}')],
        [Planned(status=500), Planned(status=503)],
        [Planned(status=401)],
        [Planned(delay=2.0), Planned(delay=2.0)],
    ],
    ids=["invalid-json", "http-errors", "refused", "timeouts"],
)
def test_a_failed_call_decides_nothing(
    store_kind: str, tmp_path: Path, server: ScriptedLLM, answers: list[Planned]
) -> None:
    for memory, _ in judged(store_kind, tmp_path, server, timeout=0.5, max_retries=1):
        two_facts(memory)
        says(server, "duplicate", HIKE, HIKE_AGAIN)  # what a valid answer would have said
        server.add(*answers)
        before = state(memory, "u")
        report = memory.consolidate(user_id="u")
        assert report.changes == []
        assert report.judge is not None
        assert (report.judge.asked, report.judge.failed) == (1, 1)
        assert report.judge.calls == len(answers) == len(server.requests)
        assert state(memory, "u") == before


def test_an_invalid_answer_is_retried(store_kind: str, tmp_path: Path, server: ScriptedLLM) -> None:
    for memory, _ in judged(store_kind, tmp_path, server, max_retries=1):
        first, second = two_facts(memory)
        says(server, "duplicate", HIKE, HIKE_AGAIN)
        server.add(Planned(content="Sure! They are duplicates."))
        report = memory.consolidate(user_id="u")
        assert [(c.fact_id, c.into, c.decided_by) for c in report.changes] == [
            (second, first, "judge")
        ]
        assert report.judge is not None
        assert (report.judge.calls, report.judge.failed) == (2, 0)


def test_ids_not_shown_and_unknown_relations_are_ignored(
    store_kind: str, tmp_path: Path, server: ScriptedLLM
) -> None:
    for memory, _ in judged(store_kind, tmp_path, server):
        first, _second = two_facts(memory)
        stranger = memory.facts.add(content="User plays the cello", user_id="v").id
        answer = {
            "decisions": [
                {"id": stranger, "relation": "duplicate"},  # another user's fact
                {"id": "made-up", "relation": "contradiction"},
                {"id": first, "relation": "merge"},  # not a relation
            ]
        }
        server.add(Planned(content=json.dumps(answer)))
        before, theirs = state(memory, "u"), state(memory, "v")
        report = memory.consolidate(user_id="u")
        assert report.changes == []
        assert report.judge is not None and report.judge.failed == 0
        assert state(memory, "u") == before and state(memory, "v") == theirs


def test_an_id_named_twice_decides_nothing() -> None:
    twice = '{"decisions": [{"id": "a", "relation": "duplicate"},'
    twice += ' {"id": "a", "relation": "neither"}, {"id": "b", "relation": "contradiction"}]}'
    assert [(v.id, v.relation) for v in parse_decisions(twice, ["a", "b"])] == [
        ("b", "contradiction")
    ]
    with pytest.raises(ValueError):
        parse_decisions('["a"]', ["a"])


PAIRS = [
    ("User likes hiking in the Alps", "User enjoys hiking trips in the Alps"),
    ("User collects vintage stamps", "User has a vintage stamps collection"),
    ("User reads poetry at night", "User enjoys reading poetry before bed"),
    ("User bakes sourdough bread", "User makes sourdough at home"),
]


@pytest.mark.parametrize("limit", ["calls", "tokens"])
def test_the_budget_is_respected(
    store_kind: str, tmp_path: Path, server: ScriptedLLM, limit: str
) -> None:
    options = {"max_calls": 2} if limit == "calls" else {"max_run_tokens": 150}
    for memory, _ in judged(store_kind, tmp_path, server, **options):
        for older, newer in PAIRS:
            memory.facts.add(content=older, user_id="u")
            memory.facts.add(content=newer, user_id="u")
            says(server, "duplicate", older, newer)
        server.add(*[Planned(tokens=100)] * len(PAIRS))
        report = memory.consolidate(user_id="u")
        assert report.judge is not None
        assert report.judge.cases == len(PAIRS)
        assert len(server.requests) == report.judge.calls == 2
        assert report.judge.exhausted
        assert len(report.changes) == 2
        assert all(c.decided_by == "judge" for c in report.changes)


def test_a_dry_run_asks_the_judge_and_writes_nothing(
    store_kind: str, tmp_path: Path, server: ScriptedLLM
) -> None:
    for memory, _ in judged(store_kind, tmp_path, server):
        first, second = two_facts(memory)
        says(server, "duplicate", HIKE, HIKE_AGAIN)
        before = state(memory, "u")
        preview = memory.consolidate(user_id="u", dry_run=True)
        assert [(c.fact_id, c.into, c.decided_by) for c in preview.changes] == [
            (second, first, "judge")
        ]
        assert state(memory, "u") == before
        assert memory.consolidation.runs() == []


def test_the_async_memory_asks_the_judge_on_its_loop(server: ScriptedLLM) -> None:
    async def main() -> None:
        judge = LLMJudge(base_url=server.base_url, model=MODEL)
        async with AsyncMemory("memory://", judge=judge) as memory:
            first = (await memory.facts.add(content=VEGGIE, user_id="u")).id
            second = (await memory.facts.add(content=NOT_VEGGIE, user_id="u")).id
            says(server, "contradiction", VEGGIE, NOT_VEGGIE)
            report = await memory.consolidate(user_id="u")
            assert [(c.fact_id, c.into, c.reason, c.decided_by) for c in report.changes] == [
                (first, second, "contradiction", "judge")
            ]
        await judge.aclose()

    asyncio.run(main())


def test_bad_judge_options_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        LLMJudge(base_url="ftp://x", model="m")
    with pytest.raises(ConfigurationError):
        LLMJudge(base_url="http://x/v1", model="m", max_calls=-1)
    with pytest.raises(ConfigurationError):
        Memory("memory://", judge=object())  # type: ignore[arg-type]


def test_the_judge_decides_entities_the_rules_leave_undecided(
    store_kind: str, tmp_path: Path, server: ScriptedLLM
) -> None:
    """ "Bob" and "Bob Smith" (one name a part of the other) are the judge's to decide:
    a "duplicate" merges them; "neither" keeps "Alice" and "Alice Chen" apart; an
    entity pair the rules decide ("NYC" a known alias) is not asked."""
    says(server, "duplicate", "person named 'Bob Smith'", "person named 'Bob'")
    for memory, _ in judged(store_kind, tmp_path, server):
        g = memory.graph
        bob = g.add_entity("Bob", type="person", user_id="u")
        smith = g.add_entity("Bob Smith", type="person", user_id="u")
        alice = g.add_entity("Alice", type="person", user_id="u")
        chen = g.add_entity("Alice Chen", type="person", user_id="u")
        city = g.add_entity("New York City", type="location", aliases=["NYC"], user_id="u")
        nyc = g.add_entity("NYC!", type="location", user_id="u")
        report = memory.consolidate(user_id="u")
        got = {(c.entity_id, c.into, c.rule, c.decided_by) for c in report.entity_changes}
        assert got == {(smith.id, bob.id, "judge", "judge"), (nyc.id, city.id, "alias", "rules")}
        assert report.judge is not None and report.judge.asked == 2
        asked = [shown(r)[0] for r in server.requests]
        assert sorted(asked) == ["person named 'Alice Chen'", "person named 'Bob Smith'"]
        assert g.get_entity(chen.id, user_id="u") is not None
        assert g.get_entity(alice.id, user_id="u") is not None
        assert g.get_entity(smith.id, user_id="u") is None
        memory.consolidation.undo(report.run_id)
        assert g.get_entity(smith.id, user_id="u") is not None
