"""Exact vector search with numpy, for stores without a native vector index."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["top_k"]


def top_k(query: Sequence[float], blobs: Sequence[bytes], k: int) -> list[tuple[int, float]]:
    """Indexes and cosine scores of the ``k`` stored unit vectors closest to ``query``.

    ``blobs`` are float32 unit vectors (``_sql.unit_vector_bytes``); vectors of
    another dimension than the query are skipped (a model mix-up, never scored).
    """
    if not blobs or k <= 0:
        return []
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if norm == 0:
        return []
    q /= norm
    dim = q.shape[0] * 4
    keep = [i for i, b in enumerate(blobs) if len(b) == dim]
    if not keep:
        return []
    matrix = np.frombuffer(b"".join(blobs[i] for i in keep), dtype="<f4").reshape(len(keep), -1)
    scores = matrix @ q
    count = min(k, len(keep))
    best = np.argpartition(-scores, count - 1)[:count]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(keep[int(i)], float(scores[int(i)])) for i in best]
