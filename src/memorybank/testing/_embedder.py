"""A tiny deterministic embedder for the conformance suites (outside ``_async``: its
``embed``/``aembed`` pair must not be renamed by the sync generator)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

__all__ = ["BrokenEmbedder", "SynonymEmbedder"]

_WORD = re.compile(r"[a-z0-9]+")


class SynonymEmbedder:
    """Bag of words over 16 dimensions where synonyms share one: "car" and
    "automobile" are close while sharing no keyword (semantic recall, provably)."""

    GROUPS = ({"car", "automobile", "vehicle", "drives"}, {"tea", "chai"})

    model_id = "test:synonyms@16"
    dimensions = 16

    def _slot(self, word: str) -> int:
        for number, group in enumerate(self.GROUPS):
            if word in group:
                return number
        return len(self.GROUPS) + sum(map(ord, word)) % (self.dimensions - len(self.GROUPS))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dimensions
            for word in _WORD.findall(text.lower()):
                vec[self._slot(word)] += 1.0
            norm = math.sqrt(sum(x * x for x in vec))
            out.append([x / norm for x in vec] if norm else [1.0] + [0.0] * (self.dimensions - 1))
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


class BrokenEmbedder(SynonymEmbedder):
    """Returns vectors one dimension short: no store may keep them."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [vector[:-1] for vector in super().embed(texts)]
