"""``AsyncRecordStore``: records (facts, documents, core facts, graph nodes) by kind and
id (a part of ``AsyncStore``).

"Compare-and-swap" and "Values" in ``memorybank.stores.contract._async.store`` apply.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract.types import UNSET, Unset, Visibility

if TYPE_CHECKING:
    from memorybank.stores.contract.items import Record, RecordGuard

__all__ = ["AsyncRecordStore"]


class AsyncRecordStore(AsyncStoreBase):
    """Records: put (optionally guarded), get, delete, list."""

    # -- records: facts, documents, core facts ---------------------------------

    @abc.abstractmethod
    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """Insert or replace (by ``kind`` + ``id``) all ``records`` atomically.

        With ``guard``: only if the guarded record (in the batch or not) has the
        guard's revision, checked in the same atomic step; ``Conflict`` and
        nothing written otherwise. Each record's ``revision`` is stored as given.
        """

    @abc.abstractmethod
    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        """One record, or ``None``."""

    @abc.abstractmethod
    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        """Delete records by id (with their vectors), atomically; how many existed.

        ``guard`` as for ``record_put``: ``Conflict`` and nothing deleted when it fails.
        """

    @abc.abstractmethod
    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Records of ``kind``, oldest first (``created_at``, then id).

        ``agent_id``/``user_id``/``key`` filter exactly when given (``None``
        matches records without one); ``visible_to`` keeps what that agent and
        user may see (see ``Visibility``); ``limit`` keeps the oldest N.
        """
