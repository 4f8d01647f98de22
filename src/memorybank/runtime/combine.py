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
  batch started only stops waiting. After each batch the task lets the loop
  turn once, so the callers it just answered, who mostly call again at once,
  join its next batch rather than take a free slot alone.
- ``Combiner``: threads; the caller whose batch ends hands the queue to the
  first waiting thread, which runs it as the next batch.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import asyncio

K = TypeVar("K", bound=Hashable)
I = TypeVar("I")  # noqa: E741 - an item
R = TypeVar("R")

__all__ = ["AsyncCombiner", "Combiner"]


class _Slots(Generic[I, R]):
    """One key's state: how many batches run, and the calls waiting for the next one."""

    __slots__ = ("gathering", "queue", "running")

    def __init__(self) -> None:
        self.running = 0
        self.gathering = False  # a batch just ended: its task takes the next queue
        self.queue: list[tuple[I, asyncio.Future[R]]] = []


class AsyncCombiner(Generic[K, I, R]):
    """Runs ``run(key, items)`` for batches of calls: one result per item, in order; an
    ``Exception`` among the results is raised to that caller only. Up to ``limit``
    batches of one key run at once (the next batch's statement can then overlap
    the previous one's commit); beyond that, calls queue for the next batch."""

    def __init__(
        self,
        run: Callable[[K, Sequence[I]], Awaitable[Sequence[R | Exception]]],
        *,
        limit: int = 1,
    ) -> None:
        self._run = run
        self._limit = limit
        self._keys: dict[K, _Slots[I, R]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, key: K, item: I) -> R:
        slots = self._keys.get(key)
        if slots is None:
            slots = self._keys[key] = _Slots()
        if slots.running >= self._limit or slots.gathering:  # join the next batch
            import asyncio

            future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
            slots.queue.append((item, future))
            return await future
        slots.running += 1
        try:
            result = (await self._run(key, [item]))[0]
        finally:
            self._next(key, slots)
        if isinstance(result, Exception):
            raise result
        return result

    def _next(self, key: K, slots: _Slots[I, R]) -> None:
        """A batch of ``key`` ended: hand the queued calls to a task, or free its slot."""
        if not slots.queue:
            slots.running -= 1
            if not slots.running:
                del self._keys[key]
            return
        import asyncio

        batch, slots.queue = slots.queue, []
        task = asyncio.get_running_loop().create_task(self._drive(key, slots, batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drive(
        self, key: K, slots: _Slots[I, R], batch: list[tuple[I, asyncio.Future[R]]]
    ) -> None:
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
                # The callers just answered mostly call again at once: one turn of the
                # loop lets them queue here, for this task's next batch, rather than the
                # next batch leaving them out or one of them taking a free slot alone (a
                # batch of one, then one of the rest, alternating: half the commits
                # wasted).
                slots.gathering = True
                try:
                    await asyncio.sleep(0)
                finally:
                    slots.gathering = False
                if not slots.queue:
                    break
                batch, slots.queue = slots.queue, []
        finally:
            # no await since the last look at the queue: nothing slipped in
            slots.running -= 1
            if not slots.running:
                left, slots.queue = slots.queue, []
                del self._keys[key]
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

    def __init__(
        self, run: Callable[[K, Sequence[I]], Sequence[R | Exception]], *, limit: int = 1
    ) -> None:
        self._run = run
        self._limit = limit
        self._lock = threading.Lock()
        self._keys: dict[K, list[Any]] = {}  # key: [running batches, queued waiters]

    def submit(self, key: K, item: I) -> R:
        me: _Waiter[I, R] = _Waiter(item)
        with self._lock:
            state = self._keys.setdefault(key, [0, []])
            if state[0] < self._limit:
                state[0] += 1
                batch: list[_Waiter[I, R]] | None = [me]
            else:
                state[1].append(me)
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
                state = self._keys[key]
                queue: list[_Waiter[I, R]] = state[1]
                if queue:
                    state[1] = []
                    queue[0].batch = queue  # the slot passes to the queue's first
                else:
                    state[0] -= 1
                    if not state[0]:
                        del self._keys[key]
            for waiter in batch:
                if waiter is not me:
                    waiter.event.set()
            if queue:
                queue[0].event.set()
        if me.error is not None:
            raise me.error
        return me.result  # type: ignore[return-value]
