"""The limits the library enforces, stated in the OpenAPI schema.

The request bodies are generated from the verbs' signatures (``str``, ``int``), and the
checks live in ``memorybank.rules.validate``, out of pydantic's sight; without this
module the schema would call valid what every verb refuses (an empty ``agent_id``, a
control character in a path's id, a NUL in a title). ``state_limits`` walks the schema
once, when ``app.openapi()`` is first built, and adds:

* on every id (``*_id``, ``*_ids``' items, and the fields named in ``ID_FIELDS``), in a
  body, a path or a query: ``$ref: Id``, 1 to ``MAX_ID_LENGTH`` printable characters
  (``check_id``; the pattern lists the printable characters of the common alphabets,
  see ``id_pattern``);
* on every other string of a body or a query: no NUL (``check_text``), and for the
  fields the verbs require non-empty (``NON_EMPTY``), at least one character;
* the few numeric floors the verbs check (``MINIMUMS``), the counts ``check_limit``
  takes (``COUNTS``: 0 to ``MAX_COUNT``) and a relation's weight (``POSITIVE``: above
  0, below 1e300).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from memorybank.graph._async.records import RULES
from memorybank.rules.validate import MAX_COUNT, MAX_ID_LENGTH
from memorybank.server.arguments import NO_NUL
from memorybank.server.pagination import (
    CURSOR_DESCRIPTION,
    CURSOR_PATTERN,
    ENTITY_CURSOR_PREFIX,
)

__all__ = [
    "CANNOT_STATE",
    "COUNTS",
    "ENTITY_CURSOR_PATHS",
    "ID_FIELDS",
    "MINIMUMS",
    "NON_EMPTY",
    "NON_EMPTY_OF",
    "POSITIVE",
    "id_pattern",
    "state_limits",
]

#: Fields that are ids though their names do not end in ``_id``; ``(schema, field)``
#: pairs name a field that is an id in that body only (``name`` is an entity's text).
ID_FIELDS = frozenset(
    {
        "branch",
        "channel_type",
        "from_entry",
        "idempotency_key",
        "key",
        "merge",
        "provenance",
        "source_entries",
        "tenant",
        "Idempotency-Key",
    }
)
ID_FIELDS_OF = frozenset({("BranchIn", "name"), ("CheckoutIn", "name")})
#: Path parameters are ids, whatever their name, except these.
PATH_NOT_IDS = frozenset({"method"})
#: Text the verbs refuse empty (for a list, each item).
NON_EMPTY = frozenset(
    {
        "query",
        "content",
        "types",
        "entity_types",
        "label",
        "category",
        "source",
        "reason",
        "aliases",
        "observations",
        "rules",
    }
)
#: ``(schema, field)``: text refused empty in that body (``""``: a query parameter) only;
#: an entity's name is, a chat message's ``name`` is not checked.
NON_EMPTY_OF = frozenset(
    {
        ("EntityIn", "name"),
        ("EntityPatch", "name"),
        ("", "name"),
        ("EntityIn", "type"),
        ("EntityPatch", "type"),
        ("RelationIn", "type"),
    }
)
#: Numbers with a floor the verbs check.
MINIMUMS = {"threshold": 0}
#: Counts, checked by ``rules.validate.check_limit``: 0 to ``MAX_COUNT``.
COUNTS = frozenset(
    {
        "k",
        "keep_recent",
        "last",
        "max_edges",
        "max_nodes",
        "max_tokens",
        "message_threshold",
        "offset",
        "pre_rot_threshold",
        "recent_to_keep",
        "reserve_tokens",
        "threshold",
        "token_count",
    }
)
#: Text taken from a fixed list: the inference rules, a thread's status.
ENUMS: dict[str, list[str]] = {"rules": list(RULES)}
ENUMS_OF: dict[tuple[str, str], list[str]] = {("ThreadPatch", "status"): ["active", "archived"]}
#: Numbers from 0 to 1 (confidences).
UNIT = frozenset({"confidence", "min_confidence"})
#: Of ``NON_EMPTY``, the text that may be blank (spaces only): the others are labels,
#: names and sources, which the verbs refuse blank.
MAY_BE_BLANK = frozenset({"query", "content"})
#: Numbers the verbs take above 0 and finite (``graph``'s weight check).
POSITIVE = frozenset({"weight"})


#: ``(schema, field)`` -> the rule the server checks that OpenAPI cannot state (it
#: depends on the server's settings, on two fields, or on two places), added to the
#: field's description where a reader of the schema meets it.
CANNOT_STATE: dict[tuple[str, str], str] = {
    ("DocumentIn", "embedding"): (
        "Only on a server with an embedder (`memorybank serve --embedder`): without one"
        " a vector is refused (422, `field: embedding`), as it could not be tagged with"
        " the embedder's model id."
    ),
    ("RelationIn", "invalid_at"): (
        "After `valid_at` when both are given (422, `field: invalid_at`, otherwise: a"
        " schema cannot compare two fields)."
    ),
    ("ConsolidateIn", "user_id"): (
        "Given here or as the `X-User-Id` header: without either (or with two that"
        " differ) the request is refused."
    ),
    ("SessionIn", "user_id"): (
        "Given here or as the `X-User-Id` header: without either (or with two that"
        " differ) the request is refused."
    ),
}


#: The pattern lists the printable characters below this code point only, in runs of at
#: least ``_RUN`` (the common alphabets): a schema tester draws from it fast, and every
#: id it allows is one the server takes. Other printable characters (CJK, emoji, ...)
#: are ids too, as the description says.
_BELOW = 0x3000
_RUN = 40


@cache
def id_pattern() -> str:
    """A regular expression of ids: 1 or more characters of the common alphabets that
    ``str.isprintable`` accepts (see ``_BELOW``)."""
    ranges: list[tuple[int, int]] = []
    start = None
    for code in range(_BELOW + 1):
        printable = code < _BELOW and chr(code).isprintable()
        if printable and start is None:
            start = code
        elif not printable and start is not None:
            if code - start >= _RUN or start == 0xA1:  # and the Latin-1 signs from "¡"
                ranges.append((start, code - 1))
            start = None

    def char(code: int) -> str:
        return chr(code) if 0x30 <= code < 0x7F and chr(code).isalnum() else f"\\u{code:04x}"

    allowed = "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges)
    return f"^[{allowed}]+$"


def _id_schema() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_LENGTH,
        "pattern": id_pattern(),
        "description": (
            f"An id: 1 to {MAX_ID_LENGTH} printable characters (str.isprintable: no control,"
            " format or unassigned code point, no space but ' '), compared exactly, never"
            " normalised. The pattern lists the common alphabets; CJK, emoji and every"
            " other printable character are ids too."
        ),
    }


_ID_REF = {"$ref": "#/components/schemas/Id"}
#: Lists whose cursor names the last entity of a page (``ENTITY_CURSOR_PREFIX``).
ENTITY_CURSOR_PATHS = frozenset({"/v1/graph/entities"})


def _cursor_schema(entity: bool) -> dict[str, Any]:
    """A cursor as this server makes them (``memorybank.server.pagination``)."""
    body = id_pattern()[1:]  # "[...]+$": an id
    pattern = f"^{ENTITY_CURSOR_PREFIX}{body}" if entity else CURSOR_PATTERN
    return {
        "anyOf": [{"type": "string", "pattern": pattern}, {"type": "null"}],
        "description": CURSOR_DESCRIPTION,
    }


#: No NUL, and not blank: at least one character that is not whitespace.
_NON_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


def _is_id(owner: str, name: str) -> bool:
    return name.endswith("_id") or name in ID_FIELDS or (owner, name) in ID_FIELDS_OF


def _tighten(schema: dict[str, Any], owner: str, name: str) -> dict[str, Any]:
    """``schema`` (a property's or a parameter's) with the field's limits stated."""
    if "anyOf" in schema:
        schema["anyOf"] = [_tighten(option, owner, name) for option in schema["anyOf"]]
        return schema
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), dict):
        listed = name in NON_EMPTY or _is_id(owner, name)  # each item is an id or non-empty
        item = name[:-1] if name.endswith("_ids") else name if listed else ""
        if item:
            schema["items"] = _tighten(schema["items"], owner, item)
        return schema
    if kind == "string" and "format" not in schema and "enum" not in schema:
        if _is_id(owner, name) or name.endswith("_ids"):  # one id where a list is taken
            extra = {k: v for k, v in schema.items() if k in ("title", "description", "default")}
            return {"allOf": [_ID_REF], **extra} if extra else dict(_ID_REF)
        choices = ENUMS.get(name) or ENUMS_OF.get((owner, name))
        if choices:
            schema["enum"] = choices
            schema.pop("pattern", None)
            return schema
        if name in NON_EMPTY or (owner, name) in NON_EMPTY_OF:
            schema.setdefault("minLength", 1)
            if name not in MAY_BE_BLANK:
                schema["pattern"] = _NON_BLANK
        schema.setdefault("pattern", NO_NUL)
    if kind in ("integer", "number"):
        if name in MINIMUMS:
            schema.setdefault("minimum", MINIMUMS[name])
        if name in COUNTS:
            schema.setdefault("minimum", 0)
            schema.setdefault("maximum", MAX_COUNT)
        if name in UNIT:
            schema.setdefault("minimum", 0)
            schema.setdefault("maximum", 1)
        if name in POSITIVE:
            schema.setdefault("exclusiveMinimum", 0)
            schema.setdefault("exclusiveMaximum", 1e300)
    return schema


def state_limits(schema: dict[str, Any]) -> None:
    """Add the library's limits to ``schema`` (an OpenAPI document), in place."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Id"] = _id_schema()
    for owner, body in components.items():
        if owner == "Id" or not (owner.endswith(("In", "Patch", "Options", "Body"))):
            continue
        for name, prop in body.get("properties", {}).items():
            tightened = _tighten(prop, owner, name)
            note = CANNOT_STATE.get((owner, name))
            if note is not None:
                said = tightened.get("description")
                tightened["description"] = f"{said} {note}" if said else note
            body["properties"][name] = tightened
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                where, name = parameter.get("in"), parameter.get("name", "")
                if where == "header" and name.lower().startswith("x-"):
                    continue  # the auth headers state their own (deps.document_auth)
                if where == "query" and name == "cursor":
                    parameter["schema"] = _cursor_schema(path in ENTITY_CURSOR_PATHS)
                elif where == "path" and name not in PATH_NOT_IDS:
                    parameter["schema"] = dict(_ID_REF)
                elif where in ("query", "path", "header") and "schema" in parameter:
                    parameter["schema"] = _tighten(parameter["schema"], "", name)
