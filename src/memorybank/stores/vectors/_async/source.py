"""``CachedVectorStore``: what the stores that rank vectors in process through
``CachedVectors`` (MySQL, PostgreSQL without pgvector, Redis) share, written once: the
cache itself, the search through it, the cache-first vector reads and closing it. A
store gives only its reads (``VectorSource``: ``_vc_rows``, ``_vc_count``,
``_vc_check``, ``_vc_exact``, optionally ``_vc_live``, and ``_vc_arrays`` for
``vector_get_arrays``); the SQL engines' shared ones
are in ``memorybank.stores.sql._async.core``.

NumPy loads with the first vector search (``memorybank.runtime.np``), not with the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.stores.contract._async.store import AsyncStore, SearchHit, Visibility
from memorybank.stores.vectors._async.cache import CachedVectors
from memorybank.stores.vectors.exact import VectorQuery

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["CachedVectorStore"]


class CachedVectorStore(AsyncStore):
    """The in-process vector cache of a store (``self.__dict__["_cached_vectors"]``,
    made at the first search; a snapshot's view drops its copy)."""

    def _vector_cache(self) -> CachedVectors:
        """The store's cache, made on first use."""
        cache: CachedVectors | None = self.__dict__.get("_cached_vectors")
        if cache is None:
            cache = self.__dict__.setdefault("_cached_vectors", CachedVectors())
        return cache

    async def _close_vector_cache(self) -> None:
        """End the cache's background loads and ANN builders (the store or view closes)."""
        cache: CachedVectors | None = self.__dict__.get("_cached_vectors")
        if cache is not None:
            await cache.close()

    async def vector_search(
        self,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """Cosine top ``k`` (numpy) over the vectors kept in process, kept current
        through the store's counters (``_vc_check``); the hits' scope is confirmed by
        the store."""
        return await self._vector_cache().search(
            self,  # type: ignore[arg-type]  # the store's _vc_* reads (VectorSource)
            VectorQuery(tenant, model_id, thread_id, visible_to, vector=vector, kinds=kinds, k=k),
        )

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        """Stored vectors of ``model_id`` for these ids (missing ids are absent)."""
        got = await self.vector_get_arrays(tenant, kind, ids, model_id=model_id)
        return {vid: vector.tolist() for vid, vector in got.items()}

    async def vector_get_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """The stored vectors as float32 arrays: from this process's cache when it holds
        them, the others read from the store (``_vc_arrays``)."""
        wanted = list(dict.fromkeys(ids))
        found, unread = await self._cached_arrays(tenant, kind, wanted, model_id)
        if unread:
            found |= await self._vc_arrays(tenant, kind, unread, model_id)
        return {vid: found[vid] for vid in wanted if vid in found}

    async def _vc_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """The stored vectors of these distinct ids, read from the store (the SQL
        engines': ``SQLCore._vc_arrays``); a store that reads them its own way overrides
        ``vector_get_arrays`` instead."""
        raise NotImplementedError(f"{type(self).__name__} reads no vectors")

    async def _cached_arrays(
        self, tenant: str, kind: str, wanted: list[str], model_id: str
    ) -> tuple[dict[str, NDArray[np.float32]], list[str]]:
        """Those of ``wanted`` this process's cache holds (one counters read, none
        without a cache) and the ids still to read from the store."""
        cache: CachedVectors | None = self.__dict__.get("_cached_vectors")
        if cache is None or not wanted:
            return {}, wanted
        found = await cache.get(self, tenant, model_id, kind, wanted) or {}  # type: ignore[arg-type]
        return found, [vid for vid in wanted if vid not in found]
