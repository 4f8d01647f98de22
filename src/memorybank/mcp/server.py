"""An MCP server over memorybank: the knowledge-graph tools and memory's own verbs.

``pip install 'memorybank[mcp]'`` (the official ``mcp`` Python SDK, v2's ``MCPServer``)::

    from mcp import Client
    from memorybank import AsyncMemory
    from memorybank.mcp.server import create_server

    memory = AsyncMemory("sqlite:///memory.db")
    server = create_server(memory, user_id="alice", agent_id="claude")
    server.run()                    # stdio, for desktop clients
    # or in-process (tests):  async with Client(server) as client: ...

or from a shell: ``memorybank mcp --url sqlite:///memory.db --user alice``
(``--transport http`` serves streamable HTTP). ``memorybank serve`` also mounts
the streamable-HTTP endpoint at ``/mcp``, authenticated with the service's
tenant-bound API keys (``memorybank.server.mcp``).

Tools:

* the MCP reference memory server's nine, same names and shapes
  (``create_entities``, ``create_relations``, ``add_observations``,
  ``delete_entities``, ``delete_observations``, ``delete_relations``,
  ``read_graph``, ``search_nodes``, ``open_nodes``) on ``memory.graph``, see
  ``memorybank.mcp.graph_tools``: ``read_graph`` is paginated (``cursor``,
  ``nextCursor``) and every read is bounded;
* memorybank's own: ``remember``, ``recall`` (hybrid search of conversations,
  documents and facts), ``history``, ``get_context`` (a token budget), ``add_fact``,
  ``list_facts``, ``consolidate``, ``feedback``, ``forget``.

Every tool acts through ``memory.scoped(user_id=..., agent_id=...)``: the
server sees and writes what that principal may (its own records plus shared
ones; ``None`` on an axis means shared records only), never another user's.
A memorybank error (bad input, missing id, a thread of another user) comes
back as a tool error (``isError``) whose text starts with the error's code;
anything else is reported as the SDK's generic tool failure, never a crash of
the server.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NotRequired,
    TypeVar,
    cast,
    get_origin,
    get_type_hints,
)

from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from typing_extensions import TypedDict

from memorybank import __version__
from memorybank import surface as _surface
from memorybank.dump import format as _dump
from memorybank.errors import (
    ConfigurationError,
    InvalidInput,
    MemoryBankError,
    StoreError,
    ThreadForbidden,
)
from memorybank.mcp import graph_tools
from memorybank.mcp.graph_tools import (
    McpEntity,
    McpRelation,
    ObservationDeletion,
    ObservationsToAdd,
)
from memorybank.memory._async.memory import AsyncMemory
from memorybank.rules import validate as v

try:
    from mcp.server import MCPServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp.types import ToolAnnotations
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memorybank.mcp.server needs the MCP Python SDK: pip install 'memorybank[mcp]'"
    ) from error

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.auth.settings import AuthSettings

_log = logging.getLogger("memorybank.mcp")

__all__ = [
    "CLI_OPTIONS",
    "FROM_VERB",
    "HISTORY_MAX",
    "HTTP_HEADERS",
    "LIST_MAX",
    "RECALL_KINDS",
    "RECALL_MAX",
    "HandleFor",
    "Principals",
    "build_server",
    "create_server",
]

#: Most messages ``history`` returns in one call.
HISTORY_MAX = 200
#: Most hits ``recall`` returns.
RECALL_MAX = 50
#: What ``recall`` searches: conversations, documents and facts, ranked on one scale.
RECALL_KINDS = ("entries", "documents", "facts")
#: Most facts one ``list_facts`` page holds.
LIST_MAX = 200
#: Largest ``max_tokens`` ``get_context`` accepts.
CONTEXT_MAX_TOKENS = 1_000_000

#: The default of a tool argument that is its library argument's: ``_of_verb`` puts the
#: library's default (``memorybank.surface.tool_form``) in its place.
FROM_VERB: Any = object()

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")

#: Resolves the memory handle a tool call acts on (per request for the HTTP mount).
HandleFor = Callable[[Context], AsyncMemory]


@dataclass(frozen=True, slots=True)
class Principals:
    """How a surface's caller names the user and the agent its calls act for: what an
    error asking for a missing one tells the model to pass."""

    user: str
    agent: str


#: ``create_server`` and ``memorybank mcp``: options given when the server starts.
CLI_OPTIONS = Principals(
    user="--user (create_server(user_id=...))", agent="--agent (create_server(agent_id=...))"
)
#: The ``/mcp`` mount of ``memorybank serve``: headers of each request.
HTTP_HEADERS = Principals(user="the X-User-Id header", agent="the X-Agent-Id header")

_READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
#: A write whose repetition changes nothing more (an existing name, triple or observation
#: is left alone). The reference server marks these tools non-idempotent; they are.
_ADD_ONCE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

INSTRUCTIONS = (
    "Long-term memory for this conversation's user. Use remember/history/get_context for "
    "conversation threads, add_fact/list_facts for durable facts, recall to search past "
    "conversations, documents and facts, and the knowledge-graph tools (create_entities, "
    "create_relations, add_observations, search_nodes, open_nodes, read_graph, delete_*) "
    "for entities and their relations. read_graph is paginated: pass nextCursor back as cursor."
)


# -- result shapes ---------------------------------------------------------------


class StoredMessage(TypedDict):
    """An entry ``remember`` stored."""

    id: str
    thread_id: str
    position: int
    role: str
    created_at: str


class RecallHit(TypedDict):
    """One ``recall`` hit: an entry of a thread, a document or a fact (``kind``)."""

    kind: str
    id: str
    score: float
    content: str | None
    thread_id: str | None
    """The entry's thread (``None`` for a document or a fact)."""
    role: str | None
    """The entry's role (``None`` for a document or a fact)."""
    category: str | None
    """The fact's category (``None`` for an entry or a document)."""
    created_at: str


