"""``memory.events``: the change feed (every change of the tenant, in commit order).

Switched on per store, for every process writing it (``enable``, persisted in the
database); read with ``list(after=cursor)``. A handle scoped to a user reads only that
user's events. See docs/events.md.
"""

from __future__ import annotations

import builtins
import dataclasses
import time
from collections.abc import Iterable
from datetime import timedelta

from memorybank.core._async.core import Namespace
from memorybank.core.documents import DOCUMENT_KIND
from memorybank.errors import ConfigurationError, InvalidInput, NotFound
from memorybank.events.types import (
    DOCUMENT_ADDED,
    ENTRY_ADDED,
    ENTRY_UPDATED,
    EVENT_KINDS,
    FACT_ADDED,
    Event,
    cursor_number,
)
from memorybank.records import Thread
from memorybank.rules import validate as v
from memorybank.rules.scope import ROOT, Visibility
from memorybank.runtime.concurrency import asleep
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import Unset, visible

__all__ = ["DEFAULT_KEEP", "MAX_EVENTS", "MAX_WAIT", "PRUNE_BATCH", "AsyncEvents"]

#: How long events are kept when ``enable`` is given no ``keep``.
DEFAULT_KEEP = timedelta(days=7)
#: The most events one ``list`` returns.
MAX_EVENTS = 1000
#: The longest a ``list(wait=...)`` waits for an event, in seconds.
MAX_WAIT = 60.0
#: Events deleted per statement (and transaction) by ``prune``.
PRUNE_BATCH = 1000
#: Between two reads of a waiting ``list``: the first pause and the longest.
_POLL_FIRST, _POLL_MAX = 0.05, 1.0
#: The events whose item ``list(content=True)`` reads: entries (by thread and branch)...
_ENTRY_KINDS = frozenset({ENTRY_ADDED, ENTRY_UPDATED})
#: ...and records, by the record kind their ``item_id`` names.
_RECORD_KINDS = {FACT_ADDED: "fact", DOCUMENT_ADDED: DOCUMENT_KIND}


