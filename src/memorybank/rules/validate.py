"""Input validation, once, above every store. Pure functions; no I/O.

Every check raises ``InvalidInput`` naming the offending field, before anything
is written. What passes is what *every* store can hold and return exactly, so
the five stores accept the same inputs (docs/concepts.md, "Input rules"):

* text (content, names, titles, JSON strings and keys, ...) is valid Unicode
  without NUL: no lone surrogate (it has no UTF-8 form) and no U+0000
  (PostgreSQL cannot store it);
* ids are 1 to ``MAX_ID_LENGTH`` printable characters;
* counts, limits, offsets, token counts, ``k`` and ``last`` are integers from 0
  to ``MAX_COUNT`` (a 32-bit ``INTEGER`` column holds them on every store);
* datetimes are timezone-aware, from ``MIN_TIME`` to ``MAX_TIME`` in UTC (the
  range of MySQL ``DATETIME(6)`` and of Python's ``datetime`` after converting
  to UTC);
* JSON values are ``None``, ``bool``, ``str``, 64-bit ``int``, finite ``float``,
  lists (or tuples, returned as lists) and dicts with ``str`` keys, nested at
  most ``MAX_JSON_DEPTH`` deep; numbers come back exactly (``1e16`` stays a
  float, ``-0.0`` keeps its sign);
* vectors are non-empty lists of finite numbers within the ``float32`` range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from numbers import Real
from typing import Any, Literal, cast, overload

from memorybank.errors import InvalidInput
from memorybank.records import ROLES, Message, Role, ToolCall

__all__ = [
    "FLOAT32_MAX",
    "MAX_COUNT",
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_LABEL_CHARS",
    "MAX_PAYLOAD_CHARS",
    "MAX_REPORTED_PROBLEMS",
    "MAX_TIME",
    "MESSAGE_KEYS",
    "MIN_TIME",
    "RESERVED_PREFIX",
    "TEXT_PART_TYPES",
    "as_message",
    "check_bool",
    "check_id",
    "check_json_object",
    "check_limit",
    "check_tenant",
    "check_text",
    "check_time",
    "check_unit",
    "check_vector",
    "dump_json",
    "schema_problems",
]

#: Longest id (characters): thread, user, agent, tenant, key, run ids, ...
MAX_ID_LENGTH = 255
#: Tenant names starting with this are the server's own (its API keys live in one):
#: ``check_tenant`` refuses them, so no library write, import or HTTP caller reaches one.
RESERVED_PREFIX = "~"
#: Largest count, limit, offset or token count (``2**31 - 1``).
MAX_COUNT = 2**31 - 1
#: Longest short label: a thread title, a message or tool name, a fact's category.
MAX_LABEL_CHARS = 1000
#: Deepest nesting of a JSON value.
MAX_JSON_DEPTH = 64
#: Earliest and latest datetime accepted (UTC).
MIN_TIME = datetime(1000, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
#: Largest magnitude of a vector component (stores keep float32).
FLOAT32_MAX = 3.4028234663852886e38
_INT64 = (-(2**63), 2**63 - 1)
#: The keys of a chat message the library keeps in columns (every other key goes to ``extra``).
MESSAGE_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "metadata", "state"}
)
#: Column keys whose empty value (``None``, ``[]``) is kept in ``extra`` as given.
_EMPTY_KEPT = frozenset({"name", "tool_calls", "tool_call_id"})


def _text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored everywhere, or ``None``.

    Encoding is the fastest full scan CPython offers (a regex is 5x slower on
    non-ASCII text); ``isascii`` is O(1), and an ASCII string holds no surrogate.
    """
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            char = value[error.start]
            return (
                f"contains a lone surrogate (U+{ord(char):04X}, not valid Unicode)"
                f" at index {error.start}"
            )
    index = value.find("\x00")
    if index >= 0:
        return f"contains a NUL character (U+0000) at index {index}"
    return None


