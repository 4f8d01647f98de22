"""A real OpenAI-compatible chat-completions server in a thread, for the extractor tests.

Its "model" reads the text after ``Text:`` in the user message and answers
what ``RuleExtractor`` finds there, in the JSON schema's shape (so an
``LLMExtractor`` pointed at it behaves like a small, deterministic model).
A test can plan answers instead: raw content, an HTTP status, a delay.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memorybank.extract import Extraction, RuleExtractor

MODEL = "test-extract"


@dataclass
class Planned:
    """One planned answer. ``content`` replaces the model's JSON; ``status`` != 200 or
    ``raw`` sends that body as is; ``choice`` merges into ``choices[0]``."""

    status: int = 200
    content: str | None = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    choice: dict[str, Any] = field(default_factory=dict)


def as_answer(extraction: Extraction) -> dict[str, Any]:
    """An extraction in the schema's JSON shape (what a model would send)."""
    return {
        "entities": [
            {"name": e.name, "type": e.type, "aliases": list(e.aliases), "confidence": e.confidence}
            for e in extraction.entities
        ],
        "relations": [
            {
                "source": r.source,
                "type": r.type,
                "target": r.target,
                "valid_at": None if r.valid_at is None else r.valid_at.date().isoformat(),
                "invalid_at": None if r.invalid_at is None else r.invalid_at.date().isoformat(),
                "confidence": r.confidence,
            }
            for r in extraction.relations
        ],
        "observations": [
            {"entity": o.entity, "text": o.text, "confidence": o.confidence}
            for o in extraction.observations
        ],
        "facts": [
            {
                "subject": f.subject,
                "attribute": f.attribute,
                "value": f.value,
                "statement": f.statement,
                "confidence": f.confidence,
            }
            for f in extraction.facts
        ],
    }


class ChatServer:
    def __init__(self) -> None:
        self.plan: list[Planned] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        #: every request waits until this is set (tests that count requests in flight)
        self.gate = threading.Event()
        self.gate.set()
        #: connections accepted, and connections the client closed (the server never does)
        self.accepted = 0
        self.closed = 0
        self.peers: list[tuple[str, int]] = []  # the client's address of each request
        self.changed = threading.Condition(self.lock)
        chat = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                with chat.lock:
                    chat.accepted += 1
                try:
                    super().handle()  # requests until the client closes the connection
                finally:
                    with chat.lock:
                        chat.closed += 1
                        chat.changed.notify_all()

            def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                with chat.lock:
                    chat.requests.append(body)
                    chat.peers.append(self.client_address)
                    chat.arrivals.append(time.monotonic())
                    chat.headers.append({k.lower(): v for k, v in self.headers.items()})
                    planned = chat.plan.pop(0) if chat.plan else Planned()
                    chat.in_flight += 1
                    chat.most_in_flight = max(chat.most_in_flight, chat.in_flight)
                try:
                    self.answer(body, planned)
                finally:
                    with chat.lock:
                        chat.in_flight -= 1

            def answer(self, body: dict[str, Any], planned: Planned) -> None:
                chat.gate.wait(10)
                if planned.delay:
                    time.sleep(planned.delay)
                if planned.status != 200 or planned.raw is not None:
                    self.send(planned.status, planned.raw or b"", planned.headers)
                    return
                if self.path != "/v1/chat/completions":
                    self.send(404, b'{"error": {"message": "no route"}}', {})
                    return
                if body.get("model") != MODEL:
                    self.send(404, b'{"error": {"message": "unknown model"}}', {})
                    return
                content = planned.content
                if content is None:
                    prompt = body["messages"][-1]["content"]
                    text = prompt.split("Text:\n", 1)[1]
                    known = json.loads(prompt.split("Known entities: ", 1)[1].split("\n", 1)[0])
                    found = RuleExtractor().extract(text, known_entities=known)
                    content = json.dumps(as_answer(found))
                choice = {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "finish_reason": "stop",
                    **planned.choice,
                }
                payload = {"id": "x", "object": "chat.completion", "model": MODEL,
                           "choices": [choice]}  # fmt: skip
                self.send(200, json.dumps(payload).encode(), {"Content-Type": "application/json"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def wait_closed(self, count: int, within: float = 10.0) -> bool:
        """Wait until ``count`` connections have been closed by their clients."""
        with self.changed:
            return self.changed.wait_for(lambda: self.closed >= count, within)

    def add(self, *answers: Planned) -> None:
        with self.lock:
            self.plan.extend(answers)


def running() -> Iterator[ChatServer]:
    """Fixture body: a started server, shut down afterwards."""
    chat = ChatServer()
    chat.thread.start()
    try:
        yield chat
    finally:
        chat.server.shutdown()
        chat.server.server_close()
        chat.thread.join(5)
