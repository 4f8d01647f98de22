"""The change feed over a SIGKILL of the service, on a SQLite file.

``memorybank serve`` (``tests.reliability._nodes.Node``: two workers, its own process
group, a spare port) takes appends over HTTP from ``WRITERS`` client threads, each
writing to its own thread in order, one write after the other's acknowledgement. When
about 80% of ``TOTAL`` writes are acknowledged the whole process group is SIGKILLed;
the service is started again on the same file and the writers write the rest. Then,
read through the service (``GET /v1/events``): every acknowledged write has its
``entry.added`` event (0 lost); per thread the events name the writes in write order,
each once, with the acknowledged writes as one run with no gap (at most the one write
in flight at the kill, stored without its answer, between the two phases); the
cursors strictly increase; and per thread the events are exactly the stored entries.

``TOTAL`` is the issue's 10,000 writes at ``MEMORYBANK_RELIABILITY_SCALE=1`` (the
writes take about 40 s of a loaded 2-core machine; the two starts of the service most
of the rest), times the scale.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memorybank.memory._sync.memory import Memory
from tests.reliability._harness import scaled
from tests.reliability._nodes import Node, create_key

pytestmark = pytest.mark.timeout(600)

WRITERS = 4
TOTAL = scaled(10_000)
#: The share of ``TOTAL`` acknowledged before the kill.
BEFORE_KILL = 0.8
TENANT = "feed-kill"


class Writer:
    """Appends ``{name}-{n}`` to one thread, n = 0, 1, ...; keeps the acknowledged ids in
    order. A phase writes, in a thread of its own, until ``until`` writes are
    acknowledged, a call fails or ``stop`` is set."""

    def __init__(self, secret: str, thread_id: str) -> None:
        self.secret, self.thread_id = secret, thread_id
        self.acked: list[str] = []
        self.sent: list[str] = []
        self.failure: BaseException | None = None
        self.stop = threading.Event()
        self._thread: threading.Thread | None = None

    def phase(self, base: str, until: int) -> None:
        self.failure = None
        self._thread = threading.Thread(target=self._run, args=(base, until), daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.thread_id}: still writing"

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self, base: str, until: int) -> None:
        headers = {"Authorization": f"Bearer {self.secret}"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            while len(self.acked) < until and not self.stop.is_set():
                content = f"{self.thread_id}-{len(self.sent)}"
                self.sent.append(content)  # from here it may be stored without an answer
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


def _events(base: str, secret: str) -> list[dict[str, object]]:
    """Every event of the tenant, read through the service page by page."""
    found: list[dict[str, object]] = []
    after: str | None = None
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        while True:
            params: dict[str, str | int] = {"limit": 1000}
            if after is not None:
                params["after"] = after
            page = client.get("/v1/events", params=params)
            assert page.status_code == 200, page.text
            items = page.json()["items"]
            if not items:
                return found
            found.extend(items)
            after = items[-1]["cursor"]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    url = f"sqlite:///{tmp_path / 'feed.db'}"
    with Memory(url, tenant_id=TENANT) as memory:
        memory.events.enable()
        for i in range(WRITERS):
            memory.threads.create(thread_id=f"w{i}")
    served = Node("feed", url, tmp_path)
    try:
        yield served
    finally:
        served.close()


def test_a_killed_service_loses_and_reorders_no_event(node: Node) -> None:
    node.start()
    node.wait_ready()
    _, secret = create_key(node, TENANT)
    writers = [Writer(secret, f"w{i}") for i in range(WRITERS)]
    # Each writer may write all of TOTAL, so none runs out before the kill (the writers do
    # not keep pace with each other: a quota of TOTAL / WRITERS could end before it).
    for writer in writers:  # writes until the kill
        writer.phase(node.base, TOTAL)
    while sum(len(w.acked) for w in writers) < BEFORE_KILL * TOTAL:
        assert all(w.alive() for w in writers), [w.failure for w in writers]
        time.sleep(0.05)
    node.kill()
    for writer in writers:
        writer.join(timeout=60)
        assert isinstance(writer.failure, httpx.TransportError), writer.failure
    before = {w.thread_id: list(w.acked) for w in writers}

    node.start()
    node.wait_ready()
    remaining = -(-(TOTAL - sum(len(ids) for ids in before.values())) // WRITERS)
    for writer in writers:  # the rest of TOTAL at least, on the restarted service
        writer.phase(node.base, len(writer.acked) + remaining)
    for writer in writers:
        writer.join(timeout=300)
        assert writer.failure is None, writer.failure
        assert len(writer.acked) == len(before[writer.thread_id]) + remaining

    events = _events(node.base, secret)
    numbers = [int(str(e["cursor"])) for e in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    added: dict[str, list[str]] = {w.thread_id: [] for w in writers}
    for event in events:
        if event["kind"] == "entry.added":
            added[str(event["thread_id"])].append(str(event["item_id"]))
    assert sum(len(ids) for ids in added.values()) >= TOTAL
    with Memory(node.store_url, tenant_id=TENANT) as memory:
        for writer in writers:
            name, ids = writer.thread_id, added[writer.thread_id]
            stored = memory.entries.list(name)
            assert ids == [e.id for e in stored], f"{name}: events are not the entries"
            # The acknowledged writes before the kill, then at most the one in flight at
            # the kill (stored, its answer lost), then those after the restart: no gap.
            first, rest = before[name], writer.acked[len(before[name]) :]
            in_flight = len(ids) - len(writer.acked)
            assert in_flight in (0, 1), f"{name}: {in_flight} writes nobody sent"
            assert ids == first + ids[len(first) : len(first) + in_flight] + rest, name
            # and in write order: the contents as sent, less the lost one if not stored
            lost = writer.sent[len(first)]
            order = [c for c in writer.sent if in_flight or c != lost]
            assert [e.content for e in stored] == order, f"{name}: out of write order"
