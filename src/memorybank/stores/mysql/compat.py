"""Connection pools for the MySQL store: the one place where aiomysql and PyMySQL differ.

``memorybank/stores/mysql/_async/`` is the single source of the MySQL store;
``scripts/gen_sync.py`` turns it into the sync store by dropping ``await`` and
renaming ``AsyncMySQLPool`` -> ``MySQLPool`` and ``AsyncMySQLConnection`` ->
``MySQLConnection``. aiomysql is built on PyMySQL, so connections, cursors,
escaping and exceptions (``pymysql.err``) are the same on both sides; only pool
creation and acquisition differ, and they live here, written twice by hand
(the ``_concurrency.py`` pattern).

Both pools hand out connections in autocommit mode with multi-statement queries
enabled (the store sends a transaction's statements in one round trip), and
both bound every wait by ``timeout`` seconds:

- ``AsyncMySQLPool`` wraps an ``aiomysql.Pool`` (its own, created lazily on the
  first acquire because creation is a coroutine, or the caller's). The whole
  ``acquire()`` block runs under ``asyncio.timeout``: waiting for a free
  connection, connecting, and the statements themselves.
- ``MySQLPool`` is hand-written because PyMySQL ships no pool: a LIFO queue of
  idle connections and a semaphore bounding how many exist. Connect, read and
  write timeouts are PyMySQL's socket timeouts.

A connection that fails mid-use, or is still inside a transaction that cannot be
rolled back, is closed instead of returned, so the pool heals itself after a
server restart (idle connections the server dropped are detected and replaced
before being handed out).
"""

from __future__ import annotations

import asyncio
import queue
import select
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeAlias

import pymysql
from pymysql.constants import CLIENT, SERVER_STATUS

__all__ = [
    "AsyncMySQLConnection",
    "AsyncMySQLPool",
    "MySQLConnection",
    "MySQLPool",
    "PoolTimeout",
]

#: An aiomysql connection (aiomysql ships no type hints).
AsyncMySQLConnection: TypeAlias = Any
#: A PyMySQL connection.
MySQLConnection: TypeAlias = "pymysql.connections.Connection[Any]"


class PoolTimeout(TimeoutError):
    """No connection could be had within the timeout (pool exhausted or server unreachable)."""


def _in_transaction(conn: Any) -> bool:
    return bool((conn.server_status or 0) & SERVER_STATUS.SERVER_STATUS_IN_TRANS)