class RecallResult(TypedDict):
    hits: list[RecallHit]


class HistoryResult(TypedDict):
    thread_id: str
    messages: list[dict[str, Any]]


class ContextResult(TypedDict):
    """What ``get_context`` built: provider-shaped messages within the budget."""

    messages: list[dict[str, Any]]
    token_count: int
    truncated: bool
    included_entries: int
    total_entries: int
    warnings: list[str]
    """Budget notes, and the parts that failed and were left out."""


class FactOut(TypedDict):
    id: str
    content: str
    category: str | None
    confidence: float | None
    user_id: str | None
    agent_id: str | None
    created_at: str
    updated_at: str


class FactPage(TypedDict):
    facts: list[FactOut]
    nextCursor: NotRequired[str]


class ConsolidationChangeOut(TypedDict):
    """One fact a ``consolidate`` call retired in favour of another."""

    fact_id: str
    into: str
    reason: str
    why: str
    content: str
    into_content: str
    decided_by: str


class EntityMergeOut(TypedDict):
    """One graph entity a ``consolidate`` call merged into another (both named one thing)."""

    entity_id: str
    into: str
    name: str
    into_name: str
    why: str
    decided_by: str


class ConsolidationOut(TypedDict):
    """What ``consolidate`` changed (or, with ``dry_run``, would change)."""

    run_id: str
    dry_run: bool
    facts_examined: int
    merged: int
    superseded: int
    changes: list[ConsolidationChangeOut]
    entities_merged: int
    entity_changes: list[EntityMergeOut]


class Forgotten(TypedDict):
    deleted: bool
    kind: str
    id: str


def _pick(record: Any, shape: type[_T], **given: Any) -> _T:
    """The TypedDict ``shape`` of ``record``'s attributes (times as ISO text), or of
    ``given`` where it names the key."""
    values = {k: given[k] if k in given else getattr(record, k) for k in shape.__annotations__}
    return cast(_T, {k: x.isoformat() if isinstance(x, datetime) else x for k, x in values.items()})


def _read_offset(cursor: str | None) -> int:
    """The offset a ``list_facts`` cursor (``graph_tools.page_cursor``) resumes at."""
    refusal = "cursor is not one this server returned"
    value = "0" if cursor is None else graph_tools.cursor_value(cursor, "o", refusal)
    if not value.isdecimal():
        raise InvalidInput(refusal, field="cursor")
    return int(value)


def _bounded(value: int, field: str, maximum: int) -> int:
    checked = v.check_limit(value, field, allow_none=False)
    if not 1 <= checked <= maximum:
        raise InvalidInput(f"{field} must be from 1 to {maximum}", field=field)
    return checked


