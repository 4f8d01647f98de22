"""``memory.entries``: the messages of a thread's branches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memorybank.core._async.core import (
    MessageLike,
    Namespace,
    _check_title,
    _provider_dict,
    _require_branch,
    _require_thread,
)
from memorybank.core._async.embed import embed_entries
from memorybank.core._async.facts import AsyncFacts
from memorybank.errors import InvalidInput
from memorybank.records import Entry
from memorybank.rules import validate as v
from memorybank.rules.idempotency import keyed
from memorybank.rules.ids import new_id
from memorybank.rules.scope import check_owner
from memorybank.rules.window import drop_orphan_tool_results, strip_tool_calls, take_token_budget
from memorybank.runtime.concurrency import amaybe_await
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.contract.items import NewEntry
from memorybank.stores.contract.types import Visibility
from memorybank.tokens import count_message_tokens

if TYPE_CHECKING:
    from memorybank.core._async.embedding import _Job

_PAGE = 64
#: How many of a branch's newest entries a tool result's call is looked for in (when the
#: call is not in the same write). Providers want a result right after its call; this
#: leaves room for parallel calls and notes in between, and bounds the read.
TOOL_CALL_LOOKBACK = 256
#: The first, small read of that look-back (the rest is read only when the call is older).
_NEAR_CALLS = 16


class AsyncEntries(Namespace):
    """``memory.entries``: the messages of a thread's branches."""

    def _new_entry(
        self,
        message: MessageLike,
        *,
        token_count: int | None,
        created_at: datetime,
    ) -> NewEntry:
        clean = v.as_message(message, max_content_chars=self._core.max_content_chars)
        if token_count is None:
            token_count = count_message_tokens(self._core.tokenizer, _provider_dict(clean))
        else:
            v.check_limit(token_count, "token_count", allow_none=False)
        return NewEntry(
            id=new_id(),
            role=clean.role,
            content=clean.content,
            name=clean.name,
            tool_calls=clean.tool_calls,
            tool_call_id=clean.tool_call_id,
            metadata=dict(clean.metadata),
            state=dict(clean.state),
            token_count=token_count,
            created_at=created_at,
            extra=dict(clean.extra),
            item=None if clean.item is None else dict(clean.item),
        )

    async def add(
        self,
        thread_id: str,
        message: MessageLike,
        *,
        token_count: int | None = None,
        idempotency_key: str | None = None,
        created_at: datetime | None = None,
        branch: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> Entry:
        """Append one message (a ``Message`` or provider dict) to the thread.

        ``token_count`` defaults to the exact count with the configured tokenizer
        (message overhead included). A retry with the same ``idempotency_key``
        and the same message returns the stored entry instead of adding a second
        one; the key reused with a different message (role, content, name, tool
        calls, tool call id, metadata or state) raises ``Conflict`` and adds
        nothing. ``created_at`` may be in the past (imports); order is always
        the order of adding.
        """
        user_id = self._scope.user(user_id)
        now = self._core.now()
        key = v.check_optional_id(idempotency_key, "idempotency_key")
        entry = self._new_entry(
            message,
            token_count=token_count,
            created_at=now if created_at is None else v.check_time(created_at, "created_at"),
        )
        stored = await self._append(
            thread_id, keyed(key, [entry]), now=now, branch=branch, user_id=user_id
        )
        return stored[0]

    async def add_many(
        self,
        thread_id: str,
        messages: Sequence[MessageLike],
        *,
        idempotency_key: str | None = None,
        created_at: datetime | None = None,
        branch: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> list[Entry]:
        """Append several messages in one atomic write: all are stored or none.

        With ``idempotency_key``, a retry of the same messages returns the stored
        entries instead of adding them again, and a retry that differs (one
        message more or less, any message changed) raises ``Conflict`` and adds
        nothing. The key names the whole request: ``add(m, idempotency_key=k)``
        is the same request as ``add_many([m], idempotency_key=k)``. Message 0 is
        stored under ``key``, message ``i >= 1`` under ``key + "\x1f" + str(i)``
        (``Entry.idempotency_key``), which no key given to ``add`` can equal.
        """
        user_id = self._scope.user(user_id)
        if isinstance(messages, str | bytes | dict) or not isinstance(messages, Sequence):
            raise InvalidInput("messages must be a list of messages", field="messages")
        now = self._core.now()
        when = now if created_at is None else v.check_time(created_at, "created_at")
        key = v.check_optional_id(idempotency_key, "idempotency_key")
        new = [self._new_entry(message, token_count=None, created_at=when) for message in messages]
        if not new:
            return []
        return await self._append(
            thread_id, keyed(key, new), now=now, branch=branch, user_id=user_id
        )

    async def _append(
        self,
        thread_id: str,
        entries: list[NewEntry],
        *,
        now: datetime,
        branch: str | None,
        user_id: str | Unset | None,
    ) -> list[Entry]:
        await self._check_tool_results(thread_id, entries, branch=branch, user_id=user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        branch = v.check_optional_id(branch, "branch")
        service = self._core.embed_service if self._core.embedder is not None else None
        jobs: list[_Job] = []
        if service is not None:  # the journal first: a stop after the write loses nothing
            ids = [e.id for e in entries if e.content]
            jobs = await service.journal(self._tenant, "entry", thread_id, branch, ids)
        try:
            result = await self._core.store.entry_append(
                self._tenant, thread_id, entries, updated_at=now, branch=branch, owner=user_id
            )
        except BaseException:
            if service is not None:
                await service.abandon(jobs)
            raise
        new_ids = {e.id for e in entries}
        added = [e for e in result.entries if e.id in new_ids]  # not a replay's old entries
        if service is not None:
            if not added:  # a replay of an idempotent write: embedded the first time
                await service.abandon(jobs)
            else:
                await service.submit(jobs, branch=added[-1].branch)
        elif self._core.embedder is not None:
            await embed_entries(self._core.store, self._core.embedder, self._tenant, added)
        if self._core.background is not None:
            from memorybank.graph._async import formation

            formation.submit(self._core, self._tenant, result.thread, added)
        generate = self._core.generate_title
        if generate is not None and result.thread.title is None:
            first_user = next((e for e in result.entries if e.role == "user" and e.content), None)
            if first_user is not None and first_user.content is not None:
                title = await amaybe_await(generate(first_user.content))
                await self._core.store.thread_update(
                    self._tenant, thread_id, updated_at=now, title=_check_title(title)
                )
        return result.entries

    async def _check_tool_results(
        self,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        branch: str | None,
        user_id: str | Unset | None,
    ) -> None:
        """Refuse an orphan tool result: ``InvalidInput(field="tool_call_id")`` unless each
        tool result answers a call earlier in the same write or among the newest
        ``TOOL_CALL_LOOKBACK`` entries of the branch (read only when a result's call is not
        in the write: the newest ``_NEAR_CALLS`` first, the rest only if still missing).
        Ownership is checked first: a stranger learns nothing of the thread's calls."""
        called: set[str] = set()
        wanted: list[str] = []
        for entry in entries:
            if entry.role == "tool" and entry.tool_call_id is not None:
                if entry.tool_call_id not in called:
                    wanted.append(entry.tool_call_id)
            elif entry.tool_calls:
                called.update(call.id for call in entry.tool_calls)
        if not wanted:
            return
        thread_id = v.check_id(thread_id, "thread_id")
        branch = v.check_optional_id(branch, "branch")
        stored: set[str] = set()
        # The call is almost always among the newest few entries: read those first.
        for offset, limit in ((0, _NEAR_CALLS), (_NEAR_CALLS, TOOL_CALL_LOOKBACK - _NEAR_CALLS)):
            thread, tail = await self._core.store.entry_list(
                self._tenant,
                thread_id,
                branch=branch,
                limit=limit,
                offset=offset,
                newest_first=True,
            )
            check_owner(thread, user_id)
            stored.update(call.id for entry in tail for call in entry.tool_calls)
            if stored.issuperset(wanted) or len(tail) < limit:
                break
        for call_id in wanted:
            if call_id not in stored:
                raise InvalidInput(
                    f"tool_call_id {call_id!r} answers no tool call of this branch: a tool"
                    " result must follow the assistant entry that made the call (in the same"
                    f" write or among the branch's newest {TOOL_CALL_LOOKBACK} entries)",
                    field="tool_call_id",
                )

    async def _scan(
        self,
        thread_id: str,
        *,
        branch: str | None,
        limit: int | None,
        offset: int,
        before: datetime | None,
        after: datetime | None,
        max_tokens: int | None,
        include_tool_calls: bool,
        user_id: str | Unset | None,
    ) -> list[Entry]:
        """Read newest-first pages until the window is full; never the whole thread."""
        page_size = max(_PAGE, (limit or 0) + offset)
        raw_offset = 0
        skipped = 0
        window: list[Entry] = []  # newest first
        while True:
            thread, page = await self._core.store.entry_list(
                self._tenant,
                thread_id,
                branch=branch,
                limit=page_size,
                offset=raw_offset,
                before=before,
                after=after,
                newest_first=True,
            )
            check_owner(thread, user_id)
            branch = thread.current_branch if branch is None else branch
            raw_offset += len(page)
            rows = page if include_tool_calls else strip_tool_calls(page)
            for entry in rows:
                if skipped < offset:
                    skipped += 1
                    continue
                window.append(entry)
            full = limit is not None and len(window) >= limit
            if full:
                window = window[:limit]
            if max_tokens is not None:
                fitted, stopped = take_token_budget(window, max_tokens)
                if stopped:
                    window = fitted
                    full = True
            if full or len(page) < page_size:
                break
        window.reverse()
        return drop_orphan_tool_results(window)

    async def list(
        self,
        thread_id: str,
        *,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        order: Literal["asc", "desc"] = "asc",
        max_tokens: int | None = None,
        include_tool_calls: bool = True,
        branch: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> list[Entry]:
        """Entries of a branch (default: the current one), paged from the newest.

        ``offset`` skips the newest N, ``limit`` keeps the next newest N,
        ``max_tokens`` keeps the longest run of newest entries whose stored token
        counts fit; the page comes back in ``order`` (``"asc"``: oldest first).
        ``include_tool_calls=False`` drops tool results and strips tool calls
        (an assistant entry left empty is dropped) before paging. No window
        returns a tool result whose calling assistant entry it cut off, so a
        page may hold fewer than ``limit`` entries.
        """
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        limit = v.check_limit(limit, "limit")
        offset_ = v.check_limit(offset, "offset", allow_none=False)
        max_tokens = v.check_limit(max_tokens, "max_tokens")
        if order not in ("asc", "desc"):
            raise InvalidInput("order must be 'asc' or 'desc'", field="order")
        v.check_bool(include_tool_calls, "include_tool_calls")
        before = None if before is None else v.check_time(before, "before")
        after = None if after is None else v.check_time(after, "after")
        store = self._core.store
        if branch is not None:  # ownership first: a stranger learns no branch names
            await _require_thread(self._core, self._tenant, thread_id, user_id)
            await _require_branch(self._core, self._tenant, thread_id, v.check_id(branch, "branch"))

        if include_tool_calls and max_tokens is None:
            thread, rows = await store.entry_list(
                self._tenant,
                thread_id,
                branch=branch,
                limit=limit,
                offset=offset_,
                before=before,
                after=after,
            )
            check_owner(thread, user_id)
            rows = drop_orphan_tool_results(rows)
        else:
            rows = await self._scan(
                thread_id,
                branch=branch,
                limit=limit,
                offset=offset_,
                before=before,
                after=after,
                max_tokens=max_tokens,
                include_tool_calls=include_tool_calls,
                user_id=user_id,
            )
        if order == "desc":
            rows.reverse()
        return rows

    async def get(
        self,
        thread_id: str,
        entry_id: str,
        *,
        branch: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> Entry | None:
        """One entry of the branch (default: current), or ``None``."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.entry_get(
            self._tenant,
            thread_id,
            v.check_id(entry_id, "entry_id"),
            branch=v.check_optional_id(branch, "branch"),
        )

    async def delete(
        self,
        thread_id: str,
        entry_id: str,
        *,
        branch: str | None = None,
        user_id: str | Unset | None = UNSET,
        cascade_facts: bool = False,
    ) -> bool:
        """Delete one entry from the branch; whether it existed.

        ``cascade_facts=True`` also deletes the facts derived from it (those
        listing it in ``source_entries``), and the graph's observations and
        relations whose only provenance was it.
        """
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        removed = await self._core.store.entry_delete(
            self._tenant,
            thread_id,
            [v.check_id(entry_id, "entry_id")],
            branch=v.check_optional_id(branch, "branch"),
        )
        if removed and cascade_facts:
            from memorybank.graph._async import AsyncGraph

            # only what the caller may change: a user's delete leaves other users' facts and
            # graph alone, even when they cite her entry
            seen = None if isinstance(user_id, Unset) else Visibility(UNSET, user_id)
            await AsyncFacts(self._core, self._tenant)._cascade([entry_id], seen)
            await AsyncGraph(self._core, self._tenant)._cascade([entry_id], seen)
        return removed > 0

    async def clear(
        self, thread_id: str, *, branch: str | None = None, user_id: str | Unset | None = UNSET
    ) -> int:
        """Delete every entry of the branch (default: current); how many."""
        thread_id = (await self._thread(thread_id, user_id)).id
        return await self._core.store.entry_clear(
            self._tenant, thread_id, branch=v.check_optional_id(branch, "branch")
        )

    async def count(
        self, thread_id: str, *, branch: str | None = None, user_id: str | Unset | None = UNSET
    ) -> int:
        """Number of entries on the branch (default: current)."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.entry_count(
            self._tenant, thread_id, branch=v.check_optional_id(branch, "branch")
        )
