"""AsyncMemory: the object users create. Validation, scoping and windows live here, once.

This file is the single source of both APIs: ``memorybank/_sync/memory.py``
(``Memory``) is generated from it by ``scripts/gen_sync.py``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from memorybank import _validate as v
from memorybank._async.stores.base import UNSET, AsyncStore, NewEntry, Unset
from memorybank._async.stores.open import open_store
from memorybank._concurrency import amaybe_await
from memorybank._ids import new_id
from memorybank._window import drop_orphan_tool_results, strip_tool_calls, take_token_budget
from memorybank.errors import ConfigurationError, Conflict, InvalidInput, NotFound, ThreadForbidden
from memorybank.records import Branch, Entry, Hit, Message, Summary, Thread
from memorybank.tokens import Tokenizer, count_message_tokens, get_tokenizer

if TYPE_CHECKING:
    # Long-term memory, recall and turns load on first use (see the properties and
    # methods below): a script that only reads history starts in half the time.
    from memorybank._async.documents import AsyncDocuments
    from memorybank._async.facts import AsyncFacts
    from memorybank._async.search import SearchMode
    from memorybank._async.turn import AsyncTurn, OnError
    from memorybank._longterm import Context, ContextOptions, Strategy
    from memorybank.embeddings.base import Embedder
    from memorybank.retrieval import SearchOptions

__all__ = [
    "AsyncBranches",
    "AsyncEntries",
    "AsyncMemory",
    "AsyncSnapshots",
    "AsyncSummaries",
    "AsyncThreads",
    "AsyncWorkingMemory",
]

DEFAULT_URL = "sqlite:///./memorybank.db"
DEFAULT_TENANT = "default"
#: Largest ``content`` accepted by default (characters); see ``max_content_chars``.
MAX_CONTENT_CHARS = 1_000_000
_PAGE = 64

TitleFn = Callable[[str], str | Awaitable[str]]
Clock = Callable[[], datetime]
MessageLike = Message | dict[str, Any]


def _system_clock() -> datetime:
    return datetime.now(UTC)


class _Core:
    """What a tenant handle shares with its parent: the store and the options."""

    def __init__(
        self,
        store: AsyncStore,
        *,
        owns_store: bool,
        tokenizer: Tokenizer,
        generate_title: TitleFn | None,
        clock: Clock,
        max_content_chars: int,
        embedder: Embedder | None = None,
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.owns_store = owns_store
        self.tokenizer = tokenizer
        self.generate_title = generate_title
        self.clock = clock
        self.max_content_chars = max_content_chars

    def now(self) -> datetime:
        return v.check_time(self.clock(), "clock()")


def _owner_check(thread: Thread, user_id: str | Unset | None) -> None:
    """Fail closed: a named user must be the thread's owner (``None`` names "no owner")."""
    if not isinstance(user_id, Unset) and thread.user_id != user_id:
        raise ThreadForbidden()


