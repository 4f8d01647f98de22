"""Schemathesis against the live server's ``/openapi.json``, negative data included:
no 5xx, every response documented and matching its schema. Bounded (a fixed
seed, a few examples per operation) to stay well under two minutes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.test_serve import SRC, free_port, wait_up

CHECKS = ",".join(
    [
        "not_a_server_error",
        "response_schema_conformance",
        "status_code_conformance",
        "content_type_conformance",
        "unsupported_method",
        # "positive_data_acceptance" runs in process, in test_schemathesis_positive.py.
    ]
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``memorybank serve`` on an in-memory store, on a free loopback port."""
    import os

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path_factory.mktemp("st") / "server.log").open("w")
    env = {**os.environ, "PYTHONPATH": SRC, "MEMORYBANK_ADMIN_KEY": "adm"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memorybank.cli",
            "serve",
            "--url",
            "memory://",
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_up(base, process)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


# The change feed's long poll: a drawn ``wait`` (up to MAX_WAIT seconds) outlasts the
# client's 10-second read timeout, so every request to it asks for no wait (the long
# poll itself is tested in tests/server/test_events_route.py).
_CONFIG = """
[[operations]]
include-path = "/v1/events"
parameters = { wait = 0 }
"""


def schemathesis(base: str, key: str, *selection: str, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(_CONFIG)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            str(config),
            "run",
            f"{base}/openapi.json",
            "--header",
            f"Authorization: Bearer {key}",
            "--mode",
            "all",
            "--max-examples",
            "5",
            "--seed",
            "20261130",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing",
            "--report-dir",
            str(tmp_path),
            *selection,
        ],
        capture_output=True,
        text=True,
        timeout=900,  # a loaded two-core CI machine: about 6 minutes seen
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_tenant_routes(live: str, tmp_path: Path) -> None:
    created = httpx.post(
        f"{live}/v1/admin/keys", json={"tenant": "fuzz"}, headers={"Authorization": "Bearer adm"}
    )
    key = created.json()["secret"]
    schemathesis(live, key, "--exclude-path-regex", "^/v1/admin", tmp_path=tmp_path)


def test_admin_routes(live: str, tmp_path: Path) -> None:
    schemathesis(live, "adm", "--include-path-regex", "^/v1/admin", tmp_path=tmp_path)
