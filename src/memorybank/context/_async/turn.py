"""``memory.turn(...)``: load the context of one agent turn, save what it produced.

Ensure the thread (fail closed), build the context, let the agent run, then store the
input and the agent's messages in ONE atomic ``add_many``. Only ``StoreUnavailable`` is
survived (logged, ``on_error``, no memory for that turn): docs/context.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from memorybank.context._async.builder import AsyncContextBuilder
from memorybank.context.values import Context, ContextOptions
from memorybank.errors import StoreUnavailable
from memorybank.records import Entry, Message
from memorybank.rules import validate as v
from memorybank.runtime.concurrency import amaybe_await
from memorybank.runtime.log import logger
from memorybank.tokens import count_message_tokens

if TYPE_CHECKING:
    from memorybank.core._async.handle import AsyncMemoryHandle

__all__ = ["AsyncTurn", "OnError"]


OnError = Callable[[BaseException, Literal["load", "save"]], Awaitable[None] | None]


class AsyncTurn:
    """One turn: ``context`` (the built ``Context``), ``messages`` (the context plus
    the user input, ready for the model); ``add``/``add_many`` record what the
    agent produced; ``saved`` holds the stored entries after a successful exit.
    ``memory_available`` is false when the store was unreachable.
    """

    def __init__(
        self,
        memory: AsyncMemoryHandle,
        thread_id: str,
        *,
        user_id: str | None,
        agent_id: str,
        input: str,
        context: ContextOptions | None,
        system_prompt: str | None,
        load_history: bool,
        save_history: bool,
        on_error: OnError | None,
        raise_errors: bool,
    ) -> None:
        v.check_text(input, "input")
        self._memory = memory
        self.thread_id = thread_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.input = input
        # ``memory.turn``'s default budget: 4,000 tokens
        options = context if context is not None else ContextOptions(max_tokens=4000)
        self._builder = AsyncContextBuilder(options, memory)
        self._system_prompt = system_prompt
        self._load = load_history
        self._save = save_history
        self._on_error = on_error
        self._raise = raise_errors
        self.context = Context(
            messages=[], token_count=0, truncated=False, included_entries=0, total_entries=0
        )
        self.produced: list[Message | dict[str, Any]] = []
        self.saved: list[Entry] = []
        self.memory_available = True

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The context's messages followed by the user input."""
        return [*self.context.messages, {"role": "user", "content": self.input}]

    def add(self, message: Message | dict[str, Any]) -> None:
        """Record one message the agent produced (saved when the turn ends)."""
        self.produced.append(message)

    def add_many(self, messages: Sequence[Message | dict[str, Any]]) -> None:
        """Record several produced messages, in order."""
        self.produced.extend(messages)

    async def _unreachable(
        self, error: StoreUnavailable, operation: Literal["load", "save"]
    ) -> None:
        self.memory_available = False
        if self._on_error is not None:
            await amaybe_await(self._on_error(error, operation))
        if self._raise:
            raise error
        logger.warning(
            "memorybank: the store is unreachable (%s of thread %r); the agent runs without"
            " memory: %s",
            operation,
            self.thread_id,
            error,
        )

    def _bare_context(self) -> Context:
        options = self._builder.options
        messages: list[dict[str, Any]] = []
        tokens = 0
        if options.include_system_prompt and self._system_prompt:
            message = {"role": "system", "content": self._system_prompt}
            messages.append(message)
            tokens = count_message_tokens(self._memory._core.tokenizer, message)
        return Context(
            messages=messages,
            token_count=tokens,
            truncated=False,
            included_entries=0,
            total_entries=0,
        )

    async def __aenter__(self) -> AsyncTurn:
        try:
            await self._memory.ensure_thread(
                self.thread_id, user_id=self.user_id, agent_id=self.agent_id
            )
            self.context = await self._builder._build(
                self.thread_id,
                agent_id=self.agent_id,
                user_id=self.user_id,
                system_prompt=self._system_prompt,
                current_input=self.input,
                load_history=self._load,
                strict=True,
            )
        except StoreUnavailable as error:
            await self._unreachable(error, "load")
            self.context = self._bare_context()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None or not self._save:
            return
        messages = [{"role": "user", "content": self.input}, *self.produced]
        try:
            if not self.memory_available:  # the thread may not exist yet
                await self._memory.ensure_thread(
                    self.thread_id, user_id=self.user_id, agent_id=self.agent_id
                )
            self.saved = await self._memory.entries.add_many(
                self.thread_id, messages, user_id=self.user_id
            )
            self.memory_available = True
        except StoreUnavailable as error:
            await self._unreachable(error, "save")
