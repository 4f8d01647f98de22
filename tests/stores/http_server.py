"""A live memorybank server for tests: uvicorn on a free loopback port, in a thread.

The server's store, its ``AsyncMemory`` and its API keys are made inside the
server's own event loop (async drivers are bound to the loop that opened
them); tests talk to it over real TCP, as any client would.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract._async.store import AsyncStore

_START_TIMEOUT = 30.0


class LoseAnswers:
    """ASGI wrapper: the next ``lose[path]`` requests to ``path`` run, but their answer
    is replaced by ``503 store_unavailable`` (an answer lost after the server acted,
    as when a connection drops): what a client may safely retry."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lose: dict[str, int] = {}
        self.seen: dict[str, int] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        self.seen[path] = self.seen.get(path, 0) + 1
        if scope["type"] != "http" or self.lose.get(path, 0) <= 0:
            await self.app(scope, receive, send)
            return
        self.lose[path] -= 1

        async def discard(message: Any) -> None:
            pass

        await self.app(scope, receive, discard)
        body = b'{"code":"store_unavailable","message":"answer lost","request_id":"lost"}'
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": body})


@dataclass
class LiveServer:
    """A running server: its base ``url`` and one API key per tenant asked for."""

    url: str
    keys: dict[str, str]
    tenants: list[str] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None
    memory: AsyncMemory | None = None
    faults: LoseAnswers | None = None

    def run(self, coro: Any) -> Any:
        """Run a coroutine on the server's loop (e.g. on its store) and return its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)


@contextlib.contextmanager
def live_server(
    open_store: Callable[[], AsyncStore],
    tenants: Sequence[str] = (),
    *,
    max_body_bytes: int | None = None,
) -> Iterator[LiveServer]:
    """Serve ``open_store()`` (closed at the end) with the store router; keys for ``tenants``.

    ``tenants`` defaults to one fresh tenant name.
    """
    import uvicorn

    from memorybank.server.app import create_app
    from memorybank.server.keys import KeyRing

    names = list(tenants) or [f"acme-{uuid.uuid4().hex[:8]}"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))  # bound before the server starts: no race for the port
    port = sock.getsockname()[1]
    live = LiveServer(url=f"http://127.0.0.1:{port}", keys={}, tenants=names)
    ready = threading.Event()
    failure: list[BaseException] = []
    box: dict[str, uvicorn.Server] = {}

    async def main() -> None:
        store = open_store()
        memory = AsyncMemory(store)
        try:
            ring = KeyRing(store)
            for name in names:
                _, secret = await ring.create(name)
                live.keys[name] = secret
            options: dict[str, Any] = {}
            if max_body_bytes is not None:
                options["max_body_bytes"] = max_body_bytes
            app = create_app(memory=memory, **options)
            live.faults = LoseAnswers(app)
            config = uvicorn.Config(
                live.faults, log_level="warning", lifespan="on", ws="none", access_log=False
            )
            server = uvicorn.Server(config)
            box["server"] = server
            live.loop = asyncio.get_running_loop()
            live.memory = memory
            ready.set()
            await server.serve(sockets=[sock])
        finally:
            await memory.close()
            await store.close()

    def thread_main() -> None:
        try:
            asyncio.run(main())
        except BaseException as error:  # reported to the test below
            failure.append(error)
        finally:
            ready.set()

    thread = threading.Thread(target=thread_main, name=f"memorybank-server-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _START_TIMEOUT
        ready.wait(_START_TIMEOUT)
        while "server" not in box or not box["server"].started:
            if failure or not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test server did not start: {failure!r}")
            time.sleep(0.01)
        yield live
    finally:
        if "server" in box:
            box["server"].should_exit = True
        thread.join(_START_TIMEOUT)
        sock.close()
    if failure:
        raise failure[0]
