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
    3. ``mode="hybrid"``, one path for every scope size (a thread, a user's whole
       history, a tenant): the store's own candidates, keyword and semantic
       (``max(HYBRID_CANDIDATES, 3k)`` each, from its full-text index and its vector
       index), plus the ``_NEIGHBOURS`` entries before and after each of the
       ``_EXPAND_HITS`` best entry hits (answers follow the matching turn), are
       re-ranked by the retrieval core (:class:`memorybank.recall.HybridRanker`:
       BM25 over the candidates with the core's analyser, cosine from the stored
       vectors, the neighbours of a hit, the session, named speakers, dates). What
       a search reads and scores is bounded by ``k``, never by the scope: a fixed
       number of store calls whatever the number of threads the hits fall in (the
       hits' threads, their entries and the entries' vectors ``search_entries``, the
       neighbour windows with their vectors ``search_windows``: one call each, and
       ``vector_get_arrays`` for what those left out), and no cache is needed for
       speed. A candidate entry without a vector of the embedder's model (written
       before the embedder, or while it failed) is embedded then and stored.
       The query's embedding runs beside the keyword search, and the vector search
       beside the facts' read (``aboth``; one after the other in the sync ``Memory``).
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
    embedder's model), and a hybrid search embeds the candidates it found by
    keyword that still lack a vector.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memorybank.core._async.embed import embed_texts
from memorybank.core._async.facts import FACT, FACT_VERSION
from memorybank.core._async.usage import decayed
from memorybank.core.documents import DOCUMENT_KIND, document_from_record
from memorybank.errors import ConfigurationError, InvalidInput, NotFound
from memorybank.importance import DECAY_POOL, HalfLife
from memorybank.recall._async.fact_recall import (
    FactItem,
    fact_item,
    fact_pool,
    fact_vectors,
)
from memorybank.recall._async.rerank_stage import plan_rerank, rerank_hits
from memorybank.recall.conversation import Candidate
from memorybank.recall.hybrid import HybridRanker, SearchOptions
from memorybank.records import Document, Entry, Hit, Thread
from memorybank.rules import validate as v
from memorybank.rules.scope import check_owner
from memorybank.runtime.concurrency import aboth, aoffload
from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import (
    UNSET,
    Record,
    SearchHit,
    VectorItem,
    Visibility,
)
from memorybank.stores.contract.items import EntryRow
from memorybank.stores.keyword.text import default_analyzer

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from memorybank.core._async.core import _Core
    from memorybank.embeddings.base import Embedder

__all__ = ["HYBRID_CANDIDATES", "SearchMode", "run_search"]


