"""``AsyncSearchStore``: keyword and vector search, and the vectors themselves (a part of
``AsyncStore``).

"Scope" in ``memorybank.stores.contract._async.store`` applies: every hit is of the
tenant, and ``visible_to`` keeps what that agent and user may see.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract.types import Visibility

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores.contract.items import SearchHit, VectorItem

__all__ = ["AsyncSearchStore"]


class AsyncSearchStore(AsyncStoreBase):
    """Search: keyword (``text_search``), vectors (``vector_put``/``search``/``get``)."""

    # -- search ----------------------------------------------------------------

    @abc.abstractmethod
    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """Best ``k`` keyword matches among records of ``kinds`` and entries (``"entry"``).

        Entries are matched on every branch (hits carry the branch) and scoped
        by their thread's ``agent_id``/``user_id``; ``thread_id`` restricts to
        one thread (and excludes records). Best first.
        """

    @abc.abstractmethod
    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Store (replace) embeddings of records or entries, tagged with their model id."""

    @abc.abstractmethod
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
        """Best ``k`` by cosine similarity among vectors of ``model_id`` (never mixed)."""

    @abc.abstractmethod
    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        """Stored vectors of ``model_id`` for these ids (missing ids are absent)."""

    async def vector_get_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """``vector_get``'s vectors as float32 arrays (the same ids and values).

        What ranking reads: a store holding vectors as bytes or in a matrix
        overrides it and skips making a list of Python floats per vector
        (SQLite: 240 vectors of 384 floats, about 12 ms of conversions both ways).
        """
        import numpy as np

        got = await self.vector_get(tenant, kind, ids, model_id=model_id)
        return {rid: np.asarray(vector, dtype=np.float32) for rid, vector in got.items()}
