"""``memorybank.runtime.np`` stands for NumPy and imports it on the first attribute read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_CHECK = """
import sys
from memorybank.runtime.np import np
from memorybank.stores.vectors import exact, groups
from memorybank.stores.keyword import bm25
assert "numpy" not in sys.modules, "imported with the modules that use it"
import struct
hits = exact.top_k([1.0, 0.0], [struct.pack("<2f", 0.0, 1.0), struct.pack("<2f", 1.0, 0.0)], 1)
assert hits == [(1, 1.0)], hits
assert "numpy" in sys.modules
import numpy
assert np.ndarray is numpy.ndarray and "ndarray" in vars(np)  # kept: read once
assert isinstance(np.zeros(2), numpy.ndarray)
assert np.linalg.norm(np.asarray([3.0, 4.0])) == 5.0
print("ok")
"""


def test_numpy_loads_on_first_read_and_names_are_numpys() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHECK],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_a_name_numpy_lacks_is_an_attribute_error() -> None:
    from memorybank.runtime.np import np

    with pytest.raises(AttributeError):
        np.no_such_name_in_numpy  # noqa: B018
