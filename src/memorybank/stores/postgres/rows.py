"""Sync-free parts of the PostgreSQL store (``memorybank.stores.postgres._async``
and its generated sync twin): limits, error translation, URL options, and the
mapping of values to statement parameters and of rows to entries.
"""

from __future__ import annotations

import logging
import re
import struct
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg_pool import PoolTimeout

from memorybank.errors import ConfigurationError, Conflict, StoreError, StoreUnavailable
from memorybank.stores.contract.items import NewEntry
from memorybank.stores.sql.common import ENTRY_COLUMNS, THREAD_COLUMNS, tool_calls_value

PREFIX_RE = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_DISCONNECT_STATES = frozenset({"57P01", "57P02", "57P03"})
#: libpq's words (the server's, in English) for a connection refused for who or
#: where we are rather than for the server's state: retrying cannot help.
_REJECTED = re.compile(
    r"authentication failed|does not exist|no pg_hba\.conf entry|no password supplied"
    r"|not permitted to log in",
    re.IGNORECASE,
)

# psycopg_pool logs every failed reconnection as a WARNING on "psycopg.pool". With
# no handler on that logger's path, logging's last-resort handler prints it to
# stderr; a NullHandler counts as one, so nothing is printed unless the
# application configures logging (whose handlers still get every record:
# propagation is untouched).
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


N_THREAD = len(THREAD_COLUMNS.split(","))
N_ENTRY = len(ENTRY_COLUMNS.split(","))
E_START = 2 + N_THREAD + 2  # where an append row's stored entry columns start
KEY_RACES = 3  # runs of an append that lost an idempotency-key race to concurrent writers


#: Combined appends of one tenant in flight at once (each on its own connection): the
#: next batch's statements overlap the previous one's commit.
APPEND_BATCHES = 2


_WORD = re.compile(r"[^\W_]+")
_MAX_WORD = 100  # longer "words" are not indexed by to_tsvector either


def tsquery(text: str) -> str:
    """A ``to_tsquery`` text OR-ing the words of ``text``.

    Words are runs of letters and digits only, so nothing in the user's text is
    ever read as tsquery syntax (quotes, ``&``, ``!``, ``:*`` ...).
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text) if len(w) <= _MAX_WORD)
    return " | ".join(words)


def new_entry_json(e: NewEntry) -> dict[str, Any]:
    """One row of the JSON batches the append and compaction statements read."""
    return {
        "id": e.id,
        "role": e.role,
        "content": e.content,
        "name": e.name,
        "tool_calls": tool_calls_value(e.tool_calls, e.extra, e.item),
        "tool_call_id": e.tool_call_id,
        "metadata": e.metadata,
        "state": e.state,
        "token_count": e.token_count,
        "created_at": e.created_at.isoformat(),
        "idempotency_key": e.idempotency_key,
        "fingerprint": None if e.idempotency_key is None else e.fingerprint,
    }


INT2 = struct.Struct(">h").unpack_from
INT4 = struct.Struct(">i").unpack_from
_VECTOR_HEAD = struct.Struct(">hiqi").unpack_from  # fields, 8, seq, embedding length


class VectorRows:
    """``seq, embedding, id, thread_id`` rows of a binary COPY: vectors of ``dim``
    appended to one buffer, rows of another length left out (``last`` counts them).

    Written by hand because psycopg's own row reading (``Copy.rows``/``read_row``)
    builds a bytes object and a tuple per row; at 100k vectors those were most of a
    first search's time. The layout is PostgreSQL's binary COPY format: an int16
    field count, then per field an int32 length (-1: NULL) and the bytes, so a row's
    embedding starts at 2 + (4 + 8) + 4 = 18."""

    def __init__(self, dim: int) -> None:
        self.width = dim * 4
        self.seqs: list[int] = []
        self.ids: list[str] = []
        self.threads: list[str | None] = []
        self.vectors = bytearray()
        self.last = -1

    def add(self, row: memoryview) -> None:  # per vector: kept short
        _, _, seq, size = _VECTOR_HEAD(row, 0)
        if seq > self.last:
            self.last = seq
        if size != self.width:
            return
        at = 18 + size
        self.vectors += row[18:at]
        (size,) = INT4(row, at)
        at += 4 + size
        self.ids.append(str(row[at - size : at], "utf-8"))
        (size,) = INT4(row, at)
        self.threads.append(None if size < 0 else str(row[at + 4 : at + 4 + size], "utf-8"))
        self.seqs.append(seq)


def is_disconnect(error: BaseException) -> bool:
    """Whether ``error`` means the connection is gone (not a timeout, not a query error)."""
    if not isinstance(error, psycopg.OperationalError) or isinstance(error, PoolTimeout):
        return False
    if isinstance(error, psycopg.errors.ConnectionException):
        return True
    state = getattr(error, "sqlstate", None)
    return state is None or state in _DISCONNECT_STATES


def translate(error: psycopg.Error) -> Exception:
    """The memorybank error for a driver error (the caller chains it)."""
    if isinstance(error, PoolTimeout):
        return StoreUnavailable(f"no PostgreSQL connection within the timeout: {error}")
    if isinstance(error, psycopg.errors.UniqueViolation):
        return Conflict(f"already exists: {error.diag.constraint_name or error}")
    if isinstance(error, psycopg.errors.TransactionRollback):
        return Conflict(f"concurrent change, retry: {error}")
    if isinstance(error, psycopg.OperationalError):
        return StoreUnavailable(f"PostgreSQL unavailable: {error}")
    if isinstance(error, psycopg.DataError):  # AsyncMemory validates: a store-level caller's bug
        return StoreError(f"PostgreSQL cannot store this value: {error}")
    if isinstance(error, psycopg.InterfaceError):
        return StoreUnavailable(f"PostgreSQL connection unusable: {error}")
    return StoreError(f"PostgreSQL error: {error}")


def connect_error(error: psycopg.OperationalError) -> Exception:
    """The memorybank error for a failed connection attempt (the caller chains it)."""
    if _REJECTED.search(str(error)):
        return ConfigurationError(f"PostgreSQL refused the connection: {error}")
    return StoreUnavailable(f"cannot connect to PostgreSQL: {error}")


class ConnectFailures:
    """The last failed connection attempt of a pool the store owns, ``None`` after a success.

    psycopg_pool only logs why a connection attempt failed; its ``PoolTimeout``
    says nothing of it. The store puts this failure into its message and chain.
    """

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: psycopg.OperationalError | None = None


def parse_url(url: str) -> tuple[str, dict[str, str]]:
    """The libpq URL (``+driver`` and memorybank's own query options removed) and those options."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0].lower()
    if scheme not in ("postgresql", "postgres"):
        raise ConfigurationError(f"not a PostgreSQL URL: {url!r}")
    ours: dict[str, str] = {}
    kept: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in ("prefix", "pool_size", "timeout"):
            ours[key] = value
        else:
            kept.append((key, value))
    clean = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept), parts.fragment))
    return clean, ours
