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