class AsyncMemory:
    """Memory for agents: threads, entries, branches, working memory, snapshots, summaries.

    Args:
        url: where to store. ``None`` reads ``$MEMORYBANK_URL``, else
            ``sqlite:///./memorybank.db``. ``memory://`` is volatile;
            ``sqlite:///relative.db`` and ``sqlite:////abs/path.db`` follow
            SQLAlchemy. A store object may be passed instead (you keep owning it).
        tokenizer: counts tokens for ``max_tokens`` windows: a ``Tokenizer``, an
            encoding or model name. Default: exact ``o200k_base``.
        generate_title: ``f(first_user_message) -> str`` (sync or async); names an
            untitled thread when its first user message is stored.
        clock: returns the current time (timezone-aware); inject for tests.
        max_content_chars: largest message content accepted.
        embedder: turns text into vectors for semantic search (see
            ``memorybank.embeddings``); ``None`` disables semantic signals.

    Use as ``async with AsyncMemory(...) as memory:`` or call ``await close()``.
    """

    def __init__(
        self,
        url: str | AsyncStore | None = None,
        *,
        tokenizer: Tokenizer | str | None = None,
        generate_title: TitleFn | None = None,
        clock: Clock | None = None,
        max_content_chars: int = MAX_CONTENT_CHARS,
        tenant_id: str = DEFAULT_TENANT,
        embedder: Embedder | None = None,
    ) -> None:
        if isinstance(url, AsyncStore):
            store, owns = url, False
        elif url is None or isinstance(url, str):
            store, owns = open_store(url or os.environ.get("MEMORYBANK_URL") or DEFAULT_URL), True
        else:
            raise ConfigurationError(f"url must be a string or a store, got {type(url).__name__}")
        if isinstance(tokenizer, str) or tokenizer is None:
            tokenizer = get_tokenizer(tokenizer)
        elif not callable(getattr(tokenizer, "count", None)):
            raise ConfigurationError("tokenizer must have a count(text) -> int method")
        if max_content_chars <= 0:
            raise ConfigurationError("max_content_chars must be positive")
        core = _Core(
            store,
            owns_store=owns,
            tokenizer=tokenizer,
            generate_title=generate_title,
            clock=clock or _system_clock,
            max_content_chars=max_content_chars,
            embedder=embedder,
        )
        self._init(core, v.check_id(tenant_id, "tenant_id"))

    def _init(self, core: _Core, tenant: str) -> None:
        self._core = core
        self.tenant_id = tenant
        self.threads = AsyncThreads(core, tenant)
        self.entries = AsyncEntries(core, tenant)
        self.branches = AsyncBranches(core, tenant)
        self.snapshots = AsyncSnapshots(core, tenant)
        self.summaries = AsyncSummaries(core, tenant)

    @functools.cached_property
    def facts(self) -> AsyncFacts:
        """``memory.facts``: long-term facts (see ``memorybank._async.facts``)."""
        from memorybank._async.facts import AsyncFacts

        return AsyncFacts(self._core, self.tenant_id)

    @functools.cached_property
    def documents(self) -> AsyncDocuments:
        """``memory.documents``: searchable documents (see ``memorybank._async.documents``)."""
        from memorybank._async.documents import AsyncDocuments

        return AsyncDocuments(self._core, self.tenant_id)

    @property
    def store(self) -> AsyncStore:
        """The store this memory writes to."""
        return self._core.store

    def tenant(self, tenant_id: str) -> AsyncMemory:
        """A handle confined to ``tenant_id``, sharing this memory's store and options."""
        handle = object.__new__(type(self))
        handle._init(self._core, v.check_id(tenant_id, "tenant_id"))
        return handle

    async def close(self) -> None:
        """Close the store if this memory opened it (from a URL)."""
        if self._core.owns_store:
            await self._core.store.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- conversation verbs ------------------------------------------------

    async def ensure_thread(
        self, thread_id: str | None, *, user_id: str | None, agent_id: str | None = None
    ) -> Thread:
        """The thread, created (owned by ``user_id``) when absent.

        Fails closed: an existing thread whose owner is not ``user_id`` raises
        ``ThreadForbidden`` (also for an unowned thread and a named user, and
        the other way round).
        """
        if thread_id is not None:
            thread = await self.threads.get(thread_id)
            if thread is not None:
                _owner_check(thread, user_id)
                return thread
        try:
            return await self.threads.create(
                thread_id=thread_id, user_id=user_id, agent_id=agent_id
            )
        except Conflict:
            if thread_id is None:
                raise
        thread = await self.threads.get(thread_id)  # created concurrently
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        _owner_check(thread, user_id)
        return thread

    async def remember(
        self,
        thread_id: str,
        role: str,
        content: str | None,
        *,
        name: str | None = None,
        tool_calls: Sequence[Any] = (),
        tool_call_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        state: dict[str, Any] | None = None,
        token_count: int | None = None,
        idempotency_key: str | None = None,
        created_at: datetime | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> Entry:
        """Append one message to the thread's current branch and bump its ``updated_at``."""
        message = {
            "role": role,
            "content": content,
            "name": name,
            "tool_calls": list(tool_calls),
            "tool_call_id": tool_call_id,
            "metadata": metadata,
            "state": state,
        }
        return await self.entries.add(
            thread_id,
            message,
            token_count=token_count,
            idempotency_key=idempotency_key,
            created_at=created_at,
            user_id=user_id,
        )

    async def history(
        self, thread_id: str, *, last: int = 20, user_id: str | Unset | None = UNSET
    ) -> list[dict[str, Any]]:
        """The last ``last`` messages, oldest first, as provider-shaped dicts."""
        v.check_limit(last, "last", allow_none=False)
        entries = await self.entries.list(thread_id, limit=last, user_id=user_id)
        return [entry.to_message() for entry in entries]

    async def build_context(
        self,
        thread_id: str,
        *,
        agent_id: str,
        max_tokens: int,
        user_id: str | None = None,
        system_prompt: str | None = None,
        current_input: str | None = None,
        strategy: Strategy = "recent",
        reserve_tokens: int | None = None,
        include_system_prompt: bool = True,
        include_facts: bool = False,
        include_semantic_context: bool = False,
        include_graph_context: bool = False,
    ) -> Context:
        """The messages for one model call, within ``max_tokens`` (see ``ContextBuilder``)."""
        from memorybank._async.context import AsyncContextBuilder
        from memorybank._longterm import ContextOptions

        options = ContextOptions(
            max_tokens=max_tokens,
            strategy=strategy,
            reserve_tokens=reserve_tokens,
            include_system_prompt=include_system_prompt,
            include_facts=include_facts,
            include_semantic_context=include_semantic_context,
            include_graph_context=include_graph_context,
        )
        return await AsyncContextBuilder(options, self).build(
            thread_id,
            agent_id=agent_id,
            user_id=user_id,
            system_prompt=system_prompt,
            current_input=current_input,
        )

    def turn(
        self,
        thread_id: str,
        *,
        user_id: str | None,
        agent_id: str,
        input: str,
        context: ContextOptions | None = None,
        system_prompt: str | None = None,
        load_history: bool = True,
        save_history: bool = True,
        on_error: OnError | None = None,
        raise_errors: bool = False,
    ) -> AsyncTurn:
        """One agent turn: ``async with memory.turn(...) as turn:``.

        On entry the thread is ensured (created owned by ``user_id``) and the
        context built with ``context`` (default: 4000 tokens, ``recent``); the
        agent reads ``turn.messages`` and records its output with
        ``turn.add(message)``. On a normal exit the input and the recorded
        messages are saved in one atomic write. An unreachable store
        (``StoreUnavailable``) is logged and reported to ``on_error(error,
        "load" | "save")``, and the agent runs without memory, unless
        ``raise_errors``.
        """
        from memorybank._async.turn import AsyncTurn
        from memorybank._longterm import ContextOptions

        return AsyncTurn(
            self,
            v.check_id(thread_id, "thread_id"),
            user_id=v.check_optional_id(user_id, "user_id"),
            agent_id=v.check_id(agent_id, "agent_id"),
            input=input,
            context=context if context is not None else ContextOptions(max_tokens=4000),
            system_prompt=system_prompt,
            load_history=load_history,
            save_history=save_history,
            on_error=on_error,
            raise_errors=raise_errors,
        )

    def working(self, run_id: str) -> AsyncWorkingMemory:
        """Working memory of one run: ``async with memory.working(run_id) as wm``.

        Cleared when the block exits (also on error).
        """
        return AsyncWorkingMemory(self._core, self.tenant_id, v.check_id(run_id, "run_id"))

    async def forget_user(self, user_id: str) -> int:
        """Erase everything derived from ``user_id`` in this tenant; how many records went."""
        return await self._core.store.forget_user(self.tenant_id, v.check_id(user_id, "user_id"))

    # -- recall --------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: SearchMode = "hybrid",
        thread_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        kinds: Sequence[str] = ("entries", "documents"),
        min_score: float | None = None,
        filters: dict[str, Any] | None = None,
        options: SearchOptions | None = None,
    ) -> list[Hit]:
        """The ``k`` best entries and documents for ``query``, best first.

        ``mode``: ``"hybrid"`` (keyword + semantic + conversation context),
        ``"semantic"`` (cosine, needs an embedder) or ``"keyword"`` (the store's
        full-text search). Only what ``agent_id`` and ``user_id`` may see is
        searched: their own and shared (``None``) threads and documents.
        ``thread_id`` searches one thread's current branch (no documents).
        ``min_score`` drops weaker hits (on the mode's scale), ``filters`` keeps
        hits whose metadata has exactly these values, ``options`` tunes hybrid
        ranking (``memorybank.retrieval.SearchOptions``). See ``memorybank._async.search``.
        """
        from memorybank._async import search  # numpy and the ranking core load on first use

        return await search.run_search(
            self._core,
            self.tenant_id,
            query,
            k=k,
            mode=mode,
            thread_id=thread_id,
            agent_id=agent_id,
            user_id=user_id,
            kinds=kinds,
            min_score=min_score,
            filters=filters,
            options=options,
        )

    async def embed_pending(
        self, *, thread_id: str | None = None, batch_size: int | None = None
    ) -> int:
        """Embed every entry and document lacking a vector of the current embedder; how many.

        Catches up a backlog: entries stored before an embedder was configured,
        after its model changed, or while it failed. Works in batches of
        ``batch_size`` texts (default ``search.EMBED_BATCH``). ``thread_id`` limits
        it to one thread (entries only).
        """
        from memorybank._async import search

        return await search.embed_pending(
            self._core,
            self.tenant_id,
            thread_id=thread_id,
            batch_size=search.EMBED_BATCH if batch_size is None else batch_size,
        )


