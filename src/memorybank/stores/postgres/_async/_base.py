"""The PostgreSQL store's shared state and plumbing: the pool or connection,
the first connection and the schema migrations' runner, autocommit statements
(``_fetch``, retried once after a lost connection when asked), transactions and
the translation of driver errors.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Self, TypeVar

import psycopg
from psycopg import AsyncConnection, pq
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memorybank.errors import ConfigurationError, StoreClosed, StoreError, StoreUnavailable
from memorybank.runtime.concurrency import AsyncLock
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.postgres.pgvector import VectorParams, register, registered
from memorybank.stores.postgres.rows import (
    APPEND_BATCHES,
    PREFIX_RE,
    ConnectFailures,
    connect_error,
    is_disconnect,
    parse_url,
    translate,
)
from memorybank.stores.postgres.schema import MIGRATIONS
from memorybank.stores.postgres.statements import E_READ, Statements
from memorybank.stores.sql._async.appends import CombinedAppends
from memorybank.stores.sql._async.core import Statement, run_program
from memorybank.stores.sql._async.entry_reads import EntryBatchReads
from memorybank.stores.sql._async.writes import SQLWrites
from memorybank.stores.sql.dialect import POSTGRES
from memorybank.stores.sql.program import Program, Results
from memorybank.stores.vectors._async.source import CachedVectorStore

T = TypeVar("T")


def _recording_connection(failures: ConnectFailures) -> type[AsyncConnection[Any]]:
    """A connection class for a pool that records each failed attempt in ``failures``."""

    class _RecordingConnection(AsyncConnection[Any]):
        @classmethod
        async def connect(cls, *args: Any, **kwargs: Any) -> Self:
            try:
                conn = await super().connect(*args, **kwargs)
            except psycopg.OperationalError as error:
                failures.last = error
                raise
            failures.last = None
            return conn

    return _RecordingConnection


class PostgresBase(SQLWrites, EntryBatchReads, CombinedAppends, CachedVectorStore):
    """What every part of the PostgreSQL store shares (see the module docstring)."""

    dialect = POSTGRES
    _summary_order = "seq"
    _append_batches = APPEND_BATCHES
    _entry_reads = E_READ  # an empty metadata or state object read as NULL
    _copied_columns = (
        "tenant_id, thread_id, position, id, role, content, name, tool_calls, tool_call_id,"
        " metadata, state, token_count, created_at, idempotency_key, fingerprint"
    )

    def __init__(
        self,
        pool_or_connection: AsyncConnectionPool[Any] | AsyncConnection[Any],
        *,
        prefix: str = "memorybank_",
        timeout: float = 10.0,
    ) -> None:
        """Use a pool or connection the caller owns (``close()`` leaves it open)."""
        if not isinstance(prefix, str) or not PREFIX_RE.fullmatch(prefix):
            raise ConfigurationError(
                f"bad table prefix {prefix!r}: use 1-40 of a-z, 0-9 and _,"
                " not starting with a digit"
            )
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds: {timeout!r}")
        self._pool: AsyncConnectionPool[Any] | None = None
        self._conn: AsyncConnection[Any] | None = None
        if isinstance(pool_or_connection, AsyncConnectionPool):
            self._pool = pool_or_connection
        elif isinstance(pool_or_connection, AsyncConnection):
            self._conn = pool_or_connection
            self.capabilities = type(self).capabilities - {Capability.SNAPSHOT}
        else:
            raise ConfigurationError(
                "AsyncPostgresStore takes a psycopg AsyncConnectionPool or AsyncConnection"
            )
        self.prefix = prefix
        self.timeout = float(timeout)
        self._owns_pool = False
        self._pool_opened = False
        self._ready = False
        self._closed = False
        self._setup_lock = AsyncLock()
        self._conn_lock = AsyncLock()
        self._atomic = False  # ``atomic``'s view: every statement in a savepoint
        self._combine_appends()  # concurrent plain appends of a tenant: one statement
        self._sql = Statements(prefix)
        self._native = False  # vectors in a pgvector column (known after the first use)
        self._hnsw: set[str] = set()  # names of the HNSW indexes on the vectors table
        # searched scopes found too large to search exactly: key -> until when (monotonic)
        self._large_scopes: dict[tuple[Any, ...], float] = {}
        self._vector_oid = 0  # pgvector's ``vector`` type (the column's), 0 without pgvector
        # An owned pool's target (from_url): connected to once directly before the
        # pool opens, and its failed attempts recorded.
        self._conninfo: tuple[str, dict[str, Any]] | None = None
        self._connect_failures = ConnectFailures()
        # Makes a fresh owned pool (``ping`` replaces one stuck in its reconnection backoff).
        self._new_pool: Callable[[], AsyncConnectionPool[Any]] | None = None

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int | None = None,
        prefix: str | None = None,
        timeout: float | None = None,
    ) -> Self:
        """A store owning a pool of up to ``pool_size`` connections to ``url``.

        Keyword arguments win over the URL's ``prefix``/``pool_size``/``timeout``
        query parameters; defaults are ``20``, ``"memorybank_"`` and ``10.0`` s.
        """
        conninfo, options = parse_url(url)
        try:
            size = pool_size if pool_size is not None else int(options.get("pool_size", 20))
            wait = timeout if timeout is not None else float(options.get("timeout", 10.0))
        except ValueError as error:
            raise ConfigurationError(f"bad pool_size/timeout in {url!r}") from error
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigurationError(f"pool_size must be a positive integer: {size!r}")
        if not isinstance(wait, int | float) or isinstance(wait, bool) or wait <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds: {wait!r}")
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, math.ceil(wait)),
            "tcp_user_timeout": max(1000, int(wait * 1000)),
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        }
        failures = ConnectFailures()
        connection_class = _recording_connection(failures)

        def new_pool() -> AsyncConnectionPool[Any]:
            return AsyncConnectionPool(
                conninfo,
                kwargs=kwargs,
                connection_class=connection_class,
                min_size=1,
                max_size=size,
                open=False,
                timeout=wait,
                name="memorybank",
            )

        store = cls(new_pool(), prefix=prefix or options.get("prefix", "memorybank_"), timeout=wait)
        store._owns_pool = True
        store._conninfo = (conninfo, kwargs)
        store._connect_failures = failures
        store._new_pool = new_pool
        return store

    # -- plumbing ------------------------------------------------------------

    async def connect(self) -> None:
        """Connect, create/migrate the schema and detect capabilities now (else: first use)."""
        await self._ensure_ready()

    async def _ensure_ready(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
        if self._ready:
            return
        async with self._setup_lock:
            if self._closed:
                raise StoreClosed("the store is closed")
            if self._ready:
                return
            try:
                if self._owns_pool and not self._pool_opened:
                    await self._first_connect()
                else:
                    async with self._connection() as conn:
                        await self._migrate(conn)
            except psycopg.Error as error:
                raise await self._failed(error) from error
            self._ready = True

    async def _first_connect(self) -> None:
        """Migrate on one direct connection, then open the owned pool.

        A server that refuses the store (down, unknown database or role, bad
        password) fails the call at once with the server's own words: an open
        pool would retry in the background until the timeout and then raise a
        ``PoolTimeout`` saying nothing of why. The pool stays closed until a
        first connection succeeds, so nothing retries between calls.
        """
        assert self._pool is not None
        conn = await self._direct_connection()
        try:
            await self._migrate(conn)
        finally:
            await conn.close()
        await self._pool.open(wait=False)
        self._pool_opened = True

    async def ping(self) -> None:
        """Check that the server answers; raise what a call would (``StoreUnavailable``,
        ``ConfigurationError`` for a refused login, ``StoreClosed``).

        A pool the store owns is bypassed: the check opens a connection of its own,
        so it answers at once even while the pool has none. After an outage the
        pool waits seconds (doubling) between its attempts to reconnect; when its
        last attempt failed and this check succeeds, the pool is replaced by a fresh
        one, so the next call connects now rather than at the pool's next attempt.
        (``memorybank serve`` runs this check in the background while the store is
        down: see ``memorybank.server.circuit``.)
        """
        if self._closed:
            raise StoreClosed("the store is closed")
        if self._conninfo is None or not self._pool_opened:
            await self._fetch("SELECT 1")
            return
        await self._reachable()
        if self._connect_failures.last is not None and self._new_pool is not None:
            await self._renew_pool()

    async def _direct_connection(self) -> AsyncConnection[Any]:
        """A connection of its own to the owned pool's server, outside the pool; a refusal
        raised at once in the server's words (``connect_error``)."""
        assert self._conninfo is not None
        conninfo, kwargs = self._conninfo
        try:
            return await AsyncConnection.connect(conninfo, **kwargs)
        except psycopg.OperationalError as error:
            raise connect_error(error) from error

    async def _reachable(self) -> None:
        """Connect to the owned pool's server directly and run ``SELECT 1`` (raises translated)."""
        conn = await self._direct_connection()
        try:
            await conn.execute("SELECT 1")
        except psycopg.Error as error:
            raise translate(error) from error
        finally:
            await conn.close()

    async def _renew_pool(self) -> None:
        """Replace the owned pool by a fresh one (connecting now); close the old one."""
        assert self._new_pool is not None and self._pool is not None
        old, fresh = self._pool, self._new_pool()
        await fresh.open(wait=False)
        self._pool = fresh
        self._connect_failures.last = None
        with suppress(psycopg.Error):
            await old.close(timeout=1.0)

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        p = self.prefix
        target = len(MIGRATIONS)
        async with conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT to_regclass(%s) IS NOT NULL,"
                " EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
                (f"{p}schema_version",),
            )
            row = await cur.fetchone()
            assert row is not None
            has_table, has_vector = bool(row[0]), bool(row[1])
            version = -1
            if has_table:
                await cur.execute(f"SELECT version FROM {p}schema_version WHERE id = 1")
                found = await cur.fetchone()
                version = -1 if found is None else int(found[0])
            if version < target:
                async with conn.transaction():
                    await cur.execute(
                        "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memorybank:{p}",)
                    )
                    await cur.execute(
                        f"CREATE TABLE IF NOT EXISTS {p}schema_version"
                        " (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
                    )
                    await cur.execute(f"SELECT version FROM {p}schema_version WHERE id = 1")
                    found = await cur.fetchone()
                    version = 0 if found is None else int(found[0])
                    for step in MIGRATIONS[version:]:
                        for statement in step:
                            await cur.execute(statement.format(p=p))
                    await cur.execute(
                        f"INSERT INTO {p}schema_version (id, version) VALUES (1, %s)"
                        " ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
                        (max(version, target),),
                    )
            if version > target:
                raise ConfigurationError(
                    f"the {p}* tables are at schema version {version}, newer than this"
                    f" memorybank ({target}): upgrade memorybank"
                )
            await cur.execute(
                "SELECT format_type(a.atttypid, NULL), (SELECT array_agg(i.relname::text)"
                "  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
                "  WHERE x.indrelid = a.attrelid AND i.relname LIKE %s), a.atttypid::bigint"
                " FROM pg_attribute a WHERE a.attrelid = to_regclass(%s)"
                " AND a.attname = 'embedding'",
                (f"{p}vhnsw%", f"{p}vectors"),
            )
            found = await cur.fetchone()
        self._native = found is not None and found[0] == "vector"
        self._hnsw = set(found[1] or ()) if found is not None else set()
        self._vector_oid = int(found[2]) if self._native and found is not None else 0
        caps = set(type(self).capabilities)
        if self._pool is None:  # one caller's connection: no second one for a snapshot
            caps.discard(Capability.SNAPSHOT)
        if self._native and has_vector:
            caps.add(Capability.PGVECTOR)
        self.capabilities = frozenset(caps)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection in autocommit (driver errors pass through untranslated)."""
        if self._pool is not None:
            async with self._pool.connection(timeout=self.timeout) as conn:
                async with self._autocommit(conn):
                    yield conn
        else:
            assert self._conn is not None
            async with self._conn_lock:
                async with self._autocommit(self._conn):
                    yield self._conn

    @asynccontextmanager
    async def _autocommit(self, conn: AsyncConnection[Any]) -> AsyncIterator[None]:
        if conn.autocommit or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            yield
            return
        await conn.set_autocommit(True)
        try:
            yield
        finally:
            with suppress(psycopg.Error):
                await conn.set_autocommit(False)

    async def _failed(self, error: psycopg.Error) -> Exception:
        """Translate ``error``; after a lost connection, drop the pool's dead connections."""
        if self._closed:
            return StoreClosed("the store is closed")
        last = self._connect_failures.last
        if isinstance(error, PoolTimeout) and last is not None:
            error.__cause__ = last  # the chain then ends with the server's answer
            return StoreUnavailable(
                f"no PostgreSQL connection within {self.timeout:g} s;"
                f" the last connection attempt failed: {last}"
            )
        if is_disconnect(error) and self._pool is not None:
            with suppress(psycopg.Error):
                await self._pool.check()
        return translate(error)

    async def _transact(self, program: Callable[[], Program[T]]) -> T:
        async with self._transaction() as conn:
            return await run_program(program(), lambda step: self._step(conn, step))

    @classmethod
    async def _step(cls, conn: AsyncConnection[Any], step: Sequence[Statement]) -> Results:
        """Statements in the transaction on ``conn``: each one's rows and rowcount."""
        return [await cls._run(conn, sql, params) for sql, params in step]

    async def _write_many(self, statements: Sequence[Statement]) -> list[int]:
        counts: list[int] = []
        async with self._transaction() as conn:
            for sql, params in statements:
                counts.append(len(await self._rows(conn, sql + " RETURNING 1", params)))
        return counts

    async def _write_one(self, sql: str, params: Sequence[Any]) -> int:
        return len(await self._fetch(sql + " RETURNING 1", params))

    async def _write_again(self, sql: str, params: Sequence[Any]) -> int:
        return len(await self._fetch(sql + " RETURNING 1", params, retry=True))

    async def _select_many(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """Each read in autocommit (retried on a lost connection)."""
        return [
            row for sql, params in statements for row in await self._fetch(sql, params, retry=True)
        ]

    async def _fetch(
        self,
        query: str,
        params: Sequence[Any] | dict[str, Any] | None = None,
        *,
        retry: bool = False,
    ) -> list[tuple[Any, ...]]:
        """Run one statement in autocommit; its rows ([] without a result set).

        ``retry``: run it once more on a fresh connection if the connection was
        lost (only for reads and idempotent writes).
        """
        if not self._ready or self._closed:
            await self._ensure_ready()
        try:
            return await self._execute(query, params)
        except psycopg.Error as error:
            failure = await self._failed(error)
            if not (retry and self._pool is not None and is_disconnect(error)) or self._closed:
                raise failure from error
        if self._conninfo is not None:
            # A lost connection may be a server gone down: a refused direct connection
            # says so at once, where the retry would wait the pool's whole timeout.
            await self._reachable()
        try:
            return await self._execute(query, params)
        except psycopg.Error as error:
            raise await self._failed(error) from error

    async def _execute(
        self, query: str, params: Sequence[Any] | dict[str, Any] | None
    ) -> list[tuple[Any, ...]]:
        # getconn/putconn rather than nested context managers: this is the hot path.
        pool = self._pool
        if pool is None:
            assert self._conn is not None
            if self._atomic:  # a savepoint: a failed statement leaves atomic's transaction
                async with self._conn_lock, self._conn.transaction():
                    return await self._rows(self._conn, query, params)
            async with self._conn_lock, self._autocommit(self._conn):
                return await self._rows(self._conn, query, params)
        conn = await pool.getconn(self.timeout)
        try:
            if conn.autocommit:
                return await self._rows(conn, query, params)
            async with self._autocommit(conn):
                return await self._rows(conn, query, params)
        finally:
            await pool.putconn(conn)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection inside a transaction; driver errors translated."""
        await self._ensure_ready()
        try:
            async with self._connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as error:
            raise await self._failed(error) from error

    @asynccontextmanager
    async def snapshot(self, tenant: str) -> AsyncIterator[Self]:
        """A view reading one point in time (``AsyncStore.snapshot``): one connection (a
        pooled one, given back at the end) inside ``BEGIN ISOLATION LEVEL REPEATABLE READ
        READ ONLY``. Writers are not held back (MVCC); the server keeps the row versions
        the snapshot may read until it ends. A store on one caller's connection has no
        second connection: it does not claim ``Capability.SNAPSHOT`` and yields itself.
        """
        del tenant  # the whole database is one point in time
        await self._ensure_ready()
        if self._pool is None:  # one caller's connection: reads see their own moments
            yield self
            return
        view = self._view()
        view._owns_pool = False
        view._conn_lock = AsyncLock()
        try:
            async with self._connection() as conn:
                if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                    raise StoreError("a snapshot needs a connection outside any transaction")
                await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                await conn.execute("SELECT 1")  # the snapshot is taken at the first statement
                view._pool, view._conn = None, conn
                try:
                    yield view
                finally:
                    view._closed = True
                    with suppress(psycopg.Error):
                        await conn.execute("ROLLBACK")
        except psycopg.Error as error:
            raise await self._failed(error) from error

    @asynccontextmanager
    async def atomic(self, tenant: str) -> AsyncIterator[AsyncStore]:
        """A view on one connection inside one transaction (see ``AsyncStore.atomic``),
        committed when the block ends: a connection of the pool for the view alone, or the
        store's one connection, held (the store's other calls wait) until then. Each write
        of the view that is a transaction or a statement of its own becomes a savepoint of
        this one (a refused write undoes only itself)."""
        await self._ensure_ready()
        async with self._held() as conn:
            view = type(self)(conn, prefix=self.prefix, timeout=self.timeout)
            try:
                await view._ensure_ready()
                async with conn.transaction():
                    view._atomic = True
                    yield view
            except psycopg.Error as error:
                raise await self._failed(error) from error
            finally:
                await view.close()

    @asynccontextmanager
    async def _held(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection for ``atomic`` alone, in autocommit (driver errors translated)."""
        try:
            async with self._connection() as conn:
                yield conn
        except psycopg.Error as error:
            raise await self._failed(error) from error

    @classmethod
    async def _rows(
        cls, conn: AsyncConnection[Any], query: str, params: Sequence[Any] | dict[str, Any] | None
    ) -> list[tuple[Any, ...]]:
        return (await cls._run(conn, query, params))[0]

    @staticmethod
    async def _run(
        conn: AsyncConnection[Any], query: str, params: Sequence[Any] | dict[str, Any] | None
    ) -> tuple[list[tuple[Any, ...]], int]:
        """One statement on ``conn``: its rows ([] without a result set) and rowcount."""
        if isinstance(params, VectorParams) and not registered(conn.adapters):
            register(conn.adapters)  # a connection made before the dumpers were registered
        cur = conn.cursor(row_factory=tuple_row)
        await cur.execute(query, params)
        rows = await cur.fetchall() if cur.pgresult and cur.pgresult.nfields else []
        count = cur.rowcount
        await cur.close()
        return rows, count

    async def close(self) -> None:
        """Close the pool if the store owns it; a caller's pool or connection stays open."""
        if self._closed:
            return
        self._closed = True
        await self._close_vector_cache()  # the background loads and ANN builders end with it
        if self._owns_pool and self._pool_opened and self._pool is not None:
            await self._pool.close()