def check_text(
    value: object,
    field: str,
    *,
    max_chars: int | None = None,
    allow_empty: bool = True,
) -> str:
    """A string every store can hold: no NUL, no lone surrogate, at most ``max_chars``.

    ``allow_empty=False`` also refuses ``""``.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not allow_empty and not value:
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInput(
            f"{field} has {len(value)} characters; the limit is {max_chars}", field=field
        )
    problem = _text_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field} {problem}", field=field)
    return value


def check_id(value: object, field: str) -> str:
    """An id: a non-empty string of at most ``MAX_ID_LENGTH`` printable characters.

    Printable (``str.isprintable``) excludes NUL and every other control character,
    format characters (zero-width joiners, ...), lone surrogates, private-use and
    unassigned code points, and every space but ``" "`` (a no-break space, ...). Any
    other character is kept exactly: ``"zo\\u00eb"`` (one code point for the ë) and
    ``"zoe\\u0308"`` (``e`` and a combining diaeresis) are two ids, as are ``"zoe"`` and
    ``"\\uff5a\\uff4f\\uff45"``
    (full-width): an id is never normalised.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"{field} must be 1 to {MAX_ID_LENGTH} characters", field=field)
    if not value.isprintable():
        raise InvalidInput(_unprintable(value, field), field=field)
    return value


#: What each Unicode category ``str.isprintable`` refuses is, in an error message.
_UNPRINTABLE = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a lone surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zs": "a space other than the plain space ' '",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def _unprintable(value: str, field: str) -> str:
    """The message of an id holding a character ``check_id`` refuses: which one, and where."""
    import unicodedata  # on the error path only (cold start)

    index, char = next((i, c) for i, c in enumerate(value) if not c.isprintable())
    category = unicodedata.category(char)
    name = unicodedata.name(char, "")
    what = _UNPRINTABLE.get(category, "a character that is not printable")
    shown = f"U+{ord(char):04X}" + (f" {name}" if name else "")
    return (
        f"{field} must be printable characters: {shown} at index {index} is {what}"
        " (ids compare exactly and are never normalised)"
    )


def check_tenant(value: object, field: str = "tenant") -> str:
    """A tenant a caller may use: an id not starting with ``RESERVED_PREFIX``.

    Every write path checks its tenant with this (``Memory(tenant_id=)``,
    ``memory.tenant()``, ``memorybank import``/``migrate``, the server's tenant
    headers and key tenants). The one writer of a reserved tenant is the server's
    key manager (``memorybank.server.keys.KeyRing``), which names
    ``RESERVED_TENANT`` itself and writes through the store, under this check.
    """
    name = check_id(value, field)
    if name.startswith(RESERVED_PREFIX):
        raise InvalidInput(
            f"{field} must not start with {RESERVED_PREFIX!r} (reserved for the server),"
            f" got {name!r}",
            field=field,
        )
    return name


def check_optional_id(value: object, field: str) -> str | None:
    return None if value is None else check_id(value, field)


def check_bool(value: object, field: str) -> bool:
    """``value``, or ``InvalidInput`` when it is not ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false", field=field)
    return value


@overload
def check_limit(value: object, field: str, *, allow_none: Literal[False]) -> int: ...
@overload
def check_limit(value: object, field: str, *, allow_none: bool = True) -> int | None: ...
def check_limit(value: object, field: str, *, allow_none: bool = True) -> int | None:
    """An int from 0 to ``MAX_COUNT`` (``bool`` is not an int here)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer, got {type(value).__name__}", field=field)
    if not 0 <= value <= MAX_COUNT:
        raise InvalidInput(f"{field} must be from 0 to {MAX_COUNT}, got {value}", field=field)
    return int(value)


