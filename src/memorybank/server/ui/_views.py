"""The inspector's pages of threads and long-term memory: the threads, a thread's entries
per branch, its ``build_context`` preview; facts, documents, summaries, search, the
knowledge graph, webhooks; deleting a thread and forgetting a user.

Every page reads through the caller's ``AsyncMemory`` handle (``root.tenant(T)`` or
``root.tenant(T).scoped(user_id=U)``, see ``_page``) and nothing else. Pages only
read; the writes (here and in ``_edit_views``) are POSTs that need the session's CSRF
token and the target's id typed again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from fastapi.responses import Response

from memorybank.errors import InvalidInput, MemoryBankError, NotFound, StoreError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Branch, Entry, Thread
from memorybank.server.errors import refused_by_store
from memorybank.server.routes import deleted
from memorybank.server.ui._fact_extras import fact_extras, importance_of
from memorybank.server.ui._graph_svg import EDGE_FONT, LINE_HEIGHT, NODE_FONT, draw
from memorybank.server.ui._page import (
    MAX_PAGE,
    PAGE_SIZE,
    Pages,
    Refused,
    Viewer,
    checked,
    confirm,
    go,
    known,
    link,
    listing,
    number,
    one,
    paged,
    pager,
    required,
    show,
)
from memorybank.server.ui._usage_svg import chart
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.webhooks.registry import Webhooks

if TYPE_CHECKING:
    from memorybank.context.values import ContextOptions, Strategy
    from memorybank.recall._async.search import SearchMode

__all__ = ["PAGE_SIZE", "register"]

_MAX_TOKENS = 10_000_000
_TIMELINE = 200  # newest entries listed in or out of a previewed context
_CHART_ENTRIES = 2000  # newest entries of a branch the token chart plots
_FORK_SCAN = 20_000  # newest entries of a parent branch searched for a fork point's page
_STRATEGIES = ("recent", "relevant", "hybrid")
_GRAPH_MAX_DEPTH = 3
_GRAPH_MAX_NODES = 60  # what a picture can show legibly
_GRAPH_MAX_EDGES = 150
_MODES = ("hybrid", "keyword", "semantic")
_KINDS = {
    "entries,documents": ("entries and documents", ("entries", "documents")),
    "entries,documents,facts": ("entries, documents and facts", ("entries", "documents", "facts")),
    "entries": ("entries", ("entries",)),
    "documents": ("documents", ("documents",)),
    "facts": ("facts", ("facts",)),
}


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Where a branch was taken from: the entry, and the branch and page that show it.

    ``branch`` is the parent when the entry is still on it, else the forked branch's
    own copy (the parent was rewound past it or deleted); ``None`` when neither holds it.
    """

    entry_id: str
    from_branch: str
    branch: str | None = None
    page: int = 1
    position: int | None = None


async def _page_of(memory: AsyncMemory, thread_id: str, branch: str, entry_id: str) -> int | None:
    """The thread page (newest first, ``PAGE_SIZE`` a page) holding ``entry_id`` on
    ``branch``, scanning its newest ``_FORK_SCAN`` entries; ``None`` if not there."""
    step = 1000
    for offset in range(0, _FORK_SCAN, step):
        rows = await memory.entries.list(
            thread_id, branch=branch, limit=step, offset=offset, order="desc"
        )
        for index, row in enumerate(rows, start=offset):
            if row.id == entry_id:
                return index // PAGE_SIZE + 1
        if len(rows) < step:
            return None
    return None


async def _fork_point(memory: AsyncMemory, thread_id: str, b: Branch, names: set[str]) -> ForkPoint:
    assert b.from_branch is not None and b.from_entry is not None
    for where in (b.from_branch, b.name):
        if where not in names:
            continue
        entry = await memory.entries.get(thread_id, b.from_entry, branch=where)
        if entry is None:
            continue
        page = await _page_of(memory, thread_id, where, entry.id)
        return ForkPoint(b.from_entry, b.from_branch, where, page or 1, entry.position)
    return ForkPoint(b.from_entry, b.from_branch)


def _budget_field(name: str, value: str, low: int) -> str | None:
    """Why a token count typed in the context preview is refused, or ``None`` (empty is the
    default; a count is a whole number from ``low`` to ``_MAX_TOKENS``)."""
    text = value.strip()
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or not low <= number <= _MAX_TOKENS:
        return f"{name} must be a whole number from {low} to {_MAX_TOKENS}, not {text!r}."
    return None


