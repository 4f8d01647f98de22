"""An incremental Okapi BM25 index (pure Python, no I/O).

Used by the embedded stores for keyword search and by :func:`memorybank.recall.rank`
when the caller has no keyword scores of its own.  Documents can be added,
replaced and removed at any time; statistics (document frequency, average
length) are kept up to date incrementally, so a query costs time proportional
to the postings of its terms, never to the whole collection.

Scoring (Robertson/Sparck Jones with Lucene's non-negative IDF)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, q) = sum over distinct t in q of
                  idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))

The Lucene IDF is used instead of the classic ``ln((N - df + 0.5)/(df + 0.5))``
because the classic form goes negative for terms in more than half the
documents (a speaker's name in a two-person conversation), and negative
evidence from a matched word makes fusion with other signals erratic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from memorybank.runtime.np import np

from memorybank.stores.keyword.text import Analyzer, default_analyzer

__all__ = ["DEFAULT_B", "DEFAULT_K1", "BM25Index"]

# Defaults for short conversational turns.  k1 = 1.2 is the classic Robertson value.
# b = 0.4 instead of the textbook 0.75: a long chat turn is long because it says more,
# not because it repeats itself.  On LoCoMo dev (full hybrid pipeline) recall is flat
# for k1 in 0.9-1.6 and b in 0.25-0.75 (within 0.003), so these are safe, not tuned.
DEFAULT_K1 = 1.2
DEFAULT_B = 0.4


class BM25Index:
    """Okapi BM25 over string-keyed documents with incremental add/remove.

    >>> idx = BM25Index()
    >>> idx.add("a", "I went running yesterday")
    >>> idx.add("b", "The cat sleeps")
    >>> [doc for doc, _ in idx.search("runs")]
    ['a']
    """

    def __init__(
        self,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        analyzer: Analyzer | None = None,
    ) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
        self.k1 = k1
        self.b = b
        self.analyzer = analyzer or default_analyzer()
        self._postings: dict[str, dict[str, int]] = {}
        self._doc_terms: dict[str, Counter[str]] = {}
        self._doc_len: dict[str, int] = {}
        self._total_len = 0

    # ------------------------------------------------------------------ updates
    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id`` (replacing an earlier version of that id)."""
        self.add_terms(doc_id, self.analyzer.terms(text))

    def add_terms(self, doc_id: str, terms: Iterable[str]) -> None:
        """Index pre-analysed terms (for callers that cache analysis)."""
        if doc_id in self._doc_len:
            self.remove(doc_id)
        tf = Counter(terms)
        length = sum(tf.values())
        self._doc_terms[doc_id] = tf
        self._doc_len[doc_id] = length
        self._total_len += length
        for term, n in tf.items():
            self._postings.setdefault(term, {})[doc_id] = n

    def remove(self, doc_id: str) -> bool:
        """Forget ``doc_id``; returns False when it was not indexed."""
        tf = self._doc_terms.pop(doc_id, None)
        if tf is None:
            return False
        self._total_len -= self._doc_len.pop(doc_id)
        for term in tf:
            posting = self._postings[term]
            del posting[doc_id]
            if not posting:
                del self._postings[term]
        return True

    def clear(self) -> None:
        self._postings.clear()
        self._doc_terms.clear()
        self._doc_len.clear()
        self._total_len = 0

    # ------------------------------------------------------------------ stats
    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    @property
    def avgdl(self) -> float:
        return self._total_len / len(self._doc_len) if self._doc_len else 0.0

    def doc_freq(self, term: str) -> int:
        """Number of documents containing the (already analysed) term."""
        return len(self._postings.get(term, ()))

    def idf(self, term: str) -> float:
        """Lucene BM25 IDF of an analysed term (0.0 for unknown terms)."""
        df = self.doc_freq(term)
        if df == 0:
            return 0.0
        n = len(self._doc_len)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    # ------------------------------------------------------------------ queries
    def query_terms(self, query: str) -> list[str]:
        """Distinct analysed terms of ``query`` in first-seen order."""
        return list(dict.fromkeys(self.analyzer.terms(query)))

    def score_terms(self, terms: Sequence[str]) -> dict[str, float]:
        """BM25 score of every document matching at least one of ``terms``."""
        out: dict[str, float] = {}
        if not self._doc_len:
            return out
        k1, b = self.k1, self.b
        avgdl = self.avgdl or 1.0
        doc_len = self._doc_len
        for term in dict.fromkeys(terms):
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = self.idf(term)
            for doc_id, tf in posting.items():
                norm = k1 * (1.0 - b + b * doc_len[doc_id] / avgdl)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm)
        return out

    def scores(self, query: str) -> dict[str, float]:
        """BM25 scores of the documents matching ``query`` (others score 0)."""
        return self.score_terms(self.query_terms(query))

    def scores_for(self, query: str, doc_ids: Sequence[str]) -> NDArray[np.float64]:
        """Scores aligned with ``doc_ids`` (0.0 for non-matching or unknown ids)."""
        hits = self.scores(query)
        return np.fromiter(
            (hits.get(d, 0.0) for d in doc_ids), dtype=np.float64, count=len(doc_ids)
        )

    def search(
        self,
        query: str,
        limit: int = 10,
        allowed: Mapping[str, object] | set[str] | frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Best ``limit`` (doc_id, score) pairs, highest first; ties by doc_id.

        ``allowed`` restricts results to a subset of ids (e.g. one thread) while
        keeping collection-wide statistics.
        """
        hits = self.scores(query)
        items = (
            hits.items() if allowed is None else ((d, s) for d, s in hits.items() if d in allowed)
        )
        ranked = sorted(items, key=lambda kv: (-kv[1], kv[0]))
        return ranked[: max(0, limit)]
