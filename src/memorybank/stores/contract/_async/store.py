"""The store contract: what a backend must do, and nothing more.

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
    ``append_entries`` writes its whole batch or nothing. When a write method
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
    ``append_entries`` raises ``Conflict`` and writes nothing of the batch. The
    comparison happens inside the append's atomic step, so of two concurrent
    appends of one key with different payloads exactly one is stored and the
    other raises ``Conflict``. An entry stored without a fingerprint (written
    before stores kept one, or by a caller that gives none) matches any payload,
    as before. Stores keep the fingerprint with the entry (branch copies
    included); it is never returned.

Branches
    ``create_thread`` creates the branch ``"main"`` with the thread, and makes
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
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.errors import NotFound
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores.contract import types as _types
from memorybank.stores.contract.types import LAST_POSITION, UNSET, Unset, Visibility

if TYPE_CHECKING:
    from memorybank.stores.contract.items import (
        AppendResult,
        NewEntry,
        Record,
        RecordGuard,
        SearchHit,
        VectorItem,
    )

__all__ = [
    "UNSET",
    "AppendResult",
    "AsyncStore",
    "NewEntry",
    "Record",
    "RecordGuard",
    "SearchHit",
    "Unset",
    "VectorItem",
    "Visibility",
]


def __getattr__(name: str) -> Any:
    """The write and search values, re-exported on first use (see ``stores._types``)."""
    if name in _types._ITEMS:
        return getattr(_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class AsyncStore(abc.ABC):
    """Base class of every store. See the module docstring for the guarantees."""

    #: The optional features this store has: ``Capability`` members (a ``StrEnum``, so
    #: ``"ttl" in store.capabilities`` works too), or strings of a store's own. The
    #: conformance suite skips the cases marked ``requires(X)`` unless ``X`` is here.
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

    async def recent_messages(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """``history()``'s read: the thread's owner (``user_id``) and its last ``limit``
        messages on the current branch, oldest first, as provider dicts, without tool
        results whose calling entry is cut off. ``NotFound`` if the thread is absent.

        The caller checks the owner before it hands anything out. This default is
        ``list_entries`` + ``drop_orphan_tool_results`` + ``Entry.to_message``; a
        store may answer it faster (one statement, no ``Entry`` objects), with
        exactly the same result.
        """
        from memorybank.rules.window import drop_orphan_tool_results

        thread, rows = await self.list_entries(tenant, thread_id, limit=limit)
        return thread.user_id, [e.to_message() for e in drop_orphan_tool_results(rows)]

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

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        """The run ids of ``tenant`` that hold working memory, in id order; ``None``: this
        store cannot list them (the default, for stores written before this method).

        ``after`` leaves out ids up to and including it; ``limit`` caps the count.
        For export (``memorybank export``); a run whose working memory was
        cleared is not listed.
        """
        return None

    # -- snapshots (durable workflows) ------------------------------------

    @abc.abstractmethod
    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        """Save (replace) a run's snapshot, with ``user_id`` as its owner.

        With ``owner_check`` the save applies only if the run has no snapshot or
        its owner is ``None`` or ``user_id``; otherwise ``ThreadForbidden`` and
        nothing is written. The check and the write are one atomic step: of two
        users saving the same new run at once, exactly one owns it.
        """

    @abc.abstractmethod
    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner user_id, JSON text)`` or ``None``."""

    @abc.abstractmethod
    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete a run's snapshot; whether it existed.

        With ``owner_check``, a snapshot owned by someone other than ``user_id``
        is not deleted: ``ThreadForbidden``, in the same atomic step as the delete.
        """

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        """The run ids of ``tenant`` that have a snapshot, in id order; ``None``: this store
        cannot list them (the default). ``after`` and ``limit`` as in :meth:`working_runs`."""
        return None

    # -- summaries ---------------------------------------------------------

    @abc.abstractmethod
    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Store a summary."""

    @abc.abstractmethod
    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus the shared ones (no user), oldest first.

        ``UNSET``: every summary of the agent.
        """

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        """The agent ids of ``tenant`` that have a summary, in id order; ``None``: this
        store cannot list them (the default, for stores written before this method).

        ``after`` and ``limit`` as in :meth:`working_runs`. For export
        (``memorybank export``), which reads each agent's summaries with
        :meth:`summary_list`.
        """
        return None

    # -- compaction -------------------------------------------------------------

    @abc.abstractmethod
    async def compact_entries(
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
    async def update_entries(
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

    # Batch reads of records. Each has a correct default built on the verbs above;
    # a store overrides it with one round trip (the graph traverses through them).

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """The entries of ``branch`` (``None``: current) with these ids, keyed by id
        (missing ids and a missing thread: absent). Search resolves its hits with it."""
        found: dict[str, Entry] = {}
        for entry_id in dict.fromkeys(entry_ids):
            entry = await self.get_entry(tenant, thread_id, entry_id, branch=branch)
            if entry is not None:
                found[entry_id] = entry
        return found

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads with these ids that exist, keyed by id (missing ids absent). The
        caller checks what it may see, as after ``get_thread``."""
        found: dict[str, Thread] = {}
        for thread_id in dict.fromkeys(thread_ids):
            thread = await self.get_thread(tenant, thread_id)
            if thread is not None:
                found[thread_id] = thread
        return found

    async def entry_get_across(
        self, tenant: str, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], Entry]:
        """``entry_get_many`` over several threads (thread id -> entry ids), each on its
        current branch, keyed by ``(thread id, entry id)``. Search resolves the hits
        of threads it has already checked with it."""
        found: dict[tuple[str, str], Entry] = {}
        for thread_id, entry_ids in wanted.items():
            got = await self.entry_get_many(tenant, thread_id, entry_ids)
            found.update({(thread_id, eid): entry for eid, entry in got.items()})
        return found

    async def count_entries_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, int]:
        """``count_entries`` of several threads (current branches), keyed by thread id
        (missing threads absent). Search sizes a user's threads with it."""
        counts: dict[str, int] = {}
        for thread_id in dict.fromkeys(thread_ids):
            try:
                counts[thread_id] = await self.count_entries(tenant, thread_id)
            except NotFound:
                continue
        return counts

    async def entry_windows(
        self, tenant: str, windows: Sequence[tuple[str, int, int]]
    ) -> list[list[Entry]]:
        """For each ``(thread id, first, last)``: the entries of the thread's current
        branch whose position is within ``first..last``, oldest first (a missing
        thread: empty). Search reads the neighbours of its best hits with it.

        A window ending at ``LAST_POSITION`` or later runs to the thread's end (search
        reads whole threads that way). This default reads such a window with one
        ``list_entries``, and any other, per window, as the page of ``last - first + 1``
        entries that ends at ``last`` when positions are gap-free (after deletions it
        may miss some of the window); a store overrides it with one exact statement."""
        out: list[list[Entry]] = []
        newest: dict[str, int | None] = {}
        for thread_id, first, last in windows:
            try:
                if last >= LAST_POSITION:
                    _, page = await self.list_entries(tenant, thread_id)
                    out.append([e for e in page if e.position >= first])
                    continue
                if thread_id not in newest:
                    _, tail = await self.list_entries(tenant, thread_id, limit=1)
                    newest[thread_id] = tail[-1].position if tail else None
                top = newest[thread_id]
                if top is None or last < first or first > top:
                    out.append([])
                    continue
                _, page = await self.list_entries(
                    tenant, thread_id, limit=last - first + 1, offset=max(0, top - last)
                )
            except NotFound:
                out.append([])
                continue
            out.append([e for e in page if first <= e.position <= last])
        return out

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """The records of ``kind`` with these ids that exist, keyed by id (missing ids absent)."""
        found: dict[str, Record] = {}
        for record_id in dict.fromkeys(record_ids):
            record = await self.record_get(tenant, kind, record_id)
            if record is not None:
                found[record_id] = record
        return found

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """Records of ``kind`` whose ``key`` is one of ``keys`` and that ``visible_to`` may see,
        oldest first (``created_at``, then id), each once."""
        found: dict[str, Record] = {}
        for key in dict.fromkeys(keys):
            for record in await self.record_list(tenant, kind, key=key, visible_to=visible_to):
                found[record.id] = record
        return sorted(found.values(), key=lambda r: (r.created_at, r.id))

    async def record_list_keys_by_kind(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, list[Record]]:
        """``record_list_keys`` of each of ``kinds`` at once, keyed by kind (each kind
        given once, in order; an empty list when nothing matches). The graph reads the
        relations of a breadth-first level, stored once per direction, with it."""
        return {
            kind: await self.record_list_keys(tenant, kind, keys, visible_to=visible_to)
            for kind in dict.fromkeys(kinds)
        }

    async def record_list_keys_linked(
        self,
        tenant: str,
        links: Mapping[str, str],
        keys: Sequence[str],
        linked_kind: str,
        *,
        visible_to: Visibility | None = None,
    ) -> tuple[dict[str, list[Record]], dict[str, Record]]:
        """``record_list_keys_by_kind`` of the kinds of ``links`` (kind -> data field),
        and the records of ``linked_kind`` those records name: each one whose id is the
        ``data[field]`` (a string) of a record read under a kind with that field, and
        that ``visible_to`` may see, keyed by id. The graph reads a breadth-first level
        (the relations of both directions, and the entities at their far ends) with it."""
        by = await self.record_list_keys_by_kind(tenant, list(links), keys, visible_to=visible_to)
        named: dict[str, None] = {}
        for kind, records in by.items():
            for record in records:
                far = record.data.get(links[kind])
                if isinstance(far, str):
                    named[far] = None
        found = await self.record_get_many(tenant, linked_kind, list(named))
        return by, {
            rid: r for rid, r in found.items() if _types.visible(visible_to, r.agent_id, r.user_id)
        }

    async def record_list_links(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        field: str,
        targets: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """The ``record_list_keys`` records whose ``data[field]`` is a string equal to one
        of ``targets``: the links from ``keys`` to ``targets`` (the graph reads the
        relations among a closing breadth-first level and the nodes reached with it). A
        store overrides it to filter where the records are, not after reading them all."""
        wanted = set(targets)
        if not wanted:
            return []
        return [
            r
            for r in await self.record_list_keys(tenant, kind, keys, visible_to=visible_to)
            if isinstance(r.data.get(field), str) and r.data[field] in wanted
        ]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One page of ``record_list``: the oldest ``limit`` records of ``kind`` that
        ``visible_to`` may see and that sort strictly after ``after`` (a ``(created_at,
        id)`` cursor: the last record of the previous page). Cost must not grow with
        the number of records before the cursor on a store that overrides it."""
        records = await self.record_list(tenant, kind, visible_to=visible_to)
        if after is not None:
            records = [r for r in records if (r.created_at, r.id) > after]
        return records[:limit]

    # -- search ------------------------------------------------------------------

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

    # -- space -------------------------------------------------------------

    async def reclaim_space(self) -> None:
        """Give the space of deleted rows back to the file system, where the store holds it.

        Called by ``memory.prune`` after it deleted something. An embedded
        store shrinks its file (SQLite: ``VACUUM`` and a WAL truncation); a
        server store does nothing here (the server reuses freed pages; its
        vacuum, ``OPTIMIZE TABLE`` or AOF rewrite is the operator's), which is
        this default. Never changes what any read returns.
        """
        return None  # a server store has nothing to give back from the client side

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
