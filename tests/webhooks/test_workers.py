"""Two delivery workers in processes of their own share one endpoint; the one holding it
is killed with SIGKILL mid-run. The other takes the endpoint over once the lease runs
out: every event reaches the receiver, a duplicate only repeats an event with its id
(what the killed worker sent but could not record), and each thread stays in order.
On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract._async import leases
from memorybank.webhooks import WEBHOOK_KIND, WEBHOOK_TENANT, Webhooks
from tests.reliability._harness import ROOT, StoreSpec, Words, _child_env, provide, store_params
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_delivery import BOUND, feed, received_in_full, tenant, until, write

#: Seconds a worker holds the endpoint: the survivor takes over after it.
LEASE = "2"


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


class Deliverer:
    """``python -m tests.webhooks._deliverer``: its owner id once ready."""

    def __init__(self, spec: StoreSpec, directory: Path, n: int) -> None:
        self.out = directory / f"deliverer-{n}.out"
        self.err = directory / f"deliverer-{n}.err"
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.webhooks._deliverer", spec.to_json(), LEASE],
                stdout=out,
                stderr=err,
                cwd=ROOT,
                env=_child_env(),
            )

    def owner(self) -> str:
        deadline = time.monotonic() + BOUND
        while True:
            text = self.out.read_text(encoding="utf-8")
            if text.endswith("\n"):
                return str(json.loads(text.splitlines()[0])["ready"])
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"deliverer not ready: {self.err.read_text()[-2000:]}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.parametrize("spec", store_params(("sqlite-full", "postgres")), indirect=True)
async def test_a_worker_killed_mid_run_loses_nothing(spec: StoreSpec, tmp_path: Path) -> None:
    store = spec.open_async()
    memory = AsyncMemory(store, tokenizer=Words())
    acme = tenant("acme")
    workers: list[Deliverer] = []
    try:
        await memory.events.enable()
        hooks = Webhooks(store)
        with Receiver() as receiver:
            info, secret = await hooks.create(acme, receiver.url("/k"), start="beginning")
            receiver.secrets["/k"] = secret
            await write(memory, acme, threads=4, entries=15)
            workers = [Deliverer(spec, tmp_path, n) for n in range(2)]
            owners = {w.owner(): w for w in workers}
            receiver.wait_for(lambda r: len(r.acknowledged()) >= 20, timeout=BOUND)
            record = await store.record_get(WEBHOOK_TENANT, WEBHOOK_KIND, info.id)
            assert record is not None
            lease = leases.lease_of(record)
            assert lease is not None and lease.owner in owners
            holder = owners.pop(lease.owner)
            holder.proc.kill()  # SIGKILL, holding the lease, maybe mid-delivery
            holder.proc.wait()
            before = len(receiver.acknowledged())
            await write(memory, acme, threads=2, entries=10)  # while nobody delivers
            events = await feed(memory, acme)

            async def caught_up() -> bool:
                return (await hooks.get(info.id)).cursor == events[-1].cursor

            await until(caught_up)
            (survivor,) = owners.values()
            assert survivor.proc.poll() is None
            record = await store.record_get(WEBHOOK_TENANT, WEBHOOK_KIND, info.id)
            assert record is not None
            taken = leases.lease_of(record)
            assert taken is not None and taken.owner == next(iter(owners))
            assert before < len(events)  # the kill came before the end
            received_in_full(receiver.deliveries, events)
            final = await hooks.get(info.id)
            assert final.state == "active" and final.failures == 0
    finally:
        for worker in workers:
            worker.stop()
        await memory.close()
        await store.close()  # the memory was given the store: it leaves it open
        await asyncio.sleep(0)
