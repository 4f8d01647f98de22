"""The scripted conversation behind ``memorybank demo``.

A travel agent ("atlas") talks with its user ("ana"): a system prompt, user and
assistant turns, one tool call and its result. The script then shows what
memorybank does with it: history windows and the tool-pairing rule, token
budgets, working memory, a branch, a rewind, and fail-closed ownership.

Deterministic: the memory's clock is a :class:`DemoClock` the script moves by
hand, and the thread id is the first free ``demo-N``, so a re-run on the same
store writes a new thread (dated one day later) and prints the same story.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from memorybank.cli.render import entries_table, format_content
from memorybank.context._sync.sessions import SessionManager
from memorybank.errors import Conflict, ThreadForbidden
from memorybank.memory._sync.core_facts import CoreFacts
from memorybank.memory._sync.memory import Memory
from memorybank.records import Entry, ToolCall

__all__ = [
    "DEMO_AGENT",
    "DEMO_START",
    "DEMO_USER",
    "SHOWCASE_RUN",
    "DemoClock",
    "run_demo",
    "seed_showcase",
]

DEMO_USER = "ana"
DEMO_AGENT = "atlas"
OTHER_USER = "mallory"
DEMO_START = datetime(2025, 6, 6, 9, 0, tzinfo=UTC)
HISTORY_LAST = 4
TOKEN_BUDGET = 60

SYSTEM_PROMPT = (
    "You are Atlas, a travel assistant. Use tools for live data. Answer in one or two sentences."
)
FORECAST_CALL = ToolCall(
    id="call_forecast_1",
    name="get_forecast",
    arguments=json.dumps({"city": "Lisbon", "day": "saturday"}),
)
FORECAST_RESULT = json.dumps({"city": "Lisbon", "day": "saturday", "rain_mm": 0.0, "high_c": 24})


class DemoClock:
    """A clock that stands still until the script moves it (inject as ``Memory(clock=...)``)."""

    def __init__(self, start: datetime = DEMO_START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def set(self, when: datetime) -> None:
        """Jump to ``when``."""
        self.now = when

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds``."""
        self.now += timedelta(seconds=seconds)


