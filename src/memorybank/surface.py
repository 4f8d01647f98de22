"""The library's public verbs, declared once, and what every surface derives from them.

A verb is a public method of ``AsyncMemory`` or of a namespace it hands out
(``memory.threads``, ``memory.facts``, ``memory.graph``, ...), the same set the
isolation suite reads off the classes (``tests/reliability/test_isolation_verbs.py``).
Each ``Verb`` here says what the library's signature and docstring cannot:

* ``scope``: what the call may touch: ``"thread"`` (one thread, under the thread
  rule: ``ThreadForbidden`` unless the caller owns it or it is shared), ``"user"``
  (the records the caller's user and agent see: their own and shared ones),
  ``"tenant"`` (the whole tenant: an unscoped handle only) or ``"none"`` (no
  record: a handle, the clock, a buffer);
* ``idempotent``: whether repeating the call changes nothing more;
* ``shape``: what the call returns, as a surface carries it: ``"item"`` (one
  record; a missing one is 404 over REST), ``"page"`` (a list, ``{items,
  next_cursor}``), ``"ranking"`` (a best-first list, whole on one page, same
  shape), ``"count"`` (``{count}``), ``"empty"`` (nothing: 204), ``"value"`` (a
  JSON value), ``"handle"`` (an object with verbs of its own);
* ``errors``: the library errors a caller must expect (each has a stable
  ``code`` and one HTTP status, ``memorybank.server.errors``);
* ``rest``: its route (``Route(method, path)``), ``mcp``: its tool's name,
  ``cli``: its command, each or ``Without(reason)``.

The arguments (names, types, defaults) and descriptions are not restated: they are
read from the library callable (``Verb.arguments``, ``Verb.summary``). From this
table come the MCP tools' descriptions and argument descriptions where a tool maps
one verb 1:1 (``Verb.summary``, ``Verb.describe``), the surface test
(``tests/server/test_surface.py``: every verb declared, every route, tool and
command present, every library argument a field of its route under the same name
or listed in ``rest_gaps`` with the reason), and the table of the docs
(``scripts/surface_table.py``).

Hand-written code stays where a route adds HTTP meaning: path parameters and
resource nesting, a 404 for a missing id, 204 for nothing to say, ``Idempotency-Key``
header, paging cursors over lists the library cuts from its start, a route that
answers two verbs (``PATCH /v1/facts/{id}`` with ``supersede``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from memorybank.consolidation._async.consolidation import AsyncConsolidation
from memorybank.context._async.builder import AsyncContextBuilder
from memorybank.context._async.compaction import AsyncCompactionService
from memorybank.context._async.sessions import AsyncSessionManager
from memorybank.context._async.turn import AsyncTurn
from memorybank.core._async.embedding import AsyncEmbedding
from memorybank.core._async.facts import AsyncFacts
from memorybank.core._async.threads import AsyncThreads
from memorybank.errors import (
    Conflict,
    CursorExpired,
    InvalidInput,
    MemoryBankError,
    NotFound,
    ThreadForbidden,
)
from memorybank.graph._async import AsyncGraph
from memorybank.memory._async.branches import AsyncBranches
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.memory._async.documents import AsyncDocuments
from memorybank.memory._async.entries import AsyncEntries
from memorybank.memory._async.events import AsyncEvents
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._async.run_state import AsyncSnapshots, AsyncSummaries, AsyncWorkingMemory
from memorybank.stores.contract.types import UNSET

__all__ = [
    "CLASSES",
    "REFERENCE_TOOLS",
    "VERBS",
    "Argument",
    "Route",
    "Verb",
    "Without",
    "by_name",
    "markdown_table",
    "plain",
]

#: The MCP reference memory server's tools: their names and argument shapes are the
#: reference's (a client written for it works unchanged), not the library's.
REFERENCE_TOOLS = frozenset(
    {
        "create_entities",
        "create_relations",
        "add_observations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
        "read_graph",
        "search_nodes",
        "open_nodes",
    }
)

Scope = Literal["thread", "user", "tenant", "none"]
Shape = Literal["item", "page", "ranking", "count", "empty", "value", "handle"]

#: Class name (as the isolation suite names it) -> the async class holding its verbs.
CLASSES: dict[str, type] = {
    "Memory": AsyncMemory,
    "Threads": AsyncThreads,
    "Entries": AsyncEntries,
    "Branches": AsyncBranches,
    "Snapshots": AsyncSnapshots,
    "Summaries": AsyncSummaries,
    "Facts": AsyncFacts,
    "Consolidation": AsyncConsolidation,
    "Graph": AsyncGraph,
    "Documents": AsyncDocuments,
    "Events": AsyncEvents,
    "Embedding": AsyncEmbedding,
    "WorkingMemory": AsyncWorkingMemory,
    "CoreFacts": AsyncCoreFacts,
    "SessionManager": AsyncSessionManager,
    "CompactionService": AsyncCompactionService,
    "ContextBuilder": AsyncContextBuilder,
    "Turn": AsyncTurn,
}


@dataclass(frozen=True, slots=True)
class Route:
    """A REST route: method and path template (``{name}`` is a path parameter)."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True, slots=True)
