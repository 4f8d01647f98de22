"""What differs between the SQL engines in the statements ``memorybank.stores.sql`` writes
once for all three (``statements``), in the manner of SQLAlchemy's dialects.

SQLite (``sqlite3``), PostgreSQL (psycopg 3) and MySQL/MariaDB (PyMySQL, aiomysql) share
one statement text for these reads and writes; each engine's folder keeps its schema, its
migrations and the paths where the engine truly differs (PostgreSQL's one-statement
append, MySQL's one-round-trip append, the full-text and vector indexes), each saying why.
"""

from __future__ import annotations

from collections.abc import Callable
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


SQLITE = Dialect(mark="?", json_mark="?", key_column="key", time=to_us, no_limit=-1)
POSTGRES = Dialect(mark="%s", json_mark="%s::json", key_column="key", time=_same, no_limit=None)
MYSQL = Dialect(
    mark="%s", json_mark="%s", key_column="k", time=to_us, no_limit=18446744073709551615
)
