"""What every framework adapter shares: the handle it takes, a call on either kind of
handle, its thread, and what it stores with an entry and reads back (one rule for all)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.records import Entry

if TYPE_CHECKING:  # pydantic comes with every framework, not with memorybank
    from pydantic import BaseModel

#: The handles an adapter acts through.
Handle = Memory | AsyncMemory
_T = TypeVar("_T")


def needs_extra(module: str, framework: str, extra: str) -> ImportError:
    """What an adapter raises when its framework (the extra ``extra``) is not installed."""
    return ImportError(f"{module} needs {framework}: pip install 'memorybank[{extra}]'")


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


async def off_loop(memory: Handle, work: Callable[[Handle], Coroutine[Any, Any, _T]]) -> _T:
    """``work(memory)``: awaited on an ``AsyncMemory``, in a worker thread on a ``Memory``."""
    if isinstance(memory, AsyncMemory):
        return await work(memory)
    return await asyncio.to_thread(lambda: blocking(work(memory)))


async def thread_entries(memory: Handle, thread_id: str) -> list[Entry] | None:
    """The entries of ``thread_id``, oldest first; ``None`` when there is no such thread."""
    if await settled(memory.threads.get(thread_id)) is None:
        return None
    entries: list[Entry] = await settled(memory.entries.list(thread_id))
    return entries


async def add_to_thread(memory: Handle, thread_id: str, rows: Sequence[Any]) -> None:
    """Append ``rows`` (all or nothing) to ``thread_id``, created on the first write."""
    await settled(memory.ensure_thread(thread_id))
    await settled(memory.entries.add_many(thread_id, list(rows)))


async def clear_thread(memory: Handle, thread_id: str) -> None:
    """Remove every entry of ``thread_id``, when there is one (the thread stays)."""
    if await settled(memory.threads.get(thread_id)) is not None:
        await settled(memory.entries.clear(thread_id))


def dump_model(model: BaseModel, field: str, **options: Any) -> dict[str, Any]:
    """``model`` as JSON; ``InvalidInput`` naming ``field`` when it cannot be serialised."""
    try:
        return model.model_dump(mode="json", **options)
    except ValueError as error:  # pydantic's serialisation errors are ValueErrors
        raise InvalidInput(f"{field} cannot be serialised: {error}", field=field) from error


def stored_entry(key: str, payload: Any, role: str, content: str, **more: Any) -> dict[str, Any]:
    """A framework message's entry: what people read, and the message whole in ``state``."""
    return {"role": role, "content": content, **more, "state": {key: payload}}


def stored_payload(
    entry: Entry, key: str, writer: str, field: str, within: str = "thread"
) -> dict[str, Any]:
    """The framework message ``writer`` kept in ``entry.state[key]``; an entry written some
    other way (no such payload) is refused with ``InvalidInput`` naming ``field``, never
    silently dropped or guessed at."""
    payload = entry.state.get(key)
    if not isinstance(payload, dict):
        raise InvalidInput(
            f"entry {entry.id!r} of the {within} was not written by {writer}", field=field
        )
    return payload
