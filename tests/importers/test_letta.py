"""``import-from letta``: agent files (``.af``) in the published schema, imported into SQLite
and PostgreSQL. No installable package writes them any more (see
``memorybank.importers.letta``), so the files are made here, field for field as Letta's
``AgentFileSchema`` exports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memorybank import Memory
from memorybank.importers.plan import as_utc
from memorybank.memory._sync.core_facts import CoreFacts
from tests.importers.conftest import run


def _message(i: int, role: str, parts: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "role": role,
        "content": parts,
        "name": None,
        "otid": None,
        "sender_id": None,
        "batch_item_id": None,
        "group_id": None,
        "id": f"message-{i}",
        "model": "gpt-4o-mini",
        "agent_id": "agent-0",
        "tool_calls": None,
        "tool_call_id": None,
        "tool_returns": [],
        "created_at": f"2025-10-31T22:5{i}:00.{i}00000+00:00",
        "approve": None,
        "approval_request_id": None,
        "denial_reason": None,
        "approvals": [],
        **more,
    }


CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "core_memory_append", "arguments": '{"label": "human"}'},
}
MESSAGES = [
    _message(0, "system", [{"type": "text", "text": "You are Sam.", "signature": None}]),
    _message(1, "user", [{"type": "text", "text": "Hi, I am Chad."}]),
    _message(
        2,
        "assistant",
        [{"type": "reasoning", "reasoning": "save the name", "is_native": True, "signature": None}],
        tool_calls=[CALL],
    ),
    _message(
        3,
        "tool",
        [{"type": "text", "text": "OK"}],
        tool_call_id="call-1",
        tool_returns=[{"tool_call_id": "call-1", "status": "success"}],
    ),
    _message(4, "assistant", [{"type": "text", "text": "Nice to meet you, Chad."}]),
    _message(5, "approval", []),
]
AGENT_FILE = {
    "agents": [
        {
            "name": "sam",
            "id": "agent-0",
            "system": "You are Sam.",
            "agent_type": "letta_v1_agent",
            "description": "a MemGPT agent",
            "block_ids": ["block-0", "block-1"],
            "tool_ids": ["tool-0"],
            "in_context_message_ids": ["message-0", "message-4"],
            "messages": MESSAGES,
            "passages": [
                {
                    "id": "passage-0",
                    "text": "Chad sails on weekends",
                    "created_at": "2025-10-30T10:00:00+00:00",
                    "tags": ["hobby"],
                }
            ],
            "files_agents": [],
            "group_ids": [],
        }
    ],
    "groups": [],
    "blocks": [
        {
            "id": "block-0",
            "label": "human",
            "value": "First name: Chad",
            "limit": 20000,
            "description": "The human block",
            "metadata": {},
            "read_only": False,
        },
        {
            "id": "block-1",
            "label": "persona",
            "value": "I am Sam.",
            "limit": 20000,
            "description": "The persona block",
            "metadata": {},
            "read_only": False,
        },
    ],
    "files": [
        {
            "id": "file-0",
            "source_id": "source-0",
            "file_name": "notes.txt",
            "file_type": "text/plain",
            "content": "His favourite restaurant is in Berkeley.",
            "file_creation_date": "2025-10-29T09:00:00+00:00",
        }
    ],
    "sources": [{"id": "source-0", "name": "notes"}],
    "tools": [{"id": "tool-0", "name": "core_memory_append"}],
    "mcp_servers": [],
    "metadata": {"revision_id": "r1"},
    "created_at": "2025-11-01T00:00:00+00:00",
}


def test_agent_file_arrives_whole_and_once(tmp_path: Path, target: str) -> None:
    source = tmp_path / "sam.af"
    source.write_text(json.dumps(AGENT_FILE))
    args = ("import-from", "letta", "--source", str(source), "--url", target, "--user", "chad")
    first = run(*args)
    assert first.exit_code == 0, first.output
    assert "added 10 new items (core_fact: 2, document: 2, entry: 5, thread: 1)" in first.output
    assert "not imported: 1 messages of other roles" in first.output
    assert "not imported: 1 tools" in first.output
    assert "added 0 new items" in run(*args).output
    with Memory(target) as memory:
        thread = memory.threads.list(user_id="chad")[0]
        assert (thread.id, thread.user_id, thread.agent_id) == ("letta:sam", "chad", "sam")
        assert thread.metadata["system"] == "You are Sam."
        entries = memory.entries.list(thread.id, user_id="chad")
        kept = MESSAGES[:5]
        assert [e.metadata["source"]["id"] for e in entries] == [m["id"] for m in kept]
        assert [e.role for e in entries] == [m["role"] for m in kept]
        assert [e.created_at for e in entries] == [
            as_utc(m["created_at"], thread.created_at) for m in kept
        ]
        assert [e.content for e in entries] == [
            "You are Sam.",
            "Hi, I am Chad.",
            "",
            "OK",
            "Nice to meet you, Chad.",
        ]
        assert [e.metadata["source"]["in_context"] for e in entries] == [
            True,
            False,
            False,
            False,
            True,
        ]
        assert entries[2].tool_calls[0].id == "call-1"
        assert entries[2].to_message()["content"][0]["reasoning"] == "save the name"
        assert entries[3].tool_call_id == "call-1"
        assert CoreFacts(memory=memory, user_id="chad").all() == {
            "human": "First name: Chad",
            "persona": "I am Sam.",
        }
        documents = {d.content: d for d in memory.documents.list(user_id="chad")}
        assert set(documents) == {
            "Chad sails on weekends",
            "His favourite restaurant is in Berkeley.",
        }
        passage = documents["Chad sails on weekends"]
        assert passage.metadata["source"]["id"] == "passage-0"
        assert passage.created_at == as_utc("2025-10-30T10:00:00+00:00", passage.created_at)


def test_the_earlier_single_agent_form(tmp_path: Path, target: str) -> None:
    source = tmp_path / "old.af"
    old = {
        "name": "eve",
        "core_memory": [{"label": "human", "value": "Bob"}],
        "messages": MESSAGES[1:2],
        "in_context_message_indices": [0],
    }
    source.write_text(json.dumps(old))
    result = run("import-from", "letta", "--source", str(source), "--url", target)
    assert result.exit_code == 0, result.output
    assert "added 3 new items (core_fact: 1, entry: 1, thread: 1)" in result.output
    with Memory(target) as memory:
        [entry] = memory.entries.list("letta:eve", user_id=None)
        assert (entry.content, entry.metadata["source"]["in_context"]) == ("Hi, I am Chad.", True)


def test_a_file_that_is_not_an_agent_file_writes_nothing(tmp_path: Path, target: str) -> None:
    source = tmp_path / "bad.af"
    source.write_text(
        json.dumps(
            {
                "agents": [
                    {
                        "name": "x",
                        "messages": [
                            {
                                "role": "user",
                                "content": "\u0000",
                                "id": "m",
                                "created_at": "2025-01-01T00:00:00Z",
                            }
                        ],
                    }
                ]
            }
        )
    )
    result = run("import-from", "letta", "--source", str(source), "--url", target)
    assert result.exit_code == 1, result.output
    assert "error [invalid_input]" in result.output
    source.write_text("[1, 2]")
    assert run("import-from", "letta", "--source", str(source), "--url", target).exit_code == 1
    with Memory(target) as memory:
        assert memory.threads.list() == []
