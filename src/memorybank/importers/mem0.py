"""Import Mem0 (open source): its memories, with their history, from its own storage.

``pip install 'memorybank[import-mem0]'``. ``source`` is a JSON file holding the config
dict given to ``mem0.Memory.from_config`` (its ``vector_store``, ``history_db_path`` and
``embedder``; ``{}`` means Mem0's defaults: Qdrant at ``/tmp/qdrant``, history in
``~/.mem0/history.db``). The memories are read with Mem0's own vector store class
(``VectorStoreFactory``) and its history with Mem0's ``SQLiteManager``; no LLM or embedder
is called.

Each memory becomes a fact of the same owners: Mem0's ``user_id`` and ``agent_id`` (else
``user_id`` / ``agent_id`` given here); its ``run_id``, ``actor_id`` and ``role`` go to the
fact's ``metadata["source"]`` beside ``{"system": "mem0", "id": MEMORY_ID}``, its other
metadata to the fact's ``metadata``; times are Mem0's. Its history (the ``history`` table):
every ``UPDATE`` is a superseded value (``facts.history``), so the fact's ``version`` is
one plus the number of updates. Vectors: carried when ``vector_model`` (default: the
config's ``embedder.config.model``) is the target embedder's ``model_id`` and the vector
store is Qdrant (the only one whose stored vectors Mem0's class reads back), else the
target embedder embeds the facts.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorybank.errors import InvalidInput
from memorybank.importers.plan import Plan, as_utc, fact, provenance, read_json, source_id

# Importing Mem0 starts its usage telemetry (PostHog, sent to Mem0's servers) unless
# MEM0_TELEMETRY says otherwise: reading a user's data must not report on it. A value the
# user set is kept.
os.environ.setdefault("MEM0_TELEMETRY", "False")

try:
    from mem0.configs.base import MemoryConfig
    from mem0.utils.factory import VectorStoreFactory
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memorybank.importers.mem0 needs Mem0: pip install 'memorybank[import-mem0]'"
    ) from error

__all__ = ["SYSTEM", "read"]

SYSTEM = "mem0"
#: Payload fields Mem0 writes itself (everything else is the caller's metadata).
_OWN = {"data", "hash", "created_at", "updated_at", "text_lemmatized", "user_id", "agent_id"}
_PROVENANCE = ("run_id", "actor_id", "role")
_PAGE = 1000


def _config(source: str) -> tuple[MemoryConfig, list[str]]:
    """Mem0's config from the file, and the keys this Mem0 does not know (an older
    config's ``graph_store``: Mem0's open-source edition no longer has graph memory)."""
    data = read_json(source, "Mem0 config file")
    if not isinstance(data, dict):
        raise InvalidInput(f"{source!r} must hold a JSON object", field="source")
    unknown = sorted(k for k in data if k not in MemoryConfig.model_fields)
    return MemoryConfig(**{k: x for k, x in data.items() if k not in unknown}), unknown


def _points(store: Any) -> list[tuple[str, dict[str, Any], list[float] | None]]:
    """Every memory of ``store``: id, payload and (Qdrant) vector."""
    client = getattr(store, "client", None)
    scroll = getattr(client, "scroll", None)
    if scroll is not None and type(store).__module__.endswith("qdrant"):
        out: list[tuple[str, dict[str, Any], list[float] | None]] = []
        offset = None
        while True:
            points, offset = scroll(
                collection_name=store.collection_name,
                limit=_PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=True,
            )
            for p in points:
                vector = p.vector if isinstance(p.vector, list) else None
                out.append((str(p.id), dict(p.payload or {}), vector))
            if offset is None:
                return out
    listed = store.list(top_k=10**9)
    rows = listed[0] if isinstance(listed, list | tuple) and listed else []
    return [(str(r.id), dict(r.payload or {}), None) for r in rows]


def _history(path: str) -> dict[str, list[tuple[str, str | None, str | None, str]]]:
    """The history rows of each memory, oldest first: (event, old, new, time)."""
    if path == ":memory:" or not Path(path).is_file():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT memory_id, event, old_memory, new_memory,"
            " COALESCE(updated_at, created_at) FROM history ORDER BY rowid"
        ).fetchall()
    out: dict[str, list[tuple[str, str | None, str | None, str]]] = {}
    for memory_id, event, old, new, when in rows:
        out.setdefault(str(memory_id), []).append((str(event), old, new, str(when or "")))
    return out


def _messages(path: str) -> int:
    if path == ":memory:" or not Path(path).is_file():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if "messages" not in tables:
            return 0
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])


def read(
    source: str,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    vector_model: str | None = None,
) -> Plan:
    """Read the memories and history of the Mem0 config at ``source`` (module docstring)."""
    config, unknown = _config(source)
    model = config.embedder.config.get("model") if config.embedder.config else None
    plan = Plan(SYSTEM, vector_model=vector_model or (model if isinstance(model, str) else None))
    store = VectorStoreFactory.create(config.vector_store.provider, config.vector_store.config)
    try:
        points = _points(store)
    finally:
        close = getattr(getattr(store, "client", None), "close", None)
        if close is not None:
            close()
    history = _history(config.history_db_path)
    now = datetime.now(UTC)
    live = set()
    for memory_id, payload, vector in sorted(points, key=lambda p: p[0]):
        live.add(memory_id)
        created = as_utc(payload.get("created_at"), now)
        updated = as_utc(payload.get("updated_at"), created)
        fact_id = source_id(SYSTEM, memory_id)
        owner = payload.get("user_id", user_id)
        agent = payload.get("agent_id", agent_id)
        more = {k: payload[k] for k in _PROVENANCE if payload.get(k) is not None}
        metadata = {k: x for k, x in payload.items() if k not in _OWN and k not in _PROVENANCE}
        metadata["source"] = provenance(SYSTEM, memory_id, **more)
        updates = [h for h in history.get(memory_id, []) if h[0] == "UPDATE"]
        values = [u[1] for u in updates if u[1] is not None]
        same = functools.partial(
            fact,
            fact_id,
            user_id=owner,
            agent_id=agent,
            source=f"{SYSTEM}:{memory_id}",
            metadata=metadata,
            created_at=created,
        )
        since = created
        for version, (old, update) in enumerate(zip(values, updates, strict=False), start=1):
            replaced = as_utc(update[3], updated)
            plan.add_fact_version(same(old, updated_at=since, version=version), replaced)
            since = replaced
        text = str(payload.get("data", ""))
        plan.add_fact(same(text, updated_at=updated, version=len(values) + 1), vector)
    deleted = sum(
        1
        for memory_id, rows in history.items()
        if memory_id not in live and rows[-1][0] == "DELETE"
    )
    plan.skip(
        "deleted memories",
        deleted,
        "Mem0 keeps only their history; memorybank keeps no history of a deleted fact",
    )
    plan.skip(
        "config sections", len(unknown), f"{', '.join(unknown)}: not part of this Mem0's storage"
    )
    plan.skip(
        "buffered messages",
        _messages(config.history_db_path),
        "Mem0's last messages per session (at most 10, kept for extraction), not a conversation",
    )
    return plan
