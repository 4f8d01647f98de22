"""The inspector at a phone's width and a desktop's, in Debian's chromium.

Every page fits the viewport's width (no sideways scrolling of the page: wide
tables scroll in their own box), every navigation link sits inside the dark
header (readable: light on dark), and no stored markup runs. A full-page
screenshot of each page at each size is kept as a test artifact under
``$MEMORYBANK_ARTIFACTS`` (default ``.artifacts/`` at the repository root,
git-ignored): ``inspector/<size>/<page>.png``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.inspector._browser import login
from tests.inspector._fixtures import Seeded

ARTIFACTS = Path(
    os.environ.get("MEMORYBANK_ARTIFACTS") or Path(__file__).resolve().parents[2] / ".artifacts"
)
SIZES = {"phone": (390, 844), "desktop": (1280, 800)}


def pages(s: Seeded) -> dict[str, str]:
    return {
        "threads": "/ui/threads",
        "thread": "/ui/thread?id=t-orders",
        "context": "/ui/thread/context?id=t-orders&input=lamp&facts=1&graph=1",
        "search": "/ui/search?q=pelican+lamp&mode=keyword",
        "facts": "/ui/facts",
        "fact": f"/ui/fact?id={s.fact_id}",
        "fact-edit": f"/ui/fact/edit?id={s.fact_id}",
        "documents": "/ui/documents",
        "summaries": "/ui/summaries?agent=support",
        "core-facts": "/ui/core-facts?user=alice",
        "sessions": "/ui/sessions",
        "working": "/ui/working",
        "snapshots": "/ui/snapshots",
        "graph": f"/ui/graph?entity={s.entity_id}&depth=2",
        "entity-edit": f"/ui/entity/edit?id={s.entity_id}",
        "forget": "/ui/forget",
        "xss-thread": f"/ui/thread?id={s.xss_thread}",
    }


LAYOUT = """() => {
  const header = document.querySelector("header.top").getBoundingClientRect();
  const named = "header.top nav a, header.top .who, header.top .brand";
  const links = [...document.querySelectorAll(named)]
    .map(a => { const r = a.getBoundingClientRect(); const style = getComputedStyle(a);
      return {text: a.textContent.trim(), left: r.left, right: r.right, top: r.top,
              bottom: r.bottom, color: style.color, size: parseFloat(style.fontSize)}; });
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
          header: {left: header.left, right: header.right, top: header.top, bottom: header.bottom},
          background: getComputedStyle(document.querySelector("header.top")).backgroundColor,
          links, pwned: window.pwned === undefined ? null : window.pwned};
}"""


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


@pytest.mark.parametrize("size", list(SIZES))
def test_every_page_fits_and_its_header_is_readable(seeded: Seeded, page: Page, size: str) -> None:
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    login(page, seeded, seeded.key)
    shots = ARTIFACTS / "inspector" / size
    shots.mkdir(parents=True, exist_ok=True)
    for name, path in pages(seeded).items():
        answer = page.goto(seeded.base + path)
        assert answer is not None and answer.status == 200, (name, answer and answer.status)
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        layout = page.evaluate(LAYOUT)
        assert layout["innerWidth"] == width
        assert layout["scrollWidth"] <= width, (name, layout["scrollWidth"])  # no sideways page
        header = layout["header"]
        assert _luminance(layout["background"]) < 0.3  # the dark band
        texts = [link["text"] for link in layout["links"]]
        assert {"Threads", "Core facts", "Sessions", "Working memory", "Snapshots"} <= set(texts)
        for link in layout["links"]:  # inside the band, on screen, light on dark, not tiny
            assert header["left"] <= link["left"] and link["right"] <= header["right"], (name, link)
            assert header["top"] <= link["top"] and link["bottom"] <= header["bottom"], (name, link)
            assert link["right"] <= width, (name, link)
            assert _luminance(link["color"]) > 0.7, (name, link)
            assert link["size"] >= 12, (name, link)
        assert layout["pwned"] is None, name  # stored markup is text on every page
    assert len(list(shots.glob("*.png"))) >= len(pages(seeded))


def test_the_token_chart_and_the_graph_scale_to_a_phone(seeded: Seeded, page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/thread?id=t-orders")
    chart = page.locator("svg#usage").bounding_box()
    assert chart is not None and 300 < chart["width"] <= 390 and chart["height"] > 80
    assert page.locator("svg#usage circle").count() == 4
    page.goto(f"{seeded.base}/ui/graph?entity={seeded.entity_id}")
    graph = page.locator(".graph-box").bounding_box()  # the drawing pans inside it
    assert graph is not None and 300 < graph["width"] <= 390


def test_editing_a_fact_on_a_phone(seeded: Seeded, page: Page) -> None:
    """The edit form works at phone size: the button waits for the typed id, the save is a
    new version, and the old value stays in the history."""
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/fact?id={seeded.edit_fact_id}")
    page.click("text=Edit…")
    page.wait_for_url("**/ui/fact/edit?id=*")
    page.fill("#edit textarea[name=content]", "The desk opens at 7")
    button = page.locator("#edit button[type=submit]")
    assert button.is_disabled()
    page.fill("#edit input[name=confirm]", seeded.edit_fact_id)
    button.click()
    page.wait_for_url("**/ui/fact?id=*&saved=1")
    assert "Saved as version 2" in page.inner_text(".notice")
    assert page.inner_text("#fact-content") == "The desk opens at 7"
    history = page.inner_text("#fact-history")
    assert "The desk opens at 9" in history and "The desk opens at 7" in history
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_editing_an_entity_in_the_browser(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/graph?entity={seeded.edit_entity_id}")
    page.click("text=Edit entity…")
    page.fill("#edit input[name=name]", "Zed Zimmer")
    page.fill("#edit textarea[name=aliases]", "Z\nZZ")
    page.fill("#edit textarea[name=observations]", "tall\nplays chess")
    page.fill("#edit input[name=confirm]", seeded.edit_entity_id)
    page.click("#edit button[type=submit]")
    page.wait_for_url("**/ui/graph?entity=*&saved=1")
    assert page.inner_text("#graph-centre").startswith("Zed Zimmer")
    assert page.locator("#graph-observations li").all_inner_texts() == ["tall", "plays chess"]
    page.goto(f"{seeded.base}/ui/graph?q=Zed")
    assert "Z, ZZ" in page.inner_text("#entities")
