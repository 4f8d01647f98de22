"""What differs between the SQL engines in the statements ``memorybank.stores.sql`` writes
once for all three (``statements``), in the manner of SQLAlchemy's dialects.

SQLite (``sqlite3``), PostgreSQL (psycopg 3) and MySQL/MariaDB (PyMySQL, aiomysql) share
one statement text for these reads and writes; each engine's folder keeps its schema, its
migrations and the paths where the engine truly differs (PostgreSQL's one-statement
append, MySQL's one-round-trip append, the full-text and vector indexes), each saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memorybank.stores.sql.common import to_us

__all__ = ["MYSQL", "POSTGRES", "SQLITE", "Dialect"]


def _same(value: datetime) -> datetime:
    return value


@dataclass(frozen=True, slots=True)
class Dialect:
    """One engine's spelling of what the shared statements need."""

    #: The driver's positional placeholder.
    mark: str
    #: A JSON text parameter (PostgreSQL's ``json`` columns take a cast from text).
    json_mark: str
    #: The column of a record's lookup key (MySQL: ``k``, ``KEY`` being reserved there).
    key_column: str
    #: A time as the engine's columns hold it: integer microseconds, or ``timestamptz``.
    time: Callable[[datetime], Any]
    #: The ``LIMIT`` value that keeps every row (MySQL has no ``LIMIT ALL``/``-1``).
    no_limit: int | None
    #: Whether a row-value bound ``(a, b) > (x, y)`` is a range of an index on (a, b);
    #: MySQL reads the whole index for it, so it gets ``a > x OR (a = x AND b > y)``.
    row_values: bool
    #: The engine's way to name the index a read must use, after the table:
    #: ``INDEXED BY`` (SQLite), ``FORCE INDEX`` (MySQL); PostgreSQL has no hints.
    hint: Callable[[str], str]
    #: The upsert's tail: ``ON CONFLICT (...) DO UPDATE`` (SQLite, PostgreSQL) or
    #: ``ON DUPLICATE KEY UPDATE`` with the values again (MySQL: ``VALUES()`` is
    #: deprecated in MySQL 8 and ``AS new`` unknown to MariaDB). See ``upsert``.
    repeat_upsert_values: bool
    #: ``x IN (...)`` of many values: ``= ANY(array)``, one parameter (PostgreSQL: one
    #: statement text whatever the count, prepared once), or ``IN`` lists of at most
    #: ``in_chunk`` placeholders (SQLite's and MySQL's drivers have no arrays).
    arrays: bool
    #: What makes a text column compare bytewise (PostgreSQL: ``COLLATE "C"``; the
    #: others' id columns are binary already).
    bytewise: str
    #: The identifier quote of table names (MySQL: backticks; the prefix is checked).
    quote: str
    #: What a write transaction's first read adds to lock the thread row ``t`` against
    #: other writers (SQLite: none, its writer holds the whole file).
    lock_thread: str = ""
    #: What a write transaction's read of one row adds to lock it (SQLite: none).
    lock_row: str = ""
    #: What makes a join read its tables in the order written (MySQL's
    #: ``STRAIGHT_JOIN``: a scope's owners first, then their vectors by index, where its
    #: planner may walk every vector of the tenant instead); the others need none.
    straight_join: str = ""

    def delete_from(self, table: str, alias: str) -> str:
        """``DELETE`` of ``table`` named ``alias`` in the condition (MySQL's single-table
        ``DELETE`` takes no alias on MariaDB: its multi-table form does)."""
        if self.quote:
            return f"DELETE {alias} FROM {table} {alias}"
        return f"DELETE FROM {table} AS {alias}"

    def table(self, prefix: str, name: str) -> str:
        """The table ``name`` of a store whose tables are prefixed ``prefix``."""
        return f"{self.quote}{prefix}{name}{self.quote}"

    def one_of(self, values: Sequence[Any], chunk: int = 500) -> list[tuple[str, tuple[Any, ...]]]:
        """`` IN (...)`` (or `` = ANY(...)``) conditions on a column covering ``values``,
        each with its parameters: one per chunk of values, one with arrays."""
        if self.arrays:
            return [(f" = ANY({self.mark}::text[])", (list(values),))]
        return [
            (f" IN ({', '.join([self.mark] * len(part))})", tuple(part))
            for part in (values[i : i + chunk] for i in range(0, len(values), chunk))
        ]

    def upsert(self, conflict: str, columns: Sequence[str]) -> str:
        """`` ON ...`` setting ``columns`` from the inserted row when ``conflict`` (the
        key's columns, comma-separated) is taken. With ``repeat_upsert_values`` the
        caller passes the values of ``columns`` again after the row (``upsert_params``)."""
        if self.repeat_upsert_values:
            sets = ", ".join(f"{c} = {self.mark}" for c in columns)
            return f" ON DUPLICATE KEY UPDATE {sets}"
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns)
        return f" ON CONFLICT ({conflict}) DO UPDATE SET {sets}"

    def if_absent(self, conflict: str) -> str:
        """`` ON ...`` making an insert write nothing when ``conflict`` (the key's columns)
        is taken, locking the taken row where the engine locks (MySQL: a no-op update,
        ``INSERT IGNORE`` would hide other errors too)."""
        if self.repeat_upsert_values:
            first = conflict.split(",")[0]
            return f" ON DUPLICATE KEY UPDATE {first} = {first}"
        return f" ON CONFLICT ({conflict}) DO NOTHING"

    def upsert_params(self, row: Sequence[Any], updated: int) -> tuple[Any, ...]:
        """The parameters of an ``upsert`` of ``row`` whose last ``updated`` values are
        the updated columns'."""
        if self.repeat_upsert_values:
            return (*row, *row[len(row) - updated :])
        return tuple(row)


def _sqlite_hint(index: str) -> str:
    return f" INDEXED BY {index}"


def _mysql_hint(index: str) -> str:
    return f" FORCE INDEX (`{index}`)"


def _no_hint(index: str) -> str:
    return ""


SQLITE = Dialect(
    mark="?", json_mark="?", key_column="key", time=to_us, no_limit=-1, row_values=True,
    hint=_sqlite_hint, repeat_upsert_values=False, arrays=False, quote="", bytewise="",
)  # fmt: skip
POSTGRES = Dialect(
    mark="%s", json_mark="%s::json", key_column="key", time=_same, no_limit=None,
    row_values=True, hint=_no_hint, repeat_upsert_values=False, arrays=True, quote="",
    bytewise=' COLLATE "C"', lock_thread=" FOR NO KEY UPDATE OF t", lock_row=" FOR UPDATE",
)  # fmt: skip
MYSQL = Dialect(
    mark="%s", json_mark="%s", key_column="k", time=to_us, no_limit=18446744073709551615,
    row_values=False, hint=_mysql_hint, repeat_upsert_values=True, arrays=False, quote="`",
    bytewise="", straight_join="STRAIGHT_JOIN ", lock_thread=" FOR UPDATE",
    lock_row=" FOR UPDATE",
)  # fmt: skip
