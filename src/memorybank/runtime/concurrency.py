"""The few primitives whose sync and async forms differ.

The ``_async/`` folder of each concept (``memory/_async/``, ``context/_async/``,
``stores/sqlite/_async/``, ...) is the single source of the library's I/O code;
``scripts/gen_sync.py`` generates the ``_sync/`` folder beside each from it by
dropping ``async``/``await`` and renaming the names below (``AsyncLock`` ->
``Lock``, ``amaybe_await`` -> ``maybe_await``, ...). This module is the one place
where both forms are written by hand, side by side (the httpcore pattern).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

if TYPE_CHECKING:  # asyncio and concurrent.futures cost ~60 ms to import: sync users skip them
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from memorybank.runtime.backlog import Backlog

from memorybank.runtime.log import logger

T = TypeVar("T")
S = TypeVar("S")
A = TypeVar("A")
B = TypeVar("B")
P = ParamSpec("P")

__all__ = [
    "AsyncBackground",
    "AsyncBackgroundCall",
    "AsyncJobQueue",
    "AsyncLock",
    "AsyncReadPool",
    "AsyncStep",
    "AsyncWorker",
    "Background",
    "BackgroundCall",
    "Backlog",
    "Breaker",
    "JobQueue",
    "Lock",
    "ReadPool",
    "Step",
    "Worker",
    "aboth",
    "amaybe_await",
    "aoffload",
    "arun_all",
    "asleep",
    "both",
    "maybe_await",
    "offload",
    "run_all",
    "sleep",
]


def __getattr__(name: str) -> object:
    """``Backlog``, defined in ``_backlog`` and loaded on first use (cold start)."""
    if name == "Backlog":
        from memorybank.runtime.backlog import Backlog

        return Backlog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: A call without arguments that the caller may run more than once (a retried step).
AsyncStep = Callable[[], Awaitable[T]]
#: Sync twin of :data:`AsyncStep`.
Step = Callable[[], T]


async def amaybe_await(value: T | Awaitable[T]) -> T:
    """Await ``value`` if it is awaitable (a user callback may be sync or async)."""
    import inspect  # on first use: ``import inspect`` costs a cold start 15 ms

    if inspect.isawaitable(value):
        return await value
    return value


def maybe_await(value: T | Awaitable[T]) -> T:
    """Sync twin of :func:`amaybe_await`: run an awaitable to completion.

    Inside a running event loop (a sync ``Memory`` used from async code) the
    coroutine runs on a fresh loop in a helper thread, so it never deadlocks.
    """
    import inspect  # on first use: ``import inspect`` costs a cold start 15 ms

    if not inspect.isawaitable(value):
        return value
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    async def _run() -> T:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_run())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _run()).result()


async def arun_all(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run coroutine factories concurrently as tasks; results in order."""
    import asyncio

    return list(await asyncio.gather(*(call() for call in calls)))


async def aboth(
    first: Callable[[], Awaitable[A]], second: Callable[[], Awaitable[B]]
) -> tuple[A, B]:
    """Both results, ``second`` running as a task while ``first`` runs in this one.

    A failure (or cancellation) of ``first`` cancels ``second`` and waits for it; a
    failure of ``second`` is raised once ``first`` is done. Errors come as they were
    raised, not wrapped in an ``ExceptionGroup``.
    """
    import asyncio

    task = asyncio.ensure_future(second())
    try:
        one = await first()
    except BaseException:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    return one, await task


