"""``X-User-Id`` as a real client sends it, over a raw socket to ``memorybank serve``.

The HTTP parsers drop whitespace around a header's value before the application
sees it, so ``X-User-Id:  alice`` (leading space or tab) or ``alice `` would act as
``alice``. The server refuses every such header (422 naming ``X-User-Id``), and one
given twice, and never shows alice's data for it, also when the request arrives a
byte at a time.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.server.raw_headers import mark_padded
from tests.server.conftest import Api
from tests.server.test_serve import cli, env, free_port, wait_up

__all__ = ["env"]  # the fixture, imported for this module's tests


def _raw(headers: Mapping[str, object]) -> list[tuple[bytes, bytes]]:
    """``headers`` as bytes, as they go on the wire (an id's UTF-8 bytes included)."""
    return [
        (k.encode(), v if isinstance(v, bytes) else str(v).encode()) for k, v in headers.items()
    ]


def _request(port: int, header_lines: bytes, *, byte_by_byte: bool = False) -> tuple[int, str]:
    raw = b"GET /v1/threads HTTP/1.1\r\nHost: x\r\n" + header_lines + b"Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            if byte_by_byte:
                for i in range(len(raw)):
                    sock.sendall(raw[i : i + 1])
                    time.sleep(0.001)
            else:
                sock.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered (400) and closed before the request ended
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    if b"chunked" in head.lower():  # de-chunk
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2 :]
        body = out
    return status, body.decode()


def test_a_user_header_that_is_not_exactly_an_id_is_refused(
    tmp_path: Path, env: dict[str, str]
) -> None:
    url = f"sqlite:///{tmp_path / 'u.db'}"
    key = cli("keys", "create", "--url", url, "--tenant", "acme", env=env).stdout.split()[-1]
    with Memory(url, tenant_id="acme") as memory:
        memory.threads.create(user_id="alice", title="alice-secret")
        memory.threads.create(user_id="zo\u00eb", title="zoe-secret")
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "memorybank.cli", "serve", "--url", url, "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_up(f"http://127.0.0.1:{port}", process)
        auth = f"Authorization: Bearer {key}\r\n".encode()
        status, body = _request(port, auth + b"X-User-Id: alice\r\n")
        assert status == 200 and "alice-secret" in body  # the exact id works
        status, body = _request(port, auth + b"X-User-Id:alice\r\n")
        assert status == 200 and "alice-secret" in body  # no space after the colon is fine
        status, body = _request(port, auth + "X-User-Id: zo\u00eb\r\n".encode())
        assert status == 200 and "zoe-secret" in body  # UTF-8 through uvicorn's parser
        status, body = _request(port, auth + b"X-User-Id-Encoded: zo%C3%AB\r\n")
        assert status == 200 and "zoe-secret" in body
        for line in (
            b"X-User-Id:  alice\r\n",
            b"X-User-Id: \talice\r\n",
            b"X-User-Id:\talice\r\n",
            b"x-user-id: alice \r\n",
            b"X-USER-ID: alice\t\r\n",
            b"X-User-Id: alice\r\nX-User-Id: alice\r\n",
            b"X-User-Id: al\x01ice\r\n",
            b"X-User-Id-Encoded:  alice\r\n",
            b"X-User-Id-Encoded: alice\r\nX-User-Id: alice\r\n",
        ):
            for slow in (False, True):
                status, body = _request(port, auth + line, byte_by_byte=slow)
                assert "alice-secret" not in body, line
                assert 400 <= status < 500, (line, status, body)
                if status == 422:
                    assert json.loads(body)["field"] == "X-User-Id", body
        # whitespace refusals come after authentication: a stranger learns nothing
        status, _ = _request(port, b"X-User-Id:  alice\r\n")
        assert status == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.mark.parametrize(
    "line",
    [
        b"X-User-Id:  alice",
        b"X-User-Id:\talice",
        b"x-user-id: alice ",
        b"X-User-Id: alice\t",
        b"X-User-Id-Encoded:  alice",
        b"x-user-id-encoded: alice ",
    ],
)
def test_padded_lines_are_renamed_wherever_the_reads_split(line: bytes) -> None:
    request = b"GET / HTTP/1.1\r\nHost: x\r\n" + line + b"\r\nA: b\r\n\r\n"
    expected = request.replace(line.split(b":")[0], b"x-user-id-padded")
    for i in range(len(request)):
        for j in range(i, len(request), 3):
            tail, held, out = b"", b"", b""
            for chunk in (request[:i], request[i:j], request[j:]):
                passed, held = mark_padded(tail, held + chunk)
                tail, out = (tail + passed)[-2:], out + passed
            assert (out, held) == (expected, b""), (i, j)
    exact = request.replace(line, b"X-User-Id: alice")
    for i in range(len(exact)):
        first, held = mark_padded(b"", exact[:i])
        second, held = mark_padded((b"" + first)[-2:], held + exact[i:])
        assert (first + second, held) == (exact, b"")


async def test_user_ids_travel_as_utf8_or_percent_encoded_with_accurate_errors(api: Api) -> None:
    memory = api.memory.tenant("acme")
    await memory.scoped(user_id="zo\u00eb").threads.create(title="zoe-secret")
    key = await api.key("acme")

    async def titles(header: dict[str, bytes]) -> list[str]:
        answer = await api.client.get("/v1/threads", headers=_raw({**key, **header}))
        assert answer.status_code == 200, answer.text
        return [t["title"] for t in answer.json()["items"]]

    assert await titles({"X-User-Id": "zo\u00eb".encode()}) == ["zoe-secret"]
    assert await titles({"X-User-Id-Encoded": b"zo%C3%AB"}) == ["zoe-secret"]
    assert await titles({"x-user-id-encoded": b"zo%c3%ab"}) == ["zoe-secret"]
    # never normalised: the NFD and full-width forms are other users, not errors
    assert await titles({"X-User-Id": "zoe\u0308".encode()}) == []
    assert await titles({"X-User-Id": "\uff5a\uff4f\u00eb".encode()}) == []

    async def refused(header: dict[str, bytes]) -> str:
        answer = await api.client.get("/v1/threads", headers=_raw({**key, **header}))
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "X-User-Id"
        assert "zoe-secret" not in answer.text
        message: str = answer.json()["message"]
        return message

    assert "U+00A0 NO-BREAK SPACE" in await refused({"X-User-Id": "zo\u00a0e".encode()})
    assert "U+00A0 NO-BREAK SPACE" in await refused({"X-User-Id-Encoded": b"zo%C2%A0e"})
    assert "U+200B ZERO WIDTH SPACE" in await refused({"X-User-Id": "zo\u200be".encode()})
    assert "control character" in await refused({"X-User-Id-Encoded": b"zo%01e"})
    latin1 = await refused({"X-User-Id": "zo\u00eb".encode("latin-1")})
    assert "not UTF-8" in latin1 and "X-User-Id-Encoded" in latin1
    assert "not UTF-8" in await refused({"X-User-Id-Encoded": b"zo%EB"})
    assert "percent-encoded" in await refused({"X-User-Id-Encoded": b"zo%zz"})
    assert "percent-encoded" in await refused({"X-User-Id-Encoded": "zoë".encode()})
    both = await refused({"X-User-Id": b"alice", "X-User-Id-Encoded": b"alice"})
    assert "more than once" in both
    # the refusals come after authentication: a stranger learns nothing
    stranger = await api.client.get("/v1/threads", headers=_raw({"X-User-Id-Encoded": b"zo%zz"}))
    assert stranger.status_code == 401
