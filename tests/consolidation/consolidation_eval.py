"""Scoring ``memorybank.consolidation.rules.plan`` on the labelled corpus (used by the
corpus test and by ``python -m tests.longterm.consolidation_eval``, which prints it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memorybank.consolidation.rules import plan
from memorybank.records import Fact
from tests.consolidation.data.consolidation_corpus import cases

#: "now" of every case: after each fact was stored, before 2099.
NOW = datetime(2025, 6, 1, tzinfo=UTC)
_STORED = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class Score:
    """Counts over the corpus, and the cases that went wrong."""

    cases: int = 0
    expected: int = 0
    predicted: int = 0
    correct: int = 0
    wrong: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.expected if self.expected else 1.0


def _facts(case: list[tuple[str, dict[str, str]]]) -> list[Fact]:
    return [
        Fact(
            id=f"f{i}",
            agent_id=None,
            user_id="u",
            content=content,
            category=None,
            confidence=None,
            source=None,
            metadata=dict(meta),
            source_entries=(),
            created_at=_STORED + timedelta(days=i),
            updated_at=_STORED + timedelta(days=i),
        )
        for i, (content, meta) in enumerate(case)
    ]


def score(embedder: Any | None) -> Score:
    """Plan every case on its own (with ``embedder``'s vectors, or text alone) and count."""
    all_cases = cases()
    vectors: dict[str, list[float]] = {}
    if embedder is not None:
        texts = sorted({content for _, facts, _ in all_cases for content, _ in facts})
        vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    out = Score()
    for name, case, expected in all_cases:
        facts = _facts(case)
        by_id = {f.id: vectors[f.content] for f in facts} if vectors else None
        got = {
            (int(c.fact_id[1:]), int(c.into[1:]), c.reason)
            for c in plan(facts, now=NOW, vectors=by_id)
        }
        want = set(expected)
        out.cases += 1
        out.expected += len(want)
        out.predicted += len(got)
        out.correct += len(got & want)
        out.wrong += [f"{name}: {case[a][0]!r} -> {case[b][0]!r} ({r})" for a, b, r in got - want]
        out.missed += [f"{name}: {case[a][0]!r} -> {case[b][0]!r} ({r})" for a, b, r in want - got]
    return out


def main() -> None:
    from memorybank.embeddings.local import LocalEmbedder

    for label, embedder in (("text rules only", None), ("with all-MiniLM-L6-v2", LocalEmbedder())):
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