def _budget_notes(options: ContextOptions, budget: dict[str, int], total_entries: int) -> list[str]:
    """Warnings about a budget that leaves the history no room (the preview shows them above
    the result, as ``build_context`` itself truncates silently)."""
    if options.available == 0:
        how = "" if options.reserve_tokens is not None else ", the default max(100, 10%)"
        return [
            f"The reserve ({options.reserve} tokens{how}) "
            f"leaves no room: max_tokens {options.max_tokens} minus the reserve is 0, so "
            "no message fits. Raise max_tokens above the reserve or lower reserve_tokens."
        ]
    if total_entries and budget["history_budget"] == 0:
        return [
            f"The system message ({budget['system']} tokens) takes all {options.available} "
            "available tokens: no history entry fits. Raise max_tokens, lower the reserve, "
            "or turn blocks off."
        ]
    return []


async def _list_threads(
    memory: AsyncMemory,
    *,
    q: str,
    user: str | Unset,
    agent: str | Unset,
    status: str | None,
    limit: int,
) -> list[Thread]:
    """The first ``limit`` threads (newest first) matching the filters, or all there are.

    The store pages threads by ``limit`` only; with a text search the scan widens until
    that many matched or the tenant has no more threads.
    """
    needle = q.casefold()
    want = limit
    while True:
        rows = await memory.threads.list(user_id=user, agent_id=agent, status=status, limit=limit)
        matched = (
            [t for t in rows if needle in t.id.casefold() or needle in (t.title or "").casefold()]
            if needle
            else rows
        )
        if len(matched) >= want or len(rows) < limit:
            break
        limit *= 4
    return matched