SearchMode = Literal["hybrid", "semantic", "keyword"]
#: What a hybrid search asks each of the store's indexes (full text, vectors) for, at
#: least (``3 * k`` when more): the candidates the ranker scores, with the neighbours of
#: the best of them. The cost of a search follows this, never the size of the scope.
#: 50 would save a quarter of a search's CPU but loses recall (LoCoMo within 1,024
#: tokens 0.868 -> 0.857, LongMemEval NDCG@10 0.961 -> 0.945; docs/recall.md, issue 40/44).
HYBRID_CANDIDATES = 100
_MIN_CANDIDATES = 30
_EXPAND_HITS = 10  # best entry hits whose neighbours join the candidates
_NEIGHBOURS = 3  # entries before and after each of them
#: Candidates from which the ranking runs on a worker thread, not on the event loop
#: (170 candidates: 2-4 ms of Python, during which no other request would move).
_OFFLOAD_CANDIDATES = 48
_KINDS = {"entries": "entry", "documents": DOCUMENT_KIND, "facts": FACT}
_PREFIX = {"entry": "e:", DOCUMENT_KIND: "d:", FACT: "f:", FACT_VERSION: "v:"}
_MODES = ("hybrid", "semantic", "keyword")
#: What the hybrid path ranks: an entry (read as ``EntryRow`` without filters), a
#: document or a fact.
Ranked = Entry | EntryRow | Document | FactItem


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
    decay: HalfLife | None = None,
) -> list[Hit]:
    """The implementation of ``memory.search`` (see the module docstring)."""
    v.check_text(query, "query")
    limit = v.check_limit(k, "k", allow_none=False)
    if mode not in _MODES:
        raise InvalidInput("mode must be 'hybrid', 'semantic' or 'keyword'", field="mode")
    store_kinds = _check_kinds(kinds)
    v.check_bool(include_history, "include_history")
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
        raise InvalidInput("options must be a memorybank.recall.SearchOptions", field="options")
    opts = options or SearchOptions()
    if decay is not None and not isinstance(decay, HalfLife):
        raise InvalidInput("decay must be a memorybank.importance.HalfLife or None", field="decay")
    reranker, top = plan_rerank(core.reranker, mode, rerank, rerank_top)
    embedder = core.embedder
    if mode == "semantic" and embedder is None:
        raise ConfigurationError("semantic search needs an embedder: Memory(url, embedder=...)")
    store = core.store
    thread: Thread | None = None
    if thread_id is not None:
        thread = await store.thread_get(tenant, v.check_id(thread_id, "thread_id"))
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
    # with decay, a wider pool of the undecayed ranking is re-weighed (importance.HalfLife)
    pool = fetch if decay is None else max(fetch, 3 * limit, DECAY_POOL)
    search = _Search(
        core, tenant, query, pool, visible, wanted, min_score, opts, store_kinds, include_history
    )
    # One path for every scope size: the store's own candidates, never the whole scope.
    hits = await search.native(mode, thread)
    if decay is not None:
        hits = (await decayed(core, tenant, hits, decay))[:fetch]
    if reranker is not None:  # the optional stage: see memorybank.recall._async.rerank_stage
        hits = (await rerank_hits(reranker, query, hits, top))[:limit]
    return hits


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
        #: the hybrid path's entry hits, read as ``EntryRow`` (``_prefetch(rows=True)``)
        self.rows: dict[tuple[str, str], Entry | EntryRow | None] = {}
        self.records: dict[tuple[str, str], Record | None] = {}
        #: entry id -> its vector of the embedder's model, read with the hybrid candidates
        self.vectors: dict[str, NDArray[np.float32]] = {}

    def _keep(self, score: float, metadata: dict[str, Any]) -> bool:
        if not math.isfinite(score):  # vectors are checked on the way in; never leak a NaN
            return False
        if self.min_score is not None and score < self.min_score:
            return False
        return not self.filters or _matches(metadata, self.filters)

    async def _qvec(self) -> NDArray[np.float32] | None:
        """The query's vector (``None`` without an embedder), embedded once per search."""
        if not self._qvecs:
            self._qvecs.append(await _query_vector(self.core.embedder, self.query))
        return self._qvecs[0]

    async def _qvec_list(self) -> list[float] | None:
        qvec = await self._qvec()
        return None if qvec is None else qvec.tolist()

    # -- store-native candidates --------------------------------------------------------

    async def _thread(self, thread_id: str) -> Thread | None:
        if thread_id not in self.threads:
            thread = await self.store.thread_get(self.tenant, thread_id)
            if thread is not None and not self.visible.admits(thread.agent_id, thread.user_id):
                thread = None  # defence in depth: the store already scoped its hits
            self.threads[thread_id] = thread
        return self.threads[thread_id]

    async def _prefetch(
        self, hits: Sequence[SearchHit], model_id: str | None = None, rows: bool = False
    ) -> None:
        """Read the hits' threads, entries and records in a few batch reads (the threads
        and their entries in one ``search_entries``, with the entries' vectors of
        ``model_id`` into ``self.vectors``; one per record kind), so resolving them costs
        no round trip per hit. ``rows``: the entries as ``EntryRow`` into ``self.rows``
        (``search_entry_rows``; what the hybrid path ranks), else into ``self.entries``."""
        book: dict[tuple[str, str], Any] = self.rows if rows else self.entries
        by_thread: dict[str, list[str]] = {}
        by_kind: dict[str, list[str]] = {}
        for hit in hits:
            if hit.kind == "entry":
                if hit.thread_id is not None and (hit.thread_id, hit.id) not in book:
                    by_thread.setdefault(hit.thread_id, []).append(hit.id)
            elif (hit.kind, hit.id) not in self.records:
                by_kind.setdefault(hit.kind, []).append(hit.id)
        if by_thread and all(tid not in self.threads for tid in by_thread):
            # one call: the threads, their entries and the entries' vectors
            read = self.store.search_entry_rows if rows else self.store.search_entries
            threads, got, vectors = await read(self.tenant, by_thread, model_id=model_id)
            self.vectors.update(vectors)
            for tid in by_thread:
                self._admit(tid, threads.get(tid))
        else:
            unread = [tid for tid in by_thread if tid not in self.threads]
            if unread:
                threads = await self.store.thread_get_many(self.tenant, unread)
                for tid in unread:
                    self._admit(tid, threads.get(tid))
            # only the threads this caller may see are read
            admitted = {
                tid: ids for tid, ids in by_thread.items() if self.threads.get(tid) is not None
            }
            got = await self.store.entry_get_across(self.tenant, admitted) if admitted else {}
        for tid, ids in by_thread.items():
            if self.threads.get(tid) is not None:
                for eid in ids:
                    book[(tid, eid)] = got.get((tid, eid))
        for kind, ids in by_kind.items():
            found = await self.store.record_get_many(self.tenant, kind, ids)
            for rid in ids:
                self.records[(kind, rid)] = found.get(rid)

    def _admit(self, thread_id: str, thread: Thread | None) -> None:
        if thread is not None and not self.visible.admits(thread.agent_id, thread.user_id):
            thread = None  # defence in depth: the store already scoped its hits
        self.threads[thread_id] = thread

    def _entry_read(
        self, hit: SearchHit, book: Mapping[tuple[str, str], Entry | EntryRow | None]
    ) -> Entry | EntryRow | _Unread | None:
        """``_resolve`` of an entry hit from what ``_prefetch`` read into ``book`` (no
        await: a search resolves a hundred hits), or ``_UNREAD`` when that needs a read."""
        if hit.thread_id is None:
            return None
        if hit.thread_id not in self.threads:
            return _UNREAD
        thread = self.threads[hit.thread_id]
        if thread is None or (hit.branch is not None and hit.branch != thread.current_branch):
            return None
        return book.get((thread.id, hit.id), _UNREAD)

    async def _resolve(self, hit: SearchHit) -> Entry | Document | FactItem | None:
        if hit.kind == "entry":
            if hit.thread_id is None:
                return None
            thread = await self._thread(hit.thread_id)
            if thread is None or (hit.branch is not None and hit.branch != thread.current_branch):
                return None
            if (thread.id, hit.id) in self.entries:
                return self.entries[(thread.id, hit.id)]
            return await self.store.entry_get(self.tenant, thread.id, hit.id)
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
        if mode == "hybrid":
            fetch = max(HYBRID_CANDIDATES, 3 * self.k)
        else:
            fetch = max(_MIN_CANDIDATES, 5 * self.k)
        if self.filters or self.min_score is not None:
            fetch *= 4
        thread_id = None if thread is None else thread.id
        # Facts come from the store's full-text search in keyword mode (its scale), else
        # from ``fact_pool``: the facts are few, and an earlier value has no stored vector.
        text_kinds = [k for k in self.kinds if k != FACT]
        if mode == "keyword":
            text_kinds += self.fact_kinds
        vector_kinds = [k for k in self.kinds if k != FACT]

        async def keyword_hits() -> list[SearchHit]:
            if mode not in ("hybrid", "keyword") or not text_kinds:
                return []
            return await self.store.text_search(
                self.tenant,
                self.query,
                kinds=text_kinds,
                k=fetch,
                thread_id=thread_id,
                visible_to=self.visible,
            )

        async def query_vector() -> NDArray[np.float32] | None:
            if mode not in ("hybrid", "semantic") or embedder is None:
                return None
            return await self._qvec()

        # The query's embedding (a model run or an API call: often the slowest step of a
        # search) runs beside the keyword search, then the vector search beside the facts.
        text_hits, qvec = await aboth(keyword_hits, query_vector)

        async def semantic_hits() -> list[SearchHit]:
            if qvec is None or embedder is None or not vector_kinds:
                return []
            return await self.store.vector_search(
                self.tenant,
                qvec.tolist(),
                model_id=embedder.model_id,
                kinds=vector_kinds,
                k=fetch,
                thread_id=thread_id,
                visible_to=self.visible,
            )

        async def fact_items() -> list[FactItem]:
            if not self.fact_kinds or mode == "keyword":
                return []
            return await fact_pool(
                self.core,
                self.tenant,
                self.visible,
                self.query,
                kinds=self.fact_kinds,
                fetch=fetch,
                query_vector=None if qvec is None else qvec.tolist(),
            )

        vector_hits, facts = await aboth(semantic_hits, fact_items)
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
        records: dict[str, Ranked] = {}  # candidate key -> record
        # hits resolved to nothing: per branch, since a forked entry's copies share its id
        # and only the copy on the thread's current branch resolves
        dropped: set[tuple[str, str | None]] = set()
        embedder = self.core.embedder
        model_id = embedder.model_id if embedder is not None and qvec is not None else None
        # The candidates are read as ``EntryRow`` (no metadata, state or tool calls
        # decoded for a hundred and more of them), the entries returned in full after the
        # ranking; with metadata ``filters`` in full from the start (they read metadata).
        narrow = not self.filters
        await self._prefetch([*text_hits, *vector_hits], model_id, rows=narrow)
        book: Mapping[tuple[str, str], Entry | EntryRow | None] = (
            self.rows if narrow else self.entries
        )
        for hit, _ in _interleave(text_hits, vector_hits):
            key = _PREFIX[hit.kind] + hit.id
            if key in records or (key, hit.branch) in dropped:
                continue
            found = self._entry_read(hit, book) if hit.kind == "entry" else _UNREAD
            record = await self._resolve(hit) if isinstance(found, _Unread) else found
            if record is None:
                dropped.add((key, hit.branch))
                continue
            records[key] = record
        # the neighbours of the best entry hits: answers follow the matching turn
        # (one batch read; a hit within the window of a better one adds no window)
        windows: list[tuple[str, int, int]] = []
        best_entries = list(
            islice((r for r in records.values() if isinstance(r, Entry | EntryRow)), _EXPAND_HITS)
        )
        for entry in best_entries:
            tid, at = entry.thread_id, entry.position
            if any(w[0] == tid and w[1] <= at <= w[2] for w in windows):
                continue
            windows.append((tid, at - _NEIGHBOURS, at + _NEIGHBOURS))
        if windows:
            window_read = self.store.search_window_rows if narrow else self.store.search_windows
            around, more = await window_read(
                self.tenant, windows, model_id=model_id, known=self.vectors.keys()
            )
            self.vectors.update(more)
            for window in around:
                for other in window:
                    if other.content:
                        records.setdefault("e:" + other.id, other)
        records.update({f.key: f for f in facts})
        vectors: dict[str, list[float] | NDArray[np.float32]] = {}
        if embedder is not None and qvec is not None:
            read = self.vectors
            # one pass over the candidates: the entries' vectors read with them, and the
            # ids of the entries and documents still without one
            unread: dict[str, list[str]] = {"e:": [], "d:": []}
            for key in records:
                prefix, rid = key[:2], key[2:]
                if prefix == "e:" and rid in read:
                    vectors[key] = read[rid]
                elif prefix in unread:
                    unread[prefix].append(rid)
            for prefix, kind in (("e:", "entry"), ("d:", DOCUMENT_KIND)):
                ids = unread[prefix]
                if ids:
                    got = await self.store.vector_get_arrays(
                        self.tenant, kind, ids, model_id=embedder.model_id
                    )
                    vectors.update({prefix + rid: vec for rid, vec in got.items()})
            await self._embed_missing(records, vectors)
            if facts:  # (records hold no fact but those of ``facts``)
                fact_records = [r for r in records.values() if isinstance(r, FactItem)]
                vectors.update(await fact_vectors(self.core, self.tenant, fact_records))
        candidates = _candidates(records, vectors)
        if not candidates:
            return []

        # the best k and as many more: an entry deleted since it was read is passed over
        wanted = 2 * self.k if narrow else self.k

        def ranked() -> list[tuple[Ranked, float, dict[str, float]]]:
            ranker = HybridRanker(candidates, self.options)
            # Keyword scores are BM25 over the candidates (the ranker's analyser), not
            # the store's full-text rank: a store's engine counts stop words and the
            # speakers' names ("What did Maria ..." matches every "Maria: ..." turn),
            # ranks facts in another index on another scale, and gives the neighbours
            # it did not return nothing. On LoCoMo (user scope forced onto this path,
            # k = 20) R@10 went from 0.710 to 0.779.
            best: list[tuple[Ranked, float, dict[str, float]]] = []
            for i, score, signals in _rank(ranker, self.query, qvec):
                record = records[ranker.structure.ids[i]]
                if isinstance(record, FactItem) and not signals:
                    continue  # every visible fact is a candidate: one matching nothing is no hit
                # (an ``EntryRow`` only without filters: no metadata is read then)
                if self._keep(score, {} if isinstance(record, EntryRow) else record.metadata):
                    best.append((record, score, signals))
                    if len(best) >= wanted:
                        break
            return best

        if len(candidates) >= _OFFLOAD_CANDIDATES:
            return await self._entries_of(await aoffload(ranked))
        return await self._entries_of(ranked())

    async def _entries_of(
        self, best: Sequence[tuple[Ranked, float, dict[str, float]]]
    ) -> list[Hit]:
        """The first k of ``best`` as hits, each ``EntryRow`` read as its whole entry
        (``entry_get_across``: one read for the k, more only when an entry was deleted
        since the search read it)."""
        hits: list[Hit] = []
        at = 0
        while len(hits) < self.k and at < len(best):
            chunk = best[at : at + self.k - len(hits)]
            at += len(chunk)
            wanted: dict[str, list[str]] = {}
            for record, _, _ in chunk:
                if isinstance(record, EntryRow):
                    wanted.setdefault(record.thread_id, []).append(record.id)
            got = await self.store.entry_get_across(self.tenant, wanted) if wanted else {}
            for record, score, signals in chunk:
                if isinstance(record, EntryRow):
                    entry = got.get((record.thread_id, record.id))
                    if entry is None or entry.branch != record.branch:
                        continue  # deleted (or its thread switched branches) since
                    hits.append(_hit(entry, score, signals))
                else:
                    hits.append(_hit(record, score, signals))
        return hits

    async def _embed_missing(
        self,
        records: dict[str, Ranked],
        vectors: dict[str, list[float] | NDArray[np.float32]],
    ) -> None:
        """Embed the candidate entries that lack a vector (written before the embedder, or
        while it failed) and store them: bounded by the candidates, one embedder batch."""
        embedder = self.core.embedder
        assert embedder is not None
        missing = [
            (key, record)
            for key, record in records.items()
            if key not in vectors and isinstance(record, Entry | EntryRow) and record.content
        ]
        if not missing:
            return
        try:
            fresh = await embed_texts(embedder, [r.content or "" for _, r in missing])
            await self.store.vector_put(
                self.tenant,
                [
                    VectorItem("entry", r.id, embedder.model_id, vec, r.thread_id)
                    for (_, r), vec in zip(missing, fresh, strict=True)
                ],
            )
        except Exception as error:  # ranked without a semantic score; the search goes on
            logger.warning(
                "memorybank: could not embed %d search candidates (%s: %s)",
                len(missing),
                type(error).__name__,
                error,
            )
            return
        for (key, _), vec in zip(missing, fresh, strict=True):
            vectors[key] = vec


