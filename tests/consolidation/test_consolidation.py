"""Consolidation (memory.consolidate, memory.consolidation) on every store: merges,
time-aware supersession, dry runs, exact undo, owners never mixed, bad input."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory
from memorybank.errors import Conflict, InvalidInput, NotFound
from memorybank.records import Fact
from memorybank.testing._embedder import SynonymEmbedder
from tests.all_stores import STORE_KINDS, open_store

START = datetime(2026, 3, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)  # every write at its own time
        return self.now


@pytest.fixture(params=STORE_KINDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with open_store(request.param, tmp_path) as store:
        yield Memory(store, clock=Clock(), embedder=SynonymEmbedder(), tenant_id="cons")


def view(memory: Memory, user: str | None) -> dict[str, Any]:
    """Everything the API shows of a user's facts: list, get, history, search, links."""
    facts = memory.facts.list(user_id=user)
    ids = sorted({f.id for f in facts} | set(memory._known))  # type: ignore[attr-defined]
    return {
        "list": [(f.id, f.content, f.version, f.metadata, f.source_entries) for f in facts],
        "get": {i: memory.facts.get(i, user_id=user) for i in ids},
        "history": {i: memory.facts.history(i, user_id=user) for i in ids},
        "search": [
            (h.id, round(h.score, 6))
            for h in memory.search("where does the user live", kinds=["facts"], user_id=user)
        ],
        "facts_search": [f.id for f in memory.facts.search("paris", user_id=user)],
    }


def add(memory: Memory, content: str, **kw: Any) -> str:
    fact = memory.facts.add(content=content, **kw)
    memory._known = [*getattr(memory, "_known", []), fact.id]  # type: ignore[attr-defined]
    return fact.id


def test_duplicates_merge_into_the_oldest_with_the_union_of_provenance(memory: Memory) -> None:
    first = add(memory, "User likes green tea", user_id="u", source_entries=["e1"])
    again = add(memory, "user likes green tea!", user_id="u", source_entries=["e2", "e1"])
    other = add(memory, "User plays chess", user_id="u", source_entries=["e3"])
    report = memory.consolidate(user_id="u")
    assert (report.status, report.merged, report.superseded) == ("applied", 1, 0)
    [change] = report.changes
    assert (change.fact_id, change.into, change.reason) == (again, first, "duplicate")
    kept = memory.facts.get(first, user_id="u")
    assert kept is not None and kept.source_entries == ("e1", "e2") and kept.version == 2
    assert kept.metadata["merged_from"] == [again]
    assert kept.metadata["consolidation_run"] == report.run_id
    assert memory.facts.get(again, user_id="u") is None
    [last] = memory.facts.history(again, user_id="u")
    assert last.metadata["superseded_by"] == first and last.content == "user likes green tea!"
    assert memory.facts.get(other, user_id="u") is not None
    assert [f.version for f in memory.facts.history(first, user_id="u")] == [1, 2]
    # the kept fact now answers for the merged fact's entry
    assert memory.entries is not None
    assert memory.consolidation.report(report.run_id).changes == report.changes


def test_a_later_value_supersedes_an_earlier_one_but_not_one_valid_later(memory: Memory) -> None:
    def said(value: str, when: datetime, valid: datetime | None = None) -> dict[str, Any]:
        meta = {"subject": "User", "attribute": "lives_in", "value": value}
        meta["said_at"] = when.isoformat()
        if valid is not None:
            meta["valid_at"] = valid.isoformat()
        return meta

    now = START
    paris = add(
        memory, "User lives in Paris", user_id="u", metadata=said("Paris", now - timedelta(days=90))
    )
    berlin = add(
        memory,
        "User lives in Berlin",
        user_id="u",
        metadata=said("Berlin", now - timedelta(days=10)),
    )
    # said before Berlin, but valid only next year: left alone (it does not hold yet)
    rome = add(
        memory,
        "User will live in Rome",
        user_id="u",
        metadata=said("Rome", now - timedelta(days=30), valid=now + timedelta(days=365)),
    )
    report = memory.consolidate(user_id="u")
    assert [(c.fact_id, c.into, c.reason) for c in report.changes] == [
        (paris, berlin, "contradiction")
    ]
    assert memory.facts.get(rome, user_id="u") is not None
    kept = memory.facts.get(berlin, user_id="u")
    assert kept is not None and kept.metadata["supersedes"] == [paris]
    # said earlier but valid later than what was said in between: it wins
    old_news = add(
        memory,
        "User lives in Lyon",
        user_id="u",
        metadata=said("Lyon", now - timedelta(days=200), valid=now - timedelta(days=5)),
    )
    second = memory.consolidate(user_id="u")
    assert [(c.fact_id, c.into) for c in second.changes] == [(berlin, old_news)]


