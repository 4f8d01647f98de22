"""Consolidation's rules on the labelled corpus (tests/consolidation/data): precision of merges
and supersessions at least 0.95 without an LLM, with and without an embedder; recall is
printed (``python -m tests.longterm.consolidation_eval`` lists every miss)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memorybank import Memory
from memorybank.embeddings.local import LocalEmbedder
from tests.consolidation.consolidation_eval import NOW, score
from tests.consolidation.data.consolidation_corpus import cases

MIN_PRECISION = 0.95


def test_the_corpus_has_at_least_200_labelled_cases() -> None:
    assert len(cases()) >= 200
    kinds = {name.rsplit("-", 1)[0] for name, _, _ in cases()}
    assert kinds == {"duplicate", "contradiction", "distinct", "timed"}


@pytest.mark.parametrize("embedder", [None, "local"])
def test_precision_on_the_corpus(embedder: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    result = score(None if embedder is None else LocalEmbedder())
    with capsys.disabled():
        print(
            f"\nconsolidation corpus ({embedder or 'text rules only'}): precision "
            f"{result.precision:.3f} ({result.correct}/{result.predicted}), recall "
            f"{result.recall:.3f} ({result.correct}/{result.expected})"
        )
    assert result.precision >= MIN_PRECISION, result.wrong
    assert result.recall >= 0.9, result.missed  # a floor, so a rule that stops firing fails


def test_the_library_applies_what_the_rules_decide() -> None:
    """Every case through memory.consolidate, one user per case on one store: the facts
    left are exactly those the labels keep (the corpus's truth, end to end)."""
    clock_at = [NOW - timedelta(days=400)]

    def clock() -> object:
        clock_at[0] += timedelta(seconds=1)
        return clock_at[0]

    with Memory("memory://", clock=clock) as memory:  # type: ignore[arg-type]
        users = []
        for n, (name, facts, expected) in enumerate(cases()):
            user = f"u{n}"
            ids = [
                memory.facts.add(content=content, metadata=meta or None, user_id=user).id
                for content, meta in facts
            ]
            users.append((name, user, ids, expected))
        clock_at[0] = NOW
        wrong = 0
        for name, user, ids, expected in users:
            report = memory.consolidate(user_id=user)
            got = {(ids.index(c.fact_id), ids.index(c.into), c.reason) for c in report.changes}
            wrong += len(got - set(expected))
            retired = {ids[a] for a, _, _ in got}
            assert {f.id for f in memory.facts.list(user_id=user)} == set(ids) - retired, name
        assert wrong <= 0.05 * sum(len(e) for *_, e in users)