class Without:
    """A surface that deliberately has no form of a verb, and why."""

    reason: str

    def __str__(self) -> str:
        return f"none ({self.reason})"


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a verb, read from its library signature."""

    name: str
    annotation: str
    required: bool
    default: Any
    description: str | None


@dataclass(frozen=True, slots=True)
class Verb:
    """One public verb of the library and its form on each surface (see the module)."""

    name: str
    scope: Scope
    idempotent: bool
    shape: Shape
    rest: Route | Without
    mcp: str | Without
    cli: str | Without
    errors: tuple[type[MemoryBankError], ...] = (InvalidInput,)
    #: Library arguments the REST route does not take, with the reason.
    rest_gaps: Mapping[str, str] = field(default_factory=dict)
    #: MCP tool argument -> library argument, where a tool names one differently.
    mcp_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def owner(self) -> type:
        """The async class the verb belongs to."""
        return CLASSES[self.name.partition(".")[0]]

    @property
    def callable(self) -> Callable[..., Any]:
        """The library callable (on the async class; the sync twin has the same signature)."""
        found: Callable[..., Any] = getattr(self.owner, self.name.partition(".")[2])
        return found

    @property
    def summary(self) -> str:
        """The first line of the library docstring."""
        doc = inspect.getdoc(self.callable) or ""
        return " ".join(doc.split("\n\n", 1)[0].split())

    def describe(self, argument: str) -> str | None:
        """What the docstring says of ``argument``: the first sentence naming it
        (``Args:`` entries first), or ``None``."""
        doc = inspect.getdoc(self.callable) or ""
        listed = re.search(
            rf"^\s*{re.escape(argument)}:\s*(.+?)(?=^\s*\w+:|\Z)", doc, re.MULTILINE | re.DOTALL
        )
        if listed is not None:
            return " ".join(listed.group(1).split())
        sentences = re.split(r"(?<=[.;])\s+(?=[A-Z`])", " ".join(doc.split()))
        named = f"``{argument}``"
        for sentence in sentences:  # one that starts with the name says what it is
            if sentence.startswith(named + ":"):
                text = sentence.removeprefix(named + ":").strip()
                return text[:1].upper() + text[1:]
        for sentence in sentences:
            if named in sentence:
                return sentence.strip()
        return None

    @property
    def arguments(self) -> list[Argument]:
        """The verb's arguments, from its signature (``self`` and ``*args`` left out)."""
        out = []
        for p in inspect.signature(self.callable).parameters.values():
            if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            out.append(
                Argument(
                    name=p.name,
                    annotation=str(p.annotation),
                    required=p.default is p.empty,
                    default=None if p.default is p.empty else p.default,
                    description=self.describe(p.name),
                )
            )
        return out


# -- the table ---------------------------------------------------------------------------------

_T = (InvalidInput, NotFound, ThreadForbidden)  # a verb under the thread rule
_GONE = (InvalidInput, NotFound)
_NOT_HTTP = "a Python object of the caller's process"
_OPERATOR = "an operator's job, not a model's"
_MODEL_TOOLS = "the MCP tools cover conversation, recall, facts and the graph"
_RUN_STATE = "run state belongs to the host workflow, not to the model"
_CLI_READS = "the CLI reads and administers a store; writes go through the library or REST"

_SAME_AS_CONSOLIDATE = "the same verb as Memory.consolidate, which has every form"

_FEED = "the change feed is for applications following memory, not a model's tool"
_FEED_SWITCH = (
    "switching the feed covers the server's whole store: " + _OPERATOR + " (memorybank events)"
)

_REST_ONLY = Without(_MODEL_TOOLS)
_CLI_NO = Without(_CLI_READS)


def _v(
    name: str,
    scope: Scope,
    idempotent: bool,
    shape: Shape,
    rest: Route | Without,
    mcp: str | Without = _REST_ONLY,
    cli: str | Without = _CLI_NO,
    *,
    errors: tuple[type[MemoryBankError], ...] | None = None,
    gaps: Mapping[str, str] | None = None,
    mcp_names: Mapping[str, str] | None = None,
) -> Verb:
    return Verb(
        name=name,
        scope=scope,
        idempotent=idempotent,
        shape=shape,
        rest=rest,
        mcp=mcp,
        cli=cli,
        errors=errors if errors is not None else (_T if scope == "thread" else (InvalidInput,)),
        rest_gaps=dict(gaps or {}),
        mcp_names=dict(mcp_names or {}),
    )


def _get(path: str) -> Route:
    return Route("GET", path)


def _post(path: str) -> Route:
    return Route("POST", path)


def _put(path: str) -> Route:
    return Route("PUT", path)


def _patch(path: str) -> Route:
    return Route("PATCH", path)


def _delete(path: str) -> Route:
    return Route("DELETE", path)


_TH = "/v1/threads/{thread_id}"
_ENTITY = "/v1/graph/entities/{entity_id}"
_RELATION = "/v1/graph/relations/{relation_id}"