def check_unit(value: object, field: str) -> float:
    """A number from 0 to 1 (a confidence), compared as given: a huge int never reaches
    ``float()``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number", field=field)
    if not 0 <= value <= 1:
        raise InvalidInput(f"{field} must be between 0 and 1", field=field)
    return float(value)


def check_time(value: object, field: str) -> datetime:
    """A timezone-aware datetime from ``MIN_TIME`` to ``MAX_TIME``, returned in UTC."""
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a datetime, got {type(value).__name__}", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} must be timezone-aware", field=field)
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # year 1 east of UTC, or 9999-12-31 west of it
        utc = None
    if utc is None or not MIN_TIME <= utc <= MAX_TIME:
        raise InvalidInput(
            f"{field} must be from {MIN_TIME.isoformat()} to {MAX_TIME.isoformat()},"
            f" got {value.isoformat()}",
            field=field,
        )
    return utc


def _plain(value: object, field: str, depth: int) -> Any:
    """A deep copy of a JSON value in plain types (dict, list, str, int, float, bool, None)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem is not None:
            raise InvalidInput(f"{field}: a string {problem}", field=field)
        return str(value)
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidInput(
                f"{field} holds an integer outside the 64-bit range"
                f" ({len(str(abs(value))) if value.bit_length() < 10_000 else 'many'} digits)",
                field=field,
            )
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{field} contains a non-finite number ({value})", field=field)
        return float(value)
    if depth >= MAX_JSON_DEPTH:
        raise InvalidInput(f"{field} is nested more than {MAX_JSON_DEPTH} levels deep", field=field)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{field} has a non-string key {key!r}", field=field)
            problem = _text_problem(key)
            if problem is not None:
                raise InvalidInput(f"{field}: a key {problem}", field=field)
            out[str(key)] = _plain(item, field, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_plain(item, field, depth + 1) for item in value]
    raise InvalidInput(
        f"{field} must be JSON-serialisable; found {type(value).__name__}", field=field
    )


