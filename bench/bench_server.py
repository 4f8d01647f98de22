"""The HTTP service against the library in-process, 1 and 32 concurrent clients.

The server (``memorybank serve``'s app under uvicorn, one worker) runs in a
second process; the clients are asyncio tasks on one ``httpx.AsyncClient`` in
this one. Workloads: ``GET /cortex/agents/{name}/memory?limit=20`` (history of a
200-message thread) and ``POST /v1/threads/{id}/entries`` (append one message).
The in-process side makes the same calls on ``AsyncMemory`` with the same
number of tasks, in the same run, on the same kind of store.

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


async def _load(
    call: Callable[[], Awaitable[object]], clients: int, seconds: float
) -> tuple[float, float, float]:
    """(calls/s, p50 ms, p99 ms) of ``clients`` tasks calling ``call`` for ``seconds``."""
    samples: list[float] = []
    stop = time.perf_counter() + seconds

    async def client() -> None:
        while time.perf_counter() < stop:
            start = time.perf_counter()
            await call()
            samples.append(time.perf_counter() - start)

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
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
        async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as http:
            for _ in range(200):
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            async with AsyncMemory(url) as root:
                memory = root.tenant(tenant)
                message = {"role": "user", "content": TEXT}

                async def http_history() -> object:
                    response = await http.get(
                        f"/cortex/agents/{AGENT}/memory", params={"limit": 20}
                    )
                    response.raise_for_status()
                    return response

                async def http_append() -> object:
                    response = await http.post(f"/v1/threads/{append_thread}/entries", json=message)
                    response.raise_for_status()
                    return response

                async def lib_history() -> object:
                    return await memory.history(f"agent:{AGENT}", last=20)

                async def lib_append() -> object:
                    return await memory.entries.add(append_thread, message)

                for op, over_http, in_process in (
                    ("history (last 20)", http_history, lib_history),
                    ("append", http_append, lib_append),
                ):
                    for clients in (1, 32):
                        await over_http()
                        await in_process()  # warm both
                        lib = await _load(in_process, clients, seconds)
                        web = await _load(over_http, clients, seconds)
                        rows.append(
                            [
                                op,
                                clients,
                                f"{lib[0]:,.0f}",
                                f"{web[0]:,.0f}",
                                f"{web[0] / lib[0]:.2f}",
                                f"{lib[1]:.2f} / {lib[2]:.2f}",
                                f"{web[1]:.2f} / {web[2]:.2f}",
                            ]
                        )
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
        "\ntargets: history p50 over HTTP <= 2 ms with 1 client; HTTP >= 0.50 of in-process"
        " throughput with 32 clients"
    )


if __name__ == "__main__":
    main()
