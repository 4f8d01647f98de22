"""A real OpenAI-compatible chat-completions server in a thread, scripted per test package.

One server for every test of a client of ``/v1/chat/completions`` (``LLMJudge``,
``LLMReranker``, ``LLMExtractor``): each package gives its "model", a function from the
request body to the answer's content (``ScriptedLLM(MODEL, answer)``), and a test can plan
answers instead (``Planned``: raw content, an HTTP status, a raw body, headers, a delay,
the usage reported, fields of ``choices[0]``).

What the server records, for the tests to check: every request body, its headers, the
client's address and arrival time; connections accepted and closed by the client; the
most requests in flight. ``gate`` holds every request until it is set (it is set at
first), and ``release`` ends a planned ``delay`` early (it is set at shutdown), so a test
never waits on time it does not mean to measure.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memorybank.extract import Extraction, RuleExtractor

__all__ = [
    "Answer",
    "JudgeModel",
    "Planned",
    "ScriptedLLM",
    "as_extraction_answer",
    "extraction_model",
    "reversed_ranking",
    "running",
    "shown",
]

#: The scripted model: the request body -> the answer's ``message.content``.
Answer = Callable[[dict[str, Any]], str]


@dataclass
class Planned:
    """One planned answer.

    ``content`` replaces the model's answer; ``status`` != 200 or ``raw`` sends ``raw``
    as is (a non-200 without ``raw`` sends a short JSON error) with ``headers``;
    ``delay`` seconds pass first (or until ``release``); ``tokens`` is the
    ``usage.total_tokens`` reported (``None``: the server's default); ``choice`` merges
    into ``choices[0]``."""

    status: int = 200
    content: str | None = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    tokens: int | None = None
    choice: dict[str, Any] = field(default_factory=dict)


class ScriptedLLM:
    """The server (not started: ``running`` starts and stops it)."""

    def __init__(self, model: str, answer: Answer, *, tokens: int | None = None) -> None:
        self.model = model
        self.answer = answer
        #: ``usage.total_tokens`` of an answer that plans none (``None``: no usage)
        self.tokens = tokens
        self.plan: list[Planned] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[tuple[str, int]] = []  # the client's address of each request
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.in_flight = 0
        self.most_in_flight = 0
        #: connections accepted, and connections the client closed (the server never does)
        self.accepted = 0
        self.closed = 0
        #: every request waits until this is set (tests that count requests in flight)
        self.gate = threading.Event()
        self.gate.set()
        #: a planned delay stops once this is set (at shutdown, or by a test)
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                with server.lock:
                    server.accepted += 1
                try:
                    super().handle()  # requests until the client closes the connection
                finally:
                    with server.lock:
                        server.closed += 1
                        server.changed.notify_all()

            def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.peers.append(self.client_address)
                    server.arrivals.append(time.monotonic())
                    planned = server.plan.pop(0) if server.plan else Planned()
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    self.reply(body, planned)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def reply(self, body: dict[str, Any], planned: Planned) -> None:
                server.gate.wait(10)
                if planned.delay:
                    server.release.wait(planned.delay)
                if planned.status != 200 or planned.raw is not None:
                    raw = planned.raw
                    if raw is None:
                        raw = b'{"error": {"message": "planned"}}'
                    self.send(planned.status, raw, planned.headers)
                    return
                if self.path != "/v1/chat/completions" or body.get("model") != server.model:
                    self.send(404, b'{"error": {"message": "unknown route or model"}}', {})
                    return
                content = planned.content
                if content is None:
                    content = server.answer(body)
                choice = {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "finish_reason": "stop",
                    **planned.choice,
                }
                payload: dict[str, Any] = {
                    "id": "x",
                    "object": "chat.completion",
                    "model": server.model,
                    "choices": [choice],
                }
                tokens = planned.tokens if planned.tokens is not None else server.tokens
                if tokens is not None:
                    payload["usage"] = {"total_tokens": tokens}
                self.send(200, json.dumps(payload).encode(), {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def add(self, *answers: Planned) -> None:
        """Plan the next answers, in order."""
        with self.lock:
            self.plan.extend(answers)

    def wait_closed(self, count: int, within: float = 10.0) -> bool:
        """Wait until ``count`` connections have been closed by their clients."""
        with self.changed:
            return self.changed.wait_for(lambda: self.closed >= count, within)


def running(server: ScriptedLLM) -> Iterator[ScriptedLLM]:
    """Fixture body: ``server`` started, and shut down afterwards."""
    server.thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.server.shutdown()
        server.server.server_close()
        server.thread.join(5)


# -- the test packages' models ---------------------------------------------------------

_PASSAGE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)
_FACT = re.compile(r'^Fact: (".*") \(said [^)]*\)$', re.M)
_CANDIDATE = re.compile(r'^- id (\S+): (".*") \(said [^)]*\)$', re.M)


def reversed_ranking(body: dict[str, Any]) -> str:
    """``LLMReranker``'s model: the numbered passages of the prompt, last first (so a
    search it reranks comes back reversed)."""
    numbers = [int(n) for n in _PASSAGE.findall(body["messages"][-1]["content"])]
    return json.dumps({"ranking": numbers[::-1]})


def shown(request: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The fact's text and the candidates (id -> text) an ``LLMJudge`` request showed
    (``Fact: "..."`` and ``- id <id>: "..."`` lines, as ``LLMJudge.request_body`` writes)."""
    prompt = request["messages"][-1]["content"]
    match = _FACT.search(prompt)
    assert match is not None, prompt
    return json.loads(match[1]), {i: json.loads(t) for i, t in _CANDIDATE.findall(prompt)}


class JudgeModel:
    """``LLMJudge``'s model: for each candidate shown, the relation ``says`` gave the pair
    of texts (``"neither"`` when none)."""

    def __init__(self) -> None:
        #: frozenset({text, text}) -> relation the model answers for that pair
        self.script: dict[frozenset[str], str] = {}

    def says(self, relation: str, a: str, b: str) -> None:
        """Script the model: the pair of texts ``a``, ``b`` is ``relation``."""
        self.script[frozenset({a, b})] = relation

    def __call__(self, body: dict[str, Any]) -> str:
        fact, candidates = shown(body)
        decisions = [
            {"id": i, "relation": self.script.get(frozenset({fact, t}), "neither")}
            for i, t in candidates.items()
        ]
        return json.dumps({"decisions": decisions})


def as_extraction_answer(extraction: Extraction) -> dict[str, Any]:
    """An extraction in ``LLMExtractor``'s JSON schema's shape (what a model would send)."""
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


def extraction_model(body: dict[str, Any]) -> str:
    """``LLMExtractor``'s model: what ``RuleExtractor`` finds in the text after ``Text:``
    (so an extractor pointed at it behaves like a small, deterministic model)."""
    prompt = body["messages"][-1]["content"]
    text = prompt.split("Text:\n", 1)[1]
    known = json.loads(prompt.split("Known entities: ", 1)[1].split("\n", 1)[0])
    return json.dumps(as_extraction_answer(RuleExtractor().extract(text, known_entities=known)))
