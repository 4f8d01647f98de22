"""The ``Reranker`` protocol and what every reranker shares (no I/O)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "MAX_RERANK_TOP",
    "RERANK_TOP",
    "RerankCandidate",
    "Reranker",
    "check_scores",
]

#: Hybrid hits a search hands the reranker by default (``search(rerank_top=...)``).
RERANK_TOP = 20
#: The most a search hands it (a prompt or a batch stays bounded).
MAX_RERANK_TOP = 100


@dataclass(frozen=True, slots=True)
class RerankCandidate:
    """One hit a search asks the reranker about.

    ``id`` is the hit's key (``"e:<entry id>"``, ``"d:<document id>"``, or
    ``"<kind>:<id>"`` for any other kind of hit),
    ``text`` its content. Candidates come in hybrid order, best first, and are
    only ever hits the caller of the search may see.
    """

    id: str
    text: str


@runtime_checkable
class Reranker(Protocol):
    """Reorders a search's best hybrid hits: query and candidates in, one score each out.

    ``rerank`` (sync ``Memory``) and ``arerank`` (``AsyncMemory``) return one
    finite score per candidate, in the candidates' order; higher is better, and
    ties keep the hybrid order. A reranker may raise anything or time out: the
    search logs a warning and keeps the hybrid order (see
    ``memorybank.recall._async.rerank_stage``). Implementations: ``CrossEncoderReranker``
    (a local sentence-transformers cross-encoder) and ``LLMReranker`` (an
    OpenAI-compatible chat model, listwise).
    """

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]: ...

    async def arerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]: ...


def check_scores(scores: object, count: int) -> list[float]:
    """``scores`` as ``count`` finite floats, or ``ValueError``: what a search accepts."""
    if isinstance(scores, str | bytes) or not isinstance(scores, Sequence):
        try:
            scores = list(scores)  # type: ignore[call-overload]  # numpy arrays, iterables
        except TypeError:
            raise ValueError(f"a reranker returned {type(scores).__name__}, not scores") from None
    assert isinstance(scores, Sequence)
    if len(scores) != count:
        raise ValueError(f"a reranker returned {len(scores)} scores for {count} candidates")
    out: list[float] = []
    for score in scores:
        if isinstance(score, bool):
            raise ValueError("a reranker returned a bool score")
        try:
            value = float(score)
        except (TypeError, ValueError):
            raise ValueError(f"a reranker returned a non-number score {score!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"a reranker returned a non-finite score {value!r}")
        out.append(value)
    return out
