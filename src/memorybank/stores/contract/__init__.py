"""The store contract: ``AsyncStore``/``Store`` and the values a store author needs.

A store implements ``AsyncStore`` (``memorybank.stores.contract._async.store``); the
sync ``Store`` is generated from it. The values its methods take and return are here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import (
    UNSET,
    AppendResult,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    Unset,
    VectorItem,
    Visibility,
    by_kind,
    searched_kinds,
    visible,
)

if TYPE_CHECKING:
    from memorybank.stores.contract._async.store import AsyncStore
    from memorybank.stores.contract._sync.store import Store

__all__ = [
    "UNSET",
    "AppendResult",
    "AsyncStore",
    "Capability",
    "NewEntry",
    "Record",
    "RecordGuard",
    "SearchHit",
    "Store",
    "Unset",
    "VectorItem",
    "Visibility",
    "by_kind",
    "searched_kinds",
    "visible",
]

_CLASSES = {
    "AsyncStore": "memorybank.stores.contract._async.store",
    "Store": "memorybank.stores.contract._sync.store",
}


def __getattr__(name: str) -> Any:
    # The contract classes import the values above: loaded on first use, not here.
    module = _CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module 'memorybank.stores.contract' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
