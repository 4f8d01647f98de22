"""Recall: the I/O-free ranking core (BM25, fusion, conversation context) and ``memory.search``.

Stores adapt their entries to :class:`Candidate` and call :class:`HybridRanker`
(or :func:`rank`); keyword-only stores use :class:`BM25Index` directly.
See ``docs/search.md`` for the design, defaults and LoCoMo measurements.
"""

from __future__ import annotations

from memorybank.recall.conversation import (
    Candidate,
    ConversationStructure,
    asked_role,
    mentioned_speakers,
)
from memorybank.recall.fusion import (
    normalize,
    normalize_array,
    reciprocal_rank_fusion,
    weighted_fusion,
)
from memorybank.recall.hybrid import (
    HybridRanker,
    HybridWeights,
    RankedCandidate,
    SearchOptions,
    Signals,
    rank,
)
from memorybank.recall.temporal import (
    DateSpan,
    date_match,
    has_temporal_intent,
    has_time_expression,
    parse_date_spans,
)
from memorybank.stores.keyword.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index
from memorybank.stores.keyword.text import STOP_WORDS, Analyzer, default_analyzer, tokenize

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "STOP_WORDS",
    "Analyzer",
    "BM25Index",
    "Candidate",
    "ConversationStructure",
    "DateSpan",
    "HybridRanker",
    "HybridWeights",
    "RankedCandidate",
    "SearchOptions",
    "Signals",
    "asked_role",
    "date_match",
    "default_analyzer",
    "has_temporal_intent",
    "has_time_expression",
    "mentioned_speakers",
    "normalize",
    "normalize_array",
    "parse_date_spans",
    "rank",
    "reciprocal_rank_fusion",
    "tokenize",
    "weighted_fusion",
]