def test_dry_run_writes_nothing_and_reports_what_a_run_does(memory: Memory) -> None:
    add(memory, "User lives in Paris", user_id="u", source_entries=["e1"])
    add(memory, "The user lives in Paris.", user_id="u", source_entries=["e2"])
    add(memory, "User lives in Berlin", user_id="u")
    add(memory, "User drives car", user_id="u")
    add(memory, "User drives automobile", user_id="u")
    before = view(memory, "u")
    dry = memory.consolidate(user_id="u", dry_run=True)
    assert dry.dry_run and dry.status == "dry_run" and len(dry.changes) == 3
    assert view(memory, "u") == before
    assert memory.consolidation.runs() == []
    real = memory.consolidate(user_id="u")
    strip = [(c.fact_id, c.into, c.reason, c.why) for c in dry.changes]
    assert strip == [(c.fact_id, c.into, c.reason, c.why) for c in real.changes]
    assert [r.run_id for r in memory.consolidation.runs()] == [real.run_id]


def test_undo_restores_every_view_exactly(memory: Memory) -> None:
    a = add(memory, "User lives in Paris", user_id="u", source_entries=["e1"], confidence=0.5)
    add(memory, "the user lives in paris", user_id="u", source_entries=["e2"], metadata={"k": 1})
    add(memory, "User lives in Berlin", user_id="u", source_entries=["e3"])
    add(memory, "User drives car", user_id="u")
    add(memory, "User drives automobile", user_id="u", category="c")
    memory.facts.supersede(a, "User lives in Paris, France", user_id="u")
    before = view(memory, "u")
    report = memory.consolidate(user_id="u")
    assert report.changes and view(memory, "u") != before
    undone = memory.consolidation.undo(report.run_id)
    assert undone.status == "undone" and undone.undone_at is not None
    assert view(memory, "u") == before
    assert memory.consolidation.report(report.run_id).status == "undone"
    with pytest.raises(Conflict):
        memory.consolidation.undo(report.run_id)
    # consolidating again after the undo does the same thing again
    again = memory.consolidate(user_id="u")
    assert [(c.fact_id, c.into) for c in again.changes] == [
        (c.fact_id, c.into) for c in report.changes
    ]


def test_undo_is_refused_when_a_fact_changed_after_the_run(memory: Memory) -> None:
    a = add(memory, "User likes green tea", user_id="u")
    add(memory, "user likes green tea", user_id="u")
    report = memory.consolidate(user_id="u")
    memory.facts.update(a, confidence=0.9, user_id="u")
    changed = view(memory, "u")
    with pytest.raises(Conflict):
        memory.consolidation.undo(report.run_id)
    assert view(memory, "u") == changed
    assert memory.consolidation.report(report.run_id).status == "applied"


def test_owners_are_never_mixed(memory: Memory) -> None:
    mine = add(memory, "User likes green tea", user_id="u", agent_id="bot")
    add(memory, "User likes green tea", user_id="u", agent_id="other")  # another agent
    add(memory, "User likes green tea", user_id=None, agent_id="bot")  # shared
    add(memory, "User likes green tea", user_id="v", agent_id="bot")  # another user
    add(memory, "User lives in Berlin", user_id=None)
    add(memory, "User lives in Paris", user_id="u", agent_id="bot")
    everyone = [(f.id, f.version) for f in memory.facts.list()]
    report = memory.consolidate(user_id="u")
    assert report.changes == [] and report.facts_examined == 3
    assert [(f.id, f.version) for f in memory.facts.list()] == everyone
    shared = memory.consolidate(user_id=None)
    assert shared.changes == [] and shared.facts_examined == 2
    # the other user's handle sees neither the run nor can undo it
    bob = memory.scoped(user_id="v")
    with pytest.raises(NotFound):
        bob.consolidation.report(report.run_id)
    with pytest.raises(NotFound):
        bob.consolidation.undo(report.run_id)
    assert report.run_id not in [r.run_id for r in bob.consolidation.runs()]
    with pytest.raises(InvalidInput):
        bob.consolidate(user_id="u")
    assert memory.facts.get(mine, user_id="u", agent_id="bot") is not None


