"""Input validation, once, above every store. Pure functions; no I/O.

Every check raises ``InvalidInput`` naming the offending field, before anything
is written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from memorybank.errors import InvalidInput
from memorybank.records import ROLES, Message, ToolCall

__all__ = [
    "MAX_ID_LENGTH",
    "as_message",
    "check_id",
    "check_json_object",
    "check_limit",
    "check_time",
    "dump_json",
]

MAX_ID_LENGTH = 255
_MESSAGE_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "metadata", "state"}


def check_id(value: object, field: str) -> str:
    """An id: a non-empty string of at most 255 printable characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"{field} must be 1 to {MAX_ID_LENGTH} characters", field=field)
    if not value.isprintable():
        raise InvalidInput(f"{field} must not contain control characters", field=field)
    return value


def check_optional_id(value: object, field: str) -> str | None:
    return None if value is None else check_id(value, field)


def check_limit(value: object, field: str, *, allow_none: bool = True) -> int | None:
    """A non-negative int (``bool`` is not an int here)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer, got {type(value).__name__}", field=field)
    if value < 0:
        raise InvalidInput(f"{field} must be >= 0, got {value}", field=field)
    return value


def check_time(value: object, field: str) -> datetime:
    """A timezone-aware datetime, returned in UTC."""
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a datetime, got {type(value).__name__}", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} must be timezone-aware", field=field)
    return value.astimezone(UTC)


def _check_json_value(value: object, field: str, depth: int = 0) -> None:
    if depth > 64:
        raise InvalidInput(f"{field} is nested too deeply", field=field)
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{field} contains a non-finite number", field=field)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{field} has a non-string key {key!r}", field=field)
            _check_json_value(item, field, depth + 1)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_json_value(item, field, depth + 1)
        return
    raise InvalidInput(
        f"{field} must be JSON-serialisable; found {type(value).__name__}", field=field
    )


def check_json_object(value: object, field: str) -> dict[str, Any]:
    """A JSON object (dict with str keys, JSON values); returned as a deep plain copy."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field} must be a JSON object (dict)", field=field)
    _check_json_value(value, field)
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied


def dump_json(value: object, field: str) -> str:
    """Any JSON value as compact text (for working memory and snapshots)."""
    _check_json_value(value, field)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _as_tool_call(value: object, index: int) -> ToolCall:
    field = f"tool_calls[{index}]"
    if isinstance(value, ToolCall):
        call = value
    elif isinstance(value, Mapping):
        function = value.get("function", value)
        if not isinstance(function, Mapping):
            raise InvalidInput(f"{field}.function must be an object", field="tool_calls")
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, Mapping):
            arguments = json.dumps(arguments)
        call = ToolCall(id=value.get("id"), name=function.get("name"), arguments=arguments)  # type: ignore[arg-type]
    else:
        raise InvalidInput(f"{field} must be a ToolCall or a dict", field="tool_calls")
    check_id(call.id, f"{field}.id")
    if not isinstance(call.name, str) or not call.name:
        raise InvalidInput(f"{field} needs a function name", field="tool_calls")
    if not isinstance(call.arguments, str):
        raise InvalidInput(f"{field}.arguments must be a JSON string", field="tool_calls")
    return call


def as_message(value: object, *, max_content_chars: int) -> Message:
    """Validate a ``Message`` or provider-shaped dict and return a clean ``Message``."""
    if isinstance(value, Message):
        raw: Mapping[str, Any] = {
            "role": value.role,
            "content": value.content,
            "name": value.name,
            "tool_calls": value.tool_calls,
            "tool_call_id": value.tool_call_id,
            "metadata": value.metadata,
            "state": value.state,
        }
    elif isinstance(value, Mapping):
        raw = value
        unknown = sorted(k for k, v in raw.items() if k not in _MESSAGE_KEYS and v is not None)
        if unknown:
            raise InvalidInput(
                f"unknown message field(s): {', '.join(map(str, unknown))}", field=str(unknown[0])
            )
    else:
        raise InvalidInput("message must be a memorybank.Message or a dict", field="message")

    role = raw.get("role")
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {sorted(ROLES)}, got {role!r}", field="role")
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        raise InvalidInput("content must be a string", field="content")
    if content is not None and len(content) > max_content_chars:
        raise InvalidInput(
            f"content has {len(content)} characters; the limit is {max_content_chars}",
            field="content",
        )
    raw_calls = raw.get("tool_calls") or ()
    if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, str | bytes):
        raise InvalidInput("tool_calls must be a list", field="tool_calls")
    calls = tuple(_as_tool_call(c, i) for i, c in enumerate(raw_calls))
    if calls and role != "assistant":
        raise InvalidInput("only assistant messages can carry tool_calls", field="tool_calls")
    if content is None and not calls:
        raise InvalidInput(
            "content is required (only an assistant message with tool_calls may omit it)",
            field="content",
        )
    tool_call_id = check_optional_id(raw.get("tool_call_id"), "tool_call_id")
    if role == "tool" and tool_call_id is None:
        raise InvalidInput("a tool message needs tool_call_id", field="tool_call_id")
    if role != "tool" and tool_call_id is not None:
        raise InvalidInput("only tool messages carry tool_call_id", field="tool_call_id")
    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise InvalidInput("name must be a non-empty string", field="name")
    return Message(
        role=role,
        content=content,
        name=name,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        metadata=check_json_object(raw.get("metadata"), "metadata"),
        state=check_json_object(raw.get("state"), "state"),
    )
