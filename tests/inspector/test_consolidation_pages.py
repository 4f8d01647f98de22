"""The inspector's consolidation pages in Debian's chromium, at a desktop's width and a
phone's (390 px): the list of runs, a run's report (facts and entities changed and why),
its undo behind the typed-id confirmation, and a fact's importance, feedback and
merged-from / superseded-by links; a user's view sees only runs over her facts."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import httpx
import pytest
from playwright.sync_api import Page

from memorybank import AsyncMemory
from tests.inspector._browser import login, off_loop
from tests.inspector._fixtures import Seeded


@dataclass
class Run:
    user: str
    run_id: str
    kept: str
    retired: str
    entity_into: str


async def _consolidated(s: Seeded) -> Run:
    user = f"cons-{uuid.uuid4().hex[:6]}"
    async with AsyncMemory(s.url) as root:
        memory = root.tenant(s.tenant)
        kept = await memory.facts.add(content="User likes green tea", user_id=user)
        retired = await memory.facts.add(content="user likes green tea!", user_id=user)
        await memory.facts.add(content="User plays chess", user_id=user)
        city = await memory.graph.add_entity(
            "New York City", type="location", aliases=["NYC"], user_id=user
        )
        await memory.graph.add_entity("N.Y.C.", type="location", user_id=user)
        await memory.feedback(kept.id, useful=False, reason="stale <b>taste</b>", user_id=user)
        report = await memory.consolidate(user_id=user)
        return Run(user, report.run_id, kept.id, retired.id, city.id)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_runs_report_links_and_undo(seeded: Seeded, page: Page, width: int) -> None:
    run = off_loop(_consolidated(seeded))
    page.set_viewport_size({"width": width, "height": 844})
    login(page, seeded, seeded.key)
    page.click("header.top nav >> text=Consolidation")
    page.wait_for_url("**/ui/consolidation")
    assert run.run_id in page.inner_text("#runs")
    page.click(f"#runs >> text={run.run_id}")
    page.wait_for_url("**/ui/consolidation/run?id=*")
    changes = page.inner_text("#run-changes")
    assert "user likes green tea!" in changes and "duplicate" in changes
    entities = page.inner_text("#run-entities")
    assert "N.Y.C." in entities and "New York City" in entities and "alias" in entities
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    # the kept fact: importance, the feedback (escaped), and its merged-from link
    page.click(f"#run-changes a[href$='id={run.kept}']")
    page.wait_for_url(f"**/ui/fact?id={run.kept}")
    assert "0.25" in page.inner_text("#fact-importance")
    feedback = page.inner_text("#fact-feedback")
    assert "not useful" in feedback and "stale <b>taste</b>" in feedback
    merged = page.locator(f"#fact-links a[data-link=merged_from][href$='id={run.retired}']")
    assert merged.count() == 1
    assert run.run_id in page.inner_text("#fact-links")
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    # importance on the list of facts
    page.goto(f"{seeded.base}/ui/facts?user={run.user}")
    assert "Importance" in page.inner_text("#facts")

    # undo: the button waits for the typed id; then every change is back
    page.goto(f"{seeded.base}/ui/consolidation/run?id={run.run_id}")
    page.click("#undo-run")
    page.wait_for_url("**/ui/consolidation/undo?id=*")
    button = page.locator("#confirm button[type=submit]")
    assert button.is_disabled()
    page.fill("#confirm input[name=confirm]", run.run_id)
    button.click()
    page.wait_for_url("**/ui/consolidation/run?id=*")
    assert "undone" in page.inner_text("#run-summary")
    assert page.locator("#undo-run").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    async def after() -> tuple[int, int]:
        async with AsyncMemory(seeded.url) as root:
            memory = root.tenant(seeded.tenant)
            facts = await memory.facts.list(user_id=run.user)
            entities = await memory.graph.find_entities(user_id=run.user)
            mine = [e for e in entities if e.user_id == run.user]
            return len([f for f in facts if f.user_id == run.user]), len(mine)

    assert off_loop(after()) == (3, 2)


def test_a_users_view_shows_only_her_runs(seeded: Seeded, page: Page) -> None:
    run = off_loop(_consolidated(seeded))
    login(page, seeded, seeded.key, user="someone-else")
    page.goto(f"{seeded.base}/ui/consolidation")
    assert run.run_id not in page.inner_text("main")
    answer = page.goto(f"{seeded.base}/ui/consolidation/run?id={run.run_id}")
    assert answer is not None and answer.status == 404
    login(page, seeded, seeded.key, user=run.user)
    page.goto(f"{seeded.base}/ui/consolidation")
    assert run.run_id in page.inner_text("#runs")


def test_the_pages_without_a_browser_refuse_a_forged_undo(seeded: Seeded) -> None:
    """A POST without the session's CSRF token changes nothing."""
    run = off_loop(_consolidated(seeded))
    with httpx.Client(base_url=seeded.base) as client:
        form = client.get("/ui/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form)
        assert csrf is not None
        client.post("/ui/login", data={"key": seeded.key, "csrf": csrf[1]})
        answer = client.post(
            "/ui/consolidation/undo", data={"id": run.run_id, "confirm": run.run_id}
        )
        assert answer.status_code == 403
        report = client.get(f"/ui/consolidation/run?id={run.run_id}")
        assert "applied" in report.text