def register(r: Pages) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    # -- threads -----------------------------------------------------------------

    @r.page("/threads")
    async def threads(
        viewer: Viewer,
        q: str = "",
        user: str = "",
        agent: str = "",
        status: str = "",
        page: str = "",
        deleted: str = "",
    ) -> Response:
        rows = functools.partial(
            _list_threads,
            viewer.memory,
            q=q.strip(),
            user=viewer.user_filter(user),
            agent=agent or UNSET,
            status=status if status in ("active", "archived") else None,
        )
        notice = f"Thread {deleted} was deleted." if deleted else None
        filters: dict[str, Any] = {"q": q, "user": user, "agent": agent, "status": status}
        title, template = "Threads", "threads.html"
        return await listing(viewer, title, template, page, rows, notice=notice, **filters)

    @r.page("/thread")
    async def thread(viewer: Viewer, id: str = "", branch: str = "", page: str = "") -> Response:
        thread_id = required(id)
        memory = viewer.memory
        found = await memory.threads.require(thread_id)
        name = branch or found.current_branch
        n = number(page, 1, 1, MAX_PAGE)
        branches = await memory.branches.list(thread_id)
        names = {b.name for b in branches}
        forks = {
            b.name: await _fork_point(memory, thread_id, b, names)
            for b in branches
            if b.from_branch is not None and b.from_entry is not None
        }
        entries = await memory.entries.list(
            thread_id, branch=name, limit=PAGE_SIZE, offset=(n - 1) * PAGE_SIZE
        )
        total = await memory.entries.count(thread_id, branch=name)
        plotted = await memory.entries.list(thread_id, branch=name, limit=_CHART_ENTRIES)
        return show(
            viewer,
            "thread.html",
            found.title or found.id,
            thread=found,
            branch=name,
            branches=branches,
            forks=forks,
            entries=entries,
            total=total,
            tokens_on_page=sum(e.token_count for e in entries),
            usage=chart(plotted),
            chart_limit=_CHART_ENTRIES,
            pager=pager(viewer, n, n * PAGE_SIZE < total),
        )

    @r.page("/thread/context")
    async def context(
        viewer: Viewer,
        id: str = "",
        input: str = "",
        system_prompt: str = "",
        agent: str = "",
        max_tokens: str = "",
        reserve_tokens: str = "",
        strategy: str = "recent",
        facts: str = "",
        semantic: str = "",
        graph: str = "",
    ) -> Response:
        from memorybank.context.values import ContextOptions

        thread_id = required(id)
        found = await viewer.memory.threads.require(thread_id)
        who = agent or found.agent_id or ""
        chosen = cast("Strategy", strategy if strategy in _STRATEGIES else "recent")
        typed = (("max_tokens", max_tokens, 1), ("reserve_tokens", reserve_tokens, 0))
        refused = [message for message in (_budget_field(*t) for t in typed) if message]
        reserve = number(reserve_tokens, 0, 0, _MAX_TOKENS) if reserve_tokens.strip() else None
        options = ContextOptions(
            max_tokens=number(max_tokens, 4000, 1, _MAX_TOKENS),
            strategy=chosen,
            reserve_tokens=reserve,
        )
        form = {
            "input": input,
            "system_prompt": system_prompt,
            "agent": who,
            "max_tokens": max_tokens.strip() if refused else options.max_tokens,
            "reserve_tokens": reserve_tokens.strip() if refused or reserve is None else reserve,
            "strategy": chosen,
            "facts": bool(facts),
            "semantic": bool(semantic),
            "graph": bool(graph),
        }
        ctx = None
        error = None
        budget: dict[str, int] = {
            "max_tokens": options.max_tokens,
            "reserve": options.reserve,
            "available": options.available,
        }
        timeline: list[tuple[Entry, bool]] = []
        notes: list[str] = []
        if refused:
            error = " ".join(refused)
        elif who:
            ctx = await viewer.memory.build_context(
                thread_id,
                max_tokens=options.max_tokens,
                reserve_tokens=reserve,
                strategy=chosen,
                agent_id=who,
                user_id=found.user_id,  # the thread's owner: what its agent turns see
                system_prompt=system_prompt or None,
                current_input=input or None,
                include_facts=bool(facts),
                include_semantic_context=bool(semantic),
                include_graph_context=bool(graph),
            )
            # Why each entry is in or out: the newest ones of the branch beside the choice.
            chosen_ids = {e.id for e in ctx.entries}
            recent = await viewer.memory.entries.list(thread_id, limit=_TIMELINE)
            timeline = [(e, e.id in chosen_ids) for e in reversed(recent)]
            history_tokens = sum(e.token_count for e in ctx.entries)
            budget["system"] = ctx.token_count - history_tokens
            budget["history_budget"] = max(0, options.available - budget["system"])
            budget["history"] = history_tokens
            notes = _budget_notes(options, budget, ctx.total_entries)
        else:
            error = "This thread has no agent: name the agent the context is built for."
        return show(
            viewer,
            "context.html",
            "build_context preview",
            status_code=400 if refused else 200,
            thread=found,
            form=form,
            strategies=_STRATEGIES,
            ctx=ctx,
            error=error,
            budget=budget,
            budget_notes=notes,
            timeline=timeline,
            timeline_limit=_TIMELINE,
        )

    @r.page("/thread/delete")
    async def delete_confirm(viewer: Viewer, id: str = "") -> Response:
        thread_id = required(id)
        found = await viewer.memory.threads.require(thread_id)
        count = await viewer.memory.entries.count(thread_id)
        return confirm(
            viewer,
            "Delete thread",
            found.id,
            warning="This deletes the thread with all its entries and branches. "
            "It cannot be undone.",
            details=[
                ("Thread", found.id),
                ("Title", found.title or "(untitled)"),
                ("User", found.user_id or "—"),
                ("Entries on the current branch", str(count)),
            ],
            action=link(viewer, "/thread/delete"),
            button="Delete thread",
            cancel=link(viewer, "/thread", id=found.id),
        )

    @r.form("/thread/delete")
    async def delete(viewer: Viewer) -> Response:
        _, thread_id = await checked(viewer, "deleted")
        deleted(await viewer.memory.threads.delete(thread_id), f"thread {thread_id!r}")
        return go(viewer, "/threads", deleted=thread_id)

    # -- long-term memory --------------------------------------------------------

    @r.page("/facts")
    async def facts(
        viewer: Viewer,
        user: str = "",
        agent: str = "",
        category: str = "",
        expired: str = "",
        page: str = "",
    ) -> Response:
        n = number(page, 1, 1, MAX_PAGE)
        rows = await viewer.memory.facts.list(
            user_id=viewer.user_filter(user),
            agent_id=agent or UNSET,
            category=category.strip() or None,
            include_expired=bool(expired),
        )
        shown, pages = paged(viewer, rows, n)
        return show(
            viewer,
            "facts.html",
            "Facts",
            facts=shown,
            usage=await importance_of(viewer.memory, shown),
            user=user,
            agent=agent,
            category=category,
            expired=bool(expired),
            pager=pages,
        )

    @r.page("/fact")
    async def fact(viewer: Viewer, id: str = "", saved: str = "") -> Response:
        fact_id = required(id)
        current = await viewer.memory.facts.get(fact_id)
        history = await viewer.memory.facts.history(fact_id)
        if current is None and not history:
            raise NotFound(f"fact {fact_id!r} not found")
        notice = (
            f"Saved as version {current.version}; the earlier value stays in the history."
            if saved and current is not None
            else None
        )
        extras = await fact_extras(viewer.memory, fact_id, history)
        return show(
            viewer,
            "fact.html",
            "Fact",
            fact=current,
            history=history,
            notice=notice,
            **extras,
        )

    @r.page("/documents")
    async def documents(viewer: Viewer, page: str = "") -> Response:
        rows = viewer.memory.documents.list
        return await listing(viewer, "Documents", "documents.html", page, rows)

    @r.page("/document")
    async def document(viewer: Viewer, id: str = "") -> Response:
        document = await one("document", id, viewer.memory.documents.get)
        return show(viewer, "document.html", "Document", document=document)

    @r.page("/summaries")
    async def summaries(viewer: Viewer, agent: str = "", user: str = "") -> Response:
        rows = []
        if agent:
            rows = await viewer.memory.summaries.list(
                agent_id=agent, user_id=viewer.user_filter(user)
            )
        return show(
            viewer,
            "summaries.html",
            "Summaries",
            agents=await known(viewer.memory, "agent_id"),
            agent=agent,
            user=user,
            summaries=rows,
        )

    @r.page("/search")
    async def search(
        viewer: Viewer,
        q: str = "",
        mode: str = "hybrid",
        kinds: str = "entries,documents",
        thread: str = "",
        k: str = "",
        history: str = "",
    ) -> Response:
        chosen_mode = cast("SearchMode", mode if mode in _MODES else "hybrid")
        chosen_kinds = kinds if kinds in _KINDS else "entries,documents"
        # Earlier values are facts' only: the box means nothing for other kinds.
        with_history = bool(history) and "facts" in _KINDS[chosen_kinds][1]
        count = number(k, 10, 1, 100)
        hits = []
        error = None
        if q.strip():
            try:
                hits = await viewer.memory.search(
                    q,
                    k=count,
                    mode=chosen_mode,
                    thread_id=thread or None,
                    kinds=_KINDS[chosen_kinds][1],
                    include_history=with_history,
                )
            except MemoryBankError as exc:  # e.g. semantic mode without an embedder
                if isinstance(exc, StoreError) or refused_by_store(exc):
                    raise  # the error page: the store's words stay in the log
                error = str(exc)
        return show(
            viewer,
            "search.html",
            "Search",
            q=q,
            mode=chosen_mode,
            modes=_MODES,
            kinds=chosen_kinds,
            kind_choices=[(value, label) for value, (label, _) in _KINDS.items()],
            history=bool(history),
            thread=thread,
            k=count,
            hits=hits,
            error=error,
        )

    @r.page("/graph")
    async def graph(
        viewer: Viewer,
        entity: str = "",
        q: str = "",
        depth: str = "",
        page: str = "",
        saved: str = "",
    ) -> Response:
        """Entities (found by name), and the subgraph around one, drawn as SVG."""

        hops = number(depth, 2, 1, _GRAPH_MAX_DEPTH)
        n = number(page, 1, 1, MAX_PAGE)
        matches = await viewer.memory.graph.find_entities(
            q.strip() or None, limit=min(n * PAGE_SIZE + 1, 10_000)
        )
        shown, pages = paged(viewer, matches, n)
        drawing = centre = None
        if entity:
            centre = await one("entity", entity, viewer.memory.graph.get_entity)
            subgraph = await viewer.memory.graph.traverse(
                [centre.id],
                max_depth=hops,
                max_nodes=_GRAPH_MAX_NODES,
                max_edges=_GRAPH_MAX_EDGES,
            )
            drawing = draw(subgraph, centre.id)
        return show(
            viewer,
            "graph.html",
            "Knowledge graph",
            entities=shown,
            q=q,
            depth=hops,
            max_depth=_GRAPH_MAX_DEPTH,
            centre=centre,
            drawing=drawing,
            edge_font=EDGE_FONT,
            node_font=NODE_FONT,
            line_height=LINE_HEIGHT,
            pager=pages,
            notice="The entity was saved." if saved and centre is not None else None,
        )

    # -- webhooks (read only: the admin routes manage them) ------------------------

    @r.page("/webhooks")
    async def webhooks(viewer: Viewer) -> Response:
        if viewer.user_id is not None:
            raise Refused("Webhooks are the tenant's: log in without a user to see them.")
        registry: Webhooks = viewer.request.app.state.webhooks
        rows = await registry.list(viewer.tenant)
        return show(viewer, "webhooks.html", "Webhooks", webhooks=rows)

    # -- forget a user -------------------------------------------------------------

    @r.page("/forget")
    async def forget_form(viewer: Viewer) -> Response:
        return show(viewer, "forget.html", "Forget a user")

    @r.page("/forget/confirm")
    async def forget_confirm(viewer: Viewer, user: str = "") -> Response:
        target = user  # exactly as typed: "bob " is another user than "bob"
        if not target:
            raise InvalidInput("name the user to forget", field="user")
        return confirm(
            viewer,
            "Forget a user",
            target,
            "user",
            warning=f"This erases everything derived from user {target} in tenant "
            f"{viewer.tenant}: threads, entries, facts, documents, snapshots and "
            "summaries. It cannot be undone.",
            details=[],
            action=link(viewer, "/forget"),
            button="Forget this user",
            cancel=link(viewer, "/forget"),
        )

    @r.form("/forget")
    async def forget(viewer: Viewer) -> Response:
        # The user exactly as typed, as on the confirmation page.
        _, target = await checked(viewer, "erased", field="user")
        gone = await viewer.memory.forget_user(target)
        body = f"User {target} was forgotten: {gone} records erased."
        return show(viewer, "message.html", "User forgotten", body=body)