def both(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """Sync twin of :func:`aboth`: ``first`` then ``second``, on the caller's thread (a
    sync store runs its calls there, one at a time)."""
    return first(), second()


def run_all(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Sync twin of :func:`arun_all`: run the callables concurrently on threads."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(calls))) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result() for future in futures]


async def asleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def sleep(seconds: float) -> None:
    time.sleep(seconds)


async def aoffload(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread, so that long CPU work (a consolidation
    plan) leaves the event loop free for other requests."""
    import asyncio

    return await asyncio.to_thread(fn, *args, **kwargs)


def offload(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``aoffload``'s sync twin: the call, in the caller's thread."""
    return fn(*args, **kwargs)


class AsyncLock:
    """A lock for one event loop's tasks (created lazily: loops come and go in tests)."""

    def __init__(self) -> None:
        self._lock: asyncio.Lock | None = None

    async def __aenter__(self) -> None:
        if self._lock is None:
            import asyncio

            self._lock = asyncio.Lock()
        await self._lock.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._lock is not None
        self._lock.release()


class Lock:
    """A re-entrant thread lock (sync twin of :class:`AsyncLock`)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()


class AsyncWorker:
    """Runs blocking calls on one dedicated thread, in order (for sqlite3 in async code).

    One thread means one connection is only ever used from one thread, and calls
    from many tasks are serialised without a lock.
    """

    def __init__(self, name: str) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool: ThreadPoolExecutor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio

        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))
        return await future

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


class Worker:
    """Sync twin of :class:`AsyncWorker`: runs the call inline, one caller at a time."""

    def __init__(self, name: str) -> None:
        self._lock = threading.RLock()

    def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            return fn(*args, **kwargs)

    def shutdown(self) -> None:
        return None


C = TypeVar("C")


class AsyncReadPool(Generic[C]):
    """Runs read-only calls on up to ``size`` threads, each with a connection of its own
    made by ``open`` on its first call (for SQLite reads beside the writer's worker:
    ``sqlite3`` releases the GIL while the engine works, so reads use every core).

    The sync twin (:class:`ReadPool`) is ``enabled = False``: a sync store reads on
    its one connection as before.
    """

    enabled = True

    def __init__(self, name: str, size: int, open: Callable[[], C]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool: ThreadPoolExecutor = ThreadPoolExecutor(
            max_workers=size, thread_name_prefix=name
        )
        self._open = open
        self._local = threading.local()
        self._lock = threading.Lock()
        self.connections: list[C] = []

    def _call(self, fn: Callable[[C], T]) -> T:
        conn: C | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._open()
            with self._lock:
                self.connections.append(conn)
        return fn(conn)

    async def run(self, fn: Callable[[C], T]) -> T:
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(self._pool, self._call, fn)

    def shutdown(self) -> list[C]:
        """Stop the threads; the connections they opened (the caller closes them)."""
        self._pool.shutdown(wait=True)
        with self._lock:
            opened, self.connections = self.connections, []
        return opened


class ReadPool(Generic[C]):
    """Sync twin of :class:`AsyncReadPool`: disabled (``run`` is never called)."""

    enabled = False

    def __init__(self, name: str, size: int, open: Callable[[], C]) -> None:
        self.connections: list[C] = []

    def run(self, fn: Callable[[C], T]) -> T:
        raise NotImplementedError("a sync store reads on its own connection")

    def shutdown(self) -> list[C]:
        return []


class AsyncBackgroundCall(Generic[T]):
    """One call run in the background: a task of the running loop, its reference kept
    here (a task nobody holds may be collected mid-way).

    ``step`` should not raise (it logs its own failures); what it raises comes out of
    ``wait``. A call started on another event loop (tests run one per test) counts as
    done, and its ``wait`` raises ``RuntimeError``: the caller does the work itself.
    """

    def __init__(self, name: str, step: Callable[[], Coroutine[Any, Any, T]]) -> None:
        import asyncio

        self._task: asyncio.Task[T] = asyncio.get_running_loop().create_task(step(), name=name)

    def _foreign(self) -> bool:
        import asyncio

        try:
            return self._task.get_loop() is not asyncio.get_running_loop()
        except RuntimeError:  # no running loop
            return True

    def done(self) -> bool:
        """Whether ``wait`` would return at once."""
        return self._task.done() or self._foreign()

    async def wait(self) -> T:
        """The call's result (waits for it; the call goes on if the waiter is cancelled)."""
        import asyncio

        if self._foreign():
            raise RuntimeError("the call runs on another event loop")
        return await asyncio.shield(self._task)

    async def cancel(self) -> None:
        """Cancel the call and wait until it has stopped (on its own loop only)."""
        import asyncio

        if self._foreign() or self._task.done():
            return
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class BackgroundCall(Generic[T]):
    """Sync twin of :class:`AsyncBackgroundCall`: the call runs on a daemon thread.

    A thread cannot be interrupted: ``cancel`` waits for it to end (``step`` checks
    for itself whether it should stop early).
    """

    def __init__(self, name: str, step: Step[T]) -> None:
        self._done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._step = step
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self) -> None:
        try:
            self._result = self._step()
        except BaseException as error:  # handed to ``wait``
            self._error = error
        finally:
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> T:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set by ``_run``

    def cancel(self) -> None:
        self._done.wait()


class _Counts:
    """Mutable counters behind ``Backlog`` (guarded by the owner)."""

    def __init__(self) -> None:
        self.queued = self.running = self.done = self.failed = 0
        self.dropped = self.cancelled = 0
        self.last_error: str | None = None

    def snapshot(self) -> Backlog:
        from memorybank.runtime.backlog import Backlog  # not at import: cold start

        return Backlog(
            self.queued,
            self.running,
            self.done,
            self.failed,
            self.dropped,
            self.cancelled,
            self.last_error,
        )

    def failure(self, name: str, size: int, error: Exception) -> None:
        self.failed += size
        self.last_error = f"{type(error).__name__}: {error}"
        logger.warning("%s: background job failed (%s)", name, self.last_error, exc_info=error)

    def cancel(self, left: Sequence[tuple[object, int]]) -> None:
        """Count the jobs ``left`` in a key's queue as cancelled (they never run)."""
        for _, size in left:
            self.queued -= size
            self.cancelled += size


class _Keyed(Generic[S]):
    """What :class:`AsyncBackground` and :class:`Background` share: the queue of each
    key, the counts and the backlog test (the caller holds the owner's lock, if any)."""

    def __init__(self, name: str, concurrency: int, max_backlog: int) -> None:
        self._name = name
        self._concurrency = concurrency
        self._max_backlog = max_backlog
        self._queues: dict[str, deque[tuple[S, int]]] = {}
        self._counts = _Counts()
        self._closed = False

    def _queue(self, key: str, step: S, size: int) -> bool | None:
        """Queue ``step`` behind the other jobs of ``key``: ``None`` when it is dropped
        (closed, or beyond the backlog), ``True`` when it opens the key's queue (the
        caller starts a runner for it), ``False`` when it joins a queue already run."""
        counts = self._counts
        if self._closed or counts.queued + counts.running + size > self._max_backlog:
            counts.dropped += size
            return None
        counts.queued += size
        queue = self._queues.get(key)
        if queue is not None:
            queue.append((step, size))
            return False
        self._queues[key] = deque([(step, size)])
        return True


class AsyncBackground(_Keyed[AsyncStep[object]]):
    """Runs submitted jobs as tasks of the running loop: in order per key, at most
    ``concurrency`` at once, at most ``max_backlog`` units waiting or running.

    ``submit`` never blocks and never raises: beyond the backlog (or after
    ``close``) a job is dropped and counted. A job that raises is logged (the
    ``memorybank`` logger) and counted; it never reaches the submitter.
    """

    def __init__(self, name: str, *, concurrency: int, max_backlog: int) -> None:
        super().__init__(name, concurrency, max_backlog)
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots: asyncio.Semaphore | None = None

    def counts(self) -> Backlog:
        return self._counts.snapshot()

    def submit(self, key: str, step: AsyncStep[object], size: int = 1) -> bool:
        """Queue ``step`` behind the other jobs of ``key``; whether it was accepted."""
        import asyncio

        opened = self._queue(key, step, size)
        if opened:
            task = asyncio.get_running_loop().create_task(self._run(key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return opened is not None

    async def _run(self, key: str) -> None:
        import asyncio

        if self._slots is None:
            self._slots = asyncio.Semaphore(self._concurrency)
        queue = self._queues[key]
        counts = self._counts
        try:
            while queue:
                async with self._slots:
                    step, size = queue.popleft()
                    counts.queued -= size
                    counts.running += size
                    try:
                        await step()
                        counts.done += size
                    except asyncio.CancelledError:
                        counts.cancelled += size
                        raise
                    except Exception as error:  # a job's failure is counted, never raised
                        counts.failure(self._name, size, error)
                    finally:
                        counts.running -= size
        finally:
            # no await between the last check of ``queue`` and here: no submit slips in
            del self._queues[key]
            counts.cancel(queue)

    async def drain(self, within: float | None = None) -> bool:
        """Wait until every job submitted so far (and any they queue) has run; whether
        that happened within ``within`` seconds (``None``: no limit)."""
        import asyncio

        loop = asyncio.get_running_loop()
        deadline = None if within is None else loop.time() + within
        while True:
            tasks = [t for t in self._tasks if t.get_loop() is loop]
            if not tasks:
                return True
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(tasks, timeout=left)

    async def close(self, within: float | None) -> None:
        """Refuse new jobs, wait up to ``within`` seconds for the backlog, then cancel
        what is left and wait for it to stop."""
        import asyncio

        self._closed = True
        if await self.drain(within):
            return
        loop = asyncio.get_running_loop()
        tasks = [t for t in self._tasks if t.get_loop() is loop]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Background(_Keyed[Step[object]]):
    """Sync twin of :class:`AsyncBackground`: jobs run on a pool of ``concurrency``
    threads, in order per key (one thread drains one key's queue at a time)."""

    def __init__(self, name: str, *, concurrency: int, max_backlog: int) -> None:
        super().__init__(name, concurrency, max_backlog)
        self._pool: ThreadPoolExecutor | None = None
        self._changed = threading.Condition(threading.Lock())
        self._cancelled = False

    def counts(self) -> Backlog:
        with self._changed:
            return self._counts.snapshot()

    def submit(self, key: str, step: Step[object], size: int = 1) -> bool:
        """Queue ``step`` behind the other jobs of ``key``; whether it was accepted."""
        with self._changed:
            opened = self._queue(key, step, size)
            if opened:
                if self._pool is None:
                    from concurrent.futures import ThreadPoolExecutor

                    self._pool = ThreadPoolExecutor(
                        max_workers=self._concurrency, thread_name_prefix=self._name
                    )
                self._pool.submit(self._run, key)
            return opened is not None

    def _run(self, key: str) -> None:
        counts = self._counts
        while True:
            with self._changed:
                queue = self._queues[key]
                if not queue or self._cancelled:
                    counts.cancel(queue)
                    del self._queues[key]
                    self._changed.notify_all()
                    return
                step, size = queue.popleft()
                counts.queued -= size
                counts.running += size
            try:
                step()
                outcome: Exception | None = None
            except Exception as error:  # a job's failure is counted, never raised
                outcome = error
            with self._changed:
                counts.running -= size
                if outcome is None:
                    counts.done += size
                else:
                    counts.failure(self._name, size, outcome)

    def drain(self, within: float | None = None) -> bool:
        """Wait until every job submitted so far has run; whether that happened in time."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._queues, within)

    def close(self, within: float | None) -> None:
        """Refuse new jobs, wait up to ``within`` seconds for the backlog, then drop
        what is still queued, wait for the running jobs and stop the threads."""
        with self._changed:
            self._closed = True
        if not self.drain(within):
            with self._changed:
                self._cancelled = True
            self.drain(None)
        if self._pool is not None:
            self._pool.shutdown(wait=True)


class Breaker:
    """A circuit breaker: after ``threshold`` failures in a row, ``is_open`` for
    ``cooldown`` seconds, so calls to a service that is down fail fast instead of
    piling up requests; one success closes it. Used from tasks and threads alike
    (plain assignments under the GIL; a race only lets one more call through)."""

    def __init__(self, *, threshold: int, cooldown: float) -> None:
        self.threshold = threshold
        self.cooldown = cooldown
        self._failures = 0
        self._until = 0.0

    def is_open(self) -> bool:
        return time.monotonic() < self._until

    def failed(self) -> None:
        self._failures += 1
        if self._failures >= self.threshold:
            self._until = time.monotonic() + self.cooldown

    def succeeded(self) -> None:
        self._failures = 0
        self._until = 0.0


class _Jobs(Generic[T]):
    """What :class:`AsyncJobQueue` and :class:`JobQueue` share: the jobs, their units,
    the room test and the consumer's batch (the caller holds the condition)."""

    def __init__(self, name: str, capacity: int, batch: int, tick: float | None) -> None:
        self._name = name
        self.capacity = capacity
        self._batch = batch
        self._tick = tick
        self._jobs: deque[tuple[T, int]] = deque()
        self._used = 0  # units queued or being handled
        self._active = 0  # jobs queued or being handled (a job may have no units)
        self._closed = False

    @property
    def used(self) -> int:
        """Units queued or being handled."""
        return self._used

    def _room(self, size: int) -> bool:
        return self._closed or self._used == 0 or self._used + size <= self.capacity

    def _queue(self, job: T, size: int) -> None:
        self._jobs.append((job, size))
        self._used += size
        self._active += 1

    def _take(self) -> tuple[list[T], int, int]:
        """The next batch (as many jobs as fit in ``batch`` units, at least one), its
        units, and 1 for a tick (no job: ``handle([])`` runs as a job ``join`` waits for)."""
        jobs: list[T] = []
        units = 0
        while self._jobs and (not jobs or units + self._jobs[0][1] <= self._batch):
            job, size = self._jobs.popleft()
            jobs.append(job)
            units += size
        ticks = 0 if jobs else 1
        self._active += ticks
        return jobs, units, ticks

    def _dropped(self, error: Exception) -> None:
        logger.warning("%s: jobs dropped (%s)", self._name, error, exc_info=error)

    def _handled(self, jobs: list[T], units: int, ticks: int) -> None:
        self._used -= units
        self._active -= len(jobs) + ticks


class AsyncJobQueue(_Jobs[T]):
    """A bounded queue with one consumer task: ``put`` waits while it is full.

    ``capacity`` is in units (a job's ``size``; for embedding, texts). A job
    larger than the whole capacity is let in when the queue is empty, so it
    waits rather than failing. The consumer takes jobs in order, as many as fit
    in ``batch`` units (at least one), and awaits ``handle(jobs)``; the units
    are freed when it returns. ``handle`` should not raise: what it raises is
    logged and the jobs are dropped. The consumer starts with the first ``put``,
    on the running loop. With ``tick`` (seconds), a consumer that found no job for
    that long calls ``handle([])`` (periodic work of the owner, such as a rescan;
    ``join`` waits for a tick being handled as for a job).
    """

    def __init__(
        self,
        name: str,
        *,
        capacity: int,
        batch: int,
        handle: Callable[[list[T]], Awaitable[None]],
        tick: float | None = None,
    ) -> None:
        super().__init__(name, capacity, batch, tick)
        self._handle = handle
        self._changed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    def _condition(self) -> asyncio.Condition:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._changed is None or self._loop is not loop:
            # a new loop (tests run one per test): what the old one held is lost
            # here, and still in the caller's journal
            self._changed, self._loop, self._task = asyncio.Condition(), loop, None
            self._jobs.clear()
            self._used = self._active = 0
        return self._changed

    async def put(self, job: T, size: int) -> bool:
        """Queue ``job``, waiting while the queue has no room for ``size`` units; whether
        it was queued (``False`` after ``close``)."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self._room(size))
            if self._closed:
                return False
            self._queue(job, size)
            changed.notify_all()
            if self._task is None or self._task.done():
                assert self._loop is not None
                self._task = self._loop.create_task(self._consume(), name=self._name)
        return True

    async def _consume(self) -> None:
        import asyncio

        changed = self._condition()
        while True:
            async with changed:
                ready = changed.wait_for(lambda: bool(self._jobs) or self._closed)
                if self._tick is None:
                    await ready
                else:
                    try:
                        await asyncio.wait_for(ready, self._tick)
                    except TimeoutError:  # a tick: ``handle([])``
                        pass
                if self._closed and not self._jobs:
                    return
                jobs, units, ticks = self._take()
            try:
                await self._handle(jobs)
            except Exception as error:  # the handler's to report; never stop the consumer
                self._dropped(error)
            finally:
                async with changed:
                    self._handled(jobs, units, ticks)
                    changed.notify_all()

    async def join(self, within: float | None = None) -> bool:
        """Wait until every queued job has been handled; whether within ``within`` seconds."""
        import asyncio

        changed = self._condition()
        async with changed:
            try:
                await asyncio.wait_for(changed.wait_for(lambda: self._active == 0), within)
            except TimeoutError:
                return False
        return True

    async def close(self, within: float | None) -> None:
        """Refuse new jobs, give the queued ones ``within`` seconds, then stop the consumer
        (what was not handled is dropped: the caller's journal keeps it)."""
        import asyncio

        if self._changed is None:
            self._closed = True
            return
        finished = await self.join(within)
        changed = self._condition()
        async with changed:
            self._closed = True
            changed.notify_all()
        task = self._task
        if task is not None and not task.done():
            if not finished:
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)


class JobQueue(_Jobs[T]):
    """Sync twin of :class:`AsyncJobQueue`: the consumer is a daemon thread (a process
    that exits without ``close`` leaves the rest to the caller's journal)."""

    def __init__(
        self,
        name: str,
        *,
        capacity: int,
        batch: int,
        handle: Callable[[list[T]], None],
        tick: float | None = None,
    ) -> None:
        super().__init__(name, capacity, batch, tick)
        self._handle = handle
        self._changed = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._stop = False

    def put(self, job: T, size: int) -> bool:
        """Queue ``job``, waiting while the queue has no room; whether it was queued."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._closed or self._used == 0 or self._used + size <= self.capacity
            )
            if self._closed:
                return False
            self._jobs.append((job, size))
            self._used += size
            self._active += 1
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._consume, name=self._name, daemon=True)
                self._thread.start()
        return True

    def _consume(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._jobs) or self._closed, self._tick)
                if self._stop or (self._closed and not self._jobs):
                    return
                jobs, units, ticks = self._take()
            try:
                self._handle(jobs)
            except Exception as error:  # the handler's to report; never stop the consumer
                self._dropped(error)
            finally:
                with self._changed:
                    self._handled(jobs, units, ticks)
                    self._changed.notify_all()

    def join(self, within: float | None = None) -> bool:
        """Wait until every queued job has been handled; whether within ``within`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._active == 0, within)

    def close(self, within: float | None) -> None:
        """Refuse new jobs, give the queued ones ``within`` seconds, then stop the consumer
        after the batch it is handling (the rest is dropped)."""
        finished = self.join(within)
        with self._changed:
            self._closed = True
            self._stop = not finished
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
