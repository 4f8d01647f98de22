"""Core facts: always-on key-value facts about a user, with the history of every value.

The reference's ``CoreFactsStore`` is one SQLite table per file, global to it;
here core facts are store records (so they live on any store), scoped by tenant
and user. ``set`` writes the value and its history row in ONE atomic
``record_put``; ``delete`` writes no history.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType

from memorybank.core._async.cas import retry_conflicts
from memorybank.errors import ConfigurationError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id, new_id
from memorybank.rules.scope import Scope
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset

__all__ = ["CORE_FACT", "CORE_FACT_HISTORY", "AsyncCoreFacts"]

CORE_FACT = "core_fact"
CORE_FACT_HISTORY = "core_fact_history"
DEFAULT_PATH = "memorybank.db"


def core_fact_id(user_id: str | None, key: str) -> str:
    """The record id of a core fact: unique per (user, key), at most 255 characters."""
    return compound_id(json.dumps([user_id, key], ensure_ascii=False))


class AsyncCoreFacts:
    """Key-value facts for one user (``user_id=None``: the tenant-wide set).

    ``path`` opens (and ``close`` closes) an SQLite file, ``./memorybank.db`` by
    default; ``memory`` uses that memory's store, tenant and scope instead (left
    open): on a ``memory.scoped(user_id=...)`` handle the set is that user's.
    Every verb also takes ``user_id=``, which may only repeat the set's user.

    ``CoreFacts`` is the synchronous class (a ``Memory``, or its own SQLite file),
    ``AsyncCoreFacts`` the awaitable one (an ``AsyncMemory``, or its own SQLite file).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        memory: AsyncMemory | None = None,
        *,
        user_id: str | Unset | None = UNSET,
    ) -> None:
        if memory is not None and path is not None:
            raise ConfigurationError("give CoreFacts a path or a memory, not both")
        if memory is not None and not isinstance(memory, AsyncMemory):
            expected = AsyncMemory.__name__  # the sync class takes a Memory
            raise ConfigurationError(
                f"memory must be a memorybank.{expected} for {type(self).__name__}"
                " (CoreFacts takes a Memory, AsyncCoreFacts an AsyncMemory)"
            )
        self._owns = memory is None
        if memory is None:
            location = str(path if path is not None else DEFAULT_PATH)
            memory = AsyncMemory(f"sqlite:///{location}")
        self._memory = memory
        self.user_id = memory.scope.owner(user_id)
        self._scope = Scope(self.user_id)

    def _id(self, key: str, user_id: object) -> str:
        """The record id of ``key``: unique per (user, key), at most 255 characters.

        ``user_id`` may only repeat the set's user (anything else is refused).
        """
        self._scope.user(user_id)
        return core_fact_id(self.user_id, v.check_id(key, "key"))

    async def set(self, key: str, value: str, *, user_id: str | Unset | None = UNSET) -> None:
        """Set ``key`` to ``value`` and append it to the key's history, atomically.

        Concurrent sets of one key all reach the history; the last to take effect
        is current (``Conflict`` only if the key keeps changing through every retry).
        """
        record_id = self._id(key, user_id)
        v.check_text(value, "value", max_chars=self._memory._core.max_content_chars)
        store, tenant = self._memory.store, self._memory.tenant_id

        async def step() -> None:
            existing = await store.record_get(tenant, CORE_FACT, record_id)
            now = self._memory._core.now()
            if existing is not None and now <= existing.updated_at:
                # History is ordered by time: never before the value this one replaces.
                now = existing.updated_at + timedelta(microseconds=1)
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
                revision=1 if existing is None else existing.revision + 1,
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
            guard = RecordGuard(
                CORE_FACT, record_id, None if existing is None else existing.revision
            )
            await store.record_put(tenant, [current, history], guard=guard)

        await retry_conflicts(step, f"core fact {key!r}")

    async def get(self, key: str, *, user_id: str | Unset | None = UNSET) -> str | None:
        """The current value of ``key``, or ``None``."""
        record = await self._memory.store.record_get(
            self._memory.tenant_id, CORE_FACT, self._id(key, user_id)
        )
        return None if record is None else record.content

    async def delete(self, key: str, *, user_id: str | Unset | None = UNSET) -> bool:
        """Forget the current value of ``key`` (its history stays); whether it was set."""
        removed = await self._memory.store.record_delete(
            self._memory.tenant_id, CORE_FACT, [self._id(key, user_id)]
        )
        return removed > 0

    async def history(
        self, key: str, *, user_id: str | Unset | None = UNSET
    ) -> list[tuple[str, datetime]]:
        """Every value ``key`` was set to, with when: ``[(value, set_at)]``, oldest first."""
        records = await self._memory.store.record_list(
            self._memory.tenant_id, CORE_FACT_HISTORY, key=self._id(key, user_id)
        )
        return [(r.content, r.created_at) for r in records]

    async def all(self, *, user_id: str | Unset | None = UNSET) -> dict[str, str]:
        """Every current key and value, sorted by key."""
        self._scope.user(user_id)
        records = await self._memory.store.record_list(
            self._memory.tenant_id, CORE_FACT, user_id=self.user_id
        )
        return {r.key or "": r.content for r in sorted(records, key=lambda r: r.key or "")}

    async def format_for_prompt(self, *, user_id: str | Unset | None = UNSET) -> str:
        """``key: value`` lines sorted by key (``""`` when there are none)."""
        items = await self.all(user_id=user_id)
        return "\n".join(f"{key}: {value}" for key, value in items.items())

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
