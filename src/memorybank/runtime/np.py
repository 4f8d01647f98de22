"""NumPy, imported when a value is first read from it.

NumPy takes longer to import than the rest of a memorybank start together, and most
runs never rank a vector. The modules the stores import that compute with it (the
vector cache in ``stores/vectors/``, BM25 in ``stores/keyword/``) take ``np`` from here
at module level, so that importing them, and the stores that import them, costs no
NumPy::

    if TYPE_CHECKING:
        import numpy as np
    else:
        from memorybank.runtime.np import np

Type checkers see NumPy itself. At run time ``np`` is a module object that imports
NumPy on the first attribute read and keeps each name it reads, so that later reads
cost what a module attribute does. Nothing at a module's top level may read from it
(a constant made with NumPy belongs in a function, or a cached one): that would load
NumPy with the module again. ``tests/runtime/test_cold_start.py`` checks that a new process
reading history through a store loads no NumPy.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["np"]


class _NumPy(ModuleType):
    """Stands for the ``numpy`` module; imports it on the first attribute read."""

    def __getattr__(self, name: str) -> Any:
        # Called only for a name not kept yet: read it from NumPy and keep it here.
        import numpy  # the one deferred NumPy import (start-up cost, see above)

        value = getattr(numpy, name)
        setattr(self, name, value)
        return value


np = _NumPy("numpy", "NumPy, imported on the first attribute read")
