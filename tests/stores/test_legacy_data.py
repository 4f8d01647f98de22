"""Data written by an earlier release opens with today's library, every record intact.

``tests/stores/legacy/<commit>/`` holds what ``make_fixtures.py`` wrote with that
commit's library: every kind of record (threads with branches, entries of every shape,
idempotency keys, facts with history, documents, core facts, graph entities and
relations, summaries, snapshots, working memory, vectors) in a SQLite file and in the
servers' own dumps of PostgreSQL, MySQL/MariaDB and Redis, and each store's export read
through that release's API. Each case loads one store's data under a fresh prefix,
opens it with today's store (which migrates its schema) and compares today's export of
it, line for line, with the old one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.dump._sync.portability import export_dump
from memorybank.stores import MySQLStore, PostgresStore, RedisStore, SQLiteStore, Store
from memorybank.testing._embedder import SynonymEmbedder
from tests.conftest import require_server

FIXTURES = sorted(p for p in (Path(__file__).parent / "legacy").iterdir() if p.is_dir())
OLD_PREFIX = "legacyfx_"
PG = "postgresql://postgres@127.0.0.1:5432/test"
MYSQL = "mysql://root@127.0.0.1:3306/test"
REDIS = "redis://127.0.0.1:6379/0"
PSQL = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1"]
MARIADB = ["mariadb", "-h", "127.0.0.1", "-u", "root", "test"]


def _run(command: list[str], script: str, server: str) -> str:
    try:
        done = subprocess.run(command, input=script, capture_output=True, text=True, timeout=120)
    except FileNotFoundError as error:
        pytest.fail(f"{command[0]} is not installed: {error}")
    if done.returncode != 0:
        if "connect" in done.stderr.lower():
            require_server(server, done.stderr.strip())
        pytest.fail(f"{command[0]} failed: {done.stderr}")
    return done.stdout


def _export(store: Store) -> list[str]:
    with Memory(store, embedder=SynonymEmbedder()) as memory:
        lines = list(
            export_dump(
                memory.store,
                "legacy",
                now=datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
                vector_model=SynonymEmbedder.model_id,
            )
        )
    return lines[1:-1]


def _expected(fixture: Path, name: str) -> list[str]:
    return (fixture / f"export.{name}.jsonl").read_text().splitlines()


@pytest.fixture(params=FIXTURES, ids=[p.name for p in FIXTURES])
def fixture(request: pytest.FixtureRequest) -> Path:
    return Path(request.param)


@pytest.fixture
def prefix() -> str:
    return f"lg{uuid.uuid4().hex[:10]}_"


def test_sqlite(fixture: Path, tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(fixture / "sqlite.db", path)
    assert _export(SQLiteStore(str(path))) == _expected(fixture, "sqlite")


@pytest.fixture
def postgres_tables(prefix: str) -> Iterator[str]:
    yield prefix
    listing = f"SELECT tablename FROM pg_tables WHERE starts_with(tablename, '{prefix}')"
    names = _run([*PSQL, "-At"], listing, "PostgreSQL").split()
    if names:
        _run(PSQL, "DROP TABLE " + ", ".join(names) + " CASCADE", "PostgreSQL")


def test_postgres(fixture: Path, postgres_tables: str) -> None:
    script = (fixture / "postgres.sql").read_text().replace(OLD_PREFIX, postgres_tables)
    _run(PSQL, script, "PostgreSQL")
    store = PostgresStore.from_url(PG, prefix=postgres_tables)
    assert _export(store) == _expected(fixture, "postgres")


@pytest.fixture
def mysql_tables(prefix: str) -> Iterator[str]:
    yield prefix
    names = _run([*MARIADB, "-N"], f"SHOW TABLES LIKE '{prefix[:-1]}\\_%'", "MySQL").split()
    if names:
        _run(MARIADB, "DROP TABLE " + ", ".join(names), "MySQL")


def test_mysql(fixture: Path, mysql_tables: str) -> None:
    script = (fixture / "mysql.sql").read_text().replace(OLD_PREFIX, mysql_tables)
    _run(MARIADB, script, "MySQL")
    store = MySQLStore.from_url(MYSQL, prefix=mysql_tables)
    assert _export(store) == _expected(fixture, "mysql")


def test_redis(fixture: Path, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS)
    try:
        client.ping()
    except redis.ConnectionError as error:
        require_server("Redis", error)
    payloads: dict[str, str] = json.loads((fixture / "redis.json").read_text())
    restored = [key.replace(OLD_PREFIX, prefix, 1) for key in payloads]
    try:
        for key, payload in payloads.items():
            client.restore(key.replace(OLD_PREFIX, prefix, 1), 0, bytes.fromhex(payload))
        store = RedisStore.from_url(REDIS, prefix=prefix)
        assert _export(store) == _expected(fixture, "redis")
    finally:
        for key in list(client.scan_iter(match=f"{prefix}*")):
            client.delete(key)
        assert not client.exists(*restored)
