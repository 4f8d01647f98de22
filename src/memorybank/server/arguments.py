"""The base of the generated request bodies (``memorybank.server.models_generated``),
and the one body part no signature describes: a message as ``entries.add`` takes it.

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

__all__ = ["MESSAGE_FIELDS", "Arguments", "MessageIn", "Timestamp", "unset"]


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


#: The message fields the library stores in columns (``rules.validate``'s own list).
MESSAGE_FIELDS: tuple[str, ...] = tuple(sorted(v.MESSAGE_KEYS))
_ROLES: list[str] = sorted(ROLES)


#: A chat message (no ``type``: any ``type`` makes a message a Responses item), or an
#: item with a non-empty string ``type``. The rules across fields (a tool message's
#: ``tool_call_id`` answers an earlier call, content parts, tool-call shapes) are
#: ``rules.validate``'s, stated in the descriptions.
_CHAT: dict[str, Any] = {"properties": {"role": {"type": "string"}}, "not": {"required": ["type"]}}
_MESSAGE_SHAPES: list[Any] = [
    *(
        {"required": ["role", name], **_CHAT}
        for name in ("content", "tool_calls", "refusal", "audio", "function_call")
    ),
    {"required": ["type"], "properties": {"type": {"type": "string", "minLength": 1}}},
]


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
        default=None, description="The text, or a list of content parts (kept verbatim)."
    )
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = None
    state: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The dict the library's ``entries.add`` takes: the fields as the client sent
        them (one sent as ``null`` stays, as the library keeps it)."""
        return self.model_dump(exclude_unset=True)
