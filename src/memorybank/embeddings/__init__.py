"""Text embedders: the :class:`Embedder` protocol and its implementations.

* :class:`LocalEmbedder` - sentence-transformers models on this machine
  (default all-MiniLM-L6-v2, 384 dimensions; ``pip install memorybank[local]``).
* :class:`OpenAIEmbedder` - the OpenAI embeddings API or any compatible server
  (``pip install memorybank[openai]``).

Importing this package is cheap: torch, sentence-transformers and httpx are only
imported when an embedder is created or first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.embeddings.base import Embedder, normalize
from memorybank.runtime.lazy import lazy_names

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

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