def test_a_run_over_several_agents_is_undone_only_by_a_handle_that_sees_them(
    memory: Memory,
) -> None:
    add(memory, "User likes green tea", user_id="u", agent_id="a")
    add(memory, "user likes green tea", user_id="u", agent_id="a")
    add(memory, "User plays chess", user_id="u", agent_id="b")
    add(memory, "user plays chess.", user_id="u", agent_id="b")
    report = memory.consolidate(user_id="u")
    assert len(report.changes) == 2
    agent_a = memory.scoped(user_id="u", agent_id="a")
    seen = agent_a.consolidation.report(report.run_id)
    assert [c.content for c in seen.changes] == ["user likes green tea"]  # not b's
    with pytest.raises(InvalidInput):
        agent_a.consolidation.undo(report.run_id)
    memory.scoped(user_id="u").consolidation.undo(report.run_id)
    assert len(memory.facts.list(user_id="u")) == 4


def test_forget_user_erases_the_runs(memory: Memory) -> None:
    add(memory, "User likes green tea", user_id="u")
    add(memory, "user likes green tea", user_id="u")
    report = memory.consolidate(user_id="u")
    memory.forget_user("u")
    with pytest.raises(NotFound):
        memory.consolidation.report(report.run_id)
    for kind in ("consolidation_run", "consolidation_change", "fact_version"):
        assert memory.store.record_list("cons", kind, user_id="u") == []


def test_bad_input_writes_nothing(memory: Memory) -> None:
    add(memory, "User likes green tea", user_id="u")
    add(memory, "user likes green tea", user_id="u")
    before = view(memory, "u")
    with pytest.raises(InvalidInput) as caught:
        memory.consolidate()
    assert caught.value.field == "user_id"
    with pytest.raises(InvalidInput) as caught:
        memory.consolidate(user_id="u", dry_run="yes")  # type: ignore[arg-type]
    assert caught.value.field == "dry_run"
    with pytest.raises(InvalidInput):
        memory.consolidate(user_id="")
    with pytest.raises(InvalidInput):
        memory.consolidation.undo("")
    with pytest.raises(NotFound):
        memory.consolidation.undo("no-such-run")
    assert view(memory, "u") == before and memory.consolidation.runs() == []


def test_feedback_moves_confidence_by_the_rule_and_is_scoped(memory: Memory) -> None:
    fact = add(memory, "User likes green tea", user_id="u", confidence=0.8)
    other = add(memory, "User likes chess", user_id="u")
    wrong = memory.feedback(fact, useful=False, reason="she stopped drinking tea", user_id="u")
    assert isinstance(wrong, Fact)
    assert wrong.confidence == pytest.approx(0.4) and wrong.version == 1
    again = memory.feedback(fact, useful=False, user_id="u")
    assert isinstance(again, Fact) and again.confidence == pytest.approx(0.2)
    hit = next(h for h in memory.search("chess", kinds=["facts"], user_id="u") if h.id == other)
    useful = memory.feedback(hit, useful=True, user_id="u")
    assert isinstance(useful, Fact) and useful.confidence == pytest.approx(0.75)
    # prompts rank the fact marked wrong below the one marked useful
    ranked = sorted(memory.facts.list(user_id="u"), key=lambda f: -(f.confidence or 0))
    assert [f.id for f in ranked] == [other, fact]
    records = memory.store.record_list("cons", "fact_feedback", key=fact)
    assert [(r.data["useful"], r.data["reason"]) for r in records] == [
        (False, "she stopped drinking tea"),
        (False, None),
    ]
    # another user's fact is NotFound, and nothing is written
    with pytest.raises(NotFound):
        memory.feedback(fact, useful=True, user_id="v")
    with pytest.raises(NotFound):
        memory.scoped(user_id="v").feedback(fact, useful=True)
    with pytest.raises(InvalidInput) as caught:
        memory.feedback(fact, useful="yes", user_id="u")  # type: ignore[arg-type]
    assert caught.value.field == "useful"
    with pytest.raises(InvalidInput):
        memory.feedback(fact, useful=True, reason="", user_id="u")
    got = memory.facts.get(fact, user_id="u")
    assert got is not None and got.confidence == pytest.approx(0.2)
    assert len(memory.store.record_list("cons", "fact_feedback", key=fact)) == 2
    memory.forget_user("u")
    assert memory.store.record_list("cons", "fact_feedback", key=fact) == []
