"""The inspector in a real headless browser (Playwright driving Debian's chromium).

One live server (uvicorn on a free loopback port, ``create_app`` + the
inspector's router) over a fresh SQLite file, seeded through the library;
each test gets a fresh browser context (no cookies) and logs in through the form.
"""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page

from memorybank.memory._async.memory import AsyncMemory
from memorybank.server.ui._views import PAGE_SIZE
from tests.inspector._browser import login, off_loop
from tests.inspector._fixtures import XSS, Seeded


def thread_ids(page: Page) -> set[str]:
    rows = page.locator("#threads tbody tr")
    return {rows.nth(i).get_attribute("data-thread-id") or "" for i in range(rows.count())}


def test_without_the_cookie_every_page_redirects_to_login(seeded: Seeded, page: Page) -> None:
    page.goto(f"{seeded.base}/ui/thread?id=t-orders")
    assert "/ui/login?next=" in page.url
    assert page.locator("#login").is_visible()
    for path in ("/ui/threads", "/ui/search?q=x", "/ui/facts", "/ui/thread/context?id=t-orders"):
        answer = httpx.get(seeded.base + path, follow_redirects=False)
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/ui/login?next=")
    page.fill("input[name=key]", seeded.key)  # and after login, back where it was going
    page.click("#login button[type=submit]")
    page.wait_for_url("**/ui/thread?id=t-orders")
    assert page.inner_text("h1") == "Order 1234 refund"


