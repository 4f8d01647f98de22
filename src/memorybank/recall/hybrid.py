"""Hybrid ranking of conversation memories: keyword + semantic + conversation context.

Pipeline (all numpy over the candidate list, no I/O)::

    relevance  = w_keyword * max_norm(BM25) + w_semantic * minmax_norm(cosine)
               (the min-max span reaching at least cosine ``semantic_reference``)
               + w_feedback * max_norm(BM25 of the feedback words)
    donor      = relevance * (relevance / max(relevance)) ** context_strength
    context    = relevance
               + sum_d after[d]  * donor[entry d places before]   (answers follow questions)
               + question_after  * donor[entry before] if that entry asks a question
               + sum_d before[d] * donor[entry d places after]
               + w_session * mean(top-3 relevance in the entry's session)
                           * min(1, relevance / (session_evidence * max(relevance)))
    score      = context * (1 + w_speaker * [entry's speaker is named in the query]
                              + w_date    * date_match(entry.created_at, dates in query)
                              + w_time    * [query asks "when"] * [entry has a time word])

The boosts multiply, so they re-order entries that are already relevant and
never lift an unrelated entry just because of who wrote it or when. The
conversation context is held back the same way: a neighbour hands on its
relevance in proportion to how strong a hit it is (a weak hit lends almost
nothing, so "Got it." after a vaguely related turn stays where it is), and the
session prior only lifts entries with evidence of their own.

The feedback words are pseudo-relevance feedback: the words that mark the first
ranking's best entries (the whole formula without them), rare among the
candidates and absent from the query ("Max" in the best hit for "what breed is my
dog?", "BodyPump" for "how many fitness classes ..."), scored as a second, weaker
query over the same candidates. They find the other mentions of what the best hits
are about, which share no word with the question.

Callers (stores) either let :class:`HybridRanker` compute BM25 over the
candidates, or pass their own ``keyword_scores`` (e.g. a collection-wide BM25
index or a database full-text rank) and ``semantic_scores``/``query_vector``.
Candidates should include the neighbours and session-mates of the best hits,
otherwise context expansion has nothing to expand to: the simplest is to pass a
whole thread (a few thousand entries rank in milliseconds).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

import numpy as np
from numpy.typing import NDArray

from memorybank.recall.conversation import Candidate, ConversationStructure
from memorybank.recall.features import TextFeatures, keyword_scores, text_features
from memorybank.recall.fusion import Normalization, normalize_array
from memorybank.recall.temporal import date_match, has_temporal_intent, parse_date_spans
from memorybank.stores.keyword.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index
from memorybank.stores.keyword.text import Analyzer, default_analyzer

__all__ = [
    "HybridRanker",
    "HybridWeights",
    "RankedCandidate",
    "SearchOptions",
    "Signals",
    "rank",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class HybridWeights:
    """Weights of the ranking signals (see the module docstring for the formula).

    Defaults were tuned without an LLM on LoCoMo dev (7 long two-person
    conversations), leave-one-conversation-out; they are round numbers from a
    broad plateau rather than the exact optimum, so they transfer.

    * ``keyword`` / ``semantic``: BM25 (max-normalised) vs. MiniLM cosine
      (min-max normalised).  Keyword is weighted higher because questions about
      one's own memories reuse the exact rare words (names of places, pets,
      hobbies); the dense signal catches paraphrases.  Set ``semantic=0`` when no
      embeddings exist: the other signals still work.
    * ``after``: how much an entry inherits from the 1st, 2nd ... entry *before* it.
      A question entry ("How was the trip?") matches the query; its answer is the
      next entry, so the turn after a hit receives a large share.
    * ``question_after``: what an entry inherits *in addition* when the entry
      before it asks a question (contains "?"): "What is its name?" matches
      "What is the name of Alice's dog?", the answer ("Biscuit.") comes next.
    * ``before``: inheritance from the entries *after* it (the hit is sometimes the
      reaction to the informative entry).
    * ``session``: prior for entries in sessions whose best entries are relevant
      (multi-part answers are spread over a session).
    * ``speaker``: boost for entries written by a speaker the query names.
    * ``date``: boost for entries whose time matches a date/month/year in the query.
    * ``time_word``: for "when ..." queries, boost for entries containing a time
      expression ("yesterday", "last week", "in 2019").
    * ``role``: boost for the messages of the role the query asks about: the user's
      own for "what breed is my dog?", the assistant's for "which hotel did you
      recommend?" (:func:`memorybank.recall.conversation.asked_role`); only among
      candidates that hold both (a chat with an assistant, not a talk between people).
    * ``feedback``: the feedback words' BM25 (max-normalised) beside the query's, at
      this share (see :class:`SearchOptions` ``feedback_*``); 0 turns it off. Chosen
      with ``feedback_entries`` and ``feedback_words`` on LongMemEval dev without the
      embedder, leave-one-question-out (every held-out question picked 0.4, 2 entries,
      10 words or 20 words), checked on LoCoMo dev with the embedder, where it neither
      gains nor loses (docs/recall.md).
    """

    keyword: float = 1.0
    semantic: float = 1.2
    after: tuple[float, ...] = (0.3,)
    question_after: float = 0.7
    before: tuple[float, ...] = (0.5, 0.15)
    session: float = 0.8
    speaker: float = 0.3
    date: float = 1.0
    time_word: float = 0.3
    role: float = 1.0
    feedback: float = 0.4


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Everything :class:`HybridRanker` needs besides the data; defaults with reasons.

    * ``weights``: see :class:`HybridWeights`.
    * ``k1`` / ``b``: BM25 parameters (see :mod:`memorybank.stores.keyword.bm25`); b is
      below the textbook 0.75 because chat turns are short and long turns are long
      because they say more.
    * ``keyword_normalization`` = "max": BM25 0 means "no matching word" and must
      stay 0; dividing by the best score keeps the gaps between hits.
    * ``semantic_normalization`` = "minmax": cosine has no meaningful zero (unrelated
      sentences score 0.1-0.2 with MiniLM), so the floor is removed.
    * ``semantic_reference`` = 0.5: but it has a scale: with "minmax", the best
      candidate counts in full only when its cosine reaches this (a MiniLM paraphrase
      scores 0.5 and more); when nothing matches that well, the span is taken as if
      the best one did, so the dense signal counts in proportion and does not stretch
      the noise between weak matches over the whole range (the passing mention a
      keyword finds in a long message is then not outranked by its vaguely related
      neighbours). 0 restores plain min-max.
    * ``session_gap`` = 1 hour: a silence longer than this starts a new session
      (chat sessions are bursts; a day-long gap is certainly a new one).
    * ``session_top`` = 3: a session's score is the mean of its 3 best entries, so
      one strong hit counts but a session with several good ones counts more.
    * ``neighbour_window`` = 2: how many entries on each side the structure links
      (weights passed later to :meth:`HybridRanker.rank` cannot reach further).
    * ``cross_session_neighbours`` = False: the last entry of one session is not the
      "question" for the first entry of the next one, days later.
    * ``date_after_days`` / ``date_before_days``: an entry dated up to 14 days after
      a date named in the query still matches partly (people tell what happened
      "last week"), up to 7 days before (plans).
    * ``context_strength`` = 0.5: a neighbour hands on ``relevance * (relevance /
      best) ** context_strength``, so strong hits lend (almost) their full
      relevance and weak ones little; 0 lends plain relevance.
    * ``session_evidence`` = 0.25: the session prior reaches an entry in full
      only when its own relevance is at least this share of the best one, less
      in proportion below (0 disables the gate). On a small memory every entry
      shares one session; without the gate the prior would lift replies such as
      "Got it." that say nothing themselves.
    * ``drop_speaker_names_from_keywords``: the speaker boost handles named speakers,
      so their names do not also count as keywords (they would favour every entry
      that merely addresses that person).
    * ``feedback_entries`` = 2 / ``feedback_words`` = 10 / ``feedback_max_share`` =
      0.2 / ``feedback_floor`` = 0.5: the feedback words (weight ``feedback``) are the
      ``feedback_words`` words of the first ranking's ``feedback_entries`` best entries
      (those scoring at least ``feedback_floor`` of the best one: on a small memory the
      next-best entry is often unrelated, and its words would lift its neighbours)
      with the highest frequency in them (per entry, relative to its length) times
      their IDF among the candidates, leaving out the query's words, the speakers'
      names, and the words of one candidate only (they lift nothing but that entry)
      or of more than ``feedback_max_share`` of them (too common to mark a topic).
    """

    weights: HybridWeights = field(default_factory=HybridWeights)
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    keyword_normalization: Normalization = "max"
    semantic_normalization: Normalization = "minmax"
    semantic_reference: float = 0.5
    session_gap: timedelta = timedelta(hours=1)
    session_top: int = 3
    cross_session_neighbours: bool = False
    neighbour_window: int = 2
    date_after_days: float = 14.0
    date_before_days: float = 7.0
    context_strength: float = 0.5
    session_evidence: float = 0.25
    drop_speaker_names_from_keywords: bool = True
    feedback_entries: int = 2
    feedback_words: int = 10
    feedback_max_share: float = 0.2
    feedback_floor: float = 0.5

    def with_weights(self, **changes: object) -> SearchOptions:
        """A copy with some weights changed: ``opts.with_weights(semantic=0.0)``."""
        return replace(self, weights=replace(self.weights, **changes))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RankedCandidate:
    """A ranked entry: its id, final score and the per-signal values that built it."""

    id: str
    score: float
    signals: Mapping[str, float]


