"""What a user met on the inspector, tested in Debian's chromium at a phone's width (390 px):
tables of records read as cards (no cell squeezed to a word per line, nothing off-screen),
graph labels at a readable size and long entity names whole, an image part of a message
on the thread page, the empty-tenant wording, and core facts useful without typing a user.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize

from memorybank.memory._async.memory import AsyncMemory
from memorybank.server.keys import KeyRing
from tests.inspector._browser import login, off_loop
from tests.inspector._fixtures import Seeded

PHONE: ViewportSize = {"width": 390, "height": 844}
LONG_NAME = "International Business Machines Corporation of Armonk, New York"
IMAGE = "https://images.example/receipt-1234.png"

CELLS = """(selector) => [...document.querySelectorAll(selector + " tbody td")].map(td => {
  const r = td.getBoundingClientRect();
  return {left: r.left, right: r.right, width: r.width,
          label: getComputedStyle(td, "::before").content, text: td.innerText};
})"""

#: Each graph label's rendered font size (px): its font size times the drawing's scale.
LABELS = """() => [...document.querySelectorAll("svg#graph text")].map(t => ({
  text: t.textContent, px: parseFloat(t.getAttribute("font-size")) * t.getScreenCTM().a}))"""


async def _more(url: str, tenant: str) -> dict[str, Any]:
    """A long-named entity, a message with an image part, and a key of an empty tenant."""
    async with AsyncMemory(url) as root:
        acme = root.tenant(tenant)
        ibm = await acme.graph.add_entity(LONG_NAME, type="organization")
        ada = (await acme.graph.search_entities("Ada"))[0]
        await acme.graph.add_relation(ada.id, "consults_for", ibm.id)
        thread = await acme.threads.create(user_id="alice", title="A photo")
        content = [
            {"type": "text", "text": "here is the receipt"},
            {"type": "image_url", "image_url": {"url": IMAGE, "detail": "low"}},
        ]
        await acme.entries.add(thread.id, {"role": "user", "content": content})
        _, empty_key = await KeyRing(root.store).create(f"empty-{uuid.uuid4().hex[:8]}")
        return {"entity": ibm.id, "thread": thread.id, "empty_key": empty_key}


@pytest.fixture(scope="module")
def more(seeded: Seeded) -> dict[str, Any]:
    return off_loop(_more(seeded.url, seeded.tenant))


def test_tables_of_records_read_as_cards_on_a_phone(seeded: Seeded, page: Page) -> None:
    page.set_viewport_size(PHONE)
    login(page, seeded, seeded.key)
    for path, table in (
        ("/ui/search?q=pelican+lamp&mode=keyword", "#hits"),
        ("/ui/facts", "#facts"),
        ("/ui/documents", "#documents"),
        ("/ui/sessions", "#sessions"),
        ("/ui/graph", "#entities"),
    ):
        page.goto(seeded.base + path)
        cells = page.evaluate(CELLS, table)
        assert cells, path
        for cell in cells:
            # the whole width of the screen, less the page's and the card's margins
            assert cell["left"] >= 0 and cell["right"] <= PHONE["width"], (path, cell)
            assert cell["width"] >= 300, (path, cell)
            assert cell["label"] not in ("none", "normal", '""'), (path, cell)  # its column
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path


def test_graph_labels_are_readable_and_long_names_whole(
    seeded: Seeded, page: Page, more: dict[str, Any]
) -> None:
    page.set_viewport_size(PHONE)
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/graph?entity={more['entity']}&depth=1")
    labels = page.evaluate(LABELS)
    assert any(label["text"] == "consults_for" for label in labels)
    assert all(label["px"] >= 11 for label in labels), labels
    names = [label["text"] for label in labels]
    assert LONG_NAME.replace(" ", "") in [n.replace(" ", "") for n in names], names
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.goto(f"{seeded.base}/ui/graph?q=International")
    assert page.inner_text("#entities tbody td >> nth=0").strip().endswith(LONG_NAME)


def test_an_image_part_shows_on_the_thread_page(
    seeded: Seeded, page: Page, more: dict[str, Any]
) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/thread?id={more['thread']}")
    part = page.locator("#entries .part-image_url")
    assert part.count() == 1
    assert IMAGE in part.inner_text() and "detail: low" in part.inner_text()
    assert part.locator("a").get_attribute("href") == IMAGE
    assert "here is the receipt" in page.inner_text("#entries .content")


def test_an_empty_tenant_says_so_and_names_itself(
    seeded: Seeded, page: Page, more: dict[str, Any]
) -> None:
    login(page, seeded, more["empty_key"])
    text = page.inner_text("#no-threads")
    assert "No threads yet in tenant empty-" in text and "match" not in text
    page.goto(f"{seeded.base}/ui/threads?q=nothing-like-this")
    assert page.inner_text("#no-threads") == "No threads match."


def test_core_facts_lists_each_users_set_without_typing_one(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/core-facts")
    users = page.inner_text("#core-users")
    assert "alice — 3 keys" in users and "bob — 1 key" in users
    page.click("#core-users a >> text=alice")
    page.wait_for_url("**/ui/core-facts?user=alice")
    keys = page.locator("#core-facts tr[data-key]").evaluate_all(
        "rows => rows.map(r => r.dataset.key)"
    )
    assert sorted(keys) == ["city", "motto", "name"]