def _of_verb(
    server: MCPServer[Any], tool: str, *, title: str, annotations: ToolAnnotations
) -> Callable[[_F], _F]:
    """Register the decorated function as ``tool``, a tool of one verb: its description,
    and each parameter's that the verb takes (under the library's name) its description
    and default, are the library's (``memorybank.surface.tool_form``). The function
    gives the types and bounds a model's input needs, and ``FROM_VERB`` as the default
    of an optional library argument; a description or another default of a library
    argument is refused here, so that none is written twice."""
    form = _surface.tool_form(tool)

    def register(fn: _F) -> _F:
        signature = inspect.signature(fn, eval_str=True)
        parameters = []
        for parameter in signature.parameters.values():
            if parameter.name not in form.arguments:  # ctx, paging, a tool's own option
                parameters.append(parameter.replace(kind=parameter.KEYWORD_ONLY))
                continue
            argument = form.argument(parameter.name)
            if parameter.default not in (parameter.empty, FROM_VERB):
                raise TypeError(f"{tool}.{parameter.name}: the library's default is FROM_VERB")
            base: Any = parameter.annotation
            metadata: tuple[Any, ...] = ()
            if get_origin(base) is Annotated:
                base, metadata = base.__origin__, base.__metadata__
            if any(isinstance(m, FieldInfo) and m.description for m in metadata):
                raise TypeError(f"{tool}.{parameter.name}: its docstring describes it")
            described = Field(description=argument.description)
            parameters.append(
                parameter.replace(
                    kind=parameter.KEYWORD_ONLY,
                    annotation=Annotated[(base, *metadata, described)],
                    default=parameter.empty if argument.required else argument.default,
                )
            )
        fn.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        server.tool(name=tool, title=title, description=form.description, annotations=annotations)(
            fn
        )
        return fn

    return register


def _tool_error(error: MemoryBankError) -> ToolError:
    """``code: message`` on one line: what the model reads of a refused call.

    A store failure says only its code: the store's message carries the driver's
    words (host, port, user, database), which go to the ``memorybank.mcp`` log."""
    if isinstance(error, StoreError) or (
        isinstance(error, ConfigurationError)
        and error.__cause__ is not None
        and not isinstance(error.__cause__, MemoryBankError)
    ):
        _log.warning("store failure in a tool call: %r (cause: %r)", error, error.__cause__)
        code = error.code if isinstance(error, StoreError) else "store_unavailable"
        return ToolError(f"{code}: the store failed; retry later")
    message = " ".join(str(error).split()) or type(error).__name__
    return ToolError(f"{error.code}: {message}")


class _Server(MCPServer[Any]):
    """The SDK's server, with tool failures reported short: a memorybank error a tool
    raises reads ``code: message`` (``_tool_error``; without the SDK's ``Error executing
    tool NAME:``), anything else is the SDK's generic tool failure, arguments that
    do not fit a tool's schema read as the REST 422 does (``rules.validate.schema_problems``:
    no pydantic banner, input values or documentation links), and ``thread_forbidden``
    for a server acting for no user says how to name one (``principals``)."""

    def __init__(self, handle_for: HandleFor, principals: Principals, **options: Any) -> None:
        super().__init__(**options)
        self._handle_for = handle_for
        self.principals = principals

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(cause, ValidationError) and not isinstance(error, UnexpectedToolError):
                problem = v.schema_problems(cause.errors(include_url=False, include_input=False))
                raise _tool_error(problem) from cause
            if isinstance(cause, ToolError) and not isinstance(error, UnexpectedToolError):
                raise ToolError(str(cause)) from cause.__cause__  # one a tool raised itself
            if not isinstance(cause, MemoryBankError):
                raise
            text = str(_tool_error(cause))
            if isinstance(cause, ThreadForbidden) and self._acts_for_no_user(context):
                text += (
                    "; this server acts for no user, so a user's thread is closed to it:"
                    f" name the user with {self.principals.user}"
                )
            raise ToolError(text) from cause

    def _acts_for_no_user(self, context: Context | None) -> bool:
        if context is None:
            return False
        try:
            return self._handle_for(context).scope.user_id is None
        except (MemoryBankError, ToolError):  # the call itself was refused for it
            return False


