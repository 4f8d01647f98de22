"""The embedder protocol and small helpers shared by every embedder."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memorybank.errors import InvalidInput

__all__ = ["Embedder", "check_texts", "normalize"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors.

    ``model_id`` is a stable identifier stored beside every vector (for example
    ``"local:all-MiniLM-L6-v2"`` or ``"openai:text-embedding-3-small@1536"``): two
    embedders with the same ``model_id`` produce comparable vectors, and a store
    must re-embed when it changes. ``dimensions`` is the length of every vector.

    ``embed`` is synchronous and takes a batch; ``aembed`` is its async twin. Both
    return one list of floats per input text, in input order, each of unit length.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]: ...


def normalize(vector: Sequence[float]) -> list[float]:
    """Return ``vector`` scaled to unit L2 length (a zero vector is returned as zeros).

    Scales by the largest component first, so no square overflows or underflows.
    """
    try:
        values = [float(x) for x in vector]
    except OverflowError:  # an int beyond any float
        values = [math.inf]
    if not all(map(math.isfinite, values)):
        raise InvalidInput("vector contains non-finite values", field="vector")
    largest = max((abs(x) for x in values), default=0.0)
    if largest == 0.0:
        return values
    scaled = [x / largest for x in values]
    norm = math.sqrt(math.fsum(x * x for x in scaled))
    return [x / norm for x in scaled]


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate the ``texts`` argument of ``embed``/``aembed`` and return it as a list.

    A bare ``str`` is rejected: it is a ``Sequence[str]`` too, and embedding it
    character by character is never what the caller meant.
    """
    if isinstance(texts, str | bytes):
        raise InvalidInput(
            "texts must be a sequence of strings, not a single string", field="texts"
        )
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise InvalidInput(f"texts[{i}] is {type(text).__name__}, expected str", field="texts")
    return out
