"""The write combiner (``memorybank.runtime.combine``): batches, order, errors, cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from memorybank.runtime.combine import AsyncCombiner, Combiner


async def test_calls_queued_behind_a_running_batch_run_as_the_next_batch() -> None:
    batches: list[list[int]] = []
    gate = asyncio.Event()

    async def run(key: str, items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        if len(batches) == 1:
            await gate.wait()
        return [10 * i for i in items]

    combiner: AsyncCombiner[str, int, int] = AsyncCombiner(run)
    first = asyncio.create_task(combiner.submit("k", 0))
    await asyncio.sleep(0)
    rest = [asyncio.create_task(combiner.submit("k", i)) for i in range(1, 6)]
    other = asyncio.create_task(combiner.submit("other key", 7))  # not held up by "k"
    await asyncio.sleep(0)
    assert await other == 70
    gate.set()
    assert await first == 0
    assert [await t for t in rest] == [10, 20, 30, 40, 50]
    assert batches == [[0], [7], [1, 2, 3, 4, 5]]
    assert combiner._keys == {}  # idle again


async def test_a_failed_batch_fails_each_of_its_calls_and_the_next_batch_still_runs() -> None:
    gate = asyncio.Event()
    calls = 0

    async def run(key: str, items: Sequence[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await gate.wait()
            return list(items)
        if calls == 2:
            raise ValueError("batch two")
        return list(items)

    combiner: AsyncCombiner[str, int, int] = AsyncCombiner(run)
    first = asyncio.create_task(combiner.submit("k", 0))
    await asyncio.sleep(0)
    second = [asyncio.create_task(combiner.submit("k", i)) for i in (1, 2)]
    await asyncio.sleep(0)
    gate.set()
    assert await first == 0
    for task in second:
        with pytest.raises(ValueError, match="batch two"):
            await task
    assert await combiner.submit("k", 3) == 3


async def test_a_call_cancelled_while_queued_is_left_out_of_its_batch() -> None:
    gate = asyncio.Event()
    batches: list[list[int]] = []

    async def run(key: str, items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        if len(batches) == 1:
            await gate.wait()
        return list(items)

    combiner: AsyncCombiner[str, int, int] = AsyncCombiner(run)
    first = asyncio.create_task(combiner.submit("k", 0))
    await asyncio.sleep(0)
    gone = asyncio.create_task(combiner.submit("k", 1))
    kept = asyncio.create_task(combiner.submit("k", 2))
    await asyncio.sleep(0)
    gone.cancel()
    gate.set()
    assert await first == 0
    assert await kept == 2
    assert gone.cancelled()
    assert batches == [[0], [2]]


async def test_a_cancelled_first_caller_hands_the_queue_on() -> None:
    gate = asyncio.Event()
    batches: list[list[int]] = []

    async def run(key: str, items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        if len(batches) == 1:
            await gate.wait()
        return list(items)

    combiner: AsyncCombiner[str, int, int] = AsyncCombiner(run)
    first = asyncio.create_task(combiner.submit("k", 0))
    await asyncio.sleep(0)
    queued = asyncio.create_task(combiner.submit("k", 1))
    await asyncio.sleep(0)
    first.cancel()
    assert await queued == 1
    assert batches == [[0], [1]]


def test_threads_are_combined_and_each_gets_its_own_result() -> None:
    batches: list[list[int]] = []
    lock = threading.Lock()

    def run(key: str, items: Sequence[int]) -> list[int]:
        with lock:
            batches.append(list(items))
        time.sleep(0.02)
        if 13 in items:
            raise ValueError("thirteen")
        return [10 * i for i in items]

    combiner: Combiner[str, int, int] = Combiner(run)
    results: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            results[i] = combiner.submit("k", i)
        except ValueError as error:
            results[i] = error

    threads = [threading.Thread(target=call, args=(i,)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(i for batch in batches for i in batch) == list(range(32))
    assert len(batches) < 32  # some calls shared a batch
    failed = next(batch for batch in batches if 13 in batch)
    for i in range(32):
        if i in failed:
            assert isinstance(results[i], ValueError)
        else:
            assert results[i] == 10 * i
    assert combiner._keys == {}


async def test_an_exception_among_the_results_goes_to_its_caller_only() -> None:
    gate = asyncio.Event()

    async def run(key: str, items: Sequence[int]) -> list[int | Exception]:
        if items == [0]:
            await gate.wait()
        return [ValueError(f"odd {i}") if i % 2 else i for i in items]

    combiner: AsyncCombiner[str, int, int] = AsyncCombiner(run)
    first = asyncio.create_task(combiner.submit("k", 0))
    await asyncio.sleep(0)
    rest = [asyncio.create_task(combiner.submit("k", i)) for i in range(1, 5)]
    await asyncio.sleep(0)
    gate.set()
    assert await first == 0
    outcomes = await asyncio.gather(*rest, return_exceptions=True)
    assert outcomes[1] == 2 and outcomes[3] == 4
    assert [str(outcomes[i]) for i in (0, 2)] == ["odd 1", "odd 3"]
    with pytest.raises(ValueError, match="odd 5"):
        await combiner.submit("k", 5)


async def test_up_to_limit_batches_of_a_key_run_at_once() -> None:
    gates = [asyncio.Event() for _ in range(3)]
    running: list[list[int]] = []

    async def run(key: str, items: Sequence[int]) -> list[int]:
        running.append(list(items))
        await gates[min(len(running), 3) - 1].wait()
        return list(items)

    combiner: AsyncCombiner[str, int, int] = AsyncCombiner(run, limit=2)
    first = asyncio.create_task(combiner.submit("k", 0))
    second = asyncio.create_task(combiner.submit("k", 1))
    await asyncio.sleep(0)
    queued = [asyncio.create_task(combiner.submit("k", i)) for i in (2, 3)]
    await asyncio.sleep(0)
    assert running == [[0], [1]]  # two batches at once, the rest waits
    gates[1].set()
    assert await second == 1
    await asyncio.sleep(0)
    assert running == [[0], [1], [2, 3]]
    gates[2].set()
    assert [await t for t in queued] == [2, 3]
    gates[0].set()
    assert await first == 0
    assert combiner._keys == {}


def test_threads_with_a_limit_are_combined_and_all_answered() -> None:
    def run(key: str, items: Sequence[int]) -> list[int]:
        time.sleep(0.01)
        return [i + 1 for i in items]

    combiner: Combiner[str, int, int] = Combiner(run, limit=2)
    results: dict[int, int] = {}

    def call(i: int) -> None:
        results[i] = combiner.submit("k", i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: i + 1 for i in range(24)}
    assert combiner._keys == {}
