"""Embedders chosen by name, for configuration that is text (``--embedder``, env vars).

``embedder_named("local")`` is ``LocalEmbedder()`` (all-MiniLM-L6-v2: ONNX Runtime, torch or the
NumPy backend, whichever is installed), ``"openai"`` is ``OpenAIEmbedder()`` (key
from ``$OPENAI_API_KEY``), and ``"none"`` or the empty string is ``None`` (no
semantic search). :data:`EMBEDDER_ENV` names the variable ``memorybank serve``
and the server's ``app_from_env`` read.
"""

from __future__ import annotations

from memorybank.embeddings.base import Embedder
from memorybank.errors import ConfigurationError

__all__ = ["EMBEDDER_ENV", "EMBEDDER_NAMES", "embedder_named"]

#: Environment variable naming the server's embedder (one of :data:`EMBEDDER_NAMES`).
EMBEDDER_ENV = "MEMORYBANK_EMBEDDER"
EMBEDDER_NAMES = ("none", "local", "openai")


def embedder_named(name: str | None) -> Embedder | None:
    """The embedder called ``name`` (see the module docstring); ``None`` for none.

    Raises:
        ConfigurationError: an unknown name, or the embedder's extra is missing.
    """
    key = (name or "none").strip().lower()
    if key == "none":
        return None
    if key == "local":
        from memorybank.embeddings.local import LocalEmbedder

        return LocalEmbedder()
    if key == "openai":
        from memorybank.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder()
    raise ConfigurationError(f"unknown embedder {name!r}; expected one of {EMBEDDER_NAMES}")