def run_demo(memory: Memory, console: Console, *, clock: DemoClock | None = None) -> str:
    """Run the scripted conversation on ``memory``, explaining each step on ``console``.

    ``clock`` is the memory's injected clock, moved between turns; without it the
    memory's own clock stamps the entries. Returns the id of the new thread.
    """

    def tick(seconds: float) -> None:
        if clock is not None:
            clock.advance(seconds)

    # -- 1. store ---------------------------------------------------------------
    _heading(console, "1. Store a conversation")
    number = len(memory.threads.list(agent_id=DEMO_AGENT)) + 1
    while True:
        thread_id = f"demo-{number}"
        if clock is not None:
            clock.set(DEMO_START + timedelta(days=number - 1))
        try:
            memory.threads.create(
                thread_id=thread_id,
                user_id=DEMO_USER,
                agent_id=DEMO_AGENT,
                title="Weekend in Lisbon",
                metadata={"source": "memorybank demo"},
            )
            break
        except Conflict:
            number += 1
    thread = memory.ensure_thread(thread_id, user_id=DEMO_USER)  # the owner gets it back
    _say(
        console,
        f"Thread [cyan]{thread.id}[/] owned by user [green]{DEMO_USER}[/], "
        f"agent [blue]{DEMO_AGENT}[/], title {thread.title!r}.",
    )

    memory.remember(thread_id, "system", SYSTEM_PROMPT)
    tick(5)
    memory.remember(thread_id, "user", "I'm in Lisbon this weekend. Will it rain on Saturday?")
    tick(2)
    memory.remember(thread_id, "assistant", None, tool_calls=[FORECAST_CALL])

    # working memory while the tool runs (shown in section 6)
    run_id = f"{thread_id}-run-1"
    with memory.working(run_id) as wm:
        wm.set("plan", ["get_forecast(Lisbon, saturday)", "answer in one sentence"])
        wm.set("forecast", json.loads(FORECAST_RESULT))
        scratch = wm.items()
        tick(1)
        memory.remember(
            thread_id,
            "tool",
            FORECAST_RESULT,
            name=FORECAST_CALL.name,
            tool_call_id=FORECAST_CALL.id,
        )
    after_run = memory.working(run_id).items()
    tick(2)
    answer = memory.remember(
        thread_id, "assistant", "No rain expected on Saturday: dry and sunny, up to 24 °C."
    )
    tick(40)
    question = memory.remember(
        thread_id, "user", "Perfect. Suggest one thing to do outdoors on Saturday evening."
    )
    tick(3)
    memory.remember(
        thread_id,
        "assistant",
        "Ride tram 28 up to Miradouro da Senhora do Monte and watch the sunset over the city.",
    )

    stored = memory.entries.list(thread_id)
    _say(
        console,
        f"Stored {len(stored)} entries: a system prompt, user and assistant turns, "
        f"and a tool call ({FORECAST_CALL.name}) with its result. Token counts are exact "
        "(o200k_base, message overhead included).",
    )
    console.print(entries_table(stored, title=f"thread {thread_id}, branch main"))

    # -- 2. history window --------------------------------------------------------
    _heading(console, f"2. History window: memory.history(thread, last={HISTORY_LAST})")
    raw_tail = stored[-HISTORY_LAST:]
    window = memory.history(thread_id, last=HISTORY_LAST)
    _say(
        console,
        f"The newest {HISTORY_LAST} stored entries are positions "
        f"{raw_tail[0].position}-{raw_tail[-1].position}.",
    )
    console.print(_messages_table(window, title=f"history(last={HISTORY_LAST})"))
    called = {c.id for entry in raw_tail for c in entry.tool_calls}
    orphans = [e for e in raw_tail if e.role == "tool" and e.tool_call_id not in called]
    if orphans:
        orphan = orphans[0]
        caller = next(e for e in stored if any(c.id == orphan.tool_call_id for c in e.tool_calls))
        _say(
            console,
            f"Tool pairing rule: the window cut between the call (#{caller.position}) and its "
            f"result (#{orphan.position}), so the orphaned tool result was dropped: "
            f"{len(window)} messages instead of {HISTORY_LAST}. Providers reject a tool "
            "result without its call.",
        )
        wider = memory.history(thread_id, last=HISTORY_LAST + 1)
        roles = ", ".join(_role_label(m) for m in wider)
        _say(console, f"history(last={HISTORY_LAST + 1}) keeps the pair: {roles}.")

    # -- 3. token budget ------------------------------------------------------------
    _heading(
        console, f"3. Token-budgeted window: memory.entries.list(thread, max_tokens={TOKEN_BUDGET})"
    )
    budgeted = memory.entries.list(thread_id, max_tokens=TOKEN_BUDGET)
    used = sum(e.token_count for e in budgeted)
    console.print(entries_table(budgeted, title=f"max_tokens={TOKEN_BUDGET}"))
    message = f"Kept the {len(budgeted)} newest entries that fit: {used} of {TOKEN_BUDGET} tokens."
    older = [e for e in stored if budgeted and e.position < budgeted[0].position]
    if older:
        nxt = older[-1]
        message += (
            f" The next older entry (#{nxt.position}, {nxt.role}, {nxt.token_count} tokens) "
            f"would bring it to {used + nxt.token_count}."
        )
    _say(console, message)

    # -- 4. branch --------------------------------------------------------------------
    _heading(console, "4. Branch: an alternative answer")
    tick(60)
    memory.branches.create(thread_id, "alt", from_entry=question.id)
    memory.branches.checkout(thread_id, "alt")
    tick(2)
    memory.remember(
        thread_id,
        "assistant",
        "Walk the riverside from Cais do Sodré to Belém and end with a pastel de nata.",
    )
    _say(
        console,
        f"branches.create(thread, 'alt', from_entry=<#{question.position}>) copied the "
        "history up to the user's question; after checkout('alt') the agent answered "
        "differently. Both lines live side by side:",
    )
    main_tail = memory.entries.list(thread_id, branch="main", limit=3)
    alt_tail = memory.entries.list(thread_id, branch="alt", limit=3)
    grid = Table.grid(padding=(0, 2), expand=True)
    grid.add_column(ratio=1)
    grid.add_column(ratio=1)
    grid.add_row(
        _compact_table(main_tail, title="main (last 3)"),
        _compact_table(alt_tail, title="alt (last 3, current)"),
    )
    console.print(grid)

    # -- 5. rewind --------------------------------------------------------------------
    _heading(console, "5. Rewind: time travel on main")
    tick(60)
    memory.branches.checkout(thread_id, "main")
    removed = memory.branches.rewind(thread_id, answer.id)
    _say(
        console,
        f"checkout('main'), then branches.rewind(thread, <#{answer.position}>) deleted the "
        f"{removed} entries after the weather answer. memory.history(thread) now:",
    )
    console.print(_messages_table(memory.history(thread_id), title="history() after rewind"))
    alt_count = memory.entries.count(thread_id, branch="alt")
    _say(console, f"Branch alt is untouched: {alt_count} entries.")

    # -- 6. working memory -------------------------------------------------------------
    _heading(console, "6. Working memory")
    _say(
        console,
        f"While the tool ran, the agent kept scratch notes for run [cyan]{run_id}[/] in "
        f"working memory ([bold]with memory.working({run_id!r}) as wm[/]):",
    )
    console.print(_kv_table(scratch, title="wm.items() inside the block"))
    _say(console, f"After the block: wm.items() == {after_run!r} (cleared when the run ends).")

    # -- 7. ownership -------------------------------------------------------------------
    _heading(console, "7. Fail-closed ownership")
    memory.ensure_thread(thread_id, user_id=DEMO_USER)
    _say(console, f"ensure_thread({thread_id!r}, user_id={DEMO_USER!r}): ok, the owner.")
    for label, attempt in (
        (
            f"ensure_thread({thread_id!r}, user_id={OTHER_USER!r})",
            lambda: memory.ensure_thread(thread_id, user_id=OTHER_USER),
        ),
        (
            f"history({thread_id!r}, user_id={OTHER_USER!r})",
            lambda: memory.history(thread_id, user_id=OTHER_USER),
        ),
    ):
        try:
            attempt()
        except ThreadForbidden as error:
            console.print(
                Text.assemble(
                    f"{label}: ",
                    (f"ThreadForbidden [{error.code}]: {error}", "bold red"),
                ),
                soft_wrap=True,
            )
        else:  # pragma: no cover - would be a security bug
            raise AssertionError(f"{label} was not refused")
    _say(console, "The refusal reveals nothing about the thread (not even that it has entries).")
    return thread_id


