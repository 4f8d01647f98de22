"""The bases of the generated request and response bodies
(``memorybank.server.models_generated``, ``memorybank.server.responses_generated``), and
the one body part no signature describes: a message as ``entries.add`` takes it.

A body's fields are its verb's arguments; ``Arguments.arguments`` passes on only those
the client sent, so a field left out takes the library's own default (``UNSET`` where
the library reads it from the caller's handle: ``agent_id``, ``user_id``) and a field
sent as ``null`` is the library's ``None``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from memorybank.records import ROLES
from memorybank.rules import validate as v
from memorybank.stores.contract.types import UNSET

__all__ = ["MESSAGE_FIELDS", "Arguments", "ErrorText", "MessageIn", "Read", "Timestamp", "unset"]


def unset() -> Any:
    """The default of a field the library defaults to ``UNSET`` (no default in the schema)."""
    return UNSET


def _date_time_text(value: Any) -> Any:
    """Refuse a number where a date-time string belongs (pydantic would read ``0`` as
    1970-01-01: the schema says ``format: date-time``, a string)."""
    if isinstance(value, int | float):
        raise ValueError("must be a date-time string (RFC 3339, with its offset), not a number")
    return value


#: A ``datetime`` field of a body: an RFC 3339 string (or ``null`` where allowed), as the
#: schema says; never a number of seconds.
Timestamp = Annotated[datetime, BeforeValidator(_date_time_text)]


class Arguments(BaseModel):
    """A request body whose fields are a library verb's arguments, under its names."""

    model_config = ConfigDict(extra="forbid")

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments for the verb: the fields the client sent (nested
        bodies as dicts), so every other one takes the library's default."""
        return self.model_dump(exclude_unset=True)


class Read(BaseModel):
    """A response body: a library record's fields, read from it by attribute."""

    model_config = ConfigDict(from_attributes=True)


def _error_text(value: Any) -> Any:
    """A part of a context that failed (``memorybank.context.ContextError``) as its text."""
    if isinstance(value, str):
        return value
    return f"{value.source}: {value.error}"


#: A ``ContextError`` as a response states it: ``"<source>: <error>"``.
ErrorText = Annotated[str, BeforeValidator(_error_text)]


#: The message fields the library stores in columns (``rules.validate``'s own list).
MESSAGE_FIELDS: tuple[str, ...] = tuple(sorted(v.MESSAGE_KEYS))
_ROLES: list[str] = sorted(ROLES)


#: The message rules the schema states (``rules.validate.as_message``): a chat message
#: (no ``type``: any ``type`` makes a message a Responses item) has a role; a tool
#: message answers a call (``tool_call_id``); only an assistant carries ``tool_calls``
#: and may leave out ``content`` (for tool calls, a refusal, audio or a function call);
#: only a tool message carries ``tool_call_id``. A Responses item has a non-empty string
#: ``type``. What the schema cannot state (a tool result answers an earlier call of the
#: branch; the size of the text, a server setting) is in the descriptions.
_NOT_ITEM: dict[str, Any] = {"not": {"required": ["type"]}}
_NULL: dict[str, Any] = {"type": "null"}


def _given(name: str) -> dict[str, Any]:
    """``name`` is present and not ``null``."""
    return {"required": [name], "properties": {name: {"not": _NULL}}}


_NO_CALLS: dict[str, Any] = {
    "properties": {
        "tool_calls": {"anyOf": [_NULL, {"type": "array", "maxItems": 0}]},
        "tool_call_id": _NULL,
    }
}
_MESSAGE_SHAPES: list[Any] = [
    {  # a system, developer or user message: content, no tool fields
        **_NOT_ITEM,
        "required": ["role", "content"],
        "properties": {"role": {"enum": sorted(ROLES - {"assistant", "tool"})}},
        "allOf": [_given("content"), _NO_CALLS],
    },
    {  # a tool result: content and the id of the call it answers
        **_NOT_ITEM,
        "required": ["role", "content", "tool_call_id"],
        "properties": {"role": {"const": "tool"}},
        "allOf": [
            _given("content"),
            _given("tool_call_id"),
            {"properties": {"tool_calls": _NO_CALLS["properties"]["tool_calls"]}},
        ],
    },
    {  # an assistant: content, or tool calls, a refusal, audio or a function call
        **_NOT_ITEM,
        "required": ["role"],
        "properties": {"role": {"const": "assistant"}, "tool_call_id": _NULL},
        "anyOf": [
            _given("content"),
            {
                "required": ["tool_calls"],
                "properties": {"tool_calls": {"type": "array", "minItems": 1}},
            },
            _given("refusal"),
            _given("audio"),
            _given("function_call"),
        ],
    },
    {"required": ["type"], "properties": {"type": {"type": "string", "minLength": 1}}},
]