# The table a verb a row (continued where it is long), laid out by hand:
# fmt: off
VERBS: tuple[Verb, ...] = (
    # -- Memory -------------------------------------------------------------------------------
    _v("Memory.build_context", "thread", True, "value", _post(f"{_TH}/context"), "get_context",
       "context", mcp_names={"include_graph": "deprecated alias of include_graph_context"}),
    _v("Memory.close", "none", True, "empty", Without("the server owns the store"),
       Without("the server owns the store"), Without("each command closes what it opens")),
    _v("Memory.embed_pending", "tenant", True, "count",
       Without("a backfill job of the process holding the embedder"), Without(_OPERATOR),
       Without("serve --embedder embeds on write; a backfill runs in the library")),
    _v("Memory.ensure_thread", "thread", True, "item",
       Without("POST /v1/threads creates; 409 says it exists"),
       Without("remember creates the thread when absent"), _CLI_NO,
       errors=(InvalidInput, ThreadForbidden)),
    _v("Memory.consolidate", "user", True, "value", _post("/v1/consolidate"), "consolidate",
       "consolidate"),
    _v("Memory.feedback", "user", False, "item", _post("/v1/feedback"), "feedback", "feedback",
       errors=_GONE, gaps={"hit_or_id": "the body's fact_id: a hit travels as its fact's id"},
       mcp_names={"fact_id": "hit_or_id"}),
    _v("Memory.profile", "user", True, "value", _get("/v1/users/{user_id}/profile"),
       Without("an MCP server acts for one fixed user: list_facts reads the facts it groups"),
       "profile", errors=(InvalidInput,)),
    _v("Memory.forget_user", "user", True, "count", _delete("/v1/users/{user_id}"),
       Without("erasure is " + _OPERATOR), "forget-user"),
    _v("Memory.history", "thread", True, "page", _get(f"{_TH}/history"), "history", "show"),
    _v("Memory.now", "none", True, "value", Without("reads the process's clock"),
       Without("reads the process's clock"), Without("reads the process's clock")),
    _v("Memory.prune", "tenant", False, "value",
       Without("retention is " + _OPERATOR + " (memorybank prune)"), Without(_OPERATOR), "prune"),
    _v("Memory.remember", "thread", False, "item", _post(f"{_TH}/entries"), "remember", _CLI_NO),
    _v("Memory.scoped", "none", True, "handle", Without("the X-User-Id header scopes each request"),
       Without("--user/--agent (stdio) or X-User-Id/X-Agent-Id (/mcp)"),
       Without("--user on the read commands")),
    _v("Memory.search", "user", True, "ranking", _post("/v1/search"), "recall", "search",
       gaps={"options": "SearchOptions is a Python object (hybrid ranking weights)",
             "rerank": "the server holds no reranker",
             "rerank_top": "the server holds no reranker",
             "decay": "HalfLife is a Python object (recency and importance weights)"}),
    _v("Memory.tenant", "none", True, "handle", Without("the API key names the tenant"),
       Without("the API key (/mcp) or --tenant names the tenant"),
       Without("--tenant on every command")),
    _v("Memory.turn", "thread", False, "handle",
       Without("wraps a model call in the caller's process"),
       Without("wraps a model call in the caller's process"),
       Without("wraps a model call in the caller's process")),
    _v("Memory.working", "user", True, "handle",
       Without("a handle: its verbs are WorkingMemory.*, under /v1/runs/{run_id}/working"),
       Without(_RUN_STATE), Without("a handle: see runs")),
    _v("Memory.working_runs", "user", True, "page", _get("/v1/runs"), Without(_RUN_STATE), "runs"),
    # -- threads ------------------------------------------------------------------------------
    _v("Threads.create", "user", False, "item", _post("/v1/threads"),
       Without("remember creates the thread when absent"), _CLI_NO,
       errors=(InvalidInput, Conflict)),
    _v("Threads.get", "thread", True, "item", _get(_TH), Without("history reads a thread"), "show"),
    _v("Threads.require", "thread", True, "item", _get(_TH), Without("history reads a thread"),
       "show"),
    _v("Threads.list", "user", True, "page", _get("/v1/threads"), Without(_MODEL_TOOLS), "threads"),
    _v("Threads.update", "thread", True, "item", _patch(_TH), _REST_ONLY, _CLI_NO),
    _v("Threads.delete", "thread", True, "empty", _delete(_TH), "forget", "delete",
       mcp_names={"id": "thread_id", "kind": "picks the verb: kind='thread'"}),
    # -- entries ------------------------------------------------------------------------------
    _v("Entries.add", "thread", False, "item", _post(f"{_TH}/entries"),
       Without("remember appends one text message"), _CLI_NO, errors=(*_T, Conflict),
       gaps={"message": "the body is the message (its fields at the top level)"}),
    _v("Entries.add_many", "thread", False, "page", _post(f"{_TH}/entries/batch"), _REST_ONLY,
       _CLI_NO, errors=(*_T, Conflict)),
    _v("Entries.list", "thread", True, "page", _get(f"{_TH}/entries"),
       Without("history reads a thread"), "show", gaps={"offset": "the cursor carries it"}),
    _v("Entries.get", "thread", True, "item", _get(f"{_TH}/entries/{{entry_id}}"), _REST_ONLY,
       _CLI_NO),
    _v("Entries.delete", "thread", True, "empty", _delete(f"{_TH}/entries/{{entry_id}}"),
       _REST_ONLY, _CLI_NO),
    _v("Entries.clear", "thread", True, "count", _delete(f"{_TH}/entries"), _REST_ONLY, _CLI_NO),
    _v("Entries.count", "thread", True, "count", _get(f"{_TH}/count"), _REST_ONLY, "show"),
    # -- branches -----------------------------------------------------------------------------
    _v("Branches.create", "thread", False, "item", _post(f"{_TH}/branches"), _REST_ONLY, _CLI_NO,
       errors=(*_T, Conflict)),
    _v("Branches.checkout", "thread", True, "item", _post(f"{_TH}/checkout"), _REST_ONLY, _CLI_NO),
    _v("Branches.rewind", "thread", True, "count", _post(f"{_TH}/rewind"), _REST_ONLY, _CLI_NO),
    _v("Branches.list", "thread", True, "page", _get(f"{_TH}/branches"), _REST_ONLY, "show"),
    _v("Branches.delete", "thread", True, "empty", _delete(f"{_TH}/branches/{{name}}"), _REST_ONLY,
       _CLI_NO),
    # -- snapshots, working memory, summaries ---------------------------------------------------
    _v("Snapshots.save", "user", True, "empty", _put("/v1/snapshots/{run_id}"), Without(_RUN_STATE),
       _CLI_NO, errors=(InvalidInput, ThreadForbidden)),
    _v("Snapshots.load", "user", True, "item", _get("/v1/snapshots/{run_id}"), Without(_RUN_STATE),
       "snapshots", errors=(InvalidInput, ThreadForbidden)),
    _v("Snapshots.delete", "user", True, "empty", _delete("/v1/snapshots/{run_id}"),
       Without(_RUN_STATE), _CLI_NO, errors=(InvalidInput, ThreadForbidden)),
    _v("Snapshots.list", "user", True, "page", _get("/v1/snapshots"), Without(_RUN_STATE),
       "snapshots"),
    _v("WorkingMemory.set", "user", True, "empty", _put("/v1/runs/{run_id}/working/{key}"),
       Without(_RUN_STATE), _CLI_NO),
    _v("WorkingMemory.get", "user", True, "item", _get("/v1/runs/{run_id}/working/{key}"),
       Without(_RUN_STATE), "runs", gaps={"default": "a missing key is 404"}),
    _v("WorkingMemory.delete", "user", True, "empty", _delete("/v1/runs/{run_id}/working/{key}"),
       Without(_RUN_STATE), _CLI_NO),
    _v("WorkingMemory.items", "user", True, "page", _get("/v1/runs/{run_id}/working"),
       Without(_RUN_STATE), "runs"),
    _v("WorkingMemory.clear", "user", True, "empty", _delete("/v1/runs/{run_id}/working"),
       Without(_RUN_STATE), _CLI_NO),
    _v("Summaries.add", "user", False, "item", _post("/v1/summaries"), _REST_ONLY, _CLI_NO),
    _v("Summaries.list", "user", True, "page", _get("/v1/summaries"), _REST_ONLY, _CLI_NO),
    # -- facts --------------------------------------------------------------------------------
    _v("Facts.add", "user", False, "item", _post("/v1/facts"), "add_fact", _CLI_NO, errors=_GONE),
    _v("Facts.get", "user", True, "item", _get("/v1/facts/{fact_id}"), _REST_ONLY, "facts"),
    _v("Facts.update", "user", True, "item", _patch("/v1/facts/{fact_id}"), _REST_ONLY, _CLI_NO,
       errors=(*_GONE, Conflict)),
    # -- consolidation ---------------------------------------------------------------------
    _v("Consolidation.run", "user", True, "value", Without(_SAME_AS_CONSOLIDATE),
       Without(_SAME_AS_CONSOLIDATE), Without(_SAME_AS_CONSOLIDATE)),
    _v("Consolidation.resume", "user", False, "value",
       Without("the server completes interrupted runs on each background tick and first in POST"
               " /v1/consolidate"),
       Without(_OPERATOR),
       Without("memorybank consolidate completes its owner's interrupted runs first")),
    _v("Consolidation.tick", "tenant", False, "value",
       Without("the server's worker ticks every --consolidate-every"), Without(_OPERATOR),
       Without("memorybank serve --consolidate-every")),
    _v("Consolidation.start", "tenant", True, "empty",
       Without("the server starts its worker at startup"), Without(_OPERATOR),
       Without("the server starts its worker at startup")),
    _v("Consolidation.runs", "user", True, "page", _get("/v1/consolidation/runs"),
       Without(_OPERATOR), "consolidation-runs"),
    _v("Consolidation.report", "user", True, "item", _get("/v1/consolidation/runs/{run_id}"),
       Without(_OPERATOR), "consolidation-report", errors=_GONE),
    _v("Consolidation.undo", "user", False, "item", _post("/v1/consolidation/runs/{run_id}/undo"),
       Without(_OPERATOR), "consolidation-undo", errors=(*_GONE, Conflict)),
    _v("Facts.supersede", "user", False, "item", _patch("/v1/facts/{fact_id}"), _REST_ONLY, _CLI_NO,
       errors=(*_GONE, Conflict),
       gaps={"old_id": "the path's fact_id", "new": "the body's content, with supersede: true"}),
    _v("Facts.history", "user", True, "page", _get("/v1/facts/{fact_id}/history"), _REST_ONLY,
       "facts"),
    _v("Facts.delete", "user", True, "empty", _delete("/v1/facts/{fact_id}"), "forget", _CLI_NO,
       mcp_names={"id": "fact_id", "kind": "picks the verb: kind='fact'"}),
    _v("Facts.list", "user", True, "page", _get("/v1/facts"), "list_facts", "facts"),
    _v("Facts.search", "user", True, "ranking", _post("/v1/facts/search"),
       Without("facts reach the model through get_context and list_facts"), "facts"),
    # -- graph --------------------------------------------------------------------------------
    _v("Graph.add_entity", "user", True, "item", _post("/v1/graph/entities"), "create_entities",
       _CLI_NO),
    _v("Graph.get_entity", "user", True, "item", _get(_ENTITY), "open_nodes", _CLI_NO),
    _v("Graph.update_entity", "user", True, "item", _patch(_ENTITY), _REST_ONLY, _CLI_NO,
       errors=_GONE),
    _v("Graph.add_observations", "user", True, "item", _post(f"{_ENTITY}/observations"),
       "add_observations", _CLI_NO, errors=_GONE),
    _v("Graph.delete_observations", "user", True, "item", _post(f"{_ENTITY}/observations/delete"),
       "delete_observations", _CLI_NO, errors=_GONE),
    _v("Graph.delete_entity", "user", True, "empty", _delete(_ENTITY), "delete_entities", _CLI_NO),
    _v("Graph.find_entities", "user", True, "page", _get("/v1/graph/entities"), "read_graph",
       _CLI_NO),
    _v("Graph.search_entities", "user", True, "ranking", _get("/v1/graph/entities/search"),
       "search_nodes", _CLI_NO),
    _v("Graph.merge_entities", "user", False, "item", _post(f"{_ENTITY}/merge"), _REST_ONLY,
       _CLI_NO, errors=_GONE, gaps={"keep": "the path's entity_id"}),
    _v("Graph.add_relation", "user", True, "item", _post("/v1/graph/relations"), "create_relations",
       _CLI_NO, errors=_GONE),
    _v("Graph.get_relation", "user", True, "item", _get(_RELATION), _REST_ONLY, _CLI_NO),
    _v("Graph.update_relation", "user", True, "item", _patch(_RELATION), _REST_ONLY, _CLI_NO,
       errors=_GONE),
    _v("Graph.invalidate_relation", "user", True, "item", _post(f"{_RELATION}/invalidate"),
       _REST_ONLY, _CLI_NO, errors=_GONE),
    _v("Graph.delete_relation", "user", True, "empty", _delete(_RELATION), "delete_relations",
       _CLI_NO),
    _v("Graph.relations", "user", True, "page", _get(f"{_ENTITY}/relations"), "open_nodes",
       _CLI_NO),
    _v("Graph.neighbors", "user", True, "page", _get(f"{_ENTITY}/neighbors"), _REST_ONLY, _CLI_NO),
    _v("Graph.traverse", "user", True, "value", _post("/v1/graph/traverse"), _REST_ONLY, _CLI_NO),
    _v("Graph.shortest_path", "user", True, "value", _get("/v1/graph/path"), _REST_ONLY, _CLI_NO),
    _v("Graph.stats", "user", True, "value", _get("/v1/graph/stats"), _REST_ONLY, _CLI_NO),
    _v("Graph.clear", "user", True, "count", _delete("/v1/graph"), _REST_ONLY, _CLI_NO),
    _v("Graph.infer", "user", False, "page", _post("/v1/graph/infer"), _REST_ONLY, _CLI_NO),
    _v("Graph.context_block", "user", True, "value",
       Without("build_context with include_graph_context"),
       Without("get_context with include_graph_context"),
       Without("context --include-graph-context")),
    _v("Graph.ingest", "thread", False, "value",
       Without("extraction needs a model, which the server does not hold"),
       Without("extraction needs a model"), Without("extraction needs a model")),
    _v("Graph.pending", "none", True, "count", Without("the process's extraction backlog"),
       Without(_OPERATOR), Without("the process's extraction backlog")),
    _v("Graph.drain", "none", True, "value", Without("the process's extraction backlog"),
       Without(_OPERATOR), Without("the process's extraction backlog")),
    # -- embedding ----------------------------------------------------------------------------
    _v("Embedding.status", "tenant", True, "value", _get("/v1/embedding/status"),
       Without(_OPERATOR), Without("the backlog of a serving process: GET /v1/embedding/status")),
    _v("Embedding.totals", "none", True, "value",
       Without("every tenant's numbers: /metrics carries them"), Without(_OPERATOR),
       Without("the backlog of a serving process: /metrics")),
    _v("Embedding.flush", "none", True, "value",
       Without("a client polls GET /v1/embedding/status instead of holding a request"),
       Without(_OPERATOR), Without("the backlog of the process holding the embedder")),
    _v("Embedding.start", "none", True, "empty", Without("the server starts its worker at startup"),
       Without(_OPERATOR), Without("the server starts its worker at startup")),
    # -- documents ----------------------------------------------------------------------------
    _v("Documents.add", "user", False, "item", _post("/v1/documents"), _REST_ONLY, _CLI_NO),
    _v("Documents.get", "user", True, "item", _get("/v1/documents/{document_id}"), _REST_ONLY,
       "documents"),
    _v("Documents.delete", "user", True, "empty", _delete("/v1/documents/{document_id}"),
       _REST_ONLY, _CLI_NO),
    _v("Documents.list", "user", True, "page", _get("/v1/documents"), _REST_ONLY, "documents",
       gaps={"filters": "a JSON object: POST /v1/search takes filters"}),
    _v("Documents.search", "user", True, "ranking", _post("/v1/search"),
       Without("recall is Memory.search, whose kinds include documents"), "search",
       gaps={"options": "SearchOptions is a Python object (hybrid ranking weights)"}),
    # -- the change feed ----------------------------------------------------------------------
    _v("Events.list", "user", True, "page", _get("/v1/events"), Without(_FEED), "events",
       errors=(InvalidInput, CursorExpired)),
    _v("Events.enable", "tenant", True, "empty", Without(_FEED_SWITCH), Without(_OPERATOR),
       "events"),
    _v("Events.disable", "tenant", True, "empty", Without(_FEED_SWITCH), Without(_OPERATOR),
       "events"),
    _v("Events.keep", "tenant", True, "value", Without(_FEED_SWITCH), Without(_OPERATOR), "events"),
    _v("Events.prune", "tenant", False, "count",
       Without("expiry is " + _OPERATOR + " (memorybank events --prune)"), Without(_OPERATOR),
       "events"),
    # -- core facts ---------------------------------------------------------------------------
    _v("CoreFacts.set", "user", True, "item", _put("/v1/core-facts/{key}"), _REST_ONLY, _CLI_NO),
    _v("CoreFacts.get", "user", True, "item", _get("/v1/core-facts/{key}"), _REST_ONLY, _CLI_NO),
    _v("CoreFacts.delete", "user", True, "empty", _delete("/v1/core-facts/{key}"), _REST_ONLY,
       _CLI_NO),
    _v("CoreFacts.history", "user", True, "page", _get("/v1/core-facts/{key}/history"), _REST_ONLY,
       _CLI_NO),
    _v("CoreFacts.all", "user", True, "page", _get("/v1/core-facts"), _REST_ONLY, _CLI_NO),
    _v("CoreFacts.format_for_prompt", "user", True, "value",
       Without("build_context puts them in the system message"),
       Without("get_context puts them in the system message"),
       Without("the CLI has no core-facts command")),
    _v("CoreFacts.close", "none", True, "empty", Without("closes a file of the caller's process"),
       Without(_NOT_HTTP), Without(_NOT_HTTP)),
    # -- sessions -----------------------------------------------------------------------------
    _v("SessionManager.get_or_create", "user", True, "item", _post("/v1/sessions"), _REST_ONLY,
       _CLI_NO),
    _v("SessionManager.get", "thread", True, "item", _get("/v1/sessions/{session_id}"), _REST_ONLY,
       _CLI_NO),
    _v("SessionManager.update", "thread", True, "item", _patch("/v1/sessions/{session_id}"),
       _REST_ONLY, _CLI_NO),
    _v("SessionManager.archive", "thread", True, "item", _patch("/v1/sessions/{session_id}"),
       _REST_ONLY, _CLI_NO),
    _v("SessionManager.delete", "thread", True, "empty", _delete("/v1/sessions/{session_id}"),
       _REST_ONLY, _CLI_NO),
    _v("SessionManager.list", "user", True, "page", _get("/v1/sessions"), _REST_ONLY, _CLI_NO),
    _v("SessionManager.compact", "thread", False, "value",
       Without("summary compaction needs a model; POST .../compact slides the window"),
       Without(_MODEL_TOOLS), _CLI_NO),
    # -- compaction, context ------------------------------------------------------------------
    _v("CompactionService.compact", "thread", False, "value", _post(f"{_TH}/compact"), _REST_ONLY,
       _CLI_NO,
       gaps={"summary_model": "summary compaction needs a model the server does not hold",
             "summary_prompt": "summary compaction needs a model the server does not hold"}),
    _v("CompactionService.auto_compact", "thread", False, "value",
       Without("runs on the caller's thresholds after each turn; POST .../compact is the explicit"
               " call"),
       Without(_MODEL_TOOLS), _CLI_NO),
    _v("CompactionService.restore", "thread", True, "count", _post(f"{_TH}/restore"), _REST_ONLY,
       _CLI_NO),
    _v("ContextBuilder.build", "thread", True, "value", _post(f"{_TH}/context"),
       Without("get_context is Memory.build_context's tool"),
       Without("context is Memory.build_context's command")),
    _v("Turn.add", "none", False, "empty", Without("buffers the caller's own turn in its process"),
       Without(_NOT_HTTP), Without(_NOT_HTTP)),
    _v("Turn.add_many", "none", False, "empty",
       Without("buffers the caller's own turn in its process"), Without(_NOT_HTTP),
       Without(_NOT_HTTP)),
)
# fmt: on

