"""CPU of the ranking stage of a hybrid search alone, and a digest of its top 10.

40 candidate sets of 185 entries (the size a hot user-scope search ranks: the store's
hits and their neighbours), 384-d vectors, texts of ``bench_search.dataset``; each set
ranked for its query by ``HybridRanker`` as ``memory.search`` does (``_rank``), with the
text memo emptied before each set (a search's candidates are new texts: ``miss``) and
kept (``hit``). Best of 7 passes, CPU time of this one thread. Run it on two checkouts
(``PYTHONPATH=<src>``) to compare: the digests must be equal.

Run: ``python -m bench.rank_cpu``.
"""

from __future__ import annotations

import hashlib
import random
import time
from datetime import UTC, datetime, timedelta

from bench.bench_search import dataset
from bench.bench_search_scale import queries
from memorybank.recall import features
from memorybank.recall._async.search import _rank
from memorybank.recall.conversation import Candidate
from memorybank.recall.hybrid import HybridRanker
from memorybank.stores.keyword.text import default_analyzer

SETS = 40
SIZE = 185


def main() -> None:
    texts, vectors = dataset(SIZE * SETS, seed=7)
    qtexts, qvecs = queries(SETS, seed=99)
    rng = random.Random(1)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    sets: list[list[Candidate]] = []
    for s in range(SETS):
        cands = []
        for j in range(SIZE):
            i = s * SIZE + j
            position = rng.randint(0, 100)
            cands.append(
                Candidate(
                    f"e:{i}",
                    f"t{rng.randint(0, 19)}",
                    position,
                    texts[i],
                    None,
                    start + timedelta(minutes=position),
                    vectors[i],
                    "user",
                )
            )
        sets.append(cands)
    analyzer = default_analyzer()
    features.text_features(analyzer, texts)  # the words' stems warm, as in a service

    def run(miss: bool) -> tuple[float, list[list[tuple[int, float]]]]:
        cpu = time.process_time()
        out = []
        for s, cands in enumerate(sets):
            if miss:
                features._MEMOS[analyzer].clear()
            ranker = HybridRanker(cands)
            out.append(
                [(i, score) for i, score, _ in list(_rank(ranker, qtexts[s], qvecs[s]))[:10]]
            )
        return (time.process_time() - cpu) / SETS * 1000, out

    for miss in (True, False):
        best = min(run(miss)[0] for _ in range(7))
        print(f"{'miss' if miss else 'hit'}: {best:.3f} ms CPU a ranking of {SIZE}")
    print("digest", hashlib.sha256(repr(run(True)[1]).encode()).hexdigest()[:16])


if __name__ == "__main__":
    main()
