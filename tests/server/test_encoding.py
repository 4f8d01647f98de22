"""The hot routes' own JSON encoding says exactly what FastAPI's model path says."""

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
    optional={"name": text, "tool_calls": calls, "tool_call_id": text, "extra": json_leaf},
)
# What the library may also hand back: parts as content, a Responses item.
odd = st.fixed_dictionaries(
    {"role": text, "content": st.lists(st.fixed_dictionaries({"type": text}), max_size=2)}
) | st.fixed_dictionaries({"type": text, "id": text})


def _reference(messages: list[dict[str, Any]]) -> Any:
    """FastAPI's path: the model, only the fields that are set."""
    return json.loads(_MODEL.dump_json(_MODEL.validate_python(messages), exclude_unset=True))


@settings(max_examples=200, deadline=None)
@given(st.lists(plain, max_size=5))
def test_plain_messages_encode_as_the_model_does(messages: list[dict[str, Any]]) -> None:
    assert json.loads(messages_json(messages)) == _reference(messages)


@settings(max_examples=50, deadline=None)
@given(st.lists(plain, max_size=3), odd)
def test_other_shapes_go_through_the_model(messages: list[dict[str, Any]], other: Any) -> None:
    mixed = [*messages, other]
    try:
        expected = _reference(mixed)
    except ValueError as error:  # the model refuses it: so does the route
        try:
            messages_json(mixed)
        except ValueError as raised:
            assert type(raised) is type(error)
        else:
            raise AssertionError("encoded what the model refuses") from None
    else:
        assert json.loads(messages_json(mixed)) == expected


async def test_the_route_returns_the_history_as_messages(api: Api) -> None:
    headers = await api.key("acme")
    url = "/cortex/agents/atlas/memory"
    tool_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]
    saved = await api.client.post(url, json={"messages": messages}, headers=headers)
    assert saved.status_code == 204
    got = await api.client.get(url, params={"limit": 2}, headers=headers)
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    assert got.json() == messages[1:]
    assert (await api.client.get("/cortex/agents/nobody/memory", headers=headers)).json() == []
