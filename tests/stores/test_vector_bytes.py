"""The stored forms of a vector read back as float32 arrays: the SQL stores' bytes and
pgvector's text (``[0.1,-2e-05,...]``, each component its shortest float4 decimal)."""

from __future__ import annotations

import numpy as np

from memorybank.stores.sql.common import (
    unit_vector_bytes,
    vector_array,
    vector_array_from_text,
    vector_from_bytes,
)


def test_bytes_and_text_read_back_the_same_float32_values() -> None:
    rng = np.random.default_rng(7)
    for dim in (1, 3, 384):
        vector = rng.standard_normal(dim).astype(np.float32)
        vector[0] = np.float32(1e-30) if dim > 1 else vector[0]
        blob = unit_vector_bytes(vector.tolist())
        stored = np.frombuffer(blob, dtype="<f4")
        got = vector_array(blob)
        assert got.dtype == np.float32 and np.array_equal(got, stored)
        assert got.tolist() == vector_from_bytes(blob)  # what vector_get returns
        # pgvector prints each float4 as its shortest decimal (numpy's float32 repr)
        text = "[" + ",".join(np.format_float_positional(x, trim="-") for x in stored) + "]"
        assert np.array_equal(vector_array_from_text(text), stored)
        text = "[" + ",".join(np.format_float_scientific(x, trim="-") for x in stored) + "]"
        assert np.array_equal(vector_array_from_text(text), stored)
