"""Isolation of the stores' batch reads by id and the graph's linked reads, below the
defence in depth of ``Memory``: given another tenant's ids, ids of another thread or
deleted ids, in tenants holding the same thread ids, they return only the asking
tenant's records, of the thread named, alive, and (linked reads) in scope."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory
from memorybank.stores.contract.types import LAST_POSITION, Record, Visibility
from tests.all_stores import WITH_CLUSTER
from tests.reliability._isolation import SCOPES, Truth, fill, two_stores

#: The graph's record kinds: relations stored under each end, names, entities.
GRAPH_KINDS = ("graph_out", "graph_in", "graph_name", "graph_entity")


def _graph_owners(store: Any, tenant: str) -> dict[str, tuple[str | None, str | None]]:
    """Every graph record of ``tenant`` (read unscoped) -> its owner."""
    return {
        r.id: (r.agent_id, r.user_id)
        for kind in GRAPH_KINDS
        for r in store.record_list(tenant, kind)
    }


def _entity_of(truth: Truth, agent: str | None, user: str | None) -> str:
    """The first graph entity of this owner."""
    return next(
        r for (k, r), o in truth.records.items() if k == "graph_entity" and o == (agent, user)
    )


@pytest.mark.parametrize("kind", WITH_CLUSTER)
def test_store_batch_reads_by_id_stay_in_tenant_thread_and_scope(kind: str, tmp_path: Path) -> None:
    """The batch reads by id (``thread_get_many``, ``entry_get_many``,
    ``entry_get_across``, ``record_get_many``, ``entry_count_many``,
    ``entry_windows``) and the graph's linked reads (``record_list_keys_linked``,
    ``record_list_links``) given another tenant's ids, ids of another thread, or deleted
    ids, in tenants that hold the same thread ids: what they return is the asking
    tenant's, of the thread named, alive, and (linked reads) in scope."""
    tenant = f"iso-{uuid.uuid4().hex[:6]}"
    other = tenant + " "  # differs by a trailing space only: another tenant
    with two_stores(kind, tmp_path) as (writer, store, _):
        with Memory(writer) as memory:
            one = fill(memory.tenant(tenant), "one")
            two = fill(memory.tenant(other), "two")
            alice = memory.tenant(tenant).scoped(user_id="alice", agent_id="bot")
            ta = [e for e, t in one.entries.items() if t == "ta"]
            alice.entries.delete("ta", ta[0])
            one.gone.add(ta[0])
        # shared links (written under the graph, as no Memory call writes them) from a
        # shared entity to alice's, and to the other tenant's: the far ends are scoped
        for here, there in ((tenant, one), (other, two)):
            shared = _entity_of(there, None, None)
            now = memory.now()
            writer.record_put(here, [
                Record("graph_out", f"x-out-{n}", None, None, "", {"target_id": far}, now,
                       now, key=shared)
                for n, far in enumerate((_entity_of(there, "bot", "alice"), _entity_of(
                    two if there is one else one, None, None)))
            ] + [
                Record("graph_in", f"x-in-{n}", None, None, "", {"source_id": far}, now,
                       now, key=shared)
                for n, far in enumerate((_entity_of(there, "bot", "alice"), _entity_of(
                    two if there is one else one, None, None)))
            ] + [
                Record("graph_name", "x-name", None, None, "",
                       {"entity_id": _entity_of(there, "bot", "alice")}, now, now, key="x-name")
            ])  # fmt: skip
        by_thread = {t: [e for e, tt in one.entries.items() if tt == t] for t in one.owners}
        every = [e for ids in by_thread.values() for e in ids]
        # threads: the asking tenant's own, of the same ids
        threads = store.thread_get_many(other, [*one.owners, "missing"])
        assert set(threads) == set(two.owners)
        assert {t.tenant_id for t in threads.values()} == {other}
        # entries by id: never another tenant's, another thread's, or a deleted one
        for tid in one.owners:
            assert store.entry_get_many(other, tid, every) == {}
            got = store.entry_get_many(tenant, tid, every)
            assert set(got) == set(by_thread[tid]) - one.gone
            assert all(e.thread_id == tid for e in got.values())
        assert store.entry_get_across(other, dict.fromkeys(one.owners, every)) == {}
        across = store.entry_get_across(tenant, dict.fromkeys(one.owners, every))
        assert set(across) == {(one.entries[e], e) for e in every if e not in one.gone}
        counts = store.entry_count_many(other, list(one.owners))
        assert counts == {t: len([e for e in two.entries.values() if e == t]) for t in two.owners}
        windows = store.entry_windows(other, [(t, 1, LAST_POSITION) for t in one.owners])
        assert {e.id for w in windows for e in w} == set(two.entries)
        # records by id: another tenant's ids are missing ids
        for rkind in ("document", "fact", "graph_entity"):
            ids = [r for (k, r) in one.records if k == rkind]
            assert store.record_get_many(other, rkind, ids) == {}
            assert set(store.record_get_many(tenant, rkind, ids)) == set(ids)
        # the graph's linked reads, keyed by both tenants' entity ids
        owners = {t: _graph_owners(store, t) for t in (tenant, other)}
        keys = [r for (k, r) in (*one.records, *two.records) if k == "graph_entity"]
        links = {"graph_out": "target_id", "graph_in": "source_id"}
        for asking in (tenant, other):
            mine = owners[asking]
            for agent, user in SCOPES:
                scope = Visibility(agent, user)
                label = f"{asking!r} {scope}"
                by, far = store.record_list_keys_linked(
                    asking, links, keys, "graph_entity", visible_to=scope
                )
                read = [*(r for rs in by.values() for r in rs), *far.values()]
                for record in read:
                    assert record.id in mine, f"{label}: {record.kind} {record.id} elsewhere"
                    assert scope.admits(*mine[record.id]), f"{label}: {record.id} leaked"
                assert all(far_id == r.id for far_id, r in far.items())
                for lkind, field in links.items():
                    for record in store.record_list_links(
                        asking, lkind, keys, field, keys, visible_to=scope
                    ):
                        assert record.id in mine and scope.admits(*mine[record.id]), label
                names = store.record_list_keys_linked(
                    asking, {"graph_name": "entity_id"}, [
                        r.key for r in store.record_list(asking, "graph_name") if r.key
                    ] + [r.key for r in store.record_list(tenant, "graph_name") if r.key],
                    "graph_entity", visible_to=scope,
                )  # fmt: skip
                if scope.admits(None, None):  # the crafted shared links were read
                    assert {r.id for rs in by.values() for r in rs} >= {"x-out-0", "x-in-0"}
                    assert any(r.id == "x-name" for r in names[0]["graph_name"])
                for record in [*names[0]["graph_name"], *names[1].values()]:
                    assert record.id in mine and scope.admits(*mine[record.id]), label
            # a positive control: alice's scope reads her relations and their far ends
            by, far = store.record_list_keys_linked(
                asking, links, keys, "graph_entity", visible_to=Visibility("bot", "alice")
            )
            assert by["graph_out"] and far
