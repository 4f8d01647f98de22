"""Compaction: shrink a long thread, once, atomically, without splitting tool calls.

``compact`` follows the reference's ``CompactionService`` (docs/context.md), but the
store's ``entry_compact`` removes the old entries and inserts the summary in one
compare-and-swap write, applied only if the old entries are still those summarised: one
compaction of a thread at a time per process (a lock per thread), and across processes
the loser is a no-op. ``auto_compact`` applies the pre-rot thresholds (80%, 95%).
"""

from __future__ import annotations

import threading
import weakref
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from memorybank.context import values
from memorybank.context.values import CompactionResult, Summarize, SummarizeOptions
from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.records import Entry
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.runtime.concurrency import AsyncLock, amaybe_await
from memorybank.stores.contract._async.store import UNSET, NewEntry, Unset
from memorybank.tokens import count_message_tokens

if TYPE_CHECKING:
    from memorybank.core._async.handle import AsyncMemoryHandle

__all__ = ["COMPACTED_KEY", "SUMMARY_PREFIX", "AsyncCompactionService"]

SUMMARY_PREFIX = "[Conversation summary]\n"
#: ``state`` key holding the original of a reversibly compacted entry.
COMPACTED_KEY = "memorybank_compacted"
COMPACT_AT = 0.80
SUMMARIZE_AT = 0.95
HYBRID_SLIDE_MAX = 5
STRATEGIES = ("summary", "sliding-window", "hybrid")

_locks: weakref.WeakValueDictionary[tuple[int, str, str], AsyncLock] = weakref.WeakValueDictionary()
_locks_guard = threading.Lock()


def _thread_lock(memory: AsyncMemoryHandle, thread_id: str) -> AsyncLock:
    """One lock per thread of a store, shared by every service in this process."""
    key = (id(memory._core.store), memory.tenant_id, thread_id)
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = AsyncLock()
            _locks[key] = lock
        return lock


def is_summary(entry: Entry) -> bool:
    """Whether ``entry`` is a compaction summary."""
    return entry.role == "system" and bool(entry.metadata.get("compaction_summary"))


def original_message(entry: Entry) -> dict[str, Any]:
    """The entry's provider message, with its original content if compacted reversibly."""
    message = entry.to_message()
    saved = entry.state.get(COMPACTED_KEY)
    if isinstance(saved, dict) and "content" in saved:
        message["content"] = saved["content"]
    return message


