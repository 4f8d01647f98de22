"""The few primitives whose sync and async forms differ.

Everything under ``memorybank/_async/`` is the single source of the library's
I/O code; ``scripts/gen_sync.py`` generates ``memorybank/_sync/`` from it by
dropping ``async``/``await`` and renaming the names below (``AsyncLock`` ->
``Lock``, ``amaybe_await`` -> ``maybe_await``, ...). This module is the one place
where both forms are written by hand, side by side (the httpcore pattern).
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:  # asyncio and concurrent.futures cost ~60 ms to import: sync users skip them
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

T = TypeVar("T")
P = ParamSpec("P")

__all__ = [
    "AsyncLock",
    "AsyncStep",
    "AsyncWorker",
    "Lock",
    "Step",
    "Worker",
    "amaybe_await",
    "arun_all",
    "asleep",
    "maybe_await",
    "run_all",
    "sleep",
]


#: A call without arguments that the caller may run more than once (a retried step).
AsyncStep = Callable[[], Awaitable[T]]
#: Sync twin of :data:`AsyncStep`.
Step = Callable[[], T]


async def amaybe_await(value: T | Awaitable[T]) -> T:
    """Await ``value`` if it is awaitable (a user callback may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


def maybe_await(value: T | Awaitable[T]) -> T:
    """Sync twin of :func:`amaybe_await`: run an awaitable to completion.

    Inside a running event loop (a sync ``Memory`` used from async code) the
    coroutine runs on a fresh loop in a helper thread, so it never deadlocks.
    """
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
