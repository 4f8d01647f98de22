"""Shared parts of the reliability suite: stores by spec, child processes, counts.

The suite kills, races and cycles real stores, so its size is set by one knob,
``MEMORYBANK_RELIABILITY_SCALE`` (default 1, as in CI; ``make soak`` sets 5):
kills per store, appends per process and open/close cycles all grow linearly
with it (5 kills, 4 x 60 appends, 200 cycles at 1; 25, 4 x 300, 1,000 at 5).

A store is described by a ``StoreSpec`` (JSON-serialisable), so a child
process (``python -m tests.reliability._child``) can open the very same store
as the test: a SQLite file, or a fresh table/key prefix on the shared
PostgreSQL, MariaDB or Redis server, dropped when the test ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import memorybank

if TYPE_CHECKING:
    from memorybank.stores import AsyncStore, Store

__all__ = [
    "POSTGRES_URL",
    "REDIS_URL",
    "SCALE",
    "SERVER_STORES",
    "STORES",
    "Child",
    "StoreSpec",
    "Words",
    "open_fds",
    "provide",
    "scaled",
    "server_sessions",
    "store_params",
]

POSTGRES_URL = os.environ.get(
    "MEMORYBANK_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("MEMORYBANK_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("MEMORYBANK_REDIS_URL", "redis://127.0.0.1:6379/0")

#: Every store the suite knows: SQLite at both durability levels and the three servers.
STORES = ("sqlite-full", "sqlite-normal", "postgres", "mysql", "redis")
SERVER_STORES = ("postgres", "mysql", "redis")
#: Not in ``STORES``: a three-master Redis Cluster the tests start (``tests.redis_cluster``),
#: named by the suites that run on it.
REDIS_CLUSTER = "redis-cluster"

ROOT = Path(__file__).resolve().parents[2]


def _scale() -> int:
    raw = os.environ.get("MEMORYBANK_RELIABILITY_SCALE", "1")
    try:
        value = int(raw)
    except ValueError:
        raise RuntimeError(
            f"MEMORYBANK_RELIABILITY_SCALE must be an integer, got {raw!r}"
        ) from None
    if value < 1:
        raise RuntimeError(f"MEMORYBANK_RELIABILITY_SCALE must be >= 1, got {value}")
    return value


SCALE = _scale()


def scaled(base: int) -> int:
    """``base`` (the CI count) times the scale."""
    return base * SCALE


class Words:
    """A tokenizer counting words: token counts are not under test here, and the
    default exact tokenizer would cost every child process a second to load."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


