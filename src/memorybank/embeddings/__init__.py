"""Text embedders: the :class:`Embedder` protocol and its implementations.

* :class:`LocalEmbedder` - sentence-transformers models on this machine
  (default all-MiniLM-L6-v2, 384 dimensions; ``pip install memorybank[local]``).
* :class:`OpenAIEmbedder` - the OpenAI embeddings API or any compatible server
  (``pip install memorybank[openai]``).

Importing this package is cheap: torch, sentence-transformers and httpx are only
imported when an embedder is created or first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memorybank.embeddings.base import Embedder, normalize

if TYPE_CHECKING:
    from memorybank.embeddings.local import LocalEmbedder
    from memorybank.embeddings.openai import OpenAIEmbedder
    from memorybank.embeddings.status import EmbeddingStatus, EmbedMode

__all__ = [
    "EmbedMode",
    "Embedder",
    "EmbeddingStatus",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "normalize",
]

_LAZY = {
    "EmbeddingStatus": "memorybank.embeddings.status",
    "EmbedMode": "memorybank.embeddings.status",
    "LocalEmbedder": "memorybank.embeddings.local",
    "OpenAIEmbedder": "memorybank.embeddings.openai",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
