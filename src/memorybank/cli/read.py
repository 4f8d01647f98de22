"""CLI read commands (``search``, ``facts``, ``documents``, ``context``) and erasure.

Registered on ``memorybank.cli.app`` by ``register``. Commands that read (and
the erasing ones, which need an existing store) open the store with
``open_existing``: a ``sqlite://`` path that does not exist is an error, never
a new empty file.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from memorybank.cli.common import (
    AgentOption,
    EmbedderOption,
    TenantOption,
    UrlOption,
    UserOption,
    _console,
    _errors,
    chosen_embedder,
    empty_listing,
    format_time,
    or_unset,
    resolve_url,
)
from memorybank.dump import format as _dump
from memorybank.embeddings.base import Embedder
from memorybank.errors import NotFound
from memorybank.importance import HalfLife
from memorybank.memory._sync.memory import DEFAULT_TENANT, Memory
from memorybank.records import Hit
from memorybank.stores._async.open import sqlite_path
from memorybank.stores.keyword.bm25 import BM25Index

if TYPE_CHECKING:
    from memorybank.core.judge import LLMJudge
    from memorybank.recall._async.search import SearchMode

__all__ = ["JsonOption", "bm25_ranked", "emit_json", "message_text", "open_existing", "register"]

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON (one document on stdout) instead of tables.")
]
ThreadArgument = Annotated[str, typer.Argument(help="The thread id.", show_default=False)]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")]


class Mode(enum.StrEnum):
    """Search mode."""

    hybrid = "hybrid"
    keyword = "keyword"
    semantic = "semantic"


class Strategy(enum.StrEnum):
    """How ``build_context`` chooses history."""

    recent = "recent"
    relevant = "relevant"
    hybrid = "hybrid"


class Kind(enum.StrEnum):
    """What a search covers."""

    entries = "entries"
    documents = "documents"
    facts = "facts"


def open_existing(
    url: str | None,
    tenant: str,
    *,
    embedder: Embedder | None = None,
    judge: LLMJudge | None = None,
) -> Memory:
    """A ``Memory`` on a store that must already exist (``NotFound`` for a missing SQLite file).

    Opening SQLite creates the file (and a read would then show an empty
    store), so a read command checks first: a mistyped path is an error.
    """
    resolved = resolve_url(url)
    if resolved.split(":", 1)[0].split("+", 1)[0].lower() == "sqlite":
        path = sqlite_path(resolved)
        if path != ":memory:" and not Path(path).is_file():
            raise NotFound(f"no SQLite store at {path!r} (read commands never create one)")
    return Memory(resolved, tenant_id=tenant, embedder=embedder, judge=judge)


def emit_json(value: Any) -> None:
    """Print ``value`` (records by their dataclass fields) as one JSON document."""
    typer.echo(json.dumps(_dump.encode(value), ensure_ascii=False, indent=2))


def _cell(text: str | None, limit: int = 160) -> Text:
    flat = " ".join((text or "").split())
    return Text(flat if len(flat) <= limit else flat[: limit - 1] + "…")


@dataclasses.dataclass(frozen=True, slots=True)
class Listing:
    """What a listing command prints of ``WHAT`` (``print``): the records as JSON
    (``--json``), the line saying there are none (``empty_listing``), or a table titled
    ``WHAT (tenant T)``: ``draw``'s, or of ``columns`` (name, cell of a record; each
    folded when long, ``wide`` taking the spare width)."""

    what: str
    columns: Sequence[tuple[str, Callable[[Any], RenderableType]]] = ()
    wide: str = ""
    draw: Callable[..., Table] | None = None

    def print(
        self, memory: Memory, found: Sequence[Any], *, as_json: bool, url: str | None, tenant: str
    ) -> None:
        if as_json:
            emit_json(found)
            return
        console = _console()
        if not found:
            console.print(empty_listing(self.what, tenant, url, memory.store), soft_wrap=True)
            return
        title = f"{self.what} (tenant {tenant})"
        if self.draw is not None:
            console.print(self.draw(found, title=title))
            return
        table = Table(title=title, title_justify="left")
        for name, _ in self.columns:
            table.add_column(name, overflow="fold", ratio=1 if name == self.wide else None)
        for record in found:
            table.add_row(*(cell(record) for _, cell in self.columns))
        console.print(table)


#: The columns of listings: a name, and a record's cell.
ID = ("id", lambda record: Text(record.id))
AGENT = ("agent", lambda record: Text(record.agent_id or "-"))
USER = ("user", lambda record: Text(record.user_id or "-"))
CONTENT = ("content", lambda record: _cell(record.content))
UPDATED = ("updated (UTC)", lambda record: format_time(record.updated_at))
VERSION = ("v", lambda fact: str(fact.version))
CATEGORY = ("category", lambda fact: Text(fact.category or "-"))

FACTS = Listing("facts", (ID, VERSION, AGENT, USER, CATEGORY, CONTENT, UPDATED), wide="content")
DOCUMENTS = Listing("documents", (ID, AGENT, USER, CONTENT, UPDATED), wide="content")


def search(
    query: Annotated[str, typer.Argument(help="What to look for.", show_default=False)],
    k: Annotated[int, typer.Option("--k", min=1, help="How many hits.")] = 10,
    mode: Annotated[
        Mode | None,
        typer.Option(
            "--mode",
            help="Ranking mode. Default: hybrid with an embedder (--embedder), else keyword.",
            show_default=False,
        ),
    ] = None,
    thread_id: Annotated[
        str | None, typer.Option("--thread-id", help="Search one thread only.")
    ] = None,
    kinds: Annotated[
        list[Kind] | None,
        typer.Option(
            "--kinds",
            help="What to search (repeat for several; default: entries and documents).",
            show_default=False,
        ),
    ] = None,
    include_history: Annotated[
        bool,
        typer.Option("--include-history", help="With --kinds facts: earlier values of facts too."),
    ] = False,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score", help="Drop weaker hits (on the mode's scale).", show_default=False
        ),
    ] = None,
    decay: Annotated[
        float | None,
        typer.Option(
            "--decay",
            min=0.001,
            help="Weigh hits by recency of use and importance: the half-life in days"
            " (memorybank.importance.HalfLife; hybrid and semantic modes).",
            show_default=False,
        ),
    ] = None,
    user: UserOption = None,
    agent: AgentOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Search entries, documents and facts, best first.

    Ranked by default: hybrid (keyword, semantic and conversation context) when an
    embedder is configured (--embedder, or $MEMORYBANK_EMBEDDER), else keyword. Keyword
    hits are the store's full-text matches scored with BM25 among the candidates (the
    stores' own full-text scales differ, and SQLite's gives about 0 to a word found in
    half the entries), so the order and the scores mean the same on every store.
    """
    kinds_value = tuple(dict.fromkeys(k.value for k in kinds or [])) or ("entries", "documents")
    chosen = chosen_embedder(embedder)
    ranking: SearchMode = (
        mode.value if mode is not None else ("hybrid" if chosen is not None else "keyword")
    )
    with _errors(), open_existing(url, tenant, embedder=chosen) as memory:
        hits = memory.search(
            query,
            # keyword: more candidates than shown, so that BM25 picks the best k of them
            k=k if ranking != "keyword" else max(3 * k, KEYWORD_CANDIDATES),
            mode=ranking,
            thread_id=thread_id,
            user_id=or_unset(user),
            agent_id=or_unset(agent),
            kinds=kinds_value,
            min_score=min_score,
            include_history=include_history,
            decay=None if decay is None else HalfLife(days=decay),
        )
        if ranking == "keyword":
            hits = bm25_ranked(query, hits)[:k]
        if as_json:
            emit_json(hits)
            return
        console = _console()
        if not hits:
            line = empty_listing("hits", tenant, url, memory.store)
            if ranking == "keyword":
                line += f"; {KEYWORD_HINT}"
            console.print(line, soft_wrap=True)
            return
        table = Table(title=f"search {query!r}", title_justify="left")
        for name in ("score", "kind", "id", "where", "content"):
            table.add_column(name, overflow="fold", ratio=1 if name == "content" else None)
        for hit in hits:
            where = _where(hit)
            table.add_row(
                f"{hit.score:.3f}", hit.kind, Text(hit.id), Text(where), _cell(hit.content)
            )
        console.print(table)


