"""A scripted Anthropic Messages API on a loopback port, for the SDK's real client.

``scripted_api(replies)`` serves ``POST /v1/messages`` with uvicorn in a thread:
each request is recorded (its JSON body) and answered with the next reply, a
``Message`` in the API's own shape (``tool_use`` blocks, ``stop_reason`` ...).
The SDK's client and tool runner talk to it over TCP as they would to the API,
pointed at it with ``base_url``; nothing reaches the network.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

_START_TIMEOUT = 30.0


@dataclass
class ScriptedAPI:
    """The running server: its ``url`` and the request bodies it was sent."""

    url: str
    replies: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)


def tool_use(*calls: dict[str, Any], turn: int = 0) -> dict[str, Any]:
    """A reply asking for the memory tool with each of ``calls`` (its inputs)."""
    content = [
        {"type": "tool_use", "id": f"toolu_{turn}_{i}", "name": "memory", "input": call}
        for i, call in enumerate(calls)
    ]
    return _message(content, "tool_use", turn)


def text(answer: str, turn: int = 0) -> dict[str, Any]:
    """A final reply: ``answer`` and ``end_turn``."""
    return _message([{"type": "text", "text": answer}], "end_turn", turn)


def _message(content: list[dict[str, Any]], stop: str, turn: int) -> dict[str, Any]:
    return {
        "id": f"msg_{turn}",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def scripted_api(replies: Sequence[dict[str, Any]]) -> Iterator[ScriptedAPI]:
    port = _free_port()
    api = ScriptedAPI(f"http://127.0.0.1:{port}", list(replies))

    async def messages(request: Request) -> JSONResponse:
        api.requests.append(await request.json())
        if not api.replies:
            error = {"type": "invalid_request_error", "message": "script exhausted"}
            return JSONResponse({"type": "error", "error": error}, status_code=400)
        return JSONResponse(api.replies.pop(0))

    app = Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the scripted Messages API did not start")
        time.sleep(0.02)
    try:
        yield api
    finally:
        server.should_exit = True
        thread.join(timeout=_START_TIMEOUT)
