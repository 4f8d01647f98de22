"""LlamaIndex: a ``BaseChatStore`` on any memorybank store.

``pip install 'memorybank[llama-index]'``::

    from llama_index.core.memory import ChatMemoryBuffer
    from memorybank import Memory
    from memorybank.integrations.llama_index import MemorybankChatStore

    memory = Memory("sqlite:///agent.db").scoped(user_id="alice")
    store = MemorybankChatStore(memory)
    buffer = ChatMemoryBuffer.from_defaults(
        chat_store=store, chat_store_key="conversation-42", token_limit=3000
    )

One key is one memorybank thread (``thread_id == key``), created on the first
write and owned by the handle's user (fail closed: a thread of another owner
raises ``ThreadForbidden``). Each ``ChatMessage`` is one entry whose content is
the message's text, so the conversation is also found by search and seen by
``history()`` and the context builder; the message itself is kept whole in the
entry's ``state`` as LlamaIndex serialises it (``model_dump(mode="json")``:
role, ``additional_kwargs`` and every block), so ``get_messages`` returns
exactly what was stored. Roles map onto memorybank's: ``developer`` is a
``system`` entry, ``chatbot`` and ``model`` are ``assistant`` entries, and
``tool`` and ``function`` results are ``user`` entries (memorybank pairs a
tool entry with the assistant call that made it, which LlamaIndex keeps in
provider-specific ``additional_kwargs``); the message's own role is kept.

The adapter holds no scope logic: it acts through the handle it is given, so
``memory.scoped(user_id=...)`` confines it, and ``get_keys`` lists the keys of
that handle's user. With a ``Memory`` every method works (the async twins run
the sync ones in a thread, as LlamaIndex's base class does); with an
``AsyncMemory`` use the async twins (``aget_messages``, ``async_add_message``, ...).
``ChatMemoryBuffer`` calls the sync ``get_messages`` even from ``aget`` (in a
thread), so give the buffer a store on a ``Memory``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.integrations import _common as c
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.records import Entry, Thread

try:
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.llms import ChatMessage, MessageRole
    from llama_index.core.storage.chat_store.base import BaseChatStore
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise c.needs_extra(__name__, "LlamaIndex", "llama-index") from error

__all__ = ["STATE_KEY", "THREAD_MARK", "MemorybankChatStore"]

#: The key of an entry's ``state`` that holds the serialised ``ChatMessage``.
STATE_KEY = "llama_index"
#: The metadata of a thread this store created (what ``get_keys`` lists).
THREAD_MARK = {"integration": "llama_index.chat_store"}

_P = ParamSpec("_P")
_T = TypeVar("_T")
_ROLES = {
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.TOOL: "user",
    MessageRole.FUNCTION: "user",
}


def _entry(message: object, field: str = "message") -> dict[str, Any]:
    if not isinstance(message, ChatMessage):
        raise InvalidInput(
            f"{field} must be a llama_index ChatMessage, got {type(message).__name__}",
            field=field,
        )
    payload = c.dump_model(message, field)
    return c.stored_entry(
        STATE_KEY, payload, _ROLES.get(message.role, "user"), message.content or ""
    )


def _entries(messages: object) -> list[dict[str, Any]]:
    if not isinstance(messages, list | tuple):
        raise InvalidInput("messages must be a list of ChatMessage", field="messages")
    return [_entry(m, f"messages[{i}]") for i, m in enumerate(messages)]


def _message(entry: Entry) -> ChatMessage:
    return ChatMessage.model_validate(
        c.stored_payload(entry, STATE_KEY, "MemorybankChatStore", "key")
    )


def _index(idx: object, size: int) -> int | None:
    """``idx`` as a position in ``range(size)`` (negative from the end), else ``None``."""
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise InvalidInput(f"idx must be an integer, got {type(idx).__name__}", field="idx")
    position = idx + size if idx < 0 else idx
    return position if 0 <= position < size else None


def _keys(threads: list[Thread]) -> list[str]:
    marked = [t for t in threads if t.metadata == THREAD_MARK]
    return [t.id for t in sorted(marked, key=lambda t: (t.created_at, t.id))]


class MemorybankChatStore(BaseChatStore):
    """LlamaIndex's ``BaseChatStore`` on a ``Memory`` or ``AsyncMemory`` handle.

    Args:
        memory: the handle to act through (a tenant or scoped handle confines
            the store to its tenant and user).

    ``set_messages`` and ``add_message`` are all-or-nothing for their
    messages; ``set_messages`` writes the new messages before it deletes the
    old ones (bad input changes nothing). ``delete_messages`` removes the key
    (its thread) and returns its messages, ``None`` for an unknown key;
    ``delete_message(key, idx)`` takes Python indexes (negative from the end)
    and returns ``None`` out of range; ``delete_last_message`` returns
    ``None`` for an unknown or empty key. ``get_keys`` lists the keys this
    store created for the handle's user, oldest first.
    """

    _memory: Memory | AsyncMemory = PrivateAttr()

    def __init__(self, memory: Memory | AsyncMemory, **kwargs: Any) -> None:
        checked = c.check_handle(memory)
        super().__init__(**kwargs)
        self._memory = checked

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this component under."""
        return "MemorybankChatStore"

    @property
    def memory(self) -> Memory | AsyncMemory:
        """The handle this store acts through."""
        return self._memory

    def _sync(self, verb: str) -> Memory:
        if not isinstance(self._memory, Memory):
            twin = "async_add_message" if verb == "add_message" else f"a{verb}"
            raise ConfigurationError(f"{verb}() needs a Memory; on an AsyncMemory use {twin}()")
        return self._memory

    async def _either(self, method: Callable[_P, _T], *args: _P.args, **kw: _P.kwargs) -> _T:
        """An async method: the logic of the sync ``method`` (``_<name>``) awaited on an
        ``AsyncMemory``; on a ``Memory`` ``method`` itself in a worker thread."""
        if isinstance(self._memory, AsyncMemory):
            return cast("_T", await getattr(self, "_" + method.__name__)(self._memory, *args, **kw))
        return await asyncio.to_thread(method, *args, **kw)

    # -- the logic, once for both handles (``_common.settled``) ------------

    @staticmethod
    async def _thread(memory: c.Handle, key: str) -> str:
        await c.settled(memory.ensure_thread(key, metadata=THREAD_MARK))
        return key

    async def _set_messages(self, memory: c.Handle, key: str, messages: list[ChatMessage]) -> None:
        new = _entries(messages)
        old = await c.thread_entries(memory, key) or []
        await c.settled(memory.entries.add_many(await self._thread(memory, key), new))
        for entry in old:
            await c.settled(memory.entries.delete(key, entry.id))

    async def _get_messages(self, memory: c.Handle, key: str) -> list[ChatMessage]:
        return [_message(e) for e in await c.thread_entries(memory, key) or []]

    async def _add_message(self, memory: c.Handle, key: str, message: ChatMessage) -> None:
        new = _entry(message)
        await c.settled(memory.entries.add(await self._thread(memory, key), new))

    async def _delete_messages(self, memory: c.Handle, key: str) -> list[ChatMessage] | None:
        entries = await c.thread_entries(memory, key)
        if entries is None:
            return None
        messages = [_message(e) for e in entries]
        await c.settled(memory.threads.delete(key))
        return messages

    async def _delete_message(self, memory: c.Handle, key: str, idx: int) -> ChatMessage | None:
        entries = await c.thread_entries(memory, key) or []
        position = _index(idx, len(entries))
        if position is None:
            return None
        entry = entries[position]
        message = _message(entry)
        return message if await c.settled(memory.entries.delete(key, entry.id)) else None

    async def _get_keys(self, memory: c.Handle) -> list[str]:
        return _keys(await c.settled(memory.threads.list()))

    # -- sync (Memory) -----------------------------------------------------

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Make ``key`` hold exactly ``messages``."""
        c.blocking(self._set_messages(self._sync("set_messages"), key, messages))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """The messages of ``key``, oldest first (``[]`` for an unknown key)."""
        return c.blocking(self._get_messages(self._sync("get_messages"), key))

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Append ``message`` to ``key``."""
        c.blocking(self._add_message(self._sync("add_message"), key, message))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Remove ``key`` and return its messages (``None`` for an unknown key)."""
        return c.blocking(self._delete_messages(self._sync("delete_messages"), key))

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove and return the message at ``idx`` (``None`` when there is none)."""
        return c.blocking(self._delete_message(self._sync("delete_message"), key, idx))

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Remove and return the newest message (``None`` for an unknown or empty key)."""
        return self.delete_message(key, -1)

    def get_keys(self) -> list[str]:
        """The keys this store created for the handle's user, oldest first."""
        return c.blocking(self._get_keys(self._sync("get_keys")))

    # -- async (AsyncMemory; a Memory runs the sync methods in a thread) ---

    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """``set_messages``, async."""
        await self._either(self.set_messages, key, messages)

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """``get_messages``, async."""
        return await self._either(self.get_messages, key)

    async def async_add_message(self, key: str, message: ChatMessage) -> None:
        """``add_message``, async."""
        await self._either(self.add_message, key, message)

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        """``delete_messages``, async."""
        return await self._either(self.delete_messages, key)

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        """``delete_message``, async."""
        return await self._either(self.delete_message, key, idx)

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        """``delete_last_message``, async."""
        return await self.adelete_message(key, -1)

    async def aget_keys(self) -> list[str]:
        """``get_keys``, async."""
        return await self._either(self.get_keys)
