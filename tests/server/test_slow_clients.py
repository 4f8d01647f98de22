"""Slow clients against a real ``memorybank serve``: a half-sent request and a body at a
trickle get 408 and a closed connection within the configured deadlines; the
number of connections one worker holds is capped. Raw sockets, so nothing
between the test and the server finishes a request on the client's behalf."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.server.test_serve import SERVE, SRC, free_port, wait_up

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 2.0
LIMIT = 6
WAIT = 15.0  # the most any answer below may take: far past the deadlines, far below "never"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp = tmp_path_factory.mktemp("slow")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    command = [
        *SERVE,
        "--url",
        f"sqlite:///{tmp / 'slow.db'}",
        "--port",
        str(port),
        "--header-timeout",
        str(HEADER_TIMEOUT),
        "--body-timeout",
        str(BODY_TIMEOUT),
        "--limit-concurrency",
        str(LIMIT),
    ]
    with open(tmp / "log", "wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_up(f"http://127.0.0.1:{port}", process)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.settimeout(WAIT)
    return sock


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _response(sock: socket.socket) -> bytes:
    """One whole response (headers, then ``Content-Length`` bytes of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed mid-response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed mid-body"
        body += chunk
    return head + b"\r\n\r\n" + body


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _healthz(port: int) -> bytes:
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        return _until_closed(sock)


def test_a_half_sent_request_gets_408_and_is_closed(server: int) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        started = time.monotonic()
        answer = _until_closed(sock)
        elapsed = time.monotonic() - started
    assert _status(answer) == 408
    assert b'"code": "request_timeout"' in answer
    assert elapsed < WAIT  # answered and closed: not held open


def test_headers_trickled_byte_by_byte_do_not_extend_the_deadline(server: int) -> None:
    with _connect(server) as sock:
        request = b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Padding: " + b"a" * 200
        started = time.monotonic()
        closed = False
        for byte in request:  # one byte per 50 ms: 10 s in all, far past the deadline
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.05)
        answer = b"" if closed else _until_closed(sock)
        elapsed = time.monotonic() - started
    assert closed or _status(answer) == 408
    assert elapsed < 10 * HEADER_TIMEOUT


def test_a_body_at_a_trickle_gets_408_and_is_closed(server: int) -> None:
    with _connect(server) as sock:
        sock.sendall(
            b"POST /v1/threads HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        started = time.monotonic()
        answer = b""
        sock.settimeout(0.25)
        while time.monotonic() - started < WAIT:
            try:
                sock.sendall(b" ")  # 4 bytes a second: the body would take minutes
            except OSError:
                break
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            answer += chunk
        elapsed = time.monotonic() - started
    assert _status(answer) == 408, answer
    assert elapsed < WAIT


def test_requests_at_normal_speed_are_served_on_one_connection(server: int) -> None:
    with _connect(server) as sock:
        for _ in range(3):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            answer = _response(sock)
            assert _status(answer) == 200
            time.sleep(HEADER_TIMEOUT * 1.2)  # idle between requests: not a slow request
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert _status(_until_closed(sock)) == 200
    body = b'{"title": "slow but in time"}'
    with _connect(server) as sock:
        sock.sendall(
            b"POST /v1/threads HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        time.sleep(BODY_TIMEOUT / 2)
        sock.sendall(body)
        assert _status(_until_closed(sock)) == 401  # in time: the route answers (no key)


def test_connections_per_worker_are_capped(server: int) -> None:
    held = [_connect(server) for _ in range(LIMIT)]
    try:
        for sock in held:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")  # half a request each
        time.sleep(0.2)
        assert _status(_healthz(server)) == 503
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + WAIT
    while _status(_healthz(server)) != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_the_deadlines_are_in_the_serve_help() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    shown = subprocess.run(
        [*SERVE, "--help"], env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    for option in ("--header-timeout", "--body-timeout", "--limit-concurrency"):
        assert option in shown
