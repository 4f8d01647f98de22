"""The MySQL store's shared state and plumbing: the pool and table names, pooled
connections with the schema in place, multi-statement round trips, transactions
retried after lock contention (``_with_retry``) and the schema migrations' runner.

Write transactions run at READ COMMITTED: the first transaction on a pooled
connection sets it for the session (in the same round trip), later ones only
send ``START TRANSACTION``.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Self, TypeVar

import pymysql

from memorybank.errors import (
    ConfigurationError,
    MemoryBankError,
    StoreClosed,
    StoreError,
    StoreUnavailable,
)
from memorybank.runtime.concurrency import AsyncLock, asleep
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.mysql.compat import AsyncMySQLConnection, AsyncMySQLPool
from memorybank.stores.mysql.rows import (
    APPEND_BATCHES,
    ATTEMPTS,
    BEGIN,
    INSERT_COLS,
    NO_RESULT,
    PREFIX,
    R_COLS,
    SESSION_BEGIN,
    AsyncMySQLWork,
    LockContention,
    Statement,
    round_trips,
    translate,
    url_options,
)
from memorybank.stores.mysql.schema import IGNORED_ON_RERUN, MIGRATIONS, TABLE
from memorybank.stores.sql._async.appends import CombinedAppends
from memorybank.stores.sql._async.core import run_program
from memorybank.stores.sql._async.writes import SQLWrites
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.program import Program, Results
from memorybank.stores.vectors._async.source import CachedVectorStore

T = TypeVar("T")


_SAVEPOINT = "memorybank_write"
#: Inside ``atomic``, a write's own transaction is a savepoint of atomic's one.
_NESTED = {
    BEGIN: f"SAVEPOINT {_SAVEPOINT}",
    "COMMIT": f"RELEASE SAVEPOINT {_SAVEPOINT}",
    "ROLLBACK": f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}",
}


class MySQLBase(SQLWrites, CombinedAppends, CachedVectorStore):
    """What every part of the MySQL store shares (see the module docstring)."""

    dialect = MYSQL
    _append_batches = APPEND_BATCHES
    _record_columns = R_COLS
    #: InnoDB appends the primary key's id to every secondary index.
    _records_by_time = "records_list"
    _copied_columns = INSERT_COLS.replace("branch, ", "")

    def __init__(
        self,
        pool: Any,
        *,
        prefix: str = "memorybank_",
        timeout: float = 10.0,
    ) -> None:
        """Use ``pool`` (an ``aiomysql.Pool``/``AsyncMySQLPool``; sync: a ``MySQLPool``).

        The caller owns the pool: ``close()`` leaves it open.
        """
        if not isinstance(prefix, str) or not PREFIX.fullmatch(prefix):
            raise ConfigurationError(
                f"bad table prefix {prefix!r}: use up to 40 letters, digits or underscores"
            )
        self._pool = AsyncMySQLPool(pool, timeout=timeout)  # never closes a caller's pool
        self.prefix = prefix
        self.timeout = timeout
        self._closed = False
        self._ready = False
        self._schema_lock = AsyncLock()
        # concurrent appends without idempotency keys of a tenant share a transaction: one
        # commit for the lot (``_combine``)
        self._combine_appends()
        #: The connection of a snapshot's view (``snapshot``): every call of the view uses it.
        self._pinned: AsyncMySQLConnection | None = None
        self._pinned_lock = AsyncLock()
        #: Pooled connections whose session this store set to READ COMMITTED.
        self._read_committed: weakref.WeakSet[Any] = weakref.WeakSet()
        #: Inside ``atomic``: the one connection, in one transaction, every write of the
        #: view runs on (each of its transactions a savepoint); and why the view is unusable
        #: (a deadlock or lost connection ended the transaction).
        self._held: AsyncMySQLConnection | None = None
        self._broken: BaseException | None = None
        p = f"`{prefix}"
        self._threads = f"{p}threads`"
        self._branches = f"{p}branches`"
        self._entries = f"{p}entries`"
        self._stamps = f"{p}vector_stamps`"
        self._version = f"{p}schema_version`"

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        pool_size: int = 10,
        prefix: str = "memorybank_",
        timeout: float = 10.0,
    ) -> Self:
        """A store owning its pool: ``mysql://user:password@host:3306/database``."""
        if pool_size < 1:
            raise ConfigurationError("pool_size must be >= 1")
        if timeout <= 0:
            raise ConfigurationError("timeout must be > 0")
        pool = AsyncMySQLPool(size=pool_size, timeout=timeout, connect=url_options(url))
        store = cls(pool, prefix=prefix, timeout=timeout)
        store._pool = pool  # owned: close() closes it
        return store

    async def close(self) -> None:
        """Close the pool if the store created it; later calls raise ``StoreClosed``."""
        if self._closed:
            return
        if self._pinned is not None:  # a snapshot's view: the pool is the store's
            self._closed = True
            return
        self._closed = True
        await self._close_vector_cache()  # the background loads and ANN builders end with it
        await self._pool.close()

    @asynccontextmanager
    async def snapshot(self, tenant: str) -> AsyncIterator[Self]:
        """A view reading one point in time (``AsyncStore.snapshot``): one pooled
        connection inside ``START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY`` at
        REPEATABLE READ (InnoDB's consistent read: writers are not held back; the undo
        log keeps what the snapshot may read until it ends), given back at the end.
        """
        del tenant  # the whole database is one point in time
        view = self._view()
        view._pinned_lock = AsyncLock()
        async with self._connection() as conn:
            # SET TRANSACTION: the next transaction only (the session may be READ COMMITTED)
            await self._one(conn, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            await self._one(conn, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            view._pinned = conn
            try:
                yield view
            finally:
                view._closed = True
                with suppress(pymysql.err.Error, OSError):
                    await self._one(conn, "ROLLBACK")

    @asynccontextmanager
    async def atomic(self, tenant: str) -> AsyncIterator[AsyncStore]:
        """A view on one pooled connection inside one transaction (see
        ``AsyncStore.atomic``), committed when the block ends; each transaction of a
        view's write is a savepoint of it (``_NESTED``). The view does not retry a
        transaction lost to lock contention: that ends the whole block, rolled back."""
        async with self._connection(long=True) as conn:
            view = type(self)(self._pool, prefix=self.prefix, timeout=self.timeout)
            view._ready, view._held = True, conn
            try:
                await self._one(conn, SESSION_BEGIN.split("; ")[0])
                self._read_committed.add(conn)
                await self._one(conn, "START TRANSACTION")
                try:
                    yield view
                except BaseException:
                    with suppress(pymysql.err.Error, OSError):
                        await conn.rollback()
                    raise
                if view._broken is not None:
                    raise StoreError(
                        f"the transaction ended early ({view._broken}): nothing was written"
                    ) from view._broken
                await self._one(conn, "COMMIT")
            except (pymysql.err.Error, OSError) as error:
                raise translate(error) from error
            finally:
                view._held = None
                await view._close_vector_cache()
                view._closed = True

    @asynccontextmanager
    async def _connection(self, *, long: bool = False) -> AsyncIterator[AsyncMySQLConnection]:
        """A pooled connection with the schema in place; driver errors translated
        (``long``: for ``atomic``, not bounded by ``timeout`` once taken)."""
        if self._closed:
            raise StoreClosed("the store is closed")
        if self._held is not None:
            async with self._in_atomic() as conn:
                yield conn
            return
        try:
            if self._pinned is not None:
                async with self._pinned_lock:
                    yield self._pinned
            else:
                async with self._pool.acquire(long=long) as conn:
                    if not self._ready:
                        await self._migrate(conn)
                    yield conn
        except MemoryBankError:
            raise
        except (pymysql.err.Error, OSError) as error:
            raise translate(error) from error

    @asynccontextmanager
    async def _in_atomic(self) -> AsyncIterator[AsyncMySQLConnection]:
        """``atomic``'s connection for one write or read of the view: a failed write is
        rolled back to its savepoint; one that ended the transaction breaks the view."""
        conn = self._held
        assert conn is not None
        if self._broken is not None:
            raise StoreError(f"the atomic block's transaction ended early: {self._broken}")
        try:
            yield conn
        except BaseException as error:
            failure = error
            if isinstance(error, (pymysql.err.Error, OSError)):
                failure = translate(error)
            if isinstance(failure, StoreUnavailable) or not isinstance(failure, MemoryBankError):
                self._broken = failure
            else:  # the write's own refusal: undo what it did, if anything
                with suppress(pymysql.err.Error, OSError):
                    await self._one(conn, f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            if failure is error:
                raise
            raise failure from error

    async def _with_retry(self, work: AsyncMySQLWork[T]) -> T:
        """``work`` on a pooled connection. Work lost to lock contention (its transaction
        rolled back) runs again on a connection taken anew, after 10 ms, then 20 ms: at
        most ``ATTEMPTS`` runs, then the ``LockContention`` (a ``StoreUnavailable``)."""
        for attempt in range(ATTEMPTS):
            try:
                async with self._connection() as conn:
                    return await work(conn)
            except LockContention:
                if attempt + 1 >= ATTEMPTS:
                    raise
                await asleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    async def _run(
        self, conn: AsyncMySQLConnection, statements: Sequence[Statement]
    ) -> list[tuple[list[tuple[Any, ...]], int]]:
        """Run ``statements`` in one round trip; per statement: (rows, affected rowcount)."""
        texts = [s if a is None else "" for s, a in statements]
        begin = bool(statements) and statements[0][0] is BEGIN
        if begin and self._pinned is not None:  # would end the snapshot's transaction
            raise StoreError("a snapshot is read-only")
        if self._held is not None:
            texts = [_NESTED.get(text, text) for text in texts]  # savepoint control
        elif begin:
            if conn in self._read_committed:
                texts[0] = "START TRANSACTION"
            else:
                texts[0] = SESSION_BEGIN
                self._read_committed.add(conn)
        async with conn.cursor() as cur:
            sql = ";\n".join(
                cur.mogrify(s, a) if a is not None else text
                for (s, a), text in zip(statements, texts, strict=True)
            )
            await cur.execute(sql)
            results = [(list(await cur.fetchall() or ()), cur.rowcount)]
            while await cur.nextset():
                results.append((list(await cur.fetchall() or ()), cur.rowcount))
        if begin and texts[0] in ("START TRANSACTION", _NESTED[BEGIN]):
            results.insert(0, NO_RESULT)  # where SET's result would be
        return results

    async def _one(
        self, conn: AsyncMySQLConnection, sql: str, args: Sequence[Any] | None = None
    ) -> tuple[list[tuple[Any, ...]], int]:
        if self._held is not None and args is None:
            sql = _NESTED.get(sql, sql)
        async with conn.cursor() as cur:
            await cur.execute(sql, args)
            return list(await cur.fetchall() or ()), cur.rowcount

    async def _migrate(self, conn: AsyncMySQLConnection) -> None:
        """Create or upgrade the schema once per store (several processes: once in all)."""
        async with self._schema_lock:
            if self._ready:
                return
            if await self._schema_version(conn) == len(MIGRATIONS):
                self._ready = True
                return
            async with self._ddl_lock(conn, "schema migration"):
                await self._one(
                    conn,
                    f"CREATE TABLE IF NOT EXISTS {self._version} (id TINYINT NOT NULL PRIMARY KEY,"
                    f" version INT NOT NULL) {TABLE}",
                )
                version = await self._schema_version(conn)
                if version > len(MIGRATIONS):
                    raise ConfigurationError(
                        f"the MySQL schema (version {version}) is newer than this memorybank"
                        f" (version {len(MIGRATIONS)}): upgrade memorybank"
                    )
                collation = await self._exact_collation(conn)
                for number in range(version, len(MIGRATIONS)):
                    for statement in MIGRATIONS[number]:
                        sql = statement.replace("{p}", self.prefix).replace("{bin}", collation)
                        try:
                            await self._one(conn, sql)
                        except pymysql.err.MySQLError as error:
                            if not error.args or error.args[0] not in IGNORED_ON_RERUN:
                                raise
                    await self._one(
                        conn,
                        f"INSERT INTO {self._version} (id, version) VALUES (1, %s)"
                        " ON DUPLICATE KEY UPDATE version = %s",
                        (number + 1, number + 1),
                    )
            self._ready = True

    @asynccontextmanager
    async def _ddl_lock(self, conn: AsyncMySQLConnection, what: str) -> AsyncIterator[None]:
        """The prefix's named lock (``GET_LOCK``: DDL commits at once, so no transaction
        can serialise it) for the block, with "already exists" notes off (aiomysql would
        make them Python warnings)."""
        lock = f"memorybank:{self.prefix}"
        rows, _ = await self._one(conn, "SELECT GET_LOCK(%s, %s)", (lock, self.timeout))
        if not rows or rows[0][0] != 1:
            raise StoreUnavailable(f"timed out waiting for another process's {what}")
        try:
            await self._one(conn, "SET SESSION sql_notes = 0")
            yield
        finally:
            await self._one(conn, "SET SESSION sql_notes = 1")
            await self._one(conn, "SELECT RELEASE_LOCK(%s)", (lock,))

    async def _exact_collation(self, conn: AsyncMySQLConnection) -> str:
        """The server's NO PAD binary utf8mb4 collation (see ``_X``), checked to be exact."""
        rows, _ = await self._one(
            conn,
            "SELECT COLLATION_NAME FROM information_schema.COLLATIONS"
            " WHERE COLLATION_NAME IN ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')"
            " ORDER BY COLLATION_NAME DESC",  # MariaDB's name first where both exist
        )
        for (name,) in rows:
            probe, _ = await self._one(
                conn,
                f"SELECT _utf8mb4'x' = _utf8mb4'x ' COLLATE {name},"
                f" _utf8mb4'x' = _utf8mb4'X' COLLATE {name}",
            )
            if probe and not any(probe[0]):
                return str(name)
        raise ConfigurationError(
            "this MySQL server has no exact (NO PAD binary) utf8mb4 collation:"
            " memorybank needs MySQL 8.0.17+ (utf8mb4_0900_bin) or MariaDB 10.6+"
            " (utf8mb4_nopad_bin)"
        )

    async def _schema_version(self, conn: AsyncMySQLConnection) -> int:
        try:
            rows, _ = await self._one(conn, f"SELECT version FROM {self._version} WHERE id = 1")
        except pymysql.err.ProgrammingError as error:
            if self._missing_table(error):
                return 0
            raise
        return int(rows[0][0]) if rows else 0

    def _missing_table(self, error: BaseException) -> bool:
        """Whether ``error`` (or its cause) is "table does not exist" (1146)."""
        return any(
            isinstance(e, pymysql.err.ProgrammingError) and e.args[:1] == (1146,)
            for e in (error, error.__cause__)
        )

    async def _write_many(self, statements: Sequence[Statement]) -> list[int]:
        """Write statements as one transaction, in as few round trips as their size allows
        (about ``BATCH_BYTES`` each, under ``max_allowed_packet``; ``BEGIN`` is two
        results, ``COMMIT`` one); their rowcounts."""

        async def work(conn: AsyncMySQLConnection) -> list[int]:
            counts: list[int] = []
            for part in round_trips([(BEGIN, None), *statements, ("COMMIT", None)]):
                counts += [count for _, count in await self._run(conn, part)]
            return counts[2 : 2 + len(statements)]

        return await self._with_retry(work)

    async def _transact(self, program: Callable[[], Program[T]]) -> T:
        """One round trip a step (``BEGIN`` sent with the first), ``COMMIT`` after."""

        async def work(conn: AsyncMySQLConnection) -> T:
            begin: list[Statement] = [(BEGIN, None)]

            async def run(step: Sequence[Statement]) -> Results:
                nonlocal begin
                results: Results = []
                for part in round_trips([*begin, *step]):
                    results += await self._run(conn, part)
                results, begin = results[len(begin) * 2 :], []
                return results

            value = await run_program(program(), run)
            await self._one(conn, "COMMIT")
            return value

        return await self._with_retry(work)

    async def _write_one(self, sql: str, params: Sequence[Any]) -> int:
        async with self._connection() as conn:
            return (await self._one(conn, sql, params))[1]

    async def _select_many(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """The rows of several reads, sent as multi-statement queries: one round trip
        unless they exceed ``BATCH_BYTES`` (then one per that many bytes)."""
        rows: list[tuple[Any, ...]] = []
        async with self._connection() as conn:
            if len(statements) == 1:
                return (await self._one(conn, *statements[0]))[0]
            for part in round_trips(statements):
                rows += [row for result, _ in await self._run(conn, part) for row in result]
        return rows