# -- the server --------------------------------------------------------------------


def create_server(
    memory: AsyncMemory, *, agent_id: str | None = None, user_id: str | None = None
) -> MCPServer[Any]:
    """An ``MCPServer`` whose tools act on ``memory`` for one principal.

    Args:
        memory: an ``AsyncMemory`` (any store; a ``memory.tenant(T)`` handle
            serves tenant ``T``). You keep owning it: the server never closes it.
        agent_id: the agent the tools act for (``None``: shared records only on
            the agent axis; ``get_context`` then needs one and says so).
        user_id: the user the tools act for (``None``: shared records only).

    Returns the SDK's server: ``server.run()`` serves stdio,
    ``server.run("streamable-http", host=..., port=...)`` HTTP, and
    ``mcp.Client(server)`` connects in-process.
    """
    if not isinstance(memory, AsyncMemory):
        raise ConfigurationError(
            "create_server needs an AsyncMemory (the MCP SDK is async), "
            f"got {type(memory).__name__}"
        )
    handle = memory.scoped(
        user_id=v.check_optional_id(user_id, "user_id"),
        agent_id=v.check_optional_id(agent_id, "agent_id"),
    )
    return build_server(lambda _ctx: handle, principals=CLI_OPTIONS)


def build_server(
    handle_for: HandleFor,
    *,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
    principals: Principals = CLI_OPTIONS,
) -> MCPServer[Any]:
    """The server with every tool acting on ``handle_for(ctx)`` (resolved per call).

    ``create_server`` resolves to one scoped handle; the service's ``/mcp``
    mount resolves the caller's tenant from its API key (``token_verifier``).
    ``principals`` is how the surface's caller names a user and an agent, for
    the errors that ask for one.
    """
    server = _Server(
        handle_for,
        principals,
        name="memorybank",
        title="memorybank",
        instructions=INSTRUCTIONS,
        version=__version__,
        token_verifier=token_verifier,
        auth=auth,
        log_level="WARNING",
    )
    _graph_tools(server, handle_for)
    _memory_tools(server, handle_for, principals)
    return server


def _batch(item: Any, description: str | None = None) -> Any:
    """A graph write's list argument: at most 100 items."""
    return Annotated[list[item], Field(description=description, max_length=100)]


def _page_limit(description: str, default: int) -> tuple[Any, int]:
    """A graph read's ``limit`` argument and its default: from 1 to ``PAGE_MAX``."""
    return Annotated[int, Field(description=description, ge=1, le=graph_tools.PAGE_MAX)], default


