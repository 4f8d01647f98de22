"""Helpers of the inspector's browser tests (Playwright driving Debian's chromium)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from playwright.sync_api import Page

from tests.inspector._fixtures import Seeded

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
T = TypeVar("T")


def off_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion in a thread: Playwright's sync API owns this thread's loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def login(page: Page, s: Seeded, key: str, user: str | None = None) -> None:
    page.goto(f"{s.base}/ui/login")
    page.fill("input[name=key]", key)
    if user is not None:
        page.fill("input[name=user_id]", user)
    page.click("#login button[type=submit]")
    page.wait_for_url("**/ui/threads")
