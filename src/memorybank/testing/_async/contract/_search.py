"""The conformance suite: store level: compaction, keyword and vector search, vector deletes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Entry
from memorybank.stores.contract._async.store import AsyncStore, VectorItem, Visibility
from memorybank.stores.contract.items import EntryRow
from memorybank.testing._async.contract._base import ContractBase, _id


def _row(entry: Entry | EntryRow) -> EntryRow:
    """An entry's ``EntryRow`` fields (what ``search_entry_rows`` returns of it)."""
    return EntryRow(*(getattr(entry, field) for field in EntryRow._fields))


def _vectors_of(got: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """``got`` holds vectors of ``expected``'s ids only, each equal to it as float32."""
    assert set(got) <= set(expected)
    for eid, vector in got.items():
        assert np.array_equal(np.asarray(vector, np.float32), expected[eid])


__all__ = ["SearchCases"]


class SearchCases(ContractBase):
    """Store level: compaction, keyword and vector search, vector deletes."""

    async def test_compact_entries_replaces_a_prefix_only_if_unchanged(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 5)
        entries = await memory.entries.list(tid)
        through = entries[2].position
        summary = self._summary(
            entries[3].created_at - timedelta(milliseconds=1),
            9,
            content="[Conversation summary]\nthree turns",
            metadata={"compaction": True},
        )

        async def compact(expected: list[str]) -> bool:
            return await self._compact(store, memory.tenant_id, tid, entries, 2, expected, summary)

        stale = await compact(ids[:2])
        assert stale is False
        assert await memory.entries.count(tid) == 5
        done = await compact(ids[:3])
        assert done is True
        after = await memory.entries.list(tid)
        assert [e.id for e in after] == [summary.id, ids[3], ids[4]]
        assert after[0].position == through and after[0].metadata == {"compaction": True}
        assert after[1:] == entries[3:]
        again = await compact(ids[:3])
        assert again is False

    async def test_update_entries_sets_content_state_and_tokens(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 2)
        changed = await store.entry_update(
            memory.tenant_id,
            tid,
            branch="main",
            changes=[(ids[0], "[compacted]", {"original": "message 0"}, 3)],
        )
        assert changed == 1
        first = await memory.entries.get(tid, ids[0])
        assert first is not None
        assert (first.content, first.state, first.token_count) == (
            "[compacted]",
            {"original": "message 0"},
            3,
        )

    async def test_update_entries_repeated_id_last_change_wins(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """An id repeated in one batch counts once and takes its last change; an id the
        branch does not hold counts nothing and changes nothing; the same on every store."""
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 2)
        changed = await store.entry_update(
            memory.tenant_id,
            tid,
            branch="main",
            changes=[
                (ids[0], "first", {"n": 1}, 1),
                ("no-such-entry", "ghost", {}, 1),
                (ids[0], "second", {"n": 2}, 2),
            ],
        )
        assert changed == 1
        first = await memory.entries.get(tid, ids[0])
        assert first is not None
        assert (first.content, first.state, first.token_count) == ("second", {"n": 2}, 2)
        assert [e.id for e in await memory.entries.list(tid)] == ids

    async def test_text_search_ranks_and_scopes(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        mine = await self._thread(memory, user_id="alice", agent_id="bot")
        theirs = await self._thread(memory, user_id="bob", agent_id="bot")
        shared = await self._thread(memory, agent_id="bot")
        await memory.remember(mine, "user", "I adopted a golden retriever puppy named Biscuit")
        await memory.remember(mine, "user", "The weather was rainy today")
        await memory.remember(theirs, "user", "My puppy is a golden retriever too")
        await memory.remember(shared, "user", "Retriever breeds need daily exercise")
        tenant = memory.tenant_id
        fact = self._record(
            "fact", "Alice's puppy Biscuit is a golden retriever", agent_id="bot", user_id="alice"
        )
        other = self._record(
            "fact", "Bob's retriever puppy is called Rex", agent_id="bot", user_id="bob"
        )
        await store.record_put(tenant, [fact, other])
        hits = await store.text_search(
            tenant,
            "golden retriever puppy?",
            kinds=["entry", "fact"],
            k=10,
            visible_to=Visibility("bot", "alice"),
        )
        found = {(h.kind, h.thread_id) for h in hits}
        assert ("entry", mine) in found and ("entry", shared) in found
        assert ("entry", theirs) not in found
        assert ("fact", None) in found and other.id not in {h.id for h in hits}
        assert hits == sorted(hits, key=lambda h: -h.score)
        top_entry = next(h for h in hits if h.kind == "entry")
        assert top_entry.thread_id == mine and top_entry.branch == "main"
        one = await store.text_search(
            tenant, "retriever", kinds=["entry", "fact"], k=10, thread_id=shared
        )
        assert [(h.kind, h.thread_id) for h in one] == [("entry", shared)]
        assert await store.text_search(_id("t"), "retriever", kinds=["entry"], k=10) == []
        assert await store.text_search(tenant, 'NEAR "(* -', kinds=["entry"], k=5) == []

    async def test_search_reads_return_what_the_single_reads_do(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """``search_entries`` and ``search_windows`` (a search's fused reads) return exactly
        the threads, entries and windows of the reads they stand for, and stored vectors
        of those entries only (a store may leave some to ``vector_get_arrays``)."""
        tenant = memory.tenant_id
        mine, theirs = await self._thread(memory), await self._thread(memory, user_id="u1")
        ids = await self._fill(memory, mine, 8)
        other = await self._fill(memory, theirs, 3)
        gone, stranger = _id("gone"), _id("tenant")
        m1, m2 = _id("m1"), _id("m2")  # models of this case alone: the tenant is shared
        await store.vector_put(
            tenant,
            [VectorItem("entry", eid, m1, [1.0, float(n), 0.5], mine) for n, eid in enumerate(ids)]
            + [VectorItem("entry", other[0], m1, [0.0, 1.0, 0.0], theirs)]
            + [VectorItem("entry", ids[0], m2, [0.0, 0.0, 1.0], mine)],
        )
        wanted = {theirs: [other[1], other[0]], gone: [ids[0]], mine: [ids[5], ids[1], "nope"]}
        alone = await store.search_entries(tenant, {mine: []})
        assert alone == (await store.thread_get_many(tenant, [mine]), {}, {})
        threads, entries, vectors = await store.search_entries(tenant, wanted, model_id=m1)
        assert threads == await store.thread_get_many(tenant, list(wanted))
        assert list(threads) == [theirs, mine]
        assert entries == await store.entry_get_across(tenant, wanted)
        assert set(entries) == {
            (theirs, other[1]),
            (theirs, other[0]),
            (mine, ids[5]),
            (mine, ids[1]),
        }
        expected = await store.vector_get_arrays(
            tenant, "entry", [eid for _, eid in entries], model_id=m1
        )
        assert set(expected) == {other[0], ids[5], ids[1]}
        _vectors_of(vectors, expected)
        # the rows a search ranks: the same entries, their ``EntryRow`` fields
        row_threads, rows, row_vectors = await store.search_entry_rows(tenant, wanted, model_id=m1)
        assert row_threads == threads
        assert {key: _row(e) for key, e in rows.items()} == {
            key: _row(e) for key, e in entries.items()
        }
        _vectors_of(row_vectors, expected)
        # once the store holds the model's vectors in memory (a vector search), the same
        await store.vector_search(tenant, [1.0, 0.0, 0.0], model_id=m1, kinds=["entry"], k=3)
        for read in (store.search_entries, store.search_entry_rows):
            _vectors_of((await read(tenant, wanted, model_id=m1))[2], expected)
        assert (await store.search_entries(tenant, wanted))[2] == {}
        assert await store.search_entries(stranger, wanted, model_id=m1) == ({}, {}, {})
        assert await store.search_entries(tenant, {}, model_id=m1) == ({}, {}, {})
        first = entries[(mine, ids[1])].position
        windows = [(mine, first - 3, first + 1), (gone, 0, 5), (theirs, -10, 100), (mine, 5, 1)]
        found, more = await store.search_windows(
            tenant, windows, model_id=m1, known={ids[0], ids[1]}
        )
        assert found == await store.entry_windows(tenant, windows)
        assert [[e.id for e in w] for w in found] == [ids[:3], [], other, []]
        expected = await store.vector_get_arrays(tenant, "entry", [ids[2], *other], model_id=m1)
        assert set(expected) == {ids[2], other[0]}
        _vectors_of(more, expected)
        row_windows, row_more = await store.search_window_rows(
            tenant, windows, model_id=m1, known={ids[0], ids[1]}
        )
        assert [[_row(e) for e in w] for w in row_windows] == [[_row(e) for e in w] for w in found]
        _vectors_of(row_more, expected)
        assert (await store.search_windows(tenant, windows))[1] == {}
        assert await store.search_windows(tenant, [], model_id=m1) == ([], {})
        assert await store.search_windows(stranger, windows[:1], model_id=m1) == ([[]], {})
        # the current branch: after a checkout, the branch's entries only
        await memory.branches.create(mine, "alt", from_entry=ids[1])
        await memory.branches.checkout(mine, "alt")
        _, entries, vectors = await store.search_entries(
            tenant, {mine: [ids[0], ids[5]]}, model_id=m2
        )
        assert list(entries) == [(mine, ids[0])] and entries[(mine, ids[0])].branch == "alt"
        assert set(vectors) <= {ids[0]}
        (window,), _ = await store.search_windows(tenant, [(mine, first - 3, first + 6)])
        assert [e.id for e in window] == ids[:2]
        await memory.threads.delete(mine)
        await memory.threads.delete(theirs)

    async def test_vector_search_by_cosine_per_model_and_scope(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        mine = await self._thread(memory, user_id="alice")
        theirs = await self._thread(memory, user_id="bob")
        e1 = await memory.remember(mine, "user", "one")
        e2 = await memory.remember(mine, "user", "two")
        e3 = await memory.remember(theirs, "user", "three")
        doc = self._record("document", "doc")
        tenant = memory.tenant_id
        await store.record_put(tenant, [doc])
        await store.vector_put(
            tenant,
            [
                VectorItem("entry", e1.id, "m1", [1.0, 0.0, 0.0], mine),
                VectorItem("entry", e2.id, "m1", [0.6, 0.8, 0.0], mine),
                VectorItem("entry", e3.id, "m1", [1.0, 0.0, 0.0], theirs),
                VectorItem("document", doc.id, "m1", [0.0, 0.0, 2.0]),
                VectorItem("entry", e2.id, "m2", [1.0, 0.0, 0.0], mine),
            ],
        )
        hits = await store.vector_search(
            tenant,
            [2.0, 0.0, 0.0],
            model_id="m1",
            kinds=["entry", "document"],
            k=3,
            visible_to=Visibility(None, "alice"),
        )
        assert [h.id for h in hits] == [e1.id, e2.id, doc.id]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert hits[1].score == pytest.approx(0.6, abs=1e-5)
        assert hits[0].thread_id == mine
        only = await store.vector_search(
            tenant, [1.0, 0.0, 0.0], model_id="m2", kinds=["entry"], k=5
        )
        assert [h.id for h in only] == [e2.id]
        got = await store.vector_get(tenant, "entry", [e2.id, _id()], model_id="m1")
        assert list(got) == [e2.id] and got[e2.id] == pytest.approx([0.6, 0.8, 0.0], abs=1e-6)
        await memory.threads.delete(mine)
        left = await store.vector_search(
            tenant, [1.0, 0.0, 0.0], model_id="m1", kinds=["entry"], k=5
        )
        assert [h.id for h in left] == [e3.id]

    async def test_vector_put_of_several_dimensions_in_one_call(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """One call mixing models of different dimensions, and an id written twice."""
        thread = await self._thread(memory)
        e1 = await memory.remember(thread, "user", "one")
        e2 = await memory.remember(thread, "user", "two")
        tenant = memory.tenant_id
        await store.vector_put(
            tenant,
            [
                VectorItem("entry", e1.id, "d3", [0.0, 3.0, 4.0], thread),
                VectorItem("entry", e1.id, "d2", [1.0, 0.0], thread),
                VectorItem("entry", e2.id, "d3", [1.0, 0.0, 0.0], thread),
                VectorItem("entry", e2.id, "d2", [0.0, 1.0], thread),
                VectorItem("entry", e2.id, "d2", [0.6, 0.8], thread),  # the last one wins
            ],
        )
        got = await store.vector_get(tenant, "entry", [e1.id, e2.id], model_id="d3")
        assert got[e1.id] == pytest.approx([0.0, 0.6, 0.8], abs=1e-6)
        assert got[e2.id] == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
        got = await store.vector_get(tenant, "entry", [e1.id, e2.id], model_id="d2")
        assert got[e2.id] == pytest.approx([0.6, 0.8], abs=1e-6)
        for model in ("d2", "d3"):  # the same vectors as float32 arrays
            lists = await store.vector_get(tenant, "entry", [e1.id, e2.id, _id()], model_id=model)
            arrays = await store.vector_get_arrays(
                tenant, "entry", [e1.id, e2.id, _id()], model_id=model
            )
            assert set(arrays) == set(lists) == {e1.id, e2.id}
            for rid, vector in arrays.items():
                assert vector.dtype == np.float32 and vector.tolist() == pytest.approx(lists[rid])
        hits = await store.vector_search(tenant, [0.0, 1.0], model_id="d2", kinds=["entry"], k=2)
        assert [h.id for h in hits] == [e2.id, e1.id]
        assert [h.score for h in hits] == pytest.approx([0.8, 0.0], abs=1e-5)

    async def _vectors_left(self, store: AsyncStore, tenant: str, ids: list[str]) -> set[str]:
        """The ids among ``ids`` whose entry vector (model ``mv``) is still stored and found."""
        got = set(await store.vector_get(tenant, "entry", ids, model_id="mv"))
        hits = await store.vector_search(
            tenant, [1.0, 0.0, 0.0], model_id="mv", kinds=["entry"], k=len(ids) + 50
        )
        found = {h.id for h in hits} & set(ids)
        assert found <= got  # a search never returns a vector that is gone
        return got

    async def test_deleting_entries_deletes_their_vectors_once_no_branch_holds_them(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """Every path that deletes entries deletes their vectors, but only the last copy's:
        a fork copies entries with their ids (and so shares their vectors)."""
        tenant = memory.tenant_id
        tid = await self._thread(memory, user_id="alice")
        ids = await self._fill(memory, tid, 10)
        other = await self._thread(memory, user_id="bob")
        kept = await self._fill(memory, other, 2)
        elsewhere = AsyncMemory(store, tenant_id=_id("tenant"))
        foreign = await self._thread(elsewhere)
        foreign_ids = await self._fill(elsewhere, foreign, 2)

        def item(entry_id: str, thread: str) -> VectorItem:
            return VectorItem("entry", entry_id, "mv", [1.0, 0.1, 0.0], thread)

        await store.vector_put(tenant, [item(i, tid) for i in ids] + [item(i, other) for i in kept])
        await store.vector_put(elsewhere.tenant_id, [item(i, foreign) for i in foreign_ids])
        every = ids + kept
        assert await self._vectors_left(store, tenant, every) == set(every)
        await memory.branches.create(tid, "fork", from_entry=ids[7])  # copies ids[0..7]

        # entry_delete: the fork's copy keeps ids[0]'s vector; ids[8] has no copy.
        assert await store.entry_delete(tenant, tid, [ids[0], ids[8]]) == 2
        assert await self._vectors_left(store, tenant, every) == set(every) - {ids[8]}
        # ... and deleting the last copy deletes it.
        assert await store.entry_delete(tenant, tid, [ids[0]], branch="fork") == 1
        left = set(every) - {ids[0], ids[8]}
        assert await self._vectors_left(store, tenant, every) == left
        # entry_truncate_after on the fork: ids[6], ids[7] still on main.
        assert await store.entry_truncate_after(tenant, tid, ids[5], branch="fork") == 2
        assert await self._vectors_left(store, tenant, every) == left
        # entry_truncate_after on main: ids[9] had no copy; ids[6], ids[7] had none left either.
        assert await store.entry_truncate_after(tenant, tid, ids[5]) == 3
        left -= {ids[6], ids[7], ids[9]}
        assert await self._vectors_left(store, tenant, every) == left
        # compaction of main's first three (ids[1..3]; fork still holds them).
        entries = await memory.entries.list(tid)
        assert [e.id for e in entries] == ids[1:6]
        summary = self._summary(entries[3].created_at - timedelta(milliseconds=1), 1)
        assert await self._compact(store, tenant, tid, entries, 2, ids[1:4], summary)
        assert await self._vectors_left(store, tenant, every) == left
        # branch_delete: the fork held ids[1..5]; ids[1..3] now have no copy at all.
        assert await store.branch_delete(tenant, tid, "fork") is True
        left -= {ids[1], ids[2], ids[3]}
        assert await self._vectors_left(store, tenant, every) == left
        # a second fork, then entry_clear on main and on the fork.
        await memory.branches.create(tid, "again")
        assert await store.entry_clear(tenant, tid) == 3
        assert await self._vectors_left(store, tenant, every) == left
        assert await store.entry_clear(tenant, tid, branch="again") == 3
        left -= {ids[4], ids[5]}
        assert left == set(kept)
        assert await self._vectors_left(store, tenant, every) == left
        # compaction of a whole thread without a fork.
        three = await self._fill(memory, other, 1)
        await store.vector_put(tenant, [item(three[0], other)])
        entries = await memory.entries.list(other)
        assert await self._compact(store, tenant, other, entries, 0, [kept[0]], None)
        assert await self._vectors_left(store, tenant, every + three) == {kept[1], three[0]}
        # Other tenants' vectors never moved; thread_delete takes the rest.
        got = await store.vector_get(elsewhere.tenant_id, "entry", foreign_ids, model_id="mv")
        assert set(got) == set(foreign_ids)
        assert await store.thread_delete(tenant, other) is True
        assert await self._vectors_left(store, tenant, every + three) == set()
        await elsewhere.close()

    async def test_forget_user_erases_records_and_vectors(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tenant, user = memory.tenant_id, _id("u")
        fact = self._record("fact", "secret", user_id=user)
        keep = self._record("fact", "shared")
        await store.record_put(tenant, [fact, keep])
        await store.vector_put(tenant, [VectorItem("fact", fact.id, "m", [1.0, 0.0])])
        await memory.forget_user(user)
        assert await store.record_get(tenant, "fact", fact.id) is None
        assert await store.record_get(tenant, "fact", keep.id) is not None
        assert await store.vector_get(tenant, "fact", [fact.id], model_id="m") == {}
