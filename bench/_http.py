"""A lean HTTP/1.1 load generator: one keep-alive connection per client task.

The server benchmark measures the *server*. A full-featured Python client
(httpx) spends about a millisecond of its own CPU per request, in the same
process as the other clients, which then hides the server behind the client's
cost. Load generators (wrk, oha) avoid that by doing the bare minimum; this is
the same idea in ~80 lines of asyncio: real HTTP/1.1 over TCP to the real
server, every request fully parsed by it and every response fully read here
(status line, headers, ``Content-Length`` body; no chunked encoding, which the
server does not send for these routes).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

__all__ = ["Connection", "HttpStatusError"]

#: A connection idle this long is replaced before use (uvicorn closes idle
#: keep-alive connections after 5 s; a request must never race that close).
_MAX_IDLE_SECONDS = 1.0


class HttpStatusError(Exception):
    """The server answered with a status outside 2xx."""


class Connection:
    """One keep-alive HTTP/1.1 connection to ``127.0.0.1:port``."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self._port = port
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in {"Host": "127.0.0.1", **headers}.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._used = 0.0

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        now = time.monotonic()
        if now - self._used > _MAX_IDLE_SECONDS:
            await self.close()
        self._used = now
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self._port)
            sock = self._writer.get_extra_info("socket")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self._reader, self._writer

    async def request(self, method: str, target: str, body: object = None) -> bytes:
        """Send one request; the response body (``HttpStatusError`` unless 2xx)."""
        reader, writer = await self._open()
        payload = b"" if body is None else json.dumps(body).encode()
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed}"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        writer.write(head.encode("latin-1") + b"\r\n" + payload)
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionError(f"{method} {target}: the server closed the connection")
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        data = await reader.readexactly(length) if length else b""
        self._used = time.monotonic()
        status = int(status_line.split(b" ", 2)[1])
        if not 200 <= status < 300:
            raise HttpStatusError(f"{method} {target}: {status} {data[:200]!r}")
        return data

    async def close(self) -> None:
        """Close the connection."""
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()
            self._reader = self._writer = None