def test_login_keeps_the_key_in_a_strict_httponly_cookie(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["mb_ui_key"]["value"] == seeded.key
    for name in ("mb_ui_key", "mb_ui_csrf"):
        assert cookies[name]["httpOnly"] is True
        assert cookies[name]["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # no script can read the key
    assert page.inner_text("#tenant") == seeded.tenant


def test_a_bad_or_revoked_key_is_refused(seeded: Seeded, page: Page) -> None:
    for key in ("mb_000000000000_forged", seeded.revoked_key):
        page.goto(f"{seeded.base}/ui/login")
        page.fill("input[name=key]", key)
        page.click("#login button[type=submit]")
        assert "not valid" in page.inner_text("#error")
        assert not any(c["name"] == "mb_ui_key" for c in page.context.cookies())


def test_pages_load_and_show_the_seeded_memory(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    assert {"t-orders", "t-bob", "t-xss"} <= thread_ids(page)

    page.click("text=Order 1234 refund")
    entries = page.locator("#entries li.entry")
    assert entries.count() == 4
    assert "lookup_order" in page.inner_text("#entries .tool-call")
    assert '"order_id": "1234"' in page.inner_text("#entries .tool-call pre")
    assert "tokens" in entries.first.inner_text()
    assert "retry" in page.inner_text("#branches")
    page.click("#branches >> text=retry")
    assert page.locator("#entries li.entry").count() == 1  # forked after the first entry

    page.goto(f"{seeded.base}/ui/facts")
    assert "Alice prefers phone contact" in page.inner_text("#facts")
    page.click("text=Alice prefers phone contact")
    history = page.inner_text("#fact-history")
    assert "Alice prefers email contact" in history and "Alice prefers phone contact" in history
    assert "extraction" in history  # provenance: source and source entries

    page.goto(f"{seeded.base}/ui/documents")
    assert "pelican lamps are refundable" in page.inner_text("#documents")
    page.goto(f"{seeded.base}/ui/summaries?agent=support")
    assert "Alice had a broken lamp" in page.inner_text("#summaries")
    page.goto(f"{seeded.base}/ui/graph")
    assert "Ada" in page.inner_text("#entities")


def test_thread_filters(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.fill("input[name=user]", "alice")
    page.click("#thread-filters button")
    page.wait_for_url(re.compile(r"/ui/threads\?.*user=alice"))  # the filtered page, loaded
    assert thread_ids(page) == {"t-orders"}
    page.goto(f"{seeded.base}/ui/threads?q=bob")
    assert thread_ids(page) == {"t-bob"}
    page.goto(f"{seeded.base}/ui/threads?status=archived")
    assert page.locator("#no-threads").is_visible()


def test_threads_are_paged(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.paging_key)
    first = thread_ids(page)
    assert len(first) == PAGE_SIZE and "p-054" in first  # newest first
    page.click("a[rel=next]")
    second = thread_ids(page)
    assert second == {f"p-{i:03d}" for i in range(5)}
    assert page.locator("a[rel=next]").count() == 0
    page.click("a[rel=prev]")
    assert thread_ids(page) == first
    page.goto(f"{seeded.base}/ui/threads?q=paged 1&page=1")  # 1, 10-19, 100+: 11 matches
    assert len(thread_ids(page)) == 11


def test_search_shows_hits_with_their_signals(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/search")
    page.fill("#search-form input[name=q]", "pelican lamp")
    page.select_option("#search-form select[name=mode]", "keyword")
    page.click("#search-form button")
    hits = page.inner_text("#hits")
    assert "pelican-shaped lamp arrived broken" in hits
    assert "refundable within 30 days" in hits
    assert "keyword" in page.inner_text("#hits .signals")
    assert "globex" not in hits  # the other tenant's entry matches the words too


def test_search_finds_facts_and_their_history_but_never_another_users(
    seeded: Seeded, page: Page
) -> None:
    login(page, seeded, seeded.key, user="alice")
    page.goto(f"{seeded.base}/ui/search")
    page.fill("#search-form input[name=q]", "contact")
    page.select_option("#search-form select[name=mode]", "keyword")
    page.select_option("#search-form select[name=kinds]", "facts")
    page.click("#search-form button")
    hits = page.inner_text("#hits")
    assert "Alice prefers phone contact" in hits and "email contact" not in hits
    page.check("#search-form input[name=history]")
    page.click("#search-form button")
    assert page.locator("#search-form input[name=history]").is_checked()
    assert page.locator("#hits tr.hit").count() == 2
    old = page.locator("#hits tr.hit.superseded")
    assert old.count() == 1 and "Alice prefers email contact" in old.inner_text()
    assert "(superseded)" in old.inner_text()
    old.locator("a").click()  # the fact's page lists both versions
    page.wait_for_url("**/ui/fact?id=*")
    assert "Alice prefers email contact" in page.inner_text("main")

    login(page, seeded, seeded.key, user="bob")
    page.goto(f"{seeded.base}/ui/search?q=contact&mode=keyword&kinds=entries,documents,facts")
    page.check("#search-form input[name=history]")
    page.click("#search-form button")
    assert page.locator("#no-hits").count() == 1
    assert page.input_value("#search-form input[name=q]") == "contact"
    assert "Alice prefers" not in page.inner_text("main")


def test_build_context_preview_shows_budget_blocks_and_entries(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/thread?id=t-orders")
    page.click("text=Preview build_context")
    page.fill("#context-form textarea[name=input]", "what about my lamp?")
    page.fill("#context-form textarea[name=system_prompt]", "You are a support agent.")
    page.check("#context-form input[name=facts]")
    page.click("#context-form button")
    blocks = page.inner_text("#blocks")
    assert "1 fact(s)" in blocks and "Alice prefers phone contact" in blocks
    assert "graph context" in blocks
    assert int(page.inner_text("#token-count")) > 0
    assert page.inner_text("#included").startswith("4 of 4")
    assert "I have issued a refund" in page.inner_text("#context-entries")
    assert "You are a support agent." in page.inner_text("#context-messages")

    page.fill("#context-form input[name=max_tokens]", "150")
    page.fill("#context-form input[name=reserve_tokens]", "100")
    page.click("#context-form button")
    assert "truncated" in page.inner_text("#budget")
    assert page.locator("#timeline tr.left-out").count() >= 1
    assert page.locator("#timeline tr.kept").count() == int(page.inner_text("#included").split()[0])


def test_deleting_a_thread_needs_confirmation_then_it_disappears(
    seeded: Seeded, page: Page
) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/thread?id={seeded.doomed_thread}")
    page.click("text=Delete thread…")
    button = page.locator("#confirm button[type=submit]")
    assert button.is_disabled()  # until the id is typed
    page.fill("#confirm input[name=confirm]", "t-doome")
    assert button.is_disabled()
    page.fill("#confirm input[name=confirm]", seeded.doomed_thread)
    button.click()
    page.wait_for_url("**/ui/threads?deleted=*")
    assert "was deleted" in page.inner_text(".notice")
    assert seeded.doomed_thread not in thread_ids(page)

    async def gone() -> bool:
        async with AsyncMemory(seeded.url) as root:
            return await root.tenant(seeded.tenant).threads.get(seeded.doomed_thread) is None

    assert off_loop(gone())


def test_a_post_without_the_csrf_token_changes_nothing(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    answer = page.request.post(
        f"{seeded.base}/ui/thread/delete", form={"id": "t-bob", "confirm": "t-bob", "csrf": "guess"}
    )
    assert answer.status == 403
    page.goto(f"{seeded.base}/ui/threads")
    assert "t-bob" in thread_ids(page)


def test_a_key_of_another_tenant_sees_nothing_of_the_first(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.other_key)
    assert thread_ids(page) == {"g-secret"}
    page.goto(f"{seeded.base}/ui/thread?id=t-orders")
    assert page.inner_text("h1") == "Not found"
    page.goto(f"{seeded.base}/ui/search?q=pelican&mode=keyword")
    hits = page.inner_text("#hits")
    assert "globex pelican merger" in hits and "lamp" not in hits
    page.goto(f"{seeded.base}/ui/fact?id={seeded.fact_id}")
    assert page.inner_text("h1") == "Not found"
    page.goto(f"{seeded.base}/ui/documents")
    assert page.locator("#documents").count() == 0


def test_viewing_as_a_user_shows_only_what_that_user_may_see(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key, user="bob")
    assert page.inner_text("#viewing-as") == "bob"
    assert thread_ids(page) == {"t-bob"}
    page.goto(f"{seeded.base}/ui/thread?id=t-orders")
    assert page.inner_text("h1") == "Forbidden"
    page.goto(f"{seeded.base}/ui/facts")
    assert page.locator("#facts").count() == 0  # alice's fact


def test_stored_markup_is_shown_as_text(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/thread?id={seeded.xss_thread}")
    assert page.inner_text("#entries .content") == XSS
    assert page.inner_text("h1") == XSS
    assert page.evaluate("window.pwned") is None


def test_forget_user_after_confirmation(seeded: Seeded, page: Page) -> None:
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/forget")
    page.fill("#forget input[name=user]", "carol")
    page.click("#forget button")
    page.fill("#confirm input[name=confirm]", "carol")
    page.click("#confirm button[type=submit]")
    assert "User carol was forgotten: 2 records erased" in page.inner_text("main")
    page.goto(f"{seeded.base}/ui/threads")
    assert "t-carol" not in thread_ids(page)
    assert "t-bob" in thread_ids(page)


def test_the_graph_is_drawn_as_svg_in_the_callers_scope(seeded: Seeded, page: Page) -> None:
    """The graph page lists the tenant's entities, draws the subgraph around one as
    SVG (server-rendered: no script), recentres on a click, and shows a user's
    private entity to that user only; another tenant's key sees none of it."""
    login(page, seeded, seeded.key)
    page.goto(f"{seeded.base}/ui/graph")
    listed = page.inner_text("#entities")
    assert {"Ada", "Initech", "Paris"} <= set(listed.split())
    assert "secret project" not in listed and "Globex" not in listed
    page.click("#entities >> text=Ada")
    assert page.inner_text("#graph-centre").startswith("Ada")
    assert "writes compilers" in page.inner_text("#graph-observations")
    svg = page.locator("svg#graph")
    names = svg.locator("a.node text").all_text_contents()
    assert names == ["Ada", "Initech", "Paris"]  # depth 2: the centre, then by hops
    assert sorted(svg.locator("g.edge text").all_text_contents()) == ["located_in", "works_at"]
    box = svg.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 200  # really drawn
    page.select_option("select[name=depth]", "1")
    page.click("#graph-filters button")
    assert svg.locator("a.node text").all_text_contents() == ["Ada", "Initech"]
    svg.locator("a.node", has_text="Initech").click()
    assert page.inner_text("#graph-centre").startswith("Initech")
    assert "secret project" not in (svg.text_content() or "")  # the tenant, no user

    login(page, seeded, seeded.key, user="bob")
    page.goto(f"{seeded.base}/ui/graph?entity={seeded.entity_id}&depth=3")
    drawn = page.locator("svg#graph a.node text").all_text_contents()
    assert "Bob's secret project" in drawn and "Ada" in drawn

    login(page, seeded, seeded.other_key)
    page.goto(f"{seeded.base}/ui/graph")
    assert "Globex doomsday device" in page.inner_text("#entities")
    assert "Ada" not in page.inner_text("main")
    page.goto(f"{seeded.base}/ui/graph?entity={seeded.entity_id}")
    assert page.locator("svg#graph").count() == 0
    assert "not found" in page.inner_text("main").lower()


def test_the_api_docs_render_from_this_server_alone(seeded: Seeded, page: Page) -> None:
    """/docs (Swagger UI) and /redoc render the schema with nothing fetched from outside
    the server (the ``page`` fixture checks every request the browser made)."""
    # Building the schema and parsing the bundles takes seconds on a busy machine.
    page.set_default_timeout(60_000)
    page.goto(f"{seeded.base}/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "memorybank" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector(".opblock")
    assert page.locator(".opblock").count() > 20
    assert page.locator(".opblock-summary-path", has_text="/v1/threads/{thread_id}/context").count()
    page.goto(f"{seeded.base}/redoc")
    page.wait_for_selector("h1")
    assert "memorybank" in page.locator("h1").first.inner_text()
    page.wait_for_selector("text=Build a model call's context", state="attached")