#: The snapshot ``seed_showcase`` saves: its presence means the showcase is already seeded.
SHOWCASE_RUN = "trip-planner-ana"


def seed_showcase(memory: Memory, thread_id: str, *, clock: DemoClock | None = None) -> bool:
    """Give every page of the inspector something to show (``memorybank serve --demo``):
    facts (one superseded), core facts, documents, a small graph, a summary, a session,
    working memory left open and a snapshot, around the demo thread ``thread_id``.

    Written once per store: a second call (the snapshot ``SHOWCASE_RUN`` exists) writes
    nothing and returns ``False``.
    """
    if memory.snapshots.load(SHOWCASE_RUN, user_id=DEMO_USER) is not None:
        return False
    if clock is not None:
        clock.advance(120)
    source = [e.id for e in memory.entries.list(thread_id, limit=3)]
    fact = memory.facts.add(
        content="Ana is visiting Lisbon this weekend",
        user_id=DEMO_USER,
        agent_id=DEMO_AGENT,
        category="plans",
        confidence=0.9,
        source="demo",
        source_entries=source,
    )
    memory.facts.supersede(fact.id, "Ana is visiting Lisbon on Saturday and Sunday")
    memory.facts.add(
        content="Ana likes sunsets and walking tours",
        user_id=DEMO_USER,
        agent_id=DEMO_AGENT,
        category="preference",
    )
    core = CoreFacts(memory=memory, user_id=DEMO_USER)
    core.set("name", "Ana")
    core.set("home_city", "Porto")
    core.set("home_city", "Coimbra")  # moved: both values stay in the history
    core.set("units", "metric")
    memory.documents.add(
        "Tram 28 runs from Martim Moniz to Campo de Ourique through Alfama and Graça, "
        "every 10-15 minutes from 7:00 to 23:00.",
        metadata={"source": "demo travel guide"},
    )
    memory.documents.add(
        "Miradouro da Senhora do Monte is the highest viewpoint in Lisbon; best at sunset.",
        metadata={"source": "demo travel guide"},
    )
    graph = memory.graph
    ana = graph.add_entity("Ana", type="person", user_id=DEMO_USER, observations=["likes sunsets"])
    lisbon = graph.add_entity("Lisbon", type="location", observations=["capital of Portugal"])
    tram = graph.add_entity("Tram 28", type="transport", aliases=["Eléctrico 28"])
    view = graph.add_entity("Miradouro da Senhora do Monte", type="place")
    graph.add_relation(ana.id, "visits", lisbon.id, user_id=DEMO_USER)
    graph.add_relation(tram.id, "runs_in", lisbon.id)
    graph.add_relation(view.id, "located_in", lisbon.id)
    graph.add_relation(tram.id, "stops_near", view.id)
    memory.summaries.add(
        content="Ana asked about Saturday's weather in Lisbon (dry, 24 °C) and got a "
        "sunset suggestion: tram 28 to Miradouro da Senhora do Monte.",
        agent_id=DEMO_AGENT,
        user_id=DEMO_USER,
    )
    session = SessionManager(memory).get_or_create(
        channel_type="web", channel_id="browser-1", user_id=DEMO_USER, agent_id=DEMO_AGENT
    )
    memory.remember(session.id, "user", "Hi Atlas, any tips for a rainy day in Lisbon?")
    memory.remember(session.id, "assistant", "The tile museum and the Oceanário are indoors.")
    # Working memory of a run still in progress (no ``with`` block: it is not cleared).
    run = memory.working(f"{thread_id}-run-2", user_id=DEMO_USER, agent_id=DEMO_AGENT)
    run.set("plan", ["check tram times", "suggest a viewpoint"])
    run.set("budget_eur", 40)
    memory.snapshots.save(
        SHOWCASE_RUN,
        {"step": "itinerary", "days": ["saturday", "sunday"], "done": ["weather"]},
        user_id=DEMO_USER,
    )
    return True


