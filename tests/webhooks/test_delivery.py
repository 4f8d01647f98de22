"""Delivering the change feed to a real local receiver, on SQLite, PostgreSQL, MySQL and Redis.

The receiver (``tests.webhooks.receiver``) fails, hangs past the worker's timeout,
drops connections and recovers; through all of it no event is lost, a duplicate only
repeats an event with its id and body, and each thread's events arrive in order.
Endpoints pause after repeated failures with the reason stored and shown by the admin
route, resume from their cursor, pause on an expired cursor, see only their tenant's
events and only the kinds they asked for. Waits are bounded (a hang fails the test);
nothing asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memorybank.events.types import Event
from memorybank.memory._async.memory import AsyncMemory
from memorybank.webhooks import Webhooks
from memorybank.webhooks.delivery import WebhookWorker
from tests.reliability._harness import StoreSpec, Words, provide, store_params
from tests.server.conftest import running_api
from tests.webhooks.receiver import Delivery, Receiver

#: The longest a test waits for a condition before it fails as hung.
BOUND = 120.0
STORES = store_params(("sqlite-full", "postgres", "mysql", "redis"))


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


@pytest.fixture
async def memory(spec: StoreSpec) -> AsyncIterator[AsyncMemory]:
    store = spec.open_async()
    mem = AsyncMemory(store, tokenizer=Words())
    try:
        await mem.events.enable()
        yield mem
    finally:
        await mem.close()
        await store.close()  # the memory was given the store: it leaves it open


def quick(memory: AsyncMemory, max_failures: int = 10) -> WebhookWorker:
    """A worker whose polls and retries take hundredths of a second (the defaults: seconds)."""
    return WebhookWorker(
        memory,
        poll=0.05,
        timeout=0.5,
        retry_base=0.01,
        retry_max=0.05,
        lease=10.0,
        max_failures=max_failures,
    )


def tenant(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait until ``check()`` holds; ``BOUND`` seconds at most (a bound on a hang, never
    a measured time)."""
    async with asyncio.timeout(BOUND):
        while not await check():  # noqa: ASYNC110 (the state is in the store: polled)
            await asyncio.sleep(0.02)


async def write(memory: AsyncMemory, name: str, threads: int, entries: int) -> list[str]:
    """``threads`` threads of ``entries`` entries each in tenant ``name``: their ids."""
    mem = memory.tenant(name)
    made = []
    for t in range(threads):
        thread = await mem.threads.create(user_id=f"user-{t}")
        made.append(thread.id)
    for i in range(entries):
        for thread_id in made:
            await mem.entries.add(thread_id, {"role": "user", "content": f"message {i}"})
    return made


async def feed(memory: AsyncMemory, name: str) -> list[Event]:
    """Every event of tenant ``name`` the feed keeps, oldest first."""
    events: list[Event] = []
    after = None
    while True:
        page = await memory.tenant(name).events.list(after=after, limit=1000)
        if not page:
            return events
        events += page
        after = page[-1].cursor


def received_in_full(deliveries: list[Delivery], events: list[Event]) -> None:
    """Every event acknowledged; duplicates only of one id with one body; each thread's
    events first acknowledged in the feed's order; every signature verified."""
    deliveries = [d for d in deliveries if d.answer != "cut"]  # a killed sender's last bytes
    unverified = [d for d in deliveries if not d.verified]
    assert deliveries and not unverified, unverified[:3]
    bodies: dict[str, set[bytes]] = defaultdict(set)
    for d in deliveries:
        assert d.event_id is not None and d.event["id"] == d.event_id
        bodies[d.event_id].add(d.body)
    assert all(len(b) == 1 for b in bodies.values()), "one id was sent with two bodies"
    acked = [d for d in deliveries if d.answer == "ok"]
    first: dict[str, int] = {}
    for n, d in enumerate(acked):
        first.setdefault(d.event_id or "", n)
    assert set(first) == {e.id for e in events}, "an event was lost (or one not in the feed sent)"
    order = sorted(first, key=first.__getitem__)
    by_thread: dict[str | None, list[str]] = defaultdict(list)
    for event_id in order:
        by_thread[next(e.thread_id for e in events if e.id == event_id)].append(event_id)
    for thread_id, ids in by_thread.items():
        expected = [e.id for e in events if e.thread_id == thread_id]
        assert ids == expected, f"thread {thread_id}: out of order"