#: What an empty keyword search adds to its line: why "sun" does not find "sunsets".
KEYWORD_HINT = (
    "keyword search (no embedder) matches whole words: --embedder local (as make run)"
    " also finds by meaning"
)

#: Fewest keyword candidates fetched for BM25 to rank (``3 * k`` when larger).
KEYWORD_CANDIDATES = 30


def bm25_ranked(query: str, hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` scored with Okapi BM25 among themselves (``memorybank.stores.keyword.bm25``),
    best first (ties: the store's order)."""
    index = BM25Index()
    for number, hit in enumerate(hits):
        index.add(str(number), hit.content or "")
    scores = index.scores(query)
    scored = [
        (dataclasses.replace(hit, score=scores.get(str(number), 0.0)), number)
        for number, hit in enumerate(hits)
    ]
    scored.sort(key=lambda pair: (-pair[0].score, pair[1]))
    return [hit for hit, _ in scored]


def _where(hit: Hit) -> str:
    """The search table's ``where`` cell: an entry's thread and branch, a fact's version."""
    if hit.entry is not None:
        return f"{hit.entry.thread_id}/{hit.entry.branch}"
    if hit.fact is not None:
        return f"v{hit.fact.version}" + (" (superseded)" if hit.superseded else "")
    return "-"


def facts(
    user: UserOption = None,
    agent: AgentOption = None,
    category: Annotated[str | None, typer.Option("--category", help="Only this category.")] = None,
    fact_id: Annotated[
        str | None, typer.Option("--fact-id", help="Every version of this fact, oldest first.")
    ] = None,
    include_expired: Annotated[
        bool, typer.Option("--include-expired", help="Facts past their expiry too.")
    ] = False,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """List long-term facts (or one fact's version history), oldest first."""
    with _errors(), open_existing(url, tenant) as memory:
        if fact_id is not None:
            found = memory.facts.history(fact_id)
        else:
            found = memory.facts.list(
                user_id=or_unset(user),
                agent_id=or_unset(agent),
                category=category,
                include_expired=include_expired,
            )
        FACTS.print(memory, found, as_json=as_json, url=url, tenant=tenant)


def documents(
    user: UserOption = None,
    agent: AgentOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 50,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """List documents, oldest first."""
    with _errors(), open_existing(url, tenant) as memory:
        found = memory.documents.list(user_id=or_unset(user), agent_id=or_unset(agent), limit=limit)
        DOCUMENTS.print(memory, found, as_json=as_json, url=url, tenant=tenant)


def context(
    thread_id: ThreadArgument,
    agent: Annotated[str, typer.Option("--agent", help="The agent the context is for.")],
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget.")] = 4000,
    user: UserOption = None,
    system_prompt: Annotated[
        str | None, typer.Option("--system-prompt", help="System prompt.")
    ] = None,
    current_input: Annotated[
        str | None,
        typer.Option("--current-input", help="The user's new message (guides what is included)."),
    ] = None,
    strategy: Annotated[
        Strategy, typer.Option("--strategy", help="How history is chosen to fit the budget.")
    ] = Strategy.recent,
    reserve_tokens: Annotated[
        int | None,
        typer.Option("--reserve-tokens", min=0, help="Tokens kept free for the model's answer."),
    ] = None,
    include_system_prompt: Annotated[
        bool,
        typer.Option("--include-system-prompt/--no-system-prompt", help="Send the system prompt."),
    ] = True,
    include_facts: Annotated[bool, typer.Option("--include-facts", help="Include facts.")] = False,
    include_semantic_context: Annotated[
        bool,
        typer.Option(
            "--include-semantic-context",
            help="Include past entries similar to --current-input (needs --embedder).",
        ),
    ] = False,
    include_graph_context: Annotated[
        bool,
        typer.Option(
            "--include-graph-context",
            help="Include the knowledge-graph entities and relations --current-input names.",
        ),
    ] = False,
    include_profile: Annotated[
        bool,
        typer.Option("--include-profile", help="Include the user's profile (memory.profile)."),
    ] = False,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Preview what `memory.build_context` would send to the model for a thread.

    Tool calls are spelled out (`-> name(arguments)`) and tool results carry the
    call id they answer, as on the inspector's thread page.
    """
    chosen = chosen_embedder(embedder) if include_semantic_context else None
    with _errors(), open_existing(url, tenant, embedder=chosen) as memory:
        built = memory.build_context(
            thread_id,
            max_tokens=max_tokens,
            agent_id=agent,
            user_id=or_unset(user),
            system_prompt=system_prompt,
            current_input=current_input,
            strategy=strategy.value,
            reserve_tokens=reserve_tokens,
            include_system_prompt=include_system_prompt,
            include_facts=include_facts,
            include_semantic_context=include_semantic_context,
            include_graph_context=include_graph_context,
            include_profile=include_profile,
        )
        if as_json:
            emit_json(built)
            return
        console = _console()
        console.print(
            f"{len(built.messages)} messages, {built.token_count} tokens of {max_tokens}; "
            f"{built.included_entries} of {built.total_entries} entries"
            + (" (truncated)" if built.truncated else ""),
            soft_wrap=True,
        )
        table = Table(title_justify="left")
        table.add_column("role", style="bold", no_wrap=True)
        table.add_column("content", overflow="fold", ratio=1)
        for message in built.messages:
            table.add_row(str(message.get("role")), _cell(message_text(message), 400))
        console.print(table)
        for warning in built.warnings:
            console.print(Text(f"warning: {warning}", style="yellow"))


def message_text(message: dict[str, Any]) -> str:
    """A provider-shaped message as one line: ``[call id]`` of a tool result, its text
    (content parts joined; other parts as JSON), then ``→ name(arguments)`` per tool call."""
    parts: list[str] = []
    if message.get("tool_call_id"):
        parts.append(f"[{message['tool_call_id']}]")
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            text = part.get("text") if isinstance(part, dict) else None
            parts.append(text if isinstance(text, str) else json.dumps(part, ensure_ascii=False))
    elif content is not None:
        parts.append(json.dumps(content, ensure_ascii=False))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(f"→ {function.get('name')}({function.get('arguments', '')})")
    return " ".join(part for part in parts if part)


def _confirm(yes: bool, what: str) -> None:
    if not yes and not typer.confirm(what):
        raise typer.Exit(1)


def delete(
    thread_id: ThreadArgument,
    yes: YesOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Delete a thread with its entries and branches."""
    with _errors(), open_existing(url, tenant) as memory:
        _confirm(yes, f"Delete thread {thread_id!r} of tenant {tenant!r}?")
        if not memory.threads.delete(thread_id):
            raise NotFound(f"thread {thread_id!r} not found")
        _console().print(f"deleted thread {thread_id}")


def forget_user(
    user_id: Annotated[str, typer.Argument(help="The user id.", show_default=False)],
    yes: YesOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Erase everything owned by a user in the tenant (threads, facts, documents, ...)."""
    with _errors(), open_existing(url, tenant) as memory:
        _confirm(yes, f"Erase everything of user {user_id!r} in tenant {tenant!r}?")
        removed = memory.forget_user(user_id)
        _console().print(f"erased {removed} records of user {user_id}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("search")(search)
    app.command("facts")(facts)
    app.command("documents")(documents)
    app.command("context")(context)
    app.command("delete")(delete)
    app.command("forget-user")(forget_user)
