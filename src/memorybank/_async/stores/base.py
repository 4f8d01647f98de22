"""The store contract: what a backend must do, and nothing more.

A store does I/O. It does not validate input, check ownership of reads, count
tokens, window, trim or pair tool calls: ``AsyncMemory`` does that once, above
every store, so every backend behaves the same. What a store *must* guarantee
is listed here and checked by the conformance suite (``memorybank.testing``).

Scope
    Every method takes ``tenant`` first. Every record a store writes carries it
    and every query filters on it: a thread id of another tenant behaves
    exactly like an id that does not exist.

Ordering
    Entries belong to one branch of one thread and carry a ``position``,
    assigned by the store at append time: strictly increasing per branch in the
    order entries were added, whatever their ``created_at``. Deletes may leave
    gaps. Concurrent appenders (threads, tasks, processes) never get the same
    position and never interleave one batch with another.

Atomicity and durability
    ``append_entries`` writes its whole batch or nothing. When a write method
    returns, the data survives a crash of the process (at the store's
    configured durability). An entry whose ``idempotency_key`` already exists on
    the branch is not written again: the stored entry is returned in its place.

Branches
    ``create_thread`` creates the branch ``"main"`` with the thread, and makes
    it current. A branch created from an entry starts with a copy of the source
    branch's entries up to and including that entry (same ids, same positions),
    so reading any branch is one indexed range read, however deep the
    branching.

Values
    Metadata and state are JSON objects (already validated). Working-memory and
    snapshot values are passed as JSON text and returned verbatim.

Errors
    Driver exceptions never escape: they become ``StoreUnavailable`` (cannot
    reach the server, timeout), ``StoreClosed`` (used after ``close``),
    ``Conflict``, ``NotFound`` or ``StoreError``, with the driver exception as
    ``__cause__``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from memorybank.records import Branch, Entry, Summary, Thread, ToolCall

__all__ = [
    "UNSET",
    "AppendResult",
    "AsyncStore",
    "NewEntry",
    "Unset",
]


class Unset:
    """Marker type for "argument not given" where ``None`` is a real value."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset()


@dataclass(frozen=True, slots=True)
class NewEntry:
    """An entry to append: validated, token-counted and id'd by ``AsyncMemory``."""

    id: str
    role: str
    content: str | None
    name: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    metadata: dict[str, Any]
    state: dict[str, Any]
    token_count: int
    created_at: datetime
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What ``append_entries`` returns: the stored entries and the thread after the write."""

    entries: list[Entry]
    thread: Thread


class AsyncStore(abc.ABC):
    """Base class of every store. See the module docstring for the guarantees."""

    #: Names of optional features this store has (e.g. ``"ttl"``, ``"pgvector"``).
    capabilities: frozenset[str] = frozenset()

    # -- lifecycle ---------------------------------------------------------

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the store owns (connections, pools, threads).

        Idempotent. Anything a caller passed in (a client, a pool) is left open.
        Later calls raise ``StoreClosed``.
        """

    # -- threads -----------------------------------------------------------

    @abc.abstractmethod
    async def create_thread(self, thread: Thread) -> Thread:
        """Insert ``thread`` and its ``"main"`` branch. ``Conflict`` if the id exists."""

    @abc.abstractmethod
    async def get_thread(self, tenant: str, thread_id: str) -> Thread | None:
        """The thread, or ``None``."""

    @abc.abstractmethod
    async def list_threads(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads, most recently updated first (ties: id descending).

        ``user_id``/``agent_id`` filter when given (``None`` matches threads without one).
        """

    @abc.abstractmethod
    async def update_thread(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        """Change the given fields and ``updated_at``; ``NotFound`` if absent.

        ``current_branch`` must name an existing branch (``NotFound`` otherwise).
        """

    @abc.abstractmethod
    async def delete_thread(self, tenant: str, thread_id: str) -> bool:
        """Delete the thread with its entries and branches. ``False`` if absent."""

    # -- entries -----------------------------------------------------------

    @abc.abstractmethod
    async def append_entries(
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
        ``owner`` (when given) equals the thread's ``user_id`` (``ThreadForbidden``
        otherwise, nothing written), that the branch exists (``NotFound``);
        assigns positions; skips entries whose idempotency key is already on the
        branch (returning the stored entry in their place); sets the thread's
        ``updated_at``.
        """

    @abc.abstractmethod
    async def list_entries(
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

    @abc.abstractmethod
    async def get_entry(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        """One entry of ``branch`` (``None``: current), or ``None``."""

    @abc.abstractmethod
    async def delete_entries(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        """Delete these entries from ``branch`` (``None``: current); how many were deleted."""

    @abc.abstractmethod
    async def truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        """Delete the entries after ``entry_id`` on ``branch``; how many.

        ``NotFound`` if the entry is not on the branch.
        """

    @abc.abstractmethod
    async def clear_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Delete every entry of ``branch`` (``None``: current); how many."""

    @abc.abstractmethod
    async def count_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Number of entries on ``branch``. ``NotFound`` if the thread is absent."""

    # -- branches ----------------------------------------------------------

    @abc.abstractmethod
    async def create_branch(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        """Create ``name`` holding ``from_branch``'s entries up to ``from_entry`` (all if None).

        ``Conflict`` if the name exists; ``NotFound`` for a missing thread, source
        branch or entry.
        """

    @abc.abstractmethod
    async def list_branches(self, tenant: str, thread_id: str) -> list[Branch]:
        """The thread's branches, oldest first."""

    @abc.abstractmethod
    async def delete_branch(self, tenant: str, thread_id: str, name: str) -> bool:
        """Delete a branch and its entries (never the current one: ``Conflict``)."""

    # -- working memory (per run) -----------------------------------------

    @abc.abstractmethod
    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Set one key of a run's working memory (value is JSON text)."""

    @abc.abstractmethod
    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The JSON text stored under ``key``, or ``None``."""

    @abc.abstractmethod
    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key; whether it existed."""

    @abc.abstractmethod
    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run's working memory."""

    @abc.abstractmethod
    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Forget the run's working memory."""

    # -- snapshots (durable workflows) ------------------------------------

    @abc.abstractmethod
    async def snapshot_save(
        self, tenant: str, run_id: str, value: str, *, user_id: str | None, saved_at: datetime
    ) -> None:
        """Save (replace) a run's snapshot, recording its owner."""

    @abc.abstractmethod
    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner user_id, JSON text)`` or ``None``."""

    @abc.abstractmethod
    async def snapshot_delete(self, tenant: str, run_id: str) -> bool:
        """Delete a run's snapshot; whether it existed."""

    # -- summaries ---------------------------------------------------------

    @abc.abstractmethod
    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Store a summary."""

    @abc.abstractmethod
    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | None
    ) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus the shared ones (no user), oldest first."""

    # -- erasure -----------------------------------------------------------

    @abc.abstractmethod
    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Erase everything owned by ``user_id`` in the tenant; how many records went."""