def _graph_tools(server: MCPServer[Any], handle_for: HandleFor) -> None:
    """The reference memory server's nine tools: the functions of ``memorybank.mcp.graph_tools``
    on the caller's ``memory.graph``, under their names, returning what they return."""

    def tool(
        call: Callable[..., Any],
        title: str,
        annotations: ToolAnnotations,
        description: str,
        **arguments: Any,
    ) -> None:
        """Register ``call``: ``arguments`` (an annotation, or ``(annotation, default)``) are
        its own after ``graph``, in their order, under the tool's names."""
        names = dict(zip(arguments, list(inspect.signature(call).parameters)[1:], strict=True))

        async def run(ctx: Context, **given: Any) -> Any:
            return await call(handle_for(ctx).graph, **{names[k]: x for k, x in given.items()})

        keyword, none = inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty
        parameters = [inspect.Parameter("ctx", keyword, annotation=Context)]
        for name, spec in arguments.items():
            annotation, default = spec if isinstance(spec, tuple) else (spec, none)
            parameters.append(
                inspect.Parameter(name, keyword, annotation=annotation, default=default)
            )
        run.__name__ = call.__name__  # the tool's name, and its arguments schema's title
        run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            parameters, return_annotation=get_type_hints(call)["return"]
        )
        server.tool(title=title, description=description, annotations=annotations)(run)

    tool(
        graph_tools.create_entities,
        "Create Entities",
        _ADD_ONCE,
        "Create multiple new entities in the knowledge graph. "
        "An entity whose name already exists is left as it is and not returned.",
        entities=_batch(McpEntity, "The entities to create"),
    )
    tool(
        graph_tools.create_relations,
        "Create Relations",
        _ADD_ONCE,
        "Create multiple new relations between entities in the knowledge graph. "
        "Relations should be in active voice. Both entities must exist.",
        relations=_batch(McpRelation, "The relations to create"),
    )
    tool(
        graph_tools.add_observations,
        "Add Observations",
        _ADD_ONCE,
        "Add new observations to existing entities in the knowledge graph",
        observations=_batch(ObservationsToAdd),
    )
    tool(
        graph_tools.delete_entities,
        "Delete Entities",
        _DELETE,
        "Delete multiple entities and their associated relations from the knowledge graph",
        entityNames=_batch(str, "An array of entity names to delete"),
    )
    tool(
        graph_tools.delete_observations,
        "Delete Observations",
        _DELETE,
        "Delete specific observations from entities in the knowledge graph",
        deletions=_batch(ObservationDeletion),
    )
    tool(
        graph_tools.delete_relations,
        "Delete Relations",
        _DELETE,
        "Delete multiple relations from the knowledge graph",
        relations=_batch(McpRelation, "An array of relations to delete"),
    )
    tool(
        graph_tools.read_graph,
        "Read Graph",
        _READ,
        "Read the knowledge graph, one page at a time: entities with the relations that start "
        "at them. When nextCursor is present, call again with cursor=nextCursor for the next page.",
        cursor=(
            Annotated[
                str | None, Field(description="nextCursor of the previous page (omit: first page)")
            ],
            None,
        ),
        limit=_page_limit("Most entities on this page", graph_tools.PAGE_DEFAULT),
    )
    tool(
        graph_tools.search_nodes,
        "Search Nodes",
        _READ,
        "Search for nodes in the knowledge graph based on a query (names, types, aliases and "
        "observations); returns the best matches and their relations",
        query=Annotated[
            str,
            Field(
                description="The search query to match against entity names, types, "
                "and observation content"
            ),
        ],
        limit=_page_limit("Most entities returned", graph_tools.SEARCH_DEFAULT),
    )
    tool(
        graph_tools.open_nodes,
        "Open Nodes",
        _READ,
        "Open specific nodes in the knowledge graph by their names",
        names=Annotated[
            list[str],
            Field(
                description="An array of entity names to retrieve", max_length=graph_tools.PAGE_MAX
            ),
        ],
    )


