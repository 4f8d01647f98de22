"""What every part of the conformance suite shares: ids, a deterministic clock, fixtures."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Entry
from memorybank.runtime.concurrency import AsyncStep
from memorybank.stores.contract._async.store import AppendResult, AsyncStore, NewEntry, Record
from memorybank.stores.contract.capabilities import Capability

__all__ = ["ContractBase", "requires"]


def requires(*capabilities: Capability) -> pytest.MarkDecorator:
    """Mark a case as needing ``capabilities``: it is skipped, naming them, on a store
    that does not claim them all (``pytest.mark.requires``; see ``memorybank.testing.plugin``)."""
    return pytest.mark.requires(*capabilities)


def missing_capabilities(node: pytest.Item, store: object) -> list[str]:
    """The capabilities the ``requires`` marks of ``node`` name that ``store`` does not claim."""
    claimed: frozenset[str] = getattr(store, "capabilities", frozenset())
    wanted = [str(c) for mark in node.iter_markers("requires") for c in mark.args]
    return [c for c in dict.fromkeys(wanted) if c not in claimed]


_WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _id(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def _outcome(call: AsyncStep[Any]) -> Any:
    """What ``call`` returned, or the exception it raised."""
    try:
        return await call()
    except Exception as error:
        return error


class _StepClock:
    """A deterministic clock: each call is 1 ms after the previous (from ``start``),
    microseconds kept."""

    def __init__(self, start: datetime = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)) -> None:
        self._ticks = itertools.count()
        self.start = start

    def __call__(self) -> datetime:
        return self.start + timedelta(milliseconds=next(self._ticks))


def _new_entry(
    entry_id: str,
    content: str,
    *,
    key: str | None = None,
    fingerprint: str | None = None,
    when: datetime = _WHEN,
) -> NewEntry:
    """A user message to hand to ``entry_append`` directly (the cases that test what a
    store itself refuses)."""
    return NewEntry(
        id=entry_id,
        role="user",
        content=content,
        name=None,
        tool_calls=(),
        tool_call_id=None,
        metadata={},
        state={},
        token_count=3,
        created_at=when,
        idempotency_key=key,
        fingerprint=fingerprint,
    )


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }


class ContractBase:
    """The ``memory`` fixture and the helpers the cases use. Subclasses provide ``store``."""

    @pytest.fixture(autouse=True)
    def _required_capabilities(self, request: pytest.FixtureRequest, store: AsyncStore) -> None:
        """Skip a case marked ``requires(X)`` on a store that does not claim ``X``."""
        missing = missing_capabilities(request.node, store)
        if missing:
            known = {c.value: f"Capability.{c.name}" for c in Capability}
            names = ", ".join(known.get(c, repr(c)) for c in missing)
            pytest.skip(f"store does not claim {names}")

    @pytest.fixture
    async def memory(self, store: AsyncStore) -> AsyncIterator[AsyncMemory]:
        memory = AsyncMemory(store, clock=_StepClock())
        yield memory
        await memory.close()

    async def _thread(self, memory: AsyncMemory, **kwargs: Any) -> str:
        thread = await memory.threads.create(thread_id=_id(), **kwargs)
        return thread.id

    async def _fill(self, memory: AsyncMemory, thread_id: str, n: int) -> list[str]:
        ids = []
        for i in range(n):
            role = "user" if i % 2 == 0 else "assistant"
            entry = await memory.remember(thread_id, role, f"message {i}")
            ids.append(entry.id)
        return ids

    def _summary(
        self,
        created_at: datetime,
        token_count: int,
        content: str = "summary",
        metadata: dict[str, Any] | None = None,
    ) -> NewEntry:
        """A compaction summary entry (for ``entry_compact``) made at ``created_at``."""
        return NewEntry(
            id=_id("e"),
            role="system",
            content=content,
            name=None,
            tool_calls=(),
            tool_call_id=None,
            metadata=metadata or {},
            state={},
            token_count=token_count,
            created_at=created_at,
        )

    async def _compact(
        self,
        store: AsyncStore,
        tenant: str,
        tid: str,
        entries: list[Entry],
        through: int,
        expected_ids: list[str],
        summary: NewEntry | None,
    ) -> bool:
        """``entry_compact`` of main's ``entries`` up to ``entries[through]``, as of the last."""
        return await store.entry_compact(
            tenant,
            tid,
            branch="main",
            through_position=entries[through].position,
            expected_ids=expected_ids,
            summary=summary,
            updated_at=entries[-1].created_at,
        )

    async def _append(
        self, store: AsyncStore, tenant: str, tid: str, batch: list[NewEntry], **kwargs: Any
    ) -> AppendResult:
        """``entry_append`` of ``batch`` straight to ``store``, at ``_WHEN``."""
        return await store.entry_append(tenant, tid, batch, updated_at=_WHEN, **kwargs)

    def _record(self, kind: str, content: str, **kwargs: Any) -> Record:
        when = kwargs.pop("created_at", _WHEN)
        return Record(
            kind=kind,
            id=kwargs.pop("id", _id("r")),
            agent_id=kwargs.pop("agent_id", None),
            user_id=kwargs.pop("user_id", None),
            content=content,
            data=kwargs.pop("data", {}),
            created_at=when,
            updated_at=when,
            key=kwargs.pop("key", None),
            expires_at=kwargs.pop("expires_at", None),
        )
