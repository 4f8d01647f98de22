"""The store contract: ``AsyncStore``/``Store``, its parts, and the values a store author needs.

A store implements ``AsyncStore`` (``memorybank.stores.contract._async.store``, whose
module docstring states every guarantee); the sync ``Store`` is generated from it.
``AsyncStore`` is composed of one ABC per capability, each importable from here:

==========================  =====================  ==========================================
async                       sync                   methods
==========================  =====================  ==========================================
``AsyncStoreBase``          ``StoreBase``          ``close``, ``reclaim_space``, ``capabilities``
``AsyncThreadStore``        ``ThreadStore``        threads and branches
``AsyncEntryStore``         ``EntryStore``         entries and compaction
``AsyncRunStateStore``      ``RunStateStore``      working memory, snapshots, summaries (derived)
``AsyncRecordStore``        ``RecordStore``        records (facts, documents, graph nodes)
``AsyncSearchStore``        ``SearchStore``        keyword and vector search, vectors (derived)
``AsyncBatchReads``         ``BatchReads``         reads of many at once (defaults given)
==========================  =====================  ==========================================

The values its methods take and return are here too (``NewEntry``, ``Record``,
``RecordGuard``, ``Visibility``, ...), with the records of ``memorybank.records``
(``Thread``, ``Entry``, ``Branch``, ``Summary``, ``ToolCall``) and ``Capability``.
A store must implement the ``REQUIRED`` methods (the abstract ones, 20); every other
method has a default derived from them, written once here, which a store may override
for speed, claiming the group's ``Capability`` (``OVERRIDES``). A guide:
docs/writing-a-store.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memorybank.records import Branch, Entry, Summary, Thread, ToolCall
from memorybank.rules.entry_ids import check_batch_ids, id_taken
from memorybank.rules.idempotency import clash as fingerprints_clash
from memorybank.rules.idempotency import key_reused
from memorybank.stores.contract.capabilities import OVERRIDES, Capability
from memorybank.stores.contract.types import (
    LAST_POSITION,
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
    names_user,
    searched_kinds,
    visible,
)

if TYPE_CHECKING:
    from memorybank.stores.contract._async.base import AsyncStoreBase
    from memorybank.stores.contract._async.batch_reads import AsyncBatchReads
    from memorybank.stores.contract._async.entry_store import AsyncEntryStore
    from memorybank.stores.contract._async.record_store import AsyncRecordStore
    from memorybank.stores.contract._async.run_state_store import AsyncRunStateStore
    from memorybank.stores.contract._async.search_store import AsyncSearchStore
    from memorybank.stores.contract._async.store import AsyncStore
    from memorybank.stores.contract._async.thread_store import AsyncThreadStore
    from memorybank.stores.contract._sync.base import StoreBase
    from memorybank.stores.contract._sync.batch_reads import BatchReads
    from memorybank.stores.contract._sync.entry_store import EntryStore
    from memorybank.stores.contract._sync.record_store import RecordStore
    from memorybank.stores.contract._sync.run_state_store import RunStateStore
    from memorybank.stores.contract._sync.search_store import SearchStore
    from memorybank.stores.contract._sync.store import Store
    from memorybank.stores.contract._sync.thread_store import ThreadStore
    from memorybank.stores.contract.appends import Plan, new_entry, plan_append
    from memorybank.stores.contract.pages import entry_page, select_records, select_threads

__all__ = [
    "LAST_POSITION",
    "OVERRIDES",
    "REQUIRED",
    "UNSET",
    "AppendResult",
    "AsyncBatchReads",
    "AsyncEntryStore",
    "AsyncRecordStore",
    "AsyncRunStateStore",
    "AsyncSearchStore",
    "AsyncStore",
    "AsyncStoreBase",
    "AsyncThreadStore",
    "BatchReads",
    "Branch",
    "Capability",
    "Entry",
    "EntryStore",
    "NewEntry",
    "Plan",
    "Record",
    "RecordGuard",
    "RecordStore",
    "RunStateStore",
    "SearchHit",
    "SearchStore",
    "Store",
    "StoreBase",
    "Summary",
    "Thread",
    "ThreadStore",
    "ToolCall",
    "Unset",
    "VectorItem",
    "Visibility",
    "by_kind",
    "check_batch_ids",
    "entry_page",
    "fingerprints_clash",
    "id_taken",
    "key_reused",
    "names_user",
    "new_entry",
    "plan_append",
    "searched_kinds",
    "select_records",
    "select_threads",
    "visible",
]

#: The methods a store must implement (``AsyncStore``'s abstract methods); the rest of the
#: contract is derived from them.
REQUIRED: tuple[str, ...] = (
    "close", "forget_user",
    "thread_create", "thread_get", "thread_list", "thread_update", "thread_delete",
    "branch_create", "branch_list", "branch_delete",
    "entry_append", "entry_list", "entry_delete", "entry_truncate_after", "entry_update",
    "entry_compact",
    "record_put", "record_get", "record_delete", "record_list",
)  # fmt: skip

_CLASSES = {
    "AsyncStore": "_async.store",
    "AsyncStoreBase": "_async.base",
    "AsyncThreadStore": "_async.thread_store",
    "AsyncEntryStore": "_async.entry_store",
    "AsyncRunStateStore": "_async.run_state_store",
    "AsyncRecordStore": "_async.record_store",
    "AsyncSearchStore": "_async.search_store",
    "AsyncBatchReads": "_async.batch_reads",
    "Store": "_sync.store",
    "StoreBase": "_sync.base",
    "ThreadStore": "_sync.thread_store",
    "EntryStore": "_sync.entry_store",
    "RunStateStore": "_sync.run_state_store",
    "RecordStore": "_sync.record_store",
    "SearchStore": "_sync.search_store",
    "BatchReads": "_sync.batch_reads",
    "Plan": "appends",
    "new_entry": "appends",
    "plan_append": "appends",
    "entry_page": "pages",
    "select_records": "pages",
    "select_threads": "pages",
}


def __getattr__(name: str) -> Any:
    # The contract classes import the values above: loaded on first use, not here.
    module = _CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module 'memorybank.stores.contract' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