def _memory_tools(server: MCPServer[Any], handle_for: HandleFor, principals: Principals) -> None:
    """memorybank's own verbs: conversation threads, recall, context, facts. A tool of one
    verb (``_of_verb``) restates none of its verb's descriptions or defaults."""

    @_of_verb(server, "remember", title="Remember", annotations=_ADD)
    async def remember(
        thread_id: str,
        content: str,
        ctx: Context,
        role: Literal["user", "assistant", "system", "developer"] = FROM_VERB,
        metadata: dict[str, Any] | None = FROM_VERB,
        idempotency_key: str | None = FROM_VERB,
    ) -> StoredMessage:
        memory = handle_for(ctx)
        await memory.ensure_thread(thread_id)
        entry = await memory.remember(
            thread_id, role, content, metadata=metadata, idempotency_key=idempotency_key
        )
        return _pick(entry, StoredMessage)

    @_of_verb(server, "recall", title="Recall", annotations=_READ)
    async def recall(
        query: str,
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=RECALL_MAX)] = FROM_VERB,
        thread_id: str | None = FROM_VERB,
    ) -> RecallResult:
        # every kind the description names; a thread_id narrows the search to entries
        hits = await handle_for(ctx).search(query, k=k, thread_id=thread_id, kinds=RECALL_KINDS)
        out: list[RecallHit] = []
        for hit in hits:
            entry, fact = hit.entry, hit.fact
            record = entry or hit.document or fact
            assert record is not None
            out.append(
                _pick(
                    hit,
                    RecallHit,
                    thread_id=None if entry is None else entry.thread_id,
                    role=None if entry is None else entry.role,
                    category=None if fact is None else fact.category,
                    created_at=record.created_at,
                )
            )
        return {"hits": out}

    @_of_verb(server, "history", title="History", annotations=_READ)
    async def history(
        thread_id: str,
        ctx: Context,
        last: Annotated[int, Field(ge=1, le=HISTORY_MAX)] = FROM_VERB,
    ) -> HistoryResult:
        messages = await handle_for(ctx).history(thread_id, last=last)
        return {"thread_id": thread_id, "messages": _dump.encode(messages)}

    @_of_verb(server, "get_context", title="Get Context", annotations=_READ)
    async def get_context(
        thread_id: str,
        max_tokens: Annotated[int, Field(ge=1, le=CONTEXT_MAX_TOKENS)],
        ctx: Context,
        current_input: str | None = FROM_VERB,
        system_prompt: str | None = FROM_VERB,
        include_facts: bool = FROM_VERB,
        include_graph_context: bool = FROM_VERB,
        include_profile: bool = FROM_VERB,
    ) -> ContextResult:
        memory = handle_for(ctx)
        if not isinstance(memory.scope.agent_id, str):
            raise InvalidInput(
                f"get_context needs an agent: name it with {principals.agent}",
                field="agent_id",
            )
        # as history: a thread that does not exist is not_found, not a context of facts
        await memory.threads.require(thread_id)
        built = await memory.build_context(
            thread_id,
            max_tokens=max_tokens,
            current_input=current_input,
            system_prompt=system_prompt,
            include_facts=include_facts,
            include_graph_context=include_graph_context,
            include_profile=include_profile,
        )
        left_out = [f"{e.source} left out: {e.error}" for e in built.errors]
        return _pick(
            built,
            ContextResult,
            messages=_dump.encode(built.messages),
            warnings=[*built.warnings, *left_out],
        )

    @_of_verb(server, "add_fact", title="Add Fact", annotations=_ADD)
    async def add_fact(
        content: str,
        ctx: Context,
        category: str | None = FROM_VERB,
        confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = FROM_VERB,
    ) -> FactOut:
        fact = await handle_for(ctx).facts.add(
            content=content, category=category, confidence=confidence, source="mcp"
        )
        return _pick(fact, FactOut)

    @_of_verb(server, "consolidate", title="Consolidate Facts", annotations=_ADD_ONCE)
    async def consolidate(ctx: Context, dry_run: bool = FROM_VERB) -> ConsolidationOut:
        report = await handle_for(ctx).consolidate(dry_run=dry_run)
        return _pick(
            report,
            ConsolidationOut,
            changes=[_pick(c, ConsolidationChangeOut) for c in report.changes],
            entity_changes=[_pick(c, EntityMergeOut) for c in report.entity_changes],
        )

    @_of_verb(server, "feedback", title="Feedback", annotations=_ADD)
    async def feedback(
        fact_id: Annotated[str, Field(description="The fact's id (from list_facts or recall)")],
        useful: bool,
        ctx: Context,
        reason: str | None = FROM_VERB,
    ) -> FactOut:
        fact = await handle_for(ctx).feedback(fact_id, useful=useful, reason=reason)
        return _pick(fact, FactOut)

    @_of_verb(server, "list_facts", title="List Facts", annotations=_READ)
    async def list_facts(
        ctx: Context,
        category: str | None = FROM_VERB,
        cursor: Annotated[str | None, Field(description="nextCursor of the previous page")] = None,
        limit: Annotated[int, Field(description="Most facts on this page", ge=1, le=LIST_MAX)] = 50,
    ) -> FactPage:
        offset = _read_offset(cursor)
        limit = _bounded(limit, "limit", LIST_MAX)
        facts = await handle_for(ctx).facts.list(category=category)
        page: FactPage = {"facts": [_pick(f, FactOut) for f in facts[offset : offset + limit]]}
        if offset + limit < len(facts):
            page["nextCursor"] = graph_tools.page_cursor("o", offset + limit)
        return page

    @server.tool(
        title="Forget",
        description="Delete a fact (kind='fact') or a whole conversation thread "
        "(kind='thread') for good.",
        annotations=_DELETE,
    )
    async def forget(
        id: Annotated[str, Field(description="The fact id or thread id")],
        ctx: Context,
        kind: Annotated[Literal["fact", "thread"], Field(description="What id names")] = "fact",
    ) -> Forgotten:
        memory = handle_for(ctx)
        if kind == "fact":
            deleted = await memory.facts.delete(id)
        else:
            deleted = await memory.threads.delete(id)
        return {"deleted": deleted, "kind": kind, "id": id}
