"""Pydantic AI: message history kept in a memorybank thread, on any store.

``pip install 'memorybank[pydantic-ai]'``::

    from pydantic_ai import Agent
    from memorybank import Memory
    from memorybank.integrations.pydantic_ai import MemorybankHistory

    memory = Memory("sqlite:///agent.db").scoped(user_id="alice")
    history = MemorybankHistory(memory, "conversation-42")
    result = agent.run_sync("Hello", message_history=history.load())
    history.save(result.all_messages())   # or: history.append(result.new_messages())

One history is one memorybank thread (``thread_id``), created on the first
save and owned by the handle's user (fail closed: a thread of another owner
raises ``ThreadForbidden``). Each ``ModelMessage`` is one entry: a
``ModelRequest`` a ``user`` entry, a ``ModelResponse`` an ``assistant`` entry,
whose content is the message's text (prompts, answers, tool calls as
``name(arguments)``, tool returns), so the conversation is also found by
search and seen by ``history()`` and the context builder. The message itself
is kept whole in the entry's ``state`` as Pydantic AI serialises it
(``ModelMessagesTypeAdapter``), so ``load()`` gives back exactly the list that
was saved, every part, id and timestamp included.

The adapter holds no scope logic: it acts through the handle it is given, so
``memory.scoped(user_id=...)`` confines it. ``save`` never deletes unless asked:
given messages that do not start with the stored history (``result.new_messages()``
where ``result.all_messages()`` was meant) it raises ``HistoryDiverged`` and writes
nothing; ``append`` adds, ``save(messages, replace=True)`` replaces. On a ``Memory`` use ``load``,
``save``, ``append`` and ``clear``; on an ``AsyncMemory`` their twins ``aload``,
``asave``, ``aappend`` and ``aclear``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memorybank.errors import ConfigurationError, HistoryDiverged, InvalidInput
from memorybank.integrations import _common as c
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.records import Entry
from memorybank.rules import validate as v
from memorybank.tokens import Tokenizer, count_message_tokens

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryFeedbackPart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise c.needs_extra(__name__, "Pydantic AI", "pydantic-ai") from error

__all__ = ["STATE_KEY", "MemorybankHistory"]

#: The key of an entry's ``state`` that holds the serialised ``ModelMessage``.
STATE_KEY = "pydantic_ai"


def _text(message: ModelMessage) -> str:
    """What a person would read of ``message``: the text its entry is searched by."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart | TextPart):
            pieces.append(part.content)
        elif isinstance(part, UserPromptPart):
            if isinstance(part.content, str):
                pieces.append(part.content)
            else:
                pieces.extend(item for item in part.content if isinstance(item, str))
        elif isinstance(part, ToolCallPart):
            pieces.append(f"{part.tool_name}({part.args_as_json_str()})")
        elif isinstance(part, ToolReturnPart):
            pieces.append(part.model_response_str())
        elif isinstance(part, RetryPromptPart | RetryFeedbackPart):
            pieces.append(part.model_response())
    return "\n".join(pieces)


def _role(message: ModelMessage) -> str:
    return "assistant" if isinstance(message, ModelResponse) else "user"


def _dump(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidInput("messages must be a list of ModelMessage", field="messages")
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest | ModelResponse):
            raise InvalidInput(
                f"messages[{index}] must be a ModelRequest or ModelResponse,"
                f" got {type(message).__name__}",
                field="messages",
            )
    dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    return dumped


def _entries(messages: Sequence[ModelMessage], dumped: list[dict[str, Any]]) -> list[Any]:
    return [
        c.stored_entry(STATE_KEY, d, _role(m), _text(m))
        for m, d in zip(messages, dumped, strict=True)
    ]


