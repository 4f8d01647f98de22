"""The embedder behind a LangGraph ``IndexConfig`` (hand-written: both call styles).

``index["embed"]`` may be a memorybank ``Embedder`` (used as is), or anything
LangGraph accepts (a LangChain ``Embeddings``, a function, a provider string),
wrapped here; without ``embed`` the memory's own embedder is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import IndexConfig, ensure_embeddings

from memorybank.embeddings.base import Embedder, normalize
from memorybank.errors import ConfigurationError


class _LangChainEmbedder:
    """A LangChain ``Embeddings`` seen as a memorybank ``Embedder``."""

    def __init__(self, embed: Any, dims: int) -> None:
        self._embeddings = ensure_embeddings(embed)
        self.dimensions = dims
        name = getattr(embed, "model", None) or type(self._embeddings).__name__
        self.model_id = f"langgraph:{name}@{dims}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [normalize(v) for v in self._embeddings.embed_documents(list(texts))]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return [normalize(v) for v in await self._embeddings.aembed_documents(list(texts))]


def embedder_for(index: IndexConfig, fallback: Embedder | None) -> Embedder:
    """The embedder an ``IndexConfig`` names (see the module docstring)."""
    embed = index.get("embed")
    if embed is None:
        if fallback is None:
            raise ConfigurationError("index has no 'embed' and the memory has no embedder")
        return fallback
    if all(hasattr(embed, name) for name in ("model_id", "embed", "aembed")):
        return embed  # type: ignore[return-value]
    return _LangChainEmbedder(embed, int(index["dims"]))
