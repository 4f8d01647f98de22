"""What the importer tests share: the target stores (SQLite, PostgreSQL) and the CLI.

``target`` is a memorybank store URL, a fresh SQLite file or a PostgreSQL table prefix
(dropped afterwards). ``pg_schema`` is a PostgreSQL URL whose ``search_path`` is a fresh
schema (dropped afterwards), for the other systems' own PostgreSQL tables, whose names
are fixed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from memorybank.cli import app
from tests.conftest import require_server
from tests.reliability._harness import POSTGRES_URL, StoreSpec

TARGETS = ("sqlite", "postgres")


def run(*args: str) -> Result:
    """``memorybank ARGS`` in-process (exceptions other than the CLI's own propagate)."""
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A memorybank store URL to import into, empty."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'target.db'}"
        return
    spec = StoreSpec.new("postgres", tmp_path)
    error = spec.reachable()
    if error is not None:
        require_server("postgres", error)
    try:
        yield f"{spec.target}?prefix={spec.prefix}"
    finally:
        spec.drop()


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A PostgreSQL URL confined to a fresh schema (its tables dropped with it)."""
    import psycopg

    schema = f"imp_{uuid.uuid4().hex[:10]}"
    try:
        conn = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.Error as error:
        require_server("postgres", error)
    with conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
