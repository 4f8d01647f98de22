"""The service on several nodes: three ``memorybank serve --workers 2`` behind HAProxy.

Over one PostgreSQL (a database of the test's own on the shared server) and over
the session's Redis Cluster: a key created through one node works on all, a key
revoked through one is refused by every node within the key cache time; then 32
clients run the mixed load while one node is SIGKILLed and restarted and a
rolling restart replaces all three. Not one acknowledged append may be lost or
stored twice, and every call must succeed on retry (the failed attempts, the
error rate, are reported). The harness is ``tests.reliability._nodes``; ``make
soak`` runs the same scenario for minutes (``python -m bench.soak --nodes``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from memorybank.server.keys import DEFAULT_CACHE_SECONDS
from tests.conftest import require_server
from tests.reliability._nodes import (
    HAPROXY,
    Backend,
    Chaos,
    Haproxy,
    Node,
    Scenario,
    check_keys,
    create_key,
    haproxy_config,
    nodes_over,
    postgres_backend,
    redis_cluster_backend,
    report,
)

# Generous for a loaded machine: each node start (2 workers) costs about 13 s of CPU.
pytestmark = [pytest.mark.server, pytest.mark.timeout(600)]
PAUSE = 0.1  # seconds each client waits between calls: 32 clients, at most 320 calls/s

BACKENDS: dict[str, Callable[[], Backend]] = {
    "postgres": postgres_backend,
    "redis-cluster": redis_cluster_backend,
}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    name = str(request.param)
    try:
        made = BACKENDS[name]()
    except Exception as error:  # the server or the cluster is not there: skip or fail
        require_server(name, error)
        raise
    try:
        yield made
    finally:
        made.drop()


@pytest.fixture
def three_nodes(backend: Backend, tmp_path: Path) -> Iterator[tuple[list[Node], Haproxy]]:
    if not Path(HAPROXY).exists():
        require_server("haproxy", f"no {HAPROXY} (apt-get install haproxy)")
    with nodes_over(backend, tmp_path) as running:
        yield running


def test_three_nodes_under_load_with_a_kill_and_a_rolling_restart(
    backend: Backend, three_nodes: tuple[list[Node], Haproxy], capsys: pytest.CaptureFixture[str]
) -> None:
    nodes, balancer = three_nodes
    keys = check_keys(nodes, "nodes-keys", DEFAULT_CACHE_SECONDS)
    assert max(keys.refused_after.values()) <= DEFAULT_CACHE_SECONDS + 0.5, keys

    _, secret = create_key(nodes[0], "nodes-load")
    scenario = Scenario(backend.name, nodes, balancer, clients=32, pause=PAUSE)
    figures = asyncio.run(scenario.run(Chaos(steady=1.5, down=1.0, after=1.0), secret))
    with capsys.disabled():
        refused = ", ".join(f"{n} {s:.2f} s" for n, s in keys.refused_after.items())
        print(f"\n{report(figures)}\nrevoked key refused after: {refused}\n")

    assert figures.acknowledged > 0
    assert figures.lost == [], f"acknowledged appends lost: {figures.lost[:10]}"
    assert figures.duplicated == [], f"appends stored twice: {figures.duplicated[:10]}"
    assert not figures.unexpected, figures.unexpected
    assert not figures.gave_up, f"calls that failed on every retry: {figures.gave_up}"
    assert [n.starts for n in nodes] == [2, 3, 2]  # n2 was killed and restarted
    # Only the kill loses requests in flight: the rolling restart drains each node first,
    # so no call meets a closed connection or a 502 then. (A node may still answer 503
    # store_unavailable when a store call times out on a loaded machine: reported.)
    assert figures.failed["steady"] == figures.failed["after"] == 0, figures.failures
    dropped = [k for k in figures.failures if k.startswith("rolling ") and " 503 " not in k]
    assert dropped == [], figures.failures


def test_workers_exit_when_the_master_is_killed(tmp_path: Path) -> None:
    """SIGKILL to the ``serve`` master alone: its workers stop listening and exit
    (``memorybank.server.supervise``), instead of serving on without a master."""
    node = Node("solo", f"sqlite:///{tmp_path / 'solo.db'}", tmp_path)
    node.start()
    try:
        node.wait_ready()
        assert node.process is not None
        workers = [pid for pid in node.pids() if pid != node.process.pid]
        assert len(workers) >= 2  # two workers (and uvicorn's resource tracker)
        os.kill(node.process.pid, signal.SIGKILL)  # the master only, not the group
        node.process.wait()
        deadline = time.monotonic() + 30
        while node.pids():
            assert time.monotonic() < deadline, f"workers outlived their master: {node.pids()}"
            time.sleep(0.1)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{node.base}/healthz", timeout=2)
    finally:
        node.close()


def test_the_documented_haproxy_config_is_the_one_tested(tmp_path: Path) -> None:
    """docs/operations.md shows ``haproxy_config`` for nodes on 8081-8083, and HAProxy
    accepts it."""
    shown = haproxy_config(
        8080, [("n1", 8081), ("n2", 8082), ("n3", 8083)], "/run/haproxy/admin.sock"
    )
    text = DOCS.read_text()
    assert f"```haproxy\n{shown}```" in text
    if Path(HAPROXY).exists():
        config = tmp_path / "haproxy.cfg"
        config.write_text(shown.replace("/run/haproxy/admin.sock", str(tmp_path / "admin.sock")))
        check = subprocess.run(
            [HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True, check=False
        )
        assert check.returncode == 0, check.stdout + check.stderr
