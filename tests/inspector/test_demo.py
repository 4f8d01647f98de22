"""``memorybank serve --demo`` seeds every kind of memory, so each inspector page shows some.

The test runs the command's own seeding (``_serve_demo``: the scripted demo, then
``seed_showcase``) on a fresh SQLite file, logs in to the inspector with the demo
key it prints, and reads every page; then starts again: the same key, nothing doubled.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from memorybank.cli.app import _serve_demo
from memorybank.server import create_app


def _demo_key(lines: list[str]) -> str:
    return "\n".join(lines).split("demo key (tenant 'default'): ")[1].split()[0]


def test_the_demo_fills_every_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORYBANK_ADMIN_KEY", raising=False)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    # the command's own seeding (it runs a loop); the banner's lines about the demo
    key = _demo_key(_serve_demo(url, None, reset=False))
    asyncio.run(_every_page_shows_data(url, key))
    again = _serve_demo(url, None, reset=False)  # a second start: reuses everything
    assert _demo_key(again) == key
    assert any("demo-1 (reused" in line for line in again)
    asyncio.run(_nothing_doubled(url, key))


@asynccontextmanager
async def _logged_in(url: str, key: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the inspector over ``url``, logged in with ``key``."""
    app = create_app(url)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://demo.test") as client:
            await client.get("/ui/login")
            form = {"csrf": client.cookies["mb_ui_csrf"], "key": key}
            assert (await client.post("/ui/login", data=form)).status_code == 303
            yield client


async def _every_page_shows_data(url: str, key: str) -> None:
    async with _logged_in(url, key) as client:

        async def page(path: str) -> str:
            answer = await client.get(path)
            assert answer.status_code == 200, (path, answer.text[-300:])
            text = html.unescape(answer.text)
            assert 'class="empty"' not in text, path  # "No facts." and the like
            return text

        assert "demo-1" in await page("/ui/threads")
        thread = await page("/ui/thread?id=demo-1")
        assert thread.count('<circle class="role-') >= 5  # the token chart
        assert "Saturday and Sunday" in await page("/ui/facts")
        assert "Coimbra" in await page("/ui/core-facts?user=ana")
        assert "Tram 28 runs" in await page("/ui/documents")
        assert "sunset suggestion" in await page("/ui/summaries?agent=atlas")
        assert "session_web_browser-1_atlas_ana" in await page("/ui/sessions")
        assert "check tram times" in await page("/ui/working")
        assert "itinerary" in await page("/ui/snapshots")
        graph = await page("/ui/graph")
        assert "Lisbon" in graph and "Tram 28" in graph
        lisbon = re.search(r'data-entity-id="([^"]+)">\s*<td[^>]*><a[^>]*>Lisbon<', graph)
        assert lisbon is not None
        drawn = await page(f"/ui/graph?entity={lisbon.group(1)}")
        assert drawn.count('class="edge"') >= 3


async def _nothing_doubled(url: str, key: str) -> None:
    async with _logged_in(url, key) as client:
        threads = html.unescape((await client.get("/ui/threads")).text)
        assert "demo-1" in threads and "demo-2" not in threads
        facts = html.unescape((await client.get("/ui/facts")).text)
        assert facts.count("Saturday and Sunday") == 1
        assert len(re.findall(r'data-run-id="', (await client.get("/ui/snapshots")).text)) == 1
