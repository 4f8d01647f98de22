"""A real OpenAI-compatible chat-completions server in a thread, scripted for ``LLMJudge``.

Its "model" reads the fact and the candidates from the prompt (``Fact: "..."`` and
``- id <id>: "..."`` lines, as ``LLMJudge.request_body`` writes them) and answers, for
each candidate, the relation ``script`` gives the pair of texts (``"neither"`` when it
gives none). A test can plan answers instead: raw content, an HTTP status, a delay.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "test-judge"
_FACT = re.compile(r'^Fact: (".*") \(said [^)]*\)$', re.M)
_CANDIDATE = re.compile(r'^- id (\S+): (".*") \(said [^)]*\)$', re.M)


@dataclass
class Planned:
    """One planned answer: ``content`` replaces the model's JSON; ``status`` != 200 sends
    an error; ``delay`` seconds before answering; ``tokens`` the usage reported."""

    status: int = 200
    content: str | None = None
    delay: float = 0.0
    tokens: int | None = 40


def shown(request: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The fact's text and the candidates (id -> text) a request showed."""
    prompt = request["messages"][-1]["content"]
    match = _FACT.search(prompt)
    assert match is not None, prompt
    return json.loads(match[1]), {i: json.loads(t) for i, t in _CANDIDATE.findall(prompt)}


class JudgeServer:
    def __init__(self) -> None:
        #: frozenset({text, text}) -> relation the model answers for that pair
        self.script: dict[frozenset[str], str] = {}
        self.plan: list[Planned] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

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
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                with judge.lock:
                    judge.requests.append(body)
                    planned = judge.plan.pop(0) if judge.plan else Planned()
                if planned.delay:
                    time.sleep(planned.delay)
                if planned.status != 200:
                    self.send(planned.status, b'{"error": {"message": "planned"}}')
                    return
                if self.path != "/v1/chat/completions" or body.get("model") != MODEL:
                    self.send(404, b'{"error": {"message": "unknown route or model"}}')
                    return
                content = planned.content
                if content is None:
                    fact, candidates = shown(body)
                    decisions = [
                        {"id": i, "relation": judge.script.get(frozenset({fact, t}), "neither")}
                        for i, t in candidates.items()
                    ]
                    content = json.dumps({"decisions": decisions})
                payload: dict[str, Any] = {
                    "id": "x",
                    "object": "chat.completion",
                    "model": MODEL,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                }
                if planned.tokens is not None:
                    payload["usage"] = {"total_tokens": planned.tokens}
                self.send(200, json.dumps(payload).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def says(self, relation: str, a: str, b: str) -> None:
        """Script the model: the pair of texts ``a``, ``b`` is ``relation``."""
        self.script[frozenset({a, b})] = relation

    def add(self, *answers: Planned) -> None:
        with self.lock:
            self.plan.extend(answers)


def running() -> Iterator[JudgeServer]:
    """Fixture body: a started server, shut down afterwards."""
    server = JudgeServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
        server.thread.join(5)
