"""What the ranking reads from one text, computed once per text: its index terms and
whether it holds a time expression.

A search scores a bounded candidate set (the store's hits and their neighbours), and
the same entries come back as candidates search after search. Analysing a candidate
(tokenise, drop stop words, stem; look for time words) is the ranking's largest Python
cost: about 15 us a message, 2.5 ms a search of 170 candidates. So each text is
analysed once per process and kept in a bounded memo. A miss costs the analysis of that
one text, never more: the memo is a speed-up, not an index, and nothing reads it but
the ranking of candidates already fetched.

:func:`keyword_scores` is BM25 over the candidates from those terms, the same numbers
as :class:`memorybank.stores.keyword.bm25.BM25Index` over the same texts (same formula, same
order of additions), without building its postings: a search needs the frequencies of
a few query terms, not an inverted index.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, TypeGuard, cast
from weakref import WeakKeyDictionary

import numpy as np
from numpy.typing import NDArray

from memorybank.recall.temporal import tokens_have_time
from memorybank.stores.keyword.text import Analyzer, tokenize

__all__ = ["MEMO_SIZE", "TextFeatures", "keyword_scores", "text_features"]

#: Distinct texts kept per analyser (about 1 KB each with their terms). When full, the
#: oldest half is dropped: a long-running service keeps its recent conversations warm.
MEMO_SIZE = 50_000


class TextFeatures(NamedTuple):
    """One text as the ranking reads it."""

    terms: tuple[str, ...]  # index terms in order (duplicates kept: term frequencies)
    has_time: bool  # a time word, weekday, month or year (``has_time_expression``)


_MEMOS: WeakKeyDictionary[Analyzer, dict[str, TextFeatures]] = WeakKeyDictionary()

#: Words kept per analyser by ``_TermOf`` (as the analyser's own stem memo).
WORDS_SIZE = 200_000


class _TermOf(dict[str, str | None]):
    """Word -> its index term under one analyser, ``None`` for a stop word, filled on
    first sight: a text's terms are then a ``map`` of lookups in C, with no Python
    test or call per word (the analysis of the candidates a search has not seen was
    the largest Python cost of a hot search)."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer
        self.empty_stem = False

    def __missing__(self, word: str) -> str | None:
        term = None if word in self.analyzer.stop_words else self.analyzer.stem(word)
        if term == "":
            self.empty_stem = True  # a term ``filter(None, ...)`` would drop: see text_features
        if len(self) < WORDS_SIZE:
            self[word] = term
        return term


_WORDS: WeakKeyDictionary[Analyzer, _TermOf] = WeakKeyDictionary()
#: ``f.terms`` of a ``TextFeatures`` in C (its lengths are read with no Python call per text)
_TERMS = cast("Callable[[TextFeatures], tuple[str, ...]]", operator.itemgetter(0))
#: ``x is not None`` in C (a filter of the lookups, with no Python call per word)
_NOT_NONE = cast("Callable[[str | None], TypeGuard[str]]", functools.partial(operator.is_not, None))


def text_features(analyzer: Analyzer, texts: Sequence[str]) -> list[TextFeatures]:
    """The features of each of ``texts`` under ``analyzer``, memoised per text."""
    memo = _MEMOS.get(analyzer)
    if memo is None:
        memo = _MEMOS[analyzer] = {}
    term_of = _WORDS.get(analyzer)
    if term_of is None:
        term_of = _WORDS[analyzer] = _TermOf(analyzer)
    lookup = term_of.__getitem__
    # every text looked up in C; only the ones missing are analysed (in order)
    out: list[TextFeatures | None] = list(map(memo.get, texts))
    if None not in out:
        return cast("list[TextFeatures]", out)
    for at, text in enumerate(texts):
        if out[at] is not None:
            continue
        found = memo.get(text)  # (a text met twice is analysed once)
        if found is None:
            tokens = tokenize(text)
            # Analyzer.terms: the stems of the words that are no stop word, in order
            # ``filter(None, ...)``: a truth test in C, no call per word (3x faster than
            # ``_NOT_NONE``); the same terms unless a word stems to "" (then exact again)
            terms: tuple[str, ...] = tuple(filter(None, map(lookup, tokens)))
            if term_of.empty_stem:
                terms = tuple(filter(_NOT_NONE, map(lookup, tokens)))
            found = TextFeatures(terms, tokens_have_time(tokens))
            if len(memo) >= MEMO_SIZE:
                for old in list(memo)[: MEMO_SIZE // 2]:
                    memo.pop(old, None)  # rankings on two threads may both prune
            memo[text] = found
        out[at] = found
    return cast("list[TextFeatures]", out)


def keyword_scores(
    features: Sequence[TextFeatures],
    query_terms: Sequence[str],
    k1: float,
    b: float,
    counts: Sequence[Mapping[str, int]] | None = None,
) -> NDArray[np.float64]:
    """BM25 of ``query_terms`` (analysed, distinct) over the texts of ``features``.

    Equal to ``BM25Index.score_terms`` over the same texts, score for score: Lucene's
    IDF, the same per-term additions in the same order. ``counts`` (each text's term
    frequencies, aligned with ``features``) are read instead of the terms when given:
    the same numbers, faster for many query terms (the ranker's feedback words).
    """
    n = len(features)
    out = np.zeros(n, dtype=np.float64)
    if not n or not query_terms:
        return out
    lengths = np.fromiter(map(len, map(_TERMS, features)), dtype=np.float64, count=n)
    avgdl = float(lengths.sum()) / n or 1.0
    norm = k1 * (1.0 - b + b * lengths / avgdl)
    distinct = list(dict.fromkeys(query_terms))
    # the texts holding a query term at all (one set test each, in C): only they are counted
    wanted = set(distinct)
    holding = (
        []
        if counts is not None
        else [(i, f.terms) for i, f in enumerate(features) if not wanted.isdisjoint(f.terms)]
    )
    if counts is not None:
        # each text's frequencies written once (the texts that hold none skipped), not
        # a pass over every text per term
        column = {term: j for j, term in enumerate(distinct)}
        table = np.zeros((len(distinct), n), dtype=np.float64)
        for i, held in enumerate(counts):
            if not held:
                continue
            for term, count in held.items():
                j = column.get(term)
                if j is not None:
                    table[j, i] = count
    for j, term in enumerate(distinct):
        if counts is not None:
            tf = table[j]
        else:
            tf = np.zeros(n, dtype=np.float64)
            for i, terms in holding:
                if term in terms:
                    tf[i] = terms.count(term)
        df = int(np.count_nonzero(tf))
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        out += idf * tf * (k1 + 1.0) / (tf + norm)
    return out
