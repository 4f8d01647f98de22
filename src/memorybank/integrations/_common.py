"""What every framework adapter shares: the handle it takes, a call on either kind of
handle, and what it stored with an entry, read back (one rule for every adapter)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.records import Entry

__all__ = ["Handle", "blocking", "check_handle", "in_thread", "settled", "stored_payload"]

#: The handles an adapter acts through.
Handle = Memory | AsyncMemory
_T = TypeVar("_T")


def check_handle(memory: object) -> Handle:
    """``memory`` when it is a ``Memory`` or an ``AsyncMemory``, else ``ConfigurationError``."""
    if not isinstance(memory, Memory | AsyncMemory):
        raise ConfigurationError(
            f"memory must be a Memory or AsyncMemory, got {type(memory).__name__}"
        )
    return memory


async def in_thread(memory: Handle, call: Callable[[Any], Any]) -> Any:
    """``call(memory)``: awaited on an ``AsyncMemory``, in a worker thread on a ``Memory``."""
    if isinstance(memory, AsyncMemory):
        return await call(memory)
    return await asyncio.to_thread(call, memory)


async def settled(value: Any) -> Any:
    """What a verb of either handle returned: awaited when it is a coroutine (an
    ``AsyncMemory``'s), as it is otherwise (a ``Memory``'s). An adapter's logic is written
    once as a coroutine over ``settled(memory.verb(...))``: its async method awaits it, its
    sync method runs it with ``blocking``."""
    return await value if inspect.isawaitable(value) else value


def blocking(work: Coroutine[Any, Any, _T]) -> _T:
    """The result of ``work``, a coroutine over a ``Memory`` (it never suspends: every
    ``settled`` value is already there), run to its end without an event loop."""
    try:
        work.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    work.close()
    raise RuntimeError("a coroutine over a Memory suspended")  # pragma: no cover - a bug


def stored_payload(entry: Entry, key: str, writer: str, field: str) -> dict[str, Any]:
    """The framework message ``writer`` kept in ``entry.state[key]``; an entry written some
    other way (no such payload) is refused with ``InvalidInput`` naming ``field``, never
    silently dropped or guessed at."""
    payload = entry.state.get(key)
    if not isinstance(payload, dict):
        raise InvalidInput(
            f"entry {entry.id!r} of the thread was not written by {writer}", field=field
        )
    return payload