def _stored(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The serialised messages of ``entries`` (an entry not written by this adapter refused)."""
    return [c.stored_payload(e, STATE_KEY, "MemorybankHistory", "thread_id") for e in entries]


def _normal(dumped: dict[str, Any]) -> Any:
    """A serialised message as Pydantic AI's own round trip gives it back (it turns a
    ``BinaryContent`` image into a ``BinaryImage``, ...): what ``load`` returns of it."""
    return ModelMessagesTypeAdapter.dump_python(
        ModelMessagesTypeAdapter.validate_python([dumped]), mode="json"
    )[0]


def _shared(stored: list[dict[str, Any]], given: list[dict[str, Any]]) -> int:
    """How many leading messages ``stored`` and ``given`` have in common (a message and
    its loaded form are the same message)."""
    shared = 0
    for old, new in zip(stored, given, strict=False):
        if old != new and _normal(old) != _normal(new):
            break
        shared += 1
    return shared


def _keep_or_refuse(
    thread_id: str, stored: list[dict[str, Any]], given: list[dict[str, Any]], replace: object
) -> int:
    """How many leading messages ``stored`` and ``given`` share; ``HistoryDiverged`` when
    that is not all of ``stored`` and the caller did not ask for a replace."""
    v.check_bool(replace, "replace")
    shared = _shared(stored, given)
    if shared < len(stored) and not replace:
        raise HistoryDiverged(
            f"thread {thread_id!r} holds {len(stored)} messages and the messages given start"
            f" with only {shared} of them: save() takes the whole history"
            " (result.all_messages()) and never deletes unless asked; add"
            " result.new_messages() with append(), or replace the stored history with"
            " save(messages, replace=True). Nothing was written.",
            stored=len(stored),
            shared=shared,
        )
    return shared


def _opens_turn(message: ModelMessage) -> bool:
    """A request that answers no tool call and retries nothing: a window may start at it."""
    return isinstance(message, ModelRequest) and not any(
        isinstance(part, ToolReturnPart | RetryPromptPart | RetryFeedbackPart)
        for part in message.parts
    )


def _trim(
    tokenizer: Tokenizer, messages: list[ModelMessage], max_tokens: int
) -> list[ModelMessage]:
    costs = [
        count_message_tokens(tokenizer, {"role": _role(m), "content": _text(m)}) for m in messages
    ]
    start, total = len(messages), 0
    while start > 0 and total + costs[start - 1] <= max_tokens:
        start -= 1
        total += costs[start]
    while start < len(messages) and not _opens_turn(messages[start]):
        start += 1  # never a tool return without the call before it
    if start == len(messages):  # not even the newest turn fits: keep that turn whole
        start = max(
            (i for i, m in enumerate(messages) if _opens_turn(m)),
            default=0,
        )
    return messages[start:]


class MemorybankHistory:
    """A Pydantic AI message history in one memorybank thread.

    Args:
        memory: a ``Memory`` or ``AsyncMemory`` handle (a tenant or scoped
            handle confines the history to its tenant and user).
        thread_id: the thread holding the history (1 to 255 printable characters).

    ``load`` returns the saved ``ModelMessage`` list exactly. ``save(messages)``
    takes the whole history (``result.all_messages()`` after a run given the
    loaded history): the stored history must be a prefix of ``messages``, and
    only the new messages are written, in one all-or-nothing write. Messages
    that do not start with the stored history (``result.new_messages()``, or a
    history rewritten by compaction or an edit) raise ``HistoryDiverged`` and
    write nothing: ``save`` never deletes unless asked. ``save(messages,
    replace=True)`` makes the thread hold exactly ``messages``: the new messages
    are written first, then the stored ones after the last message both share
    are deleted (bad input changes nothing; an interrupted save may leave
    both, never lose one). ``append(messages)`` adds ``result.new_messages()``
    without reading.
    """

    def __init__(self, memory: Memory | AsyncMemory, thread_id: str) -> None:
        self.memory = c.check_handle(memory)
        self.thread_id = v.check_id(thread_id, "thread_id")

    def _sync(self, verb: str) -> Memory:
        if not isinstance(self.memory, Memory):
            raise ConfigurationError(f"{verb}() needs a Memory; on an AsyncMemory use a{verb}()")
        return self.memory

    def _async(self, verb: str) -> AsyncMemory:
        if not isinstance(self.memory, AsyncMemory):
            raise ConfigurationError(f"a{verb}() needs an AsyncMemory; on a Memory use {verb}()")
        return self.memory

    # -- the logic, once for both handles (``_common.settled``) ------------

    async def _load(self, memory: c.Handle) -> list[ModelMessage]:
        entries = await c.thread_entries(memory, self.thread_id) or []
        return ModelMessagesTypeAdapter.validate_python(_stored(entries))

    async def _save(
        self, memory: c.Handle, messages: Sequence[ModelMessage], replace: bool
    ) -> None:
        dumped = _dump(messages)
        await c.settled(memory.ensure_thread(self.thread_id))
        entries = await c.settled(memory.entries.list(self.thread_id))
        shared = _keep_or_refuse(self.thread_id, _stored(entries), dumped, replace)
        # the new messages first (all or nothing), then the stale ones between: bad input
        # leaves the history as it was, and an interrupted save loses no message
        new = _entries(messages[shared:], dumped[shared:])
        await c.settled(memory.entries.add_many(self.thread_id, new))
        for entry in entries[shared:]:
            await c.settled(memory.entries.delete(self.thread_id, entry.id))

    async def _append(self, memory: c.Handle, messages: Sequence[ModelMessage]) -> None:
        await c.add_to_thread(memory, self.thread_id, _entries(messages, _dump(messages)))

    # -- sync (Memory) -----------------------------------------------------

    def load(self) -> list[ModelMessage]:
        """The saved messages, oldest first (``[]`` before the first save)."""
        return c.blocking(self._load(self._sync("load")))

    def save(self, messages: Sequence[ModelMessage], *, replace: bool = False) -> None:
        """Store the whole history ``messages``: write the ones after the stored history.

        ``HistoryDiverged`` (nothing written) when ``messages`` does not start with the
        stored history, unless ``replace=True``: then the thread holds exactly
        ``messages`` (see the class docstring).
        """
        c.blocking(self._save(self._sync("save"), messages, replace))

    def append(self, messages: Sequence[ModelMessage]) -> None:
        """Append ``messages`` (``result.new_messages()``) in one all-or-nothing write."""
        c.blocking(self._append(self._sync("append"), messages))

    def clear(self) -> None:
        """Remove every message of the history (the thread stays)."""
        c.blocking(c.clear_thread(self._sync("clear"), self.thread_id))

    # -- async (AsyncMemory) -----------------------------------------------

    async def aload(self) -> list[ModelMessage]:
        """``load`` on an ``AsyncMemory``."""
        return await self._load(self._async("load"))

    async def asave(self, messages: Sequence[ModelMessage], *, replace: bool = False) -> None:
        """``save`` on an ``AsyncMemory``."""
        await self._save(self._async("save"), messages, replace)

    async def aappend(self, messages: Sequence[ModelMessage]) -> None:
        """``append`` on an ``AsyncMemory``."""
        await self._append(self._async("append"), messages)

    async def aclear(self) -> None:
        """``clear`` on an ``AsyncMemory``."""
        await c.clear_thread(self._async("clear"), self.thread_id)

    # -- history processor -------------------------------------------------

    def trimmer(self, max_tokens: int) -> Callable[[list[ModelMessage]], list[ModelMessage]]:
        """A history processor keeping the newest ``max_tokens`` of history.

        Give it to the agent as ``capabilities=[ProcessHistory(history.trimmer(n))]``
        (``pydantic_ai.capabilities``; ``history_processors=[...]`` in releases
        that have that argument). The run's history then is the window, so store
        a run with ``append(result.new_messages())``: ``save(result.all_messages())``
        would make the stored history the window too.

        Messages are counted as their entries are (the memory's tokenizer, exact
        ``o200k_base`` by default). The window starts at a request that answers
        no tool call, so a tool return is never sent without its call; when not
        even the newest turn fits, that turn is kept whole (the model must see
        the prompt it answers). ``Agent(instructions=...)`` is sent with every
        request and is not part of the history.
        """
        budget = v.check_limit(max_tokens, "max_tokens", allow_none=False)
        tokenizer = self.memory._core.tokenizer

        def trim(messages: list[ModelMessage]) -> list[ModelMessage]:
            return _trim(tokenizer, messages, budget)

        return trim
