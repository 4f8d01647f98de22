"""Facts in recall: which facts a search or a context ranks, and with which vectors.

``memory.search(..., kinds=[..., "facts"])`` and the facts block of
``build_context`` rank facts with the retrieval core
(:class:`memorybank.recall.HybridRanker`), on the scale of entries and
documents. What they rank:

* the facts the caller may see, exactly as ``memory.facts.list`` does (the scope
  rule of ``memorybank.rules.scope``; expired facts never); with
  ``include_history=True`` also their earlier values (records of kind
  ``"fact_version"``, each carrying its fact's owner and agent);
* all of them while there are at most ``FACT_RANK_LIMIT`` of a kind (facts are
  few per user: read whole, scored in process), else the store's keyword and
  vector candidates for the query (``fetch`` of each).

Vectors: a current fact's vector is stored when it is written (with an embedder
configured). An earlier value, or a fact written before the embedder, is
embedded in process when first ranked and kept in a small per-memory cache; a
search writes nothing. If that embedding fails, those facts are ranked without
a semantic score (and a warning is logged).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memorybank.core._async.embed import embed_texts
from memorybank.core._async.facts import FACT, FACT_VERSION, fact_from_record
from memorybank.recall.conversation import Candidate
from memorybank.recall.hybrid import HybridRanker, SearchOptions
from memorybank.records import Fact
from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import Record, Visibility

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from memorybank.core._async.core import _Core

__all__ = [
    "FACT_RANK_LIMIT",
    "FactItem",
    "fact_candidates",
    "fact_item",
    "fact_pool",
    "fact_vectors",
    "rank_facts",
]

#: Facts (or earlier values) of one kind a caller may see that are ranked whole.
FACT_RANK_LIMIT = 1000
_CACHED_VECTORS = 4096


@dataclasses.dataclass(frozen=True, slots=True)
class FactItem:
    """A fact as recall ranks it: ``key`` is ``"f:<id>"`` (current) or ``"v:<id>:<version>"``."""

    key: str
    fact: Fact
    superseded: bool

    @property
    def content(self) -> str:
        return self.fact.content

    @property
    def metadata(self) -> dict[str, Any]:
        return self.fact.metadata

    @property
    def created_at(self) -> datetime:
        """When this value was stated (an earlier value: when it was set)."""
        return self.fact.updated_at


def fact_item(record: Record, now: datetime) -> FactItem | None:
    """The record (kind ``fact`` or ``fact_version``) as a ranked item; ``None`` if expired."""
    fact = fact_from_record(record)
    if fact.expires_at is not None and fact.expires_at <= now:
        return None
    superseded = record.kind == FACT_VERSION
    return FactItem(("v:" if superseded else "f:") + record.id, fact, superseded)


async def fact_pool(
    core: _Core,
    tenant: str,
    visible: Visibility,
    query: str,
    *,
    kinds: Sequence[str],
    fetch: int,
    query_vector: Sequence[float] | None = None,
) -> list[FactItem]:
    """The live facts of ``kinds`` (``fact``, ``fact_version``) that ``visible`` may see."""
    store = core.store
    now = core.now()
    out: list[FactItem] = []
    for kind in kinds:
        records = await store.record_list(
            tenant, kind, visible_to=visible, limit=FACT_RANK_LIMIT + 1
        )
        if len(records) > FACT_RANK_LIMIT:  # too many to rank whole: the store's candidates
            hits = await store.text_search(tenant, query, kinds=[kind], k=fetch, visible_to=visible)
            embedder = core.embedder
            if kind == FACT and embedder is not None and query_vector is not None:
                hits += await store.vector_search(
                    tenant,
                    query_vector,
                    model_id=embedder.model_id,
                    kinds=[kind],
                    k=fetch,
                    visible_to=visible,
                )
            found = await store.record_get_many(tenant, kind, [h.id for h in hits])
            records = list(found.values())
        for record in records:
            if visible.admits(record.agent_id, record.user_id):  # defence in depth
                item = fact_item(record, now)
                if item is not None:
                    out.append(item)
    return out


_CACHES: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[str, str], NDArray[np.float32]]] = (
    weakref.WeakKeyDictionary()
)


def _cache(core: _Core) -> OrderedDict[tuple[str, str], NDArray[np.float32]]:
    cache = _CACHES.get(core)
    if cache is None:
        cache = _CACHES[core] = OrderedDict()
    return cache


async def fact_vectors(
    core: _Core, tenant: str, items: Sequence[FactItem]
) -> dict[str, NDArray[np.float32]]:
    """Vectors of ``items`` by key: stored ones, else embedded in process (and cached)."""
    embedder = core.embedder
    if embedder is None or not items:
        return {}

    model = embedder.model_id
    current = [i.fact.id for i in items if not i.superseded]
    stored: dict[str, list[float]] = {}
    if current:
        stored = await core.store.vector_get(tenant, FACT, current, model_id=model)
    out: dict[str, NDArray[np.float32]] = {}
    cache = _cache(core)
    missing: list[FactItem] = []
    for item in items:
        if not item.superseded and item.fact.id in stored:
            out[item.key] = np.asarray(stored[item.fact.id], np.float32)
        elif (model, item.content) in cache:
            cache.move_to_end((model, item.content))
            out[item.key] = cache[(model, item.content)]
        else:
            missing.append(item)
    texts = list(dict.fromkeys(i.content for i in missing))
    if texts:
        try:
            vectors = await embed_texts(embedder, texts)
        except Exception as error:  # rank them without a semantic score
            logger.warning(
                "memorybank: could not embed %d facts for ranking (%s: %s)",
                len(texts),
                type(error).__name__,
                error,
            )
            return out
        fresh = {t: np.asarray(vec, np.float32) for t, vec in zip(texts, vectors, strict=True)}
        for item in missing:
            out[item.key] = fresh[item.content]
        for text, vec in fresh.items():
            cache[(model, text)] = vec
        while len(cache) > _CACHED_VECTORS:
            cache.popitem(last=False)
    return out


def fact_candidates(
    items: Sequence[FactItem], vectors: dict[str, NDArray[np.float32]]
) -> list[Candidate]:
    """The items as ranking candidates: each its own one-item session (no neighbours)."""
    return [
        Candidate(
            id=item.key,
            thread_id=item.key,
            position=0,
            text=item.content,
            created_at=item.created_at,
            vector=vectors.get(item.key),
        )
        for item in items
    ]


async def rank_facts(
    core: _Core,
    tenant: str,
    query: str,
    facts: Sequence[Fact],
    query_vector: Sequence[float] | None,
    options: SearchOptions | None = None,
) -> list[int]:
    """Indices of the ``facts`` relevant to ``query`` (hybrid score above 0), best first;
    ties keep the given order. The scorer of ``memory.search`` over the facts alone."""
    if not facts:
        return []
    items = [FactItem(f"f:{i}", fact, False) for i, fact in enumerate(facts)]
    vectors = {}
    if query_vector is not None:
        vectors = await fact_vectors(core, tenant, items)
    ranker = HybridRanker(fact_candidates(items, vectors), options)
    qvec = None if query_vector is None else np.asarray(query_vector, np.float32)
    return [int(r.id[2:]) for r in ranker.rank(query, query_vector=qvec) if r.score > 0]
