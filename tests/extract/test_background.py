"""The background runner behind extract_on_write: order per key, bounded, never raising."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

import pytest

from memorybank.runtime.concurrency import AsyncBackground, Background, Backlog


async def test_async_jobs_run_in_order_per_key_and_bounded() -> None:
    runner = AsyncBackground("t", concurrency=2, max_backlog=100)
    seen: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    running = 0
    most = 0

    def job(key: str, i: int) -> Callable[[], Awaitable[None]]:
        async def step() -> None:
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.002 * ((i * 7) % 3))
            seen[key].append(i)
            running -= 1

        return step

    for i in range(10):
        for key in seen:
            assert runner.submit(key, job(key, i))
    assert runner.counts().queued == 30
    assert await runner.drain(10)
    assert seen == {key: list(range(10)) for key in seen}
    assert most == 2
    assert runner.counts() == Backlog(done=30)


async def test_async_failures_are_counted_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    runner = AsyncBackground("t", concurrency=1, max_backlog=100)
    ran: list[int] = []

    async def boom() -> None:
        raise RuntimeError("model down")

    async def fine() -> None:
        ran.append(1)

    runner.submit("k", boom, size=3)
    runner.submit("k", fine, size=2)
    assert await runner.drain(5)
    counts = runner.counts()
    assert (counts.done, counts.failed) == (2, 3)
    assert counts.last_error == "RuntimeError: model down"
    assert ran == [1]  # a failure does not stop the key's later jobs
    assert "model down" in caplog.text


async def test_async_backlog_is_bounded_and_close_cancels() -> None:
    runner = AsyncBackground("t", concurrency=1, max_backlog=5)
    release = asyncio.Event()

    async def slow() -> None:
        await release.wait()

    assert runner.submit("k", slow, size=4)
    assert not runner.submit("k", slow, size=2)  # 6 > 5
    assert runner.submit("other", slow, size=1)
    await asyncio.sleep(0.01)
    counts = runner.counts()
    assert (counts.running, counts.queued, counts.dropped) == (4, 1, 2)
    assert not await runner.drain(0.05)
    await runner.close(0.05)
    counts = runner.counts()
    assert (counts.running, counts.queued, counts.cancelled, counts.done) == (0, 0, 5, 0)
    assert not runner.submit("k", slow)  # closed
    assert runner.counts().dropped == 3


async def test_async_close_waits_for_the_backlog() -> None:
    runner = AsyncBackground("t", concurrency=2, max_backlog=100)
    done: list[int] = []

    async def step() -> None:
        await asyncio.sleep(0.01)
        done.append(1)

    for i in range(6):
        runner.submit(str(i % 3), step)
    await runner.close(10)
    assert len(done) == 6
    assert runner.counts() == Backlog(done=6)


def test_sync_jobs_run_in_order_per_key_on_bounded_threads() -> None:
    runner = Background("t", concurrency=3, max_backlog=1000)
    seen: dict[str, list[int]] = {k: [] for k in "abcde"}
    lock = threading.Lock()
    running = 0
    most = 0

    def job(key: str, i: int) -> Callable[[], None]:
        def step() -> None:
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(0.001)
            seen[key].append(i)
            with lock:
                running -= 1

        return step

    for i in range(20):
        for key in seen:
            runner.submit(key, job(key, i))
    assert runner.drain(20)
    assert seen == {key: list(range(20)) for key in seen}
    assert most <= 3
    runner.close(1)
    assert runner.counts() == Backlog(done=100)


def test_sync_failure_close_and_cancel() -> None:
    runner = Background("t", concurrency=1, max_backlog=10)
    release = threading.Event()

    def slow() -> None:
        release.wait(5)

    def boom() -> None:
        raise ValueError("bad answer")

    runner.submit("k", boom, size=1)
    runner.submit("k", slow, size=1)
    runner.submit("k", slow, size=3)
    time.sleep(0.05)
    assert runner.counts().failed == 1
    assert runner.counts().last_error == "ValueError: bad answer"
    threading.Timer(0.2, release.set).start()
    runner.close(0.05)  # gives up waiting, drops the queued job, waits for the running one
    counts = runner.counts()
    assert (counts.done, counts.cancelled, counts.queued, counts.running) == (1, 3, 0, 0)
    assert not runner.submit("k", slow)