_BY_NAME = {verb.name: verb for verb in VERBS}


def plain(text: str) -> str:
    """``text`` with the docstrings' ``literal`` marks as markdown's `literal` (for models)."""
    return text.replace("``", "`")


def by_name(name: str) -> Verb:
    """The verb called ``name`` (``"Memory.search"``)."""
    return _BY_NAME[name]


def markdown_table(verbs: tuple[Verb, ...] = VERBS) -> str:
    """The verb -> REST route, MCP tool, CLI command table, as markdown: a surface
    without the verb shows a note number, and the notes (the reasons) follow."""
    notes: dict[str, int] = {}

    def cell(value: Route | Without | str) -> str:
        if isinstance(value, Without):
            number = notes.setdefault(value.reason, len(notes) + 1)
            return f"— [{number}]"
        return f"`{value}`"

    lines = [
        "| verb | scope | REST | MCP tool | CLI |",
        "| --- | --- | --- | --- | --- |",
    ]
    for verb in verbs:
        lines.append(
            f"| `{verb.name}` | {verb.scope} | {cell(verb.rest)} | {cell(verb.mcp)}"
            f" | {cell(verb.cli)} |"
        )
    lines.append("")
    lines.append("Why a surface has no form of a verb:")
    lines.append("")
    lines.extend(f"{number}. {reason}" for reason, number in notes.items())
    return "\n".join(lines) + "\n"


