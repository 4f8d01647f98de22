"""LangGraph on memorybank (``pip install 'memorybank[langgraph]'``).

- ``AsyncMemorybankSaver(memory)`` with an ``AsyncMemory``; ``MemorybankSaver(memory)``
  with a ``Memory``: LangGraph checkpointers on any memorybank store, passing
  ``langgraph-checkpoint-conformance`` (base capabilities plus ``copy_thread``,
  ``delete_for_runs`` and ``prune``). Channel values are stored once per
  version, not once per checkpoint.
- ``AsyncMemorybankStore(memory, *, index=None, ttl=None)`` and
  ``MemorybankStore(...)``: LangGraph's ``BaseStore`` (get/put/search/
  list_namespaces, filters, ``IndexConfig`` semantic search, ``TTLConfig``
  with ``omit_expired``; ``sweep_ttl``/``asweep_ttl`` delete expired items on
  demand, there is no background sweeper). ``index["embed"]`` may be a
  memorybank ``Embedder``, anything LangGraph accepts, or left out to use the
  memory's embedder.

The memory handle decides tenant and scope: pass ``memory.scoped(user_id=...)``
to keep one user's graphs and items apart from another's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from langgraph.store.base import IndexConfig, Op, Result, TTLConfig

from memorybank.integrations.langgraph._async.saver import (
    AsyncMemorybankSaver,
    AsyncMemorybankStoreBase,
)
from memorybank.integrations.langgraph._sync.saver import MemorybankSaver, MemorybankStoreBase
from memorybank.memory._async.memory import AsyncMemory

__all__ = [
    "AsyncMemorybankSaver",
    "AsyncMemorybankStore",
    "MemorybankSaver",
    "MemorybankStore",
]


class AsyncMemorybankStore(AsyncMemorybankStoreBase):
    """LangGraph's ``BaseStore`` on an ``AsyncMemory`` (see the module docstring).

    The sync methods (``put``, ``get``, ...) work from other threads while the
    event loop the store was created on (or last used on) runs, as sync nodes
    of an async graph call them; on the loop's own thread use the ``a`` methods.
    """

    def __init__(
        self,
        memory: AsyncMemory,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        super().__init__(memory, index=index, ttl=ttl)
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        self._loop = asyncio.get_running_loop()
        return await AsyncMemorybankStoreBase.abatch(self, ops)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("AsyncMemorybankStore: on the event loop use abatch (aput, ...)")
        if self._loop is None or not self._loop.is_running():
            raise RuntimeError("AsyncMemorybankStore: sync calls need its event loop running")
        return asyncio.run_coroutine_threadsafe(
            AsyncMemorybankStoreBase.abatch(self, list(ops)), self._loop
        ).result()


class MemorybankStore(MemorybankStoreBase):
    """LangGraph's ``BaseStore`` on a sync ``Memory``; the ``a`` methods call the
    sync ones directly (the store's I/O is blocking)."""

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)
