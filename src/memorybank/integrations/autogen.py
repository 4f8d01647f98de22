"""AutoGen: a ``Memory`` and a ``ChatCompletionContext`` on any memorybank store.

``pip install 'memorybank[autogen]'``::

    from autogen_agentchat.agents import AssistantAgent
    from memorybank import AsyncMemory
    from memorybank.integrations.autogen import (
        MemorybankChatCompletionContext,
        MemorybankMemory,
    )

    memory = AsyncMemory("sqlite:///agent.db").scoped(user_id="alice")
    agent = AssistantAgent(
        "assistant",
        model_client=client,
        memory=[MemorybankMemory(memory)],
        model_context=MemorybankChatCompletionContext(memory, "conversation-42"),
    )

``MemorybankMemory(memory)`` implements ``autogen_core.memory.Memory``: each
``MemoryContent`` is a memorybank document of the handle's user (its text is
what search finds; the content itself, its MIME type and metadata are kept
whole in the document's metadata, so ``query`` gives back what was added).
``query`` is memorybank's hybrid search (keyword, plus semantic when the memory
has an embedder), best first, each result's metadata carrying its ``score``;
an empty query gives the newest memories. ``update_context`` queries with the
model context's last message and adds what it finds as one ``SystemMessage``.
``clear`` deletes this memory's documents (those of its ``name``) that the handle
can see; ``close`` leaves the handle open (it is the caller's).

``MemorybankChatCompletionContext(memory, thread_id)`` keeps the agent's
conversation in one memorybank thread owned by the handle's user (fail closed:
another owner's thread raises ``ThreadForbidden``): each ``LLMMessage`` is one
entry (readable by ``history()``, search and the context builder) holding the
message whole, so ``get_messages`` returns exactly what was added.
``buffer_size`` keeps the last N messages, as AutoGen's
``BufferedChatCompletionContext`` does.

Both hold no scope logic: they act through the handle they are given, so
``memory.scoped(user_id=...)`` confines them. Give them an ``AsyncMemory``; a
``Memory`` works too, its calls run in a worker thread.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.integrations import _common as c
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.records import Document, Entry, Hit
from memorybank.rules import validate as v

try:
    from autogen_core import CancellationToken, FunctionCall, Image
    from autogen_core.memory import (
        Memory as AutogenMemory,
    )
    from autogen_core.memory import (
        MemoryContent,
        MemoryQueryResult,
        UpdateContextResult,
    )
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        LLMMessage,
        SystemMessage,
        UserMessage,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise c.needs_extra(__name__, "AutoGen", "autogen") from error

__all__ = ["MARK", "STATE_KEY", "MemorybankChatCompletionContext", "MemorybankMemory"]

#: The metadata key naming the ``MemorybankMemory`` a document belongs to.
MARK = "autogen_memory"
#: The metadata key (documents) and ``state`` key (entries) holding AutoGen's value.
STATE_KEY = "autogen"

_MESSAGES: TypeAdapter[LLMMessage] = TypeAdapter(LLMMessage)


# -- MemoryContent <-> document ----------------------------------------------


def _text(content: MemoryContent) -> str:
    """What search finds a memory by."""
    value = content.content
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, bytes):
        return f"binary content ({len(value)} bytes, {_mime(content)})"
    return f"image ({_mime(content)})"


def _mime(content: MemoryContent) -> str:
    mime = content.mime_type
    return mime if isinstance(mime, str) else str(mime.value)


def _dump(content: object) -> dict[str, Any]:
    if not isinstance(content, MemoryContent):
        raise InvalidInput(
            f"content must be an autogen MemoryContent, got {type(content).__name__}",
            field="content",
        )
    value = content.content
    body: dict[str, Any]
    if isinstance(value, str):
        body = {"text": value}
    elif isinstance(value, dict):
        body = {"json": value}
    elif isinstance(value, bytes):
        body = {"bytes": base64.b64encode(value).decode("ascii")}
    elif isinstance(value, Image):
        body = {"image": value.to_base64()}
    else:  # pragma: no cover - MemoryContent's own validation admits only the four
        raise InvalidInput(f"unsupported content {type(value).__name__}", field="content")
    return {"mime_type": _mime(content), "metadata": content.metadata, **body}


def _load(payload: object, document_id: str) -> MemoryContent:
    if not isinstance(payload, dict):
        raise InvalidInput(
            f"document {document_id!r} was not written by MemorybankMemory", field="document"
        )
    value: Any
    if "text" in payload:
        value = payload["text"]
    elif "json" in payload:
        value = payload["json"]
    elif "bytes" in payload:
        value = base64.b64decode(payload["bytes"])
    else:
        value = Image.from_base64(payload["image"])
    return MemoryContent(
        content=value, mime_type=payload["mime_type"], metadata=payload.get("metadata")
    )


def _query_text(query: object) -> str:
    if isinstance(query, str):
        return query
    if isinstance(query, MemoryContent):
        return _text(query)
    raise InvalidInput(
        f"query must be a string or a MemoryContent, got {type(query).__name__}", field="query"
    )


def _message_text(message: LLMMessage) -> str:
    """What a person would read of ``message``: its entry's content."""
    content = message.content
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, FunctionCall):
            pieces.append(f"{part.name}({part.arguments})")
        elif isinstance(part, FunctionExecutionResult):
            pieces.append(part.content)
    return "\n".join(pieces)


