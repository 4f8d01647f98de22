"""Combining ranked signals: normalised weighted score fusion and reciprocal-rank fusion.

Why weighted score fusion by default: RRF throws away score *gaps*.  A keyword
hit with a rare word is far ahead of the second hit, while cosine similarities
of a small sentence model sit in a narrow band (0.2-0.5) where rank 1 and rank
30 are nearly tied.  Normalising each signal to [0, 1] and adding them with
weights keeps that information; on LoCoMo (no LLM) weighted fusion beats RRF
(k=60), which is even below BM25 alone.  RRF is kept for callers that only have
ranks (e.g. a database that returns ordered ids without comparable scores).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Normalization",
    "normalize",
    "normalize_array",
    "reciprocal_rank_fusion",
    "weighted_fusion",
]

K = TypeVar("K", bound=Hashable)

Normalization = Literal["max", "minmax", "zscore", "none"]


def normalize_array(
    values: NDArray[np.float64], method: Normalization = "minmax"
) -> NDArray[np.float64]:
    """Rescale one signal over the candidate set.

    * ``max``: divide by the maximum (keeps 0 at 0; right for BM25 where 0 = no match).
    * ``minmax``: map [min, max] to [0, 1] (right for cosine, whose floor is not 0).
    * ``zscore``: (x - mean) / std, then clipped at 0 (only above-average evidence counts).
    * ``none``: unchanged.

    A constant signal (or an empty one) normalises to all zeros: it cannot rank.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0 or method == "none":
        return x.copy()
    if method == "max":
        top = float(x.max())
        return x / top if top > 0 else np.zeros_like(x)
    if method == "minmax":
        lo, hi = float(x.min()), float(x.max())
        return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)
    if method == "zscore":
        sd = float(x.std())
        return np.clip((x - float(x.mean())) / sd, 0.0, None) if sd > 0 else np.zeros_like(x)
    raise ValueError(f"unknown normalization {method!r}")


def normalize(scores: Mapping[K, float], method: Normalization = "minmax") -> dict[K, float]:
    """:func:`normalize_array` for a ``{id: score}`` mapping."""
    keys = list(scores)
    arr = normalize_array(
        np.fromiter((scores[k] for k in keys), dtype=np.float64, count=len(keys)), method
    )
    return dict(zip(keys, arr.tolist(), strict=True))


def weighted_fusion(
    signals: Mapping[str, Mapping[K, float]],
    weights: Mapping[str, float],
    normalization: Mapping[str, Normalization] | Normalization = "minmax",
) -> dict[K, float]:
    """``sum_s weights[s] * normalize(signals[s])``; ids missing from a signal score 0 there.

    Each signal is normalised over the union of ids, so a document found only by
    one signal gets that signal's contribution and nothing from the others.
    Signals without a weight are ignored.
    """
    ids: dict[K, None] = {}
    for name, sig in signals.items():
        if weights.get(name, 0.0):
            ids.update(dict.fromkeys(sig))
    keys = list(ids)
    total = np.zeros(len(keys), dtype=np.float64)
    for name, sig in signals.items():
        w = weights.get(name, 0.0)
        if not w:
            continue
        method = (
            normalization if isinstance(normalization, str) else normalization.get(name, "minmax")
        )
        raw = np.fromiter((sig.get(k, 0.0) for k in keys), dtype=np.float64, count=len(keys))
        if method == "minmax" and len(sig) < len(keys):
            # Missing ids are "no evidence": normalise over the ids the signal scored
            # and leave the rest at 0 instead of letting them define the minimum.
            present = np.fromiter((k in sig for k in keys), dtype=bool, count=len(keys))
            norm = np.zeros_like(raw)
            norm[present] = normalize_array(raw[present], "minmax")
        else:
            norm = normalize_array(raw, method)
        total += w * norm
    return dict(zip(keys, total.tolist(), strict=True))


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]],
    k: float = 60.0,
    weights: Sequence[float] | None = None,
) -> dict[K, float]:
    """RRF (Cormack et al. 2009): ``sum_r w_r / (k + rank_r(d))`` with 1-based ranks."""
    if weights is not None and len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    out: dict[K, float] = {}
    for r, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[r]
        for rank, doc in enumerate(ranking, start=1):
            out[doc] = out.get(doc, 0.0) + w / (k + rank)
    return out
