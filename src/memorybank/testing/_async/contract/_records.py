"""The conformance suite: store level: records, guarded writes and batch reads."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memorybank.errors import Conflict, LeaseLost
from memorybank.memory._async.memory import AsyncMemory
from memorybank.runtime.concurrency import arun_all
from memorybank.stores.contract._async import leases
from memorybank.stores.contract._async.store import (
    UNSET,
    AsyncStore,
    Record,
    RecordGuard,
    Visibility,
)
from memorybank.stores.contract.types import LAST_POSITION
from memorybank.testing._async.contract._base import _WHEN, ContractBase, _id

__all__ = ["RecordCases"]

# Every kind of ``visible_to`` a batch read must answer like its single reads.
_SCOPES = (None, Visibility(None, None), Visibility(UNSET, "bob"), Visibility("x", "y"))


class RecordCases(ContractBase):
    """Store level: records, guarded writes and batch reads."""

    # -- store level: records, compaction, search ------------------------------------
    # These talk to the store directly: the Memory verbs built on them (facts,
    # documents, search, compaction) have their own tests above the stores.

    async def test_records_put_get_list_delete(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        a = self._record(
            "fact",
            "likes tea",
            agent_id="bot",
            user_id="alice",
            created_at=_WHEN,
            data={"confidence": 0.9, "tags": ["x"]},
            expires_at=_WHEN + timedelta(days=1),
        )
        b = self._record("fact", "shared fact", agent_id="bot", created_at=_WHEN + timedelta(1))
        c = self._record(
            "fact", "bob's", agent_id="bot", user_id="bob", created_at=_WHEN + timedelta(2)
        )
        d = self._record("fact", "other agent", agent_id="other", created_at=_WHEN + timedelta(3))
        e = self._record("core", "Alice", user_id="alice", key="name", created_at=_WHEN)
        await store.record_put(tenant, [a, b, c, d, e])
        assert await store.record_get(tenant, "fact", a.id) == a
        assert await store.record_get(tenant, "core", a.id) is None
        assert await store.record_get(_id("tenant"), "fact", a.id) is None
        listed = await store.record_list(tenant, "fact")
        assert [r.id for r in listed] == [a.id, b.id, c.id, d.id]
        visible = await store.record_list(tenant, "fact", visible_to=Visibility("bot", "alice"))
        assert [r.id for r in visible] == [a.id, b.id]
        shared = await store.record_list(tenant, "fact", visible_to=Visibility("bot", None))
        assert [r.id for r in shared] == [b.id]
        assert [r.id for r in await store.record_list(tenant, "fact", user_id=None)] == [b.id, d.id]
        assert [r.id for r in await store.record_list(tenant, "core", key="name")] == [e.id]
        assert [r.id for r in await store.record_list(tenant, "fact", limit=1)] == [a.id]
        replaced = dataclasses.replace(a, content="loves tea", data={"confidence": 1.0})
        await store.record_put(tenant, [replaced])
        assert await store.record_get(tenant, "fact", a.id) == replaced
        assert await store.record_delete(tenant, "fact", [a.id, a.id, _id()]) == 1
        assert await store.record_get(tenant, "fact", a.id) is None

    async def test_record_guard_applies_the_write_only_at_its_revision(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        first = dataclasses.replace(self._record("fact", "v1"), revision=1)
        await store.record_put(tenant, [first], guard=RecordGuard("fact", first.id, None))
        assert await store.record_get(tenant, "fact", first.id) == first
        second = dataclasses.replace(first, content="v2", revision=2)
        side = self._record("fact_version", "v1")
        await store.record_put(tenant, [second, side], guard=RecordGuard("fact", first.id, 1))
        assert await store.record_get(tenant, "fact", first.id) == second
        assert await store.record_get(tenant, "fact_version", side.id) == side

        # A stale revision, "must not exist" on an existing record, a revision on a
        # missing one: Conflict, and nothing of the batch is written.
        stale = dataclasses.replace(first, content="stale", revision=2)
        other = self._record("fact", "written with the stale one")
        for guard in (
            RecordGuard("fact", first.id, 1),
            RecordGuard("fact", first.id, None),
            RecordGuard("fact", _id("missing"), 0),
        ):
            with pytest.raises(Conflict):
                await store.record_put(tenant, [stale, other], guard=guard)
            assert await store.record_get(tenant, "fact", first.id) == second
            assert await store.record_get(tenant, "fact", other.id) is None
        # Nothing of a failed "must not exist" claim is left behind either.
        absent = _id("absent")
        with pytest.raises(Conflict):
            await store.record_put(tenant, [], guard=RecordGuard("fact", absent, 5))
        await store.record_put(tenant, [], guard=RecordGuard("fact", absent, None))
        assert await store.record_get(tenant, "fact", absent) is None
        assert [r.id for r in await store.record_list(tenant, "fact")] == [first.id]

    async def test_record_guard_on_delete(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        fact = dataclasses.replace(self._record("fact", "v"), revision=3)
        link = self._record("fact_source", "", key="e1")
        await store.record_put(tenant, [fact, link])
        with pytest.raises(Conflict):
            await store.record_delete(
                tenant, "fact_source", [link.id], guard=RecordGuard("fact", fact.id, 2)
            )
        assert await store.record_get(tenant, "fact_source", link.id) == link
        removed = await store.record_delete(
            tenant, "fact_source", [link.id], guard=RecordGuard("fact", fact.id, 3)
        )
        assert removed == 1
        assert await store.record_get(tenant, "fact_source", link.id) is None
        assert await store.record_delete(
            tenant, "fact", [fact.id], guard=RecordGuard("fact", fact.id, 3)
        )
        with pytest.raises(Conflict):
            await store.record_delete(
                tenant, "fact", [fact.id], guard=RecordGuard("fact", fact.id, 3)
            )

    async def test_concurrent_guarded_writers_exactly_one_wins(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        base = dataclasses.replace(self._record("fact", "v0"), revision=1)
        await store.record_put(tenant, [base])

        async def writer(w: int, revision: int | None, record_id: str) -> str:
            record = dataclasses.replace(base, id=record_id, content=f"w{w}", revision=2)
            try:
                await store.record_put(
                    tenant, [record], guard=RecordGuard("fact", record_id, revision)
                )
            except Conflict:
                return "lost"
            return f"w{w}"

        for revision, record_id in ((1, base.id), (None, _id("new"))):
            results = await arun_all(
                [functools.partial(writer, w, revision, record_id) for w in range(6)]
            )
            winners = [r for r in results if r != "lost"]
            assert len(winners) == 1, results
            stored = await store.record_get(tenant, "fact", record_id)
            assert stored is not None and stored.content == winners[0]

    async def test_a_leased_job_record_has_one_holder_until_its_lease_runs_out(
        self, store: AsyncStore
    ) -> None:
        """The claim of ``memorybank.stores.contract.leases`` (a compare-and-swap on the
        record primitives): of concurrent claimants exactly one holds the record; nobody
        else takes it while the lease is live; after it, one other does, and the old
        holder's renewal fails with ``LeaseLost``; a release frees it at once."""
        tenant = _id("tenant")
        now = datetime(2026, 1, 1, tzinfo=UTC)
        job = self._record("job", "", data={"ids": ["a", "b"]})
        await store.record_put(tenant, [job])

        async def claimant(owner: str, record: Record, at: datetime) -> Record | None:
            until = leases.expiry(at, 30)
            return await leases.claim(store, tenant, record, owner=owner, until=until, now=at)

        results = await arun_all([functools.partial(claimant, f"w{w}", job, now) for w in range(6)])
        held = [r for r in results if r is not None]
        assert len(held) == 1, results
        (first,) = held
        lease = leases.lease_of(first)
        assert lease is not None and lease.until == now + timedelta(seconds=30)
        stored = await store.record_get(tenant, "job", job.id)
        assert stored == first and stored.data["ids"] == ["a", "b"]
        # live: no other worker takes it, however fresh its read
        assert await claimant("late", stored, now + timedelta(seconds=29)) is None
        assert await store.record_get(tenant, "job", job.id) == first
        # the holder renews
        renewed = await leases.renew(store, tenant, first, until=now + timedelta(seconds=60))
        assert await store.record_get(tenant, "job", job.id) == renewed
        # run out: exactly one of the others takes it over
        later = now + timedelta(seconds=61)
        results = await arun_all(
            [functools.partial(claimant, f"x{w}", renewed, later) for w in range(6)]
        )
        taken = [r for r in results if r is not None]
        assert len(taken) == 1, results
        (second,) = taken
        with pytest.raises(LeaseLost):
            await leases.renew(store, tenant, renewed, until=later + timedelta(seconds=30))
        assert await store.record_get(tenant, "job", job.id) == second
        # released: claimable at once; a finished (deleted) job cannot be renewed
        released = await leases.release(store, tenant, second, now=later)
        assert released is not None
        third = await claimant("y", released, later + timedelta(microseconds=1))
        assert third is not None
        await store.record_delete(tenant, "job", [job.id])
        with pytest.raises(LeaseLost):
            await leases.renew(store, tenant, third, until=later + timedelta(seconds=90))
        assert await store.record_get(tenant, "job", job.id) is None

    # -- batch record reads: one round trip each (the graph traverses through them) ----

    async def test_record_get_many_returns_the_existing_ids_exactly(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        a = self._record("fact", "a", user_id="alice")
        b = self._record("fact", "b", agent_id="bot", key="k")
        x = self._record("fact", "x", id=_id("x"))
        other_kind = self._record("core", "same id, other kind", id=a.id)
        await store.record_put(tenant, [a, b, x, other_kind])
        await store.record_put(_id("tenant"), [self._record("fact", "elsewhere", id=_id("c"))])
        missing = _id("missing")
        found = await store.record_get_many(tenant, "fact", [b.id, missing, a.id, b.id, x.id])
        assert found == {b.id: b, a.id: a, x.id: x}
        # Exact ids: a trailing space or another case is another id; so is another tenant.
        assert await store.record_get_many(tenant, "fact", [x.id + " ", x.id.upper()]) == {}
        assert await store.record_get_many(_id("tenant"), "fact", [a.id, b.id]) == {}
        assert await store.record_get_many(tenant, "core", [a.id, b.id]) == {a.id: other_kind}
        assert await store.record_get_many(tenant, "fact", []) == {}
        # ``visible_to``: what that agent and user may see (shared rows included), only
        asked = [a.id, b.id, x.id]
        alice_bot = await store.record_get_many(
            tenant, "fact", asked, visible_to=Visibility("bot", "alice")
        )
        assert alice_bot == {a.id: a, b.id: b, x.id: x}
        bob = await store.record_get_many(
            tenant, "fact", asked, visible_to=Visibility(UNSET, "bob")
        )
        assert bob == {b.id: b, x.id: x}
        shared = await store.record_get_many(
            tenant, "fact", asked, visible_to=Visibility(None, None)
        )
        assert shared == {x.id: x}

    async def test_entry_get_many_returns_the_branch_entries_of_these_ids(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tenant = memory.tenant_id
        tid, other = await self._thread(memory), await self._thread(memory)
        ids = await self._fill(memory, tid, 4)
        elsewhere = await self._fill(memory, other, 1)
        missing = _id("missing")
        found = await store.entry_get_many(tenant, tid, [ids[2], missing, ids[0], ids[2]])
        assert list(found) == [ids[2], ids[0]]
        assert found[ids[2]] == await store.entry_get(tenant, tid, ids[2])
        assert found[ids[0]].content == "message 0"
        # another thread's entry, another tenant, a missing thread, no ids: nothing
        assert await store.entry_get_many(tenant, tid, elsewhere) == {}
        assert await store.entry_get_many(_id("tenant"), tid, ids) == {}
        assert await store.entry_get_many(tenant, _id("gone"), ids) == {}
        assert await store.entry_get_many(tenant, tid, []) == {}
        # the current branch unless one is named
        await memory.branches.create(tid, "alt", from_entry=ids[1])
        await memory.branches.checkout(tid, "alt")
        assert set(await store.entry_get_many(tenant, tid, ids)) == {ids[0], ids[1]}
        main = await store.entry_get_many(tenant, tid, ids, branch="main")
        assert list(main) == ids and main[ids[3]].branch == "main"

    async def test_batch_reads_across_threads_use_each_current_branch(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tenant = memory.tenant_id
        tid, other = await self._thread(memory), await self._thread(memory, user_id="u1")
        ids = await self._fill(memory, tid, 9)
        theirs = await self._fill(memory, other, 2)
        gone, stranger = _id("gone"), _id("tenant")
        threads = await store.thread_get_many(tenant, [other, gone, tid, other])
        assert list(threads) == [other, tid]
        assert threads[other] == await store.thread_get(tenant, other)
        assert threads[other].user_id == "u1"
        assert await store.thread_get_many(stranger, [tid, other]) == {}
        assert await store.thread_get_many(tenant, []) == {}
        found = await store.entry_get_across(
            tenant, {tid: [ids[3], ids[0], theirs[0]], other: [theirs[1]], gone: ids}
        )
        assert set(found) == {(tid, ids[3]), (tid, ids[0]), (other, theirs[1])}
        assert found[(tid, ids[3])] == await store.entry_get(tenant, tid, ids[3])
        assert found[(other, theirs[1])].content == "message 1"
        assert await store.entry_get_across(stranger, {tid: ids}) == {}
        assert await store.entry_get_across(tenant, {}) == {}
        first = (await store.entry_get(tenant, tid, ids[0])).position  # type: ignore[union-attr]
        windows = await store.entry_windows(
            tenant, [(tid, first + 2, first + 4), (gone, 0, 5), (other, -10, 100), (tid, 0, -1)]
        )
        assert [[e.id for e in w] for w in windows] == [ids[2:5], [], theirs, []]
        assert windows[0][0] == await store.entry_get(tenant, tid, ids[2])
        assert await store.entry_windows(stranger, [(tid, first, first + 3)]) == [[]]
        assert await store.entry_windows(tenant, []) == []
        # whole threads (as search reads a user's threads): to LAST_POSITION
        whole = await store.entry_windows(
            tenant, [(other, 0, LAST_POSITION), (gone, 0, LAST_POSITION), (tid, 0, LAST_POSITION)]
        )
        assert [[e.id for e in w] for w in whole] == [theirs, [], ids]
        assert await store.entry_windows(stranger, [(tid, 0, LAST_POSITION)]) == [[]]
        assert await store.entry_count_many(tenant, [other, gone, tid]) == {other: 2, tid: 9}
        assert await store.entry_count_many(stranger, [tid]) == {}
        assert await store.entry_count_many(tenant, []) == {}
        # the current branch: after a checkout, the branch's entries only
        await memory.branches.create(tid, "alt", from_entry=ids[1])
        await memory.branches.checkout(tid, "alt")
        found = await store.entry_get_across(tenant, {tid: [ids[0], ids[5]]})
        assert list(found) == [(tid, ids[0])]
        assert found[(tid, ids[0])].branch == "alt"
        (window,) = await store.entry_windows(tenant, [(tid, first, first + 6)])
        assert [e.id for e in window] == ids[:2]
        assert await store.entry_count_many(tenant, [tid]) == {tid: 2}

    async def test_record_get_many_reads_long_id_lists(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        records = [self._record("fact", f"r{i}", id=f"r{i:05d}") for i in range(1200)]
        await store.record_put(tenant, records)
        asked = [f"r{i:05d}" for i in range(0, 2400, 2)]  # half exist (over every IN limit)
        found = await store.record_get_many(tenant, "fact", asked)
        assert sorted(found) == [r.id for r in records[::2]]
        assert all(found[r.id] == r for r in records[::2])

    async def test_record_list_keys_matches_keys_exactly_in_scope_and_order(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        u = uuid.uuid4().hex[:8]

        def rec(name: str, key: str | None, day: int, **kwargs: Any) -> Record:
            return self._record(
                "edge", name, id=f"{u}-{name}", key=key, created_at=_WHEN + timedelta(day), **kwargs
            )

        shared = rec("s", "k1", 2)
        alice = rec("a", "k1", 1, user_id="alice", agent_id="bot")
        bob = rec("b", "k2", 0, user_id="bob")
        other_agent = rec("o", "k2", 1, agent_id="other")
        # Equal created_at: ordered by id; "k1 " and "K1" are other keys.
        tie_b = rec("t2", "k3", 1)
        tie_a = rec("t1", "k3", 1)
        spaced = rec("sp", "k1 ", 0)
        upper = rec("up", "K1", 0)
        unkeyed = rec("n", None, 0)
        elsewhere = dataclasses.replace(rec("e", "k1", 0), kind="node")
        await store.record_put(
            tenant,
            [shared, alice, bob, other_agent, tie_b, tie_a, spaced, upper, unkeyed, elsewhere],
        )
        keys = ["k1", "k2", "k3", "k1", _id("nokey")]
        everything = await store.record_list_keys(tenant, "edge", keys)
        assert everything == [bob, alice, other_agent, tie_a, tie_b, shared]
        seen = await store.record_list_keys(
            tenant, "edge", keys, visible_to=Visibility("bot", "alice")
        )
        assert [r.id for r in seen] == [alice.id, tie_a.id, tie_b.id, shared.id]
        only_shared = await store.record_list_keys(
            tenant, "edge", keys, visible_to=Visibility(None, None)
        )
        assert [r.id for r in only_shared] == [tie_a.id, tie_b.id, shared.id]
        any_agent = await store.record_list_keys(
            tenant, "edge", ["k2"], visible_to=Visibility(UNSET, "bob")
        )
        assert [r.id for r in any_agent] == [bob.id, other_agent.id]
        assert await store.record_list_keys(tenant, "edge", ["k1 "]) == [spaced]
        assert await store.record_list_keys(tenant, "edge", ["K1"]) == [upper]
        assert await store.record_list_keys(tenant, "edge", []) == []
        assert await store.record_list_keys(_id("tenant"), "edge", keys) == []
        assert await store.record_list_keys(tenant, "node", ["k1"]) == [elsewhere]

    async def test_record_list_keys_reads_long_key_lists(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        records = [
            self._record(
                "edge", "", id=f"e{i:05d}", key=f"n{i % 700:04d}", created_at=_WHEN + timedelta(i)
            )
            for i in range(1400)
        ]
        await store.record_put(tenant, records)
        keys = [f"n{i:04d}" for i in range(0, 2400, 2)]  # 350 of them exist
        found = await store.record_list_keys(tenant, "edge", keys)
        assert found == [r for r in records if int(r.key[1:]) % 2 == 0]  # type: ignore[index]

    async def test_record_list_keys_by_kind_is_record_list_keys_of_each_kind(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        u = uuid.uuid4().hex[:8]

        def rec(kind: str, name: str, key: str, day: int, **kwargs: Any) -> Record:
            return self._record(
                kind, name, id=f"{u}-{name}", key=key, created_at=_WHEN + timedelta(day), **kwargs
            )

        # One id under two kinds, as a graph relation is stored once per direction.
        out_shared, in_shared = rec("out", "r1", "a", 2), rec("in", "r1", "b", 2)
        out_alice = rec("out", "r2", "b", 1, user_id="alice", agent_id="bot")
        in_alice = rec("in", "r2", "a", 1, user_id="alice", agent_id="bot")
        in_bob = rec("in", "r3", "a", 0, user_id="bob")
        out_other_agent = rec("out", "r4", "a", 3, agent_id="other")
        elsewhere = rec("node", "r5", "a", 0)
        await store.record_put(
            tenant, [out_shared, in_shared, out_alice, in_alice, in_bob, out_other_agent, elsewhere]
        )
        keys = ["a", "b", "a", _id("nokey")]
        everything = await store.record_list_keys_by_kind(tenant, ["out", "in", "out", "x"], keys)
        assert list(everything) == ["out", "in", "x"]
        assert everything == {
            "out": [out_alice, out_shared, out_other_agent],
            "in": [in_bob, in_alice, in_shared],
            "x": [],
        }
        alice = await store.record_list_keys_by_kind(
            tenant, ["out", "in"], keys, visible_to=Visibility("bot", "alice")
        )
        assert alice == {"out": [out_alice, out_shared], "in": [in_alice, in_shared]}
        for seen in _SCOPES:
            got = await store.record_list_keys_by_kind(tenant, ["in", "out"], keys, visible_to=seen)
            assert got == {
                kind: await store.record_list_keys(tenant, kind, keys, visible_to=seen)
                for kind in ("in", "out")
            }
        assert await store.record_list_keys_by_kind(tenant, ["out", "in"], ["b"]) == {
            "out": [out_alice],
            "in": [in_shared],
        }
        assert await store.record_list_keys_by_kind(tenant, ["out"], []) == {"out": []}
        assert await store.record_list_keys_by_kind(tenant, [], keys) == {}
        assert await store.record_list_keys_by_kind(_id("tenant"), ["out", "in"], keys) == {
            "out": [],
            "in": [],
        }

    async def test_record_list_keys_linked_reads_the_records_named_by_the_keys_records(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        u = uuid.uuid4().hex[:8]

        def node(name: str, **kwargs: Any) -> Record:
            return self._record("node", name, id=f"{u}-{name}", **kwargs)

        def rec(kind: str, name: str, key: str, far: object, day: int, **kwargs: Any) -> Record:
            field = "to" if kind == "out" else "from"
            return self._record(
                kind,
                name,
                id=f"{u}-{name}",
                key=key,
                data={field: far, "other": f"{u}-shared"},
                created_at=_WHEN + timedelta(day),
                **kwargs,
            )

        shared, alices, bobs = node("n1"), node("n2", user_id="alice"), node("n3", user_id="bob")
        wrong_kind = self._record("thing", "", id=f"{u}-n4")
        out_1 = rec("out", "r1", "a", shared.id, 2)
        out_2 = rec("out", "r2", "a", alices.id, 1, user_id="alice")
        in_3 = rec("in", "r3", "b", bobs.id, 0)
        in_4 = rec("in", "r4", "a", f"{u}-missing", 3)
        out_5 = rec("out", "r5", "b", wrong_kind.id, 4)
        out_6 = rec("out", "r6", "a", 7, 5)  # a number names nothing
        in_7 = rec("in", "r7", "b", shared.id, 6, agent_id="bot")
        await store.record_put(tenant, [shared, alices, bobs, wrong_kind])
        await store.record_put(tenant, [out_1, out_2, in_3, in_4, out_5, out_6, in_7])
        links = {"out": "to", "in": "from"}
        keys = ["a", "b", "a", _id("nokey")]
        by, linked = await store.record_list_keys_linked(tenant, links, keys, "node")
        assert list(by) == ["out", "in"]
        assert by == {"out": [out_2, out_1, out_5, out_6], "in": [in_3, in_4, in_7]}
        assert linked == {shared.id: shared, alices.id: alices, bobs.id: bobs}
        by, linked = await store.record_list_keys_linked(
            tenant, {"in": "from", "out": "to"}, keys, "node", visible_to=Visibility(None, "alice")
        )
        assert by == {"in": [in_3, in_4], "out": [out_2, out_1, out_5, out_6]}
        assert linked == {shared.id: shared, alices.id: alices}  # not bob's, though named
        for seen in _SCOPES:
            by, linked = await store.record_list_keys_linked(
                tenant, links, keys, "node", visible_to=seen
            )
            assert by == await store.record_list_keys_by_kind(
                tenant, ["out", "in"], keys, visible_to=seen
            )
            named = [r.data[links[r.kind]] for records in by.values() for r in records]
            named = [n for n in named if isinstance(n, str)]
            every = await store.record_get_many(tenant, "node", named)
            assert linked == {
                i: r for i, r in every.items() if seen is None or seen.admits(r.agent_id, r.user_id)
            }
        other = await store.record_list_keys_linked(tenant, {"out": "other"}, ["a"], "node")
        assert other == ({"out": [out_2, out_1, out_6]}, {})  # "<u>-shared" is no node
        assert await store.record_list_keys_linked(tenant, {"out": "to"}, ["a"], "thing") == (
            {"out": [out_2, out_1, out_6]},
            {},
        )
        assert await store.record_list_keys_linked(tenant, {"out": "to"}, ["b"], "thing") == (
            {"out": [out_5]},
            {wrong_kind.id: wrong_kind},
        )
        assert await store.record_list_keys_linked(tenant, links, [], "node") == (
            {"out": [], "in": []},
            {},
        )
        assert await store.record_list_keys_linked(tenant, {}, keys, "node") == ({}, {})
        assert await store.record_list_keys_linked(_id("tenant"), links, keys, "node") == (
            {"out": [], "in": []},
            {},
        )

    async def test_record_list_links_keeps_the_keys_records_that_name_a_target(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")

        def rec(name: str, key: str, to: object, day: int, **kwargs: Any) -> Record:
            data = {} if to is None else {"to": to, "from": key}
            return self._record(
                "link", name, key=key, data=data, created_at=_WHEN + timedelta(day), **kwargs
            )

        a_b, a_c, b_a = rec("ab", "a", "b", 3), rec("ac", "a", "c", 1), rec("ba", "b", "a", 2)
        a_b_alice = rec("ab2", "a", "b", 0, user_id="alice", agent_id="bot")
        a_b_bob = rec("ab3", "a", "b", 4, user_id="bob")
        a_none, a_number = rec("a-", "a", None, 5), rec("a1", "a", 7, 6)
        a_list, a_upper = rec("al", "a", ["b"], 7), rec("aB", "a", "B", 8)
        other_kind = self._record("node", "", key="a", data={"to": "b"})
        await store.record_put(
            tenant,
            [a_b, a_c, b_a, a_b_alice, a_b_bob, a_none, a_number, a_list, a_upper, other_kind],
        )
        keys = ["a", "b", "a", _id("nokey")]
        got = await store.record_list_links(tenant, "link", keys, "to", ["b", "a", "7", "zz"])
        assert got == [a_b_alice, b_a, a_b, a_b_bob]  # oldest first, only string matches
        from_a = [a_b_alice, a_c, a_b, a_b_bob, a_number, a_list, a_upper]
        assert await store.record_list_links(tenant, "link", ["a"], "from", ["a"]) == from_a
        alice = await store.record_list_links(
            tenant, "link", keys, "to", ["b"], visible_to=Visibility("bot", "alice")
        )
        assert alice == [a_b_alice, a_b]
        for seen in _SCOPES:
            every = await store.record_list_keys(tenant, "link", keys, visible_to=seen)
            assert await store.record_list_links(
                tenant, "link", keys, "to", ["b", "c"], visible_to=seen
            ) == [r for r in every if r.data.get("to") in ("b", "c")]
        assert await store.record_list_links(tenant, "link", keys, "to", []) == []
        assert await store.record_list_links(tenant, "link", [], "to", ["b"]) == []
        assert await store.record_list_links(tenant, "link", keys, "nope", ["b"]) == []
        assert await store.record_list_links(tenant, "node", keys, "to", ["b"]) == [other_kind]
        assert await store.record_list_links(_id("tenant"), "link", keys, "to", ["b"]) == []

    async def test_record_page_walks_every_record_once_in_order(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        u = uuid.uuid4().hex[:8]
        same = _WHEN + timedelta(hours=1)
        last = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        records = [
            self._record("fact", "0", id=f"{u}-m", created_at=_WHEN),
            # Equal created_at: ordered by id, "p" before "p " (exact ids, no padding).
            self._record("fact", "1", id=f"{u}-p ", created_at=same),
            self._record("fact", "2", id=f"{u}-p", created_at=same),
            self._record("fact", "3", id=f"{u}-q", created_at=same, user_id="alice"),
            self._record("fact", "4", id=f"{u}-a", created_at=same, user_id="bob"),
            self._record("fact", "5", id=f"{u}-z", created_at=same, agent_id="other"),
            self._record("fact", "6", id=f"{u}-b", created_at=same + timedelta(microseconds=1)),
            # The ends of the value range, microseconds apart.
            self._record("fact", "7", id=f"{u}-old", created_at=datetime(1000, 1, 1, tzinfo=UTC)),
            self._record("fact", "8", id=f"{u}-y", created_at=last - timedelta(microseconds=1)),
            self._record("fact", "9", id=f"{u}-x", created_at=last),
            self._record("fact", "10", id=f"{u}-w", created_at=last - timedelta(microseconds=1)),
        ]
        await store.record_put(tenant, records)
        await store.record_put(tenant, [self._record("other", "not a fact", created_at=_WHEN)])
        expected = sorted(records, key=lambda r: (r.created_at, r.id))
        assert await store.record_list(tenant, "fact") == expected

        async def walk(limit: int, visible_to: Visibility | None = None) -> list[Record]:
            out: list[Record] = []
            after: tuple[datetime, str] | None = None
            while True:
                page = await store.record_page(
                    tenant, "fact", limit=limit, after=after, visible_to=visible_to
                )
                assert len(page) <= limit
                out += page
                if len(page) < limit:
                    return out
                after = (page[-1].created_at, page[-1].id)

        for limit in (1, 2, 3, 100):
            assert await walk(limit) == expected
        scoped = Visibility(None, "alice")
        assert await walk(2, scoped) == [
            r for r in expected if r.user_id in (None, "alice") and r.agent_id is None
        ]
        assert await walk(1, Visibility(UNSET, None)) == [r for r in expected if r.user_id is None]
        # A cursor need not be a stored record: it is a position in the order.
        ghost = (same, f"{u}-p")
        rest = await store.record_page(tenant, "fact", limit=100, after=ghost)
        assert rest == [r for r in expected if (r.created_at, r.id) > ghost]
        assert rest[0].id == f"{u}-p "
        await store.record_delete(tenant, "fact", [f"{u}-p"])
        assert await store.record_page(tenant, "fact", limit=100, after=ghost) == rest
        assert await store.record_page(_id("tenant"), "fact", limit=10) == []