class MemorybankMemory(AutogenMemory):
    """AutoGen's ``Memory`` on a ``Memory`` or ``AsyncMemory`` handle (see the module).

    Args:
        memory: the handle to act through (a scoped handle confines it).
        name: the memory's name; ``clear`` and ``query`` see only this name's memories.
        k: how many memories ``query`` and ``update_context`` return at most.
        mode: memorybank's search mode (``"hybrid"``, ``"semantic"`` or ``"keyword"``).
        min_score: drop results scoring below it.
    """

    component_type = "memory"

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        name: str = "memorybank",
        k: int = 5,
        mode: str = "hybrid",
        min_score: float | None = None,
    ) -> None:
        self.memory = c.check_handle(memory)
        self.name = v.check_id(name, "name")
        self.k = v.check_limit(k, "k", allow_none=False)
        if mode not in ("hybrid", "semantic", "keyword"):
            raise ConfigurationError(f"mode must be hybrid, semantic or keyword, got {mode!r}")
        self.mode = mode
        self.min_score = min_score

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Store ``content`` as a document of the handle's user."""
        metadata = {MARK: self.name, STATE_KEY: _dump(content)}
        text = _text(content)
        await c.in_thread(self.memory, lambda m: m.documents.add(text, metadata=metadata))

    async def query(
        self,
        query: str | MemoryContent = "",
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The ``k`` memories best matching ``query`` (``k=`` overrides), best first.

        An empty query gives the ``k`` newest memories, oldest first.
        """
        text = _query_text(query)
        k = v.check_limit(kwargs.get("k", self.k), "k", allow_none=False)
        wanted = {MARK: self.name}
        if k == 0:
            return MemoryQueryResult(results=[])
        if not text.strip():
            docs: list[Document] = await c.in_thread(
                self.memory, lambda m: m.documents.list(filters=wanted)
            )
            return MemoryQueryResult(
                results=[_load(d.metadata.get(STATE_KEY), d.id) for d in docs[-k:]]
            )
        hits: list[Hit] = await c.in_thread(
            self.memory,
            lambda m: m.documents.search(
                text, k=k, mode=self.mode, min_score=self.min_score, filters=wanted
            ),
        )
        results = []
        for hit in hits:
            document = hit.document
            assert document is not None  # a documents-only search
            found = _load(document.metadata.get(STATE_KEY), document.id)
            found.metadata = {**(found.metadata or {}), "score": hit.score}
            results.append(found)
        return MemoryQueryResult(results=results)

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add the memories relevant to the context's last message as one ``SystemMessage``."""
        messages = await model_context.get_messages()
        query = _message_text(messages[-1]) if messages else ""
        found = await self.query(query)
        if found.results:
            heading = (
                "Relevant memory content:"
                if query.strip()
                else ("Relevant memory content (in chronological order):")
            )
            lines = [f"{i}. {_text(item)}" for i, item in enumerate(found.results, 1)]
            block = f"\n{heading}\n" + "\n".join(lines) + "\n"
            await model_context.add_message(SystemMessage(content=block))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Delete this memory's documents (of its ``name``) that the handle can see."""
        docs: list[Document] = await c.in_thread(
            self.memory, lambda m: m.documents.list(filters={MARK: self.name})
        )
        for doc in docs:
            await c.in_thread(self.memory, lambda m: m.documents.delete(doc.id))  # noqa: B023 (awaited here)

    async def close(self) -> None:
        """Nothing to release: the handle is the caller's to close."""


class MemorybankChatCompletionContext(ChatCompletionContext):
    """AutoGen's ``ChatCompletionContext`` in one memorybank thread (see the module).

    Args:
        memory: the handle to act through (a scoped handle confines it).
        thread_id: the thread holding the conversation (1 to 255 printable characters).
        buffer_size: ``get_messages`` returns the last ``buffer_size`` messages
            (``None``: all), never starting at a function result.
    """

    component_type = "chat_completion_context"

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        thread_id: str,
        *,
        buffer_size: int | None = None,
    ) -> None:
        super().__init__()
        self.memory = c.check_handle(memory)
        self.thread_id = v.check_id(thread_id, "thread_id")
        self.buffer_size = v.check_limit(buffer_size, "buffer_size")

    async def _entries(self) -> list[Entry]:
        return await c.off_loop(self.memory, lambda m: c.thread_entries(m, self.thread_id)) or []

    async def add_message(self, message: LLMMessage) -> None:
        """Append ``message`` to the thread (created on the first message)."""
        await self.add_messages([message])

    async def add_messages(self, messages: list[LLMMessage]) -> None:
        """Append ``messages`` in one all-or-nothing write."""
        rows = [_entry(m, f"messages[{i}]") for i, m in enumerate(messages)]
        await c.off_loop(self.memory, lambda m: c.add_to_thread(m, self.thread_id, rows))

    async def get_messages(self) -> list[LLMMessage]:
        """The thread's messages, oldest first (the last ``buffer_size`` when set)."""
        messages = [_message(e) for e in await self._entries()]
        if self.buffer_size is not None:
            messages = messages[-self.buffer_size :] if self.buffer_size else []
            if messages and isinstance(messages[0], FunctionExecutionResultMessage):
                messages = messages[1:]  # a result without the call that made it
        return messages

    async def clear(self) -> None:
        """Remove every message of the conversation (the thread stays)."""
        await c.off_loop(self.memory, lambda m: c.clear_thread(m, self.thread_id))

    async def save_state(self) -> Mapping[str, Any]:
        """``{"messages": [...]}``, as AutoGen's contexts save theirs (read from the thread)."""
        messages = [_message(e) for e in await self._entries()]
        return {"messages": [m.model_dump(mode="json") for m in messages]}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Make the thread hold exactly the saved messages."""
        try:
            messages = [_MESSAGES.validate_python(m) for m in state.get("messages", [])]
        except (ValidationError, TypeError, AttributeError) as error:
            raise InvalidInput(f"state is not a saved context: {error}", field="state") from error
        await self.clear()
        if messages:
            await self.add_messages(messages)


_ROLES: dict[type[Any], str] = {
    SystemMessage: "system",
    UserMessage: "user",
    AssistantMessage: "assistant",
    FunctionExecutionResultMessage: "user",
}


def _entry(message: object, field: str) -> dict[str, Any]:
    role = _ROLES.get(type(message))
    if role is None:
        raise InvalidInput(
            f"{field} must be an autogen LLMMessage, got {type(message).__name__}", field=field
        )
    assert isinstance(
        message, SystemMessage | UserMessage | AssistantMessage | FunctionExecutionResultMessage
    )
    return c.stored_entry(STATE_KEY, message.model_dump(mode="json"), role, _message_text(message))


def _message(entry: Entry) -> LLMMessage:
    payload = c.stored_payload(entry, STATE_KEY, "MemorybankChatCompletionContext", "thread_id")
    return _MESSAGES.validate_python(payload)
