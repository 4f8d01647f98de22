"""Consolidation's entity alias rules on the labelled entity corpus
(tests/consolidation/data/entity_corpus.py): precision of merges at least 0.95 without an
LLM, with and without an embedder, recall printed (``python -m
tests.consolidation.entity_eval`` lists every miss); the facts and entities corpora
together hold at least 200 labelled cases."""

from __future__ import annotations

import pytest

from memorybank import Memory
from memorybank.embeddings.local import LocalEmbedder
from memorybank.graph._sync.records import normalise
from tests.consolidation.consolidation_eval import score as fact_score
from tests.consolidation.data import consolidation_corpus, entity_corpus
from tests.consolidation.entity_eval import score

MIN_PRECISION = 0.95


def test_the_corpora_hold_at_least_200_labelled_cases_with_aliases() -> None:
    entities = entity_corpus.cases()
    assert len(entities) >= 100
    assert len(entities) + len(consolidation_corpus.cases()) >= 200
    kinds = {name.rsplit("-", 1)[0] for name, _, _ in entities}
    assert kinds == {"same_name", "known_alias", "renamed", "entity_distinct", "entity_group"}


@pytest.mark.parametrize("embedder", [None, "local"])
def test_precision_on_the_entity_corpus(
    embedder: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    result = score(None if embedder is None else LocalEmbedder())
    with capsys.disabled():
        print(
            f"\nentity corpus ({embedder or 'names and aliases only'}): precision "
            f"{result.precision:.3f} ({result.correct}/{result.predicted}), recall "
            f"{result.recall:.3f} ({result.correct}/{result.expected})"
        )
    assert result.precision >= MIN_PRECISION, result.wrong
    assert result.recall >= 0.85, result.missed  # a floor, so a rule that stops firing fails


def test_precision_over_facts_and_entities_together(capsys: pytest.CaptureFixture[str]) -> None:
    facts, entities = fact_score(None), score(None)
    correct = facts.correct + entities.correct
    predicted = facts.predicted + entities.predicted
    expected = facts.expected + entities.expected
    with capsys.disabled():
        print(
            f"\nfacts + entities ({facts.cases + entities.cases} cases, no LLM): precision "
            f"{correct / predicted:.3f} ({correct}/{predicted}), recall "
            f"{correct / expected:.3f} ({correct}/{expected})"
        )
    assert correct / predicted >= MIN_PRECISION


def test_the_library_merges_what_the_rules_decide() -> None:
    """Every case through memory.consolidate, one user per case: the entities left are
    exactly those the labels keep, where the graph did not merge them on add already."""
    with Memory("memory://") as memory:
        g = memory.graph
        wrong = 0
        total = 0
        for n, (name, rows, expected) in enumerate(entity_corpus.cases()):
            forms = [(normalise(r[0]), r[1]) for r in rows]
            if len(set(forms)) != len(forms):
                continue  # one entity already: add_entity merges the same normalised name
            user = f"u{n}"
            ids = [g.add_entity(r[0], type=r[1], aliases=list(r[2]), user_id=user).id for r in rows]
            report = memory.consolidate(user_id=user)
            got = {(ids.index(c.entity_id), ids.index(c.into)) for c in report.entity_changes}
            wrong += len(got - set(expected))
            total += len(expected)
            merged = {ids[a] for a, _ in got}
            left = {e.id for e in g.find_entities(user_id=user, limit=50)}
            assert left == set(ids) - merged, name
        assert wrong <= 0.05 * total
