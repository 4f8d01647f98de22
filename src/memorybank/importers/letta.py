"""Import Letta agent files (``.af``): messages, memory blocks, files and passages.

``source`` is the ``.af`` file (JSON). It is parsed here, as its published schema describes
(``AgentFileSchema``: ``agents``, ``blocks``, ``files``, ``sources``, ``tools``, ``groups``,
``mcp_servers``; and the earlier single-agent form with ``core_memory`` and ``messages``),
rather than with Letta's own classes: the schema lives in the ``letta`` server package,
whose repository was archived on 2026-08-15 and whose PyPI name now ships Letta Code (a
terminal app, 79 MB, no schema classes), and ``letta-client`` only passes an agent file
through as bytes. The ``import-letta`` extra therefore installs nothing.

Each agent becomes a thread (owner ``user_id``, agent ``agent_id`` or the agent's name) of
its messages, in order, with their times: Letta's roles, text parts, tool calls and tool
call ids as chat messages; ``metadata["source"]`` ``{"system": "letta", "id": MESSAGE_ID,
"agent": NAME, "in_context": bool}``. A file numbers its ids afresh on every export
(``agent-0``, ``message-0``), so ids here come from what does not change: the thread's from
the agent's name, an entry's from its time, role and content. Memory blocks become core
facts of ``user_id`` (key: the block's label), files with content and archival passages
(the published schema has none yet; a ``passages`` list of ``{"text", "created_at"}`` is
read where a file has one) become documents.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from memorybank.errors import InvalidInput
from memorybank.importers.plan import (
    Plan,
    PlannedBranch,
    PlannedEntry,
    PlannedThread,
    as_utc,
    provenance,
    read_json,
    source_id,
)

__all__ = ["SYSTEM", "read"]

SYSTEM = "letta"
_ROLES = {"system", "user", "assistant", "tool"}
#: A time for what the file gives none (blocks): fixed, so a second import matches the first.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _load(source: str) -> dict[str, Any]:
    data = read_json(source, "Letta agent file")
    if not isinstance(data, dict) or not (
        isinstance(data.get("agents"), list) or isinstance(data.get("messages"), list)
    ):
        raise InvalidInput(f"{source!r} has neither 'agents' nor 'messages'", field="source")
    if "agents" not in data:  # the earlier single-agent form
        agent = dict(data)
        blocks = agent.pop("core_memory", []) or []
        for i, block in enumerate(blocks):
            block.setdefault("id", f"block-{i}")
        agent["block_ids"] = [b["id"] for b in blocks]
        indices = agent.get("in_context_message_indices") or []
        messages = agent.get("messages") or []
        for i, message in enumerate(messages):
            message.setdefault("id", f"message-{i}")
        agent["in_context_message_ids"] = [messages[i]["id"] for i in indices if i < len(messages)]
        return {"agents": [agent], "blocks": blocks, "created_at": data.get("created_at")}
    return data


def _digest(*parts: object) -> str:
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _message(raw: dict[str, Any]) -> dict[str, Any] | None:
    """A Letta message as a chat message (``None``: a role with no equivalent)."""
    role = raw.get("role")
    if role not in _ROLES:
        return None
    content = raw.get("content")
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict)]
        texts = [p for p in parts if p.get("type") == "text"]
        if len(texts) == len(parts):
            content = "\n".join(str(p.get("text", "")) for p in texts)
        else:  # reasoning and other parts are kept as parts
            content = [{k: x for k, x in p.items() if x is not None} for p in parts]
    out: dict[str, Any] = {"role": role, "content": content}
    if raw.get("name"):
        out["name"] = raw["name"]
    calls = raw.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["function"]["name"],
                    "arguments": c["function"].get("arguments") or "",
                },
            }
            for c in calls
        ]
    if role == "tool":
        returns = raw.get("tool_returns") or [{}]
        call_id = raw.get("tool_call_id") or returns[0].get("tool_call_id")
        if call_id is None:
            return None
        out["tool_call_id"] = call_id
    return out


def read(source: str, *, user_id: str | None = None, agent_id: str | None = None) -> Plan:
    """Read the agent file at ``source`` (see the module docstring)."""
    data = _load(source)
    plan = Plan(SYSTEM)
    exported = as_utc(data.get("created_at"), _EPOCH)
    blocks = {str(b.get("id")): b for b in data.get("blocks") or [] if isinstance(b, dict)}
    skipped_roles = 0
    labels: set[str] = set()
    for agent in data["agents"]:
        name = str(agent.get("name") or agent.get("id") or "agent")
        in_context = set(agent.get("in_context_message_ids") or [])
        entries: list[PlannedEntry] = []
        seen: dict[str, int] = {}
        for raw in agent.get("messages") or []:
            message = _message(raw)
            if message is None:
                skipped_roles += 1
                continue
            created = as_utc(raw.get("created_at"), exported)
            digest = _digest(raw.get("created_at"), message)
            seen[digest] = seen.get(digest, 0) + 1  # the same message twice at one time
            entries.append(
                PlannedEntry(
                    id=source_id(SYSTEM, name, f"{digest}.{seen[digest]}"),
                    message=message,
                    created_at=created,
                    source=provenance(
                        SYSTEM,
                        str(raw.get("id")),
                        agent=name,
                        in_context=raw.get("id") in in_context,
                        **({"model": raw["model"]} if raw.get("model") else {}),
                    ),
                )
            )
        times = [e.created_at for e in entries] or [exported]
        metadata: dict[str, Any] = {"source": provenance(SYSTEM, str(agent.get("id")), name=name)}
        for key in ("description", "system", "agent_type", "tags"):
            if agent.get(key):
                metadata[key] = agent[key]
        plan.threads.append(
            PlannedThread(
                id=source_id(SYSTEM, name),
                user_id=user_id,
                agent_id=agent_id or name,
                title=name,
                metadata=metadata,
                created_at=min(times),
                updated_at=max(times),
                branches=[PlannedBranch("main", min(times), entries)],
            )
        )
        for block_id in agent.get("block_ids") or []:
            block = blocks.get(str(block_id))
            if block is None or not isinstance(block.get("value"), str):
                continue
            label = str(block.get("label") or block_id)
            if label in labels:
                continue  # a block shared by several agents of the file: once
            labels.add(label)
            plan.add_core_fact(
                user_id, label, block["value"], created_at=exported, updated_at=exported
            )
        for passage in agent.get("passages") or []:
            _passage(plan, passage, name, user_id, agent_id or name, exported)
    for passage in data.get("passages") or []:
        _passage(plan, passage, None, user_id, agent_id, exported)
    files = 0
    for file in data.get("files") or []:
        content = file.get("content")
        if not isinstance(content, str) or not content.strip():
            files += 1
            continue
        name = str(file.get("file_name") or file.get("id"))
        created = as_utc(file.get("file_creation_date") or file.get("created_at"), exported)
        plan.add_document(
            source_id(SYSTEM, "file", name, _digest(content)),
            content,
            {
                "source": provenance(SYSTEM, str(file.get("id")), file_name=name),
                "file_type": file.get("file_type"),
            },
            user_id=user_id,
            agent_id=agent_id,
            created_at=created,
            updated_at=as_utc(file.get("file_last_modified_date"), created),
        )
    plan.skip("messages of other roles", skipped_roles, "approval and other Letta-only roles")
    plan.skip("files without content", files, "an agent file may list a file without its text")
    for key, why in (
        ("tools", "tool code and schemas belong to the agent runtime"),
        ("groups", "multi-agent groups"),
        ("mcp_servers", "MCP server configurations"),
        ("sources", "data source settings (their files' text is imported)"),
    ):
        plan.skip(key, len(data.get(key) or []), why)
    described = sum(1 for b in blocks.values() if b.get("description") or b.get("limit"))
    plan.skip(
        "block descriptions and limits",
        described,
        "core facts hold a key and a value; the thread's metadata keeps the system prompt",
    )
    return plan


def _passage(
    plan: Plan,
    passage: dict[str, Any],
    agent: str | None,
    user_id: str | None,
    agent_id: str | None,
    default: datetime,
) -> None:
    text = passage.get("text") or passage.get("content")
    if not isinstance(text, str) or not text.strip():
        return
    created = as_utc(passage.get("created_at"), default)
    metadata: dict[str, Any] = {
        "source": provenance(SYSTEM, str(passage.get("id")), passage=True, agent=agent)
    }
    if passage.get("tags"):
        metadata["tags"] = passage["tags"]
    plan.add_document(
        source_id(SYSTEM, "passage", agent or "", _digest(passage.get("created_at"), text)),
        text,
        metadata,
        user_id=user_id,
        agent_id=agent_id,
        created_at=created,
        updated_at=as_utc(passage.get("updated_at"), created),
    )
