"""``entry_append``'s rules, decided once for the SQL engines; each engine keeps only how
it writes (``SQLAppends._append``: PostgreSQL's one-statement appends, MySQL's one or two
round trips, SQLite's inserts on its writer thread), each difference saying why.

Decided here, in this order: an id twice in the batch (``Conflict`` before anything is
read); the head read under the thread row's lock (``append_branch``, ``refusal``: no
thread, another owner, no branch; nothing written); idempotency keys the branch holds
(``plan_keyed``, in ``memorybank.stores.sql.appends`` with the other pure rules: a
replay, or ``Conflict`` when the payload differs, before any write); positions after
the branch's last, gap-free; an id the branch holds, refused by the unique index on
(tenant, thread, branch, id) with the transaction rolled back, then named
(``first_taken``).
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Self

from memorybank.errors import Conflict
from memorybank.rules.entry_ids import check_batch_ids, first_taken
from memorybank.runtime.combine import AsyncCombiner
from memorybank.stores.contract.types import UNSET, Unset
from memorybank.stores.sql._async.core import SQLCore
from memorybank.stores.sql.appends import AppendItem
from memorybank.stores.sql.statements import taken_ids_query

if TYPE_CHECKING:
    from memorybank.stores.contract.items import AppendResult, NewEntry

__all__ = ["CombinedAppends", "SQLAppends"]


class SQLAppends(SQLCore):
    """``entry_append`` over the engine's ``_append`` (see the module docstring)."""

    async def entry_append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        updated_at: datetime,
        branch: str | None = None,
        owner: str | Unset | None = UNSET,
    ) -> AppendResult:
        """Check the batch's ids, append in one transaction (``_append``); when the
        unique index on entry ids refused it (nothing written), name the id taken."""
        check_batch_ids(entries)
        try:
            return await self._append(tenant, thread_id, entries, updated_at, branch, owner)
        except Conflict as error:
            cause = error.__cause__
            if cause is None or not self._id_refused(cause):
                raise
            ids = [e.id for e in entries]
            d, table = self.dialect, self._table
            rows = await self._select_many(
                [
                    taken_ids_query(
                        d, table("entries"), table("threads"), tenant, thread_id, branch, part
                    )
                    for part in (ids[i : i + 500] for i in range(0, len(ids), 500))
                ]
            )
            # none found: the error itself (MySQL's key is a 64-bit hash of the id: a clash)
            raise (first_taken(ids, {row[0]: row[1] for row in rows}) or error) from cause

    @abc.abstractmethod
    async def _append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        """The append in one transaction, by the rules above (ids checked already)."""

    @abc.abstractmethod
    def _id_refused(self, cause: BaseException) -> bool:
        """Whether ``cause`` (a ``Conflict``'s driver error) is the unique index on entry
        ids refusing an insert."""


class CombinedAppends(SQLCore):
    """Write combining, as the server engines (PostgreSQL, MySQL) share it: concurrent
    plain appends of one tenant go through one combiner (``_appends``) to the
    engine's ``_append_combined`` (one statement, or one transaction), at most
    ``_append_batches`` batches in flight; a ``snapshot`` view (``_view``) has its own."""

    #: Combined appends of one tenant in flight at once (each engine's measured value).
    _append_batches: ClassVar[int]
    _appends: AsyncCombiner[str, AppendItem, AppendResult]

    def _combine_appends(self) -> None:
        """A combiner of the store's own (``__init__``, ``_view``)."""
        self._appends = AsyncCombiner(self._append_combined, limit=self._append_batches)

    def _view(self) -> Self:
        """A shallow copy of the store for a view: its own append combiner, and without
        this process's cached vectors (a snapshot reads them as of then, not now)."""
        view = copy.copy(self)
        view.__dict__.pop("_cached_vectors", None)
        view._combine_appends()
        return view

    @abc.abstractmethod
    async def _append_combined(
        self, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        """The plain appends of concurrent callers together; each caller's result, or
        the error it raises (a refused caller wrote nothing)."""
