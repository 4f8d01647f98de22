"""``AsyncEntryStore``: a thread's entries on its branches (a part of ``AsyncStore``).

"Ordering", "Atomicity and durability", "Idempotency" and "Values" in
``memorybank.stores.contract._async.store`` apply to every method here.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.errors import NotFound
from memorybank.records import Entry, Thread
from memorybank.rules.window import drop_orphan_tool_results
from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract.types import UNSET, Unset

if TYPE_CHECKING:
    from memorybank.stores.contract.items import AppendResult, NewEntry

__all__ = ["AsyncEntryStore"]


class AsyncEntryStore(AsyncStoreBase):
    """Entries: append, read, page, delete, count, compact."""

    # -- entries ---------------------------------------------------------------

    @abc.abstractmethod
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
        """Append ``entries`` (in order) to ``branch`` (``None``: the current branch).

        One atomic operation: checks the thread exists (``NotFound``), that
        ``owner`` (when given) equals the thread's ``user_id`` exactly
        (``ThreadForbidden`` otherwise), that the branch exists (``NotFound``),
        all inside the operation and before anything is written (a refused
        append wrote nothing); assigns positions; skips entries whose
        idempotency key is already on the branch (returning the stored entry in
        their place); sets the thread's ``updated_at``.

        ``Conflict``, with nothing written, when an entry's key is already on the
        branch with a different ``fingerprint`` (both not ``None``; see
        "Idempotency" in the module docstring). The check and the write are one
        atomic step: a concurrent append of the same key either committed
        before (and is compared) or comes after (and is compared against this
        one). Keys repeated within one batch are the batch's own: the first
        copy is stored, later copies get its entry.

        Every field of a ``NewEntry`` is stored and every read returns it
        exactly, the provider payload ``extra`` and ``item`` included (JSON
        objects, deep copies: a returned entry never aliases stored data), on
        this branch and on every branch copied from it. The SQL stores and
        Redis keep the payload beside the calls in the ``tool_calls`` JSON
        (``memorybank.stores.sql.common.tool_calls_value``), so rows written before
        payloads existed read back unchanged.
        """

    @abc.abstractmethod
    async def entry_list(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        """The thread and a page of its entries on ``branch`` (``None``: current).

        Paging counts from the newest: skip the ``offset`` newest entries that
        match ``before``/``after`` (``created_at`` strictly before/after), keep
        the next ``limit`` (all when ``None``). The page comes back oldest first,
        or newest first with ``newest_first``. ``NotFound`` if the thread is
        absent. Cost must not grow with the thread's length for a small page.
        """

    async def entry_list_recent(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """``history()``'s read: the thread's owner (``user_id``) and its last ``limit``
        messages on the current branch, oldest first, as provider dicts, without tool
        results whose calling entry is cut off. ``NotFound`` if the thread is absent.

        The caller checks the owner before it hands anything out. This default is
        ``entry_list`` + ``drop_orphan_tool_results`` + ``Entry.to_message``; a
        store may answer it faster (one statement, no ``Entry`` objects), with
        exactly the same result.
        """
        thread, rows = await self.entry_list(tenant, thread_id, limit=limit)
        return thread.user_id, [e.to_message() for e in drop_orphan_tool_results(rows)]

    async def entry_get(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        """One entry of ``branch`` (``None``: current), or ``None`` (a missing thread or
        branch too). Derived: reads the branch with ``entry_list``; a store overrides it
        with one indexed read."""
        try:
            _, rows = await self.entry_list(tenant, thread_id, branch=branch)
        except NotFound:
            return None
        return next((e for e in rows if e.id == entry_id), None)

    @abc.abstractmethod
    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        """Delete these entries from ``branch`` (``None``: current); how many were deleted."""

    @abc.abstractmethod
    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        """Delete the entries after ``entry_id`` on ``branch``; how many.

        ``NotFound`` if the entry is not on the branch.
        """

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Delete every entry of ``branch`` (``None``: current); how many. ``NotFound`` if
        the thread is absent. Derived: ``entry_list`` then ``entry_delete`` of what it
        read (an entry appended in between is after the clear)."""
        thread, rows = await self.entry_list(tenant, thread_id, branch=branch)
        if not rows:
            return 0
        name = thread.current_branch if branch is None else branch
        return await self.entry_delete(tenant, thread_id, [e.id for e in rows], branch=name)

    async def entry_count(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Number of entries on ``branch``. ``NotFound`` if the thread is absent. Derived:
        the length of ``entry_list``; a store overrides it with a count."""
        _, rows = await self.entry_list(tenant, thread_id, branch=branch)
        return len(rows)

    # -- compaction ------------------------------------------------------------

    @abc.abstractmethod
    async def entry_compact(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        """Atomically replace the entries up to ``through_position`` with ``summary``.

        Only if the entries of ``branch`` with ``position <= through_position``
        are exactly ``expected_ids`` (the caller's view is current); otherwise
        nothing changes and ``False`` is returned, so two compactions of one
        thread can never both apply. The summary (when given) takes position
        ``through_position``; later entries are untouched. ``NotFound`` if the
        thread is absent.
        """

    @abc.abstractmethod
    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """Atomically set ``(content, state, token_count)`` of entries by id; how many changed.

        Used by reversible compaction (content replaced by a reference, the
        original kept in ``state``) and its restore.
        """