# -- rendering helpers ----------------------------------------------------------------


def _heading(console: Console, title: str) -> None:
    console.print()
    console.rule(Text(title, style="bold"), align="left")


def _say(console: Console, markup: str) -> None:
    console.print(markup)


def _role_label(message: dict[str, Any]) -> str:
    if message.get("tool_calls"):
        return f"{message['role']}(call)"
    return str(message["role"])


def _messages_table(messages: Sequence[dict[str, Any]], *, title: str) -> Table:
    """Provider-shaped messages (what a model would receive)."""
    table = Table(title=title, title_justify="left")
    table.add_column("role", style="bold", no_wrap=True)
    table.add_column("content / tool calls", overflow="fold", ratio=1)
    for message in messages:
        parts: list[str] = []
        if message.get("tool_call_id"):
            parts.append(f"[{message['tool_call_id']}]")
        if message.get("content"):
            parts.append(str(message["content"]))
        parts.extend(
            f"→ {call['function']['name']}({call['function']['arguments']})"
            for call in message.get("tool_calls", ())
        )
        table.add_row(Text(str(message["role"])), Text(" ".join(parts)))
    return table


def _compact_table(entries: Sequence[Entry], *, title: str) -> Table:
    table = Table(title=title, title_justify="left", expand=True)
    table.add_column("#", justify="right", style="cyan", no_wrap=True)
    table.add_column("role", style="bold", no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1)
    for entry in entries:
        table.add_row(str(entry.position), entry.role, Text(format_content(entry, 90)))
    return table


def _kv_table(items: dict[str, Any], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("key", style="cyan", no_wrap=True)
    table.add_column("value (JSON)", overflow="fold", ratio=1)
    for key, value in items.items():
        table.add_row(Text(key), Text(json.dumps(value, ensure_ascii=False)))
    return table