@dataclass(frozen=True)
class StoreSpec:
    """Where a test's store lives: ``kind`` (sqlite, postgres, mysql, redis),
    ``target`` (file path or server URL), a fresh ``prefix``, SQLite durability."""

    name: str
    kind: str
    target: str
    prefix: str
    synchronous: Literal["full", "normal", "off"] = "full"

    @classmethod
    def new(cls, name: str, directory: Path) -> StoreSpec:
        """A fresh store for ``name`` (one of ``STORES``): a new file or a new prefix."""
        tag = uuid.uuid4().hex[:10]
        if name.startswith("sqlite-"):
            path = str(directory / f"rel-{tag}.db")
            level = cast(Literal["full", "normal", "off"], name.removeprefix("sqlite-"))
            return cls(name, "sqlite", path, "memorybank_", level)
        if name == "postgres":
            return cls(name, "postgres", POSTGRES_URL, f"rel{tag}_")
        if name == "mysql":
            return cls(name, "mysql", MYSQL_URL, f"rel{tag}_")
        if name == "redis":
            return cls(name, "redis", REDIS_URL, f"mbrel:{tag}:")
        if name == REDIS_CLUSTER:  # the session's three-master cluster (tests.redis_cluster)
            from tests.redis_cluster import shared_cluster

            return cls(name, "redis", shared_cluster().url, f"mbrel:{tag}:")
        raise ValueError(f"unknown store {name!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> StoreSpec:
        return cls(**json.loads(text))

    def open(self) -> Store:
        """A sync store on this spec (the caller closes it)."""
        if self.kind == "sqlite":
            from memorybank.stores.sqlite._sync import SQLiteStore

            return SQLiteStore(self.target, synchronous=self.synchronous)
        if self.kind == "postgres":
            from memorybank.stores.postgres._sync import PostgresStore

            return PostgresStore.from_url(self.target, prefix=self.prefix, pool_size=4, timeout=30)
        if self.kind == "mysql":
            from memorybank.stores.mysql._sync import MySQLStore

            return MySQLStore.from_url(self.target, prefix=self.prefix, pool_size=4, timeout=30)
        from memorybank.stores.redis._sync import RedisStore

        return RedisStore.from_url(self.target, prefix=self.prefix, timeout=30)

    def open_async(self, *, pool_size: int = 4) -> AsyncStore:
        """An async store on this spec (the caller closes it)."""
        if self.kind == "sqlite":
            from memorybank.stores.sqlite._async import AsyncSQLiteStore

            return AsyncSQLiteStore(self.target, synchronous=self.synchronous)
        if self.kind == "postgres":
            from memorybank.stores.postgres._async import AsyncPostgresStore

            return AsyncPostgresStore.from_url(
                self.target, prefix=self.prefix, pool_size=pool_size, timeout=30
            )
        if self.kind == "mysql":
            from memorybank.stores.mysql._async import AsyncMySQLStore

            return AsyncMySQLStore.from_url(
                self.target, prefix=self.prefix, pool_size=pool_size, timeout=30
            )
        from memorybank.stores.redis._async import AsyncRedisStore

        return AsyncRedisStore.from_url(
            self.target, prefix=self.prefix, timeout=30, max_connections=pool_size
        )

    @contextlib.contextmanager
    def memory(self) -> Iterator[memorybank.Memory]:
        """``with spec.memory() as memory``: a sync ``Memory`` on a store of this spec."""
        from memorybank import Memory

        store = self.open()
        try:
            yield Memory(store, tokenizer=Words())
        finally:
            store.close()

    def reachable(self) -> BaseException | None:
        """``None`` if the store's server answers (always for SQLite), else the error."""
        try:
            if self.kind == "postgres":
                import psycopg

                psycopg.connect(self.target, connect_timeout=3).close()
            elif self.kind == "mysql":
                from tests.stores.test_contract_mysql import connect

                connect(self.target).close()
            elif self.kind == "redis":
                from tests.redis_cluster import raw_client

                client = raw_client(self.target)
                try:
                    client.ping()
                finally:
                    client.close()
        except Exception as error:  # any failure to reach the server: skip or fail
            return error
        return None

    def drop(self) -> None:
        """Remove what the tests wrote (server tables or keys; SQLite files go with tmp)."""
        if self.kind == "postgres":
            from tests.stores.test_contract_postgres import drop_tables as drop_pg

            drop_pg(self.target, self.prefix)
        elif self.kind == "mysql":
            from tests.stores.test_contract_mysql import drop_tables as drop_mysql

            drop_mysql(self.prefix, self.target)
        elif self.kind == "redis":
            from tests.stores.test_contract_redis import drop_prefix

            drop_prefix(self.target, self.prefix)

    def integrity(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` of the file (``"ok"`` when sound)."""
        assert self.kind == "sqlite"
        conn = sqlite3.connect(self.target)
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        finally:
            conn.close()
        return "; ".join(str(row[0]) for row in rows)


def store_params(names: tuple[str, ...] = STORES) -> list[Any]:
    """``pytest.param``s for ``names``, the server ones marked ``server``."""
    import pytest  # here, not above: child processes import this module too

    return [
        pytest.param(
            name,
            marks=[pytest.mark.server] if name in (*SERVER_STORES, REDIS_CLUSTER) else [],
            id=name,
        )
        for name in names
    ]


def provide(name: str, directory: Path) -> Iterator[StoreSpec]:
    """Fixture body: a fresh spec for ``name``, skipped/failed if its server is down."""
    from tests.conftest import require_server

    try:
        spec = StoreSpec.new(name, directory)
    except (OSError, subprocess.SubprocessError, RuntimeError) as failed:  # a cluster to start
        require_server(name, failed)
        raise  # unreachable: require_server skips or fails
    error = spec.reachable()
    if error is not None:
        require_server(name, error)
    try:
        yield spec
    finally:
        spec.drop()


def _child_env() -> dict[str, str]:
    """The parent's environment, with the memorybank and tests it imported first."""
    env = dict(os.environ)
    src = str(Path(memorybank.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, str(ROOT), env.get("PYTHONPATH")) if p)
    return env


class Child:
    """``python -m tests.reliability._child MODE SPEC ARGS...``, its stdout in a file.

    The child prints one JSON line per acknowledged operation, flushed after the
    call returned; a line cut by a kill is not acknowledged and is ignored.
    """

    def __init__(self, mode: str, spec: StoreSpec, *args: str, directory: Path) -> None:
        base = directory / f"child-{mode}-{uuid.uuid4().hex[:8]}"
        self.out_path = base.with_suffix(".out")
        self.err_path = base.with_suffix(".err")
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability._child", mode, spec.to_json(), *args],
                stdout=out,
                stderr=err,
                cwd=ROOT,
                env=_child_env(),
            )

    def records(self) -> list[dict[str, Any]]:
        """The complete JSON lines printed so far (``ready`` excluded)."""
        text = self.out_path.read_text(encoding="utf-8")
        lines = text.split("\n")[:-1]  # the last piece is empty or a line cut by the kill
        return [r for r in (json.loads(line) for line in lines) if "ready" not in r]

    def _failed(self, what: str) -> AssertionError:
        stderr = self.err_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        return AssertionError(f"child {what} (exit {self.proc.returncode}):\n{stderr}")

    def wait_for(self, records: int, timeout: float = 60.0) -> None:
        """Wait until the child is ready and has acknowledged ``records`` operations."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.out_path.read_text(encoding="utf-8")
            if text.startswith('{"ready"') and text.count("\n") > records:
                return
            if self.proc.poll() is not None:
                raise self._failed("exited early")
            if time.monotonic() > deadline:
                self.kill()
                raise self._failed(f"not ready after {timeout} s")
            time.sleep(0.01)

    def kill(self) -> None:
        """SIGKILL, and reap. A child that had already exited by itself is a failure."""
        if self.proc.poll() is not None:
            raise self._failed("exited before the kill")
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        """Kill the child if it still runs (cleanup after a failure elsewhere)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def wait(self, timeout: float = 300.0) -> None:
        """Wait for a normal exit (status 0)."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise self._failed(f"still running after {timeout} s") from None
        if self.proc.returncode != 0:
            raise self._failed("failed")


def kill_at_random(child: Child, rng: random.Random, *, max_delay: float) -> None:
    """Kill ``child`` at a random moment after its first acknowledged operation."""
    child.wait_for(1)
    time.sleep(rng.uniform(0.0, max_delay))
    child.kill()


# -- leaks ---------------------------------------------------------------------------


def open_fds() -> int:
    """Number of open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def _local_ports(remote_port: int) -> set[int]:
    """Local ports of this process's TCP sockets connected to ``remote_port``."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listdir's own descriptor)
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == remote_port:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def server_sessions(spec: StoreSpec) -> int:
    """Sessions the server holds for this process's connections (0 for SQLite).

    Asked of the server (``pg_stat_activity``, MariaDB's process list, Redis
    ``CLIENT LIST``) and matched to this process by client port, so other test
    runs sharing the server do not count. The measuring connection counts too,
    the same way every time.
    """
    if spec.kind == "sqlite":
        return 0
    if spec.kind == "postgres":
        import psycopg

        with psycopg.connect(spec.target, autocommit=True) as conn:
            ours = _local_ports(conn.info.port)
            rows = conn.execute(
                "SELECT client_port FROM pg_stat_activity WHERE client_port IS NOT NULL"
            ).fetchall()
        return sum(1 for (port,) in rows if port in ours)
    if spec.kind == "mysql":
        from tests.stores.test_contract_mysql import connect

        mysql = connect(spec.target)
        try:
            ours = _local_ports(mysql.port)
            with mysql.cursor() as cur:
                cur.execute("SELECT HOST FROM information_schema.PROCESSLIST")
                hosts = [str(row[0]) for row in cur.fetchall()]
        finally:
            mysql.close()
        return sum(1 for h in hosts if ":" in h and int(h.rsplit(":", 1)[1]) in ours)
    import redis

    client = redis.Redis.from_url(spec.target)
    try:
        client.ping()  # connects: the measuring connection counts, as on the other servers
        ours = _local_ports(int(client.connection_pool.connection_kwargs.get("port", 6379)))
        clients = client.client_list()
    finally:
        client.close()
    return sum(1 for c in clients if int(str(c["addr"]).rsplit(":", 1)[1]) in ours)
