"""``memory.search``: keyword, semantic and hybrid recall over entries, documents and facts.

Pipeline
    1. Scope once: the tenant, then what ``Visibility(agent_id, user_id)`` may
       see (a thread's entries by the thread's owner and agent, a document by its
       own). ``thread_id`` follows the thread rule of every other verb: a named
       user must own it (``ThreadForbidden`` otherwise, ``NotFound`` when absent);
       a thread so named is searched whole in every mode (its entries whichever
       agent wrote them).
    2. ``mode="keyword"``: the store's native full-text search (SQLite FTS5,
       PostgreSQL tsvector, MySQL FULLTEXT, BM25 elsewhere); scores are the
       store's relevance. ``mode="semantic"``: the store's vector search over
       vectors of the configured embedder's ``model_id``; scores are cosine
       similarities.
    3. ``mode="hybrid"``:

       * thread-scoped and the thread holds at most ``THREAD_RANK_LIMIT``
         entries: *every* entry of the thread's current branch is ranked by the
         retrieval core (:class:`memorybank.retrieval.HybridRanker`: BM25 with
         stemming, cosine, the neighbours of a hit, the session, named
         speakers, dates). The ranker is cached per thread and rebuilt when the
         thread changes, so a query costs one read of the thread plus numpy.
       * no ``thread_id`` (a user's whole history) and what the caller may see
         is at most ``SCOPE_THREAD_LIMIT`` threads holding at most
         ``THREAD_RANK_LIMIT`` entries: every entry of those threads (current
         branches) is ranked the same way, each thread a session of its own,
         so neighbours, the session prior and dates work across a user's
         threads exactly as inside one thread. Documents that match the query
         (store-native candidates) join that ranking.
       * otherwise: store-native candidates (keyword and semantic, a generous
         ``max(30, 3k)`` each), plus the 3 entries before and after each of the
         5 best entry hits, re-ranked by the same core (BM25 over the candidates
         with the core's analyser, not the store's full-text scores) and the
         stored vectors. A fixed number of store calls whatever
         the number of threads the hits fall in: the hits' threads
         (``thread_get_many``), their entries (``entry_get_across``), the
         neighbour windows (``entry_windows``) and the vectors (``vector_get``)
         are one batch read each.
       * then, only with ``Memory(reranker=...)``: the optional rerank stage
         reorders the best ``rerank_top`` hits (``memorybank.recall._async.rerank_stage``).
    4. ``mode="keyword"`` keeps only records that share at least one analysed
       term (stop words removed, stemmed) with the query, whatever the store's
       full-text engine returned.
    5. ``kinds`` with ``"facts"``: the facts the caller may see (as
       ``memory.facts.list``; earlier values too with ``include_history=True``)
       join the candidates of every path but the thread-scoped one, each a
       one-item session; see :mod:`memorybank.recall._async.fact_recall`. Keyword mode
       takes them from the store's full-text search, semantic mode scores them by
       cosine; among the store-native hybrid candidates, keyword scores are
       BM25 over the candidates (a store keeps facts in another full-text index
       than entries, on another scale).

Entry embeddings
    Written *on write*, one embedder batch per ``entries.add``/``add_many`` call
    (an ``add_many`` of 500 messages is one ``embed`` call, never 500). If the
    embedder fails, the entry is still stored (the conversation must not be
    lost) and a warning is logged; the backlog is caught up by
    ``memory.embed_pending()`` (batches of 256, also after changing the
    embedder's model), and a thread-scoped hybrid search embeds any entry of
    its thread that still lacks a vector before ranking.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memorybank.errors import ConfigurationError, InvalidInput, NotFound
from memorybank.memory._async.documents import DOCUMENT_KIND, document_from_record
from memorybank.memory._async.facts import FACT, FACT_VERSION
from memorybank.recall._async.fact_recall import (
    FactItem,
    fact_candidates,
    fact_item,
    fact_pool,
    fact_vectors,
)
from memorybank.recall._async.rerank_stage import plan_rerank, rerank_hits
from memorybank.recall.text import default_analyzer
from memorybank.records import Document, Entry, Hit, Thread
from memorybank.retrieval import Candidate, HybridRanker, SearchOptions
from memorybank.rules import validate as v
from memorybank.rules.scope import check_owner
from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import (
    UNSET,
    Record,
    SearchHit,
    Unset,
    VectorItem,
    Visibility,
)
from memorybank.stores.contract.types import LAST_POSITION

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from memorybank.embeddings.base import Embedder
    from memorybank.memory._async.core import _Core
    from memorybank.stores.contract._async.store import AsyncStore

__all__ = [
    "EMBED_BATCH",
    "SCOPE_THREAD_LIMIT",
    "THREAD_RANK_LIMIT",
    "SearchMode",
    "embed_entries",
    "embed_pending",
    "embed_texts",
    "run_search",
]


SearchMode = Literal["hybrid", "semantic", "keyword"]
#: A thread-scoped hybrid search ranks every entry of a thread up to this size
#: (ranking 5,000 entries takes a few milliseconds; reading them dominates).
THREAD_RANK_LIMIT = 5000
#: A search without ``thread_id`` ranks every visible entry when the caller sees at
#: most this many threads (and at most ``THREAD_RANK_LIMIT`` entries in them).
SCOPE_THREAD_LIMIT = 64
#: Texts per embedder call when embedding many entries or documents.
EMBED_BATCH = 256
_MIN_CANDIDATES = 30
_EXPAND_HITS = 5  # best entry hits whose neighbours join the candidates
_NEIGHBOURS = 3  # entries before and after each of them
_CACHED_THREADS = 16
_KINDS = {"entries": "entry", "documents": DOCUMENT_KIND, "facts": FACT}
_PREFIX = {"entry": "e:", DOCUMENT_KIND: "d:", FACT: "f:", FACT_VERSION: "v:"}
_MODES = ("hybrid", "semantic", "keyword")


# -- embedding ------------------------------------------------------------------------


async def embed_texts(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """The embedder's vectors for ``texts``, checked: every vector that reaches a store or
    a ranking passes here.

    Raises ``InvalidInput(field="embedding")`` for a vector no store can keep
    exactly (non-finite, beyond float32, not ``embedder.dimensions`` long):
    from a broken embedder, or an input it cannot encode, before anything is
    written. Vectors come back unit-length.
    """
    out: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = texts[start : start + EMBED_BATCH]
        vectors = await embedder.aembed(chunk)
        if len(vectors) != len(chunk):
            raise ConfigurationError(
                f"embedder returned {len(vectors)} vectors for {len(chunk)} texts"
            )
        dimensions = embedder.dimensions
        out.extend(v.check_vector(vector, "embedding", dimensions=dimensions) for vector in vectors)
    return out


async def embed_entries(core: _Core, tenant: str, entries: Sequence[Entry]) -> int:
    """Embed freshly written entries in one batch; never raises (logs and leaves a backlog)."""
    embedder = core.embedder
    if embedder is None:
        return 0
    todo = [e for e in entries if e.content]
    if not todo:
        return 0
    try:
        vectors = await embed_texts(embedder, [e.content or "" for e in todo])
        await core.store.vector_put(
            tenant,
            [
                VectorItem("entry", e.id, embedder.model_id, vec, e.thread_id)
                for e, vec in zip(todo, vectors, strict=True)
            ],
        )
    except Exception as error:  # the entries are stored; embed_pending() catches up
        logger.warning(
            "memorybank: could not embed %d new entries (%s: %s); run memory.embed_pending()",
            len(todo),
            type(error).__name__,
            error,
        )
        return 0
    return len(todo)


async def embed_pending(
    core: _Core, tenant: str, *, thread_id: str | None = None, batch_size: int = EMBED_BATCH
) -> int:
    """Embed every entry (and document) lacking a vector of the embedder's model; how many."""
    embedder = core.embedder
    if embedder is None:
        raise ConfigurationError("embed_pending needs an embedder: Memory(url, embedder=...)")
    if not v.check_limit(batch_size, "batch_size", allow_none=False):
        raise InvalidInput("batch_size must be a positive integer", field="batch_size")
    store = core.store
    model = embedder.model_id
    if thread_id is not None:
        thread = await store.get_thread(tenant, v.check_id(thread_id, "thread_id"))
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        threads = [thread]
    else:
        threads = await store.list_threads(tenant)
    pending: list[tuple[str, str, str | None, str]] = []  # kind, id, thread, text
    done = 0

    async def flush() -> None:
        nonlocal done
        if not pending:
            return
        vectors = await embed_texts(embedder, [p[3] for p in pending])
        await store.vector_put(
            tenant,
            [
                VectorItem(kind, rid, model, vec, tid)
                for (kind, rid, tid, _), vec in zip(pending, vectors, strict=True)
            ],
        )
        done += len(pending)
        pending.clear()

    for thread in threads:
        texts: dict[str, str] = {}
        for branch in await store.list_branches(tenant, thread.id):
            _, rows = await store.list_entries(tenant, thread.id, branch=branch.name)
            for entry in rows:
                if entry.content:
                    texts.setdefault(entry.id, entry.content)
        have = await store.vector_get(tenant, "entry", list(texts), model_id=model)
        for eid, text in texts.items():
            if eid not in have:
                pending.append(("entry", eid, thread.id, text))
                if len(pending) >= batch_size:
                    await flush()
    if thread_id is None:
        docs = await store.record_list(tenant, DOCUMENT_KIND)
        have = await store.vector_get(tenant, DOCUMENT_KIND, [d.id for d in docs], model_id=model)
        for doc in docs:
            if doc.id not in have:
                pending.append((DOCUMENT_KIND, doc.id, None, doc.content))
                if len(pending) >= batch_size:
                    await flush()
    await flush()
    return done


