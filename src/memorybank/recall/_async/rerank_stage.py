"""The optional rerank stage of hybrid search (``memorybank.rerank``).

Off unless ``Memory(reranker=...)`` is configured (or ``search(rerank=False)``
turns it off for one call). When on, a hybrid search ranks
``max(k, rerank_top)`` hits as usual (scoped, filtered, ``min_score`` applied),
hands the best ``rerank_top`` of them to the reranker in one call, reorders
those by its scores (ties keep the hybrid order) and keeps the rest in hybrid
order after them; then the first ``k`` are returned.

Scores stay on the hybrid scale and still descend: the reranked hits take the
hybrid scores of the top ``rerank_top`` positions in order. Each reranked hit's
``signals`` adds ``"rerank"`` (the reranker's score) and ``"hybrid"`` (its own
hybrid score).

A reranker that raises (HTTP error, bad answer, a model exception) or times out
never fails a search: a warning is logged and the hybrid order is returned.
Searches with fewer than two hits make no call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.records import Hit
from memorybank.rerank.base import (
    MAX_RERANK_TOP,
    RERANK_TOP,
    RerankCandidate,
    Reranker,
    check_scores,
)
from memorybank.runtime.log import logger

__all__ = ["plan_rerank", "rerank_hits"]


def plan_rerank(
    reranker: Reranker | None, mode: str, rerank: object, rerank_top: object
) -> tuple[Reranker | None, int]:
    """The reranker a search uses (``None``: none) and how many hits it sees; checks input."""
    if rerank is not None and not isinstance(rerank, bool):
        raise InvalidInput("rerank must be True, False or None", field="rerank")
    top = RERANK_TOP
    if rerank_top is not None:
        if (
            isinstance(rerank_top, bool)
            or not isinstance(rerank_top, int)
            or not 1 <= rerank_top <= MAX_RERANK_TOP
        ):
            raise InvalidInput(
                f"rerank_top must be an integer from 1 to {MAX_RERANK_TOP}", field="rerank_top"
            )
        top = rerank_top
    if rerank is False or (rerank is None and (reranker is None or mode != "hybrid")):
        return None, top
    if reranker is None:
        raise ConfigurationError("rerank=True needs a reranker: Memory(url, reranker=...)")
    if mode != "hybrid":
        raise InvalidInput("rerank applies to mode='hybrid' only", field="rerank")
    return reranker, top


_PREFIXES = {"entry": "e:", "document": "d:"}


def _key(hit: Hit) -> str:
    return _PREFIXES.get(hit.kind, f"{hit.kind}:") + hit.id


def _describe(reranker: Any) -> str:
    try:
        return repr(reranker)
    except Exception:
        return type(reranker).__name__


async def rerank_hits(reranker: Reranker, query: str, hits: list[Hit], top: int) -> list[Hit]:
    """``hits`` (hybrid order) with their best ``top`` reordered by ``reranker``."""
    head = hits[:top]
    if len(head) < 2:
        return hits
    candidates = [RerankCandidate(_key(hit), hit.content or "") for hit in head]
    try:
        scores = check_scores(await reranker.arerank(query, candidates), len(candidates))
    except Exception as error:  # a reranker never fails a search
        logger.warning(
            "memorybank: reranker %s failed (%s: %s); keeping the hybrid order",
            _describe(reranker),
            type(error).__name__,
            error,
        )
        return hits
    order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable: ties stay
    reranked = [
        dataclasses.replace(
            head[j],
            score=head[i].score,
            signals={**head[j].signals, "hybrid": head[j].score, "rerank": scores[j]},
        )
        for i, j in enumerate(order)
    ]
    return reranked + hits[top:]
