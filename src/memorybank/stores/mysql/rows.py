"""Sync-free parts of the MySQL store (``memorybank.stores.mysql._async`` and its
generated sync twin): SQL fragments and limits, error translation, URL options,
and the mapping of values to columns and of rows to records.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeAlias, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import pymysql

from memorybank.errors import (
    ConfigurationError,
    Conflict,
    MemoryBankError,
    StoreError,
    StoreUnavailable,
)
from memorybank.stores.contract.items import NewEntry
from memorybank.stores.mysql.compat import AsyncMySQLConnection, MySQLConnection, PoolTimeout
from memorybank.stores.sql.appends import entry_values as shared_values
from memorybank.stores.sql.common import (
    ENTRY_COLUMNS,
    PAGE_COLUMNS,
    RECORD_COLUMNS,
    THREAD_COLUMNS,
)
from memorybank.stores.sql.statements import qualified

T = TypeVar("T")

PREFIX = re.compile(r"[A-Za-z0-9_]{0,40}")
ATTEMPTS = 3
#: Combined appends of one tenant in flight at once (each on its own connection). One:
#: the combiner's task gathers the callers it answered into its next batch, so 32
#: clients make batches of 32. With two, one caller kept taking the second slot alone
#: (1 + 31: twice the commits, and on a shared thread the two serialise on its row
#: lock). Measured at 32 clients (alternating, 3 runs each, load 2-4): appends/s
#: 3.7-5.5k -> 4.9-6.8k on distinct threads, 5.6-8.5k -> 7.7-13.2k on one shared
#: thread; server CPU per append 156-241 -> 75-116 us and 84-122 -> 31-53 us.
APPEND_BATCHES = 1
#: Server errors meaning "the server is going away / cannot serve": StoreUnavailable.
_UNAVAILABLE = {1040, 1053, *range(1077, 1082), *range(1152, 1162), 1317, 1927, 4031}
_RETRY = {1205, 1213}  # lock wait timeout, deadlock
#: Connection refused for who or where we are (access denied, unknown database,
#: host not allowed): ConfigurationError, as retrying cannot help.
_REJECTED = {1044, 1045, 1049, 1130, 1698}

T_COLS = qualified("t", THREAD_COLUMNS)
E_COLS = qualified("e", ENTRY_COLUMNS)
#: Entry columns of a page read (thread and branch are known): ``page_row_to_entry``.
PAGE_COLS = qualified("e", PAGE_COLUMNS)
INSERT_COLS = (
    "tenant_id, thread_id, branch, position, id, role, content, name, tool_calls,"
    " tool_call_id, metadata, state, token_count, created_at, idempotency_key, fingerprint,"
    " idem_hash, id_hash"
)
INSERT_WIDTH = len(INSERT_COLS.split(","))  # 18: (tenant_id, thread_id, branch, position)
#: ``entry_id_hash`` in SQL (migration 8 fills ``id_hash`` of older rows with it): the
#: first 8 bytes of SHA-256 of the id's UTF-8, as an unsigned big-endian integer.
ID_HASH_SQL = "CAST(CONV(LEFT(SHA2({column}, 256), 16), 16, 10) AS UNSIGNED)"
#: ``RECORD_COLUMNS`` with the key column's name here (``key`` is a reserved word).
R_COLS = RECORD_COLUMNS.replace(" key,", " k,")
BATCH_BYTES = 1 << 20  # a transaction's statements go in round trips of about this size
#: Starts a write transaction. ``_run`` sends it as ``START TRANSACTION`` on a
#: connection whose session is already READ COMMITTED (set, in the same round
#: trip, the first time the store uses the connection); either way it takes
#: the first two results, so callers index results the same.
BEGIN = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION"
SESSION_BEGIN = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION"
NO_RESULT: tuple[list[tuple[Any, ...]], int] = ([], 0)

Statement = tuple[str, Sequence[Any] | None]
#: A transaction's work on a pooled connection (``_with_retry`` runs it); its sync
#: twin, ``MySQLWork``, returns the value itself.
AsyncMySQLWork: TypeAlias = Callable[[AsyncMySQLConnection], Awaitable[T]]
MySQLWork: TypeAlias = Callable[[MySQLConnection], T]


class LockContention(StoreUnavailable):
    """Deadlock or lock-wait timeout: the transaction was rolled back and may be retried."""


def idem_hash(key: str | None) -> int | None:
    """64 bits of BLAKE2b of an idempotency key (an int: aiomysql cannot escape bytes)."""
    if key is None:
        return None
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def entry_id_hash(entry_id: str) -> int:
    """64 bits of SHA-256 of an entry id, for the unique key (tenant, thread, branch,
    ``id_hash``): InnoDB's 3072-byte key limit has no room for the id itself. SHA-256,
    not BLAKE2b as ``idem_hash``: the server computes it too (``ID_HASH_SQL``)."""
    return int.from_bytes(hashlib.sha256(entry_id.encode()).digest()[:8], "big")


def id_clash(error: BaseException, prefix: str) -> bool:
    """Whether ``error`` (a store error's cause) is the entry id key's duplicate: "for
    key 'p_entries_idh'" (MariaDB) or "for key 'p_entries.p_entries_idh'" (MySQL 8)."""
    return (
        isinstance(error, pymysql.err.IntegrityError)
        and bool(error.args)
        and error.args[0] == 1062
        and re.search(rf"['.]{re.escape(prefix)}entries_idh'", str(error.args[-1])) is not None
    )


def translate(error: BaseException) -> MemoryBankError:
    """The memorybank error for a driver/network exception (the caller chains it)."""
    if isinstance(error, PoolTimeout):
        return StoreUnavailable(str(error))
    if isinstance(error, TimeoutError):
        return StoreUnavailable("MySQL operation timed out")
    if isinstance(error, pymysql.err.IntegrityError) and error.args and error.args[0] == 1062:
        return Conflict("already exists")
    if isinstance(error, pymysql.err.Error):
        code = error.args[0] if error.args and isinstance(error.args[0], int) else 0
        if code in _RETRY:
            return LockContention(f"MySQL lock contention: {error}")
        if code in _REJECTED:
            return ConfigurationError(f"MySQL refused the connection: {error}")
        if isinstance(error, pymysql.err.InterfaceError) or code >= 2000 or code in _UNAVAILABLE:
            return StoreUnavailable(f"MySQL unavailable: {error}")
        return StoreError(f"MySQL error: {error}")
    if isinstance(error, OSError):
        return StoreUnavailable(f"MySQL unreachable: {error}")
    return StoreError(f"MySQL store failed: {error!r}")


def url_options(url: str) -> dict[str, Any]:
    """``pymysql.connect`` keyword arguments for a ``mysql://`` URL."""
    parts = urlsplit(url)
    if parts.scheme.split("+", 1)[0].lower() not in ("mysql", "mariadb"):
        raise ConfigurationError(f"not a MySQL URL: {url!r}")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ConfigurationError(f"MySQL URL {url!r} names no database (mysql://host/db)")
    try:
        port = parts.port or 3306
    except ValueError as error:
        raise ConfigurationError(f"bad port in MySQL URL {url!r}") from error
    options: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": port,
        "user": unquote(parts.username) if parts.username else "root",
        "password": unquote(parts.password) if parts.password else "",
        "database": database,
    }
    query = parse_qs(parts.query)
    if "unix_socket" in query:
        options["unix_socket"] = query["unix_socket"][-1]
    return options


def entry_values(new: NewEntry) -> tuple[Any, ...]:
    """The 14 columns of an entry after (tenant_id, thread_id, branch, position): the
    shared ones, then the key's and the id's hashes (MySQL indexes those, not the text)."""
    return (*shared_values(new), idem_hash(new.idempotency_key), entry_id_hash(new.id))


def round_trips(statements: Sequence[Statement]) -> Iterator[list[Statement]]:
    """``statements`` in runs of about ``BATCH_BYTES`` of text (each one multi-statement
    round trip, under ``max_allowed_packet``); a transaction's ``BEGIN`` is two results."""
    batch: list[Statement] = []
    size = 0
    for statement in statements:
        batch.append(statement)
        size += len(statement[0]) + sum(len(a) for a in statement[1] or () if isinstance(a, str))
        if size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
