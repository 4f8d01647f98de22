"""The remote store: ``Memory("http://...")`` against ``Memory("sqlite:///...")`` in-process.

One client, sequential calls (latency, not throughput): append one message
(durable on return) and read the last 20 of a 200-entry thread. The server
runs in a second process (uvicorn, one worker) over the same kind of SQLite
file, so the gap is HTTP + JSON + the server's own work.

Run: ``python -m bench.bench_remote [--repeat N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench._util import measure, table
from memorybank import Memory
from memorybank.server.keys import KeyRing
from memorybank.stores.sqlite._async import AsyncSQLiteStore

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "

_SERVE = """
import sys, uvicorn
from memorybank.server.app import create_app
app = create_app(sys.argv[1])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
            access_log=False, ws="none")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _make_key(path: Path, tenant: str) -> str:
    store = AsyncSQLiteStore(path)
    try:
        _, secret = await KeyRing(store).create(tenant)
        return secret
    finally:
        await store.close()


def _run(memory: Memory, repeat: int) -> tuple[float, float]:
    append_thread = memory.threads.create().id
    n = iter(range(10**9))
    append = measure(
        lambda: memory.remember(append_thread, "user", f"{next(n)} {TEXT}"), repeat=repeat
    )
    read_thread = memory.threads.create().id
    memory.entries.add_many(read_thread, [{"role": "user", "content": TEXT}] * 200)
    last20 = measure(lambda: memory.history(read_thread, last=20), repeat=repeat)
    return append.p50, last20.p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        local_path, server_path = Path(tmp) / "local.db", Path(tmp) / "server.db"
        key = asyncio.run(_make_key(server_path, "bench"))
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", _SERVE, f"sqlite:///{server_path}", str(port)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            with Memory(f"sqlite:///{local_path}") as memory:
                local = _run(memory, args.repeat)
            with Memory(url, api_key=key) as memory:
                remote = _run(memory, args.repeat)
            with httpx.Client() as client:
                ping = measure(lambda: client.get(f"{url}/healthz"), repeat=args.repeat).p50
        finally:
            server.terminate()
            server.wait(10)
    rows = [
        ("append 1 message", local[0], remote[0], remote[0] - local[0]),
        ("last 20 of 200", local[1], remote[1], remote[1] - local[1]),
        ("GET /healthz (no store, no key)", 0.0, ping, ping),
    ]
    print(table(["p50 (ms)", "in-process SQLite", "HTTP -> SQLite", "difference"], rows))


if __name__ == "__main__":
    main()
