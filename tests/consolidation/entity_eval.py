"""Scoring ``memorybank.consolidation.entity_rules`` on the labelled entity corpus (used by
the corpus test and by ``python -m tests.consolidation.entity_eval``, which prints it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memorybank.consolidation.entity_rules import plan_entities
from memorybank.graph.model import Entity
from tests.consolidation.consolidation_eval import Score
from tests.consolidation.data.entity_corpus import Entity as Row
from tests.consolidation.data.entity_corpus import cases

_STORED = datetime(2025, 1, 1, tzinfo=UTC)


def entities(case: list[Row]) -> list[Entity]:
    """A case's rows as entities of one user, oldest first (ids ``e0``, ``e1``, ...)."""
    return [
        Entity(
            id=f"e{i}",
            tenant_id="t",
            name=name,
            type=type_,
            agent_id=None,
            user_id="u",
            aliases=aliases,
            observations=(),
            properties={},
            confidence=1.0,
            source="user",
            created_at=_STORED + timedelta(days=i),
            updated_at=_STORED + timedelta(days=i),
        )
        for i, (name, type_, aliases) in enumerate(case)
    ]


def score(embedder: Any | None) -> Score:
    """Plan every case on its own (with ``embedder``'s name vectors, or names alone)."""
    all_cases = cases()
    vectors: dict[str, list[float]] = {}
    if embedder is not None:
        names = sorted({name for _, rows, _ in all_cases for name, _, _ in rows})
        vectors = dict(zip(names, embedder.embed(names), strict=True))
    out = Score()
    for label, rows, expected in all_cases:
        found = entities(rows)
        by_id = {e.id: vectors[e.name] for e in found} if vectors else None
        got = {(int(p.entity_id[1:]), int(p.into[1:])) for p in plan_entities(found, vectors=by_id)}
        want = set(expected)
        out.cases += 1
        out.expected += len(want)
        out.predicted += len(got)
        out.correct += len(got & want)
        out.wrong += [f"{label}: {rows[a][0]!r} -> {rows[b][0]!r}" for a, b in got - want]
        out.missed += [f"{label}: {rows[a][0]!r} -> {rows[b][0]!r}" for a, b in want - got]
    return out


def main() -> None:
    from memorybank.embeddings.local import LocalEmbedder

    for label, embedder in (
        ("names and aliases only", None),
        ("with all-MiniLM-L6-v2", LocalEmbedder()),
    ):
        s = score(embedder)
        print(
            f"{label}: {s.cases} cases, precision {s.precision:.3f} "
            f"({s.correct}/{s.predicted}), recall {s.recall:.3f} ({s.correct}/{s.expected})"
        )
        for line in s.wrong:
            print("  WRONG", line)
        for line in s.missed:
            print("  missed", line)


if __name__ == "__main__":
    main()
