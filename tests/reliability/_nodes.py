"""Several ``memorybank serve`` nodes behind HAProxy, a mixed load, a kill and a rolling restart.

The parts are real and started here, on loopback: ``Node`` is one
``memorybank serve --workers 2`` (its own process group, so a kill takes the
master and its workers alike), ``Haproxy`` is Debian's ``haproxy`` with the
configuration of ``haproxy_config`` (health checks on ``/readyz``; the same text
is shown in docs/operations.md) and its runtime socket, ``Backend`` is the store
the nodes share (a PostgreSQL database of its own on the shared server, or a key
prefix on the test session's Redis Cluster), removed afterwards.

``Scenario.run`` drives ``clients`` HTTP clients through the balancer, each call
drawn at random (``MIX``: 70% history, 20% appends with idempotency keys, 10%
search or context), while ``Chaos`` kills one node with SIGKILL (process group)
and restarts it, then replaces all three one by one (drain in HAProxy, SIGTERM,
start, ready). A client retries a failed call (connection error, 502/503/504)
with the same idempotency key until it succeeds or ``GIVE_UP_SECONDS`` pass.
Afterwards every thread is read back: an acknowledged append missing is
``lost``, an append stored twice is ``duplicated``. The ``Figures`` carry
throughput, p50/p99 per call, failed attempts per phase (the error rate) and
the memory of each node. The test (tests/reliability/test_nodes.py) runs it
short; ``python -m bench.soak --nodes`` runs it long (``make soak``).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import functools
import io
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import memorybank

__all__ = [
    "ADMIN_KEY",
    "MIX",
    "Backend",
    "Chaos",
    "Figures",
    "Haproxy",
    "Node",
    "Scenario",
    "check_keys",
    "haproxy_config",
    "nodes_over",
    "report",
]

ADMIN_KEY = "nodes-admin-key"
WORKERS = 2
POOL_SIZE = 4  # per worker: 3 nodes x 2 workers x 4 = 24 PostgreSQL connections
MIX = (("history", 0.70), ("append", 0.20), ("search", 0.10))
RETRY_STATUSES = frozenset({502, 503, 504})
GIVE_UP_SECONDS = 30.0
READY_SECONDS = 120.0  # a node's start under a loaded CI machine: imports, app, store
AGENT = "nodes-agent"
WORDS = (
    "invoice refund shipping order account password login billing address delivery"
    " warranty upgrade subscription discount coupon receipt payment tracking return"
).split()
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
SRC = str(Path(memorybank.__file__).resolve().parents[1])


def spare_port() -> int:
    """A loopback TCP port nothing listens on (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepting(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies (Linux), so a
    run killed before its teardown leaves no node or balancer behind."""
    from tests.redis_cluster import _die_with_parent as die

    die()


# -- the nodes ------------------------------------------------------------------------


class Node:
    """One ``memorybank serve --workers 2`` on a port of its own, in its own process group."""

    def __init__(self, name: str, store_url: str, directory: Path) -> None:
        self.name = name
        self.store_url = store_url
        self.port = spare_port()
        self.log_path = directory / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the node (returns at once: ``wait_ready`` waits for ``/readyz``).

        The master dies with the thread that started it (``_die_with_parent``): a
        node restarted from ``asyncio.to_thread`` ends when the loop's executor
        shuts down, at the end of ``asyncio.run``, and its workers with it."""
        assert self.process is None or self.process.poll() is not None, "already running"
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memorybank.cli",
                    "serve",
                    "--url",
                    self.store_url,
                    "--port",
                    str(self.port),
                    "--workers",
                    str(WORKERS),
                    "--admin-key",
                    ADMIN_KEY,
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killpg takes the workers too
                preexec_fn=_die_with_parent,
            )
        self.starts += 1

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Until ``/readyz`` answers 200 on the node itself (not through the balancer)."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited during startup:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} not ready in {timeout} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the whole process group (master and workers), like a machine lost."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        deadline = time.monotonic() + 10
        while self.pids() or _accepting(self.port):
            assert time.monotonic() < deadline, f"{self.name}: workers outlived the kill"
            time.sleep(0.05)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM to the master (graceful: in-flight requests finish); its exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.kill()

    def close(self) -> None:
        """Kill what is left of the node (teardown)."""
        if self.process is not None and (self.process.poll() is None or self.pids()):
            self.kill()

    def pids(self) -> list[int]:
        """Live processes of the node's group (the master's pid is the group's id)."""
        if self.process is None:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == self.process.pid:  # state, pgrp
                found.append(int(entry.name))
        return found

    def rss_mb(self) -> float:
        """Resident memory of the master, its workers and uvicorn's resource tracker, MB."""
        total = 0
        for pid in self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total / 1024

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


# -- the balancer ---------------------------------------------------------------------


def haproxy_config(port: int, nodes: Sequence[tuple[str, int]], admin_socket: str) -> str:
    """The HAProxy configuration the tests run (docs/operations.md shows it for 8080-8083)."""
    servers = "\n".join(f"    server {name} 127.0.0.1:{p}" for name, p in nodes)
    return f"""\
global
    maxconn 2000
    stats socket {admin_socket} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    timeout check 5s
    # A request whose connection to a node failed (nothing was sent) goes to another.
    retries 3
    retry-on conn-failure
    option redispatch 1

frontend memorybank
    bind 127.0.0.1:{port}
    default_backend memorybank

backend memorybank
    balance leastconn
    option httpchk GET /readyz
    http-check expect status 200
    # A check is slow, not failed, under a burst (timeout check); a node that is gone
    # is out on its first refused connection, without waiting for the checks.
    default-server check inter 1s fall 3 rise 2 observe layer4 error-limit 1 on-error mark-down
{servers}
"""


class Haproxy:
    """``haproxy -db`` in front of ``nodes``, with an admin socket for drain and status."""

    def __init__(self, nodes: Sequence[Node], directory: Path) -> None:
        if not Path(HAPROXY).exists():
            raise FileNotFoundError("no haproxy binary (Debian package haproxy)")
        self.nodes = list(nodes)
        self.port = spare_port()
        self.socket_path = str(directory / "haproxy.sock")
        self.config_path = directory / "haproxy.cfg"
        self.config_path.write_text(
            haproxy_config(self.port, [(n.name, n.port) for n in nodes], self.socket_path)
        )
        self.log_path = directory / "haproxy.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        check = subprocess.run(
            [HAPROXY, "-c", "-f", str(self.config_path)], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [HAPROXY, "-db", "-f", str(self.config_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + 30
        while not (_accepting(self.port) and Path(self.socket_path).exists()):
            assert self.process.poll() is None, self.log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "haproxy did not start"
            time.sleep(0.05)

    def command(self, text: str) -> str:
        """One command on the runtime API (``show stat``, ``set server ...``)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(self.socket_path)
            sock.sendall(text.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def status(self) -> dict[str, str]:
        """Each node's state in the balancer: ``UP``, ``DOWN``, ``MAINT``, ``DRAIN``..."""
        text = self.command("show stat").lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {
            r["svname"]: r["status"]
            for r in rows
            if r["pxname"] == "memorybank" and r["svname"] not in ("FRONTEND", "BACKEND")
        }

    def wait_status(self, name: str, wanted: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while (state := self.status().get(name)) != wanted:
            assert time.monotonic() < deadline, f"{name} is {state} in haproxy, not {wanted}"
            time.sleep(0.05)

    def set_state(self, name: str, state: str) -> None:
        """``ready``, ``drain`` (no new requests) or ``maint``."""
        answer = self.command(f"set server memorybank/{name} state {state}")
        assert answer.strip() == "", answer

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


# -- the store the nodes share ---------------------------------------------------------


@dataclass
class Backend:
    """Where the nodes keep their data; ``drop()`` removes it."""

    name: str
    url: str
    drop: Callable[[], None]


POSTGRES_SERVER = os.environ.get(
    "MEMORYBANK_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def postgres_backend() -> Backend:
    """A database of its own on the shared PostgreSQL, dropped (``WITH (FORCE)``) at the end."""
    import psycopg
    from psycopg import sql

    database = f"mbnodes_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_SERVER, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    base = POSTGRES_SERVER.rsplit("/", 1)[0]

    def drop() -> None:
        with psycopg.connect(POSTGRES_SERVER, autocommit=True, connect_timeout=5) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
            )

    return Backend("postgres", f"{base}/{database}?pool_size={POOL_SIZE}", drop)


def redis_cluster_backend() -> Backend:
    """A fresh key prefix on the session's three-master Redis Cluster, deleted at the end."""
    from tests.redis_cluster import shared_cluster
    from tests.stores.test_contract_redis import drop_prefix

    cluster_url = shared_cluster().url
    prefix = f"mbnodes:{uuid.uuid4().hex[:10]}:"
    return Backend(
        "redis-cluster",
        f"{cluster_url}?prefix={prefix}&max_connections={POOL_SIZE * 4}",
        lambda: drop_prefix(cluster_url, prefix),
    )


@contextlib.contextmanager
def nodes_over(
    backend: Backend, directory: Path, count: int = 3
) -> Iterator[tuple[list[Node], Haproxy]]:
    """``count`` nodes over ``backend`` behind HAProxy, all up; everything stopped after."""
    nodes = [Node(f"n{i + 1}", backend.url, directory) for i in range(count)]
    balancer = Haproxy(nodes, directory)
    try:
        # The first node creates the schema alone; the others then start side by side.
        nodes[0].start()
        nodes[0].wait_ready()
        for node in nodes[1:]:
            node.start()
        for node in nodes[1:]:
            node.wait_ready()
        balancer.start()
        for node in nodes:
            balancer.wait_status(node.name, "UP")
        yield nodes, balancer
    finally:
        balancer.close()
        for node in nodes:
            node.close()


# -- keys across nodes ----------------------------------------------------------------


def _admin(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)


def create_key(node: Node, tenant: str) -> tuple[str, str]:
    """A new key of ``tenant``, created through ``node``: (key id, secret)."""
    with _admin(node.base) as admin:
        made = admin.post("/v1/admin/keys", json={"tenant": tenant, "label": "nodes"})
    assert made.status_code == 201, made.text
    return made.json()["key"]["id"], made.json()["secret"]


def _status_on(node: Node, secret: str) -> int:
    """A keyed read on ``node`` over a new connection (so either worker may take it)."""
    headers = {"Authorization": f"Bearer {secret}", "Connection": "close"}
    return httpx.get(f"{node.base}/v1/threads", headers=headers, timeout=10).status_code


@dataclass
class KeyFigures:
    cache_seconds: float
    refused_after: dict[str, float]  # node -> seconds from the revocation to its first 401


def check_keys(nodes: Sequence[Node], tenant: str, cache_seconds: float) -> KeyFigures:
    """A key created on the first node works on every node at once; revoked through the
    second, it is refused by every node (each worker) within ``cache_seconds``."""
    key_id, secret = create_key(nodes[0], tenant)
    for node in nodes:
        for _ in range(6):  # each worker verifies it and caches it
            assert _status_on(node, secret) == 200, f"new key refused on {node.name}"
    with _admin(nodes[1].base) as admin:
        revoked = admin.delete(f"/v1/admin/keys/{key_id}")
    assert revoked.status_code == 200, revoked.text
    at = time.monotonic()
    refused: dict[str, float] = {}
    while len(refused) < len(nodes) and time.monotonic() - at < cache_seconds + 5:
        for node in nodes:
            if node.name not in refused and _status_on(node, secret) == 401:
                refused[node.name] = time.monotonic() - at
        time.sleep(0.05)
    # Past the cache time, no worker of any node may take it any more.
    time.sleep(max(0.0, cache_seconds + 0.25 - (time.monotonic() - at)))
    for node in nodes:
        statuses = [_status_on(node, secret) for _ in range(8)]
        assert statuses == [401] * 8, f"{node.name} still accepts a revoked key: {statuses}"
    return KeyFigures(cache_seconds, refused)


# -- the load -------------------------------------------------------------------------


@dataclass
class Figures:
    """What one run measured."""

    backend: str
    clients: int
    seconds: float = 0.0
    latency: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op, _ in MIX})
    attempts: Counter[str] = field(default_factory=Counter)  # phase -> attempts
    failed: Counter[str] = field(default_factory=Counter)  # phase -> failed attempts
    failures: Counter[str] = field(default_factory=Counter)  # "phase op kind" -> count
    gave_up: Counter[str] = field(default_factory=Counter)  # op -> calls failed for good
    unexpected: Counter[str] = field(default_factory=Counter)  # "op status body" -> count
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    unacknowledged_stored: int = 0  # appends given up on that had reached the store
    rss_mb: dict[str, list[float]] = field(default_factory=dict)  # node -> samples
    events: list[tuple[float, str]] = field(default_factory=list)

    def error_rate(self, phase: str | None = None) -> float:
        attempts = self.attempts[phase] if phase else sum(self.attempts.values())
        failed = self.failed[phase] if phase else sum(self.failed.values())
        return failed / attempts if attempts else 0.0


class Scenario:
    """``clients`` clients on 16 seeded threads, through ``balancer``; each waits
    ``pause`` seconds between calls (the CI test's light load leaves the CPU to
    the nodes restarting; the soak's clients go back to back)."""

    def __init__(
        self,
        backend: str,
        nodes: Sequence[Node],
        balancer: Haproxy,
        clients: int = 32,
        pause: float = 0.0,
    ) -> None:
        self.pause = pause  # seconds a client waits between calls (0: back to back)
        self.nodes = list(nodes)
        self.balancer = balancer
        self.figures = Figures(backend, clients)
        self.phase = "steady"
        self.threads: list[str] = []
        self.sent: dict[str, str] = {}  # idempotency key -> thread id
        self.acked: set[str] = set()
        self._stop = asyncio.Event()
        self._started = 0.0

    def mark(self, phase: str, event: str | None = None) -> None:
        self.phase = phase
        self.figures.events.append((time.monotonic() - self._started, event or phase))

    async def run(self, chaos: Callable[[Scenario], Awaitable[None]], secret: str) -> Figures:
        headers = {"Authorization": f"Bearer {secret}"}
        limits = httpx.Limits(max_connections=self.figures.clients * 2)
        async with httpx.AsyncClient(
            base_url=self.balancer.base, headers=headers, timeout=30, limits=limits
        ) as client:
            await self._seed(client)
            self._started = time.monotonic()
            sampler = asyncio.create_task(self._sample_memory())
            load = [
                asyncio.create_task(self._client(client, n)) for n in range(self.figures.clients)
            ]
            try:
                await chaos(self)
            finally:
                self._stop.set()
                await asyncio.gather(*load)
                self.figures.seconds = time.monotonic() - self._started
                await sampler
            await self._verify(client)
        return self.figures

    async def _seed(self, client: httpx.AsyncClient, threads: int = 16) -> None:
        rng = random.Random(1)
        for _ in range(threads):
            made = await client.post("/v1/threads", json={"agent_id": AGENT})
            assert made.status_code == 201, made.text
            thread_id = made.json()["id"]
            messages = [
                {"role": "user" if i % 2 == 0 else "assistant", "content": _sentence(rng)}
                for i in range(20)
            ]
            batch = await client.post(
                f"/v1/threads/{thread_id}/entries/batch", json={"messages": messages}
            )
            assert batch.status_code == 201, batch.text
            self.threads.append(thread_id)

    async def _client(self, client: httpx.AsyncClient, n: int) -> None:
        rng = random.Random(n)
        ops, weights = [op for op, _ in MIX], [w for _, w in MIX]
        seq = 0
        while not self._stop.is_set():
            op = rng.choices(ops, weights)[0]
            thread_id = rng.choice(self.threads)
            send: Callable[[], Awaitable[httpx.Response]]
            if op == "history":
                path = f"/v1/threads/{thread_id}/entries"
                send = functools.partial(client.get, path, params={"limit": 20})
                want = 200
            elif op == "append":
                seq += 1
                key = f"c{n}-{seq}-{uuid.uuid4().hex[:6]}"
                body = {"role": "user", "content": f"write {key}"}
                path = f"/v1/threads/{thread_id}/entries"
                send = functools.partial(
                    client.post, path, json=body, headers={"Idempotency-Key": key}
                )
                self.sent[key] = thread_id
                want = 201
            elif rng.random() < 0.5:
                query = {"query": " ".join(rng.sample(WORDS, 2)), "k": 10, "mode": "keyword"}
                send = functools.partial(client.post, "/v1/search", json=query)
                want = 200
            else:
                path = f"/v1/threads/{thread_id}/context"
                ask: dict[str, Any] = {"max_tokens": 400, "agent_id": AGENT}
                send = functools.partial(client.post, path, json=ask)
                want = 200
            if await self._call(op, send, want) and op == "append":
                self.acked.add(key)
            if self.pause:
                await asyncio.sleep(self.pause)

    async def _call(
        self, op: str, send: Callable[[], Awaitable[httpx.Response]], want: int
    ) -> bool:
        """``send`` until it answers ``want``: retried (same request, same idempotency
        key) on a connection error or 502/503/504, given up after ``GIVE_UP_SECONDS``
        and three tries (one slow answer on a loaded machine is not a give-up)."""
        f = self.figures
        start = time.perf_counter()
        tries = 0
        while True:
            retry = True
            try:
                response = await send()
            except httpx.TransportError as error:
                kind = type(error).__name__
            else:
                if response.status_code == want:
                    f.attempts[self.phase] += 1
                    f.latency[op].append(time.perf_counter() - start)
                    return True
                kind = f"{response.status_code} {response.text[:80]!r}"
                retry = response.status_code in RETRY_STATUSES
            # Counted in the phase the attempt ended in (a call in flight when a node
            # is killed fails in the "kill" phase).
            phase = self.phase
            f.attempts[phase] += 1
            f.failed[phase] += 1
            if not retry:
                f.unexpected[f"{op} {kind}"] += 1
                return False
            f.failures[f"{phase} {op} {kind}"] += 1
            tries += 1
            if tries >= 3 and time.perf_counter() - start > GIVE_UP_SECONDS:
                f.gave_up[op] += 1
                return False
            await asyncio.sleep(0.05)

    async def _sample_memory(self) -> None:
        while not self._stop.is_set():
            for node in self.nodes:
                self.figures.rss_mb.setdefault(node.name, []).append(
                    await asyncio.to_thread(node.rss_mb)
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=1.0)

    async def _verify(self, client: httpx.AsyncClient) -> None:
        """Read every thread back: acknowledged appends once each, no append twice."""
        stored: Counter[str] = Counter()
        for thread_id in self.threads:
            cursor: str | None = None
            while True:
                params: dict[str, Any] = {"limit": 1000}
                if cursor:
                    params["cursor"] = cursor
                page = await client.get(f"/v1/threads/{thread_id}/entries", params=params)
                assert page.status_code == 200, page.text
                body = page.json()
                for entry in body["items"]:
                    content = entry.get("content")
                    if isinstance(content, str) and content.startswith("write "):
                        stored[content.removeprefix("write ")] += 1
                cursor = body.get("next_cursor")
                if not cursor:
                    break
        f = self.figures
        f.acknowledged = len(self.acked)
        f.lost = sorted(k for k in self.acked if stored[k] == 0)
        f.duplicated = sorted(k for k, n in stored.items() if n > 1)
        f.unacknowledged_stored = sum(1 for k in self.sent if k not in self.acked and stored[k])
        assert set(stored) <= set(self.sent), "entries nobody sent"


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


# -- the faults -----------------------------------------------------------------------


@dataclass
class Chaos:
    """The timeline: ``steady`` s of load, one node SIGKILLed (down ``down`` s, then
    restarted), a rolling restart of every node, then ``after`` s of load."""

    steady: float = 1.5
    down: float = 1.0
    after: float = 1.0
    victim: int = 1  # index of the node killed

    async def __call__(self, scenario: Scenario) -> None:
        nodes, balancer = scenario.nodes, scenario.balancer
        await asyncio.sleep(self.steady)
        victim = nodes[self.victim]
        scenario.mark("kill", f"SIGKILL {victim.name}")
        await asyncio.to_thread(victim.kill)
        await asyncio.sleep(self.down)
        scenario.mark("kill", f"restart {victim.name}")
        await asyncio.to_thread(_restart, victim, balancer)
        scenario.mark("rolling")
        for node in nodes:
            scenario.mark("rolling", f"replace {node.name}")
            await asyncio.to_thread(_replace, node, balancer)
        scenario.mark("after")
        await asyncio.sleep(self.after)


def _restart(node: Node, balancer: Haproxy) -> None:
    node.start()
    node.wait_ready()
    balancer.wait_status(node.name, "UP")


def _replace(node: Node, balancer: Haproxy) -> None:
    """Drain in the balancer, SIGTERM (in-flight requests finish), start, back in."""
    balancer.set_state(node.name, "drain")
    balancer.wait_status(node.name, "DRAIN")
    assert node.stop() == 0, node.log_tail()
    node.start()
    node.wait_ready()
    balancer.set_state(node.name, "ready")
    balancer.wait_status(node.name, "UP")


# -- the figures ----------------------------------------------------------------------


def _quantile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(f: Figures) -> str:
    """The figures as markdown: calls per op, error rate per phase, memory per node."""
    lines = [
        f"### {f.backend}: 3 nodes x {WORKERS} workers behind HAProxy, {f.clients} clients,"
        f" {f.seconds:.1f} s",
        "",
        "| op | calls | calls/s | p50 ms | p99 ms | gave up |",
        "|---|---|---|---|---|---|",
    ]
    every: list[float] = []
    for op, samples in f.latency.items():
        every += samples
        lines.append(_op_row(op, samples, f.gave_up[op], f.seconds))
    lines.append(_op_row("all", every, sum(f.gave_up.values()), f.seconds))
    lines += ["", "| phase | attempts | failed | error rate |", "|---|---|---|---|"]
    for phase in ("steady", "kill", "rolling", "after"):
        rate = f.error_rate(phase) * 100
        lines.append(f"| {phase} | {f.attempts[phase]} | {f.failed[phase]} | {rate:.2f}% |")
    lines += ["", "| node | RSS MB min | max | end |", "|---|---|---|---|"]
    for name, samples in f.rss_mb.items():
        alive = [s for s in samples if s > 0] or [0.0]
        lines.append(f"| {name} | {min(alive):.0f} | {max(alive):.0f} | {samples[-1]:.0f} |")
    lines += [
        "",
        f"appends acknowledged {f.acknowledged}, lost {len(f.lost)}, duplicated"
        f" {len(f.duplicated)}; given up but stored {f.unacknowledged_stored}",
        "events: " + ", ".join(f"{t:.1f}s {e}" for t, e in f.events),
    ]
    lines += [f"failed x{n}: {kind}" for kind, n in f.failures.most_common(8)]
    lines += [f"unexpected x{n}: {kind}" for kind, n in f.unexpected.most_common(5)]
    return "\n".join(lines)


def _op_row(op: str, samples: Sequence[float], gave_up: int, seconds: float) -> str:
    if not samples:
        return f"| {op} | 0 | 0 | - | - | {gave_up} |"
    p50, p99 = _quantile(samples, 0.5) * 1000, _quantile(samples, 0.99) * 1000
    rate = len(samples) / seconds
    return f"| {op} | {len(samples)} | {rate:.0f} | {p50:.1f} | {p99:.1f} | {gave_up} |"