class _Unread:
    """A hit not read yet (``_Search._entry_read``)."""


_UNREAD = _Unread()


def _candidate(
    key: str,
    record: Ranked,
    vector: list[float] | NDArray[np.float32] | None,
) -> Candidate:
    """One record as the ranking sees it (an entry in its thread; a fact or a document
    alone, at position 0 of a thread of its own key)."""
    if vector is not None and not (isinstance(vector, np.ndarray) and vector.dtype == np.float32):
        vector = np.asarray(vector, np.float32)
    if type(record) is EntryRow or isinstance(record, Entry | EntryRow):  # the common case first
        return Candidate(
            key,
            record.thread_id,
            record.position,
            record.content or "",
            record.name,
            record.created_at,
            vector,
            record.role,
        )
    return Candidate(key, key, 0, record.content or "", None, record.created_at, vector, None)


def _candidates(
    records: Mapping[str, Ranked], vectors: Mapping[str, list[float] | NDArray[np.float32]]
) -> list[Candidate]:
    """``_candidate`` of each record: an ``EntryRow`` with a float32 vector or none (what
    a search ranks, 170 of them) made here, with no call of ``_candidate`` each."""
    out: list[Candidate] = []
    get = vectors.get
    for key, record in records.items():
        vector = get(key)
        if type(record) is EntryRow and (
            vector is None or (type(vector) is np.ndarray and vector.dtype is _FLOAT32)
        ):
            _, thread_id, _, position, role, content, name, created_at = record
            out.append(
                Candidate(key, thread_id, position, content or "", name, created_at, vector, role)
            )
        else:
            out.append(_candidate(key, record, vector))
    return out


_FLOAT32 = np.dtype(np.float32)


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
    scores, direct = ranker.combine_parts(sig)
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
            ("role", sig.role),
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