# -- MCP tools and CLI commands derived from a verb ---------------------------------------------
#
# A tool that maps one verb 1:1 (``one_verb_tools``) takes its description and each of its
# arguments' descriptions and defaults from the library: ``tool_form(name)``, read by
# ``memorybank.mcp.server`` when it registers the tool and by the surface test that compares
# what the server publishes. What the tool adds over the verb is declared here, with the reason.

#: A sentence a tool of one verb adds to its verb's summary: what the tool itself does.
MCP_NOTES: Mapping[str, str] = {
    "remember": "The thread is created when absent, owned by this server's user.",
    "recall": "Searches past conversations, documents and facts (a thread_id: that thread's "
    "messages only): hybrid (keyword plus semantic) when the server has an embedder, "
    "else keyword.",
    "get_context": "The thread must exist (a missing one is not_found, as for history). "
    "The context is built for the agent this server acts for: a server started without "
    "an agent refuses the call with invalid_input.",
    "add_fact": "It stays until forgotten: list_facts, recall and get_context see it.",
    "list_facts": "Here agent_id and user_id are this server's (its own facts and the "
    "shared ones). One page at a time: pass nextCursor back as cursor.",
    "feedback": "Call it after using a fact: useful=false when it was wrong or unhelpful.",
    "consolidate": "Acts on this server's user's facts and graph; call it when recalled facts "
    "repeat or disagree (the newest value of an attribute wins) or one thing has two graph "
    "entities. With dry_run nothing changes.",
}
#: Tool arguments whose default is not the library's: ``{tool: {argument: (default, why)}}``.
MCP_DEFAULTS: Mapping[str, Mapping[str, tuple[Any, str]]] = {
    "remember": {"role": ("user", "a model mostly records what its user said")},
    "get_context": {"include_facts": (True, "a model asking for context wants what it was told")},
}
#: Library arguments a CLI command does not take, with the reason: ``{verb: {argument: why}}``.
#: ``user_id``, ``agent_id`` and ``tenant_id`` are ``--user``, ``--agent`` and ``--tenant``;
#: any other argument is an option (or the positional argument) under its own name.
_SHOW = "show is the operator's view of what is stored: the whole thread, as the store holds it"
_SHOW_GAPS = {"user_id": _SHOW}
CLI_GAPS: Mapping[str, Mapping[str, str]] = {
    "Memory.build_context": {"graph_options": "a GraphContextOptions: the library's defaults"},
    "Memory.history": _SHOW_GAPS,
    "Memory.prune": {"policy": "a RetentionPolicy, from --max-age, --idle-ttl, --max-entries"},
    "Memory.search": {
        "filters": "a JSON object of metadata values: POST /v1/search takes it",
        "options": "SearchOptions is a Python object (hybrid ranking weights)",
        "rerank": "the CLI holds no reranker",
        "rerank_top": "the CLI holds no reranker",
    },
    "Threads.get": _SHOW_GAPS,
    "Threads.require": _SHOW_GAPS,
    "Threads.delete": {"user_id": "the operator deletes any thread of the tenant"},
    "Entries.list": {
        **_SHOW_GAPS,
        "limit": "--last: show pages the newest entries",
        "offset": _SHOW,
        "before": _SHOW,
        "after": _SHOW,
        "order": "show prints oldest first, as history",
        "max_tokens": _SHOW,
        "include_tool_calls": _SHOW,
    },
    "Entries.count": _SHOW_GAPS,
    "Branches.list": _SHOW_GAPS,
    "Snapshots.load": {"run_id": "snapshots lists every run's value (--json whole)"},
    "WorkingMemory.get": {
        "key": "runs lists every key's value (--json whole)",
        "default": "runs lists every key's value (--json whole)",
    },
    "Facts.search": {
        "query": "memorybank search --kinds facts searches facts",
        "k": "memorybank search --kinds facts searches facts",
    },
    "Documents.get": {"document_id": "documents lists them (--json whole)"},
    "Documents.list": {"filters": "a JSON object of metadata values: POST /v1/search takes it"},
    "Documents.search": {
        "filters": "a JSON object of metadata values: POST /v1/search takes it",
        "options": "SearchOptions is a Python object (hybrid ranking weights)",
    },
}

