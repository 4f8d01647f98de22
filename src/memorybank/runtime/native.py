"""Loading usearch without breaking the C++ libraries loaded after it.

usearch's Linux wheel links libstdc++ statically and exports the ids of its locale
facets (``std::collate<char>::id``, ``std::numpunct<char>::id``, ...) as
``STB_GNU_UNIQUE`` symbols: 107 of them in usearch 2.26 (``readelf --dyn-syms``). The
dynamic linker binds a unique symbol once per process, whatever ``RTLD_LOCAL`` says, so
the system's ``libstdc++.so.6`` loaded *after* usearch takes usearch's facet ids and
finds them uninitialised: onnxruntime 1.32 crashes while importing (SIGSEGV in
``std::codecvt<char16_t>::do_unshift``, under gdb here), so ``LocalEmbedder``'s ONNX
backend could not run in a process that had built a vector index.

Loading the system's ``libstdc++.so.6`` first, with ``RTLD_GLOBAL``, makes the first
definition of every such id the system's: usearch binds to it, and so does every
library loaded later. That is the whole fix: no library of ours replaces usearch or
onnxruntime, and no maintained library does this (each wheel would have to stop
exporting the symbols). Nothing happens where there is no ``libstdc++.so.6`` to load
(macOS, musl): there the clash does not arise.

Every import of usearch in memorybank goes through :func:`usearch_index`.
:func:`usearch_unsafe` tells the ONNX backend whether usearch was imported some other
way first (then creating its session would crash the process: it refuses instead).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["cxx_runtime_first", "usearch_index", "usearch_unsafe"]

#: Whether the system's C++ runtime was loaded before usearch (set by ``usearch_index``).
_SAFE: list[bool] = []


def cxx_runtime_first() -> bool:
    """Load the system's ``libstdc++.so.6`` into the process's global scope; whether it
    is loaded (False where there is none, as on macOS: nothing to protect there)."""
    import ctypes  # on first use: not every process builds a vector index

    try:
        ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _usearch_loaded() -> bool:
    return "usearch.compiled" in sys.modules


def usearch_index() -> Any:
    """usearch's ``Index`` class, imported after the system's C++ runtime (see above)."""
    if not _SAFE:
        first = not _usearch_loaded()  # else imported elsewhere first: too late for it
        _SAFE.append(cxx_runtime_first() and first)
    from usearch.index import Index

    return Index


def usearch_unsafe() -> bool:
    """Whether usearch is loaded and a C++ library loaded now may crash the process:
    imported other than through :func:`usearch_index`, with the system's C++ runtime
    not loaded before it (onnxruntime already loaded is safe: it came first)."""
    if not _usearch_loaded() or "onnxruntime" in sys.modules:
        return False
    return not (_SAFE and _SAFE[0])