def _connect_kwargs(kwargs: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Connection options every pooled connection gets."""
    lock_wait = max(1, int(timeout // 2))
    return {
        "charset": "utf8mb4",
        "autocommit": True,
        "connect_timeout": timeout,
        # A lock wait must end (error 1205, retried by the store) before the
        # operation's own timeout does.
        "init_command": f"SET SESSION innodb_lock_wait_timeout = {lock_wait}",
        **kwargs,
        "client_flag": kwargs.get("client_flag", 0) | CLIENT.MULTI_STATEMENTS,
    }


def _discard(conn: MySQLConnection) -> None:
    """Close a PyMySQL connection, whatever state it is in."""
    try:
        conn.close()
    except Exception:  # already closed, or the socket is gone
        pass


class AsyncMySQLPool:
    """An aiomysql pool with a bounded ``acquire()`` (see the module docstring)."""

    def __init__(
        self,
        pool: Any = None,
        *,
        size: int = 10,
        timeout: float = 10.0,
        connect: dict[str, Any] | None = None,
    ) -> None:
        self.timeout = timeout
        self.owned = pool is None
        self._shared = pool if isinstance(pool, AsyncMySQLPool) else None
        self._pool = None if self._shared is not None else pool
        self._size = size
        self._connect = _connect_kwargs(connect or {}, timeout)
        if "database" in self._connect:  # aiomysql's name for it
            self._connect["db"] = self._connect.pop("database")
        self._lock: asyncio.Lock | None = None
        self._gate: asyncio.Semaphore | None = None

    async def _get_pool(self) -> Any:
        if self._pool is None:
            import aiomysql

            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self._pool is None:
                    self._pool = await aiomysql.create_pool(
                        minsize=0, maxsize=self._size, **self._connect
                    )
        return self._pool

    @asynccontextmanager
    async def acquire(self, *, long: bool = False) -> AsyncIterator[AsyncMySQLConnection]:
        """A connection for the block; getting it and the block are bounded by ``timeout``
        (``long``: getting it only, for a block of many calls, ``atomic``'s)."""
        if self._shared is not None:
            async with self._shared.acquire(long=long) as shared:
                yield shared
            return
        deadline = asyncio.get_running_loop().time() + self.timeout
        if self._gate is None:
            self._gate = asyncio.Semaphore(self._size)
        gate = self._gate
        exhausted = (
            f"no MySQL connection within {self.timeout}s (pool exhausted or server unreachable)"
        )
        # First come, first served: aiomysql's pool lets a newcomer take a released
        # connection before the waiter it woke, so under steady load some callers
        # starved past the timeout (16 of 26,000 calls in a 32-client soak).
        # asyncio.Semaphore queues waiters in order, and with at most ``size``
        # holders the pool itself never makes anyone wait. A free gate (no holder
        # over the limit, nobody queued) is passed without a timer: the hot path.
        if gate.locked():
            try:
                async with asyncio.timeout_at(deadline):
                    await gate.acquire()
            except TimeoutError as error:
                raise PoolTimeout(exhausted) from error
        else:
            await gate.acquire()  # returns at once
        pool: Any = None
        conn: AsyncMySQLConnection | None = None
        try:
            # One timer bounds getting the connection and the block.
            async with asyncio.timeout_at(deadline) as timer:
                pool = await self._get_pool()
                conn = await pool.acquire()
                if not conn.get_autocommit():  # a caller's pool may hand out others
                    await conn.autocommit(True)
                if conn.charset != "utf8mb4":
                    await conn.set_charset("utf8mb4")
                if long:
                    timer.reschedule(None)
                yield conn
        except BaseException as error:
            if conn is None:
                if isinstance(error, TimeoutError):
                    raise PoolTimeout(exhausted) from error
                raise
            if not conn.closed and _in_transaction(conn):
                try:
                    await conn.rollback()
                except BaseException:
                    conn.close()
            raise
        finally:
            if conn is not None:
                pool.release(conn)
            gate.release()

    async def close(self) -> None:
        """Close the pool if this object created it (a caller's pool is left open)."""
        if self.owned and self._pool is not None:
            pool, self._pool = self._pool, None
            pool.close()
            await pool.wait_closed()


class MySQLPool:
    """A thread-safe, bounded pool of PyMySQL connections (PyMySQL ships none).

    ``MySQLPool(size=10, timeout=10.0, connect={...pymysql.connect kwargs})``;
    pass one to ``MySQLStore(pool)`` to share it between stores (you close it).
    """

    def __init__(
        self,
        pool: MySQLPool | None = None,
        *,
        size: int = 10,
        timeout: float = 10.0,
        connect: dict[str, Any] | None = None,
    ) -> None:
        self.timeout = timeout
        self.owned = pool is None
        self._shared = pool
        self._connect = {
            **_connect_kwargs(connect or {}, timeout),
            "read_timeout": timeout,
            "write_timeout": timeout,
        }
        self._idle: queue.LifoQueue[MySQLConnection] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._closed = False

    @staticmethod
    def _alive(conn: MySQLConnection) -> bool:
        """An idle connection is readable only if the server closed it (or sent an error)."""
        sock = getattr(conn, "_sock", None)  # PyMySQL has no liveness check without I/O
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def _take(self) -> MySQLConnection:
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return pymysql.connect(**self._connect)
            if self._alive(conn):
                return conn
            _discard(conn)

    @contextmanager
    def acquire(self, *, long: bool = False) -> Iterator[MySQLConnection]:
        """A connection for the block, waiting at most ``timeout`` for a free one (``long``:
        the async pool's flag; here the block is never bounded)."""
        if self._shared is not None:
            with self._shared.acquire(long=long) as shared:
                yield shared
            return
        if self._closed:
            raise pymysql.err.InterfaceError(0, "pool closed")
        if not self._slots.acquire(timeout=self.timeout):
            raise PoolTimeout(f"no MySQL connection free within {self.timeout}s (pool exhausted)")
        conn: MySQLConnection | None = None
        try:
            conn = self._take()
            yield conn
        except BaseException:
            if conn is not None and conn.open and _in_transaction(conn):
                try:
                    conn.rollback()
                except BaseException:
                    _discard(conn)
            raise
        finally:
            if conn is not None and conn.open:
                if self._closed or _in_transaction(conn):
                    conn.close()
                else:
                    self._idle.put(conn)
            self._slots.release()

    def close(self) -> None:
        """Close idle connections; connections in use are closed when returned."""
        if not self.owned:
            return
        self._closed = True
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return
            _discard(conn)
