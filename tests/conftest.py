"""Shared test setup.

Server-backed tests call ``require_server(name, error)`` when their server is
unreachable: locally that skips with the reason; with
``MEMORYBANK_REQUIRE_SERVERS=1`` (set by ``.ci/run``) it fails the test, so a
missing server can never turn into a silently skipped suite in CI.
"""

from __future__ import annotations

import os

import pytest


def require_server(name: str, error: BaseException | str) -> None:
    """Skip (locally) or fail (CI) because server ``name`` is unreachable."""
    message = f"{name} server unreachable: {error}"
    if os.environ.get("MEMORYBANK_REQUIRE_SERVERS") == "1":
        pytest.fail(message + " (MEMORYBANK_REQUIRE_SERVERS=1)")
    pytest.skip(message)
