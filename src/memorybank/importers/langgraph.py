"""Import LangGraph: a checkpointer's threads and a ``BaseStore``'s items.

``pip install 'memorybank[import-langgraph]'``. ``source`` is the SQLite database file of a
``SqliteSaver`` / ``SqliteStore``, or the PostgreSQL URL of a ``PostgresSaver`` /
``PostgresStore`` (``postgresql://...``); whichever of the two (checkpoints, store) the
database holds is imported, read with LangGraph's own savers and stores.

Checkpoints. Each thread (``thread_id``, root namespace) becomes the memorybank thread of
that id. Its checkpoints form a tree (``parent_config``); every leaf is a line of history.
The newest leaf (the thread's latest checkpoint) is ``main``: its ``messages`` channel, in
order, as entries (LangChain messages as OpenAI chat messages: roles, tool calls, tool call
ids, names). Every other leaf is a branch ``checkpoint-<ID>`` forked at the last message it
shares with a line already imported (time travel: ``update_state`` or a replay from an
earlier checkpoint). A message's time is the ``ts`` of the first checkpoint holding it.
Provenance: ``metadata["source"]`` ``{"system": "langgraph", "id": MESSAGE_ID, "thread":
THREAD, "checkpoint": CHECKPOINT_ID}`` (the checkpoint it first appeared in); the thread's
names its newest checkpoint.

Store. Each item (namespace, key) becomes a document: its content the item's ``content``
(or ``text``, ``memory``) when that is text, else the value as JSON; its metadata the
namespace (a list), key and whole value; owner ``user_id``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorybank.errors import NotFound
from memorybank.importers.plan import (
    Plan,
    PlannedBranch,
    PlannedEntry,
    PlannedThread,
    as_utc,
    provenance,
    source_id,
)

try:
    from langchain_core.messages import BaseMessage, convert_to_openai_messages
    from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
    from langgraph.store.base import BaseStore
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memorybank.importers.langgraph needs LangGraph: pip install 'memorybank[import-langgraph]'"
    ) from error

__all__ = ["SYSTEM", "read"]

SYSTEM = "langgraph"
#: Store items read per ``search`` call.
_PAGE = 500


def _tables(source: str) -> set[str]:
    if source.startswith(("postgresql://", "postgres://")):
        import psycopg

        with psycopg.connect(source) as conn:
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
            ).fetchall()
        return {str(r[0]) for r in rows}
    if not Path(source).is_file():
        raise NotFound(f"no LangGraph SQLite database at {source!r}")
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as conn:
        return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}


@contextmanager
def _open(
    source: str, tables: set[str]
) -> Iterator[tuple[BaseCheckpointSaver[Any] | None, BaseStore | None]]:
    """LangGraph's own saver and store on ``source`` (each ``None`` if it has no tables)."""
    postgres = source.startswith(("postgresql://", "postgres://"))
    with ExitStack() as stack:
        saver: BaseCheckpointSaver[Any] | None = None
        store: BaseStore | None = None
        if "checkpoints" in tables:
            if postgres:
                from langgraph.checkpoint.postgres import PostgresSaver

                saver = stack.enter_context(PostgresSaver.from_conn_string(source))
            else:
                from langgraph.checkpoint.sqlite import SqliteSaver

                saver = stack.enter_context(SqliteSaver.from_conn_string(source))
        if "store" in tables:
            if postgres:
                from langgraph.store.postgres import PostgresStore

                store = stack.enter_context(PostgresStore.from_conn_string(source))
            else:
                from langgraph.store.sqlite import SqliteStore

                store = stack.enter_context(SqliteStore.from_conn_string(source))
        yield saver, store


def read(
    source: str,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    messages_key: str = "messages",
) -> Plan:
    """Read the checkpoints and store items at ``source`` (see the module docstring)."""
    tables = _tables(source)
    plan = Plan(SYSTEM)
    if "checkpoints" not in tables and "store" not in tables:
        raise NotFound(f"{source!r} holds neither LangGraph checkpoints nor a LangGraph store")
    with _open(source, tables) as (saver, store):
        if saver is not None:
            _read_checkpoints(plan, saver, user_id, agent_id, messages_key)
        if store is not None:
            _read_store(plan, store, user_id, agent_id)
    return plan


def _read_checkpoints(
    plan: Plan,
    saver: BaseCheckpointSaver[Any],
    user_id: str | None,
    agent_id: str | None,
    messages_key: str,
) -> None:
    by_thread: dict[str, dict[str, CheckpointTuple]] = {}
    subgraph = 0
    for found in saver.list(None):
        configurable = found.config["configurable"]
        if configurable.get("checkpoint_ns", ""):
            subgraph += 1
            continue
        by_thread.setdefault(str(configurable["thread_id"]), {})[
            str(configurable["checkpoint_id"])
        ] = found
    plan.skip(
        "subgraph checkpoints",
        subgraph,
        "a subgraph's own state (checkpoint_ns) is part of its parent's run, not a thread",
    )
    others: set[str] = set()
    pending = 0
    for thread_id in sorted(by_thread):
        planned, channels, waiting = _thread(
            thread_id, by_thread[thread_id], user_id, agent_id, messages_key
        )
        plan.threads.append(planned)
        others |= channels
        pending += waiting
    plan.skip(
        "state channels other than messages",
        len(others),
        f"{', '.join(sorted(others))}: graph state with no memorybank equivalent",
    )
    plan.skip(
        "pending writes of the newest checkpoints",
        pending,
        "work of an interrupted or unfinished step, not yet part of the state",
    )


