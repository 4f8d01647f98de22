"""A real three-master Redis Cluster, started from the machine's binaries, for tests and benches.

(``ClusterProcesses(cluster=False)`` is one plain server with the same settings,
the benchmark's single-node baseline.)

``ClusterProcesses().start()`` runs ``redis-server --cluster-enabled yes`` three
times on spare loopback ports, each in its own temporary directory (no
persistence: the cluster lives as long as the session), joins them with
``redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`` and
returns once every node reports ``cluster_state:ok`` and knows all three
masters. ``close()`` kills the servers and deletes the directories.

``shared_cluster()`` is the test session's one cluster, started on first use
(by a store fixture) and stopped by the ``_stop_shared_redis_cluster`` session
fixture of ``tests/conftest.py`` (and at exit, should that not run). A missing
binary or a cluster that does not form skips locally and fails in CI, through
``require_server``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

__all__ = ["ClusterProcesses", "shared_cluster", "stop_shared_cluster"]

_WAIT = 30.0  # seconds for a node to accept connections, and for the cluster to form


def _spare_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports nothing listens on, whose bus ports (+10000) are free too."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _ask(port: int, command: str) -> str:
    """``PING`` or ``CLUSTER INFO`` to a node, as text (``""`` when unreachable or refused)."""
    client = redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=2)
    try:
        reply = client.ping() if command == "PING" else client.cluster("INFO")
    except redis.RedisError:
        return ""
    finally:
        client.close()
    if isinstance(reply, dict):
        return "\n".join(f"{k}:{v}" for k, v in reply.items())
    return str(reply)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies (Linux),
    so a test run killed before its teardown leaves no server behind."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class ClusterProcesses:
    """Three redis-server cluster nodes on spare ports, joined into one cluster."""

    def __init__(self, masters: int = 3, *, cluster: bool = True) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
        if not Path(binary).exists() or not Path(cli).exists():
            raise FileNotFoundError("no redis-server / redis-cli binary")
        self._binary, self._cli = binary, cli
        self.cluster = cluster
        self.masters = masters if cluster else 1
        self.root = Path(tempfile.mkdtemp(prefix="mb-redis-cluster-"))
        self.ports = _spare_ports(self.masters)
        self._processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        """``redis+cluster://`` URL of the first node (the client discovers the others);
        ``redis://`` for the single server of ``cluster=False``."""
        if not self.cluster:
            return f"redis://127.0.0.1:{self.ports[0]}/0"
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def start(self) -> ClusterProcesses:
        """Start the nodes, join them, wait for ``cluster_state:ok``. Cleans up on failure."""
        try:
            for port in self.ports:
                directory = self.root / str(port)
                directory.mkdir()
                with open(directory / "log", "ab") as log:
                    self._processes.append(
                        subprocess.Popen(
                            [
                                self._binary,
                                "--port",
                                str(port),
                                "--bind",
                                "127.0.0.1",
                                "--dir",
                                str(directory),
                                *(
                                    (
                                        "--cluster-enabled",
                                        "yes",
                                        "--cluster-config-file",
                                        "nodes.conf",
                                        "--cluster-node-timeout",
                                        "5000",
                                    )
                                    if self.cluster
                                    else ()
                                ),
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                            ],
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            preexec_fn=_die_with_parent,
                        )
                    )
            for port, process in zip(self.ports, self._processes, strict=True):
                self._wait(lambda p=port: _ask(p, "PING") == "True", process)
            if not self.cluster:
                return self
            subprocess.run(
                [
                    self._cli,
                    "--cluster",
                    "create",
                    *(f"127.0.0.1:{port}" for port in self.ports),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                check=True,
                capture_output=True,
                timeout=_WAIT,
            )
            for port in self.ports:
                self._wait(lambda p=port: self._formed(p))
        except BaseException:
            self.close()
            raise
        return self

    def _formed(self, port: int) -> bool:
        info = _ask(port, "CLUSTER INFO")
        return (
            "cluster_state:ok" in info
            and "cluster_slots_assigned:16384" in info
            and f"cluster_known_nodes:{self.masters}" in info
        )

    def _wait(self, ready: object, process: subprocess.Popen[bytes] | None = None) -> None:
        deadline = time.monotonic() + _WAIT
        while not ready():  # type: ignore[operator]
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"redis-server exited: see the logs in {self.root}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the redis cluster did not form: see the logs in {self.root}")
            time.sleep(0.1)

    def close(self) -> None:
        """Kill every node and delete the directories."""
        for process in self._processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_WAIT)
        self._processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)


_shared: ClusterProcesses | None = None
_failed: BaseException | None = None


def shared_cluster() -> ClusterProcesses:
    """The session's cluster, started on the first call (a failure is remembered and re-raised)."""
    global _shared, _failed
    if _failed is not None:
        raise RuntimeError(f"the redis cluster could not start: {_failed}") from _failed
    if _shared is None:
        try:
            _shared = ClusterProcesses().start()
        except (OSError, subprocess.SubprocessError, RuntimeError) as error:
            _failed = error
            raise
        atexit.register(stop_shared_cluster)
    return _shared


def stop_shared_cluster() -> None:
    """Stop the session's cluster if it was started."""
    global _shared
    if _shared is not None:
        _shared.close()
        _shared = None


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster (``redis+cluster://`` / ``rediss+cluster://``)."""
    return url.partition("://")[0].lower().endswith("+cluster")


def raw_client(url: str) -> redis.Redis | redis.RedisCluster:
    """A plain redis-py client for ``url`` (a cluster client for a cluster URL)."""
    if is_cluster_url(url):
        scheme, sep, rest = url.partition("://")
        return redis.RedisCluster.from_url(
            scheme.lower().removesuffix("+cluster") + sep + rest, socket_connect_timeout=3
        )
    return redis.Redis.from_url(url, socket_connect_timeout=3)
