"""Shared by the PostgreSQL store tests (``test_postgres_*.py``).

They use the server at ``$MEMORYBANK_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``): skipped locally when it is
down, failed in CI. ``prefix`` is the fixture of a fresh table prefix on it,
dropped after the test; a test module uses it by binding it:
``prefix = _postgres.prefix`` (pytest finds fixtures by module attribute).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import require_server
from tests.stores.test_contract_postgres import URL, drop_tables


@pytest.fixture
def prefix() -> Iterator[str]:
    """A fresh table prefix on a reachable server; its tables are dropped afterwards."""
    try:
        with psycopg.connect(URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        require_server("PostgreSQL", error)
    name = f"t{uuid.uuid4().hex[:10]}_"
    yield name
    drop_tables(URL, name)


def admin(query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(URL, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def gin_options(prefix: str) -> dict[str, list[str] | None]:
    """The storage parameters of the prefix's GIN indexes, by name."""
    rows = admin(
        "SELECT i.relname, i.reloptions FROM pg_class i JOIN pg_am a ON a.oid = i.relam"
        " WHERE a.amname = 'gin' AND i.relname LIKE %s",
        (prefix.replace("_", r"\_") + "%",),
    )
    return dict(rows)