#: Text without a NUL (``rules.validate.check_text``), as a schema pattern.
NO_NUL = "^[^\\u0000]*$"
#: A content part: an object with a string ``type``; a text-like part (``TEXT_PART_TYPES``)
#: has a string ``text`` (a ``refusal`` part may give ``refusal`` instead).
_CONTENT_PART: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "anyOf": [
        {"properties": {"type": {"not": {"enum": sorted(v.TEXT_PART_TYPES)}}}},
        {"required": ["text"], "properties": {"text": {"type": "string", "pattern": NO_NUL}}},
        {
            "not": {"required": ["text"]},
            "required": ["refusal"],
            "properties": {"refusal": {"type": "string", "pattern": NO_NUL}},
        },
    ],
}
#: A tool call, the chat shape: an id and a function with a non-empty name and its
#: arguments (a JSON string, or an object the library serialises).
_TOOL_CALL: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "required": ["id", "function"],
    "properties": {
        "id": {"$ref": "#/components/schemas/Id"},
        "type": {"type": "string"},
        "function": {
            "type": "object",
            "additionalProperties": True,
            "required": ["name"],
            "properties": {
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": v.MAX_LABEL_CHARS,
                    "pattern": NO_NUL,
                },
                "arguments": {
                    "anyOf": [
                        {"type": "string", "pattern": NO_NUL},
                        {"type": "object", "additionalProperties": True},
                    ]
                },
            },
        },
    },
}


def _items(item: dict[str, Any]) -> Any:
    """A ``json_schema_extra`` that states the items of a ``list[...] | None`` field."""

    def state(schema: dict[str, Any]) -> None:
        for option in schema.get("anyOf", []):
            if option.get("type") == "array":
                option["items"] = item

    return state


#: A legacy ``function_call``: a name and its arguments, both strings (``tokens`` counts them).
_FUNCTION_CALL: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": NO_NUL},
        "arguments": {"type": "string", "pattern": NO_NUL},
    },
}


def _object(shape: dict[str, Any]) -> Any:
    """A ``json_schema_extra`` that states the object of a ``dict[...] | None`` field."""

    def state(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [
            shape if option.get("type") == "object" else option for option in schema["anyOf"]
        ]

    return state


def _label(schema: dict[str, Any]) -> None:
    """A message's ``name``: 1 to ``MAX_LABEL_CHARS`` characters (``as_message``)."""
    for option in schema.get("anyOf", []):
        if option.get("type") == "string":
            option.update(minLength=1, maxLength=v.MAX_LABEL_CHARS)


class MessageIn(BaseModel):
    """A message exactly as the library's ``entries.add`` takes it.

    Either a chat message (``role`` and ``content``; ``content`` a string or a
    list of content parts, objects with a string ``type``) whose other provider
    fields (``refusal``, ``annotations``, ``audio``, ``function_call``, ...) are
    kept verbatim, or a Responses API item (an object with a ``type``:
    ``message``, ``function_call``, ``function_call_output``, ``reasoning``,
    ...) kept whole. ``tool_calls`` take the chat shape ``{"id", "type":
    "function", "function": {"name", "arguments"}}``. The library checks the
    message (roles, pairing, sizes): its ``InvalidInput`` is the 422 answer,
    ``field`` naming the message field.
    """

    # The schema says what the library requires: a chat message has a role and content
    # (an assistant's may carry tool calls, a refusal, audio or a function call instead),
    # a Responses item a type.
    model_config = ConfigDict(extra="allow", json_schema_extra={"anyOf": _MESSAGE_SHAPES})
    role: str | None = Field(
        default=None,
        description=f"One of {', '.join(_ROLES)} (a Responses item may leave it out).",
        json_schema_extra={"enum": [*_ROLES, None]},
    )
    type: str | None = Field(
        default=None, description="A Responses API item's type (a chat message has none)."
    )
    content: str | list[dict[str, Any]] | None = Field(
        default=None,
        description="The text, or a list of content parts (kept verbatim): objects with a"
        " string `type`, a text part's `text` a string. The text holds at most the server's"
        " `max_content_chars` characters (a setting: a longer one is a 422).",
        json_schema_extra=_items(_CONTENT_PART),
    )
    name: str | None = Field(default=None, json_schema_extra=_label)
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None,
        description="An assistant's tool calls (the chat shape).",
        json_schema_extra=_items(_TOOL_CALL),
    )
    tool_call_id: str | None = Field(
        default=None,
        description="A tool message's: the id of the call it answers, an earlier assistant"
        " message's tool call on the same branch (checked when the entry is added: the"
        " schema cannot say what the branch holds).",
    )
    function_call: dict[str, Any] | None = Field(
        default=None,
        description='An assistant\'s legacy function call: `{"name", "arguments"}`, both'
        " strings (kept verbatim).",
        json_schema_extra=_object(_FUNCTION_CALL),
    )
    metadata: dict[str, Any] | None = None
    state: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The dict the library's ``entries.add`` takes: the fields as the client sent
        them (one sent as ``null`` stays, as the library keeps it)."""
        return self.model_dump(exclude_unset=True)
