"""The service embeds in the background by default: ``GET /v1/embedding/status`` and
``/metrics`` show the backlog; ``embed="inline"`` (``serve --embed inline``) opts out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorybank import ConfigurationError
from memorybank.embeddings.status import embed_mode
from memorybank.server import create_app
from memorybank.server.keys import KeyRing
from tests.recall.conftest import HashEmbedder
from tests.server.conftest import ADMIN, CHEAP_HASH


@asynccontextmanager
async def served(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    app = create_app(url, admin_key=ADMIN, embedder=HashEmbedder(), mcp=False, **options)
    async with app.router.lifespan_context(app):
        app.state.keys = KeyRing(app.state.memory.store, hasher=CHEAP_HASH)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield app, client


async def _key(app: Any, tenant: str) -> dict[str, str]:
    _, secret = await app.state.keys.create(tenant, "test")
    return {"Authorization": f"Bearer {secret}"}


async def test_a_batch_is_embedded_in_the_background_by_default(tmp_path: Path) -> None:
    async with served(tmp_path) as (app, client):
        alice, bob = await _key(app, "alice-co"), await _key(app, "bob-co")
        thread = (await client.post("/v1/threads", json={}, headers=alice)).json()["id"]
        messages = [{"role": "user", "content": f"zebra {i} on the road"} for i in range(300)]
        sent = await client.post(
            f"/v1/threads/{thread}/entries/batch", json={"messages": messages}, headers=alice
        )
        assert sent.status_code == 201, sent.text
        status = (await client.get("/v1/embedding/status", headers=alice)).json()
        assert status["mode"] == "background"
        assert status["capacity"] > 0 and status["model_id"] == HashEmbedder().model_id
        assert status["pending"] + status["embedded"] == 300
        found = await client.post(
            "/v1/search", json={"query": "zebra road", "mode": "keyword", "k": 3}, headers=alice
        )
        assert found.status_code == 200 and len(found.json()["items"]) == 3
        assert await app.state.memory.embedding.flush() is True
        status = (await client.get("/v1/embedding/status", headers=alice)).json()
        assert (status["pending"], status["embedded"], status["failed"]) == (0, 300, 0)
        other = (await client.get("/v1/embedding/status", headers=bob)).json()
        assert (other["pending"], other["embedded"]) == (0, 0)  # tenant-scoped
        assert (await client.get("/v1/embedding/status")).status_code == 401
        metrics = (await client.get("/metrics")).text
        assert "memorybank_embedding_embedded_total 300.0" in metrics
        assert "memorybank_embedding_pending 0.0" in metrics
        assert "memorybank_embedding_queue_capacity" in metrics


async def test_inline_embedding_is_an_option(tmp_path: Path) -> None:
    async with served(tmp_path, embed="inline") as (app, client):
        alice = await _key(app, "alice-co")
        status = (await client.get("/v1/embedding/status", headers=alice)).json()
        assert (status["mode"], status["capacity"]) == ("inline", 0)


def test_the_embed_setting_names_a_mode() -> None:
    assert embed_mode(None) == embed_mode("") == "background"
    assert embed_mode(" Inline ") == "inline"
    with pytest.raises(ConfigurationError, match="MEMORYBANK_EMBED"):
        embed_mode("later")


def test_serve_refuses_an_unknown_embed_mode() -> None:
    from typer.testing import CliRunner

    from memorybank.cli import app

    result = CliRunner().invoke(app, ["serve", "--embed", "later"])  # sets no env var
    assert result.exit_code == 2
    assert "--embed" in result.output
