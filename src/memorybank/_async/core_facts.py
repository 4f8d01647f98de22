"""Core facts: always-on key-value facts about a user, with the history of every value.

The reference's ``CoreFactsStore`` is one SQLite table per file, global to it;
here core facts are store records (so they live on any store), scoped by tenant
and user. ``set`` writes the value and its history row in ONE atomic
``record_put``; ``delete`` writes no history.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from memorybank import _validate as v
from memorybank._async.stores.base import Record
from memorybank._ids import compound_id, new_id
from memorybank.errors import ConfigurationError

if TYPE_CHECKING:
    from memorybank._async.memory import AsyncMemory

__all__ = ["CORE_FACT", "CORE_FACT_HISTORY", "AsyncCoreFacts"]

CORE_FACT = "core_fact"
CORE_FACT_HISTORY = "core_fact_history"
DEFAULT_PATH = "memorybank.db"


class AsyncCoreFacts:
    """Key-value facts for one user (``user_id=None``: the tenant-wide set).

    ``path`` opens (and ``close`` closes) an SQLite file, ``./memorybank.db`` by
    default; ``memory`` uses that memory's store and tenant instead (left open).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        memory: AsyncMemory | None = None,
        *,
        user_id: str | None = None,
    ) -> None:
        from memorybank._async.memory import AsyncMemory

        if memory is not None and path is not None:
            raise ConfigurationError("give CoreFacts a path or a memory, not both")
        self._owns = memory is None
        if memory is None:
            location = str(path if path is not None else DEFAULT_PATH)
            memory = AsyncMemory(f"sqlite:///{location}")
        self._memory = memory
        self.user_id = v.check_optional_id(user_id, "user_id")

    def _id(self, key: str) -> str:
        """The record id of ``key``: unique per (user, key), at most 255 characters."""
        return compound_id(json.dumps([self.user_id, key], ensure_ascii=False))

    async def set(self, key: str, value: str) -> None:
        """Set ``key`` to ``value`` and append it to the key's history, atomically."""
        key = v.check_id(key, "key")
        v.check_text(value, "value", max_chars=self._memory._core.max_content_chars)
        now = self._memory._core.now()
        record_id = self._id(key)
        existing = await self._memory.store.record_get(self._memory.tenant_id, CORE_FACT, record_id)
        current = Record(
            kind=CORE_FACT,
            id=record_id,
            agent_id=None,
            user_id=self.user_id,
            content=value,
            data={},
            created_at=now if existing is None else existing.created_at,
            updated_at=now,
            key=key,
        )
        history = Record(
            kind=CORE_FACT_HISTORY,
            id=new_id(),
            agent_id=None,
            user_id=self.user_id,
            content=value,
            data={"key": key},
            created_at=now,
            updated_at=now,
            key=record_id,
        )
        await self._memory.store.record_put(self._memory.tenant_id, [current, history])

    async def get(self, key: str) -> str | None:
        """The current value of ``key``, or ``None``."""
        record = await self._memory.store.record_get(
            self._memory.tenant_id, CORE_FACT, self._id(v.check_id(key, "key"))
        )
        return None if record is None else record.content

    async def delete(self, key: str) -> bool:
        """Forget the current value of ``key`` (its history stays); whether it was set."""
        removed = await self._memory.store.record_delete(
            self._memory.tenant_id, CORE_FACT, [self._id(v.check_id(key, "key"))]
        )
        return removed > 0

    async def history(self, key: str) -> list[tuple[str, datetime]]:
        """Every value ``key`` was set to, with when: ``[(value, set_at)]``, oldest first."""
        records = await self._memory.store.record_list(
            self._memory.tenant_id, CORE_FACT_HISTORY, key=self._id(v.check_id(key, "key"))
        )
        return [(r.content, r.created_at) for r in records]

    async def all(self) -> dict[str, str]:
        """Every current key and value, sorted by key."""
        records = await self._memory.store.record_list(
            self._memory.tenant_id, CORE_FACT, user_id=self.user_id
        )
        return {r.key or "": r.content for r in sorted(records, key=lambda r: r.key or "")}

    async def format_for_prompt(self) -> str:
        """``key: value`` lines sorted by key (``""`` when there are none)."""
        return "\n".join(f"{key}: {value}" for key, value in (await self.all()).items())

    async def close(self) -> None:
        """Close the SQLite file if these core facts opened it."""
        if self._owns:
            await self._memory.close()

    async def __aenter__(self) -> AsyncCoreFacts:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