#: CLI option of a principal argument, the same on every command.
CLI_PRINCIPALS: Mapping[str, str] = {
    "user_id": "--user",
    "agent_id": "--agent",
    "tenant_id": "--tenant",
}


@dataclass(frozen=True, slots=True)
class ToolForm:
    """An MCP tool of one verb as the declaration derives it (see ``tool_form``)."""

    tool: str
    verb: Verb
    description: str
    arguments: Mapping[str, Argument]

    def argument(self, name: str) -> Argument:
        """The tool's ``name``: its description from the docstring (as ``plain``), its
        default the library's unless ``MCP_DEFAULTS`` says otherwise; ``LookupError`` for
        a name the docstring does not describe or the verb does not take."""
        found = self.arguments.get(name)
        if found is None:
            raise LookupError(f"{self.verb.name} has no argument {name!r} (tool {self.tool})")
        if found.description is None:
            raise LookupError(f"the docstring of {self.verb.name} does not describe {name!r}")
        return found


def one_verb_tools() -> list[str]:
    """The MCP tools that map one verb 1:1: named by exactly one verb, not the reference's."""
    named: dict[str, list[Verb]] = {}
    for verb in VERBS:
        if isinstance(verb.mcp, str) and verb.mcp not in REFERENCE_TOOLS:
            named.setdefault(verb.mcp, []).append(verb)
    return sorted(tool for tool, verbs in named.items() if len(verbs) == 1)


