"""The history routes answer the library's messages unchanged, byte for byte of JSON."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from memorybank.server.models import MessageOut
from memorybank.server.routes.cortex import messages_json
from tests.server.conftest import Api

_MODEL = TypeAdapter(list[MessageOut])

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
calls = st.lists(st.dictionaries(text, json_leaf, max_size=3), max_size=2)
plain = st.fixed_dictionaries(
    {"role": text, "content": st.none() | text},
    optional={"name": text, "tool_calls": calls, "tool_call_id": text, "refusal": json_leaf},
)
# What the library may also hand back: parts as content, a Responses item.
odd = st.fixed_dictionaries(
    {"role": text, "content": st.lists(st.fixed_dictionaries({"type": text}), max_size=2)}
) | st.fixed_dictionaries({"type": text, "id": text})


@settings(max_examples=200, deadline=None)
@given(st.lists(plain | odd, max_size=5))
def test_messages_encode_unchanged_and_fit_the_documented_model(
    messages: list[dict[str, Any]],
) -> None:
    assert json.loads(messages_json(messages)) == messages
    # The documented response model takes every one of them and drops nothing.
    dumped = _MODEL.dump_json(_MODEL.validate_python(messages), exclude_unset=True)
    assert json.loads(dumped) == messages


async def test_the_route_returns_the_history_as_messages(api: Api) -> None:
    headers = await api.key("acme")
    url = "/cortex/agents/atlas/memory"
    tool_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
        {"role": "assistant", "content": None, "refusal": "no"},
    ]
    saved = await api.client.post(url, json={"messages": messages}, headers=headers)
    assert saved.status_code == 204
    got = await api.client.get(url, params={"limit": 3}, headers=headers)
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    assert got.json() == messages[1:]
    assert (await api.client.get("/cortex/agents/nobody/memory", headers=headers)).json() == []
