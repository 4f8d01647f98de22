"""The HTTP service against the library in-process, 1 and 32 concurrent clients.

The server (``memorybank serve``'s app under uvicorn, one worker) runs in a
second process; the clients are asyncio tasks in this one. Workloads:
``GET /cortex/agents/{name}/memory?limit=20`` (history of a 200-message
thread) and ``POST /v1/threads/{id}/entries`` (append one message). The
in-process side makes the same calls on ``AsyncMemory`` with the same number of
tasks, in the same run, on the same kind of store.

Two clients drive the server, one after the other: a lean keep-alive
HTTP/1.1 client (``bench._http``, one connection per task, as a load
generator such as wrk does), which measures the server; and
``httpx.AsyncClient`` (the remote store's client), which shows what a Python
caller pays on top (about a millisecond of client CPU per request).

Run: ``python -m bench.bench_server [--seconds S] [--postgres]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from bench._http import Connection
from bench._util import percentile, table
from bench.bench_remote import _free_port
from memorybank import AsyncMemory
from memorybank.server.keys import KeyRing

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "
AGENT = "bench-agent"

_SERVE = """
import sys, uvicorn
from memorybank.server.app import create_app
uvicorn.run(create_app(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]),
            log_level="warning", access_log=False, ws="none")
"""


Call = Callable[[], Awaitable[object]]


def _same(call: Call) -> Callable[[int], Call]:
    """Every client task makes the same ``call``."""
    return lambda _: call


async def _load(
    calls: Callable[[int], Call], clients: int, seconds: float
) -> tuple[float, float, float]:
    """(calls/s, p50 ms, p99 ms) of ``clients`` tasks, task ``i`` calling
    ``calls(i)`` for ``seconds``."""
    samples: list[float] = []
    stop = time.perf_counter() + seconds

    async def client(call: Call) -> None:
        while time.perf_counter() < stop:
            start = time.perf_counter()
            await call()
            samples.append(time.perf_counter() - start)

    began = time.perf_counter()
    await asyncio.gather(*(client(calls(i)) for i in range(clients)))
    elapsed = time.perf_counter() - began
    return (
        len(samples) / elapsed,
        percentile(samples, 0.5) * 1000,
        percentile(samples, 0.99) * 1000,
    )


async def _seed(url: str, tenant: str) -> tuple[str, str]:
    """A key of ``tenant``, and the agent's 200-message history (the cortex thread)."""
    async with AsyncMemory(url) as memory:
        _, key = await KeyRing(memory.store).create(tenant)
        handle = memory.tenant(tenant)
        thread = f"agent:{AGENT}"
        await handle.ensure_thread(thread)
        await handle.entries.add_many(
            thread, [{"role": "user", "content": f"{i}: {TEXT}"} for i in range(200)]
        )
        append = (await handle.threads.create()).id
        return key, append


def _start(url: str, port: int) -> subprocess.Popen[bytes]:
    """The server process (one uvicorn worker) on ``port``."""
    command = [sys.executable, "-c", _SERVE, url, str(port)]
    return subprocess.Popen(command, env={**os.environ}, stdout=subprocess.DEVNULL)


async def _bench(url: str, seconds: float) -> list[list[object]]:
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    key, append_thread = await _seed(url, tenant)
    port = _free_port()
    server = _start(url, port)
    rows: list[list[object]] = []
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {key}"}
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        lean = [Connection(port, headers) for _ in range(32)]
        async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as http:
            for _ in range(400):
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            async with AsyncMemory(url) as root:
                memory = root.tenant(tenant)
                message = {"role": "user", "content": TEXT}
                history_path = f"/cortex/agents/{AGENT}/memory?limit=20"
                append_path = f"/v1/threads/{append_thread}/entries"

                def lean_calls(method: str, path: str, body: object) -> Callable[[int], Call]:
                    def for_client(i: int) -> Call:
                        return lambda: lean[i].request(method, path, body)

                    return for_client

                async def httpx_history() -> object:
                    response = await http.get(history_path)
                    response.raise_for_status()
                    return response

                async def httpx_append() -> object:
                    response = await http.post(append_path, json=message)
                    response.raise_for_status()
                    return response

                async def lib_history() -> object:
                    return await memory.history(f"agent:{AGENT}", last=20)

                async def lib_append() -> object:
                    return await memory.entries.add(append_thread, message)

                for op, over_http, over_httpx, in_process in (
                    (
                        "history (last 20)",
                        lean_calls("GET", history_path, None),
                        httpx_history,
                        lib_history,
                    ),
                    ("append", lean_calls("POST", append_path, message), httpx_append, lib_append),
                ):
                    for clients in (1, 32):
                        await over_http(0)()
                        await over_httpx()
                        await in_process()  # warm all three
                        lib = await _load(_same(in_process), clients, seconds)
                        web = await _load(over_http, clients, seconds)
                        viax = await _load(_same(over_httpx), clients, seconds)
                        rows.append(
                            [
                                op,
                                clients,
                                f"{lib[0]:,.0f}",
                                f"{web[0]:,.0f}",
                                f"{web[0] / lib[0]:.2f}",
                                f"{lib[1]:.2f} / {lib[2]:.2f}",
                                f"{web[1]:.2f} / {web[2]:.2f}",
                                f"{viax[0]:,.0f}",
                                f"{viax[1]:.2f} / {viax[2]:.2f}",
                            ]
                        )
        for connection in lean:
            await connection.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="load time per cell")
    parser.add_argument("--quick", action="store_true", help="1 s per cell")
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "MEMORYBANK_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
        ),
        help="PostgreSQL URL ('' to skip)",
    )
    args = parser.parse_args()
    seconds = 1.0 if args.quick else args.seconds
    headers = [
        "workload",
        "clients",
        "in-process calls/s",
        "HTTP calls/s",
        "HTTP / in-process",
        "in-process p50 / p99 ms",
        "HTTP p50 / p99 ms",
        "httpx client calls/s",
        "httpx client p50 / p99 ms",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        stores = [("SQLite", f"sqlite:///{Path(tmp) / 'server.db'}")]
        if args.postgres:
            stores.append(("PostgreSQL", f"{args.postgres}?prefix=benchserver_"))
        for name, url in stores:
            print(f"\n### Server vs in-process: {name} ({seconds:g} s per cell)\n")
            try:
                rows = asyncio.run(_bench(url, seconds))
            except Exception as error:  # a server store that is down: report, go on
                print(f"skipped: {type(error).__name__}: {error}")
                continue
            print(table(headers, rows))
    print(
        "\nHTTP: the lean load generator (bench._http); httpx: the same calls through"
        " httpx.AsyncClient.\ntargets: history p50 over HTTP <= 2 ms with 1 client;"
        " HTTP >= 0.50 of in-process throughput with 32 clients"
    )


if __name__ == "__main__":
    main()