def tool_form(tool: str) -> ToolForm:
    """What tool ``tool`` of one verb publishes: ``plain(summary)`` (and its
    ``MCP_NOTES`` sentence) as its description, and per library argument its
    ``describe`` text and default (``MCP_DEFAULTS`` where the tool's differs)."""
    if tool not in one_verb_tools():
        raise LookupError(f"{tool!r} is no MCP tool of one verb")
    verb = next(v for v in VERBS if v.mcp == tool)
    overrides = MCP_DEFAULTS.get(tool, {})
    arguments = {}
    for argument in verb.arguments:
        default: Any = argument.default
        required = argument.required
        if argument.name in overrides:
            default, required = overrides[argument.name][0], False
        text = argument.description
        arguments[argument.name] = Argument(
            name=argument.name,
            annotation=argument.annotation,
            required=required,
            default=default,
            description=None if text is None else plain(text),
        )
    description = " ".join(filter(None, (plain(verb.summary), MCP_NOTES.get(tool))))
    return ToolForm(tool=tool, verb=verb, description=description, arguments=arguments)


def cli_option(argument: str) -> str:
    """The CLI option of library argument ``argument`` (``--max-tokens``, ``--user``)."""
    return CLI_PRINCIPALS.get(argument, "--" + argument.replace("_", "-"))


