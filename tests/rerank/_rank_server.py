"""A real OpenAI-compatible chat-completions server in a thread, for the reranker tests.

Its "model" reads the numbered passages of the prompt and ranks them in
reverse (the last first), so a search it reranks comes back reversed. A test
can plan answers instead: raw content, an HTTP status, a delay.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "test-rerank"
_PASSAGE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


@dataclass
class Planned:
    """One planned answer: ``content`` replaces the model's; ``status`` != 200 or
    ``raw`` sends ``raw`` as is; ``delay`` seconds pass first."""

    status: int = 200
    content: str | None = None
    raw: bytes = b""
    delay: float = 0.0


class RankServer:
    def __init__(self) -> None:
        self.plan: list[Planned] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[tuple[str, int]] = []  # the client's address of each request
        self.lock = threading.Lock()
        self.release = threading.Event()  # a delayed answer stops waiting once set
        rank = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def send(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with rank.lock:
                    rank.requests.append(body)
                    rank.headers.append({k.lower(): v for k, v in self.headers.items()})
                    rank.peers.append(self.client_address)
                    planned = rank.plan.pop(0) if rank.plan else Planned()
                if planned.delay:
                    rank.release.wait(planned.delay)
                if planned.status != 200 or planned.raw:
                    self.send(planned.status, planned.raw)
                    return
                if self.path != "/v1/chat/completions" or body.get("model") != MODEL:
                    self.send(404, b'{"error": {"message": "unknown model or route"}}')
                    return
                content = planned.content
                if content is None:
                    numbers = [int(n) for n in _PASSAGE.findall(body["messages"][-1]["content"])]
                    content = json.dumps({"ranking": numbers[::-1]})
                choice = {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
                payload = {"id": "x", "object": "chat.completion", "choices": [choice]}
                self.send(200, json.dumps(payload).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def add(self, *answers: Planned) -> None:
        with self.lock:
            self.plan.extend(answers)


def running() -> Iterator[RankServer]:
    """Fixture body: a started server, shut down afterwards."""
    rank = RankServer()
    rank.thread.start()
    try:
        yield rank
    finally:
        rank.release.set()
        rank.server.shutdown()
        rank.server.server_close()
        rank.thread.join(5)
