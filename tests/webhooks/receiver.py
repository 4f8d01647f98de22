"""A real HTTP receiver of webhook deliveries for the tests: a ``ThreadingHTTPServer`` on a
free loopback port, in a thread of the test process.

Each request gets the answer the test's *plan* gives for it (``plan(n)``, ``n`` the
request's number from 0): ``"ok"`` (204), ``"fail"`` (500), ``"hang"`` (no answer until
the receiver closes: the worker's timeout ends the attempt) or ``"drop"`` (the
connection is closed without an answer). A request whose body arrives cut short (its
sender was killed while sending) is ``"cut"``: closed without an answer. Every request
is kept (headers, body, the plan's answer, whether its signature verified) in arrival
order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memorybank.webhooks import (
    EVENT_ID_HEADER,
    SIGNATURE_HEADER,
    SignatureError,
    verify_signature,
)

__all__ = ["Delivery", "Receiver"]


@dataclass(frozen=True)
class Delivery:
    """One request the receiver got."""

    path: str
    event_id: str | None
    signature: str | None
    body: bytes
    answer: str
    verified: bool

    @property
    def event(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.body)
        return found


class Receiver:
    """``with Receiver(secrets) as receiver``: ``receiver.url(path)`` to register.

    ``secrets`` maps a path to the secret its deliveries are verified with (set it
    after registering: ``receiver.secrets[path] = secret``)."""

    def __init__(self, plan: Callable[[int], str] | None = None) -> None:
        self.plan: Callable[[int], str] = plan or (lambda n: "ok")
        self.secrets: dict[str, str] = {}
        self.deliveries: list[Delivery] = []
        self._lock = threading.RLock()
        self._closing = threading.Event()
        self._arrived = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver._handle(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with self._lock:
            expected = int(handler.headers.get("Content-Length", "0"))
            # a sender killed mid-request leaves a body cut short: never acknowledged
            answer = "cut" if len(body) < expected else self.plan(len(self.deliveries))
            signature = handler.headers.get(SIGNATURE_HEADER)
            secret = self.secrets.get(handler.path)
            verified = False
            if secret is not None:
                try:
                    verify_signature(secret, signature, body)
                    verified = True
                except SignatureError:
                    verified = False
            self.deliveries.append(
                Delivery(
                    handler.path,
                    handler.headers.get(EVENT_ID_HEADER),
                    signature,
                    body,
                    answer,
                    verified,
                )
            )
            self._arrived.notify_all()
        if answer == "hang":
            self._closing.wait()
            handler.close_connection = True
            return
        if answer in ("drop", "cut"):
            handler.close_connection = True
            return
        status = 204 if answer == "ok" else 500
        handler.send_response(status)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def acknowledged(self, path: str | None = None) -> list[Delivery]:
        """The deliveries answered 2xx (to ``path`` when given), in arrival order."""
        with self._lock:
            return [
                d for d in self.deliveries if d.answer == "ok" and (path is None or d.path == path)
            ]

    def wait_for(self, done: Callable[[Receiver], bool], timeout: float = 120.0) -> None:
        """Block until ``done(self)`` holds (checked at each arrival); fail after ``timeout``
        (a bound on a hang, never a measured time)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: done(self), timeout=timeout):
                raise AssertionError(
                    f"receiver: condition not met after {timeout} s;"
                    f" {len(self.deliveries)} requests so far"
                )

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
