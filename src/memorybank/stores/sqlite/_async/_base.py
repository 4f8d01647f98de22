"""The SQLite store's base class: its connection and transactions.

Opening and preparing the file, schema upgrades, busy retries, error translation, the keyword
index's batches, and close.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from memorybank.errors import (
    ConfigurationError,
    Conflict,
    MemoryBankError,
    NotFound,
    StoreClosed,
    StoreError,
    StoreUnavailable,
)
from memorybank.records import Thread
from memorybank.runtime.concurrency import AsyncReadPool, AsyncWorker
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.sql._async.core import Statement
from memorybank.stores.sql._async.entry_reads import EntryBatchReads
from memorybank.stores.sql._async.writes import SQLWrites
from memorybank.stores.sql.common import row_to_thread
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.program import Program, Results, drive
from memorybank.stores.sql.statements import thread_get_query
from memorybank.stores.sqlite.schema import (
    SCOPE_FUNCTION,
    append_sqls,
    apply_step,
    fts_scope_update,
    migrations,
    scope_token,
)

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    from memorybank.stores.vectors.exact import VectorSlot
    from memorybank.stores.vectors.files import Files


T = TypeVar("T")
Synchronous = Literal["full", "normal", "off"]
_BUSY_RETRIES = 5
_OPEN_RETRIES = 60  # about 2.5 s of waiting for another opener of a new file
#: Entries a store appends before it moves them into the keyword index in one batch
#: (``_fts_sync``); a keyword search moves any rest first, so it always sees them all.
FTS_BATCH = 256
#: WAL pages between automatic checkpoints (SQLite's default is 1000).
_CHECKPOINT_PAGES = 4000
#: The connection's page cache, in KiB (SQLite's default is 2,000: 2 MB, which a
#: ``build_context`` over a large thread outgrows, so every build re-read its pages
#: from the OS: about 1 ms of system time of 11). Pages are allocated as they are
#: read, so a small database never uses more than its size.
_CACHE_KIB = 65_536
#: Read connections (threads) of an async store on a file: searches and batch reads
#: run on them in parallel (``_run_read``) while writes stay on the one writer.
READ_CONNECTIONS = 4


def vector_files() -> type[Files]:
    """The persisted vector files' functions (``stores.vectors.files``), loaded on first use."""
    # not at import: hashlib, secrets and mmap cost a cold start that never saves a vector
    from memorybank.stores.vectors.files import Files

    return Files


