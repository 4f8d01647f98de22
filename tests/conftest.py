"""Shared test setup.

Server-backed tests call ``require_server(name, error)`` when their server is
unreachable: locally that skips with the reason; with
``MEMORYBANK_REQUIRE_SERVERS=1`` (set by ``.ci/run``) it fails the test, so a
missing server can never turn into a silently skipped suite in CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.all_stores import STORE_KINDS, open_store
from tests.redis_cluster import stop_shared_cluster

if TYPE_CHECKING:
    from memorybank.stores import Store


def require_server(name: str, error: BaseException | str) -> None:
    """Skip (locally) or fail (CI) because server ``name`` is unreachable."""
    message = f"{name} server unreachable: {error}"
    if os.environ.get("MEMORYBANK_REQUIRE_SERVERS") == "1":
        pytest.fail(message + " (MEMORYBANK_REQUIRE_SERVERS=1)")
    pytest.skip(message)


@pytest.fixture(scope="module", params=STORE_KINDS)
def every_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """Each of the five stores in turn (sync), fresh for the module; see ``tests.all_stores``."""
    with open_store(str(request.param), tmp_path_factory.mktemp(str(request.param))) as store:
        yield store


@pytest.fixture(scope="session", autouse=True)
def _stop_shared_redis_cluster() -> Iterator[None]:
    """Stop the Redis Cluster ``tests.redis_cluster.shared_cluster`` started, if any."""
    yield
    stop_shared_cluster()
