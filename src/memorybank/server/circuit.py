"""A circuit in front of the server's store: fail fast while it is down, recover as it returns.

Without it, every request made during a database outage waits the store's
whole timeout (10 s by default) before its 503, and the first request after
the database is back may wait for the store's pool to retry (seconds, doubling
between attempts). ``StoreCircuit.instrument(store)`` wraps every public
coroutine method of the store instance (as ``Metrics.instrument`` does):

* **closed** (normal): calls go through. A call that raises
  ``StoreUnavailable``, or ``ConfigurationError`` from the driver (the server
  refused the store's login), starts one background probe; calls made until
  its first verdict wait for it (a refused connection: a millisecond) rather
  than for the store's timeout.
* **open**: the probe failed. Every call raises ``StoreUnavailable`` at once,
  without touching the store: the server answers 503 ``store_unavailable``
  with ``Retry-After`` in microseconds. The probe runs again every
  ``probe_interval`` seconds (default ``PROBE_INTERVAL``).
* The first probe that succeeds closes the circuit: calls go through again.

The probe is the store's ``ping()`` when it has one (PostgreSQL: a
connection of its own, bypassing the pool, which it renews when the pool is
waiting out its backoff), else a read of a thread that never exists. A
failure that the probe contradicts (one slow query, a pool busy for a moment)
leaves the circuit closed.

A login refused by the store reaches the routes as ``StoreUnavailable``
(chained to the ``ConfigurationError``): for the server's callers the store is
unavailable, and the operator's fix (the password, the database) is in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from memorybank.errors import ConfigurationError, StoreUnavailable
from memorybank.server.errors import refused_by_store
from memorybank.stores.contract._async.store import AsyncStore

__all__ = ["PROBE_INTERVAL", "StoreCircuit"]

log = logging.getLogger("memorybank.server")

#: Seconds between two probes of a store that is down.
PROBE_INTERVAL = 0.2
_NOT_WRAPPED = frozenset({"close", "ping", "connect"})


class StoreCircuit:
    """The circuit of one store (see the module docstring).

    Args:
        store: the store to guard; ``instrument`` wraps its methods in place.
        probe_interval: seconds between probes while the store is down.
    """

    def __init__(self, store: AsyncStore, *, probe_interval: float = PROBE_INTERVAL) -> None:
        self._store = store
        self._interval = float(probe_interval)
        self._open = False
        self._probe: asyncio.Task[None] | None = None
        self._verdict: asyncio.Future[None] | None = None  # the first probe's, while pending
        self._last: BaseException | None = None
        self._originals: dict[str, Callable[..., Awaitable[Any]]] = {}

    @property
    def is_open(self) -> bool:
        """Whether calls fail fast now (the last probe failed)."""
        return self._open

    def instrument(self) -> None:
        """Guard every public coroutine method of the store (once per store instance)."""
        store = self._store
        for name, _ in inspect.getmembers(type(store), inspect.iscoroutinefunction):
            if name.startswith("_") or name in _NOT_WRAPPED:
                continue
            method = getattr(store, name)
            self._originals[name] = method
            setattr(store, name, self._guarded(method))

    def _guarded(self, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(method)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            if self._verdict is not None:
                await asyncio.shield(self._verdict)
            if self._open:
                raise StoreUnavailable(
                    "the store is down (failing fast until a background probe reaches it)"
                ) from self._last
            try:
                return await method(*args, **kwargs)
            except StoreUnavailable as error:
                self._suspect(error)
                raise
            except ConfigurationError as error:
                if not refused_by_store(error):
                    raise
                self._suspect(error)
                raise StoreUnavailable("the store refused the server's login") from error

        return guarded

    def _suspect(self, error: BaseException) -> None:
        """A call failed as if the store were down: probe it (unless a probe runs)."""
        self._last = error
        if self._probe is None or self._probe.done():
            loop = asyncio.get_running_loop()
            self._verdict = loop.create_future()
            self._probe = loop.create_task(self._probing())

    async def _ping(self) -> None:
        ping = getattr(self._store, "ping", None)
        if ping is not None:
            await ping()
        else:
            await self._originals["thread_get"]("~circuit", "~circuit")

    async def _probing(self) -> None:
        """Probe until the store answers; open the circuit while it does not."""
        try:
            while True:
                try:
                    await self._ping()
                except Exception as error:  # whatever the probe met, the store is not usable
                    self._last = error
                    if not self._open:
                        log.warning("store down, failing fast until it answers: %r", error)
                    self._open = True
                    self._decided()
                    await asyncio.sleep(self._interval)
                    continue
                if self._open:
                    log.warning("store answers again: serving")
                self._open = False
                return
        finally:
            self._decided()

    def _decided(self) -> None:
        """Release the calls waiting for the first verdict."""
        verdict, self._verdict = self._verdict, None
        if verdict is not None and not verdict.done():
            verdict.set_result(None)

    async def stop(self) -> None:
        """Cancel a running probe (at shutdown)."""
        probe, self._probe = self._probe, None
        if probe is not None and not probe.done():
            probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probe