class AsyncEvents(Namespace):
    """``memory.events``: ``list`` the tenant's changes; ``enable``, ``disable``, ``keep``
    and ``prune`` the feed (those four on an unscoped handle only)."""

    async def list(
        self,
        after: str | None = None,
        kinds: Iterable[str] | None = None,
        limit: int = 100,
        *,
        wait: float = 0.0,
        content: bool = False,
    ) -> builtins.list[Event]:
        """The events after the cursor ``after`` (``None``: from the oldest kept), oldest
        first, at most ``limit`` (1..1000); only ``kinds`` (of ``EVENT_KINDS``) when given.

        Returns a plain list: the last event's ``cursor`` is the next call's ``after``;
        an empty list means nothing new (call again with the same ``after``). ``wait``
        (seconds, at most 60): when nothing is new, read again until something is or the
        time is up (a long poll). A handle scoped to a user sees only that user's events.
        Raises ``CursorExpired`` when ``after`` is older than the events kept (or than the
        feed's last switch on): resynchronise, then follow from ``after=None``.

        ``content``: fill each event's ``content`` with the content of the entry
        (``entry.added``, ``entry.updated``), fact (``fact.added``) or document
        (``document.added``) it names, read now: an item changed since shows its current
        content, one deleted since has none (``None``), as have deletions and the other
        kinds. Without it events carry ids only.
        """
        cursor_number(after)
        wanted = None if kinds is None else _check_kinds(kinds)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_EVENTS:
            raise InvalidInput(f"limit must be an integer in 1..{MAX_EVENTS}", field="limit")
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_WAIT:
            raise InvalidInput(f"wait must be a number of seconds in 0..{MAX_WAIT:g}", field="wait")
        v.check_bool(content, "content")
        user, agent = self._principal()
        deadline = time.monotonic() + wait
        pause = _POLL_FIRST
        while True:
            events = await self._core.store.events_list(
                self._tenant, after=after, kinds=wanted, user_id=user, agent_id=agent, limit=limit
            )
            left = deadline - time.monotonic()
            if events or left <= 0:
                return await self._with_content(events) if content else events
            await asleep(min(pause, left))
            pause = min(pause * 2, _POLL_MAX)

    async def enable(self, keep: timedelta = DEFAULT_KEEP) -> None:
        """Turn the feed on for the whole store (every tenant, every process writing it),
        keeping events for ``keep``; already on: sets the keep time. Earlier cursors
        expire when the feed was off (the changes meanwhile were not recorded)."""
        self._admin("enable")
        if not isinstance(keep, timedelta) or keep.total_seconds() < 1:
            raise InvalidInput("keep must be a timedelta of at least one second", field="keep")
        self._capable()
        await self._core.store.events_enable(keep=keep)

    async def disable(self) -> None:
        """Turn the feed off for the whole store: nothing more is recorded (a write costs
        what it did before), the events kept stay readable until pruned."""
        self._admin("disable")
        self._capable()
        await self._core.store.events_disable()

    async def keep(self) -> timedelta | None:
        """How long events are kept while the feed is on; ``None`` while it is off."""
        return await self._core.store.events_keep()

    async def prune(self) -> int:
        """Delete this tenant's events older than the keep time, ``PRUNE_BATCH`` per
        transaction (writers wait for one batch at most); how many went."""
        self._admin("prune")
        total = 0
        while True:
            gone = await self._core.store.events_prune(self._tenant, limit=PRUNE_BATCH)
            total += gone
            if gone < PRUNE_BATCH:
                return total

    async def _with_content(self, events: builtins.list[Event]) -> builtins.list[Event]:
        """``events`` with the current content of the items they name (one read per
        thread and branch, and per record kind), only what the handle may see: the
        entries of threads its user owns (of its agent or none), the records its
        ``Visibility`` admits (read with it), whoever the event names."""
        store, tenant = self._core.store, self._tenant
        entry_ids: dict[tuple[str, str | None], builtins.list[str]] = {}
        record_ids: dict[str, builtins.list[str]] = {}
        for event in events:
            if event.item_id is None:
                continue
            if event.kind in _ENTRY_KINDS and event.thread_id is not None:
                branch = (event.data or {}).get("branch")
                where = (event.thread_id, branch if isinstance(branch, str) else None)
                entry_ids.setdefault(where, []).append(event.item_id)
            elif event.kind in _RECORD_KINDS:
                record_ids.setdefault(_RECORD_KINDS[event.kind], []).append(event.item_id)
        seen = self._scope.visibility()
        if seen is not None:  # a scoped handle: only the threads it may read
            threads = await store.thread_get_many(tenant, [t for t, _ in entry_ids])
            entry_ids = {
                (t, b): ids
                for (t, b), ids in entry_ids.items()
                if t in threads and self._sees_thread(threads[t], seen)
            }
        texts: dict[tuple[str, str | None, str], str | None] = {}
        for (thread_id, branch), ids in entry_ids.items():
            try:
                got = await store.entry_get_many(tenant, thread_id, ids, branch=branch)
            except NotFound:  # the branch is gone
                continue
            for entry_id, entry in got.items():
                texts["entry", thread_id, entry_id] = entry.content
        for kind, ids in record_ids.items():
            records = await store.record_get_many(tenant, kind, ids, visible_to=seen)
            for record_id, record in records.items():
                texts[kind, None, record_id] = record.content
        return [
            dataclasses.replace(event, content=texts.get(_content_key(event)))
            if event.item_id is not None
            else event
            for event in events
        ]

    def _sees_thread(self, thread: Thread, seen: Visibility) -> bool:
        """Whether the handle reads ``thread``'s entries: its user owns it (threads fail
        closed, as ``check_owner``) and it is of the handle's agent or of none."""
        user = self._scope.user_id
        owned = isinstance(user, Unset) or thread.user_id == user
        return owned and visible(seen, thread.agent_id, None)

    def _principal(self) -> tuple[str | Unset | None, str | Unset | None]:
        """The handle's user (only its events) and agent (its and those of no agent)."""
        return self._scope.user_id, self._scope.agent_id

    def _admin(self, verb: str) -> None:
        if self._scope is not ROOT:
            raise InvalidInput(
                f"events.{verb} covers a whole store: call it on an unscoped handle",
                field="scope",
            )

    def _capable(self) -> None:
        if Capability.EVENTS not in self._core.store.capabilities:
            raise ConfigurationError(
                f"{type(self._core.store).__name__} keeps no change feed (Capability.EVENTS)"
            )


def _content_key(event: Event) -> tuple[str, str | None, str]:
    """Where ``_with_content`` keeps the content of the item ``event`` names."""
    if event.kind in _ENTRY_KINDS:
        return "entry", event.thread_id, event.item_id or ""
    return _RECORD_KINDS.get(event.kind, event.kind), None, event.item_id or ""


def _check_kinds(kinds: Iterable[str]) -> builtins.list[str]:
    if isinstance(kinds, str):
        kinds = [kinds]
    wanted = builtins.list(dict.fromkeys(kinds))
    unknown = [k for k in wanted if k not in EVENT_KINDS]
    if unknown or not wanted:
        raise InvalidInput(
            f"kinds must be event kinds ({', '.join(sorted(EVENT_KINDS))}), got {unknown}",
            field="kinds",
        )
    return wanted
