"""pgvector values in psycopg's binary format: float32 on the wire, never text.

A vector as text (``'[0.0123,...]'``) costs a float-to-text conversion per
component in Python and a parse per component in the server: for a batch of
10,000 384-d vectors that was most of the time of ``vector_put`` (text: 45 s,
binary: 1.8 s on a busy machine). ``Vector`` (one query vector) and ``Vectors``
(a batch, for ``unnest(%s::vector[])``) are dumped in pgvector's binary form
(``vector_recv``: int16 dimension, int16 unused, big-endian float32s).

Their parameters are sent without a type (oid 0): the statement's cast
(``%(q)s::vector``, ``%(embeddings)s::vector[]``) types them. An array's
header names its element type, so ``Vectors`` carries the oid of the table's
``vector`` type (read by the store when it connects). ``VectorParams`` marks a
statement's parameters that hold one of them: ``register`` then adds the dumpers
to that connection if its adapters lack them (a connection made before this
module was imported).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

if TYPE_CHECKING:  # numpy loads with the first vector, not with the store
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["Vector", "VectorParams", "Vectors", "register"]


class Vector:
    """One vector, dumped as pgvector binary."""

    __slots__ = ("data",)

    def __init__(self, vector: NDArray[np.float32]) -> None:
        import numpy as np

        self.data = np.asarray(vector, dtype=">f4").reshape(-1)


class Vectors:
    """Vectors as float32 bytes (``_sql.unit_vector_bytes``), dumped as a binary ``vector[]``."""

    __slots__ = ("blobs", "oid")

    def __init__(self, blobs: Sequence[bytes], oid: int) -> None:
        self.blobs = blobs
        self.oid = oid


class VectorParams(dict[str, Any]):
    """Statement parameters holding a ``Vector`` or ``Vectors``."""


class _VectorDumper(Dumper):
    format = Format.BINARY
    oid = 0

    def dump(self, obj: Any) -> bytes:
        return _element(obj.data)[4:]


class _VectorsDumper(Dumper):
    format = Format.BINARY
    oid = 0

    def dump(self, obj: Any) -> bytes:
        import numpy as np

        blobs: Sequence[bytes] = obj.blobs
        count = len(blobs)
        # array_recv: ndim, has-nulls flag, element type, then per dimension size and lower bound
        head = np.array([1, 0, obj.oid, count, 1], dtype=">i4").tobytes()
        width = len(blobs[0]) if count else 0
        if any(len(b) != width for b in blobs):  # several dimensions: one element at a time
            return head + b"".join(_element(np.frombuffer(b, dtype="<f4")) for b in blobs)
        dim = width // 4
        rows = np.zeros(
            count, dtype=[("size", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (dim,))]
        )
        rows["size"] = 4 + 4 * dim
        rows["dim"] = dim
        rows["v"] = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(count, dim)
        return head + rows.tobytes()


def _element(vector: NDArray[np.float32]) -> bytes:
    """One array element: its byte size, then ``vector_recv``'s form."""
    import numpy as np

    body = np.array([vector.shape[0], 0], dtype=">i2").tobytes() + vector.astype(">f4").tobytes()
    return np.array([len(body)], dtype=">i4").tobytes() + body


def register(adapters: psycopg.adapt.AdaptersMap) -> None:
    """Add the dumpers to ``adapters`` (a connection's, or psycopg's global map)."""
    adapters.register_dumper(Vector, _VectorDumper)
    adapters.register_dumper(Vectors, _VectorsDumper)


def registered(adapters: psycopg.adapt.AdaptersMap) -> bool:
    try:
        adapters.get_dumper(Vectors, psycopg.adapt.PyFormat.BINARY)
    except psycopg.ProgrammingError:
        return False
    return True


register(psycopg.adapters)  # connections made from now on have them
