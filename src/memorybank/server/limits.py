"""Deadlines for slow clients: uvicorn's HTTP protocol with header and body read timeouts.

uvicorn closes a connection idle between requests (``timeout_keep_alive``)
and caps connections per worker (``limit_concurrency``), but it waits for ever
for a request that is sent slowly: half a request line, headers one byte at a
time, or a body at 1 byte/s each hold a connection (and its memory) as long as
the client likes. ``memorybank serve`` therefore runs uvicorn with
``DeadlineHttpProtocol`` (uvicorn's own protocol, httptools when installed,
else h11, with two deadlines added):

* the **header deadline** (``header_timeout`` seconds, default
  ``DEFAULT_HEADER_TIMEOUT``): from a connection's start, or from the first byte
  of a next request, to the end of its headers;
* the **body deadline** (``body_timeout``, default ``DEFAULT_BODY_TIMEOUT``):
  from the end of the headers to the end of the body (whether or not the route
  reads it).

Past either, the client gets ``408`` with the JSON error shape (code
``request_timeout``) when no response has started, and the connection is
closed. The deadlines are read from ``$MEMORYBANK_HEADER_TIMEOUT`` and
``$MEMORYBANK_BODY_TIMEOUT`` (seconds) when a worker starts (``memorybank
serve --header-timeout/--body-timeout`` sets them).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

from memorybank.server.raw_headers import ExactUserHeaders

__all__ = [
    "BODY_TIMEOUT_ENV",
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_LIMIT_CONCURRENCY",
    "HEADER_TIMEOUT_ENV",
    "SERVE_PROTOCOL",
    "DeadlineHttpProtocol",
    "ServeHttpProtocol",
    "read_timeouts",
]

#: Seconds a client has to send a request's headers.
DEFAULT_HEADER_TIMEOUT = 10.0
#: Seconds a client has to send a request's body, once its headers are in.
DEFAULT_BODY_TIMEOUT = 30.0
#: Connections (and requests in progress) one worker serves at once; more get 503.
DEFAULT_LIMIT_CONCURRENCY = 1000
HEADER_TIMEOUT_ENV = "MEMORYBANK_HEADER_TIMEOUT"
BODY_TIMEOUT_ENV = "MEMORYBANK_BODY_TIMEOUT"

try:  # uvicorn's choice for http="auto"
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base
except ImportError:  # pragma: no cover - without httptools
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Base  # type: ignore[assignment]


#: Seconds a timed-out connection stays open after its 408, dropping what arrives.
LINGER = 1.0


def read_timeouts() -> tuple[float, float]:
    """The header and body deadlines (seconds) from the environment, else the defaults."""

    def one(name: str, default: float) -> float:
        raw = os.environ.get(name)
        if not raw:
            return default
        value = float(raw)
        if not value > 0:
            raise ValueError(f"${name} must be a positive number of seconds, not {raw!r}")
        return value

    return one(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT), one(
        BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT
    )


def _timeout_response(what: str) -> bytes:
    body = json.dumps(
        {
            "code": "request_timeout",
            "message": f"the request's {what} did not arrive in time",
            "request_id": uuid.uuid4().hex,
        }
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


class DeadlineHttpProtocol(_Base):
    """uvicorn's HTTP protocol with the header and body deadlines of the module docstring."""

    _timeouts: tuple[float, float] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cls = type(self)
        if cls._timeouts is None:
            cls._timeouts = read_timeouts()
        self._header_timeout, self._body_timeout = cls._timeouts
        self._deadline: asyncio.TimerHandle | None = None
        self._watched: Any = None  # the request cycle the deadline is about
        self._awaiting = "headers"
        self._lingering = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self._header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # after a 408: the rest of a late request is dropped
            return
        super().data_received(data)
        cycle = self.cycle
        if cycle is not None and cycle is not self._watched:  # a request's headers are in
            self._watched = cycle
            self._disarm()
            if cycle.more_body:
                self._arm(self._body_timeout, "body")
        elif self._awaiting == "body" and cycle is not None and not cycle.more_body:
            self._disarm()  # the body is in
        if self._deadline is None and (cycle is None or cycle.response_complete):
            # bytes of a next request (a complete one would have made a new cycle)
            if cycle is None or not cycle.more_body:
                self._arm(self._header_timeout, "headers")

    def on_response_complete(self) -> None:
        super().on_response_complete()
        cycle = self.cycle
        if self._awaiting == "headers" or (cycle is not None and not cycle.more_body):
            self._disarm()  # the keep-alive timeout governs an idle connection

    def _arm(self, seconds: float, what: str) -> None:
        self._disarm()
        self._awaiting = what
        self._deadline = self.loop.call_later(seconds, self._expired, what)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, what: str) -> None:
        self._deadline = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and cycle.response_started and not cycle.response_complete:
            transport.close()  # a response is under way: nothing more can be said
            return
        transport.write(_timeout_response(what))
        # A lingering close: closing now, while the client still sends, makes the kernel
        # answer its next bytes with a reset, and a reset can discard the 408 unread in
        # the client's buffer. So the write side is shut (the client reads the 408 and
        # the end), what still arrives is dropped, and the socket closes a moment later.
        self._lingering = True
        if cycle is not None:  # the app, if still reading, sees the client gone now
            cycle.disconnected = True
            cycle.message_event.set()
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(LINGER, transport.close)


class ServeHttpProtocol(ExactUserHeaders, DeadlineHttpProtocol):
    """What ``memorybank serve`` runs: ``X-User-Id`` exactly as sent
    (``memorybank.server.raw_headers``) and the header and body deadlines above."""


#: ``uvicorn.run(http=...)``: an import string, so that worker processes load it too.
SERVE_PROTOCOL = f"{__name__}:ServeHttpProtocol"
