"""Fixtures of the inspector's browser tests: one live server over a seeded SQLite file per
module, Debian's chromium, and a fresh browser context per test that checks every request
stayed on the server and no page script failed."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import create_app
from tests.inspector._browser import CHROMIUM, LAUNCH_ARGS
from tests.inspector._fixtures import Seeded, live_server, seed


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    url = f"sqlite:///{tmp_path_factory.mktemp('inspector') / 'ui.db'}"

    async def write() -> Seeded:
        async with AsyncMemory(url) as root:
            return await seed(root)

    data = asyncio.run(write())
    data.url = url
    app = create_app(url)
    with live_server(app) as base:
        data.base = base
        yield data


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        message = f"{CHROMIUM} missing (apt-get install chromium)"
        if os.environ.get("MEMORYBANK_REQUIRE_SERVERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, seeded: Seeded) -> Iterator[Page]:
    """A fresh browser context (no cookies); afterwards, every request it made went to the
    server under test (no CDN, nothing fetched from elsewhere) and no page script failed."""
    context = browser.new_context()
    context.set_default_timeout(5000)
    requested: list[str] = []
    script_errors: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    try:
        tab = context.new_page()
        tab.on("pageerror", lambda error: script_errors.append(str(error)))
        yield tab
    finally:
        context.close()
    # blob: and data: URLs are made by the page itself, from what it already holds.
    own = (seeded.base + "/", f"blob:{seeded.base}/", "data:")
    assert requested and all(url.startswith(own) for url in requested), requested
    assert script_errors == []
