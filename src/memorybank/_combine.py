"""Write combining: concurrent calls with the same key run as one batch.

A server store serialises the appends of one thread on the thread's row lock,
held until the commit, so positions follow commit order. Concurrent appends to
one thread then wait for each other's commit (a WAL flush each). Within one
process they need not: while a batch for a key is running, later calls with
that key queue, and when it ends they all run as the NEXT batch, one statement
and one commit for the lot. Every call still returns only after its entries are
committed; positions follow the queue order, gap-free; a batch that fails
fails every call in it (its statement wrote nothing).

Both forms are written here by hand (``scripts/gen_sync.py`` renames
``AsyncCombiner`` to ``Combiner``):

- ``AsyncCombiner``: the first caller runs its batch inline (no task, so the
  uncontended path costs one dict lookup); calls queued meanwhile are run by
  one task per key, batch after batch, until the queue is empty. A caller
  cancelled while queued is left out of its batch; one cancelled after its
  batch started only stops waiting.
- ``Combiner``: threads; the caller whose batch ends hands the queue to the
  first waiting thread, which runs it as the next batch.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import asyncio

K = TypeVar("K", bound=Hashable)
I = TypeVar("I")  # noqa: E741 - an item
R = TypeVar("R")

__all__ = ["AsyncCombiner", "Combiner"]


class AsyncCombiner(Generic[K, I, R]):
    """Runs ``run(key, items)`` for batches of calls: one result per item, in order; an
    ``Exception`` among the results is raised to that caller only."""

    def __init__(self, run: Callable[[K, Sequence[I]], Awaitable[Sequence[R | Exception]]]) -> None:
        self._run = run
        self._queues: dict[K, list[tuple[I, asyncio.Future[R]]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, key: K, item: I) -> R:
        queue = self._queues.get(key)
        if queue is not None:  # a batch of this key is running: join the next one
            import asyncio

            future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
            queue.append((item, future))
            return await future
        self._queues[key] = []
        try:
            result = (await self._run(key, [item]))[0]
        finally:
            self._next(key)
        if isinstance(result, Exception):
            raise result
        return result

    def _next(self, key: K) -> None:
        """Hand the calls queued under ``key`` to a task, or mark the key idle."""
        queue = self._queues[key]
        if not queue:
            del self._queues[key]
            return
        import asyncio

        self._queues[key] = []
        task = asyncio.get_running_loop().create_task(self._drive(key, queue))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drive(self, key: K, batch: list[tuple[I, asyncio.Future[R]]]) -> None:
        import asyncio

        try:
            while True:
                live = [(item, future) for item, future in batch if not future.done()]
                if live:
                    try:
                        results = await self._run(key, [item for item, _ in live])
                    except asyncio.CancelledError:  # the loop is going away
                        for _, future in live:
                            future.cancel()
                        raise
                    except Exception as error:  # every caller of the batch gets it
                        for _, future in live:
                            if not future.done():
                                future.set_exception(error)
                    else:
                        for (_, future), result in zip(live, results, strict=True):
                            if future.done():
                                continue
                            if isinstance(result, Exception):
                                future.set_exception(result)
                            else:
                                future.set_result(result)
                batch = self._queues[key]
                if not batch:
                    break
                self._queues[key] = []
        finally:
            # no await since the last look at the queue: nothing slipped in
            left = self._queues.pop(key, [])
            for _, future in left:  # only when the task itself was cancelled
                if not future.done():
                    future.cancel()


class _Waiter(Generic[I, R]):
    __slots__ = ("batch", "error", "event", "item", "result")

    def __init__(self, item: I) -> None:
        self.item = item
        self.event = threading.Event()
        self.result: R | None = None
        self.error: BaseException | None = None
        self.batch: list[_Waiter[I, R]] | None = None  # set when this waiter is to lead


class Combiner(Generic[K, I, R]):
    """Sync twin of :class:`AsyncCombiner` (threads)."""

    def __init__(self, run: Callable[[K, Sequence[I]], Sequence[R | Exception]]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._queues: dict[K, list[_Waiter[I, R]]] = {}

    def submit(self, key: K, item: I) -> R:
        me: _Waiter[I, R] = _Waiter(item)
        with self._lock:
            queue = self._queues.get(key)
            if queue is None:
                self._queues[key] = []
                batch: list[_Waiter[I, R]] | None = [me]
            else:
                queue.append(me)
                batch = None
        if batch is None:
            me.event.wait()
            batch = me.batch  # set: this thread leads the next batch (``me`` first)
        if batch is not None:
            try:
                results = self._run(key, [w.item for w in batch])
            except BaseException as error:  # every caller of the batch gets it
                for waiter in batch:
                    waiter.error = error
            else:
                for waiter, result in zip(batch, results, strict=True):
                    if isinstance(result, Exception):
                        waiter.error = result
                    else:
                        waiter.result = result
            with self._lock:
                queue = self._queues[key]
                if queue:
                    self._queues[key] = []
                    queue[0].batch = queue
                else:
                    del self._queues[key]
            for waiter in batch:
                if waiter is not me:
                    waiter.event.set()
            if queue:
                queue[0].event.set()
        if me.error is not None:
            raise me.error
        return me.result  # type: ignore[return-value]
