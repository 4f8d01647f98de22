"""Extraction: text in, entities, relations, observations and facts out.

``Extractor`` is the protocol; ``RuleExtractor`` is an offline demo/test
extractor made of regular expressions; ``LLMExtractor`` asks any
OpenAI-compatible chat-completions endpoint (``pip install memorybank[openai]``).
``memory.graph.ingest(thread_id)`` and ``Memory(extractor=...,
extract_on_write=True)`` write what an extractor proposes (see
``memorybank.graph._async.formation``).
"""

from typing import TYPE_CHECKING, Any

from memorybank.core.extraction import (
    MAX_ENTITIES,
    MAX_RELATIONS,
    MIN_CONFIDENCE,
    ExtractedEntity,
    ExtractedFact,
    ExtractedObservation,
    ExtractedRelation,
    Extraction,
    Extractor,
    IngestReport,
    finish,
    normalize_name,
)
from memorybank.extract.rules import RuleExtractor
from memorybank.runtime.concurrency import Backlog

if TYPE_CHECKING:
    from memorybank.extract.llm import LLMExtractor

__all__ = [
    "MAX_ENTITIES",
    "MAX_RELATIONS",
    "MIN_CONFIDENCE",
    "Backlog",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedObservation",
    "ExtractedRelation",
    "Extraction",
    "Extractor",
    "IngestReport",
    "LLMExtractor",
    "RuleExtractor",
    "finish",
    "normalize_name",
]


def __getattr__(name: str) -> Any:
    # httpx loads only for the extractor that needs it
    if name == "LLMExtractor":
        from memorybank.extract.llm import LLMExtractor

        return LLMExtractor
    raise AttributeError(f"module 'memorybank.extract' has no attribute {name!r}")
