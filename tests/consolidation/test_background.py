"""Background consolidation: ``Memory(consolidate="background")`` consolidates, on each
tick, every owner with facts newer than its last run (driven here by
``memory.consolidation.tick()``, never by waiting for the interval), one worker at a time
per tenant (a live lease of another worker skips it), and ``close()`` stops the worker."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memorybank import AsyncMemory, Memory
from memorybank.consolidation._async.consolidation import SCHEDULE, SCHEDULE_TENANT
from memorybank.errors import ConfigurationError
from memorybank.stores.contract._async import leases
from memorybank.stores.sqlite._sync import SQLiteStore

WORKER = "memorybank-consolidate"


def _duplicates(memory: Memory, user: str) -> None:
    memory.facts.add(content="User likes green tea", user_id=user)
    memory.facts.add(content="user likes green tea!", user_id=user)


def test_a_tick_consolidates_the_owners_with_new_facts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bg.db"
    with Memory(url, tenant_id="bg", consolidate="background") as memory:
        memory.consolidation.tick()  # the first tick (at start) found nothing
        _duplicates(memory, "ana")
        _duplicates(memory, "bob")
        other = memory.tenant("bg-other")  # a tenant this memory serves is looked after too
        _duplicates(other, "cy")
        reports = memory.consolidation.tick()
        assert sorted((r.user_id, r.status, r.merged) for r in reports) == [
            ("ana", "applied", 1),
            ("bob", "applied", 1),
            ("cy", "applied", 1),
        ]
        assert len(memory.facts.list(user_id="ana")) == 1
        assert len(other.facts.list(user_id="cy")) == 1
        assert memory.consolidation.tick() == []  # nothing new since
        memory.facts.add(content="The user likes green tea.", user_id="ana")
        [again] = memory.consolidation.tick()  # ana only: bob has nothing new
        assert (again.user_id, again.merged) == ("ana", 1)
        assert len(memory.consolidation.runs()) == 3
        assert any(t.name == WORKER for t in threading.enumerate())
    assert not any(t.name == WORKER for t in threading.enumerate())  # closed: stopped


def test_another_workers_live_lease_skips_the_tenant(tmp_path: Path) -> None:
    path = str(tmp_path / "lease.db")
    with Memory(f"sqlite:///{path}", tenant_id="bg", consolidate="background") as memory:
        memory.consolidation.tick()
        _duplicates(memory, "ana")
        store = SQLiteStore(path)
        try:
            [schedule] = store.record_list(SCHEDULE_TENANT, SCHEDULE)
            now = datetime.now(UTC)
            held = leases.leased(schedule, "another-node", now + timedelta(hours=1))
            store.record_put(SCHEDULE_TENANT, [dataclasses.replace(held, revision=9)])
            assert memory.consolidation.tick() == []  # the other node holds the tenant
            assert len(memory.facts.list(user_id="ana")) == 2
            gone = leases.leased(schedule, "another-node", now - timedelta(seconds=1))
            store.record_put(SCHEDULE_TENANT, [dataclasses.replace(gone, revision=10)])
            [report] = memory.consolidation.tick()  # its lease ran out: taken over
            assert report.merged == 1
        finally:
            store.close()


async def test_the_async_worker_runs_on_the_loop_and_stops_at_close(tmp_path: Path) -> None:
    memory = AsyncMemory(
        f"sqlite:///{tmp_path}/a.db", consolidate="background", consolidate_every=3600
    )
    async with memory:
        await memory.facts.add(content="User lives in Paris", user_id="ana")
        await memory.facts.add(content="User lives in Berlin", user_id="ana")
        [report] = await memory.consolidation.tick()
        assert (report.user_id, report.superseded) == ("ana", 1)
        assert any(t.get_name() == WORKER for t in asyncio.all_tasks())
    assert not any(t.get_name() == WORKER and not t.done() for t in asyncio.all_tasks())


def test_bad_options_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    with pytest.raises(ConfigurationError):
        Memory(url, consolidate="nightly")
    with pytest.raises(ConfigurationError):
        Memory(url, consolidate="background", consolidate_every=0)
    with pytest.raises(ConfigurationError):
        Memory(url, consolidate_lease=-1)
    with Memory(url) as memory, pytest.raises(ConfigurationError):
        memory.consolidation.tick()  # no background worker