def check_json_object(value: object, field: str) -> dict[str, Any]:
    """A JSON object (dict with str keys, JSON values); returned as a deep plain copy."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field} must be a JSON object (dict)", field=field)
    copied: dict[str, Any] = _plain(value, field, 0)
    return copied


def _json_dumps(value: Any, **options: Any) -> str:
    import json  # on first use: reading history does not need it (cold start)

    return json.dumps(value, **options)


def dump_json(value: object, field: str) -> str:
    """Any JSON value as compact text (for working memory, snapshots, tool-call arguments)."""
    return _json_dumps(_plain(value, field, 0), separators=(",", ":"), ensure_ascii=False)


def check_vector(
    value: object, field: str, *, dimensions: int | None = None, allow_zero: bool = True
) -> list[float]:
    """A vector every store keeps as float32, scaled to unit length (in float64).

    Refuses anything but a flat, non-empty sequence of real numbers (``bool``
    and strings are not numbers here), non-finite values, values beyond
    ``FLOAT32_MAX`` (float32 would turn them into infinities, then NaN scores),
    a length other than ``dimensions``, and (unless ``allow_zero``) the zero
    vector, which has no direction; an allowed zero vector comes back as zeros
    (it scores with no query).
    """
    import numpy as np  # loaded on first use: a history-only script never pays for it

    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "fiu":
        array = value.astype(np.float64)
    elif type(value) is list and all(type(x) is float for x in value):
        array = np.array(value, dtype=np.float64)  # the common case, checked in one pass
    else:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
            raise InvalidInput(f"{field} must be a list of numbers", field=field)
        numbers: list[float] = []
        for x in value:
            if isinstance(x, bool | np.bool_) or not isinstance(x, Real):
                raise InvalidInput(
                    f"{field} must hold numbers only, found {type(x).__name__}", field=field
                )
            try:
                numbers.append(float(x))
            except OverflowError:  # an int beyond any float
                numbers.append(math.inf)
        array = np.array(numbers, dtype=np.float64)
    if array.size == 0:
        raise InvalidInput(f"{field} must not be empty", field=field)
    if dimensions is not None and array.size != dimensions:
        raise InvalidInput(
            f"{field} has {array.size} dimensions, the embedder makes {dimensions}", field=field
        )
    largest = float(np.abs(array).max())
    if not math.isfinite(largest) or largest > FLOAT32_MAX:
        raise InvalidInput(
            f"{field} must hold finite numbers within the float32 range (±{FLOAT32_MAX:.4e})",
            field=field,
        )
    if largest == 0.0:
        if not allow_zero:
            raise InvalidInput(f"{field} must not be all zeros", field=field)
        return [0.0] * int(array.size)
    array /= largest  # no overflow in the squares, no underflow of tiny vectors
    array /= float(np.sqrt(np.dot(array, array)))
    unit: list[float] = array.tolist()
    return unit


def _as_tool_call(value: object, index: int, max_chars: int) -> ToolCall:
    """One tool call; every problem is reported as ``field="tool_calls"``."""
    where = f"tool_calls[{index}]"
    if isinstance(value, ToolCall):
        call_id: object = value.id
        name: object = value.name
        arguments: object = value.arguments
    elif isinstance(value, Mapping):
        function = value.get("function", value)
        if not isinstance(function, Mapping):
            raise InvalidInput(f"{where}.function must be an object", field="tool_calls")
        call_id, name = value.get("id"), function.get("name")
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, Mapping):
            # the provider convention: json.dumps' default form of the plain copy
            arguments = _json_dumps(_plain(arguments, "tool_calls", 0))
    else:
        raise InvalidInput(f"{where} must be a ToolCall or a dict", field="tool_calls")
    try:
        check_id(call_id, f"{where}.id")
        check_text(name, f"{where}.name", max_chars=MAX_LABEL_CHARS, allow_empty=False)
        check_text(arguments, f"{where}.arguments", max_chars=max_chars)
    except InvalidInput as error:
        raise InvalidInput(str(error), field="tool_calls") from None
    return ToolCall(id=str(call_id), name=str(name), arguments=str(arguments))


#: Content part types whose ``text`` is the message's text (counted and indexed).
TEXT_PART_TYPES = frozenset(
    {"text", "input_text", "output_text", "refusal", "summary_text", "reasoning_text"}
)
#: Largest provider payload of one message (``extra`` or ``item``), in characters of
#: its compact JSON: room for a base64 image or audio clip, bounded for every store.
MAX_PAYLOAD_CHARS = 16 * 2**20


def _payload(value: object, field: str) -> dict[str, Any]:
    """A JSON object kept verbatim (``extra``, ``item``), bounded by ``MAX_PAYLOAD_CHARS``."""
    plain = check_json_object(value, field)
    size = len(_json_dumps(plain, separators=(",", ":"), ensure_ascii=False))
    if size > MAX_PAYLOAD_CHARS:
        raise InvalidInput(
            f"{field} has {size} characters of JSON; the limit is {MAX_PAYLOAD_CHARS}", field=field
        )
    return plain


def _parts_text(parts: object, field: str) -> str:
    """The text of a list of content parts: text-like parts joined by newlines.

    Every part is an object with a string ``type``; a part of any other type
    (``image_url``, ``input_audio``, ``file``, ``input_image``, types added
    later) is kept verbatim and contributes no text.
    """
    if not isinstance(parts, list):
        raise InvalidInput(f"{field} must be a string or a list of parts", field=field)
    texts: list[str] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise InvalidInput(
                f"{field}[{index}] must be an object with a string 'type'", field=field
            )
        if part["type"] in TEXT_PART_TYPES:
            text = part.get("text", part.get("refusal"))
            if not isinstance(text, str):
                raise InvalidInput(f"{field}[{index}] has no string 'text'", field=field)
            texts.append(text)
    return "\n".join(texts)


def _item_text(value: object, field: str) -> str:
    """The text of a Responses item's ``content``/``output``/``summary`` (a string or parts)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _parts_text(value, field)