# -- thread ranker cache -------------------------------------------------------------------


@dataclasses.dataclass
class _ThreadIndex:
    signature: tuple[tuple[str, str, int, str, str | None, datetime], ...]
    model_id: str | None
    options: SearchOptions
    ranker: HybridRanker
    vectors: dict[tuple[str, str], NDArray[np.float32]]  # (id, content) -> vector
    #: the last ranker extended with documents and facts, and what they were
    extended: tuple[tuple[tuple[str, str, datetime | None, bool], ...], HybridRanker] | None = None


_CACHES: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[str, ...], _ThreadIndex]] = (
    weakref.WeakKeyDictionary()
)


def _cache(core: _Core) -> OrderedDict[tuple[str, ...], _ThreadIndex]:
    cache = _CACHES.get(core)
    if cache is None:
        cache = _CACHES[core] = OrderedDict()
    return cache


# -- search --------------------------------------------------------------------------------


def _matches(metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
    return all(k in metadata and metadata[k] == x for k, x in filters.items())


def _check_kinds(kinds: object) -> list[str]:
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, Sequence | set | frozenset):
        raise InvalidInput(
            "kinds must be a list of 'entries', 'documents' and 'facts'", field="kinds"
        )
    out: list[str] = []
    for kind in kinds:
        if not isinstance(kind, str) or kind not in _KINDS:
            raise InvalidInput(
                f"unknown kind {kind!r}: use 'entries', 'documents' and/or 'facts'", field="kinds"
            )
        if _KINDS[kind] not in out:
            out.append(_KINDS[kind])
    return out


