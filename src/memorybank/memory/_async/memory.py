"""AsyncMemory: the object users create. Validation, scoping and windows live here, once.

Its namespaces live beside it, one module each: ``threads``, ``entries``,
``branches`` and ``run_state`` (working memory, snapshots, summaries), sharing
``_core``; long-term memory (``facts``, ``documents``, ``graph``, ``search``)
loads on first use. These ``_async`` files are the single source of both APIs:
``memory/_sync/`` (``Memory``) is generated from them by ``scripts/gen_sync.py``.
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

from memorybank.core._async.core import (
    MAX_CONTENT_CHARS,
    Clock,
    TitleFn,
    _Core,
    _system_clock,
)
from memorybank.core._async.embed import EMBED_BATCH, embed_pending
from memorybank.core._async.facts import AsyncFacts
from memorybank.core._async.threads import AsyncThreads
from memorybank.core._async.usage import AsyncUsage, flush_usage, note_hits
from memorybank.errors import ConfigurationError, Conflict, InvalidInput
from memorybank.memory._async.branches import AsyncBranches
from memorybank.memory._async.documents import AsyncDocuments
from memorybank.memory._async.entries import AsyncEntries
from memorybank.memory._async.events import AsyncEvents
from memorybank.memory._async.run_state import (
    AsyncSnapshots,
    AsyncSummaries,
    AsyncWorkingMemory,
    _run_key,
    forget_working,
    list_working,
)
from memorybank.records import Entry, Fact, Hit, Thread, WorkingRun
from memorybank.rerank.base import Reranker
from memorybank.retention import PruneReport, RetentionPolicy
from memorybank.rules import validate as v
from memorybank.rules.scope import ROOT, Scope, check_owner_id
from memorybank.runtime.log import logger
from memorybank.stores._async.open import open_store
from memorybank.stores.contract._async.leases import DEFAULT_LEASE, check_lease
from memorybank.stores.contract._async.store import UNSET, AsyncStore, Unset
from memorybank.tokens import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    # Long-term memory, recall and turns load on first use (see the properties and
    # methods below): a script that only reads history starts in half the time.
    from memorybank.consolidation._async.consolidation import AsyncConsolidation
    from memorybank.consolidation.profile import Profile
    from memorybank.consolidation.report import ConsolidationReport
    from memorybank.context._async.turn import AsyncTurn, OnError
    from memorybank.context.values import Context, ContextOptions, Strategy
    from memorybank.core._async.embedding import AsyncEmbedding
    from memorybank.core.extraction import Extractor
    from memorybank.core.judge import LLMJudge
    from memorybank.embeddings.base import Embedder
    from memorybank.embeddings.status import EmbedMode
    from memorybank.graph._async import AsyncGraph
    from memorybank.graph.model import GraphContextOptions
    from memorybank.importance import HalfLife, ItemUsage
    from memorybank.recall._async.search import SearchMode
    from memorybank.recall.hybrid import SearchOptions
    from memorybank.vector_index._async.index import AsyncVectorIndex

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
#: Seconds ``close()`` waits for background extraction before cancelling the rest.
EXTRACT_CLOSE_TIMEOUT = 30.0
#: Texts ``embed="background"`` queues before a write waits.
EMBED_QUEUE = 20_000
#: Seconds ``close()`` waits for the background embedding queue before stopping it.
EMBED_CLOSE_TIMEOUT = 30.0


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
        judge: an ``LLMJudge`` (``memorybank.core.judge``) that decides, in
            ``consolidate``, the cases the rules cannot: its decisions are validated,
            budgeted, and marked ``decided_by="judge"`` in the run's report. You keep
            owning it (``close()`` does not close it). ``None``: the rules alone.
        embed: when the vectors of new entries and documents are computed.
            ``"inline"`` (the default): in the write, so a search right after it
            finds them by meaning too. ``"background"``: after it, by a worker,
            so a large batch returns once stored (keyword search finds it at
            once): a bounded queue of ``embed_queue`` texts (a write waits when
            it is full), ``memory.embedding.flush()`` waits for the vectors,
            ``memory.embedding.status()`` shows the backlog, and what a stopped
            process left pending is resumed by the next memory opened on the
            store (see docs/embeddings.md). The service
            embeds in the background by default.
        embed_queue: texts the background queue holds before a write waits.
        embed_lease: seconds a background worker holds a journal record it embeds
            (default ``DEFAULT_LEASE``, 60): while held, no other process or node
            embeds it; a worker that died holding it has it taken over once the
            lease runs out. Longer than one embedder call of ``EMBED_BATCH`` texts.
        consolidate: ``"off"`` (the default): facts are consolidated when
            ``consolidate`` is called. ``"background"``: a worker of this memory
            consolidates, every ``consolidate_every``, each owner with facts newer than
            its last run, in every tenant this memory served (one process or node at a
            time per tenant; see docs/consolidation.md). It
            starts with ``with``/``async with`` (or ``memory.consolidation.tick()``),
            and ``close()`` stops it.
        consolidate_every: seconds (or a ``timedelta``) between two background ticks
            (default ``DEFAULT_EVERY``, an hour).
        consolidate_lease: seconds a worker holds a consolidation run it applies (and
            a tenant's schedule): while held no other worker takes it; a run whose
            worker died is completed (``memory.consolidation.resume()``) once it runs
            out. Default ``DEFAULT_LEASE`` (60).

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
        embed: EmbedMode = "inline",
        embed_queue: int = EMBED_QUEUE,
        embed_lease: float = DEFAULT_LEASE,
        judge: LLMJudge | None = None,
        consolidate: str = "off",
        consolidate_every: float | timedelta = 3600.0,
        consolidate_lease: float = DEFAULT_LEASE,
    ) -> None:
        tenant = v.check_tenant(tenant_id, "tenant_id")
        every = _check_consolidate(consolidate, consolidate_every)
        consolidate_lease = check_lease(consolidate_lease, "consolidate_lease")
        _check_embed(embed, embed_queue)
        embed_lease = check_lease(embed_lease, "embed_lease")
        _check_extraction(extractor, extract_on_write, extract_concurrency)
        if reranker is not None and not isinstance(reranker, Reranker):
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
        if consolidate == "background" and "remote" in store.capabilities:
            raise ConfigurationError(
                "consolidate='background' is for a store this process writes to; a"
                " memorybank server consolidates in the background itself"
                " (serve --consolidate-every)"
            )
        if embed == "background" and "remote" in store.capabilities:
            raise ConfigurationError(
                "embed='background' is for a store this process writes to; a memorybank"
                " server embeds in the background itself"
            )
        if vector_index is not None:
            from memorybank.vector_index._async.index import indexed

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
            judge=_checked_judge(judge),
        )
        if embed == "background":
            core.embed_service = self._embedding_module()._EmbedService(
                store, embedder, embed_queue, embed_lease
            )
        core.consolidate_lease = consolidate_lease
        core.consolidate_every = every
        if every is not None:
            core.consolidate_tenants.add(tenant)
        self._init(core, tenant, ROOT)

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
        """``memory.facts``: long-term facts (see ``memorybank.core._async.facts``)."""
        return AsyncFacts(self._core, self.tenant_id, self._scope)

    @functools.cached_property
    def consolidation(self) -> AsyncConsolidation:
        """``memory.consolidation``: consolidation runs, their reports and undo."""
        from memorybank.consolidation._async.consolidation import AsyncConsolidation

        return AsyncConsolidation(self._core, self.tenant_id, self._scope)

    async def consolidate(
        self,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        dry_run: bool = False,
    ) -> ConsolidationReport:
        """Merge one owner's duplicate facts and supersede contradicted ones; the report.

        ``user_id``: whose facts (``None``: the shared facts; required on a handle not
        scoped to a user). ``agent_id``: only that agent's facts (``None``: those shared
        by every agent; left out: every agent's, each compared only with its own). A
        fact is only ever compared with facts of exactly its owner. Every change is a
        new version naming the run and the reason; ``memory.consolidation.undo(run_id)``
        restores the facts exactly. ``dry_run``: write nothing, return the same report.
        The rules are in ``memorybank.consolidation.rules`` (docs/consolidation.md).
        """
        return await self.consolidation.run(user_id=user_id, agent_id=agent_id, dry_run=dry_run)

    async def feedback(
        self,
        hit_or_id: Hit | str,
        *,
        useful: bool,
        reason: str | None = None,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> Fact | ItemUsage:
        """Say whether a recalled fact was useful; the fact as it is after.

        In the library a document's or an entry's search hit may be given too: it returns
        that item's importance and use (``ItemUsage``).
        ``hit_or_id``: a search hit, or a fact id. ``useful``: whether it helped (``True``
        raises the fact's confidence and importance halfway to 1, ``False``, for a wrong or
        unhelpful fact, halves them, so it ranks lower in prompts and, with ``decay``, in
        searches; the rule is in ``memorybank.consolidation._async.feedback``). A document
        or entry hit moves only its importance (``memory.usage.rate``).
        ``reason``: why, kept with a fact's feedback. A fact the caller may not see is
        ``NotFound`` (its scope is the fact's, under the usual rule).
        """
        from memorybank.consolidation._async.feedback import give_feedback

        if isinstance(hit_or_id, Hit) and hit_or_id.fact is None:
            if hit_or_id.document is not None:
                return await self.usage.rate(
                    "document",
                    hit_or_id.document.id,
                    useful=useful,
                    user_id=user_id,
                    agent_id=agent_id,
                )
            if hit_or_id.entry is not None:
                return await self.usage.rate(
                    "entry",
                    hit_or_id.entry.id,
                    thread_id=hit_or_id.entry.thread_id,
                    useful=useful,
                    user_id=user_id,
                    agent_id=agent_id,
                )

        return await give_feedback(
            self._core,
            self.tenant_id,
            self.facts,
            hit_or_id,
            useful=useful,
            reason=reason,
            user_id=user_id,
            agent_id=agent_id,
        )

    async def profile(
        self, user_id: str | Unset = UNSET, *, agent_id: str | Unset | None = UNSET
    ) -> Profile:
        """A user's current facts grouped by attribute (name, preferences, plans, ...),
        each with its provenance and time.

        ``user_id``: whose profile (left out: the handle's user; required on a handle
        without one). ``agent_id``: only the facts that agent sees (its own and those
        shared by every agent; left out: the handle's, else every agent's). Only the
        user's own facts count, never shared ones; the grouping rule is
        ``memorybank.consolidation.profile``'s, and ``memory.consolidate`` keeps it current.
        """
        from memorybank.consolidation.profile import build_profile

        user = self._scope.user(user_id)
        if not isinstance(user, str):
            raise InvalidInput("profile needs a user_id (a string)", field="user_id")
        facts = await self.facts.list(user_id=user, agent_id=agent_id)
        return build_profile(user, facts)

    @functools.cached_property
    def usage(self) -> AsyncUsage:
        """``memory.usage``: importance and last use of facts, documents and entries
        (the rules: ``memorybank.importance``)."""
        return AsyncUsage(self._core, self.tenant_id, self._scope)

    @functools.cached_property
    def graph(self) -> AsyncGraph:
        """``memory.graph``: the knowledge graph (see docs/graph.md)."""
        from memorybank.graph._async import AsyncGraph

        return AsyncGraph(self._core, self.tenant_id, self._scope)

    @functools.cached_property
    def events(self) -> AsyncEvents:
        """``memory.events``: the change feed (``list``; ``enable``, ``disable``, ``keep``,
        ``prune``). See docs/events.md."""
        return AsyncEvents(self._core, self.tenant_id, self._scope)

    @functools.cached_property
    def documents(self) -> AsyncDocuments:
        """``memory.documents``: searchable documents."""
        return AsyncDocuments(self._core, self.tenant_id, self._scope)

    @staticmethod
    def _embedding_module() -> types.ModuleType:
        # loads with the first use of background embedding: a read-only script skips it
        from memorybank.core._async import embedding

        return embedding

    @functools.cached_property
    def embedding(self) -> AsyncEmbedding:
        """``memory.embedding``: background embedding's ``flush()`` and ``status()``."""
        handle: AsyncEmbedding = self._embedding_module().AsyncEmbedding(
            self._core.embed_service, self._core.embedder, self.tenant_id
        )
        return handle

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this memory searches with (``None``: no semantic search)."""
        return self._core.embedder

    @property
    def store(self) -> AsyncStore:
        """The store this memory writes to."""
        return self._core.store

    @staticmethod
    def _helper_class(name: str) -> type:
        """The class behind ``ContextBuilder(...)``, ``CompactionService(...)`` and
        ``SessionManager(...)`` given this memory
        (``memorybank.context.values``): awaitable ones here, sync ones for a ``Memory``."""
        # each loads with its first use
        if name == "context_builder":
            from memorybank.context._async.builder import AsyncContextBuilder

            return AsyncContextBuilder
        if name == "compaction_service":
            from memorybank.context._async.compaction import AsyncCompactionService

            return AsyncCompactionService
        from memorybank.context._async.sessions import AsyncSessionManager

        return AsyncSessionManager

    @property
    def scope(self) -> Scope:
        """The principal this handle is confined to (``Scope()``: the unscoped root)."""
        return self._scope

    def now(self) -> datetime:
        """The time by this memory's ``clock``: what its writes are stamped with.

        Integrations stamp their own records (TTLs, checkpoints) with it, so a
        memory built with a test clock controls their time too."""
        return self._core.now()

    def _handle(self, tenant: str, scope: Scope) -> AsyncMemory:
        if self._core.consolidate_every is not None:
            self._core.consolidate_tenants.add(tenant)  # looked after from now on
        handle = object.__new__(type(self))
        handle._init(self._core, tenant, scope)
        return handle

    def tenant(self, tenant_id: str) -> AsyncMemory:
        """A handle confined to ``tenant_id``, sharing this memory's store, options and scope."""
        return self._handle(v.check_tenant(tenant_id, "tenant_id"), self._scope)

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
        With ``embed="background"``, the queue gets up to ``EMBED_CLOSE_TIMEOUT``
        seconds to empty; what is left stays in the journal for the next start (its
        leases released, so another process takes it at once).
        The extractor and the reranker are the caller's: they stay open.
        The uses searches noted and not yet written are written first.
        With ``consolidate="background"``, the worker stops first (between two owners;
        a run cut short is completed by the next start).
        """
        if self._core.usage.items:
            try:
                await flush_usage(self._core)
            except Exception as error:  # hints, not data: closing goes on
                logger.warning("memorybank: could not write search uses (%s)", error)
        if self._core.consolidate_service is not None:
            await self._core.consolidate_service.close()
        if self._core.background is not None:
            await self._core.background.close(EXTRACT_CLOSE_TIMEOUT)
        if self._core.embed_service is not None:
            await self._core.embed_service.close(EMBED_CLOSE_TIMEOUT)
        if self._core.owns_store:
            await self._core.store.close()
        if self._core.vector_index is not None:
            await self._core.vector_index.close()

    async def __aenter__(self) -> AsyncMemory:
        if self._core.embed_service is not None:
            await self._core.embed_service.start()  # resume what a stopped process left
        if self._core.consolidate_every is not None:
            await self.consolidation.start()
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
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """The thread, created (owned by ``user_id``, with ``metadata``) when absent.

        Fails closed: an existing thread whose owner is not ``user_id`` raises
        ``ThreadForbidden`` (also for an unowned thread and a named user, and
        the other way round), also when another writer created it meanwhile. On
        a ``scoped`` handle ``user_id`` defaults to its user; on the root handle
        leaving it out is the trusted form (no check, an absent thread is created
        without owner). An existing thread is returned as it is.
        """
        if thread_id is not None:
            thread = await self.threads.get(thread_id, user_id=user_id)
            if thread is not None:
                return thread
        try:
            return await self.threads.create(
                thread_id=thread_id, user_id=user_id, agent_id=agent_id, metadata=metadata
            )
        except Conflict:
            if thread_id is None:
                raise
        return await self.threads.require(thread_id, user_id=user_id)  # created concurrently

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
        """Append one message to the thread's current branch and bump its ``updated_at``.

        ``thread_id``: the conversation thread. ``role``: who said it (``user``,
        ``assistant``, ``system``, ``developer`` or ``tool``). ``content``: the message
        text. ``metadata``: JSON kept with the message. ``idempotency_key``: a retry with
        the same key stores the message only once. The other fields are a message's, as
        ``entries.add`` takes them.
        """
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
        """The last messages of a thread, oldest first, as provider-shaped dicts.

        ``thread_id``: the conversation thread. ``last``: how many of the newest messages.
        ``user_id``: who reads (left out: the handle's user), under the thread rule.
        """
        v.check_limit(last, "last", allow_none=False)
        user_id = self._scope.user(user_id)
        owner, messages = await self._core.store.entry_list_recent(
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
        include_profile: bool = False,
    ) -> Context:
        """The messages for the next model call on a thread, within a token budget: a
        system message, then the most recent history that fits.

        See ``ContextBuilder``. ``thread_id``: the conversation thread. ``max_tokens``: the
        token budget. ``system_prompt``: the system prompt. ``current_input``: the user's
        new message (guides what is included). ``include_facts``: add the known facts to the
        system message. ``agent_id`` is required (a ``scoped`` handle's agent by default);
        ``user_id`` defaults to the handle's user; on a handle with none (the trusted form,
        as for ``history``) to the thread's owner, so the context is the one the thread's
        own turns see. ``user_id=None`` builds it for no user (``ThreadForbidden`` on an
        owned thread). ``include_graph_context`` adds ``memory.graph``'s ``Entities:`` and
        ``Relationships:`` about what ``current_input`` names, chosen with ``graph_options``
        (a ``GraphContextOptions``, or a dict of its fields). ``include_profile``: add the
        user's profile (``memory.profile``) as a ``User profile:`` block.
        """
        from memorybank.context._async.builder import AsyncContextBuilder
        from memorybank.context.values import ContextOptions
        from memorybank.graph._context import as_options

        agent, user = await self._context_principal(thread_id, agent_id, user_id)

        options = ContextOptions(
            max_tokens=max_tokens,
            strategy=strategy,
            reserve_tokens=reserve_tokens,
            include_system_prompt=include_system_prompt,
            include_facts=include_facts,
            include_semantic_context=include_semantic_context,
            include_graph_context=include_graph_context,
            graph_options=as_options(graph_options),
            include_profile=include_profile,
        )
        return await AsyncContextBuilder(options, self).build(
            thread_id,
            agent_id=agent,
            user_id=user,
            system_prompt=system_prompt,
            current_input=current_input,
        )

    async def _context_principal(
        self, thread_id: str, agent_id: object, user_id: object
    ) -> tuple[str, str | None]:
        """The agent and user a context of ``thread_id`` is built for: as ``_principal``,
        except that a user left out on a handle with none is the thread's owner."""
        agent, user = self._principal(agent_id, user_id)
        if not isinstance(user, Unset):
            return agent, user
        thread = await self._core.store.thread_get(
            self.tenant_id, v.check_id(thread_id, "thread_id")
        )
        return agent, None if thread is None else thread.user_id

    def _principal(self, agent_id: object, user_id: object) -> tuple[str, str | Unset | None]:
        """The agent (required) and user (left out: ``UNSET``) a context is built for."""
        agent, user = self._scope.agent(agent_id), self._scope.user(user_id)
        if not isinstance(agent, str):
            raise InvalidInput("agent_id is required (a string)", field="agent_id")
        return agent, user

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
        from memorybank.context._async.turn import AsyncTurn

        agent, user = self._principal(agent_id, user_id)
        return AsyncTurn(
            self,
            v.check_id(thread_id, "thread_id"),
            user_id=None if isinstance(user, Unset) else user,
            agent_id=agent,
            input=input,
            context=context,
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
        key = _run_key(v.check_id(run_id, "run_id"), user, agent)
        owner = None  # a user's run is marked as hers, so forget_user finds it
        if isinstance(user, str):
            owner = (user, agent if isinstance(agent, str) else None)
        return AsyncWorkingMemory(self._core, self.tenant_id, key, run_id, owner)

    async def working_runs(self, *, limit: int | None = None) -> list[WorkingRun]:
        """The runs holding working memory that this handle could open, in id order, with
        their values.

        On a handle scoped to a user (or an agent), the runs opened with that
        principal; on the unscoped handle, every run of the tenant.
        """
        return await list_working(
            self._core, self.tenant_id, self._scope, limit=v.check_limit(limit, "limit")
        )

    async def prune(self, policy: RetentionPolicy, *, dry_run: bool = False) -> PruneReport:
        """Apply a retention policy to this tenant's threads; what went (or would go).

        See ``memorybank.retention.RetentionPolicy`` for the rules (tool-call
        pairing is never broken; facts and documents go only by the long-term rules,
        ``min_importance`` and ``unused_for``, listed in ``report.long_term``). With
        ``dry_run`` nothing changes (and the report lists what would go). After a real
        prune that removed something the store reclaims the space (SQLite: ``VACUUM``).
        Only on an unscoped handle (``memory`` or ``memory.tenant(T)``): a policy covers
        the whole tenant.
        """
        from memorybank.memory._async.retention import prune_tenant

        if not isinstance(policy, RetentionPolicy):
            raise InvalidInput("policy must be a RetentionPolicy", field="policy")
        if self._scope is not ROOT:
            raise InvalidInput(
                "prune covers a whole tenant: call it on an unscoped handle", field="scope"
            )
        return await prune_tenant(
            self._core.store,
            self.tenant_id,
            policy,
            now=self._core.now(),
            dry_run=dry_run,
            core=self._core,
        )

    async def forget_user(self, user_id: str | Unset = UNSET) -> int:
        """Erase everything derived from ``user_id`` in this tenant; how many records went.

        A handle scoped to a user may only forget that user (its own, by default).
        """
        user = self._scope.user(user_id)
        if not isinstance(user, str):
            raise InvalidInput("forget_user needs a user_id (a string)", field="user_id")
        await forget_working(self._core, self.tenant_id, user)
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
        decay: HalfLife | None = None,
    ) -> list[Hit]:
        """The ``k`` best entries, documents and facts for ``query``, best first.

        ``query``: what to look for. ``k``: how many hits. ``mode``: ``"hybrid"``
        (keyword + semantic + conversation context),
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
        ranking (``memorybank.recall.SearchOptions``). ``rerank``: ``None``
        uses the memory's reranker (if any) on hybrid searches, ``False`` skips
        it, ``True`` requires it; it reorders the best ``rerank_top`` hits
        (default 20) and never fails the search (see
        ``memorybank.recall._async.rerank_stage``). ``decay``: a
        ``memorybank.importance.HalfLife`` weighing scores by recency of use and
        importance (``None``, the default: rankings as without it). The hits returned
        are noted as used (importance and last use, written in batches: see
        ``memorybank.importance``). See ``memorybank.recall._async.search``.
        """
        from memorybank.recall._async import search

        hits = await search.run_search(
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
            decay=decay,
        )
        if hits:
            note_hits(self._core, self.tenant_id, hits, self._core.now())
            if self._core.usage.full():
                try:
                    await flush_usage(self._core)
                except Exception as error:  # hints, not data: a search on a read-only store answers
                    logger.warning("memorybank: could not write search uses (%s)", error)
        return hits

    async def embed_pending(
        self, *, thread_id: str | None = None, batch_size: int | None = None
    ) -> int:
        """Embed every entry and document lacking a vector of the current embedder; how many.

        Catches up a backlog: entries stored before an embedder was configured,
        after its model changed, or while it failed. Works in batches of
        ``batch_size`` texts (default ``EMBED_BATCH``). ``thread_id`` limits
        it to one thread (entries only).
        """
        if thread_id is not None:
            await self.threads.require(thread_id)
        return await embed_pending(
            self._core.store,
            self._core.embedder,
            self.tenant_id,
            thread_id=thread_id,
            batch_size=EMBED_BATCH if batch_size is None else batch_size,
        )


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


def _check_embed(embed: object, queue: object) -> None:
    if embed not in ("inline", "background"):
        raise ConfigurationError(f"embed must be 'inline' or 'background', got {embed!r}")
    if isinstance(queue, bool) or not isinstance(queue, int) or queue < 1:
        raise ConfigurationError("embed_queue must be a positive int")


def _check_consolidate(mode: object, every: object) -> float | None:
    """The seconds between background consolidation ticks (``None``: off)."""
    if mode not in ("off", "background"):
        raise ConfigurationError(f"consolidate must be 'off' or 'background', got {mode!r}")
    seconds = every.total_seconds() if isinstance(every, timedelta) else every
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ConfigurationError(
            f"consolidate_every must be positive seconds or a timedelta, got {every!r}"
        )
    return float(seconds) if mode == "background" else None


def _checked_judge(judge: object) -> LLMJudge | None:
    # imported only for a judge: a memory without one never loads httpx for it
    if judge is None:
        return None
    from memorybank.core.judge import LLMJudge

    if not isinstance(judge, LLMJudge):
        raise ConfigurationError(f"judge must be an LLMJudge, got {type(judge).__name__}")
    return judge