def _from_item(raw: Mapping[str, Any], max_content_chars: int) -> Message:
    """A Responses API item: the raw item kept whole, the columns derived from it.

    * ``message`` (or an input message with a ``type``): its ``role``, the text
      of its content parts;
    * a ``*_call`` item with a ``call_id`` (``function_call``,
      ``custom_tool_call``, ``computer_call``, ``local_shell_call``, ...): an
      assistant entry with one tool call ``(call_id, name or type, arguments)``
      and no content;
    * a ``*_call_output`` item with a ``call_id``: a ``tool`` entry answering
      that call, its output text as content;
    * anything else (``reasoning``, ``web_search_call``, ``file_search_call``,
      ``image_generation_call``, ``mcp_list_tools``, ``compaction``, ...): an
      assistant entry whose content is its text (a reasoning summary), else ``""``.
    """
    item = _payload(raw, "item")
    kind = item.get("type")
    if not isinstance(kind, str) or not kind:
        raise InvalidInput("a Responses item needs a string 'type'", field="item")
    call_id = item.get("call_id")
    role: object = "assistant"
    content: str | None
    calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    if kind == "message":
        role = item.get("role")
        content = _item_text(item.get("content"), "content")
    elif kind.endswith("_call") and call_id is not None:
        name = item.get("name")
        arguments = item.get("arguments", item.get("input", "{}"))
        calls = (
            _as_tool_call(
                {
                    "id": call_id,
                    "name": name if isinstance(name, str) and name else kind,
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else dump_json(arguments, "item"),
                },
                0,
                max_content_chars,
            ),
        )
        content = None
    elif kind.endswith("_call_output") and call_id is not None:
        role = "tool"
        tool_call_id = check_id(call_id, "tool_call_id")
        output = item.get("output")
        content = (
            output
            if isinstance(output, str)
            else _item_text(output if isinstance(output, list) else None, "content")
        )
    else:
        summary = item.get("summary", item.get("content"))
        content = _item_text(summary if isinstance(summary, list | str) else None, "content")
    if not isinstance(role, str) or role not in ROLES or (role == "tool" and not tool_call_id):
        raise InvalidInput(f"role must be one of {sorted(ROLES)}, got {role!r}", field="role")
    if content is not None:
        content = check_text(content, "content", max_chars=max_content_chars)
    return Message(
        role=cast(Role, role),
        content=content,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        item=item,
    )


