"""Fixtures of the recall tests: a small deterministic embedder and both embedded stores."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest

from memorybank import AsyncMemory, Memory
from memorybank.stores import InMemoryStore

_WORD = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """A real (if tiny) embedder: hashed bag of words plus synonyms, L2-normalised.

    Words in the same ``SYNONYMS`` group share a dimension, so "automobile" and
    "car" are close while sharing no keyword: enough to prove semantic recall.
    """

    SYNONYMS = ({"car", "automobile", "vehicle"}, {"happy", "glad", "joyful"})

    def __init__(self, dimensions: int = 64, model: str = "hash-v1") -> None:
        self._dimensions = dimensions
        self._model = model
        self.calls: list[int] = []

    @property
    def model_id(self) -> str:
        return f"test:{self._model}@{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _slot(self, word: str) -> int:
        for number, group in enumerate(self.SYNONYMS):
            if word in group:
                word = f"group{number}"
        return int(hashlib.sha1(word.encode()).hexdigest(), 16) % self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        out = []
        for text in texts:
            vec = [0.0] * self._dimensions
            for word in _WORD.findall(text.lower()):
                vec[self._slot(word)] += 1.0
            norm = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append([x / norm for x in vec] if any(vec) else [1.0] + [0.0] * (len(vec) - 1))
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


STORES = ["memory", "sqlite"]


def store_url(kind: str, tmp_path: Path) -> str:
    return "memory://" if kind == "memory" else f"sqlite:///{tmp_path / 'recall.db'}"


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def memory(store_kind: str, tmp_path: Path, embedder: HashEmbedder) -> Iterator[Memory]:
    with Memory(store_url(store_kind, tmp_path), embedder=embedder) as mem:
        yield mem


@pytest.fixture
async def amemory(
    store_kind: str, tmp_path: Path, embedder: HashEmbedder
) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(store_url(store_kind, tmp_path), embedder=embedder) as mem:
        yield mem


def lasting_store(kind: str, tmp_path: Path) -> str | InMemoryStore:
    """Where a test can reopen the same data: a URL, or (memory) one store it owns."""
    return InMemoryStore() if kind == "memory" else store_url(kind, tmp_path)