async def _query_vector(embedder: Embedder | None, query: str) -> NDArray[np.float32] | None:
    if embedder is None:
        return None
    return np.asarray((await embed_texts(embedder, [query]))[0], dtype=np.float32)


async def run_search(
    core: _Core,
    tenant: str,
    query: str,
    *,
    k: int,
    mode: SearchMode,
    thread_id: str | None,
    visible: Visibility | None,
    kinds: Sequence[str],
    min_score: float | None,
    filters: dict[str, Any] | None,
    options: SearchOptions | None,
    rerank: bool | None = None,
    rerank_top: int | None = None,
    include_history: bool = False,
) -> list[Hit]:
    """The implementation of ``memory.search`` (see the module docstring)."""
    v.check_text(query, "query")
    limit = v.check_limit(k, "k", allow_none=False)
    assert limit is not None
    if mode not in _MODES:
        raise InvalidInput("mode must be 'hybrid', 'semantic' or 'keyword'", field="mode")
    store_kinds = _check_kinds(kinds)
    if not isinstance(include_history, bool):
        raise InvalidInput("include_history must be true or false", field="include_history")
    if include_history and FACT not in store_kinds:
        raise InvalidInput(
            "include_history applies to facts: add 'facts' to kinds", field="include_history"
        )
    if visible is None:
        visible = Visibility(UNSET, UNSET)
    wanted = v.check_json_object(filters, "filters")
    if min_score is not None and (
        isinstance(min_score, bool)
        or not isinstance(min_score, int | float)
        or not math.isfinite(min_score)
    ):
        raise InvalidInput("min_score must be a finite number", field="min_score")
    if options is not None and not isinstance(options, SearchOptions):
        raise InvalidInput("options must be a memorybank.retrieval.SearchOptions", field="options")
    opts = options or SearchOptions()
    reranker, top = plan_rerank(core.reranker, mode, rerank, rerank_top)
    embedder = core.embedder
    if mode == "semantic" and embedder is None:
        raise ConfigurationError("semantic search needs an embedder: Memory(url, embedder=...)")
    store = core.store
    thread: Thread | None = None
    if thread_id is not None:
        thread = await store.get_thread(tenant, v.check_id(thread_id, "thread_id"))
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        check_owner(thread, visible.user_id)
        store_kinds = [kind for kind in store_kinds if kind == "entry"]
        # One rule in every mode: a thread the caller may name (the thread rule above, as
        # for every other verb) is searched whole, whichever agent wrote it, as the hybrid
        # ranking of the whole thread does; the stores' searches stay confined to it.
        visible = Visibility(UNSET, UNSET)
    if limit == 0 or not store_kinds or not query.strip():
        return []
    fetch = limit if reranker is None else max(limit, top)
    search = _Search(
        core, tenant, query, fetch, visible, wanted, min_score, opts, store_kinds, include_history
    )
    hits = await _dispatch(search, store, tenant, thread, mode, store_kinds)
    if reranker is not None:  # the optional stage: see memorybank.recall._async.rerank_stage
        hits = (await rerank_hits(reranker, query, hits, top))[:limit]
    return hits