def _parent(found: CheckpointTuple) -> str | None:
    parent = found.parent_config
    return None if parent is None else str(parent["configurable"].get("checkpoint_id"))


def _messages(found: CheckpointTuple, key: str) -> list[BaseMessage]:
    value = found.checkpoint["channel_values"].get(key, [])
    return [m for m in value if isinstance(m, BaseMessage)] if isinstance(value, list) else []


def _thread(
    thread_id: str,
    checkpoints: dict[str, CheckpointTuple],
    user_id: str | None,
    agent_id: str | None,
    key: str,
) -> tuple[PlannedThread, set[str], int]:
    """One thread: its leaves as branches (the newest first, as ``main``)."""
    parents = {cid: _parent(c) for cid, c in checkpoints.items()}
    has_child = {p for p in parents.values() if p is not None}
    # checkpoint ids are time-ordered (uuid6): the newest leaf is the latest checkpoint
    leaves = sorted((c for c in checkpoints if c not in has_child), reverse=True)
    times = [as_utc(c.checkpoint["ts"], datetime.now(UTC)) for c in checkpoints.values()]
    newest = checkpoints[leaves[0]]
    thread = PlannedThread(
        id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        title=None,
        metadata={"source": provenance(SYSTEM, thread_id, checkpoint=leaves[0])},
        created_at=min(times),
        updated_at=max(times),
        branches=[],
    )
    lines: list[tuple[str, list[str], list[str]]] = []  # (branch, message keys, entry ids)
    for leaf in leaves:
        first_seen: dict[str, tuple[datetime, str]] = {}
        for cid in _path(leaf, parents):
            found = checkpoints[cid]
            when = as_utc(found.checkpoint["ts"], thread.created_at)
            for message in _messages(found, key):
                if message.id is not None and message.id not in first_seen:
                    first_seen[message.id] = (when, cid)
        messages = _messages(checkpoints[leaf], key)
        name = "main" if not lines else f"checkpoint-{leaf}"
        keys = [_key(m, i) for i, m in enumerate(messages)]
        source, shared, source_ids = _fork(lines, keys)
        branch = PlannedBranch(
            name,
            as_utc(checkpoints[leaf].checkpoint["ts"], thread.created_at),
            from_branch=source if source is not None else ("main" if lines else None),
            fork_entry=source_ids[shared - 1] if shared else None,
        )
        ids = source_ids[:shared]
        for i, message in enumerate(messages[shared:], start=shared):
            when, where = first_seen.get(message.id or "", (branch.created_at, leaf))
            parts = (thread_id, keys[i]) if name == "main" else (thread_id, name, keys[i])
            entry = PlannedEntry(
                id=source_id(SYSTEM, *parts),
                message=_openai(message),
                created_at=when,
                source=provenance(
                    SYSTEM, message.id or keys[i], thread=thread_id, checkpoint=where
                ),
            )
            branch.entries.append(entry)
            ids.append(entry.id)
        thread.branches.append(branch)
        lines.append((name, keys, ids))
    channels = set(newest.checkpoint["channel_values"]) - {key}
    channels = {c for c in channels if not c.startswith("branch:")}
    return thread, channels, len(newest.pending_writes or [])


def _path(leaf: str, parents: dict[str, str | None]) -> list[str]:
    """The checkpoints from the thread's first to ``leaf``."""
    path: list[str] = []
    at: str | None = leaf
    while at is not None and at in parents and at not in path:
        path.append(at)
        at = parents[at]
    return path[::-1]


def _key(message: BaseMessage, index: int) -> str:
    """A message's identity within a thread: its id, else its place and content."""
    if message.id is not None:
        return message.id
    text = json.dumps([index, message.type, message.content], sort_keys=True, default=str)
    return f"#{index}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _fork(
    lines: Sequence[tuple[str, list[str], list[str]]], keys: list[str]
) -> tuple[str | None, int, list[str]]:
    """The imported line sharing the longest prefix with ``keys``: its name, the prefix's
    length and the line's entry ids."""
    best: tuple[str | None, int, list[str]] = (None, 0, [])
    for name, held, ids in lines:
        shared = 0
        for a, b in zip(held, keys, strict=False):
            if a != b:
                break
            shared += 1
        if shared > best[1]:
            best = (name, shared, ids)
    return best


def _openai(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message as the OpenAI chat message memorybank stores."""
    converted = convert_to_openai_messages(message)
    out = dict(converted) if isinstance(converted, dict) else {"role": "user", "content": ""}
    if out.get("role") == "developer":
        out["role"] = "system"
    return out


def _read_store(plan: Plan, store: BaseStore, user_id: str | None, agent_id: str | None) -> None:
    offset = 0
    while True:
        items = store.search((), limit=_PAGE, offset=offset)
        for item in items:
            value = item.value
            text = next(
                (value[k] for k in ("content", "text", "memory") if isinstance(value.get(k), str)),
                None,
            )
            content = text if text and text.strip() else json.dumps(value, ensure_ascii=False)
            original = json.dumps([list(item.namespace), item.key], ensure_ascii=False)
            created = as_utc(item.created_at, datetime.now(UTC))
            plan.add_document(
                source_id(SYSTEM, "store", original),
                content,
                {
                    "source": provenance(SYSTEM, original),
                    "namespace": list(item.namespace),
                    "key": item.key,
                    "value": value,
                },
                user_id=user_id,
                agent_id=agent_id,
                created_at=created,
                updated_at=as_utc(item.updated_at, created),
            )
        if len(items) < _PAGE:
            return
        offset += _PAGE