@pytest.mark.parametrize("spec", STORES, indirect=True)
async def test_an_outage_loses_nothing(memory: AsyncMemory) -> None:
    """Fails, timeouts and cut connections, then recovery, while writes go on."""
    acme = tenant("acme")
    trouble = {0: "fail", 1: "fail", 2: "hang", 3: "drop", 4: "fail", 9: "hang", 10: "fail"}
    hooks = Webhooks(memory.store)
    with Receiver(lambda n: trouble.get(n, "ok")) as receiver:
        info, secret = await hooks.create(acme, receiver.url("/acme"), start="beginning")
        receiver.secrets["/acme"] = secret
        await write(memory, acme, threads=3, entries=5)
        async with quick(memory, max_failures=100) as worker:
            await write(memory, acme, threads=2, entries=10)  # while delivering
            events = await feed(memory, acme)

            async def caught_up() -> bool:
                return (await hooks.get(info.id)).cursor == events[-1].cursor

            await until(caught_up)
            assert worker.failed >= len(trouble)
        received_in_full(receiver.deliveries, events)
        assert any(d.answer == "hang" for d in receiver.deliveries)
    final = await hooks.get(info.id)
    assert final.state == "active" and final.failures == 0
    assert final.delivered == len(events) and final.last_error is not None


@pytest.mark.parametrize("spec", STORES, indirect=True)
async def test_repeated_failures_pause_with_the_reason_then_resume(memory: AsyncMemory) -> None:
    acme = tenant("acme")
    answer = ["fail"]
    async with running_api(memory.store, webhooks=False) as api:
        with Receiver(lambda n: answer[0]) as receiver:
            made = await api.client.post(
                "/v1/admin/webhooks",
                json={"tenant": acme, "url": receiver.url("/p"), "start": "beginning"},
                headers=api.admin,
            )
            hook_id = made.json()["webhook"]["id"]
            receiver.secrets["/p"] = made.json()["secret"]
            await write(memory, acme, threads=2, entries=3)
            async with quick(memory, max_failures=3):

                async def paused() -> bool:
                    got = await api.client.get(f"/v1/admin/webhooks/{hook_id}", headers=api.admin)
                    return bool(got.json()["state"] == "paused")

                await until(paused)
                shown = (
                    await api.client.get(f"/v1/admin/webhooks/{hook_id}", headers=api.admin)
                ).json()
                assert shown["failures"] == 3 and shown["cursor"] is None
                assert "3 consecutive failed deliveries" in shown["paused_reason"]
                assert "HTTP 500" in shown["paused_reason"] and "HTTP 500" in shown["last_error"]
                assert len(receiver.deliveries) == 3  # paused: no more attempts
                # the inspector's tenant view shows the state and the reason
                key = (await api.key(acme))["Authorization"].removeprefix("Bearer ")
                await api.client.get("/ui/login")
                csrf = api.client.cookies["mb_ui_csrf"]
                form = {"csrf": csrf, "key": key, "user_id": "", "tenant": ""}
                await api.client.post("/ui/login", data=form)
                page = await api.client.get("/ui/webhooks")
                assert page.status_code == 200, page.text
                assert hook_id in page.text and "3 consecutive failed deliveries" in page.text
                answer[0] = "ok"
                resumed = await api.client.patch(
                    f"/v1/admin/webhooks/{hook_id}", json={"paused": False}, headers=api.admin
                )
                assert resumed.json()["state"] == "active" and resumed.json()["failures"] == 0
                events = await feed(memory, acme)

                async def caught_up() -> bool:
                    got = await api.client.get(f"/v1/admin/webhooks/{hook_id}", headers=api.admin)
                    return bool(got.json()["cursor"] == events[-1].cursor)

                await until(caught_up)
            received_in_full(receiver.deliveries, events)