class AsyncThreads:
    """``memory.threads``: create, get, list, update, delete conversations."""

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    async def create(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        thread_id: str | None = None,
    ) -> Thread:
        """Create a thread (id generated unless given). ``Conflict`` if the id is taken."""
        now = self._core.now()
        thread = Thread(
            id=new_id() if thread_id is None else v.check_id(thread_id, "thread_id"),
            tenant_id=self._tenant,
            user_id=v.check_optional_id(user_id, "user_id"),
            agent_id=v.check_optional_id(agent_id, "agent_id"),
            title=_check_title(title),
            metadata=v.check_json_object(metadata, "metadata"),
            status="active",
            created_at=now,
            updated_at=now,
        )
        return await self._core.store.create_thread(thread)

    async def get(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> Thread | None:
        """The thread or ``None``; ``ThreadForbidden`` if ``user_id`` is given and not its owner."""
        thread = await self._core.store.get_thread(self._tenant, v.check_id(thread_id, "thread_id"))
        if thread is not None:
            _owner_check(thread, user_id)
        return thread

    async def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads, most recently updated first; ``None`` filters are not applied."""
        if status is not None and status not in ("active", "archived"):
            raise InvalidInput("status must be 'active' or 'archived'", field="status")
        return await self._core.store.list_threads(
            self._tenant,
            user_id=UNSET if user_id is None else v.check_id(user_id, "user_id"),
            agent_id=UNSET if agent_id is None else v.check_id(agent_id, "agent_id"),
            status=status,
            limit=v.check_limit(limit, "limit"),
        )

    async def update(
        self,
        thread_id: str,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Thread:
        """Change title, metadata (replaced whole) or status. ``NotFound`` if absent."""
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(title, Unset):
            title = _check_title(title)
        if not isinstance(metadata, Unset):
            metadata = v.check_json_object(metadata, "metadata")
        if not isinstance(status, Unset) and status not in ("active", "archived"):
            raise InvalidInput("status must be 'active' or 'archived'", field="status")
        if not isinstance(user_id, Unset):
            await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.update_thread(
            self._tenant,
            thread_id,
            updated_at=self._core.now(),
            title=title,
            metadata=metadata,
            status=status,
        )

    async def delete(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> bool:
        """Delete the thread, its entries and branches. ``False`` if it did not exist."""
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            thread = await self._core.store.get_thread(self._tenant, thread_id)
            if thread is None:
                return False
            _owner_check(thread, user_id)
        return await self._core.store.delete_thread(self._tenant, thread_id)


def _check_title(title: object) -> str | None:
    return None if title is None else v.check_text(title, "title", max_chars=v.MAX_LABEL_CHARS)


async def _require_thread(
    core: _Core, tenant: str, thread_id: str, user_id: str | Unset | None
) -> Thread:
    thread = await core.store.get_thread(tenant, thread_id)
    if thread is None:
        raise NotFound(f"thread {thread_id!r} not found")
    _owner_check(thread, user_id)
    return thread


class AsyncEntries:
    """``memory.entries``: the messages of a thread's branches."""

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    def _new_entry(
        self,
        message: MessageLike,
        *,
        token_count: int | None,
        idempotency_key: str | None,
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
            idempotency_key=v.check_optional_id(idempotency_key, "idempotency_key"),
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
        returns the stored entry instead of adding a second one. ``created_at``
        may be in the past (imports); order is always the order of adding.
        """
        now = self._core.now()
        entry = self._new_entry(
            message,
            token_count=token_count,
            idempotency_key=idempotency_key,
            created_at=now if created_at is None else v.check_time(created_at, "created_at"),
        )
        stored = await self._append(thread_id, [entry], now=now, branch=branch, user_id=user_id)
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

        With ``idempotency_key``, message ``i`` gets the key ``f"{key}:{i}"`` so a
        retried batch is not duplicated.
        """
        if isinstance(messages, str | bytes | dict) or not isinstance(messages, Sequence):
            raise InvalidInput("messages must be a list of messages", field="messages")
        now = self._core.now()
        when = now if created_at is None else v.check_time(created_at, "created_at")
        key = v.check_optional_id(idempotency_key, "idempotency_key")
        new = [
            self._new_entry(
                message,
                token_count=None,
                idempotency_key=None if key is None else f"{key}:{index}",
                created_at=when,
            )
            for index, message in enumerate(messages)
        ]
        if not new:
            return []
        return await self._append(thread_id, new, now=now, branch=branch, user_id=user_id)

    async def _append(
        self,
        thread_id: str,
        entries: list[NewEntry],
        *,
        now: datetime,
        branch: str | None,
        user_id: str | Unset | None,
    ) -> list[Entry]:
        result = await self._core.store.append_entries(
            self._tenant,
            v.check_id(thread_id, "thread_id"),
            entries,
            updated_at=now,
            branch=v.check_optional_id(branch, "branch"),
            owner=user_id,
        )
        if self._core.embedder is not None:
            from memorybank._async import search

            new_ids = {e.id for e in entries}
            await search.embed_entries(
                self._core, self._tenant, [e for e in result.entries if e.id in new_ids]
            )
        generate = self._core.generate_title
        if generate is not None and result.thread.title is None:
            first_user = next((e for e in result.entries if e.role == "user" and e.content), None)
            if first_user is not None and first_user.content is not None:
                title = await amaybe_await(generate(first_user.content))
                await self._core.store.update_thread(
                    self._tenant, thread_id, updated_at=now, title=_check_title(title)
                )
        return result.entries

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
            thread, page = await self._core.store.list_entries(
                self._tenant,
                thread_id,
                branch=branch,
                limit=page_size,
                offset=raw_offset,
                before=before,
                after=after,
                newest_first=True,
            )
            _owner_check(thread, user_id)
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
        thread_id = v.check_id(thread_id, "thread_id")
        limit = v.check_limit(limit, "limit")
        offset_ = v.check_limit(offset, "offset", allow_none=False)
        assert offset_ is not None
        max_tokens = v.check_limit(max_tokens, "max_tokens")
        if order not in ("asc", "desc"):
            raise InvalidInput("order must be 'asc' or 'desc'", field="order")
        if not isinstance(include_tool_calls, bool):
            raise InvalidInput("include_tool_calls must be a bool", field="include_tool_calls")
        before = None if before is None else v.check_time(before, "before")
        after = None if after is None else v.check_time(after, "after")
        store = self._core.store
        if branch is not None:
            await _require_branch(self._core, self._tenant, thread_id, v.check_id(branch, "branch"))

        if include_tool_calls and max_tokens is None:
            thread, rows = await store.list_entries(
                self._tenant,
                thread_id,
                branch=branch,
                limit=limit,
                offset=offset_,
                before=before,
                after=after,
            )
            _owner_check(thread, user_id)
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
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.get_entry(
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
        listing it in ``source_entries``).
        """
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        removed = await self._core.store.delete_entries(
            self._tenant,
            thread_id,
            [v.check_id(entry_id, "entry_id")],
            branch=v.check_optional_id(branch, "branch"),
        )
        if removed and cascade_facts:
            from memorybank._async.facts import AsyncFacts

            await AsyncFacts(self._core, self._tenant)._cascade([entry_id])
        return removed > 0

    async def clear(
        self, thread_id: str, *, branch: str | None = None, user_id: str | Unset | None = UNSET
    ) -> int:
        """Delete every entry of the branch (default: current); how many."""
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.clear_entries(
            self._tenant, thread_id, branch=v.check_optional_id(branch, "branch")
        )

    async def count(
        self, thread_id: str, *, branch: str | None = None, user_id: str | Unset | None = UNSET
    ) -> int:
        """Number of entries on the branch (default: current)."""
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.count_entries(
            self._tenant, thread_id, branch=v.check_optional_id(branch, "branch")
        )


def _provider_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.name is not None:
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [call.to_dict() for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


async def _require_branch(core: _Core, tenant: str, thread_id: str, name: str) -> None:
    branches = await core.store.list_branches(tenant, thread_id)
    if not any(b.name == name for b in branches):
        raise NotFound(f"branch {name!r} not found")


class AsyncBranches:
    """``memory.branches``: alternative lines of a conversation, and time travel."""

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    async def create(
        self,
        thread_id: str,
        name: str,
        *,
        from_entry: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> Branch:
        """Fork the current branch into ``name`` (up to ``from_entry``, else all of it).

        The new branch is not checked out. ``Conflict`` if ``name`` exists.
        """
        thread = await _require_thread(
            self._core, self._tenant, v.check_id(thread_id, "thread_id"), user_id
        )
        return await self._core.store.create_branch(
            self._tenant,
            thread.id,
            v.check_id(name, "name"),
            from_branch=thread.current_branch,
            from_entry=v.check_optional_id(from_entry, "from_entry"),
            created_at=self._core.now(),
        )

    async def checkout(
        self, thread_id: str, name: str, *, user_id: str | Unset | None = UNSET
    ) -> Thread:
        """Make ``name`` the thread's current branch. ``NotFound`` if it does not exist."""
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.update_thread(
            self._tenant,
            thread_id,
            updated_at=self._core.now(),
            current_branch=v.check_id(name, "name"),
        )

    async def rewind(
        self, thread_id: str, entry_id: str, *, user_id: str | Unset | None = UNSET
    ) -> int:
        """Delete the entries after ``entry_id`` on the current branch; how many went."""
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.truncate_after(
            self._tenant, thread_id, v.check_id(entry_id, "entry_id")
        )

    async def list(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> list[Branch]:
        """The thread's branches, oldest first."""
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.list_branches(self._tenant, thread_id)

    async def delete(
        self, thread_id: str, name: str, *, user_id: str | Unset | None = UNSET
    ) -> bool:
        """Delete a branch and its entries (not the current one: ``Conflict``)."""
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.delete_branch(
            self._tenant, thread_id, v.check_id(name, "name")
        )


class AsyncWorkingMemory:
    """Key-value scratch space for one run; cleared when its ``with`` block exits."""

    def __init__(self, core: _Core, tenant: str, run_id: str) -> None:
        self._core = core
        self._tenant = tenant
        self.run_id = run_id

    async def set(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key``."""
        await self._core.store.working_set(
            self._tenant, self.run_id, v.check_id(key, "key"), v.dump_json(value, "value")
        )

    async def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        raw = await self._core.store.working_get(self._tenant, self.run_id, v.check_id(key, "key"))
        return default if raw is None else json.loads(raw)

    async def delete(self, key: str) -> bool:
        """Delete ``key``; whether it existed."""
        return await self._core.store.working_delete(
            self._tenant, self.run_id, v.check_id(key, "key")
        )

    async def items(self) -> dict[str, Any]:
        """Every key and value of this run."""
        raw = await self._core.store.working_items(self._tenant, self.run_id)
        return {key: json.loads(value) for key, value in sorted(raw.items())}

    async def clear(self) -> None:
        """Forget everything of this run."""
        await self._core.store.working_clear(self._tenant, self.run_id)

    async def __aenter__(self) -> AsyncWorkingMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.clear()


class AsyncSnapshots:
    """``memory.snapshots``: durable per-run state for workflows that survive restarts."""

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    async def save(self, run_id: str, value: Any, *, user_id: str | None = None) -> None:
        """Save (replace) the run's snapshot: any JSON value. ``user_id`` becomes its owner.

        Replacing another user's snapshot raises ``ThreadForbidden``.
        """
        run_id = v.check_id(run_id, "run_id")
        text = v.dump_json(value, "value")
        owner = v.check_optional_id(user_id, "user_id")
        existing = await self._core.store.snapshot_load(self._tenant, run_id)
        if existing is not None and existing[0] is not None and existing[0] != owner:
            raise ThreadForbidden("snapshot access forbidden")
        await self._core.store.snapshot_save(
            self._tenant, run_id, text, user_id=owner, saved_at=self._core.now()
        )

    async def load(self, run_id: str, *, user_id: str | None = None) -> Any:
        """The saved value, or ``None``. A snapshot with an owner fails closed for others."""
        found = await self._core.store.snapshot_load(self._tenant, v.check_id(run_id, "run_id"))
        if found is None:
            return None
        owner, text = found
        if owner is not None and owner != user_id:
            raise ThreadForbidden("snapshot access forbidden")
        return json.loads(text)

    async def delete(self, run_id: str, *, user_id: str | None = None) -> bool:
        """Delete the run's snapshot; whether it existed."""
        run_id = v.check_id(run_id, "run_id")
        found = await self._core.store.snapshot_load(self._tenant, run_id)
        if found is None:
            return False
        if found[0] is not None and found[0] != user_id:
            raise ThreadForbidden("snapshot access forbidden")
        return await self._core.store.snapshot_delete(self._tenant, run_id)


class AsyncSummaries:
    """``memory.summaries``: compressed summaries of past conversations per agent (and user)."""

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    async def add(self, *, agent_id: str, user_id: str | None = None, content: str) -> Summary:
        """Store a summary. ``user_id=None`` shares it with every user of the agent."""
        v.check_text(content, "content", max_chars=self._core.max_content_chars, allow_empty=False)
        summary = Summary(
            id=new_id(),
            agent_id=v.check_id(agent_id, "agent_id"),
            user_id=v.check_optional_id(user_id, "user_id"),
            content=content,
            created_at=self._core.now(),
        )
        return await self._core.store.summary_add(self._tenant, summary)

    async def list(self, *, agent_id: str, user_id: str | None = None) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus shared ones, oldest first."""
        return await self._core.store.summary_list(
            self._tenant,
            agent_id=v.check_id(agent_id, "agent_id"),
            user_id=v.check_optional_id(user_id, "user_id"),
        )
