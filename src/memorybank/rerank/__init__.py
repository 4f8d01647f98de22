"""Rerankers: an optional last stage of hybrid search, off by default.

``Reranker`` is the protocol (query and candidates in, one score each out);
``Memory(url, reranker=...)`` turns the stage on, ``search(rerank=False)``
skips it for a call and ``search(rerank_top=N)`` sets how many of the best
hybrid hits it reorders (default ``RERANK_TOP``, 20). A reranker never fails a
search: an error or a timeout keeps the hybrid order. See ``docs/search.md``.

* :class:`CrossEncoderReranker` - a sentence-transformers cross-encoder on this
  machine, from a local directory or the Hugging Face cache, never downloaded
  (``pip install memorybank[local]``).
* :class:`LLMReranker` - any OpenAI-compatible chat model, listwise
  (``pip install memorybank[openai]``).

Importing this package is cheap: torch and httpx load with the reranker that
needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.rerank.base import MAX_RERANK_TOP, RERANK_TOP, RerankCandidate, Reranker
from memorybank.runtime.lazy import lazy_names

if TYPE_CHECKING:
    from memorybank.rerank.cross_encoder import CrossEncoderReranker
    from memorybank.rerank.llm import LLMReranker

__all__ = [
    "MAX_RERANK_TOP",
    "RERANK_TOP",
    "CrossEncoderReranker",
    "LLMReranker",
    "RerankCandidate",
    "Reranker",
]

_LAZY = {
    "CrossEncoderReranker": "memorybank.rerank.cross_encoder",
    "LLMReranker": "memorybank.rerank.llm",
}

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