# -- REST request bodies -----------------------------------------------------------------------
# What ``scripts/gen_models.py`` writes to ``memorybank/server/models_generated.py``: one
# pydantic model per route with a JSON body, whose fields are one verb's arguments.

#: Library arguments a route takes from the request's headers, not its body: the caller's
#: user is ``X-User-Id`` (the handle the route calls is scoped to it).
HEADERS: Mapping[str, str] = {"user_id": "X-User-Id"}
_AGENT_USER = ("agent_id", "user_id")
_USER = ("user_id",)


@dataclass(frozen=True, slots=True)
class Body:
    """The JSON body of ``verb``'s route, generated from its signature.

    Its fields are the verb's arguments under the library's names, types and defaults,
    less the route's path parameters, the verb's ``rest_gaps``, ``header`` (arguments
    the route takes from ``HEADERS``) and ``query`` (arguments it takes as query
    parameters, as every by-id graph route takes the owner).
    """

    verb: str
    model: str
    header: tuple[str, ...] = ()
    query: tuple[str, ...] = ()

    @property
    def declared(self) -> Verb:
        """The verb the body is generated from."""
        return by_name(self.verb)

    @property
    def route(self) -> Route:
        """The verb's route."""
        route = self.declared.rest
        assert isinstance(route, Route), self.verb
        return route

    def fields(self) -> list[Argument]:
        """The verb's arguments the body carries, in the signature's order."""
        verb = self.declared
        elsewhere = {*re.findall(r"\{(\w+)\}", self.route.path), *verb.rest_gaps}
        elsewhere |= {*self.header, *self.query}
        return [a for a in verb.arguments if a.name not in elsewhere]

    @staticmethod
    def required(argument: Argument) -> bool:
        """Whether the body requires ``argument``: when the library does, and for an
        ``agent_id`` the library takes from its handle when left out (``str | Unset``,
        no ``None``): REST's handle names no agent (no ``X-Agent-Id``), so the body must."""
        if argument.required:
            return True
        from_handle = argument.name == "agent_id" and argument.default is UNSET
        return from_handle and "None" not in argument.annotation


#: Every route with a JSON body, by the verb it is generated from. A route answering two
#: verbs (``PATCH /v1/facts/{fact_id}``, ``POST /v1/search``) takes the first verb's body
#: (the surface test checks it takes the other's arguments too).
BODIES: tuple[Body, ...] = (
    Body("Memory.build_context", "ContextIn"),
    Body("Memory.search", "SearchIn"),
    Body("Memory.consolidate", "ConsolidateIn"),
    Body("Memory.feedback", "FeedbackIn"),
    Body("Threads.create", "ThreadIn"),
    Body("Threads.update", "ThreadPatch", header=_USER),
    Body("Entries.add", "EntryOptions", header=_USER),
    Body("Entries.add_many", "EntriesIn", header=_USER),
    Body("Branches.create", "BranchIn", header=_USER),
    Body("Branches.checkout", "CheckoutIn", header=_USER),
    Body("Branches.rewind", "RewindIn", header=_USER),
    Body("Snapshots.save", "SnapshotIn", header=_USER),
    Body("WorkingMemory.set", "ValueIn"),
    Body("Summaries.add", "SummaryIn"),
    Body("Facts.add", "FactIn"),
    Body("Facts.update", "FactPatch", header=_USER, query=("agent_id",)),
    Body("Facts.search", "FactSearchIn"),
    Body("Graph.add_entity", "EntityIn"),
    Body("Graph.update_entity", "EntityPatch", query=_AGENT_USER),
    Body("Graph.add_observations", "ObservationsIn", query=_AGENT_USER),
    Body("Graph.delete_observations", "ObservationsDeleteIn", query=_AGENT_USER),
    Body("Graph.merge_entities", "MergeIn", query=_AGENT_USER),
    Body("Graph.add_relation", "RelationIn"),
    Body("Graph.update_relation", "RelationPatch", query=_AGENT_USER),
    Body("Graph.invalidate_relation", "InvalidateIn", query=_AGENT_USER),
    Body("Graph.traverse", "TraverseIn"),
    Body("Graph.infer", "InferIn"),
    Body("Documents.add", "DocumentIn"),
    Body("CoreFacts.set", "CoreFactValueIn", header=_USER),
    Body("SessionManager.get_or_create", "SessionIn"),
    Body("SessionManager.update", "SessionPatch", header=_USER),
    Body("CompactionService.compact", "CompactOptions", header=_USER),
)
