"""The store contract: what a backend must do, and nothing more.

A store implements the 20 abstract methods (``memorybank.stores.contract.REQUIRED``);
every other method is derived from them once, in the contract's parts, and may be
overridden for speed by groups (``Capability.RUN_STATE``, ``TEXT_SEARCH``,
``VECTOR_SEARCH``: ``memorybank.stores.contract.capabilities.OVERRIDES``).

A store does I/O. It does not validate input, check ownership of reads, count
tokens, window, trim or pair tool calls: ``AsyncMemory`` does that once, above
every store, so every backend behaves the same. What a store *must* guarantee
is listed here and checked by the conformance suite (``memorybank.testing``).

Scope
    Every method takes ``tenant`` first. Every record a store writes carries it
    and every query filters on it: a thread id of another tenant behaves
    exactly like an id that does not exist.

Ids
    Every id, tenant, owner, key and name a store receives is a string of 1 to
    255 printable characters (``memorybank.rules.validate.MAX_ID_LENGTH``; ids made
    from other ids are kept that short by ``memorybank.rules.ids.compound_id``), any
    of which may take 4 bytes in UTF-8. A store holds all of them and compares
    them exactly: ``"x"``, ``"x "`` and ``"X"`` are three different ids (no
    collation padding, case folding, trimming or normalisation, in equality,
    keys or indexes).

Ordering
    Entries belong to one branch of one thread and carry a ``position``,
    assigned by the store at append time: strictly increasing per branch in the
    order entries were added, whatever their ``created_at``. Deletes may leave
    gaps. Concurrent appenders (threads, tasks, processes) never get the same
    position and never interleave one batch with another.

Atomicity and durability
    ``entry_append`` writes its whole batch or nothing. When a write method
    returns, the data survives a crash of the process (at the store's
    configured durability).

Idempotency
    An entry whose ``idempotency_key`` already exists on the branch is not
    written again: the stored entry is returned in its place. Keys and
    fingerprints are made once, above the stores (``memorybank.rules.idempotency``):
    a batch's member ``i >= 1`` is stored under ``key + "\x1f" + str(i)``, a
    form no caller's key can take, and every member carries the fingerprint
    (a SHA-256 of role, content, name, tool calls, tool call id, metadata and
    state of the whole request). When the stored entry and the new one both
    have a fingerprint and they differ, the key was reused for another payload:
    ``entry_append`` raises ``Conflict`` and writes nothing of the batch. The
    comparison happens inside the append's atomic step, so of two concurrent
    appends of one key with different payloads exactly one is stored and the
    other raises ``Conflict``. An entry stored without a fingerprint (written
    before stores kept one, or by a caller that gives none) matches any payload,
    as before. Stores keep the fingerprint with the entry (branch copies
    included); it is never returned.

Entry ids
    An entry id is unique on its branch: ``entry_append`` raises ``Conflict`` and writes
    nothing when the batch holds one id twice or an id the branch already holds
    (``memorybank.rules.entry_ids``; an idempotent replay is not written, so its id is
    not checked). Branch copies share their source's ids.

Branches
    ``thread_create`` creates the branch ``"main"`` with the thread, and makes
    it current. A branch created from an entry starts with a copy of the source
    branch's entries up to and including that entry (same ids, same positions),
    so reading any branch is one indexed range read, however deep the
    branching.

Compare-and-swap
    ``record_put`` and ``record_delete`` take an optional ``RecordGuard``: the
    write applies only while the guarded record has the guard's ``revision``
    (``None``: while it does not exist). The check and the write are ONE
    atomic step (a transaction holding the guarded row's lock, a script, the
    store's lock), so of concurrent writers guarded by the same revision
    exactly one succeeds; the others get ``Conflict`` and nothing of their
    batch is written. Snapshot writes check their owner the same way, in the
    same step as the write.

Values
    Metadata, state and record data are JSON objects, working-memory and
    snapshot values JSON text, all already validated by ``AsyncMemory``
    (``memorybank.rules.validate``): text is valid Unicode without NUL, integers fit
    64 bits, floats are finite, datetimes lie in 1000-01-01..9999-12-31 UTC,
    ids are at most 255 characters, counts at most ``2**31 - 1``. A store
    returns every such value exactly: ``1e16`` stays a float, ``-0.0`` keeps
    its sign, ``2**63 - 1`` stays an int, text comes back character for
    character, datetimes to the microsecond; JSON text verbatim.

Errors
    Driver exceptions never escape: they become ``StoreUnavailable`` (cannot
    reach the server, timeout), ``StoreClosed`` (used after ``close``),
    ``Conflict``, ``NotFound`` or ``StoreError``, with the driver exception as
    ``__cause__``.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract._async.batch_reads import AsyncBatchReads
from memorybank.stores.contract._async.entry_store import AsyncEntryStore
from memorybank.stores.contract._async.record_store import AsyncRecordStore
from memorybank.stores.contract._async.run_state_store import AsyncRunStateStore
from memorybank.stores.contract._async.search_store import AsyncSearchStore
from memorybank.stores.contract._async.thread_store import AsyncThreadStore
from memorybank.stores.contract.items import (
    AppendResult,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    VectorItem,
)
from memorybank.stores.contract.types import UNSET, Unset, Visibility

if TYPE_CHECKING:
    from memorybank.events.types import Event

__all__ = [
    "UNSET",
    "AppendResult",
    "AsyncBatchReads",
    "AsyncEntryStore",
    "AsyncRecordStore",
    "AsyncRunStateStore",
    "AsyncSearchStore",
    "AsyncStore",
    "AsyncStoreBase",
    "AsyncThreadStore",
    "NewEntry",
    "Record",
    "RecordGuard",
    "SearchHit",
    "Unset",
    "VectorItem",
    "Visibility",
]


class AsyncStore(AsyncSearchStore, AsyncRunStateStore):
    """Base class of every store. See the module docstring for the guarantees.

    Composed of the contract's parts, one per capability: ``AsyncThreadStore``
    (threads and branches), ``AsyncEntryStore`` (entries and compaction),
    ``AsyncRunStateStore`` (working memory, snapshots, summaries),
    ``AsyncRecordStore`` (records), ``AsyncSearchStore`` (keyword and vector search),
    ``AsyncBatchReads`` (reads of many at once, with defaults), all on
    ``AsyncStoreBase`` (``close``, ``reclaim_space``, ``capabilities``). What spans
    them all, erasure, is here.
    """

    # -- all or nothing --------------------------------------------------------

    @asynccontextmanager
    async def atomic(self, tenant: str) -> AsyncIterator[AsyncStore]:
        """A view of this store whose writes to ``tenant`` commit together when the block
        ends, or not at all when it raises or the process dies first (``Capability.ATOMIC``).

        Inside the block, the view reads what it wrote; other users of the store see none
        of it until the block ends (they may wait for it: SQLite, MySQL and PostgreSQL
        hold their write locks meanwhile). Each method of the view keeps its own
        guarantees (``entry_append`` all or nothing, ...). The view is for this one task:
        no concurrent calls on it, no nesting, and no call on the view after the block.
        A store without ``Capability.ATOMIC`` raises ``NotImplementedError`` here: a
        caller checks the capability first (``memorybank import`` then checks the whole
        dump and writes item by item).
        """
        raise NotImplementedError(f"{type(self).__name__} has no atomic writes")
        yield self  # pragma: no cover  (makes this a generator)

    # -- the change feed (Capability.EVENTS) -----------------------------------

    async def events_enable(self, *, keep: timedelta) -> None:
        """Turn the change feed on for the whole store (every tenant, every process
        writing it), keeping events for ``keep``; already on: only the keep time changes.

        From then on every change is recorded in the same transaction as the change
        (docs/events.md). A feed that was off makes every earlier cursor expired: the
        changes made meanwhile were not recorded. A store without ``Capability.EVENTS``
        raises ``NotImplementedError``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no change feed")

    async def events_disable(self) -> None:
        """Turn the change feed off: nothing more is recorded (writes cost what they did
        before it was on); the events kept stay readable until pruned."""
        raise NotImplementedError(f"{type(self).__name__} has no change feed")

    async def events_keep(self) -> timedelta | None:
        """How long events are kept while the feed is on; ``None`` while it is off."""
        return None

    async def events_list(
        self,
        tenant: str,
        *,
        after: str | None,
        kinds: Sequence[str] | None,
        user_id: str | Unset | None,
        agent_id: str | Unset | None,
        limit: int,
    ) -> list[Event]:
        """The tenant's events after the cursor ``after`` (``None``: from the oldest kept),
        oldest first, at most ``limit``; only ``kinds`` when given. ``user_id``: only that
        user's events (``None``: only those of no user); ``agent_id``: only that agent's
        and those of no agent (``None``: only those of no agent); ``UNSET``: all.
        Raises ``CursorExpired`` when ``after`` is older than
        the events kept (or than the feed's last switch on). A store without a feed
        returns ``[]``."""
        return []

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        """Delete at most ``limit`` of the tenant's events older than the keep time, the
        oldest first; how many went. A cursor at or before the last deleted is expired."""
        return 0

    # -- erasure -----------------------------------------------------------

    @abc.abstractmethod
    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Erase everything owned by ``user_id`` in the tenant; how many records went.

        Threads (with entries, branches and their vectors), records, snapshots
        and summaries whose ``user_id`` is the user.

        What remains afterwards outside the live rows is the store's to
        minimise and to document (docs/reliability.md): an embedded store must
        leave nothing of the user's data in its files (no index term, free
        page or journal frame: SQLite overwrites deleted content, merges its
        full-text indexes and truncates its WAL); a server store deletes the
        rows in one transaction, and the server's own history of them (WAL or
        binlog, dead tuples until vacuum, append-only files until rewritten,
        replicas, backups) is the operator's to expire.
        """
