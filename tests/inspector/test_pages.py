"""The inspector's pages over HTTP on every store (the browser suite runs on SQLite).

The app runs in-process through httpx's ASGI transport with its lifespan, over
a fresh store of each kind; the pages only call ``AsyncMemory``, so what must
hold is that every store answers them alike.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import create_app
from memorybank.server.keys import KeyRing
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from tests.inspector._fixtures import ODD_ID, XSS, Seeded, seed
from tests.reliability._harness import StoreSpec, provide, store_params

# One seeded store per kind for the module (tables, keys and Argon2 hashes are the slow
# part); the tests change disjoint things, so they do not depend on their order.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("memory", id="memory"),
        *store_params(("sqlite-full", "postgres", "mysql", "redis")),
    ],
)
def store_kind(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoreSpec | None]:
    if request.param == "memory":
        yield None
    else:
        yield from provide(request.param, tmp_path_factory.mktemp("inspector"))


class Inspector:
    """An HTTP client of the inspector with the seeded memory behind it."""

    def __init__(self, client: httpx.AsyncClient, data: Seeded, memory: AsyncMemory) -> None:
        self.client = client
        self.data = data
        self.memory = memory

    async def try_login(
        self, key: str, user: str | None = None, tenant: str | None = None
    ) -> httpx.Response:
        self.client.cookies.clear()
        await self.client.get("/ui/login")
        form = {"csrf": self.csrf, "key": key, "user_id": user or "", "tenant": tenant or ""}
        return await self.client.post("/ui/login", data=form)

    async def login(self, key: str, user: str | None = None, tenant: str | None = None) -> None:
        answer = await self.try_login(key, user, tenant)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/ui/threads"

    async def page(self, path: str, status: int = 200) -> str:
        answer = await self.client.get(path)
        assert answer.status_code == status, (path, answer.status_code, answer.text[-500:])
        assert answer.headers["cache-control"] == "no-store"
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        return html.unescape(answer.text)

    async def post(self, path: str, form: dict[str, str]) -> httpx.Response:
        return await self.client.post(path, data=form)

    @property
    def csrf(self) -> str:
        return self.client.cookies["mb_ui_csrf"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def inspector(store_kind: StoreSpec | None) -> AsyncIterator[Inspector]:
    store: AsyncStore = AsyncInMemoryStore() if store_kind is None else store_kind.open_async()
    try:
        memory = AsyncMemory(store)
        data = await seed(memory, paging_threads=0)
        app = create_app(memory=memory, admin_key=ADMIN_KEY)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://ui.test") as client:
                yield Inspector(client, data, memory)
    finally:
        await store.close()


ADMIN_KEY = "inspector-admin-key"


def thread_ids(page: str) -> set[str]:
    return set(re.findall(r'data-thread-id="([^"]+)"', page))


async def test_pages_show_the_tenant_memory(inspector: Inspector) -> None:
    await inspector.login(inspector.data.key)
    page = await inspector.page("/ui/threads")
    assert {"t-orders", "t-bob", "t-xss"} <= thread_ids(page)
    assert "g-secret" not in thread_ids(page)
    assert thread_ids(await inspector.page("/ui/threads?user=alice")) == {"t-orders"}
    assert thread_ids(await inspector.page("/ui/threads?agent=support&q=BOB")) == {"t-bob"}

    page = await inspector.page("/ui/thread?id=t-orders")
    assert "lookup_order" in page and '"order_id": "1234"' in page
    assert page.count('class="entry role-') == 4 and "retry" in page
    assert (await inspector.page("/ui/thread?id=t-orders&branch=retry")).count('class="entry') == 1
    await inspector.page("/ui/thread?id=t-orders&branch=nope", status=404)

    page = await inspector.page(
        "/ui/thread/context?id=t-orders&input=lamp&facts=1&system_prompt=Be+kind&max_tokens=4000"
    )
    assert "1 fact(s)" in page and "Alice prefers phone contact" in page
    assert re.search(r'id="included">4 of 4<', page)
    assert "Be kind" in page
    assert re.search(r"graph context</b>:\s*off", page)
    page = await inspector.page(
        "/ui/thread/context?id=t-orders&input=Where+does+Ada+work&graph=1&max_tokens=4000"
    )
    assert re.search(r'<pre class="graph-block">[^<]*Ada[^<]*Initech', page), page
    assert "secret project" not in page  # bob's, not the thread owner's

    page = await inspector.page(f"/ui/fact?id={inspector.data.fact_id}")
    assert "Alice prefers email contact" in page and "Alice prefers phone contact" in page
    assert "extraction" in page
    assert "refundable within 30 days" in await inspector.page("/ui/documents")
    assert "Alice had a broken lamp" in await inspector.page("/ui/summaries?agent=support")

    page = await inspector.page("/ui/search?q=pelican+lamp&mode=keyword")
    assert "pelican-shaped lamp arrived broken" in page and "globex" not in page
    assert 'class="signal"' in page
    page = await inspector.page("/ui/search?q=pelican+lamp")  # hybrid, no embedder
    assert "pelican-shaped lamp arrived broken" in page and "globex" not in page
    page = await inspector.page("/ui/search?q=pelican&mode=semantic")
    assert 'id="error"' in page  # no embedder: said on the page, not a server error
    page = await inspector.page("/ui/thread?id=t-xss")
    assert XSS in page  # shown as text: unescaping the page gives the stored markup back
    raw = (await inspector.client.get("/ui/thread?id=t-xss")).text
    assert "<script>window.pwned" not in raw

    page = await inspector.page("/ui/threads?q=odd")  # an id that is no URL path segment
    assert thread_ids(page) == {ODD_ID}
    link = re.search(r'href="(/ui/thread\?id=[^"]+)"', page)
    assert link is not None
    assert "an odd id" in await inspector.page(html.unescape(link.group(1)))
    await inspector.page("/ui/thread", status=422)


async def test_destructive_actions_need_the_token_and_the_typed_id(inspector: Inspector) -> None:
    await inspector.login(inspector.data.key)
    await inspector.page("/ui/thread/delete?id=t-doomed")
    refused = [
        {"id": "t-doomed", "confirm": "t-doomed"},  # no token
        {"id": "t-doomed", "confirm": "t-doomed", "csrf": "guess"},
        {"id": "t-doomed", "confirm": "t-doome", "csrf": inspector.csrf},
    ]
    for form in refused:
        assert (await inspector.post("/ui/thread/delete", form)).status_code == 403
    assert "t-doomed" in thread_ids(await inspector.page("/ui/threads"))
    done = await inspector.post(
        "/ui/thread/delete", {"id": "t-doomed", "confirm": "t-doomed", "csrf": inspector.csrf}
    )
    assert done.status_code == 303
    assert "t-doomed" not in thread_ids(await inspector.page(done.headers["location"]))

    await inspector.page("/ui/forget/confirm?user=carol")
    wrong = await inspector.post("/ui/forget", {"user": "carol", "confirm": "bob", "csrf": "x"})
    assert wrong.status_code == 403
    done = await inspector.post(
        "/ui/forget", {"user": "carol", "confirm": "carol", "csrf": inspector.csrf}
    )
    assert "User carol was forgotten: 2 records erased" in html.unescape(done.text)
    left = thread_ids(await inspector.page("/ui/threads"))
    assert "t-carol" not in left and {"t-orders", "t-bob", "t-xss"} <= left


async def test_forget_user_keeps_the_typed_id_exact(inspector: Inspector) -> None:
    """Asked to forget ``"bob "`` the inspector forgets that id, never ``"bob"``."""
    await inspector.login(inspector.data.key)
    page = await inspector.page("/ui/forget/confirm?user=bob%20")
    assert 'value="bob "' in page
    stripped = await inspector.post(
        "/ui/forget", {"user": "bob ", "confirm": "bob", "csrf": inspector.csrf}
    )
    assert stripped.status_code == 403  # the typed confirmation must be the id, exactly
    done = await inspector.post(
        "/ui/forget", {"user": "bob ", "confirm": "bob ", "csrf": inspector.csrf}
    )
    assert "was forgotten: 0 records erased" in html.unescape(done.text)
    assert "t-bob" in thread_ids(await inspector.page("/ui/threads"))


async def test_another_tenant_or_user_sees_only_its_own(inspector: Inspector) -> None:
    await inspector.login(inspector.data.other_key)
    assert thread_ids(await inspector.page("/ui/threads")) == {"g-secret"}
    await inspector.page("/ui/thread?id=t-orders", status=404)
    await inspector.page("/ui/thread/context?id=t-orders", status=404)
    await inspector.page(f"/ui/fact?id={inspector.data.fact_id}", status=404)
    page = await inspector.page("/ui/search?q=pelican+lamp&mode=keyword")
    assert "globex pelican merger" in page and "arrived broken" not in page
    denied = await inspector.post(
        "/ui/thread/delete", {"id": "t-orders", "confirm": "t-orders", "csrf": inspector.csrf}
    )
    assert denied.status_code == 404

    await inspector.login(inspector.data.key, user="bob")
    assert thread_ids(await inspector.page("/ui/threads")) == {"t-bob"}
    await inspector.page("/ui/thread?id=t-orders", status=403)
    assert "Alice prefers" not in await inspector.page("/ui/facts")
    refused = await inspector.post(
        "/ui/forget", {"user": "alice", "confirm": "alice", "csrf": inspector.csrf}
    )
    assert refused.status_code == 403  # a user's view may only forget that user


async def test_search_covers_facts_and_their_history_in_the_callers_scope(
    inspector: Inspector,
) -> None:
    facts = "/ui/search?q=contact&mode=keyword&kinds=facts"
    await inspector.login(inspector.data.key)
    page = await inspector.page(facts)
    assert "Alice prefers phone contact" in page and "email contact" not in page
    assert '<option value="facts" selected>' in page
    page = await inspector.page(facts + "&history=1")
    assert "Alice prefers phone contact" in page and "Alice prefers email contact" in page
    assert page.count('class="hit superseded"') == 1 and "v1 <span" in page
    assert 'name="history" value="1" checked' in page
    page = await inspector.page(facts.replace("=facts", "=entries,documents,facts") + "&history=1")
    assert "Alice prefers email contact" in page
    page = await inspector.page("/ui/search?q=contact&mode=keyword&history=1")
    assert 'id="no-hits"' in page and 'id="error"' not in page  # no facts asked for

    await inspector.login(inspector.data.key, user="alice")
    page = await inspector.page(facts + "&history=1")
    assert "Alice prefers phone contact" in page and "Alice prefers email contact" in page
    for key, user in ((inspector.data.key, "bob"), (inspector.data.other_key, None)):
        await inspector.login(key, user=user)
        for mode in ("keyword", "hybrid"):
            for kinds in ("facts", "entries,documents,facts"):
                page = await inspector.page(
                    f"/ui/search?q=Alice+prefers+contact&mode={mode}&kinds={kinds}&history=1"
                )
                assert "phone contact" not in page and "email contact" not in page


async def test_a_revoked_key_ends_the_session(inspector: Inspector) -> None:
    await inspector.login(inspector.data.key)
    inspector.client.cookies.clear()
    inspector.client.cookies.set("mb_ui_key", inspector.data.revoked_key, "ui.test", "/ui")
    answer = await inspector.client.get("/ui/threads")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/ui/login?next=%2Fui%2Fthreads&expired=1")


async def test_the_admin_key_views_the_tenant_it_names(inspector: Inspector) -> None:
    refused = await inspector.try_login(ADMIN_KEY)
    assert refused.status_code == 422 and "X-Tenant-Id" in refused.text
    await inspector.login(ADMIN_KEY, tenant=inspector.data.tenant)
    page = await inspector.page("/ui/threads")
    assert "t-orders" in thread_ids(page) and "(admin key)" in page
    await inspector.login(inspector.data.other_key, tenant=inspector.data.tenant)
    assert thread_ids(await inspector.page("/ui/threads")) == {"g-secret"}  # a key's own tenant


async def test_a_store_that_fails_gives_an_html_503() -> None:
    store = AsyncInMemoryStore()
    memory = AsyncMemory(store)
    _, key = await KeyRing(store).create("down")
    app = create_app(memory=memory)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ui.test") as client:
            await client.get("/ui/login")
            form = {"csrf": client.cookies["mb_ui_csrf"], "key": key}
            assert (await client.post("/ui/login", data=form)).status_code == 303
            await store.close()
            answer = await client.get("/ui/threads")
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert answer.headers["content-type"].startswith("text/html")


def rows(page: str, attribute: str) -> list[str]:
    return re.findall(rf'{attribute}="([^"]+)"', page)


async def test_state_pages_show_the_tenant_memory_escaped(inspector: Inspector) -> None:
    """Core facts (with history), sessions, working memory and snapshots: each page shows
    the key's tenant, linked from every page's navigation; stored markup stays text."""
    await inspector.login(inspector.data.key)
    threads = await inspector.page("/ui/threads")
    for path in ("/ui/core-facts", "/ui/sessions", "/ui/working", "/ui/snapshots"):
        assert f'href="{path}"' in threads
        raw = (await inspector.client.get(path + "?user=alice")).text
        assert "<script>window.pwned" not in raw and "<img src=x" not in raw

    page = await inspector.page("/ui/core-facts")  # the tenant-wide set
    assert rows(page, "data-key") == ["company"] and "Acme support desk" in page
    page = await inspector.page("/ui/core-facts?user=alice")
    assert rows(page, "data-key") == ["city", "motto", "name"]
    assert re.search(r"Lyon.*Paris", page, re.S)  # the history, oldest first
    assert XSS in page and "bob's core secret" not in page and "globex" not in page

    page = await inspector.page("/ui/sessions")
    assert len(rows(page, "data-session-id")) == 1 and "slack" in page and "C42" in page
    assert rows(page, "data-session-id")[0].startswith("session_slack_C42_support_dave")
    assert 'id="no-sessions"' in await inspector.page("/ui/sessions?user=alice")

    page = await inspector.page("/ui/working")
    assert sorted(rows(page, "data-run-id")) == ["run-alice", "run-bob", "run-open"]
    shown = "<script>window.pwned = 1</script>"  # inside a JSON value: its quotes escaped
    assert "look up order" in page and shown in page and "g-run" not in page
    page = await inspector.page("/ui/snapshots")
    assert rows(page, "data-run-id") == ["snap-alice", "snap-bob", "snap-shared"]
    assert '"stage": "review"' in page and shown in page and "g-snap" not in page


async def test_state_pages_in_a_users_view_and_another_tenants(inspector: Inspector) -> None:
    await inspector.login(inspector.data.key, user="bob")
    page = await inspector.page("/ui/core-facts?user=alice")  # the filter is not bob's to set
    assert rows(page, "data-key") == ["secret"] and "Paris" not in page
    assert 'id="no-sessions"' in await inspector.page("/ui/sessions?user=dave")
    assert rows(await inspector.page("/ui/working"), "data-run-id") == ["run-bob"]
    page = await inspector.page("/ui/snapshots")
    assert rows(page, "data-run-id") == ["snap-bob", "snap-shared"]

    await inspector.login(inspector.data.other_key)
    page = await inspector.page("/ui/core-facts")
    assert rows(page, "data-key") == ["globex-core"] and "Acme" not in page
    assert 'id="no-core-facts"' in await inspector.page("/ui/core-facts?user=alice")
    assert 'id="no-sessions"' in await inspector.page("/ui/sessions")
    assert rows(await inspector.page("/ui/working"), "data-run-id") == ["g-run"]
    assert rows(await inspector.page("/ui/snapshots"), "data-run-id") == ["g-snap"]


async def test_the_thread_page_charts_token_usage(inspector: Inspector) -> None:
    await inspector.login(inspector.data.key)
    page = await inspector.page("/ui/thread?id=t-orders")
    svg = page[page.index('<svg id="usage"') : page.index("</svg>", page.index('<svg id="usage"'))]
    assert svg.count("<circle ") == 4
    assert re.findall(r'class="role-(\w+)"', svg) == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    line = re.search(r'<polyline class="total" points="([^"]+)"', svg)
    assert line is not None
    points = [tuple(map(float, p.split(","))) for p in line.group(1).split()]
    assert len(points) == 5  # the baseline, then one per entry
    assert all(a[0] <= b[0] and a[1] >= b[1] for a, b in itertools.pairwise(points))  # a total
    totals = [int(t) for t in re.findall(r"tokens, (\d+) in all", svg)]
    assert totals == sorted(totals) and totals[-1] > 0
    retry = await inspector.page("/ui/thread?id=t-orders&branch=retry")
    assert retry.count('<circle class="role-') == 1


async def test_a_fork_point_links_to_the_entry_where_it_still_is(inspector: Inspector) -> None:
    acme = inspector.memory.tenant(inspector.data.tenant)
    thread = await acme.threads.create(thread_id="t-fork", title="Forks")
    written = [await acme.remember(thread.id, "user", f"line {i}") for i in range(60)]
    early, late = written[5], written[58]
    await acme.branches.create(thread.id, "early", from_entry=early.id)
    await acme.branches.create(thread.id, "late", from_entry=late.id)
    await acme.branches.rewind(thread.id, written[40].id)  # main loses ``late``
    await inspector.login(inspector.data.key)
    page = await inspector.page("/ui/thread?id=t-fork")
    links = dict(
        re.findall(r'<tr[^>]*>\s*<td><a[^>]*>(\w+)</a>.*?<td class="fork">(.*?)</td>', page, re.S)
    )
    assert set(links) == {"main", "early", "late"} and links["main"].strip() == "—"
    assert f'branch=main#e-{early.id}">entry #{early.position}</a>' in links["early"]
    assert f'branch=late#e-{late.id}">entry #{late.position}</a>' in links["late"]
    assert "no longer on main: its copy on late" in links["late"]
    assert "no longer" not in links["early"]
    # The linked page shows the entry with that anchor.
    assert f'id="e-{late.id}"' in await inspector.page("/ui/thread?id=t-fork&branch=late")
    # Past the first page of the parent (119 entries on ``late``) the link names the page.
    await acme.branches.checkout(thread.id, "late")
    for i in range(60):
        await acme.remember(thread.id, "user", f"more {i}")
    await acme.branches.create(thread.id, "deep", from_entry=written[1].id)
    page = await inspector.page("/ui/thread?id=t-fork&branch=late")
    assert f'branch=late&page=3#e-{written[1].id}"' in page
    deep = await inspector.page("/ui/thread?id=t-fork&branch=late&page=3")
    assert f'id="e-{written[1].id}"' in deep


async def test_the_context_preview_warns_of_a_budget_with_no_room(inspector: Inspector) -> None:
    await inspector.login(inspector.data.key)
    base = "/ui/thread/context?id=t-orders&input=lamp"
    for bad in ("0", "-5", "ten", "99999999999"):
        page = await inspector.page(f"{base}&max_tokens={bad}", status=400)
        assert "max_tokens must be a whole number from 1 to 10000000" in page and bad in page
        assert 'id="context-result"' not in page
    page = await inspector.page(f"{base}&max_tokens=4000&reserve_tokens=-1", status=400)
    assert "reserve_tokens must be a whole number from 0" in page

    # The default reserve (100) swallows max_tokens=60: nothing can fit, and the page says so.
    page = await inspector.page(f"{base}&max_tokens=60")
    assert re.search(r'id="included">0 of 4<', page)
    warning = re.search(r'<p class="warning budget-warning"[^>]*>([^<]*)</p>', page)
    assert warning and "reserve (100 tokens" in warning[1] and "leaves no room" in warning[1]
    # A system prompt that takes everything the reserve leaves.
    prompt = "+".join(["policy"] * 400)
    page = await inspector.page(f"{base}&max_tokens=300&reserve_tokens=0&system_prompt={prompt}")
    warning = re.search(r'<p class="warning budget-warning"[^>]*>([^<]*)</p>', page)
    assert warning and "takes all 300 available tokens" in warning[1]
    # A budget with room: no warning.
    page = await inspector.page(f"{base}&max_tokens=4000")
    assert "budget-warning" not in page


async def test_the_context_preview_shows_tool_calls_as_the_thread_page(
    inspector: Inspector,
) -> None:
    await inspector.login(inspector.data.key)
    page = await inspector.page("/ui/thread/context?id=t-orders&max_tokens=4000")
    for table in ("context-entries", "timeline"):
        body = re.search(rf'<table id="{table}">(.*?)</table>', page, re.S)
        assert body, table
        assert re.search(r"tool call <b>lookup_order</b> <code>call_1</code>", body[1]), table
        assert '{"order_id": "1234"}' in body[1]
        assert "result of tool call <code>call_1</code>" in body[1]
        assert not re.search(r"<td>\s*—\s*</td>", body[1]), table


async def test_the_favicon_is_served() -> None:
    app = create_app(memory=AsyncMemory(AsyncInMemoryStore()))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ui.test") as client:
            answer = await client.get("/favicon.ico")
            login = await client.get("/ui/login")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/x-icon"
    assert answer.content[:4] == b"\x00\x00\x01\x00" and len(answer.content) > 1000
    assert '<link rel="icon" href="/ui/static/favicon.ico">' in login.text


async def test_editing_a_fact_supersedes_it_behind_the_token_and_the_typed_id(
    inspector: Inspector,
) -> None:
    fact_id = inspector.data.edit_fact_id
    await inspector.login(inspector.data.key)
    form = await inspector.page(f"/ui/fact/edit?id={fact_id}")
    assert "The desk opens at 9" in form and 'name="csrf"' in form
    refused = [
        {"id": fact_id, "confirm": fact_id, "content": "x"},  # no token
        {"id": fact_id, "confirm": fact_id, "content": "x", "csrf": "guess"},
        {"id": fact_id, "confirm": fact_id[:-1], "content": "x", "csrf": inspector.csrf},
    ]
    for body in refused:
        assert (await inspector.post("/ui/fact/edit", body)).status_code == 403
    bad = {"id": fact_id, "confirm": fact_id, "content": "", "csrf": inspector.csrf}
    assert (await inspector.post("/ui/fact/edit", bad)).status_code == 422
    page = await inspector.page(f"/ui/fact?id={fact_id}")
    assert "The desk opens at 9" in page and "version 2" not in page  # nothing written

    done = await inspector.post(
        "/ui/fact/edit",
        {
            "id": fact_id,
            "confirm": fact_id,
            "content": "The desk opens at 8",
            "csrf": inspector.csrf,
        },
    )
    assert done.status_code == 303
    page = await inspector.page(done.headers["location"])
    assert "Saved as version 2" in page
    current = page[page.index('id="fact-content"') : page.index("</blockquote>")]
    assert "opens at 8" in current
    history = page[page.index('id="fact-history"') :]
    assert history.index("opens at 9") < history.index("opens at 8")  # kept, oldest first

    await inspector.login(inspector.data.other_key)  # another tenant cannot even see it
    await inspector.page(f"/ui/fact/edit?id={fact_id}", status=404)
    other = {"id": fact_id, "confirm": fact_id, "content": "pwned", "csrf": inspector.csrf}
    assert (await inspector.post("/ui/fact/edit", other)).status_code == 404
    await inspector.login(inspector.data.key, user="bob")  # nor a user it is not shared with
    other["csrf"] = inspector.csrf  # a new session, a new token
    assert (await inspector.post("/ui/fact/edit", other)).status_code == 404
    await inspector.login(inspector.data.key)
    assert "pwned" not in await inspector.page(f"/ui/fact?id={fact_id}")


async def test_editing_an_entity_behind_the_token_and_the_typed_id(inspector: Inspector) -> None:
    entity_id = inspector.data.edit_entity_id
    await inspector.login(inspector.data.key)
    form = await inspector.page(f"/ui/entity/edit?id={entity_id}")
    assert 'value="Zed"' in form and ">Z</textarea>" in form and ">tall</textarea>" in form
    base = {"id": entity_id, "name": "Zed Ada", "aliases": "Z\r\nZee", "observations": ""}
    assert (
        await inspector.post("/ui/entity/edit", {**base, "confirm": entity_id})
    ).status_code == 403
    wrong = {**base, "confirm": "Zed", "csrf": inspector.csrf}
    assert (await inspector.post("/ui/entity/edit", wrong)).status_code == 403
    taken = {**base, "name": "Ada", "confirm": entity_id, "csrf": inspector.csrf}
    assert (
        await inspector.post("/ui/entity/edit", taken)
    ).status_code == 409  # a person named so: merge instead
    blank = {**base, "name": " ", "confirm": entity_id, "csrf": inspector.csrf}
    assert (await inspector.post("/ui/entity/edit", blank)).status_code == 422
    assert 'value="Zed"' in await inspector.page(f"/ui/entity/edit?id={entity_id}")

    body = {
        **base,
        "observations": f"tall\r\n\r\nlikes {XSS}",
        "confirm": entity_id,
        "csrf": inspector.csrf,
    }
    done = await inspector.post("/ui/entity/edit", body)
    assert done.status_code == 303
    page = await inspector.page(done.headers["location"])
    assert "The entity was saved." in page and "Zed Ada" in page
    assert f"<li>likes {XSS}</li>" in page and "<li>tall</li>" in page
    raw = (await inspector.client.get(done.headers["location"])).text
    assert "<script>window.pwned" not in raw
    form = await inspector.page(f"/ui/entity/edit?id={entity_id}")
    assert ">Z\nZee</textarea>" in form

    await inspector.login(inspector.data.other_key)
    await inspector.page(f"/ui/entity/edit?id={entity_id}", status=404)
    other = {**base, "name": "pwned", "confirm": entity_id, "csrf": inspector.csrf}
    assert (await inspector.post("/ui/entity/edit", other)).status_code == 404
