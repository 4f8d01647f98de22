"""Fixtures for the HTTP server: an app on a fresh store, a client on it, keys."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from argon2 import PasswordHasher
from fastapi import FastAPI

from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import create_app
from memorybank.server.keys import KeyRing
from memorybank.stores.contract._async.store import AsyncStore
from tests.all_stores import STORE_KINDS
from tests.reliability._harness import Words, provide

ADMIN = "admin-test-key"
CHEAP_HASH = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@asynccontextmanager
async def fresh_store(kind: str, tmp_path: Path) -> AsyncIterator[AsyncStore]:
    """A fresh async store of ``kind`` (own file, prefix or key space), dropped after."""
    if kind == "memory":
        from memorybank.stores.memory._async.store import AsyncInMemoryStore

        store: AsyncStore = AsyncInMemoryStore()
        try:
            yield store
        finally:
            await store.close()
        return
    for spec in provide("sqlite-full" if kind == "sqlite" else kind, tmp_path):
        store = spec.open_async()
        try:
            yield store
        finally:
            await store.close()


@dataclass
class Api:
    """A running app (lifespan entered), an HTTP client on it, and its key ring."""

    app: FastAPI
    client: httpx.AsyncClient
    keys: KeyRing
    memory: AsyncMemory

    async def key(self, tenant: str) -> dict[str, str]:
        """Headers carrying a new key of ``tenant``."""
        _, secret = await self.keys.create(tenant, "test")
        return {"Authorization": f"Bearer {secret}"}

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {ADMIN}"}


@asynccontextmanager
async def running_api(store: AsyncStore, **options: Any) -> AsyncIterator[Api]:
    """``create_app`` over ``store`` with its lifespan entered and an ASGI client."""
    memory = AsyncMemory(store, tokenizer=Words())
    app = create_app(memory=memory, admin_key=ADMIN, **options)
    async with app.router.lifespan_context(app):
        # Argon2 at its real cost would make key creation the whole test run.
        app.state.keys = KeyRing(store, hasher=CHEAP_HASH)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield Api(app, client, app.state.keys, memory)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    """The app on a fresh in-memory store."""
    async with fresh_store("memory", tmp_path) as store, running_api(store) as running:
        yield running


@pytest.fixture(params=STORE_KINDS)
async def store_api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """The app on each of the five stores in turn."""
    async with fresh_store(str(request.param), tmp_path) as store, running_api(store) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_api() -> AsyncIterator[Api]:
    """The app on a fresh in-memory store, one for the module (building one costs a second
    on a busy machine): for tests that each use tenants of their own (their tests run
    with ``@pytest.mark.asyncio(loop_scope="module")``)."""
    async with fresh_store("memory", Path()) as store, running_api(store) as running:
        yield running
