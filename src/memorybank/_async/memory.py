"""AsyncMemory: the object users create. Validation, scoping and windows live here, once.

This file is the single source of both APIs: ``memorybank/_sync/memory.py``
(``Memory``) is generated from it by ``scripts/gen_sync.py``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from memorybank import _validate as v
from memorybank._async.stores.base import UNSET, AsyncStore, Unset
from memorybank._async.stores.open import open_store
from memorybank._concurrency import AsyncBackground, Breaker, amaybe_await
from memorybank._idempotency import keyed
from memorybank._ids import new_id
from memorybank._scope import ROOT, Principal, Scope, check_owner, check_owner_id
from memorybank._window import drop_orphan_tool_results, strip_tool_calls, take_token_budget
from memorybank.errors import ConfigurationError, Conflict, InvalidInput, NotFound, ThreadForbidden
from memorybank.records import Branch, Entry, Hit, Message, Summary, Thread
from memorybank.tokens import Tokenizer, count_message_tokens, get_tokenizer

if TYPE_CHECKING:
    # Long-term memory, recall and turns load on first use (see the properties and
    # methods below): a script that only reads history starts in half the time.
    from memorybank._async.documents import AsyncDocuments
    from memorybank._async.facts import AsyncFacts
    from memorybank._async.graph import AsyncGraph
    from memorybank._async.search import SearchMode
    from memorybank._async.turn import AsyncTurn, OnError
    from memorybank._async.vector_index import AsyncVectorIndex
    from memorybank._longterm import Context, ContextOptions, Strategy
    from memorybank.embeddings.base import Embedder
    from memorybank.extract.base import Extractor
    from memorybank.graph.model import GraphContextOptions
    from memorybank.rerank.base import Reranker
    from memorybank.retention import PruneReport, RetentionPolicy
    from memorybank.retrieval import SearchOptions
    from memorybank.stores._items import NewEntry

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
#: Seconds ``close()`` waits for background extraction before cancelling the rest.
EXTRACT_CLOSE_TIMEOUT = 30.0
#: Entries background extraction holds at most (queued or running); more are dropped.
EXTRACT_MAX_BACKLOG = 10_000
#: After this many background extractions in a row find the extractor unavailable,
#: the next ones fail at once for ``EXTRACT_PAUSE`` seconds (no request storm).
EXTRACT_BREAKER_THRESHOLD = 5
EXTRACT_PAUSE = 30.0

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
        extractor: Extractor | None = None,
        extract_on_write: bool = False,
        extract_concurrency: int = 2,
        reranker: Reranker | None = None,
        vector_index: AsyncVectorIndex | None = None,
    ) -> None:
        self.embedder = embedder
        self.reranker = reranker
        self.vector_index = vector_index
        self.extractor = extractor
        #: Runs ``extract_on_write`` extractions (``None``: off); see ``_async/ingest.py``.
        self.background = (
            AsyncBackground(
                "memorybank-extract",
                concurrency=extract_concurrency,
                max_backlog=EXTRACT_MAX_BACKLOG,
            )
            if extract_on_write
            else None
        )
        self.extract_breaker = Breaker(threshold=EXTRACT_BREAKER_THRESHOLD, cooldown=EXTRACT_PAUSE)
        self.store = store
        self.owns_store = owns_store
        self.tokenizer = tokenizer
        self.generate_title = generate_title
        self.clock = clock
        self.max_content_chars = max_content_chars

    def now(self) -> datetime:
        return v.check_time(self.clock(), "clock()")

    @functools.cached_property
    def functional_types(self) -> set[str]:
        """``memory.graph.functional_types``: shared by every handle of this memory."""
        from memorybank.graph.model import DEFAULT_FUNCTIONAL_TYPES  # with the graph only

        return set(DEFAULT_FUNCTIONAL_TYPES)


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
        api_key: the key of a memorybank server, for an ``http(s)://`` URL
            (``None``: ``$MEMORYBANK_API_KEY``); the tenant is the key's.
        extractor: reads entries for ``memory.graph.ingest`` (see
            ``memorybank.extract``: ``LLMExtractor``, ``RuleExtractor``). You
            keep owning it: ``close()`` does not close it (it may serve other
            memories); close it after the memories that use it (for
            ``LLMExtractor``: ``close()``, and ``await aclose()`` on each event
            loop that extracted, e.g. the loop of an ``AsyncMemory`` with
            ``extract_on_write``).
        extract_on_write: also extract every new user/assistant entry in the
            background: never blocking or failing the write, in order per
            thread, ``extract_concurrency`` extractions at a time;
            ``memory.graph.pending()`` shows the backlog, and ``close()``
            waits for it (at most ``EXTRACT_CLOSE_TIMEOUT`` seconds, then
            cancels the rest: ``memory.graph.ingest(thread_id)`` catches up).
        reranker: an optional last stage of hybrid search (see
            ``memorybank.rerank``: ``CrossEncoderReranker``, ``LLMReranker``):
            reorders the best hits of every hybrid search unless the call says
            ``rerank=False``. ``None`` (the default): no reranking, no model call.
        vector_index: search vectors in an external index instead of the store
            (``memorybank.vector_index``: ``QdrantIndex``); the store keeps its
            vectors as the source of truth and re-checks the scope of every
            hit. ``close()`` closes the index too. ``None``: the store's own search.

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
        api_key: str | None = None,
        extractor: Extractor | None = None,
        extract_on_write: bool = False,
        extract_concurrency: int = 2,
        reranker: Reranker | None = None,
        vector_index: AsyncVectorIndex | None = None,
    ) -> None:
        _check_extraction(extractor, extract_on_write, extract_concurrency)
        if reranker is not None and not _is_reranker(reranker):
            raise ConfigurationError(
                "reranker must have rerank(query, candidates) and arerank(query, candidates)"
            )
        if isinstance(url, AsyncStore):
            if api_key is not None:
                raise ConfigurationError("api_key is for a URL, not a store object")
            store, owns = url, False
        elif url is None or isinstance(url, str):
            url = url or os.environ.get("MEMORYBANK_URL") or DEFAULT_URL
            store, owns = open_store(url, api_key=api_key), True
        else:
            raise ConfigurationError(f"url must be a string or a store, got {type(url).__name__}")
        if vector_index is not None:
            from memorybank._async.vector_index import indexed

            store = indexed(store, vector_index)
        if isinstance(tokenizer, str) or tokenizer is None:
            tokenizer = get_tokenizer(tokenizer)
        elif not callable(getattr(tokenizer, "count", None)):
            raise ConfigurationError("tokenizer must have a count(text) -> int method")
        if max_content_chars <= 0:
            raise ConfigurationError("max_content_chars must be positive")
        core = _Core(
            store,
            owns_store=owns,
            vector_index=vector_index,
            tokenizer=tokenizer,
            generate_title=generate_title,
            clock=clock or _system_clock,
            max_content_chars=max_content_chars,
            embedder=embedder,
            extractor=extractor,
            extract_on_write=extract_on_write,
            extract_concurrency=extract_concurrency,
            reranker=reranker,
        )
        self._init(core, v.check_id(tenant_id, "tenant_id"), ROOT)

    def _init(self, core: _Core, tenant: str, scope: Scope) -> None:
        self._core = core
        self.tenant_id = tenant
        self._scope = scope
        self.threads = AsyncThreads(core, tenant, scope)
        self.entries = AsyncEntries(core, tenant, scope)
        self.branches = AsyncBranches(core, tenant, scope)
        self.snapshots = AsyncSnapshots(core, tenant, scope)
        self.summaries = AsyncSummaries(core, tenant, scope)

    @functools.cached_property
    def facts(self) -> AsyncFacts:
        """``memory.facts``: long-term facts (see ``memorybank._async.facts``)."""
        from memorybank._async.facts import AsyncFacts

        return AsyncFacts(self._core, self.tenant_id, self._scope)

    @functools.cached_property
    def graph(self) -> AsyncGraph:
        """``memory.graph``: the knowledge graph (see ``memorybank._async.graph``)."""
        from memorybank._async.graph import AsyncGraph

        return AsyncGraph(self._core, self.tenant_id, self._scope)

    @functools.cached_property
    def documents(self) -> AsyncDocuments:
        """``memory.documents``: searchable documents (see ``memorybank._async.documents``)."""
        from memorybank._async.documents import AsyncDocuments

        return AsyncDocuments(self._core, self.tenant_id, self._scope)

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this memory searches with (``None``: no semantic search)."""
        return self._core.embedder

    @property
    def store(self) -> AsyncStore:
        """The store this memory writes to."""
        return self._core.store

    @property
    def scope(self) -> Scope:
        """The principal this handle is confined to (``Scope()``: the unscoped root)."""
        return self._scope

    def _handle(self, tenant: str, scope: Scope) -> AsyncMemory:
        handle = object.__new__(type(self))
        handle._init(self._core, tenant, scope)
        return handle

    def tenant(self, tenant_id: str) -> AsyncMemory:
        """A handle confined to ``tenant_id``, sharing this memory's store, options and scope."""
        return self._handle(v.check_id(tenant_id, "tenant_id"), self._scope)

    def scoped(
        self, *, user_id: str | Unset | None = UNSET, agent_id: str | Unset | None = UNSET
    ) -> AsyncMemory:
        """A handle on which every call acts for one principal and cannot widen it.

        Each call on the handle fills in ``user_id``/``agent_id`` when left out;
        naming another principal raises ``InvalidInput``. ``None`` confines the
        handle to shared records (no user, or no agent); an axis left out stays
        unconfined. Composes with ``tenant()`` in either order, and a scoped
        handle can be scoped further on its free axis only. Shares the store
        (and its ``close``) with this memory.

        This is the form for multi-user applications: build one per request
        from the authenticated principal, and pass only it to agent code.
        """
        return self._handle(self.tenant_id, self._scope.narrow(user_id=user_id, agent_id=agent_id))

    async def close(self) -> None:
        """Close the store if this memory opened it (from a URL), for every handle on it.

        With ``extract_on_write``, background extraction stops first: new entries
        are no longer queued, the backlog gets up to ``EXTRACT_CLOSE_TIMEOUT``
        seconds, and what is left is cancelled (counted in ``graph.pending()``).
        The extractor and the reranker are the caller's: they stay open.
        """
        if self._core.background is not None:
            await self._core.background.close(EXTRACT_CLOSE_TIMEOUT)
        if self._core.owns_store:
            await self._core.store.close()
        if self._core.vector_index is not None:
            await self._core.vector_index.close()

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
        self,
        thread_id: str | None,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> Thread:
        """The thread, created (owned by ``user_id``) when absent.

        Fails closed: an existing thread whose owner is not ``user_id`` raises
        ``ThreadForbidden`` (also for an unowned thread and a named user, and
        the other way round). On a ``scoped`` handle ``user_id`` defaults to its
        user; on the root handle leaving it out is the trusted form (no check,
        an absent thread is created without owner).
        """
        user_id = self._scope.user(user_id)
        if thread_id is not None:
            thread = await self.threads.get(thread_id)
            if thread is not None:
                check_owner(thread, user_id)
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
        check_owner(thread, user_id)
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
        message: dict[str, Any] = {
            "role": role,
            "content": content,
            "metadata": metadata,
            "state": state,
        }
        # only the fields given: an empty one in a provider dict is kept as given
        if name is not None:
            message["name"] = name
        if tool_calls:
            message["tool_calls"] = list(tool_calls)
        if tool_call_id is not None:
            message["tool_call_id"] = tool_call_id
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
        user_id = self._scope.user(user_id)
        owner, messages = await self._core.store.recent_messages(
            self.tenant_id, v.check_id(thread_id, "thread_id"), last
        )
        check_owner_id(owner, user_id)
        return messages

    async def build_context(
        self,
        thread_id: str,
        *,
        max_tokens: int,
        agent_id: str | Unset = UNSET,
        user_id: str | Unset | None = UNSET,
        system_prompt: str | None = None,
        current_input: str | None = None,
        strategy: Strategy = "recent",
        reserve_tokens: int | None = None,
        include_system_prompt: bool = True,
        include_facts: bool = False,
        include_semantic_context: bool = False,
        include_graph_context: bool = False,
        graph_options: GraphContextOptions | Mapping[str, Any] | None = None,
    ) -> Context:
        """The messages for one model call, within ``max_tokens`` (see ``ContextBuilder``).

        ``agent_id`` is required (a ``scoped`` handle's agent by default);
        ``user_id`` defaults to the handle's user, else ``None`` (no user).
        ``include_graph_context`` adds ``memory.graph``'s ``Entities:`` and
        ``Relationships:`` about what ``current_input`` names, chosen with
        ``graph_options`` (a ``GraphContextOptions``, or a dict of its fields).
        """
        from memorybank._async.context import AsyncContextBuilder
        from memorybank._longterm import ContextOptions
        from memorybank.graph._context import as_options

        agent, user = self._principal(agent_id, user_id)

        options = ContextOptions(
            max_tokens=max_tokens,
            strategy=strategy,
            reserve_tokens=reserve_tokens,
            include_system_prompt=include_system_prompt,
            include_facts=include_facts,
            include_semantic_context=include_semantic_context,
            include_graph_context=include_graph_context,
            graph_options=as_options(graph_options),
        )
        return await AsyncContextBuilder(options, self).build(
            thread_id,
            agent_id=agent,
            user_id=user,
            system_prompt=system_prompt,
            current_input=current_input,
        )

    def _principal(self, agent_id: object, user_id: object) -> tuple[str, str | None]:
        """The agent (required) and user (default: none) a context is built for."""
        agent, user = self._scope.agent(agent_id), self._scope.user(user_id)
        if not isinstance(agent, str):
            raise InvalidInput("agent_id is required (a string)", field="agent_id")
        return agent, None if isinstance(user, Unset) else user

    def turn(
        self,
        thread_id: str,
        *,
        input: str,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset = UNSET,
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

        agent, user = self._principal(agent_id, user_id)
        return AsyncTurn(
            self,
            v.check_id(thread_id, "thread_id"),
            user_id=user,
            agent_id=agent,
            input=input,
            context=context if context is not None else ContextOptions(max_tokens=4000),
            system_prompt=system_prompt,
            load_history=load_history,
            save_history=save_history,
            on_error=on_error,
            raise_errors=raise_errors,
        )

    def working(
        self,
        run_id: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> AsyncWorkingMemory:
        """Working memory of one run: ``async with memory.working(run_id) as wm``.

        Cleared when the block exits (also on error). Working memory is
        partitioned by principal: the same ``run_id`` named with another
        ``user_id``/``agent_id`` (or none) is another, empty space.
        """
        user, agent = self._scope.user(user_id), self._scope.agent(agent_id)
        return AsyncWorkingMemory(
            self._core, self.tenant_id, _run_key(v.check_id(run_id, "run_id"), user, agent), run_id
        )

    async def prune(self, policy: RetentionPolicy, *, dry_run: bool = False) -> PruneReport:
        """Apply a retention policy to this tenant's threads; what went (or would go).

        See ``memorybank.retention.RetentionPolicy`` for the rules (tool-call
        pairing is never broken; long-term records are kept). With ``dry_run``
        nothing changes. After a real prune that removed something the store
        reclaims the space (SQLite: ``VACUUM``). Only on an unscoped handle
        (``memory`` or ``memory.tenant(T)``): a policy covers the whole tenant.
        """
        from memorybank._async.retention import prune_tenant
        from memorybank.retention import RetentionPolicy

        if not isinstance(policy, RetentionPolicy):
            raise InvalidInput("policy must be a RetentionPolicy", field="policy")
        if self._scope is not ROOT:
            raise InvalidInput(
                "prune covers a whole tenant: call it on an unscoped handle", field="scope"
            )
        return await prune_tenant(
            self._core.store, self.tenant_id, policy, now=self._core.now(), dry_run=dry_run
        )

    async def forget_user(self, user_id: str | Unset = UNSET) -> int:
        """Erase everything derived from ``user_id`` in this tenant; how many records went.

        A handle scoped to a user may only forget that user (its own, by default).
        """
        user = self._scope.user(user_id)
        if not isinstance(user, str):
            raise InvalidInput("forget_user needs a user_id (a string)", field="user_id")
        return await self._core.store.forget_user(self.tenant_id, user)

    # -- recall --------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: SearchMode = "hybrid",
        thread_id: str | None = None,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        kinds: Sequence[str] = ("entries", "documents"),
        min_score: float | None = None,
        filters: dict[str, Any] | None = None,
        options: SearchOptions | None = None,
        rerank: bool | None = None,
        rerank_top: int | None = None,
        include_history: bool = False,
    ) -> list[Hit]:
        """The ``k`` best entries, documents and facts for ``query``, best first.

        ``mode``: ``"hybrid"`` (keyword + semantic + conversation context),
        ``"semantic"`` (cosine, needs an embedder) or ``"keyword"`` (the store's
        full-text search). ``kinds``: any of ``"entries"``, ``"documents"`` and
        ``"facts"`` (``memory.facts``; current values only, ``include_history=True``
        adds their earlier values as hits with ``superseded=True``, and is refused
        with ``InvalidInput`` unless ``"facts"`` is among the kinds); every kind is
        ranked on one scale. Only what ``agent_id`` and ``user_id`` may see is
        searched: their own and shared (``None``) threads, documents and facts
        (left out: the handle's scope; unscoped on the root handle). ``thread_id``
        searches one thread's current branch (no documents, no facts) under the
        thread rule: ``ThreadForbidden`` unless ``user_id`` is its owner.
        ``min_score`` drops weaker hits (on the mode's scale), ``filters`` keeps
        hits whose metadata has exactly these values, ``options`` tunes hybrid
        ranking (``memorybank.retrieval.SearchOptions``). ``rerank``: ``None``
        uses the memory's reranker (if any) on hybrid searches, ``False`` skips
        it, ``True`` requires it; it reorders the best ``rerank_top`` hits
        (default 20) and never fails the search (see
        ``memorybank._async.rerank_stage``). See ``memorybank._async.search``.
        """
        from memorybank._async import search  # numpy and the ranking core load on first use

        return await search.run_search(
            self._core,
            self.tenant_id,
            query,
            k=k,
            mode=mode,
            thread_id=thread_id,
            visible=self._scope.visibility(user_id=user_id, agent_id=agent_id),
            kinds=kinds,
            min_score=min_score,
            filters=filters,
            options=options,
            rerank=rerank,
            rerank_top=rerank_top,
            include_history=include_history,
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

        if thread_id is not None:
            await self.threads.require(thread_id)
        return await search.embed_pending(
            self._core,
            self.tenant_id,
            thread_id=thread_id,
            batch_size=search.EMBED_BATCH if batch_size is None else batch_size,
        )


class AsyncThreads:
    """``memory.threads``: create, get, list, update, delete conversations."""

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

    async def create(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        thread_id: str | None = None,
    ) -> Thread:
        """Create a thread (id generated unless given). ``Conflict`` if the id is taken.

        Owner and agent default to the handle's scope (none on the root handle).
        """
        now = self._core.now()
        thread = Thread(
            id=new_id() if thread_id is None else v.check_id(thread_id, "thread_id"),
            tenant_id=self._tenant,
            user_id=self._scope.owner(user_id),
            agent_id=self._scope.owner(agent_id, "agent_id"),
            title=_check_title(title),
            metadata=v.check_json_object(metadata, "metadata"),
            status="active",
            created_at=now,
            updated_at=now,
        )
        return await self._core.store.create_thread(thread)

    async def get(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> Thread | None:
        """The thread or ``None``; ``ThreadForbidden`` if ``user_id`` is given and not its owner."""
        user_id = self._scope.user(user_id)
        thread = await self._core.store.get_thread(self._tenant, v.check_id(thread_id, "thread_id"))
        if thread is not None:
            check_owner(thread, user_id)
        return thread

    async def require(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> Thread:
        """The thread under the thread rule: ``NotFound`` if absent, ``ThreadForbidden``
        if ``user_id`` (default: the handle's user) is not its owner."""
        return await _require_thread(
            self._core, self._tenant, v.check_id(thread_id, "thread_id"), self._scope.user(user_id)
        )

    async def list(
        self,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads, most recently updated first.

        ``user_id``/``agent_id`` keep the threads of exactly that owner/agent
        (``None``: threads without one); left out, the handle's scope applies
        (no filter on the root handle). ``status`` filters when given.
        """
        if status is not None and status not in ("active", "archived"):
            raise InvalidInput("status must be 'active' or 'archived'", field="status")
        return await self._core.store.list_threads(
            self._tenant,
            user_id=self._scope.user(user_id),
            agent_id=self._scope.agent(agent_id),
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
        user_id = self._scope.user(user_id)
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
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            thread = await self._core.store.get_thread(self._tenant, thread_id)
            if thread is None:
                return False
            check_owner(thread, user_id)
        return await self._core.store.delete_thread(self._tenant, thread_id)


def _check_extraction(extractor: object, on_write: object, concurrency: object) -> None:
    if extractor is not None and not (
        callable(getattr(extractor, "extract", None))
        and callable(getattr(extractor, "aextract", None))
    ):
        raise ConfigurationError("extractor must have extract() and aextract() methods")
    if not isinstance(on_write, bool):
        raise ConfigurationError("extract_on_write must be a bool")
    if on_write and extractor is None:
        raise ConfigurationError("extract_on_write=True needs an extractor=")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError("extract_concurrency must be a positive int")


def _is_reranker(reranker: object) -> bool:
    # imported here: a memory without a reranker never loads the rerank package
    from memorybank.rerank.base import Reranker

    return isinstance(reranker, Reranker)


def _check_title(title: object) -> str | None:
    return None if title is None else v.check_text(title, "title", max_chars=v.MAX_LABEL_CHARS)


async def _require_thread(
    core: _Core, tenant: str, thread_id: str, user_id: str | Unset | None
) -> Thread:
    thread = await core.store.get_thread(tenant, thread_id)
    if thread is None:
        raise NotFound(f"thread {thread_id!r} not found")
    check_owner(thread, user_id)
    return thread


class AsyncEntries:
    """``memory.entries``: the messages of a thread's branches."""

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

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
        from memorybank.stores._items import NewEntry  # not at import: cold start

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
        if self._core.background is not None:
            from memorybank._async import ingest

            new_ids = {e.id for e in entries}
            ingest.submit(
                self._core,
                self._tenant,
                result.thread,
                [e for e in result.entries if e.id in new_ids],
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
        assert offset_ is not None
        max_tokens = v.check_limit(max_tokens, "max_tokens")
        if order not in ("asc", "desc"):
            raise InvalidInput("order must be 'asc' or 'desc'", field="order")
        if not isinstance(include_tool_calls, bool):
            raise InvalidInput("include_tool_calls must be a bool", field="include_tool_calls")
        before = None if before is None else v.check_time(before, "before")
        after = None if after is None else v.check_time(after, "after")
        store = self._core.store
        if branch is not None:  # ownership first: a stranger learns no branch names
            await _require_thread(self._core, self._tenant, thread_id, user_id)
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
        listing it in ``source_entries``), and the graph's observations and
        relations whose only provenance was it.
        """
        user_id = self._scope.user(user_id)
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
            from memorybank._async.graph import AsyncGraph

            await AsyncFacts(self._core, self._tenant)._cascade([entry_id])
            await AsyncGraph(self._core, self._tenant)._cascade([entry_id])
        return removed > 0

    async def clear(
        self, thread_id: str, *, branch: str | None = None, user_id: str | Unset | None = UNSET
    ) -> int:
        """Delete every entry of the branch (default: current); how many."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.clear_entries(
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
    if message.extra:
        # the parts (counted text plus a fixed cost per other part), function_call, ...
        out.update((k, x) for k, x in message.extra.items() if x is not None)
    elif message.item is not None:
        parts = message.item.get("content", message.item.get("output"))
        if isinstance(parts, list):
            out["content"] = parts
    return out


async def _require_branch(core: _Core, tenant: str, thread_id: str, name: str) -> None:
    branches = await core.store.list_branches(tenant, thread_id)
    if not any(b.name == name for b in branches):
        raise NotFound(f"branch {name!r} not found")


class AsyncBranches:
    """``memory.branches``: alternative lines of a conversation, and time travel."""

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

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
        user_id = self._scope.user(user_id)
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
        user_id = self._scope.user(user_id)
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
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.truncate_after(
            self._tenant, thread_id, v.check_id(entry_id, "entry_id")
        )

    async def list(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> list[Branch]:
        """The thread's branches, oldest first."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.list_branches(self._tenant, thread_id)

    async def delete(
        self, thread_id: str, name: str, *, user_id: str | Unset | None = UNSET
    ) -> bool:
        """Delete a branch and its entries (not the current one: ``Conflict``)."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.delete_branch(
            self._tenant, thread_id, v.check_id(name, "name")
        )


def _run_key(run_id: str, user: Principal, agent: Principal) -> str:
    """Where a run's working memory lives: the run id itself for the unscoped root,
    else a digest of (run, user, agent) so each principal gets its own space and
    no run id a scoped caller can name reaches another's (scoped keys never
    start with ``~`` unhashed; the root is trusted with every key)."""
    if isinstance(user, Unset) and isinstance(agent, Unset):
        return run_id
    parts = [run_id, *(0 if isinstance(x, Unset) else x for x in (user, agent))]
    import hashlib  # on first use (cold start)
    import json

    return "~" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _json_loads(text: str) -> Any:
    import json  # on first use: reading history does not need it (cold start)

    return json.loads(text)


class AsyncWorkingMemory:
    """Key-value scratch space for one run; cleared when its ``with`` block exits."""

    def __init__(self, core: _Core, tenant: str, key: str, run_id: str) -> None:
        self._core = core
        self._tenant = tenant
        self._key = key  # the run's partition in the store (see ``_run_key``)
        self.run_id = run_id

    async def set(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key``."""
        await self._core.store.working_set(
            self._tenant, self._key, v.check_id(key, "key"), v.dump_json(value, "value")
        )

    async def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        raw = await self._core.store.working_get(self._tenant, self._key, v.check_id(key, "key"))
        return default if raw is None else _json_loads(raw)

    async def delete(self, key: str) -> bool:
        """Delete ``key``; whether it existed."""
        return await self._core.store.working_delete(
            self._tenant, self._key, v.check_id(key, "key")
        )

    async def items(self) -> dict[str, Any]:
        """Every key and value of this run."""
        raw = await self._core.store.working_items(self._tenant, self._key)
        return {key: _json_loads(value) for key, value in sorted(raw.items())}

    async def clear(self) -> None:
        """Forget everything of this run."""
        await self._core.store.working_clear(self._tenant, self._key)

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

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

    async def save(self, run_id: str, value: Any, *, user_id: str | Unset | None = UNSET) -> None:
        """Save (replace) the run's snapshot: any JSON value. ``user_id`` becomes its owner.

        Replacing another user's snapshot raises ``ThreadForbidden``, checked in
        the same atomic step as the write: of two users saving one new run at
        once, exactly one owns it. ``user_id`` defaults to the handle's user
        (none on the root handle, which may then replace unowned snapshots only).
        """
        run_id = v.check_id(run_id, "run_id")
        text = v.dump_json(value, "value")
        owner = self._scope.owner(user_id)
        await self._core.store.snapshot_save(
            self._tenant, run_id, text, user_id=owner, saved_at=self._core.now()
        )

    async def load(self, run_id: str, *, user_id: str | Unset | None = UNSET) -> Any:
        """The saved value, or ``None``. A snapshot with an owner fails closed for others.

        ``user_id`` defaults to the handle's user; the root handle's unscoped
        call reads any snapshot.
        """
        user = self._scope.user(user_id)
        found = await self._core.store.snapshot_load(self._tenant, v.check_id(run_id, "run_id"))
        if found is None:
            return None
        owner, text = found
        _snapshot_access(owner, user)
        return _json_loads(text)

    async def delete(self, run_id: str, *, user_id: str | Unset | None = UNSET) -> bool:
        """Delete the run's snapshot; whether it existed (same access rule as ``load``).

        The owner check is part of the delete (one atomic step); the root
        handle's unscoped call deletes any snapshot.
        """
        user = self._scope.user(user_id)
        return await self._core.store.snapshot_delete(
            self._tenant,
            v.check_id(run_id, "run_id"),
            user_id=None if isinstance(user, Unset) else user,
            owner_check=not isinstance(user, Unset),
        )


def _snapshot_access(owner: str | None, user: Principal) -> None:
    """Snapshots fail closed like threads: an owned one is its owner's alone."""
    if owner is not None and not isinstance(user, Unset) and owner != user:
        raise ThreadForbidden("snapshot access forbidden")


class AsyncSummaries:
    """``memory.summaries``: compressed summaries of past conversations per agent (and user)."""

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

    async def add(
        self,
        *,
        content: str,
        agent_id: str | Unset = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Summary:
        """Store a summary. ``user_id=None`` shares it with every user of the agent.

        ``agent_id`` (required) and ``user_id`` default to the handle's scope.
        """
        v.check_text(content, "content", max_chars=self._core.max_content_chars, allow_empty=False)
        summary = Summary(
            id=new_id(),
            agent_id=v.check_id(self._scope.owner(agent_id, "agent_id"), "agent_id"),
            user_id=self._scope.owner(user_id),
            content=content,
            created_at=self._core.now(),
        )
        return await self._core.store.summary_add(self._tenant, summary)

    async def list(
        self, *, agent_id: str | Unset = UNSET, user_id: str | Unset | None = UNSET
    ) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus shared ones, oldest first.

        ``user_id=None``: shared ones only; left out: the handle's user (every
        user's on the root handle). ``agent_id`` is required (the handle's by default).
        """
        return await self._core.store.summary_list(
            self._tenant,
            agent_id=v.check_id(self._scope.owner(agent_id, "agent_id"), "agent_id"),
            user_id=self._scope.user(user_id),
        )