@pytest.mark.parametrize("spec", STORES, indirect=True)
async def test_an_endpoint_sees_its_tenant_and_its_kinds_only(memory: AsyncMemory) -> None:
    """Tenant A's endpoint never gets B's events; a ``kinds`` endpoint gets those kinds;
    ``start="now"`` skips what was written before it was registered."""
    a, b = tenant("a"), tenant("b")
    hooks = Webhooks(memory.store)
    await write(memory, a, threads=1, entries=2)  # before: not for the "now" endpoint
    with Receiver() as receiver:
        hook_a, secret_a = await hooks.create(a, receiver.url("/a"), start="beginning")
        hook_b, secret_b = await hooks.create(b, receiver.url("/b"), start="beginning")
        entries_a, secret_k = await hooks.create(
            a, receiver.url("/a-entries"), kinds=["entry.added"]
        )
        receiver.secrets.update({"/a": secret_a, "/b": secret_b, "/a-entries": secret_k})
        threads_a = await write(memory, a, threads=2, entries=3)
        threads_b = await write(memory, b, threads=2, entries=3)
        events_a, events_b = await feed(memory, a), await feed(memory, b)
        async with quick(memory):

            async def caught_up() -> bool:
                got = [await hooks.get(h.id) for h in (hook_a, hook_b, entries_a)]
                return (
                    got[0].cursor == events_a[-1].cursor
                    and got[1].cursor == events_b[-1].cursor
                    and got[2].cursor == events_a[-1].cursor
                )

            await until(caught_up)
        to_a = [d for d in receiver.deliveries if d.path == "/a"]
        to_b = [d for d in receiver.deliveries if d.path == "/b"]
        received_in_full(to_a, events_a)
        received_in_full(to_b, events_b)
        assert {d.event["tenant"] for d in to_a} == {a} and {d.event["tenant"] for d in to_b} == {b}
        assert not {d.event["thread_id"] for d in to_a} & set(threads_b)
        assert not {d.event["thread_id"] for d in to_b} & set(threads_a)
        wanted = [e for e in events_a if e.kind == "entry.added" and e.thread_id in threads_a]
        to_k = [d for d in receiver.deliveries if d.path == "/a-entries"]
        received_in_full(to_k, wanted)


@pytest.mark.parametrize("spec", STORES, indirect=True)
async def test_an_expired_cursor_pauses_with_the_reason(memory: AsyncMemory) -> None:
    """Events the endpoint never got were pruned (kept one second, the worker stopped
    meanwhile): its cursor is expired, and it pauses saying so rather than skip them."""
    acme = tenant("acme")
    hooks = Webhooks(memory.store)
    with Receiver() as receiver:
        info, _ = await hooks.create(acme, receiver.url("/e"), start="beginning")
        await write(memory, acme, threads=1, entries=2)
        events = await feed(memory, acme)
        async with quick(memory):

            async def caught_up() -> bool:
                return (await hooks.get(info.id)).cursor == events[-1].cursor

            await until(caught_up)
        await write(memory, acme, threads=1, entries=2)  # never delivered: pruned below
        await memory.events.enable(keep=timedelta(seconds=1))
        await asyncio.sleep(1.5)  # the events age past the keep time (no time is asserted)
        assert await memory.tenant(acme).events.prune() > 0
        await write(memory, acme, threads=1, entries=1)
        async with quick(memory):

            async def paused() -> bool:
                return (await hooks.get(info.id)).paused

            await until(paused)
        reason = (await hooks.get(info.id)).paused_reason
        assert reason is not None and "no longer keeps" in reason
        assert (await hooks.get(info.id)).cursor == events[-1].cursor  # nothing skipped