def rows_of(conn: sqlite3.Connection, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
    """The rows of ``statements`` on ``conn``, in order."""
    return [row for sql, params in statements for row in conn.execute(sql, params or ())]


def _is_busy(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


class SQLiteStoreBase(SQLWrites, EntryBatchReads):
    """The connection and the plumbing every part of the SQLite store uses."""

    dialect = SQLITE
    _kept_counts = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "full",
        busy_timeout: float = 30.0,
        prefix: str = "memorybank_",
    ) -> None:
        if synchronous not in ("full", "normal", "off"):
            raise ConfigurationError("synchronous must be 'full', 'normal' or 'off'")
        if not prefix.replace("_", "").isalnum() and prefix != "":
            raise ConfigurationError("prefix must be letters, digits and underscores")
        self.path = str(path)
        if "\x00" in self.path:
            raise ConfigurationError(f"SQLite path {self.path!r} contains a NUL character")
        self.synchronous: Synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.prefix = prefix
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._worker = AsyncWorker("memorybank-sqlite")
        #: A view's reads (``snapshot``, ``atomic``) go to its own connection, never the pool:
        #: the pool's connections see neither the view's point in time nor its own writes.
        self._view = False
        self._readers: AsyncReadPool[sqlite3.Connection] = AsyncReadPool(
            "memorybank-sqlite-read", READ_CONNECTIONS, self._open_reader
        )
        #: Entries this store appended that may not be in the keyword index yet.
        self._fts_backlog = 0
        #: Inside ``atomic``: every write joins one open transaction (a savepoint each).
        self._outer = False
        (self._append_head, self._append_head_branch, self._append_bump, self._append_insert) = (
            append_sqls(prefix)
        )

    # -- plumbing ---------------------------------------------------------------

    def _open(self, path: str) -> sqlite3.Connection:
        """A connection to ``path`` as every connection of the store is opened: autocommit
        (the store begins its transactions), usable from any one thread at a time; a
        file's directory is made first."""
        try:
            if path != ":memory:":
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            return sqlite3.connect(
                path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as error:
            raise StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}") from error

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosed("the store is closed")
        if self._conn is not None:
            return self._conn
        conn = self._open(self.path)
        for attempt in range(_OPEN_RETRIES):
            try:
                self._prepare(conn)
                break
            except sqlite3.Error as error:
                # Switching a new file to WAL takes an exclusive lock that the busy
                # timeout does not wait for: several processes opening one new file
                # at once see "database is locked" here, so retry, then give up typed.
                busy = isinstance(error, sqlite3.OperationalError) and _is_busy(error)
                if busy and attempt < _OPEN_RETRIES - 1:
                    time.sleep(min(0.05, 0.002 * (attempt + 1)))
                    continue
                conn.close()
                raise self._open_error(error, busy=busy) from error
            except BaseException:
                conn.close()
                raise
        self._conn = conn
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # One call for the settings (``connect(timeout=...)`` set the busy timeout).
        # Checkpoints (each syncs the WAL and the database file) every ~16 MB of WAL
        # rather than SQLite's ~4 MB: a quarter of the syncs an append stream pays for.
        # Deleted rows are overwritten with zeros rather than left in free space.
        conn.executescript(
            ("" if self.path == ":memory:" else "PRAGMA journal_mode = WAL;")
            + f"PRAGMA synchronous = {self.synchronous.upper()};"
            f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_PAGES};"
            f"PRAGMA cache_size = -{_CACHE_KIB};"
            "PRAGMA foreign_keys = OFF; PRAGMA secure_delete = ON;"
        )
        conn.create_function(SCOPE_FUNCTION, 2, scope_token, deterministic=True)
        self._migrate(conn)

    def _open_error(self, error: sqlite3.Error, *, busy: bool) -> StoreError:
        """The error for a file that could not be opened and prepared."""
        name = getattr(error, "sqlite_errorname", "")
        if busy:
            return StoreUnavailable(f"SQLite database busy: {error}")
        if name == "SQLITE_FULL" or name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
            return self._translate(error)
        # not a database, corrupt, no access: nothing a retry of this call can fix
        return StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}")

    def _translate(self, error: sqlite3.Error) -> StoreError:
        """The memorybank error for a SQLite error (the caller chains it)."""
        name = getattr(error, "sqlite_errorname", "")
        if name == "SQLITE_FULL":
            return StoreError(
                f"SQLite database {self.path!r} is full (disk or max_page_count):"
                " the write was rolled back"
            )
        if name.startswith("SQLITE_READONLY"):
            return StoreError(f"SQLite database {self.path!r} is read-only: {error}")
        if name.startswith("SQLITE_CANTOPEN"):
            if self.path != ":memory:" and not os.access(
                os.path.dirname(os.path.abspath(self.path)), os.W_OK
            ):
                return StoreError(
                    f"SQLite database {self.path!r} is in a read-only directory, where"
                    f" WAL mode cannot create its -wal and -shm files: {error}"
                )
            return StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}")
        return StoreError(f"SQLite error: {error}")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        p = self.prefix
        steps = migrations(p)
        version_table = f"{p}schema_version"
        try:  # the common open: one read says the schema is current
            row = conn.execute(f"SELECT MAX(version) FROM {version_table}").fetchone()
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
            row = (None,)
        if row[0] is not None and row[0] > len(steps):
            raise ConfigurationError(
                f"database schema version {row[0]} is newer than this memorybank supports"
                f" ({len(steps)}); upgrade memorybank"
            )
        if row[0] is not None and row[0] == len(steps):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {version_table} (version INTEGER NOT NULL)")
            row = conn.execute(f"SELECT MAX(version) FROM {version_table}").fetchone()
            current = row[0] or 0
            if current > len(steps):
                raise ConfigurationError(
                    f"database schema version {current} is newer than this memorybank supports"
                )
            for version in range(current, len(steps)):
                for step in steps[version]:
                    apply_step(conn, step)
                conn.execute(f"INSERT INTO {version_table} (version) VALUES (?)", (version + 1,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return fn(self._connect())
        except MemoryBankError:
            raise
        except sqlite3.Error as error:
            raise self._translate(error) from error

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction, retrying while busy (in a
        savepoint of the open one inside ``atomic``)."""
        conn = self._connect()
        if self._outer:
            return self._savepoint(conn, fn)
        for attempt in range(_BUSY_RETRIES):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise self._translate(error) from error
                if attempt < _BUSY_RETRIES - 1:
                    continue
                raise StoreUnavailable(f"SQLite database busy: {error}") from error
            try:
                result = fn(conn)
                conn.execute("COMMIT")
                return result
            except BaseException as error:
                if conn.in_transaction:
                    # SQLite may have rolled back already (a full disk, an I/O error).
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and _is_busy(error):
                    if attempt < _BUSY_RETRIES - 1:
                        continue
                    raise StoreUnavailable(f"SQLite database busy: {error}") from error
                if isinstance(error, sqlite3.IntegrityError):
                    raise Conflict(f"conflicting write: {error}") from error
                if isinstance(error, sqlite3.Error):
                    raise self._translate(error) from error
                raise
        raise AssertionError("unreachable")

    def _savepoint(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn`` in a savepoint of ``atomic``'s transaction: all of it, or none of it."""
        try:
            conn.execute("SAVEPOINT memorybank_write")
            try:
                result = fn(conn)
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK TO memorybank_write")
                        conn.execute("RELEASE memorybank_write")
                raise
            conn.execute("RELEASE memorybank_write")
            return result
        except sqlite3.IntegrityError as error:
            raise Conflict(f"conflicting write: {error}") from error
        except sqlite3.Error as error:
            raise self._translate(error) from error

    @contextlib.asynccontextmanager
    async def atomic(self, tenant: str) -> AsyncIterator[AsyncStore]:
        """A view writing in one ``BEGIN IMMEDIATE`` transaction (see ``AsyncStore.atomic``),
        committed when the block ends. A file is written on a connection (and worker
        thread) of the view's own, so this store's other users wait for the commit as for
        any writer (``busy_timeout``); ``":memory:"`` has one connection, shared with the
        view: the store must not be used otherwise meanwhile."""
        if self._closed:
            raise StoreClosed("the store is closed")
        own = self.path != ":memory:"
        if own:
            view = type(self)(
                self.path,
                synchronous=self.synchronous,
                busy_timeout=self.busy_timeout,
                prefix=self.prefix,
            )
        else:
            view = copy.copy(self)
            view._fts_backlog = 0
        view._view = True

        def begin() -> None:
            conn = view._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if _is_busy(error):
                    raise StoreUnavailable(f"SQLite database busy: {error}") from error
                raise view._translate(error) from error
            except sqlite3.Error as error:
                raise view._translate(error) from error
            view._outer = True

        def end(commit: bool) -> None:
            view._outer = False
            conn = view._connect()
            if not conn.in_transaction:  # rolled back by SQLite (disk full, I/O error)
                if commit:
                    raise StoreError("the SQLite transaction was rolled back: nothing written")
                return
            try:
                conn.execute("COMMIT" if commit else "ROLLBACK")
            except sqlite3.Error as error:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise view._translate(error) from error

        try:
            await view._run(begin)
            try:
                yield view
            except BaseException:
                await view._run(lambda: end(False))
                raise
            await view._run(lambda: end(True))
            if not own:
                self._fts_backlog += view._fts_backlog
        finally:
            if own:
                await view.close()

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StoreClosed("the store is closed")
        return await self._worker.run(fn)

    async def _write_many(self, statements: Sequence[Statement]) -> list[int]:
        def op(conn: sqlite3.Connection) -> list[int]:
            return [conn.execute(sql, params or ()).rowcount for sql, params in statements]

        return await self._run(lambda: self._write(op))

    async def _transact(self, program: Callable[[], Program[T]]) -> T:
        def run(conn: sqlite3.Connection, step: Sequence[Statement]) -> Results:
            cursors = [conn.execute(sql, params or ()) for sql, params in step]
            return [(cursor.fetchall(), cursor.rowcount) for cursor in cursors]

        return await self._run(
            lambda: self._write(lambda conn: drive(program(), lambda step: run(conn, step)))
        )

    def _vectors_deleting(self, tenant: str, where: str, params: Sequence[Any]) -> list[Statement]:
        return []  # the deletions are logged by trigger (the vector files' upkeep reads it)

    async def _select_many(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """One read snapshot."""

        return await self._run_read(lambda conn: rows_of(conn, statements))

    def _feed_state_read(self) -> Statement:
        p = self.prefix
        return (
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?),"
            " EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?)",
            (f"{p}events_mute", f"{p}events_entries_ins"),
        )

    def _missing_table(self, error: BaseException) -> bool:
        return any(
            isinstance(e, sqlite3.OperationalError) and str(e).startswith("no such table")
            for e in (error, error.__cause__)
        )

    async def _run_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run the read-only ``fn`` in one snapshot of a read connection, in parallel
        with other reads and with the writer (WAL); on the writer's connection when
        there is no pool (a sync store, a database in memory).

        A write acknowledged before this call is committed, so the snapshot holds it.
        """
        if not self._readers.enabled or self._view or self.path == ":memory:":
            return await self._run(lambda: self._read(fn))
        if self._conn is None:
            await self._run(self._connect)  # the file prepared and migrated first
        if self._closed:
            raise StoreClosed("the store is closed")
        return await self._readers.run(lambda conn: self._read_snapshot(conn, fn))

    def _open_reader(self) -> sqlite3.Connection:
        conn = self._open(self.path)
        try:
            conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        except sqlite3.Error as error:
            raise StoreUnavailable(f"cannot open SQLite database {self.path!r}: {error}") from error
        conn.create_function(SCOPE_FUNCTION, 2, scope_token, deterministic=True)
        return conn

    def _read_snapshot(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except MemoryBankError:
            raise
        except sqlite3.Error as error:
            raise self._translate(error) from error

    # -- keyword index of entries ---------------------------------------------------
    #
    # An append does not index its entries: the FTS5 insert (a new index segment per
    # transaction, merged later) was half of an append's page writes. Entries above
    # ``fts_state.indexed`` (a rowid) are moved in batches: by the appending store
    # every ``FTS_BATCH`` entries, and by a keyword search before it runs, so a
    # search always sees every committed entry. Deletes and content updates of
    # indexed rows reach the index through triggers (schema version 6).

    def _fts_sync(self, conn: sqlite3.Connection) -> None:
        """Index every entry above the mark (inside a write transaction)."""
        p = self.prefix
        conn.execute(fts_scope_update(p, ">", missing_only=True))
        conn.execute(
            f"INSERT INTO {p}entries_fts (rowid, content, fts_scope)"
            f" SELECT rowid, content, fts_scope FROM {p}entries"
            f" WHERE rowid > (SELECT indexed FROM {p}fts_state WHERE name = 'entries')"
        )
        conn.execute(
            f"UPDATE {p}fts_state SET indexed = COALESCE((SELECT MAX(rowid) FROM {p}entries), 0)"
            " WHERE name = 'entries'"
        )
        self._fts_backlog = 0

    def _fts_added(self, conn: sqlite3.Connection, count: int) -> None:
        """Count appended entries; index them once a batch is due (same transaction)."""
        self._fts_backlog += count
        if self._fts_backlog >= FTS_BATCH:
            self._fts_sync(conn)

    def _fts_lag(self, conn: sqlite3.Connection) -> bool:
        p = self.prefix
        row = conn.execute(
            f"SELECT indexed < COALESCE((SELECT MAX(rowid) FROM {p}entries), 0)"
            f" FROM {p}fts_state WHERE name = 'entries'"
        ).fetchone()
        return bool(row[0])

    def _fts_catch_up(self) -> bool:
        """Index the entries not indexed yet; ``False`` when some stay out (read-only file)."""
        if not self._read(self._fts_lag):
            return True
        try:
            self._write(self._fts_sync)
        except StoreError as error:
            if "read-only" not in str(error):
                raise
            return False
        return True

    # -- snapshot --------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def snapshot(self, tenant: str) -> AsyncIterator[Self]:
        """A view reading one point in time (``AsyncStore.snapshot``): a read transaction
        on a connection of its own, on a thread of its own.

        A file database: a second connection, ``query_only``, inside ``BEGIN`` whose first
        read fixes what every later read sees (WAL: the store's writers go on, appending
        to the log; checkpoints do not pass the snapshot until it ends, so the log grows
        meanwhile). ``:memory:`` has no second connection: its database is copied
        (``serialize``, one call on the store's thread) into the view's own.
        """
        del tenant  # the whole file is one point in time
        await self._run(self._connect)  # the file exists, its schema current
        image = await self._run(lambda: self._connect().serialize()) if self._memory else None
        view = copy.copy(self)
        view.__dict__.pop("_vector_cache", None)  # this process's vectors: now, not then
        view._conn = None
        view._fts_backlog = 0
        view._view = True
        view._worker = AsyncWorker("memorybank-sqlite-snapshot")
        try:
            view._conn = await view._worker.run(lambda: self._snapshot_connection(image))
            yield view
        finally:
            view._closed = True
            conn, view._conn = view._conn, None
            if conn is not None:
                await view._worker.run(conn.close)
            view._worker.shutdown()

    @property
    def _memory(self) -> bool:
        return self.path == ":memory:"

    def _snapshot_connection(self, image: bytes | None) -> sqlite3.Connection:
        """A read-only connection inside a read transaction already begun (its snapshot)."""
        conn = self._open(":memory:" if image is not None else self.path)
        try:
            if image is not None:
                conn.deserialize(image)
            conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
            conn.execute("PRAGMA query_only = ON")
            conn.create_function(SCOPE_FUNCTION, 2, scope_token, deterministic=True)
            conn.execute("BEGIN")
            # a deferred transaction takes its snapshot at its first read: now
            conn.execute(f"SELECT MAX(version) FROM {self.prefix}schema_version").fetchone()
        except sqlite3.Error as error:
            conn.close()
            raise self._translate(error) from error
        return conn

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            for reader in self._readers.shutdown():  # waits for the reads under way
                reader.close()
            cache = self.__dict__.get("_vector_cache")
            if cache is not None:  # leave the ANN indexes current on disk for the next process
                cache.stop()  # background builds: what they built so far is saved
                for key, slot in cache.slots.items():
                    self._vector_save(key, slot, final=True)
            if self._conn is not None:
                if self._fts_backlog:
                    # Leave the keyword index complete (a reader of a read-only copy
                    # then needs no catch-up); a failure here only delays it.
                    with contextlib.suppress(MemoryBankError):
                        self._write(self._fts_sync)
                self._conn.close()
                self._conn = None

        await self._worker.run(shut)
        self._worker.shutdown()

    def _get_thread(self, conn: sqlite3.Connection, tenant: str, thread_id: str) -> Thread | None:
        row = conn.execute(thread_get_query(SQLITE, f"{self.prefix}threads"), (tenant, thread_id))
        found = row.fetchone()
        return None if found is None else row_to_thread(found)

    def _require_thread(self, conn: sqlite3.Connection, tenant: str, thread_id: str) -> Thread:
        thread = self._get_thread(conn, tenant, thread_id)
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        return thread

    def _has_branch(self, conn: sqlite3.Connection, tenant: str, thread_id: str, name: str) -> bool:
        """Whether the thread has branch ``name`` (the append's check of a named branch)."""
        return (
            conn.execute(
                f"SELECT 1 FROM {self.prefix}branches"
                " WHERE tenant_id = ? AND thread_id = ? AND name = ?",
                (tenant, thread_id, name),
            ).fetchone()
            is not None
        )

    if TYPE_CHECKING:  # defined by the mixins; declared for type checks

        def _vector_save(
            self, key: tuple[str, str, str], slot: VectorSlot, *, final: bool = False
        ) -> None: ...
