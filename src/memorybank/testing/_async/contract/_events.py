"""Conformance: the change feed (``Capability.EVENTS``; ``memory.events``).

The feed is switched for the whole store, so these cases switch it on (and one of them
off and on again): a store shared between cases keeps it on afterwards, which changes
nothing of what the other cases check. Each case reads its own tenant's events only.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memorybank.errors import CursorExpired, InvalidInput
from memorybank.events.types import EVENT_KINDS, Event
from memorybank.memory._async.memory import AsyncMemory
from memorybank.runtime.concurrency import asleep
from memorybank.stores.contract.capabilities import Capability
from memorybank.testing._async.contract._base import ContractBase, _id, requires

__all__ = ["EventCases"]


async def _all(memory: AsyncMemory, after: str | None = None) -> list[Event]:
    """Every event of the handle after ``after``, read in pages of 2 (paging checked)."""
    found: list[Event] = []
    while True:
        page = await memory.events.list(after=after, limit=2)
        if not page:
            return found
        found.extend(page)
        after = page[-1].cursor


class EventCases(ContractBase):
    """The change feed: kinds, order, scope, expiry, off."""

    async def _on(self, memory: AsyncMemory) -> AsyncMemory:
        """The feed on; a handle on a fresh tenant, so its events are this case's alone.
        A remote store's feed is switched on its server: the case needs it on there."""
        if Capability.REMOTE in memory.store.capabilities:
            if await memory.events.keep() is None:
                pytest.skip("the remote store's server has its change feed off")
        else:
            await memory.events.enable(keep=timedelta(days=1))
        return memory.tenant(_id("feed"))

    def _switchable(self, memory: AsyncMemory) -> None:
        if Capability.REMOTE in memory.store.capabilities:
            pytest.skip("a remote store's change feed is switched on its server")

    @requires(Capability.EVENTS)
    async def test_every_change_is_an_event_in_order(self, memory: AsyncMemory) -> None:
        """Threads, entries, facts (added, superseded, deleted), documents: one event each,
        oldest first, with ids and owners and no content; paging by cursor loses none."""
        m = await self._on(memory)
        assert await m.events.keep() == timedelta(days=1)
        thread = await m.threads.create(user_id="u1", title="secret title")
        first = await m.entries.add(thread.id, {"role": "user", "content": "secret words"})
        second = await m.entries.add(thread.id, {"role": "assistant", "content": "more"})
        await m.entries.delete(thread.id, second.id)
        await m.threads.update(thread.id, title="renamed")
        fact = await m.facts.add(content="secret fact", user_id="u1")
        await m.facts.supersede(fact.id, "newer secret fact")
        await m.facts.delete(fact.id)
        doc = await m.documents.add("secret document", user_id="u1")
        await m.documents.delete(doc.id)
        await m.threads.delete(thread.id)
        events = await _all(m)
        kinds = [e.kind for e in events]
        assert kinds[:5] == [
            "thread.created", "entry.added", "entry.added", "entry.deleted", "thread.updated",
        ]  # fmt: skip
        assert [k for k in kinds if k.startswith(("fact.", "document."))] == [
            "fact.added", "fact.superseded", "fact.deleted", "document.added", "document.deleted",
        ]  # fmt: skip
        assert kinds[-1] == "thread.deleted"
        assert set(kinds) <= EVENT_KINDS
        assert [e.item_id for e in events[1:4]] == [first.id, second.id, second.id]
        facts = [e for e in events if e.kind.startswith("fact.")]
        assert {e.item_id for e in facts} == {fact.id}
        assert all(e.user_id == "u1" for e in events)
        assert all(e.thread_id == thread.id for e in events if e.kind.startswith("entry."))
        assert len({e.cursor for e in events}) == len({e.id for e in events}) == len(events)
        assert "secret" not in repr(events)
        # the cursors order the events: after any one, exactly the rest
        assert await _all(m, events[2].cursor) == events[3:]
        assert await m.events.list(after=events[-1].cursor) == []

    @requires(Capability.EVENTS)
    async def test_an_entry_update_that_changes_nothing_is_no_event(
        self, memory: AsyncMemory
    ) -> None:
        """``entry_update`` records ``entry.updated`` when it changes the entry, and nothing
        when it sets what is there already (the same on every store)."""
        m = await self._on(memory)
        thread = await m.threads.create(user_id="u1")
        added = await m.entries.add(thread.id, {"role": "user", "content": "Same Words"})
        entry = await m.entries.get(thread.id, added.id)
        assert entry is not None
        (_, last) = await m.events.list()

        async def update(content: str | None, state: dict[str, object], tokens: int) -> None:
            changes = [(entry.id, content, state, tokens)]
            await m.store.entry_update(m.tenant_id, thread.id, branch=entry.branch, changes=changes)

        await update(entry.content, dict(entry.state), entry.token_count)
        assert await m.events.list(after=last.cursor) == []
        await update("same words", dict(entry.state), entry.token_count)  # case only: a change
        await update("same words", dict(entry.state), entry.token_count)
        await update("same words", {"original": "Same Words"}, entry.token_count)
        await update("same words", {"original": "Same Words"}, entry.token_count + 1)
        events = await m.events.list(after=last.cursor)
        assert [(e.kind, e.item_id) for e in events] == [("entry.updated", entry.id)] * 3
        assert all(e.user_id == "u1" and e.thread_id == thread.id for e in events)

    @requires(Capability.EVENTS)
    async def test_kinds_and_scope_filter(self, memory: AsyncMemory) -> None:
        """``kinds`` keeps those kinds; a handle scoped to a user sees only its user's events
        (another user's never, not even by naming them)."""
        m = await self._on(memory)
        mine = await m.threads.create(user_id="alice")
        theirs = await m.threads.create(user_id="bob")
        await m.entries.add(mine.id, {"role": "user", "content": "a"})
        await m.entries.add(theirs.id, {"role": "user", "content": "b"})
        added = await m.events.list(kinds=["entry.added"])
        assert [e.thread_id for e in added] == [mine.id, theirs.id]
        alice = m.scoped(user_id="alice")
        seen = await alice.events.list()
        assert [(e.kind, e.thread_id) for e in seen] == [
            ("thread.created", mine.id), ("entry.added", mine.id),
        ]  # fmt: skip
        assert await m.scoped(user_id="carol").events.list() == []
        with pytest.raises(InvalidInput):
            await alice.events.list(kinds=["no.such.kind"])
        with pytest.raises(InvalidInput):
            await alice.events.enable()

    @requires(Capability.EVENTS)
    async def test_forget_user_leaves_one_event_without_content(self, memory: AsyncMemory) -> None:
        m = await self._on(memory)
        thread = await m.threads.create(user_id="gone")
        await m.entries.add(thread.id, {"role": "user", "content": "x"})
        await m.facts.add(content="y", user_id="gone")
        kept = await m.threads.create(user_id="stays")
        await m.forget_user("gone")
        events = await m.events.list()
        assert [e.kind for e in events] == ["thread.created", "user.forgotten"]
        assert events[0].thread_id == kept.id
        forgotten = events[1]
        assert (forgotten.user_id, forgotten.thread_id, forgotten.item_id) == ("gone", None, None)

    @requires(Capability.EVENTS)
    async def test_off_records_nothing_and_a_gap_expires_cursors(self, memory: AsyncMemory) -> None:
        """Off: writes make no event. On again: a cursor from before is expired (the
        changes meanwhile were not recorded), never a silent gap; ``after=None`` reads on."""
        self._switchable(memory)
        m = await self._on(memory)
        thread = await m.threads.create()
        (created,) = await m.events.list()
        await memory.events.disable()
        try:
            assert await memory.events.keep() is None
            await m.entries.add(thread.id, {"role": "user", "content": "unseen"})
            assert await m.events.list(after=created.cursor) == []
        finally:
            await memory.events.enable(keep=timedelta(days=1))
        with pytest.raises(CursorExpired):
            await m.events.list(after=created.cursor)
        await m.entries.add(thread.id, {"role": "user", "content": "seen"})
        kinds = [e.kind for e in await m.events.list()]
        assert kinds == ["thread.created", "entry.added"]

    @requires(Capability.EVENTS)
    async def test_pruned_events_expire_their_cursors(self, memory: AsyncMemory) -> None:
        """Events older than the keep time go with ``prune``; a cursor before them raises
        ``CursorExpired``; the last pruned one's cursor reads on without a gap."""
        self._switchable(memory)
        m = memory.tenant(_id("feed"))
        await memory.events.enable(keep=timedelta(seconds=1))
        try:
            thread = await m.threads.create()
            await m.entries.add(thread.id, {"role": "user", "content": "old"})
            old = await m.events.list()
            await asleep(1.5)  # ages the events past the keep time (no timing is asserted)
            await m.entries.add(thread.id, {"role": "user", "content": "new"})
            assert await m.events.prune() >= 2
        finally:
            await memory.events.enable(keep=timedelta(days=1))
        with pytest.raises(CursorExpired):
            await m.events.list(after=old[0].cursor)
        rest = await m.events.list(after=old[-1].cursor)
        assert [e.kind for e in rest] == ["entry.added"]
        assert [e.kind for e in await m.events.list()] == ["entry.added"]
