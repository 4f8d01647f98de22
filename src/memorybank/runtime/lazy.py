"""A package's names imported on first use (``memorybank.embeddings``, ``memorybank.rerank``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is
    ``namespace``: a name of ``where`` is imported from its module on first use and kept;
    any other is an ``AttributeError``. ``dir()`` lists the globals and ``__all__``."""

    def __getattr__(name: str) -> Any:
        module_name = where.get(name)
        if module_name is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
