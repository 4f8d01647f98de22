"""Database servers of the reliability suite's own, which tests may stop and restart.

The shared servers (PostgreSQL 5432, MariaDB 3306, Redis 6379) are never
stopped: a test that needs an outage uses one of these session fixtures, each a
server started from the machine's binaries on a spare loopback port, in a
temporary directory deleted at the end:

- ``own_postgres``: PostgreSQL from ``/usr/lib/postgresql/<newest>/bin``, run as
  the ``postgres`` system user when the tests run as root (postgres refuses
  root). TCP logins need a password (``scram-sha-256``), so a wrong one is
  refused; ``url`` carries the right one. ``fsync=off``: an immediate stop
  still replays the WAL on restart (the OS keeps what was written).
- ``own_redis``: ``redis-server`` with an append-only file fsynced on every
  write, so data outlives a SIGKILL and a restart (what "nothing half-written"
  needs to be checked).
- ``own_mariadb``: ``mariadbd`` on a data directory made by
  ``mariadb-install-db`` (root, no password, database ``test``).

Each is an ``OwnServer``: ``url``, ``port``, ``stop()`` (abrupt: SIGKILL, or
``pg_ctl -m immediate``, like a crash), ``start()`` (same port, same data,
returns once it accepts connections) and ``down()`` (a context manager: stopped
inside, started again on leaving, even on error). A test that stops a server
must leave it running, so the next test finds it up. A missing binary skips
locally and fails in CI (``require_server``).
"""

from __future__ import annotations

import contextlib
import getpass
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_server

_READY_WAIT = 30.0  # seconds a server gets to accept connections after a start


def spare_port() -> int:
    """A loopback TCP port nothing listens on (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepting(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class OwnServer:
    """A database server this test session started, on its own port and directory."""

    name = "server"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = spare_port()
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start on the same port and data; return once it accepts connections."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop abruptly (like a crash); return once the port is closed."""
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(timeout=_READY_WAIT)
            self._process = None

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """Stopped inside the block, running again after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def _spawn(self, args: list[str], log: str) -> None:
        with open(self.root / log, "ab") as out:
            self._process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _READY_WAIT
        while not self._ready():
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: see the logs in {self.root}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start: see the logs in {self.root}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        return _accepting(self.port)

    def close(self) -> None:
        """Stop for good and delete the data."""
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class OwnPostgres(OwnServer):
    """PostgreSQL on a spare port (see the module docstring)."""

    name = "PostgreSQL"
    password = "memorybank-secret"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            raise FileNotFoundError("no /usr/lib/postgresql/*/bin/pg_ctl")
        self._bin = Path(found[-1]).parent
        self._user = "postgres" if os.geteuid() == 0 else None
        self._data = root / "data"
        self.url = f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"
        if self._user is not None:
            shutil.chown(root, self._user)
        (root / "pw").write_text(self.password)
        self._run(
            "initdb",
            "-D",
            str(self._data),
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={root / 'pw'}",
            "--no-sync",
        )

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [str(self._bin / tool), *args],
            check=True,
            capture_output=True,
            user=self._user,
            cwd=self.root,
            timeout=_READY_WAIT * 2,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c max_connections=60"
        )
        log = str(self.root / "log")
        self._run("pg_ctl", "-D", str(self._data), "-l", log, "-w", "-o", options, "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")


class OwnRedis(OwnServer):
    """Redis on a spare port with an fsync-always append-only file."""

    name = "Redis"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._binary = shutil.which("redis-server")
        if self._binary is None:
            raise FileNotFoundError("no redis-server on PATH")
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self._binary is not None
        self._spawn(
            [
                self._binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.root),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ],
            "log",
        )

    def _ready(self) -> bool:
        if not _accepting(self.port):
            return False
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")  # not "-LOADING"


class OwnMariaDB(OwnServer):
    """MariaDB on a spare port: root without password, database ``test``."""

    name = "MariaDB"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._binary = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin")
        installer = shutil.which("mariadb-install-db")
        if self._binary is None or installer is None:
            raise FileNotFoundError("no mariadbd / mariadb-install-db")
        self._data = root / "data"
        self.url = f"mysql://root@127.0.0.1:{self.port}/test"
        subprocess.run(
            [
                installer,
                "--no-defaults",
                f"--user={getpass.getuser()}",
                f"--datadir={self._data}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
            timeout=_READY_WAIT * 2,
        )
        (self._data / "test").mkdir()  # the database `test`: a directory is all it is

    def start(self) -> None:
        assert self._binary is not None
        args = [
            self._binary,
            "--no-defaults",
            f"--datadir={self._data}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.root / 'sock'}",
            f"--pid-file={self.root / 'pid'}",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=32M",
        ]
        if os.geteuid() == 0:
            args.append("--user=root")
        self._spawn(args, "log")

    def _ready(self) -> bool:
        if not _accepting(self.port):
            return False
        import pymysql

        try:
            with pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=1):
                pass
        except pymysql.err.Error:
            return False
        return True


def _own(kind: type[OwnServer]) -> Iterator[OwnServer]:
    root = Path(tempfile.mkdtemp(prefix=f"mb-own-{kind.name.lower()}-"))
    root.chmod(0o755)
    try:
        server = kind(root)
        server.start()
    except (OSError, subprocess.SubprocessError, RuntimeError) as error:
        shutil.rmtree(root, ignore_errors=True)
        require_server(f"own {kind.name}", error)
        raise  # unreachable: require_server skips or fails
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def own_postgres() -> Iterator[OwnServer]:
    """A PostgreSQL of this session's own (see the module docstring)."""
    yield from _own(OwnPostgres)


@pytest.fixture(scope="session")
def own_redis() -> Iterator[OwnServer]:
    """A Redis of this session's own (see the module docstring)."""
    yield from _own(OwnRedis)


@pytest.fixture(scope="session")
def own_mariadb() -> Iterator[OwnServer]:
    """A MariaDB of this session's own (see the module docstring)."""
    yield from _own(OwnMariaDB)
