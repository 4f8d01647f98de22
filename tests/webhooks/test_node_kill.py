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

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memorybank.events.types import Event
from memorybank.memory._sync.memory import Memory
from memorybank.stores.contract._sync import leases
from memorybank.webhooks import WEBHOOK_KIND, WEBHOOK_TENANT
from tests.events.test_service_kill import Writer
from tests.reliability._nodes import ADMIN_KEY, Node, create_key
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_delivery import BOUND, received_in_full

pytestmark = pytest.mark.timeout(300)

TENANT = "hook-kill"
THREADS = 4
#: Receiver requests answered 500 (a short outage before the kill).
OUTAGE = {3: "fail", 4: "fail"}
#: Writes a writer makes at most: in effect, until it is stopped or its node killed.
ENDLESS = 10**9


def _writers(base: str, secret: str, threads: range) -> list[Writer]:
    """Writers appending to ``w{i}`` through ``base``, each in a thread of its own."""
    writers = [Writer(secret, f"w{i}") for i in threads]
    for writer in writers:
        writer.phase(base, ENDLESS)
    return writers


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
        # writes through a (they fail at its kill), then through b too
        on_a = _writers(a.base, secret, range(0, THREADS, 2))
        receiver.wait_for(lambda r: len(r.acknowledged()) >= 10, timeout=BOUND)
        b.start()  # a holds the endpoint: b's workers wait
        b.wait_ready()
        on_b = _writers(b.base, secret, range(1, THREADS, 2))
        receiver.wait_for(lambda r: len(r.acknowledged()) >= 60, timeout=BOUND)
        killed = _holder(memory, webhook_id)
        a.kill()  # SIGKILL, mid-stream: writes and deliveries under way
        at_kill = len(receiver.acknowledged())
        for writer in on_a:
            writer.join(BOUND)
            assert isinstance(writer.failure, httpx.TransportError), writer.failure
        # b takes the endpoint over once a's lease runs out, while writes go on through b
        receiver.wait_for(lambda r: len(r.acknowledged()) >= at_kill + 60, timeout=BOUND)
        for writer in on_b:
            writer.stop.set()
        for writer in on_b:
            writer.join(BOUND)
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