async def _dispatch(
    search: _Search,
    store: AsyncStore,
    tenant: str,
    thread: Thread | None,
    mode: SearchMode,
    store_kinds: list[str],
) -> list[Hit]:
    if thread is not None and mode == "hybrid":
        count = await store.count_entries(tenant, thread.id)
        if count <= THREAD_RANK_LIMIT:
            return await search.rank_thread(thread)
    if thread is None and mode == "hybrid" and "entry" in store_kinds:
        threads = await search.scope_threads()
        if threads is not None:
            return await search.rank_scope(threads)
    return await search.native(mode, thread)


def _shares_a_term(query: str, text: str) -> bool:
    """Whether ``text`` holds at least one analysed term of ``query`` (keyword mode)."""
    analyzer = default_analyzer()
    return not set(analyzer.terms(query)).isdisjoint(analyzer.terms(text))


class _Search:
    """One query's state: what it may see, and the records it has read."""

    def __init__(
        self,
        core: _Core,
        tenant: str,
        query: str,
        k: int,
        visible: Visibility,
        filters: dict[str, Any],
        min_score: float | None,
        options: SearchOptions,
        kinds: list[str],
        include_history: bool = False,
    ) -> None:
        self.core = core
        self.store = core.store
        self.tenant = tenant
        self.query = query
        self.k = k
        self.visible = visible
        self.filters = filters
        self.min_score = min_score
        self.options = options
        self.kinds = kinds
        #: record kinds of facts searched: current values, and earlier ones with history
        self.fact_kinds = [] if FACT not in kinds else [FACT, FACT_VERSION][: 1 + include_history]
        self.threads: dict[str, Thread | None] = {}
        self._qvecs: list[NDArray[np.float32] | None] = []
        # hits resolved in batches (``_prefetch``): (thread, entry id) / (kind, id) -> row
        self.entries: dict[tuple[str, str], Entry | None] = {}
        self.records: dict[tuple[str, str], Record | None] = {}

    def _keep(self, score: float, metadata: dict[str, Any]) -> bool:
        if not math.isfinite(score):  # vectors are checked on the way in; never leak a NaN
            return False
        if self.min_score is not None and score < self.min_score:
            return False
        return not self.filters or _matches(metadata, self.filters)

    # -- thread-scoped: rank every entry ------------------------------------------------

    async def rank_thread(self, thread: Thread) -> list[Hit]:
        _, rows = await self.store.list_entries(self.tenant, thread.id)
        key = (self.tenant, thread.id, thread.current_branch)
        return await self._rank_entries(key, [e for e in rows if e.content], [])

    async def scope_threads(self) -> list[Thread] | None:
        """The threads this caller may see, or ``None`` when they are too many (more than
        ``SCOPE_THREAD_LIMIT`` threads or ``THREAD_RANK_LIMIT`` entries) to rank whole."""
        user, agent = self.visible.user_id, self.visible.agent_id
        users: list[str | Unset | None] = [user] if not isinstance(user, str) else [user, None]
        agents: list[str | Unset | None] = [agent] if not isinstance(agent, str) else [agent, None]
        found: dict[str, Thread] = {}
        for u in users:
            for a in agents:
                for thread in await self.store.list_threads(
                    self.tenant, user_id=u, agent_id=a, limit=SCOPE_THREAD_LIMIT + 1
                ):
                    if self.visible.admits(thread.agent_id, thread.user_id):
                        found[thread.id] = thread
                    if len(found) > SCOPE_THREAD_LIMIT:
                        return None
        counts = await self.store.count_entries_many(self.tenant, list(found))
        if sum(counts.values()) > THREAD_RANK_LIMIT:
            return None
        return sorted(found.values(), key=lambda t: (t.created_at, t.id))

    async def rank_scope(self, threads: list[Thread]) -> list[Hit]:
        """Rank every entry of ``threads`` (and the documents that match) as one memory."""
        # one batch read of the whole threads (``entry_windows``), not one per thread
        windows = [(thread.id, 0, LAST_POSITION) for thread in threads]
        entries = [
            e
            for rows in (await self.store.entry_windows(self.tenant, windows) if windows else [])
            for e in rows
            if e.content
        ]
        documents: list[Document] = []
        if DOCUMENT_KIND in self.kinds:
            documents = await self._matching_documents()
        facts: list[FactItem] = []
        if self.fact_kinds:
            facts = await fact_pool(
                self.core,
                self.tenant,
                self.visible,
                self.query,
                kinds=self.fact_kinds,
                fetch=max(_MIN_CANDIDATES, 3 * self.k),
                query_vector=await self._qvec_list(),
            )
        scope = f"{self.visible.user_id!r}/{self.visible.agent_id!r}"
        return await self._rank_entries((self.tenant, "scope", scope), entries, documents, facts)

    async def _qvec(self) -> NDArray[np.float32] | None:
        """The query's vector (``None`` without an embedder), embedded once per search."""
        if not self._qvecs:
            self._qvecs.append(await _query_vector(self.core.embedder, self.query))
        return self._qvecs[0]

    async def _qvec_list(self) -> list[float] | None:
        qvec = await self._qvec()
        return None if qvec is None else qvec.tolist()

    async def _matching_documents(self) -> list[Document]:
        """Documents among the store's keyword and vector candidates for the query."""
        embedder = self.core.embedder
        fetch = max(_MIN_CANDIDATES, 3 * self.k)
        hits = await self.store.text_search(
            self.tenant, self.query, kinds=[DOCUMENT_KIND], k=fetch, visible_to=self.visible
        )
        if embedder is not None:
            qvec = await self._qvec()
            assert qvec is not None
            hits += await self.store.vector_search(
                self.tenant,
                qvec.tolist(),
                model_id=embedder.model_id,
                kinds=[DOCUMENT_KIND],
                k=fetch,
                visible_to=self.visible,
            )
        out: dict[str, Document] = {}
        for hit in hits:
            if hit.id not in out:
                record = await self._resolve(hit)
                if isinstance(record, Document):
                    out[hit.id] = record
        return list(out.values())

    async def _rank_entries(
        self,
        key: tuple[str, ...],
        entries: list[Entry],
        documents: list[Document],
        facts: Sequence[FactItem] = (),
    ) -> list[Hit]:
        embedder = self.core.embedder
        model_id = None if embedder is None else embedder.model_id
        signature = tuple(
            (e.thread_id, e.id, e.position, e.content or "", e.name, e.created_at) for e in entries
        )
        cache = _cache(self.core)
        index = cache.get(key)
        if (
            index is None
            or index.signature != signature
            or index.model_id != model_id
            or index.options != self.options
        ):
            index = await self._build_index(entries, signature, model_id, index)
            cache[key] = index
            while len(cache) > _CACHED_THREADS:
                cache.popitem(last=False)
        cache.move_to_end(key)
        qvec = await self._qvec()
        records: dict[str, Entry | Document | FactItem] = {e.id: e for e in entries}
        ranker = index.ranker
        if documents or facts:  # a one-off ranker: entries, documents, facts on one scale
            stored: dict[str, list[float]] = {}
            if model_id is not None and documents:
                stored = await self.store.vector_get(
                    self.tenant, DOCUMENT_KIND, [d.id for d in documents], model_id=model_id
                )
            extra = [
                Candidate(
                    id="d:" + d.id,
                    thread_id="d:" + d.id,
                    position=0,
                    text=d.content,
                    created_at=d.created_at,
                    vector=None if d.id not in stored else np.asarray(stored[d.id], np.float32),
                )
                for d in documents
            ]
            records.update({"d:" + d.id: d for d in documents})
            extra += fact_candidates(facts, await fact_vectors(self.core, self.tenant, facts))
            records.update({f.key: f for f in facts})
            # kept while they stay the same (the facts of a scope rarely change)
            added = tuple((c.id, c.text, c.created_at, c.vector is not None) for c in extra)
            if index.extended is None or index.extended[0] != added:
                index.extended = (added, HybridRanker([*ranker.candidates, *extra], self.options))
            ranker = index.extended[1]
        hits: list[Hit] = []
        for i, score, signals in _rank(ranker, self.query, qvec):
            record = records[ranker.structure.ids[i]]
            if self._keep(score, record.metadata):
                hits.append(_hit(record, score, signals))
                if len(hits) >= self.k:
                    break
        return hits

    async def _build_index(
        self,
        entries: list[Entry],
        signature: tuple[tuple[str, str, int, str, str | None, datetime], ...],
        model_id: str | None,
        previous: _ThreadIndex | None,
    ) -> _ThreadIndex:
        embedder = self.core.embedder
        vectors: dict[tuple[str, str], NDArray[np.float32]] = {}
        if embedder is not None and model_id is not None:
            if previous is not None and previous.model_id == model_id:
                vectors = {
                    (e.id, e.content or ""): previous.vectors[(e.id, e.content or "")]
                    for e in entries
                    if (e.id, e.content or "") in previous.vectors
                }
            missing = [e for e in entries if (e.id, e.content or "") not in vectors]
            if missing:
                stored = await self.store.vector_get(
                    self.tenant, "entry", [e.id for e in missing], model_id=model_id
                )
                for e in missing:
                    if e.id in stored:
                        vectors[(e.id, e.content or "")] = np.asarray(stored[e.id], np.float32)
                missing = [e for e in missing if (e.id, e.content or "") not in vectors]
            if missing:  # catch up the backlog of this thread before ranking
                fresh = await embed_texts(embedder, [e.content or "" for e in missing])
                await self.store.vector_put(
                    self.tenant,
                    [
                        VectorItem("entry", e.id, model_id, vec, e.thread_id)
                        for e, vec in zip(missing, fresh, strict=True)
                    ],
                )
                for e, vec in zip(missing, fresh, strict=True):
                    vectors[(e.id, e.content or "")] = np.asarray(vec, np.float32)
        candidates = [
            Candidate(
                id=e.id,
                thread_id=e.thread_id,
                position=e.position,
                text=e.content or "",
                name=e.name,
                created_at=e.created_at,
                vector=vectors.get((e.id, e.content or "")),
            )
            for e in entries
        ]
        return _ThreadIndex(
            signature=signature,
            model_id=model_id,
            options=self.options,
            ranker=HybridRanker(candidates, self.options),
            vectors=vectors,
        )

    # -- store-native candidates --------------------------------------------------------

    async def _thread(self, thread_id: str) -> Thread | None:
        if thread_id not in self.threads:
            thread = await self.store.get_thread(self.tenant, thread_id)
            if thread is not None and not self.visible.admits(thread.agent_id, thread.user_id):
                thread = None  # defence in depth: the store already scoped its hits
            self.threads[thread_id] = thread
        return self.threads[thread_id]

    async def _prefetch(self, hits: Sequence[SearchHit]) -> None:
        """Read the hits' threads, entries and records in a few batch reads (the threads,
        their entries, one per record kind), so resolving them costs no round trip per hit."""
        by_thread: dict[str, list[str]] = {}
        by_kind: dict[str, list[str]] = {}
        for hit in hits:
            if hit.kind == "entry":
                if hit.thread_id is not None and (hit.thread_id, hit.id) not in self.entries:
                    by_thread.setdefault(hit.thread_id, []).append(hit.id)
            elif (hit.kind, hit.id) not in self.records:
                by_kind.setdefault(hit.kind, []).append(hit.id)
        unread = [tid for tid in by_thread if tid not in self.threads]
        if unread:
            threads = await self.store.thread_get_many(self.tenant, unread)
            for tid in unread:
                thread = threads.get(tid)
                if thread is not None and not self.visible.admits(thread.agent_id, thread.user_id):
                    thread = None  # defence in depth: the store already scoped its hits
                self.threads[tid] = thread
        # only the threads this caller may see are read
        admitted = {tid: ids for tid, ids in by_thread.items() if self.threads.get(tid) is not None}
        if admitted:
            got = await self.store.entry_get_across(self.tenant, admitted)
            for tid, ids in admitted.items():
                for eid in ids:
                    self.entries[(tid, eid)] = got.get((tid, eid))
        for kind, ids in by_kind.items():
            found = await self.store.record_get_many(self.tenant, kind, ids)
            for rid in ids:
                self.records[(kind, rid)] = found.get(rid)

    async def _resolve(self, hit: SearchHit) -> Entry | Document | FactItem | None:
        if hit.kind == "entry":
            if hit.thread_id is None:
                return None
            thread = await self._thread(hit.thread_id)
            if thread is None or (hit.branch is not None and hit.branch != thread.current_branch):
                return None
            if (thread.id, hit.id) in self.entries:
                return self.entries[(thread.id, hit.id)]
            return await self.store.get_entry(self.tenant, thread.id, hit.id)
        if (hit.kind, hit.id) in self.records:
            record = self.records[(hit.kind, hit.id)]
        else:
            record = await self.store.record_get(self.tenant, hit.kind, hit.id)
        if record is None or not self.visible.admits(record.agent_id, record.user_id):
            return None
        if hit.kind in (FACT, FACT_VERSION):
            return fact_item(record, self.core.now())
        return document_from_record(record)

    async def native(self, mode: SearchMode, thread: Thread | None) -> list[Hit]:
        embedder = self.core.embedder
        fetch = max(_MIN_CANDIDATES, (3 if mode == "hybrid" else 5) * self.k)
        if self.filters or self.min_score is not None:
            fetch *= 4
        thread_id = None if thread is None else thread.id
        text_hits: list[SearchHit] = []
        vector_hits: list[SearchHit] = []
        qvec: NDArray[np.float32] | None = None
        # Facts come from the store's full-text search in keyword mode (its scale), else
        # from ``fact_pool``: the facts are few, and an earlier value has no stored vector.
        text_kinds = [k for k in self.kinds if k != FACT]
        if mode == "keyword":
            text_kinds += self.fact_kinds
        if mode in ("hybrid", "keyword") and text_kinds:
            text_hits = await self.store.text_search(
                self.tenant,
                self.query,
                kinds=text_kinds,
                k=fetch,
                thread_id=thread_id,
                visible_to=self.visible,
            )
        if mode in ("hybrid", "semantic") and embedder is not None:
            qvec = await self._qvec()
            assert qvec is not None
            vector_kinds = [k for k in self.kinds if k != FACT]
            if vector_kinds:
                vector_hits = await self.store.vector_search(
                    self.tenant,
                    qvec.tolist(),
                    model_id=embedder.model_id,
                    kinds=vector_kinds,
                    k=fetch,
                    thread_id=thread_id,
                    visible_to=self.visible,
                )
        facts: list[FactItem] = []
        if self.fact_kinds and mode != "keyword":
            facts = await fact_pool(
                self.core,
                self.tenant,
                self.visible,
                self.query,
                kinds=self.fact_kinds,
                fetch=fetch,
                query_vector=None if qvec is None else qvec.tolist(),
            )
        if mode == "semantic" and facts:  # cosine, the scale of the store's vector search
            assert qvec is not None
            vectors = await fact_vectors(self.core, self.tenant, facts)
            scored = [
                (float(np.dot(qvec, vectors[f.key])), f.key) for f in facts if f.key in vectors
            ]
            vector_hits += [
                SearchHit(FACT if key[0] == "f" else FACT_VERSION, key[2:], score)
                for score, key in scored
            ]
            vector_hits.sort(key=lambda h: -h.score)  # stable: ties keep the store's order
        if mode != "hybrid":
            signal = "keyword" if mode == "keyword" else "semantic"
            hits: list[Hit] = []
            seen: set[tuple[str, str]] = set()
            await self._prefetch(text_hits or vector_hits)
            for hit in text_hits or vector_hits:
                if (hit.kind, hit.id) in seen or (
                    self.min_score is not None and hit.score < self.min_score
                ):
                    continue
                record = await self._resolve(hit)
                if record is None:
                    continue  # gone, out of scope, or a copy on another branch: another may follow
                seen.add((hit.kind, hit.id))
                if not self._keep(hit.score, record.metadata):
                    continue
                if mode == "keyword" and not _shares_a_term(self.query, record.content or ""):
                    continue  # a full-text engine may match stop words or nothing at all
                hits.append(_hit(record, hit.score, {signal: hit.score}))
                if len(hits) >= self.k:
                    break
            return hits
        return await self._fuse(text_hits, vector_hits, qvec, facts)

    async def _fuse(
        self,
        text_hits: list[SearchHit],
        vector_hits: list[SearchHit],
        qvec: NDArray[np.float32] | None,
        facts: Sequence[FactItem] = (),
    ) -> list[Hit]:
        records: dict[str, Entry | Document | FactItem] = {}  # candidate key -> record
        # hits resolved to nothing: per branch, since a forked entry's copies share its id
        # and only the copy on the thread's current branch resolves
        dropped: set[tuple[str, str | None]] = set()
        await self._prefetch([*text_hits, *vector_hits])
        for hit, _ in _interleave(text_hits, vector_hits):
            key = _PREFIX[hit.kind] + hit.id
            if key in records or (key, hit.branch) in dropped:
                continue
            record = await self._resolve(hit)
            if record is None:
                dropped.add((key, hit.branch))
                continue
            records[key] = record
        # the neighbours of the best entry hits: answers follow the matching turn
        # (one batch read; a hit within the window of a better one adds no window)
        windows: list[tuple[str, int, int]] = []
        best_entries = [r for r in records.values() if isinstance(r, Entry)][:_EXPAND_HITS]
        for entry in best_entries:
            tid, at = entry.thread_id, entry.position
            if any(w[0] == tid and w[1] <= at <= w[2] for w in windows):
                continue
            windows.append((tid, at - _NEIGHBOURS, at + _NEIGHBOURS))
        for around in await self.store.entry_windows(self.tenant, windows) if windows else []:
            for other in around:
                if other.content:
                    records.setdefault("e:" + other.id, other)
        records.update({f.key: f for f in facts})
        embedder = self.core.embedder
        vectors: dict[str, list[float] | NDArray[np.float32]] = {}
        if embedder is not None and qvec is not None:
            for prefix, kind in (("e:", "entry"), ("d:", DOCUMENT_KIND)):
                ids = [key[2:] for key in records if key.startswith(prefix)]
                if ids:
                    got = await self.store.vector_get(
                        self.tenant, kind, ids, model_id=embedder.model_id
                    )
                    vectors.update({prefix + rid: vec for rid, vec in got.items()})
            facts = [r for r in records.values() if isinstance(r, FactItem)]
            vectors.update(await fact_vectors(self.core, self.tenant, facts))
        candidates = [
            Candidate(
                id=key,
                thread_id=record.thread_id if isinstance(record, Entry) else key,
                position=record.position if isinstance(record, Entry) else 0,
                text=record.content or "",
                name=record.name if isinstance(record, Entry) else None,
                created_at=record.created_at,
                vector=None if key not in vectors else np.asarray(vectors[key], np.float32),
            )
            for key, record in records.items()
        ]
        if not candidates:
            return []
        ranker = HybridRanker(candidates, self.options)
        # Keyword scores are BM25 over the candidates (the ranker's analyser), not the
        # store's full-text rank: a store's engine counts stop words and the speakers'
        # names ("What did Maria ..." matches every "Maria: ..." turn), ranks facts in
        # another index on another scale, and gives the neighbours it did not return
        # nothing. On LoCoMo (user scope forced onto this path, k = 20) R@10 went
        # from 0.710 to 0.779.
        hits: list[Hit] = []
        for i, score, signals in _rank(ranker, self.query, qvec):
            record = records[ranker.structure.ids[i]]
            if self._keep(score, record.metadata):
                hits.append(_hit(record, score, signals))
                if len(hits) >= self.k:
                    break
        return hits