@dataclass(slots=True)
class Signals:
    """Raw per-candidate signal arrays for one query (aligned with the candidates)."""

    keyword: FloatArray
    semantic: FloatArray
    semantic_mask: NDArray[np.bool_]
    speaker: FloatArray
    date: FloatArray
    time_word: FloatArray
    role: FloatArray
    #: BM25 of the feedback words (:meth:`HybridRanker.feedback_scores`), None: none
    feedback: FloatArray | None = None


class HybridRanker:
    """Ranks a fixed candidate list for many queries (build once per thread/scope).

    Examples:
        >>> from datetime import datetime
        >>> day = datetime(2024, 5, 1)
        >>> cands = [Candidate("1", "t", 0, "Ann: Where did you go?", "Ann", day),
        ...          Candidate("2", "t", 1, "Bob: Paris, it was lovely", "Bob", day),
        ...          Candidate("3", "t", 2, "Ann: I baked bread", "Ann", day)]
        >>> [r.id for r in HybridRanker(cands).rank("Where did Bob go?")]  # answer, ask
        ['2', '1', '3']
    """

    def __init__(
        self,
        candidates: Sequence[Candidate],
        options: SearchOptions | None = None,
        analyzer: Analyzer | None = None,
    ) -> None:
        self.options = options or SearchOptions()
        self.analyzer = analyzer or default_analyzer()
        # each text analysed once per process (memorybank.recall.features)
        self.features: list[TextFeatures] = text_features(
            self.analyzer, [c.text for c in candidates]
        )
        self.structure = ConversationStructure(
            candidates,
            has_time=[f.has_time for f in self.features],
            session_gap=self.options.session_gap,
            window=max(
                self.options.neighbour_window,
                len(self.options.weights.after),
                len(self.options.weights.before),
            ),
            cross_session_neighbours=self.options.cross_session_neighbours,
        )
        self._bm25: BM25Index | None = None
        self._name_terms: set[str] = set()
        for name in self.structure.names:
            self._name_terms.update(self.analyzer.terms(name))

    @property
    def candidates(self) -> list[Candidate]:
        return self.structure.candidates

    @property
    def bm25(self) -> BM25Index:
        """BM25 over the candidates' text (built on first use)."""
        if self._bm25 is None:
            idx = BM25Index(self.options.k1, self.options.b, self.analyzer)
            for c, f in zip(self.structure.candidates, self.features, strict=True):
                idx.add_terms(c.id, f.terms)
            self._bm25 = idx
        return self._bm25

    # ------------------------------------------------------------------ signals
    def keyword_scores(self, query: str) -> FloatArray:
        """BM25 of the query over the candidates; named speakers' names removed.

        The scores of :attr:`bm25` (``BM25Index``), computed from the candidates'
        memoised terms without building its postings."""
        return self._bm25_of(self._query_terms(query))

    def _bm25_of(
        self, terms: Sequence[str], counts: Sequence[Mapping[str, int]] | None = None
    ) -> FloatArray:
        return keyword_scores(self.features, terms, self.options.k1, self.options.b, counts)

    def _query_terms(self, query: str) -> list[str]:
        """The query's distinct analysed terms, named speakers' names removed."""
        terms = list(dict.fromkeys(self.analyzer.terms(query)))
        if self.options.drop_speaker_names_from_keywords and self._name_terms:
            kept = [t for t in terms if t not in self._name_terms]
            terms = kept or terms
        return terms

    def feedback_scores(self, query: str, scores: FloatArray) -> FloatArray | None:
        """BM25 of the feedback words of a first ranking ``scores`` over the candidates
        (see :class:`SearchOptions`), or None when there are none."""
        opts = self.options
        n = len(scores)
        top = float(scores.max()) if n else 0.0
        floor = opts.feedback_floor * top
        best = [
            int(i)
            for i in np.lexsort((np.arange(n), -scores))[: max(0, opts.feedback_entries)]
            if scores[i] > 0 and scores[i] >= floor
        ]
        if not best or opts.feedback_words <= 0:
            return None
        left_out = set(self.analyzer.terms(query)) | self._name_terms
        weight: dict[str, float] = {}  # in the order the words first occur
        for i in best:
            terms = self.features[i].terms
            share = 1.0 / max(1, len(terms))
            for term, count in Counter(terms).items():
                if term not in left_out:
                    weight[term] = weight.get(term, 0.0) + count * share
        # each candidate's words among them (one set intersection each, in C)
        vocabulary = set(weight)
        held = [vocabulary.intersection(f.terms) for f in self.features]
        df = dict.fromkeys(weight, 0)
        for words in held:
            for term in words:
                df[term] += 1
        most = opts.feedback_max_share * n
        ranked = sorted(
            (-weight[t] * math.log(1.0 + (n - d + 0.5) / (d + 0.5)), at, t)
            for at, (t, d) in enumerate(df.items())
            if 2 <= d <= most
        )
        chosen = [t for _, _, t in ranked[: opts.feedback_words]]
        if not chosen:
            return None
        wanted = set(chosen)
        counts = [
            {t: f.terms.count(t) for t in words & wanted} if words else {}
            for f, words in zip(self.features, held, strict=True)
        ]
        return self._bm25_of(chosen, counts)

    def signals(
        self,
        query: str,
        query_vector: NDArray[np.floating] | None = None,
        keyword_scores: Mapping[str, float] | None = None,
        semantic_scores: Mapping[str, float] | None = None,
    ) -> Signals:
        """Compute the raw signal arrays for ``query`` (independent of the weights passed
        to :meth:`combine`; the feedback words come from a first ranking with the
        options' weights)."""
        st = self.structure
        n = len(st)
        ids = st.ids
        if keyword_scores is not None:
            kw = np.fromiter((keyword_scores.get(d, 0.0) for d in ids), dtype=np.float64, count=n)
        else:
            kw = self.keyword_scores(query)
        if semantic_scores is not None:
            sem = np.fromiter((semantic_scores.get(d, 0.0) for d in ids), dtype=np.float64, count=n)
            mask = np.fromiter((d in semantic_scores for d in ids), dtype=bool, count=n)
        elif query_vector is not None:
            sem, mask = st.cosine(query_vector)
        else:
            sem, mask = np.zeros(n), np.zeros(n, dtype=bool)
        spans = parse_date_spans(query)
        if spans:
            opts = self.options
            date = np.fromiter(
                (
                    date_match(c.created_at, spans, opts.date_after_days, opts.date_before_days)
                    for c in st.candidates
                ),
                dtype=np.float64,
                count=n,
            )
        else:
            date = np.zeros(n)
        time_word = st.has_time.astype(np.float64) if has_temporal_intent(query) else np.zeros(n)
        sig = Signals(kw, sem, mask, st.speaker_mask(query), date, time_word, st.role_mask(query))
        if self.options.weights.feedback and n:
            # the first ranking (``options.weights``, no feedback) picks the feedback words
            sig.feedback = self.feedback_scores(query, self.combine(sig))
        return sig

    # ------------------------------------------------------------------ scoring
    def combine(self, sig: Signals, weights: HybridWeights | None = None) -> FloatArray:
        """Final scores from raw signals (the formula of the module docstring)."""
        return self.combine_parts(sig, weights)[0]

    def combine_parts(
        self, sig: Signals, weights: HybridWeights | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """:meth:`combine`'s scores, and the scores each candidate has of its own (no
        share of its neighbours' or its session's: ``combine`` with ``after``,
        ``before``, ``question_after`` and ``session`` at 0, the same bits)."""
        w = weights or self.options.weights
        st = self.structure
        opts = self.options
        rel = np.zeros(len(st))
        if w.keyword:
            rel += w.keyword * normalize_array(sig.keyword, opts.keyword_normalization)
        if w.semantic and sig.semantic_mask.any():
            sem = np.zeros(len(st))
            sem[sig.semantic_mask] = self._semantic_norm(sig.semantic[sig.semantic_mask])
            rel += w.semantic * sem
        if w.feedback and sig.feedback is not None:
            rel += w.feedback * normalize_array(sig.feedback, opts.keyword_normalization)
        best = float(rel.max()) if len(rel) else 0.0
        donor = rel
        if best > 0 and opts.context_strength:
            donor = rel * (rel / best) ** opts.context_strength
        ctx = rel.copy()
        if any(w.after):
            ctx += st.spread(donor, w.after, backward=True)
        if w.question_after:
            ctx += w.question_after * st.spread(donor * st.is_question, (1.0,), backward=True)
        if any(w.before):
            ctx += st.spread(donor, w.before, backward=False)
        if w.session:
            pool = st.session_pool(rel, opts.session_top)
            if best > 0 and opts.session_evidence > 0:
                pool *= np.minimum(1.0, rel / (opts.session_evidence * best))
            ctx += w.session * pool
        boost = (
            1.0
            + w.speaker * sig.speaker
            + w.date * sig.date
            + w.time_word * sig.time_word
            + w.role * sig.role
        )
        result: FloatArray = ctx * boost
        own: FloatArray = rel * boost
        return result, own

    def _semantic_norm(self, cosine: FloatArray) -> FloatArray:
        """The semantic scores normalised (``semantic_normalization``); with "minmax", over
        a span at least as wide as from the lowest cosine to ``semantic_reference``."""
        opts = self.options
        if opts.semantic_normalization != "minmax" or not len(cosine):
            return normalize_array(cosine, opts.semantic_normalization)
        low = float(cosine.min())
        span = max(float(cosine.max()), opts.semantic_reference) - low
        if span <= 0:
            return np.zeros_like(cosine)
        out: FloatArray = (cosine - low) / span
        return out

    def order(self, scores: FloatArray) -> list[int]:
        """Candidate indices, best first; ties keep the candidates' order."""
        order: list[int] = np.lexsort((np.arange(len(scores)), -scores)).tolist()
        return order

    def rank(
        self,
        query: str,
        *,
        query_vector: NDArray[np.floating] | None = None,
        keyword_scores: Mapping[str, float] | None = None,
        semantic_scores: Mapping[str, float] | None = None,
        limit: int | None = None,
        weights: HybridWeights | None = None,
    ) -> list[RankedCandidate]:
        """Rank all candidates for ``query`` (best first, at most ``limit``)."""
        sig = self.signals(query, query_vector, keyword_scores, semantic_scores)
        scores = self.combine(sig, weights)
        idx = self.order(scores)
        if limit is not None:
            idx = idx[: max(0, limit)]
        ids = self.structure.ids
        return [
            RankedCandidate(
                ids[i],
                float(scores[i]),
                {
                    "keyword": float(sig.keyword[i]),
                    "semantic": float(sig.semantic[i]),
                    "speaker": float(sig.speaker[i]),
                    "date": float(sig.date[i]),
                    "time_word": float(sig.time_word[i]),
                    "role": float(sig.role[i]),
                },
            )
            for i in idx
        ]


def rank(
    query: str,
    candidates: Sequence[Candidate],
    *,
    query_vector: NDArray[np.floating] | None = None,
    keyword_scores: Mapping[str, float] | None = None,
    semantic_scores: Mapping[str, float] | None = None,
    options: SearchOptions | None = None,
    limit: int | None = None,
) -> list[RankedCandidate]:
    """One-shot :meth:`HybridRanker.rank` (build a :class:`HybridRanker` to reuse the index)."""
    return HybridRanker(candidates, options).rank(
        query,
        query_vector=query_vector,
        keyword_scores=keyword_scores,
        semantic_scores=semantic_scores,
        limit=limit,
    )
