"""The Embedder protocol, helpers and the package's lazy imports."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from collections.abc import Sequence

import pytest

from memorybank.embeddings import Embedder, normalize
from memorybank.embeddings.base import check_texts
from memorybank.errors import InvalidInput


class Constant:
    """A minimal embedder: any object with these four members is an Embedder."""

    model_id = "test:constant@2"
    dimensions = 2

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [normalize([1.0, 1.0]) for _ in check_texts(texts)]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def test_protocol_is_structural() -> None:
    emb: Embedder = Constant()
    assert isinstance(emb, Embedder)
    assert not isinstance(object(), Embedder)
    assert asyncio.run(emb.aembed(["a"])) == emb.embed(["a"])


def test_normalize() -> None:
    assert normalize([3, 4]) == [0.6, 0.8]
    assert normalize([0.0, 0.0]) == [0.0, 0.0]
    v = normalize([1e-30, 2e-30, -5e-30])
    assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0)
    with pytest.raises(InvalidInput):
        normalize([math.inf, 1.0])
    with pytest.raises(InvalidInput):
        normalize([math.nan])


def test_check_texts() -> None:
    assert check_texts(("a", "b")) == ["a", "b"]
    assert check_texts([]) == []
    with pytest.raises(InvalidInput, match="single string"):
        check_texts("abc")
    with pytest.raises(InvalidInput, match=r"texts\[1\]"):
        check_texts(["a", None])  # type: ignore[list-item]


def test_import_is_lazy() -> None:
    code = (
        "import sys, memorybank.embeddings as e\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'httpx', 'numpy', 'tokenizers')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "e.LocalEmbedder, e.OpenAIEmbedder\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'httpx') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_unknown_attribute() -> None:
    import memorybank.embeddings as package

    with pytest.raises(AttributeError):
        _ = package.NoSuchEmbedder