def _interleave(
    text_hits: list[SearchHit], vector_hits: list[SearchHit]
) -> list[tuple[SearchHit, bool]]:
    out: list[tuple[SearchHit, bool]] = []
    for i in range(max(len(text_hits), len(vector_hits))):
        if i < len(text_hits):
            out.append((text_hits[i], True))
        if i < len(vector_hits):
            out.append((vector_hits[i], False))
    return out


def _rank(
    ranker: HybridRanker,
    query: str,
    qvec: NDArray[np.float32] | None,
) -> Iterator[tuple[int, float, dict[str, float]]]:
    """Rank like ``HybridRanker.rank``, best first, with the signals of each candidate."""
    sig = ranker.signals(query, query_vector=qvec)
    scores = ranker.combine(sig)
    weights = ranker.options.weights
    direct = ranker.combine(
        sig, dataclasses.replace(weights, after=(), before=(), question_after=0.0, session=0.0)
    )
    for i in ranker.order(scores):
        signals: dict[str, float] = {}
        if sig.keyword[i] > 0:
            signals["keyword"] = float(sig.keyword[i])
        if sig.semantic_mask[i]:
            signals["semantic"] = float(sig.semantic[i])
        for name, values in (
            ("speaker", sig.speaker),
            ("date", sig.date),
            ("time_word", sig.time_word),
        ):
            if values[i] > 0:
                signals[name] = float(values[i])
        context = float(scores[i] - direct[i])
        if context > 1e-12:
            signals["context"] = context
        yield i, float(scores[i]), signals


def _hit(record: Entry | Document | FactItem, score: float, signals: dict[str, float]) -> Hit:
    if isinstance(record, Entry):
        return Hit("entry", score, signals, entry=record)
    if isinstance(record, FactItem):
        return Hit("fact", score, signals, fact=record.fact, superseded=record.superseded)
    return Hit("document", score, signals, document=record)
