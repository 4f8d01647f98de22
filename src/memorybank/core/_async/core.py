"""What every ``memory.*`` namespace shares: ``_Core`` and the thread and branch checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from memorybank.core._async.embed import embed_texts
from memorybank.errors import NotFound
from memorybank.importance import UsageBuffer
from memorybank.records import Message, Thread
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.rules.scope import ROOT, Scope, check_owner
from memorybank.runtime.concurrency import AsyncBackground, Breaker
from memorybank.stores.contract._async.leases import DEFAULT_LEASE
from memorybank.stores.contract._async.store import AsyncStore, Unset, VectorItem
from memorybank.tokens import Tokenizer

if TYPE_CHECKING:
    from memorybank.core._async.embedding import _EmbedService
    from memorybank.core.extraction import Extractor
    from memorybank.core.judge import LLMJudge
    from memorybank.embeddings.base import Embedder
    from memorybank.rerank.base import Reranker
    from memorybank.vector_index._async.index import AsyncVectorIndex


#: Largest ``content`` accepted by default (characters); see ``max_content_chars``.
MAX_CONTENT_CHARS = 1_000_000
#: Entries background extraction holds at most (queued or running); more are dropped.
EXTRACT_MAX_BACKLOG = 10_000
#: After this many background extractions in a row find the extractor unavailable,
#: the next ones fail at once for ``EXTRACT_PAUSE`` seconds (no request storm).
EXTRACT_BREAKER_THRESHOLD = 5
EXTRACT_PAUSE = 30.0

TitleFn = Callable[[str], str | Awaitable[str]]
Clock = Callable[[], datetime]
MessageLike = Message | dict[str, Any]


class _Closing(Protocol):
    """What the memory needs of a background worker: stopping it."""

    async def close(self) -> None: ...


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
        judge: LLMJudge | None = None,
    ) -> None:
        self.embedder = embedder
        #: Decides, in ``memory.consolidate``, what the rules cannot (``None``: rules only).
        self.judge = judge
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
        #: Uses noted by searches, written in batches (``memorybank.importance``).
        self.usage = UsageBuffer()
        #: The background embedding worker (``None``: ``embed="inline"``); set by the facade.
        self.embed_service: _EmbedService | None = None
        #: This memory, in the leases it takes (consolidation runs and schedule).
        self.worker = new_id()
        #: Seconds a consolidation run (or the schedule of a tenant) is held by its worker.
        self.consolidate_lease = DEFAULT_LEASE
        #: Seconds between background consolidation ticks (``None``: off).
        self.consolidate_every: float | None = None
        #: The tenants background consolidation looks after (those this memory served).
        self.consolidate_tenants: set[str] = set()
        #: The background consolidation worker, made on first use (``memory.consolidation``).
        self.consolidate_service: _Closing | None = None
        #: ``memory.graph.functional_types``, shared by every handle of this memory; set
        #: by the graph on its first use (``None``: not yet).
        self.functional_types: set[str] | None = None

    def now(self) -> datetime:
        return v.check_time(self.clock(), "clock()")


class Namespace:
    """A verb group of a memory handle (``memory.entries``, ``memory.facts``, ...): the
    memory's ``_Core`` and the handle's tenant and scope."""

    def __init__(self, core: _Core, tenant: str, scope: Scope = ROOT) -> None:
        self._core = core
        self._tenant = tenant
        self._scope = scope

    async def _embed(self, kind: str, item_id: str, text: str) -> VectorItem | None:
        """The checked vector of ``text`` for record ``kind``/``item_id`` (``None`` without
        an embedder): a write computes it before anything is written."""
        embedder = self._core.embedder
        if embedder is None:
            return None
        vectors = await embed_texts(embedder, [text])
        return VectorItem(kind, item_id, embedder.model_id, vectors[0])

    async def _put_vector(self, item: VectorItem | None) -> None:
        """Store the vector a write computed (and checked) before it wrote."""
        if item is not None:
            await self._core.store.vector_put(self._tenant, [item])

    async def _thread(self, thread_id: str, user_id: str | Unset | None) -> Thread:
        """The thread ``thread_id`` under the thread rule for ``user_id`` (left out: the
        handle's user): ``NotFound`` if absent, ``ThreadForbidden`` if not the owner."""
        user = self._scope.user(user_id)
        return await _require_thread(
            self._core, self._tenant, v.check_id(thread_id, "thread_id"), user
        )


def _check_title(title: object) -> str | None:
    return None if title is None else v.check_text(title, "title", max_chars=v.MAX_LABEL_CHARS)


async def _require_thread(
    core: _Core, tenant: str, thread_id: str, user_id: str | Unset | None
) -> Thread:
    thread = await core.store.thread_get(tenant, thread_id)
    if thread is None:
        raise NotFound(f"thread {thread_id!r} not found")
    check_owner(thread, user_id)
    return thread


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
    branches = await core.store.branch_list(tenant, thread_id)
    if not any(b.name == name for b in branches):
        raise NotFound(f"branch {name!r} not found")