def as_message(value: object, *, max_content_chars: int) -> Message:
    """Validate a ``Message`` or provider-shaped dict and return a clean ``Message``.

    ``content`` (its text) and each tool call's ``arguments`` hold at most
    ``max_content_chars`` characters; ``name`` at most ``MAX_LABEL_CHARS``.

    Provider shapes are kept verbatim (docs/concepts.md, "Messages as providers
    shape them"): a dict with a ``"type"`` is a Responses API item (see
    ``_from_item``); a chat message's ``content`` may be a list of parts
    (objects with a string ``type``; unknown types are kept, only text-like
    parts give text), and fields beyond the columns (``refusal``,
    ``annotations``, ``audio``, ``function_call``, ...) go to ``extra``. Every
    string inside, keys included, follows the text rules (no NUL, no lone
    surrogate); the payload's JSON is at most ``MAX_PAYLOAD_CHARS``.
    """
    extra: dict[str, Any] = {}
    if isinstance(value, Message):
        if value.item is not None:
            return _from_item(value.item, max_content_chars)
        raw: Mapping[str, Any] = {
            "role": value.role,
            "content": value.content,
            "name": value.name,
            "tool_calls": value.tool_calls,
            "tool_call_id": value.tool_call_id,
            "metadata": value.metadata,
            "state": value.state,
        }
        extra = _payload(value.extra, "extra")
    elif type(value) is dict or isinstance(value, Mapping):  # a dict skips the ABC check
        if "type" in value:
            return _from_item(value, max_content_chars)
        raw = value
        # Everything beyond the columns, and a column key given empty (``"tool_calls":
        # None`` from an SDK's ``model_dump()``), is kept so ``to_message()`` gives it back.
        beyond = {
            k: x
            for k, x in raw.items()
            if k not in MESSAGE_KEYS or (k in _EMPTY_KEPT and (x is None or x == []))
        }
        extra = _payload(beyond, "extra") if beyond else {}
    else:
        raise InvalidInput("message must be a memorybank.Message or a dict", field="message")

    role = raw.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidInput(f"role must be one of {sorted(ROLES)}, got {role!r}", field="role")
    content = raw.get("content")
    if isinstance(content, list):
        parts = _payload({"content": content}, "content")["content"]
        extra["content"] = parts
        content = _parts_text(parts, "content")
    elif "content" in extra:
        # ``extra`` set by hand cannot smuggle in a second content
        raise InvalidInput("extra must not hold 'content'", field="extra")
    if content is not None:
        content = check_text(content, "content", max_chars=max_content_chars)
    raw_calls = raw.get("tool_calls")
    calls: tuple[ToolCall, ...] = ()
    if raw_calls is not None:
        if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, str | bytes):
            raise InvalidInput("tool_calls must be a list", field="tool_calls")
        calls = tuple(_as_tool_call(c, i, max_content_chars) for i, c in enumerate(raw_calls))
    if calls and role != "assistant":
        raise InvalidInput("only assistant messages can carry tool_calls", field="tool_calls")
    # An assistant may answer with no text: tool calls, a refusal, audio, a legacy
    # function_call (what the OpenAI SDK returns in those cases).
    if content is None and not (
        role == "assistant"
        and (calls or any(x is not None for k, x in extra.items() if k not in _EMPTY_KEPT))
    ):
        raise InvalidInput(
            "content is required (only an assistant message with tool_calls, a refusal,"
            " audio or a function_call may omit it)",
            field="content",
        )
    tool_call_id = check_optional_id(raw.get("tool_call_id"), "tool_call_id")
    if role == "tool" and tool_call_id is None:
        raise InvalidInput("a tool message needs tool_call_id", field="tool_call_id")
    if role != "tool" and tool_call_id is not None:
        raise InvalidInput("only tool messages carry tool_call_id", field="tool_call_id")
    name = raw.get("name")
    if name is not None:
        name = check_text(name, "name", max_chars=MAX_LABEL_CHARS, allow_empty=False)
    return Message(
        role=cast(Role, role),
        content=content,
        name=name,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        metadata=check_json_object(raw.get("metadata"), "metadata"),
        state=check_json_object(raw.get("state"), "state"),
        extra=extra,
    )


#: Most problems of one schema validation a message lists (the rest are counted).
MAX_REPORTED_PROBLEMS = 3


def schema_problems(problems: Sequence[Mapping[str, Any]]) -> InvalidInput:
    """One short ``InvalidInput`` for a schema validation's problems (pydantic's
    ``errors()``: dicts with ``loc`` and ``msg``), as the surfaces report them: a
    REST 422 and an MCP tool's argument error read the same.

    ``field`` is the first problem's location (``body.messages.0.content``); the
    message lists ``location: what is wrong`` for the first
    ``MAX_REPORTED_PROBLEMS`` and counts the rest. Nothing else is kept: no input
    value (it is the caller's data) and no documentation link.
    """
    located = [
        (".".join(str(part) for part in problem.get("loc", ())) or "request", problem)
        for problem in problems
    ]
    if not located:
        return InvalidInput("invalid request", field="request")
    shown = [f"{where}: {problem.get('msg', 'invalid')}" for where, problem in located]
    message = "; ".join(shown[:MAX_REPORTED_PROBLEMS])
    if len(shown) > MAX_REPORTED_PROBLEMS:
        message += f" (and {len(shown) - MAX_REPORTED_PROBLEMS} more)"
    return InvalidInput(message, field=located[0][0])