class AsyncCompactionService(values.CompactionService):
    """Shrinks threads of ``memory`` with a user-supplied ``summarize(messages, options)``.

    ``summarize`` may be sync or async and returns the summary text; it is only
    needed by the ``summary`` and ``hybrid`` strategies and by ``auto_compact``.
    ``pre_rot_threshold`` (tokens) enables ``auto_compact``; ``recent_to_keep``
    newest entries always stay whole there.
    """

    def __init__(
        self,
        *,
        memory: AsyncMemoryHandle,
        summarize: Summarize | None = None,
        pre_rot_threshold: int | None = None,
        recent_to_keep: int = 10,
    ) -> None:
        if summarize is not None and not callable(summarize):
            raise ConfigurationError("summarize must be callable")
        self._memory = memory
        self._summarize = summarize
        self.pre_rot_threshold = v.check_limit(pre_rot_threshold, "pre_rot_threshold")
        self.recent_to_keep = v.check_limit(recent_to_keep, "recent_to_keep", allow_none=False)

    async def compact(
        self,
        thread_id: str,
        *,
        strategy: Literal["summary", "sliding-window", "hybrid"] = "summary",
        threshold: int,
        keep_recent: int,
        message_threshold: int | None = None,
        summary_model: str | None = None,
        summary_prompt: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> CompactionResult:
        """Compact ``thread_id`` if it reached ``threshold`` tokens (or ``message_threshold``).

        Keeps the ``keep_recent`` newest entries (more if the cut would separate
        a tool result from its call). ``NotFound`` if the thread is absent;
        ``ThreadForbidden`` if ``user_id`` (default: the memory's scope) is not
        its owner, before anything is read.
        """
        thread_id = v.check_id(thread_id, "thread_id")
        if strategy not in STRATEGIES:
            raise InvalidInput(
                f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}",
                field="strategy",
            )
        threshold_ = v.check_limit(threshold, "threshold", allow_none=False)
        keep = v.check_limit(keep_recent, "keep_recent", allow_none=False)
        messages = v.check_limit(message_threshold, "message_threshold")
        options = SummarizeOptions(model=summary_model, prompt=summary_prompt)
        await self._memory.threads.require(thread_id, user_id=user_id)
        async with _thread_lock(self._memory, thread_id):
            thread, entries = await self._read(thread_id)
            tokens = sum(e.token_count for e in entries)
            reached = tokens >= threshold_ or (messages is not None and len(entries) >= messages)
            if len(entries) <= keep or not reached:
                return CompactionResult(thread_id, len(entries), len(entries))
            return await self._apply(
                thread.current_branch, thread_id, entries, keep, strategy, options
            )

    async def auto_compact(
        self,
        thread_id: str,
        *,
        summary_model: str | None = None,
        summary_prompt: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> CompactionResult:
        """Apply the automatic thresholds of ``pre_rot_threshold`` to ``thread_id``.

        At 95% of it the entries older than the ``recent_to_keep`` newest are
        summarised (from their original text); at 80% their content is replaced
        by a short reference and the original kept in ``state`` (see
        ``restore``). Below 80% nothing happens.
        """
        if self.pre_rot_threshold is None:
            raise ConfigurationError("auto_compact needs CompactionService(pre_rot_threshold=...)")
        thread_id = (await self._memory.threads.require(thread_id, user_id=user_id)).id
        limit = self.pre_rot_threshold
        async with _thread_lock(self._memory, thread_id):
            thread, entries = await self._read(thread_id)
            tokens = sum(e.token_count for e in entries)
            if len(entries) <= self.recent_to_keep or tokens < COMPACT_AT * limit:
                return CompactionResult(thread_id, len(entries), len(entries))
            if tokens >= SUMMARIZE_AT * limit:
                options = SummarizeOptions(model=summary_model, prompt=summary_prompt)
                return await self._apply(
                    thread.current_branch,
                    thread_id,
                    entries,
                    self.recent_to_keep,
                    "summary",
                    options,
                )
            return await self._shrink(thread.current_branch, thread_id, entries)

    async def restore(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> int:
        """Put back the original content of reversibly compacted entries; how many.

        Same thread rule as ``compact``.
        """
        thread_id = (await self._memory.threads.require(thread_id, user_id=user_id)).id
        async with _thread_lock(self._memory, thread_id):
            thread, entries = await self._read(thread_id)
            changes: list[tuple[str, str | None, dict[str, Any], int]] = []
            for entry in entries:
                saved = entry.state.get(COMPACTED_KEY)
                if not isinstance(saved, dict):
                    continue
                state = {k: x for k, x in entry.state.items() if k != COMPACTED_KEY}
                changes.append((entry.id, saved["content"], state, int(saved["token_count"])))
            if not changes:
                return 0
            return await self._memory._core.store.entry_update(
                self._memory.tenant_id, thread_id, branch=thread.current_branch, changes=changes
            )

    # -- internals ---------------------------------------------------------------------

    async def _read(self, thread_id: str) -> tuple[Any, list[Entry]]:
        return await self._memory._core.store.entry_list(self._memory.tenant_id, thread_id)

    async def _apply(
        self,
        branch: str,
        thread_id: str,
        entries: list[Entry],
        keep: int,
        strategy: str,
        options: SummarizeOptions,
    ) -> CompactionResult:
        unchanged = CompactionResult(thread_id, len(entries), len(entries))
        cut = len(entries) - keep
        while 0 < cut < len(entries) and entries[cut].role == "tool":
            cut -= 1  # never keep a tool result without the call before it
        removed, kept = entries[:cut], entries[cut:]
        if not removed or all(is_summary(e) for e in removed):
            return unchanged  # nothing new to compact (never a summary of a summary alone)
        if strategy == "hybrid":
            strategy = "sliding-window" if len(removed) <= HYBRID_SLIDE_MAX else "summary"
        core = self._memory._core
        now = core.now()
        summary: NewEntry | None = None
        if strategy == "summary":
            if self._summarize is None:
                raise ConfigurationError(
                    "the summary strategy needs CompactionService(summarize=...)"
                )
            text = await amaybe_await(
                self._summarize([original_message(e) for e in removed], options)
            )
            if not isinstance(text, str) or not text.strip():
                raise InvalidInput("summarize must return a non-empty string", field="summarize")
            content = v.check_text(
                SUMMARY_PREFIX + text, "summarize", max_chars=core.max_content_chars
            )
            summary = NewEntry(
                id=new_id(),
                role="system",
                content=content,
                name=None,
                tool_calls=(),
                tool_call_id=None,
                metadata={
                    "compaction_summary": True,
                    "compacted_at": now.isoformat(),
                    "compacted_entries": len(removed),
                },
                state={},
                token_count=count_message_tokens(
                    core.tokenizer, {"role": "system", "content": content}
                ),
                created_at=kept[0].created_at - timedelta(milliseconds=1) if kept else now,
            )
        applied = await core.store.entry_compact(
            self._memory.tenant_id,
            thread_id,
            branch=branch,
            through_position=removed[-1].position,
            expected_ids=[e.id for e in removed],
            summary=summary,
            updated_at=now,
        )
        if not applied:  # another process compacted first: this one is a no-op
            return unchanged
        return CompactionResult(
            thread_id,
            len(entries),
            len(kept) + (summary is not None),
            summary.token_count if summary is not None else 0,
            strategy,
        )

    async def _shrink(self, branch: str, thread_id: str, entries: list[Entry]) -> CompactionResult:
        """Reversible compaction of the entries older than the ``recent_to_keep`` newest."""
        core = self._memory._core
        older = entries[: len(entries) - self.recent_to_keep]
        changes: list[tuple[str, str | None, dict[str, Any], int]] = []
        for entry in older:
            if entry.content is None or COMPACTED_KEY in entry.state or is_summary(entry):
                continue
            if entry.item is not None or "content" in entry.extra:
                # Kept verbatim (a Responses item, or content parts): ``to_message()``
                # returns the payload, so swapping ``content`` would shrink nothing.
                continue
            reference = f"[compacted: {entry.token_count} tokens]"
            message = entry.to_message()
            message["content"] = reference
            tokens = count_message_tokens(core.tokenizer, message)
            if tokens >= entry.token_count:
                continue
            state = dict(entry.state)
            state[COMPACTED_KEY] = {"content": entry.content, "token_count": entry.token_count}
            changes.append((entry.id, reference, state, tokens))
        if changes:
            await core.store.entry_update(
                self._memory.tenant_id, thread_id, branch=branch, changes=changes
            )
        return CompactionResult(
            thread_id, len(entries), len(entries), 0, "reversible" if changes else "none"
        )
