"""Webhook delivery over a SIGKILL of the delivering ``memorybank serve`` node.

Two nodes (``tests.reliability._nodes.Node``: ``memorybank serve --workers 2``, each
its own process group and spare port) share one SQLite file; every worker process of
both runs a webhook delivery worker (``MEMORYBANK_WEBHOOK_LEASE=3``: an endpoint is
taken over 3 s after its holder dies, rather than 30). Node ``a`` starts first and
claims the one endpoint; a real receiver (``tests.webhooks.receiver``, an HTTP server
in a thread of this process) fails two requests (a short outage) and acknowledges the
rest. Client threads write through both nodes while node ``a`` is SIGKILLed
mid-stream; node ``b`` takes the endpoint over once the lease runs out while the
writes through it go on. Then every event of the feed has been acknowledged by the
receiver (0 lost), a duplicate only repeats an event with its id and body (what ``a``
sent but had not recorded), each thread's events arrived in order, every signature
verified, and every acknowledged write has its event delivered.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memorybank.events.types import Event
from memorybank.memory._sync.memory import Memory
from memorybank.stores.contract._sync import leases
from memorybank.webhooks import WEBHOOK_KIND, WEBHOOK_TENANT
from tests.reliability._nodes import ADMIN_KEY, Node, create_key
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_delivery import BOUND, received_in_full

pytestmark = pytest.mark.timeout(300)

TENANT = "hook-kill"
THREADS = 4
#: Receiver requests answered 500 (a short outage before the kill).
OUTAGE = {3: "fail", 4: "fail"}


class Writer:
    """Appends ``{thread}-{n}`` to ``thread`` through ``base`` one after the other's
    answer, in a thread of its own, until ``stop`` is set or a call fails; keeps the
    acknowledged entry ids."""

    def __init__(self, base: str, secret: str, thread_id: str, stop: threading.Event) -> None:
        self.base, self.secret, self.thread_id, self.stop = base, secret, thread_id, stop
        self.acked: list[str] = []
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._thread.join(BOUND)
        assert not self._thread.is_alive(), f"{self.thread_id}: still writing"

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self.secret}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=60) as client:
            while not self.stop.is_set():
                content = f"{self.thread_id}-{len(self.acked)}"
                try:
                    made = client.post(
                        f"/v1/threads/{self.thread_id}/entries",
                        json={"role": "user", "content": content},
                    )
                except httpx.TransportError as error:
                    self.failure = error
                    return
                if made.status_code != 201:
                    self.failure = AssertionError(f"{made.status_code}: {made.text}")
                    return
                self.acked.append(made.json()["id"])


def _feed(memory: Memory) -> list[Event]:
    events: list[Event] = []
    while page := memory.events.list(after=events[-1].cursor if events else None, limit=1000):
        events += page
    return events


def _holder(memory: Memory, webhook_id: str) -> str:
    """The owner of the endpoint's lease (a worker of one of the nodes)."""
    record = memory.store.record_get(WEBHOOK_TENANT, WEBHOOK_KIND, webhook_id)
    assert record is not None
    lease = leases.lease_of(record)
    assert lease is not None, "nobody holds the endpoint"
    return lease.owner


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMORYBANK_WEBHOOK_LEASE", "3")  # read by the nodes started here
    found = f"sqlite:///{tmp_path / 'hooks.db'}"
    with Memory(found, tenant_id=TENANT) as memory:
        memory.events.enable()
        for i in range(THREADS):
            memory.threads.create(thread_id=f"w{i}")
    return found


@pytest.fixture
def nodes(url: str, tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    a, b = Node("a", url, tmp_path), Node("b", url, tmp_path)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_a_killed_delivering_node_loses_no_delivery(url: str, nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    a.start()
    a.wait_ready()
    _, secret = create_key(a, TENANT)
    with (
        Receiver(lambda n: OUTAGE.get(n, "ok")) as receiver,
        Memory(url, tenant_id=TENANT) as memory,
    ):
        made = httpx.post(
            f"{a.base}/v1/admin/webhooks",
            json={"tenant": TENANT, "url": receiver.url("/hook"), "start": "beginning"},
            headers={"Authorization": f"Bearer {ADMIN_KEY}"},
            timeout=30,
        )
        assert made.status_code == 201, made.text
        webhook_id = made.json()["webhook"]["id"]
        receiver.secrets["/hook"] = made.json()["secret"]
        stop_a, stop_b = threading.Event(), threading.Event()
        # writes through a (they fail at its kill), then through b too
        on_a = [Writer(a.base, secret, f"w{i}", stop_a) for i in range(0, THREADS, 2)]
        receiver.wait_for(lambda r: len(r.acknowledged()) >= 10, timeout=BOUND)
        b.start()  # a holds the endpoint: b's workers wait
        b.wait_ready()
        on_b = [Writer(b.base, secret, f"w{i}", stop_b) for i in range(1, THREADS, 2)]
        receiver.wait_for(lambda r: len(r.acknowledged()) >= 60, timeout=BOUND)
        killed = _holder(memory, webhook_id)
        a.kill()  # SIGKILL, mid-stream: writes and deliveries under way
        at_kill = len(receiver.acknowledged())
        for writer in on_a:
            writer.join()
            assert isinstance(writer.failure, httpx.TransportError), writer.failure
        # b takes the endpoint over once a's lease runs out, while writes go on through b
        receiver.wait_for(lambda r: len(r.acknowledged()) >= at_kill + 60, timeout=BOUND)
        stop_b.set()
        for writer in on_b:
            writer.join()
            assert writer.failure is None, writer.failure
        events = _feed(memory)
        wanted = {e.id for e in events}
        receiver.wait_for(lambda r: wanted <= {d.event_id for d in r.acknowledged()}, timeout=BOUND)
        assert _holder(memory, webhook_id) != killed  # taken over by a worker of b
        assert at_kill < len(events)  # the kill came before the end
        received_in_full(receiver.deliveries, events)
        delivered = {d.event["item_id"] for d in receiver.acknowledged()}
        for writer in on_a + on_b:
            assert writer.acked and set(writer.acked) <= delivered, writer.thread_id
        assert [d.answer for d in receiver.deliveries].count("fail") == len(OUTAGE)
