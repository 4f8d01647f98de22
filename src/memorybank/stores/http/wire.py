"""The store contract on the wire: the remote store's protocol, shared by client and server.

``AsyncHTTPStore`` (the client) and ``memorybank.server.store_rpc`` (the
server) speak it; nothing here does I/O. One contract call is one request::

    POST /v1/store/{method}          Authorization: Bearer KEY
    {"v": 1, "args": {...}}      ->  200 {"v": 1, "result": ...}
                                     4xx/5xx {"code", "message", "field"?, "request_id"}

Methods travel by their ``noun_verb`` names.

``METHODS`` is the table of callable methods (every required method of
``AsyncStore`` but ``close``, which is the client's own; the derived ones a store may
override; the batch record reads ``BATCH_METHODS``, so each is one request, and
``LISTING_METHODS``); the server
calls nothing else. Each method lists its parameters with their codec, so
arguments are encoded by name and decoded, on the server, into exactly the
keyword arguments the store method takes.

The table is read off the contract, not restated: each parameter's name, order
and default from ``AsyncStore``'s signature (an ``Unset`` one may always be
absent), its codec from its type annotation (``_CODECS``), except where the type
does not say what the value is (``_PARAM_CODECS``: a ``str`` that is JSON text, a
label or a status, an ``int`` that is a position; ``_RESULT_CODECS``). What no
signature says is declared here: which methods are idempotent (``_IDEMPOTENT``)
and which optional ones travel. The client's methods are generated from the same
signatures (``scripts/gen_wire.py``); a contract type without a codec fails at
import.

Values (version ``WIRE_VERSION``):

* ``UNSET`` is an absent key (of ``args``, of a ``Visibility``); ``None`` is
  ``null``. A parameter with a default may be absent; others are required.
* Datetimes are ISO 8601 strings in UTC with their microseconds
  (``"2026-01-02T03:04:05.123456+00:00"``).
* ``Thread``, ``Entry``, ``Branch``, ``Summary``, ``Record`` (with
  ``revision``), ``RecordGuard``, ``NewEntry`` (with ``fingerprint``),
  ``SearchHit``, ``VectorItem``, ``ToolCall`` are JSON objects of their fields,
  by name; a field left out takes the dataclass default (older peers), an
  unknown field is refused. Tuples travel as arrays.
* Metadata, state and record data are the JSON objects themselves (never
  tagged or rewritten, so a user's ``{"$date": ...}`` stays a dict); JSON's
  own number forms keep them exact: ``-0.0``, ``1e+16`` and 64-bit ints
  round-trip through Python's ``json``.

Decoding validates as ``AsyncMemory`` does (``memorybank.rules.validate``): ids,
text without NUL or lone surrogates (``\\ud800`` is valid JSON), 64-bit ints,
finite floats, datetimes in range, JSON objects, float32 vectors. The server
decodes what any client sends, so a forged request raises ``InvalidInput``
naming the offending argument (``"entries[2].created_at"``) instead of
reaching the store with a value it was never promised.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from datetime import datetime, timedelta
from types import UnionType
from typing import Any, Final, get_args, get_origin, get_type_hints

from memorybank.errors import (
    ConfigurationError,
    Conflict,
    CursorExpired,
    InvalidInput,
    MemoryBankError,
    NotFound,
    OutOfScope,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.events.types import Event
from memorybank.records import ROLES, Branch, Entry, Summary, Thread, ToolCall
from memorybank.rules import validate as v
from memorybank.stores.contract import REQUIRED
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.capabilities import OVERRIDES
from memorybank.stores.contract.types import (
    UNSET,
    AppendResult,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    Unset,
    VectorItem,
    Visibility,
)

__all__ = [
    "BATCH_METHODS",
    "EVENT_METHODS",
    "LISTING_METHODS",
    "METHODS",
    "WIRE_VERSION",
    "Codec",
    "Method",
    "Param",
    "contract_methods",
    "decode_args",
    "decode_result",
    "dumps",
    "encode_args",
    "encode_result",
    "error_from_body",
    "loads",
]

#: Contract methods with a default in ``AsyncStore`` that the remote store still sends
#: as one request each (the default would be one request per id or key).
BATCH_METHODS: Final = frozenset({"record_get_many", "record_list_keys", "record_page"})

#: The change feed's reads and prune (``Capability.EVENTS``), each one request for the
#: caller's tenant. Switching the feed (``events_enable``/``events_disable``) covers the
#: server's whole store: an operator's act on the server, never a tenant key's call.
EVENT_METHODS: Final = frozenset({"events_list", "events_keep", "events_prune"})

#: Version of the value encoding, sent as ``"v"`` in every request and response.
WIRE_VERSION: Final = 1
_INT64 = (-(2**63), 2**63 - 1)
_REQUIRED: Final = object()


@dataclass(frozen=True, slots=True)
class Codec:
    """How one kind of value travels: ``encode`` to JSON-ready, ``decode`` back, validated.

    ``decode(raw, field)`` raises ``InvalidInput(field=field)`` for anything
    that is not a valid encoding. ``load(raw)`` builds the value without
    validating it: the client's way to read its server's results (as a store
    trusts its database), several times cheaper for a page of entries; a
    malformed result then fails with a ``KeyError``/``TypeError``/``ValueError``
    that ``decode_result`` reports.
    """

    encode: Callable[[Any], Any]
    decode: Callable[[Any, str], Any]
    fast: Callable[[Any], Any] | None = None

    def load(self, raw: Any) -> Any:
        """The value of ``raw``, built without validation (``decode`` when no fast path)."""
        return self.decode(raw, "result") if self.fast is None else self.fast(raw)


def _same(value: Any) -> Any:
    return value


def _bad(field: str, what: str, raw: object) -> InvalidInput:
    return InvalidInput(f"{field} must be {what}, got {type(raw).__name__}", field=field)


def _decode_int(raw: Any, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise _bad(field, "an integer", raw)
    if not _INT64[0] <= raw <= _INT64[1]:
        raise InvalidInput(f"{field} must fit 64 bits", field=field)
    return raw


def _decode_count(raw: Any, field: str) -> int:
    return v.check_limit(raw, field, allow_none=False)


def _decode_bool(raw: Any, field: str) -> bool:
    if not isinstance(raw, bool):
        raise _bad(field, "true or false", raw)
    return raw


def _decode_float(raw: Any, field: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise _bad(field, "a number", raw)
    value = float(raw)
    if not math.isfinite(value):
        raise InvalidInput(f"{field} must be finite", field=field)
    return value


def _encode_time(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def _decode_time(raw: Any, field: str) -> datetime:
    if not isinstance(raw, str):
        raise _bad(field, "an ISO 8601 datetime string", raw)
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"{field} must be an ISO 8601 datetime", field=field) from None
    return v.check_time(value, field)


def _decode_label(raw: Any, field: str) -> str:
    return v.check_text(raw, field, max_chars=v.MAX_LABEL_CHARS)


def _decode_key(raw: Any, field: str) -> str:
    # Idempotency keys of batch members hold "\x1f" (not printable), so not check_id.
    return v.check_text(raw, field, allow_empty=False)


def _decode_role(raw: Any, field: str) -> str:
    if raw not in ROLES:
        raise InvalidInput(f"{field} must be one of {sorted(ROLES)}", field=field)
    return str(raw)


def _decode_status(raw: Any, field: str) -> str:
    if raw not in ("active", "archived"):
        raise InvalidInput(f"{field} must be 'active' or 'archived'", field=field)
    return str(raw)


def _decode_vector(raw: Any, field: str) -> list[float]:
    # Not v.check_vector: that normalises, and a store keeps what it is given.
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(f"{field} must be a non-empty list of numbers", field=field)
    vector = [_decode_float(x, field) for x in raw]
    if max(abs(x) for x in vector) > v.FLOAT32_MAX:
        raise InvalidInput(f"{field} must hold numbers within the float32 range", field=field)
    return vector


TEXT = Codec(_same, lambda raw, field: v.check_text(raw, field), _same)
ID = Codec(_same, v.check_id, _same)
LABEL = Codec(_same, _decode_label, _same)
KEY = Codec(_same, _decode_key, _same)
INT = Codec(_same, _decode_int, _same)
COUNT = Codec(_same, _decode_count, _same)
BOOL = Codec(_same, _decode_bool, _same)
FLOAT = Codec(float, _decode_float, float)
TIME = Codec(_encode_time, _decode_time, datetime.fromisoformat)
JSON_OBJECT = Codec(
    _same, lambda raw, field: v.check_json_object(_object(raw, field), field), _same
)
ROLE = Codec(_same, _decode_role, _same)
STATUS = Codec(_same, _decode_status, _same)
VECTOR = Codec(lambda vector: [float(x) for x in vector], _decode_vector, _same)


def _object(raw: Any, field: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _bad(field, "a JSON object", raw)
    return raw


def optional(codec: Codec) -> Codec:
    """``codec`` or ``None``."""
    encode = (
        _same
        if codec.encode is _same
        else (lambda value: None if value is None else codec.encode(value))
    )
    return Codec(
        encode,
        lambda raw, field: None if raw is None else codec.decode(raw, field),
        lambda raw: None if raw is None else codec.load(raw),
    )


def list_of(codec: Codec, *, as_tuple: bool = False) -> Codec:
    """A JSON array of ``codec`` values (decoded as a tuple with ``as_tuple``)."""

    def decode(raw: Any, field: str) -> Any:
        if not isinstance(raw, list):
            raise _bad(field, "a JSON array", raw)
        items = [codec.decode(item, f"{field}[{i}]") for i, item in enumerate(raw)]
        return tuple(items) if as_tuple else items

    def load(raw: Any) -> Any:
        items = [codec.load(item) for item in raw]
        return tuple(items) if as_tuple else items

    return Codec(lambda value: [codec.encode(item) for item in value], decode, load)


def _dict_of(key: Codec, value: Codec) -> Codec:
    def decode(raw: Any, field: str) -> dict[Any, Any]:
        return {
            key.decode(k, field): value.decode(item, f"{field}[{k!r}]")
            for k, item in _object(raw, field).items()
        }

    return Codec(
        lambda mapping: {k: value.encode(x) for k, x in mapping.items()},
        decode,
        lambda raw: {k: value.load(x) for k, x in raw.items()},
    )


def _dataclass(cls: type[Any], codecs: Mapping[str, Codec]) -> Codec:
    """A dataclass as a JSON object of its fields; absent fields take their default."""
    defaults: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in codecs:
            raise TypeError(f"no codec for {cls.__name__}.{f.name}")
        defaults[f.name] = _REQUIRED if f.default is MISSING else f.default
    items = tuple(codecs.items())
    # Most fields travel as they are: no call for them (a page of entries is the hot path).
    plain = tuple(name for name, codec in items if codec.encode is _same)
    converted = tuple((name, codec.encode) for name, codec in items if codec.encode is not _same)

    def encode(value: Any) -> dict[str, Any]:
        out = {name: getattr(value, name) for name in plain}
        for name, convert in converted:
            out[name] = convert(getattr(value, name))
        return out

    def decode(raw: Any, field: str) -> Any:
        obj = _object(raw, field)
        unknown = obj.keys() - defaults.keys()
        if unknown:
            raise InvalidInput(f"{field} has unknown fields {sorted(unknown)}", field=field)
        kwargs: dict[str, Any] = {}
        for name, codec in items:
            if name in obj:
                kwargs[name] = codec.decode(obj[name], f"{field}.{name}")
            elif defaults[name] is _REQUIRED:
                raise InvalidInput(f"{field}.{name} is missing", field=f"{field}.{name}")
        return cls(**kwargs)

    loaders = dict(codecs)

    def load(raw: dict[str, Any]) -> Any:
        return cls(**{name: loaders[name].load(x) for name, x in raw.items()})

    return Codec(encode, decode, load)


OPT_ID = optional(ID)
TOOL_CALL = _dataclass(ToolCall, {"id": ID, "name": LABEL, "arguments": TEXT})
TOOL_CALLS = list_of(TOOL_CALL, as_tuple=True)
THREAD = _dataclass(
    Thread,
    {
        "id": ID,
        "tenant_id": ID,
        "user_id": OPT_ID,
        "agent_id": OPT_ID,
        "title": optional(LABEL),
        "metadata": JSON_OBJECT,
        "status": STATUS,
        "created_at": TIME,
        "updated_at": TIME,
        "current_branch": ID,
    },
)
_MESSAGE: dict[str, Codec] = {
    "id": ID,
    "role": ROLE,
    "content": optional(TEXT),
    "name": optional(LABEL),
    "tool_calls": TOOL_CALLS,
    "tool_call_id": OPT_ID,
    "metadata": JSON_OBJECT,
    "state": JSON_OBJECT,
    "token_count": COUNT,
    "created_at": TIME,
    "idempotency_key": optional(KEY),
    "extra": JSON_OBJECT,
    "item": optional(JSON_OBJECT),
}
ENTRY = _dataclass(Entry, {**_MESSAGE, "thread_id": ID, "branch": ID, "position": INT})
NEW_ENTRY = _dataclass(NewEntry, {**_MESSAGE, "fingerprint": optional(KEY)})
BRANCH = _dataclass(
    Branch,
    {"name": ID, "thread_id": ID, "created_at": TIME, "from_branch": OPT_ID, "from_entry": OPT_ID},
)
SUMMARY = _dataclass(
    Summary,
    {"id": ID, "agent_id": ID, "user_id": OPT_ID, "content": TEXT, "created_at": TIME},
)
RECORD = _dataclass(
    Record,
    {
        "kind": ID,
        "id": ID,
        "agent_id": OPT_ID,
        "user_id": OPT_ID,
        "content": TEXT,
        "data": JSON_OBJECT,
        "created_at": TIME,
        "updated_at": TIME,
        "key": OPT_ID,
        "expires_at": optional(TIME),
        "revision": INT,
    },
)
GUARD = _dataclass(RecordGuard, {"kind": ID, "id": ID, "revision": optional(INT)})
HIT = _dataclass(
    SearchHit, {"kind": ID, "id": ID, "score": FLOAT, "thread_id": OPT_ID, "branch": OPT_ID}
)
VECTOR_ITEM = _dataclass(
    VectorItem, {"kind": ID, "id": ID, "model_id": ID, "vector": VECTOR, "thread_id": OPT_ID}
)
APPEND_RESULT = _dataclass(AppendResult, {"entries": list_of(ENTRY), "thread": THREAD})


def _decode_cursor(raw: Any, field: str) -> tuple[datetime, str]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise _bad(field, "[created_at, id]", raw)
    return TIME.decode(raw[0], f"{field}[0]"), ID.decode(raw[1], f"{field}[1]")


#: A ``record_page`` cursor ``(created_at, id)`` as ``[time, id]``.
CURSOR = Codec(
    lambda cursor: [_encode_time(cursor[0]), cursor[1]],
    _decode_cursor,
    lambda raw: (datetime.fromisoformat(raw[0]), raw[1]),
)


def _encode_visibility(value: Visibility) -> dict[str, Any]:
    # An UNSET axis (not checked) is an absent key; None (shared only) is null.
    return {
        axis: getattr(value, axis)
        for axis in ("agent_id", "user_id")
        if getattr(value, axis) is not UNSET
    }


def _decode_visibility(raw: Any, field: str) -> Visibility:
    obj = _object(raw, field)
    unknown = obj.keys() - {"agent_id", "user_id"}
    if unknown:
        raise InvalidInput(f"{field} has unknown fields {sorted(unknown)}", field=field)
    axes = {
        axis: OPT_ID.decode(obj[axis], f"{field}.{axis}") if axis in obj else UNSET
        for axis in ("agent_id", "user_id")
    }
    return Visibility(agent_id=axes["agent_id"], user_id=axes["user_id"])


VISIBILITY = Codec(_encode_visibility, _decode_visibility)


def _decode_page(raw: Any, field: str) -> tuple[Thread, list[Entry]]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise _bad(field, "[thread, entries]", raw)
    thread: Thread = THREAD.decode(raw[0], f"{field}[0]")
    entries: list[Entry] = list_of(ENTRY).decode(raw[1], f"{field}[1]")
    return thread, entries


PAGE = Codec(
    lambda page: [THREAD.encode(page[0]), [ENTRY.encode(e) for e in page[1]]],
    _decode_page,
    lambda raw: (THREAD.load(raw[0]), [ENTRY.load(e) for e in raw[1]]),
)


def _decode_snapshot(raw: Any, field: str) -> tuple[str | None, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != 2:
        raise _bad(field, "null or [owner, value]", raw)
    return OPT_ID.decode(raw[0], f"{field}[0]"), TEXT.decode(raw[1], f"{field}[1]")


SNAPSHOT = Codec(
    lambda value: None if value is None else list(value),
    _decode_snapshot,
    lambda raw: None if raw is None else (raw[0], raw[1]),
)


def _decode_change(raw: Any, field: str) -> tuple[str, str | None, dict[str, Any], int]:
    if not isinstance(raw, list) or len(raw) != 4:
        raise _bad(field, "[entry_id, content, state, token_count]", raw)
    return (
        ID.decode(raw[0], f"{field}[0]"),
        optional(TEXT).decode(raw[1], f"{field}[1]"),
        JSON_OBJECT.decode(raw[2], f"{field}[2]"),
        COUNT.decode(raw[3], f"{field}[3]"),
    )


CHANGES = list_of(Codec(list, _decode_change))
NOTHING = Codec(lambda value: None, lambda raw, field: None, lambda raw: None)


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a contract method; ``default`` when it may be absent (``UNSET``...)."""

    name: str
    codec: Codec
    default: Any = _REQUIRED


@dataclass(frozen=True, slots=True)
class Method:
    """One callable contract method: its parameters and result, and whether a retry is safe.

    ``idempotent``: repeating the call after an unknown outcome (a lost
    response) gives the caller the same result and leaves the store as one
    call would: reads, and replacing writes of the same value.
    """

    name: str
    params: tuple[Param, ...]
    result: Codec
    idempotent: bool


def _decode_seconds(raw: Any, field: str) -> timedelta:
    return timedelta(seconds=_decode_float(raw, field))


SECONDS = Codec(
    lambda value: value.total_seconds(),
    _decode_seconds,
    lambda raw: timedelta(seconds=raw),
)
EVENT = _dataclass(
    Event,
    {
        "cursor": ID, "id": ID, "kind": ID, "at": TIME, "user_id": OPT_ID,
        "agent_id": OPT_ID, "thread_id": OPT_ID, "item_id": OPT_ID,
        "data": optional(JSON_OBJECT), "content": optional(TEXT),
    },
)  # fmt: skip


#: Contract methods with a default that ``AsyncStore`` answers "cannot" (``None``): served,
#: so that a served store's answer reaches the client (no default could build it).
LISTING_METHODS: Final = frozenset({"working_runs", "snapshot_runs", "summary_agents"})

#: The codec of each annotation the contract's methods use (as ``typing.get_type_hints``
#: resolves them), for parameters and results alike. Built from these: ``X | None`` is
#: ``optional(X)``; ``X | Unset`` is X, absent on the wire when ``UNSET``;
#: ``Sequence[X]`` and ``list[X]`` are ``list_of(X)``; ``dict[str, X]`` is an object of X
#: by id. An annotation that is none of these fails at import: add its codec here.
_CODECS: Final[dict[Any, Codec]] = {
    str: ID,  # ids, tenants, owners, keys, names, kinds, model ids (see _PARAM_CODECS)
    int: COUNT,  # limits, offsets, k, counts: 0 to 2**31 - 1 (see _PARAM_CODECS)
    bool: BOOL,
    datetime: TIME,
    type(None): NOTHING,  # a result that is nothing
    dict[str, Any]: JSON_OBJECT,  # metadata
    Sequence[float]: VECTOR,
    list[float]: VECTOR,
    tuple[datetime, str]: CURSOR,  # record_page's (created_at, id)
    tuple[Thread, list[Entry]]: PAGE,
    tuple[str | None, str] | None: SNAPSHOT,  # (owner, JSON text)
    Sequence[tuple[str, str | None, dict[str, Any], int]]: CHANGES,
    Thread: THREAD,
    Entry: ENTRY,
    NewEntry: NEW_ENTRY,
    Branch: BRANCH,
    Summary: SUMMARY,
    Record: RECORD,
    RecordGuard: GUARD,
    Visibility: VISIBILITY,
    SearchHit: HIT,
    VectorItem: VECTOR_ITEM,
    AppendResult: APPEND_RESULT,
    Event: EVENT,
    timedelta: SECONDS,
}

#: Parameters whose type alone does not say the codec: a ``str`` that is not an id, an
#: ``int`` that is not a count. By name, in every method that has one (``| None`` and
#: ``| Unset`` still come from the annotation).
_PARAM_CODECS: Final[dict[str, Codec]] = {
    "value": TEXT,  # working memory and snapshot values: JSON text of any length
    "query": TEXT,  # the search text
    "title": LABEL,  # a thread's title: a label (MAX_LABEL_CHARS), spaces and all
    "status": STATUS,  # a thread's status: "active" or "archived", nothing else
    "through_position": INT,  # an entry position: any 64-bit int the store gave
}

#: Results whose type alone does not say the codec (their ``str`` is JSON text, not an id).
_RESULT_CODECS: Final[dict[str, Codec]] = {
    "working_get": optional(TEXT),
    "working_items": _dict_of(ID, TEXT),
}

#: ``Method.idempotent``, by name: the reads, and the writes that replace with the same
#: value. A method not listed is never repeated after an unknown outcome.
_IDEMPOTENT: Final = frozenset(
    (
        "thread_get thread_list entry_list entry_get entry_count branch_list working_get"
        " working_items working_runs snapshot_load snapshot_runs summary_list summary_agents"
        " record_get record_list record_get_many record_list_keys record_page text_search"
        " vector_search vector_get events_list events_keep"
        # Writes: snapshot_save again is the same owner and value, its check passes again.
        " working_set working_clear vector_put snapshot_save"
    ).split()
)

# The contract's modules import these for type checking only: the hints find them here.
_ITEM_TYPES: Final = {
    cls.__name__: cls
    for cls in (AppendResult, NewEntry, Record, RecordGuard, SearchHit, VectorItem, Event)
}


def _codec(annotation: Any, where: str) -> Codec:
    if annotation in _CODECS:
        return _CODECS[annotation]
    args = get_args(annotation)
    if isinstance(annotation, UnionType) and len(args) == 2 and type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        return optional(_codec(inner, where))
    origin = get_origin(annotation)
    if origin in (list, Sequence) and len(args) == 1:
        return list_of(_codec(args[0], where))
    if origin is dict and len(args) == 2 and args[0] is str:
        return _dict_of(ID, _codec(args[1], where))
    raise TypeError(f"no wire codec for {annotation!r} ({where}): add one to wire._CODECS")


def _param(method: str, param: inspect.Parameter, annotation: Any) -> Param:
    where = f"{method}({param.name})"
    if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
        raise TypeError(f"{where}: a wire parameter is named, never *args or positional-only")
    args = get_args(annotation) if isinstance(annotation, UnionType) else (annotation,)
    default = _REQUIRED if param.default is param.empty else param.default
    if Unset in args:  # UNSET travels as absence, so the wire may always leave it out
        if default not in (_REQUIRED, UNSET):
            raise TypeError(f"{where}: an Unset parameter defaults to UNSET")
        default = UNSET
        args = tuple(arg for arg in args if arg is not Unset)
    nullable = type(None) in args
    (base, *more) = (arg for arg in args if arg is not type(None))
    if more:
        raise TypeError(f"{where}: no wire codec for a union of {args!r}")
    if param.name in _PARAM_CODECS:
        if base not in (str, int):
            raise TypeError(f"{where}: _PARAM_CODECS names a str or an int, not {base!r}")
        codec = _PARAM_CODECS[param.name]
    else:
        codec = _codec(base, where)
    return Param(param.name, optional(codec) if nullable else codec, default)


def _method(name: str) -> Method:
    """The ``Method`` of contract method ``name``, read off ``AsyncStore``'s signature."""
    function = getattr(AsyncStore, name)
    hints = get_type_hints(function, localns=_ITEM_TYPES)
    params = list(inspect.signature(function).parameters.values())[1:]  # after self
    return Method(
        name,
        tuple(_param(name, p, hints[p.name]) for p in params),
        _RESULT_CODECS.get(name) or _codec(hints["return"], f"{name} result"),
        name in _IDEMPOTENT,
    )


def contract_methods() -> list[str]:
    """The names of the callable methods, sorted: every required method of ``AsyncStore``
    but ``close`` (the client's own), every derived one a store may answer itself
    (``OVERRIDES``, ``entry_get``/``entry_clear``/``entry_count``: the server's store
    answers them), plus ``BATCH_METHODS`` and ``LISTING_METHODS``."""
    derived = {name for group in OVERRIDES.values() for name in group}
    return sorted(
        (set(REQUIRED) - {"close"})
        | derived
        | {"entry_get", "entry_clear", "entry_count"}
        | BATCH_METHODS
        | LISTING_METHODS
        | EVENT_METHODS
    )


#: Every method the server may call, by name. Nothing outside this table is callable.
METHODS: Final[dict[str, Method]] = {name: _method(name) for name in contract_methods()}
_UNKNOWN = sorted(
    ((_IDEMPOTENT | _RESULT_CODECS.keys()) - METHODS.keys())
    | (_PARAM_CODECS.keys() - {p.name for method in METHODS.values() for p in method.params})
)
if _UNKNOWN:  # a declaration left behind by a rename would silently stop applying
    raise TypeError(f"declared for no wire method or parameter: {_UNKNOWN}")


def encode_args(method: Method, values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``args`` object of a call (``UNSET`` values left out)."""
    return {
        p.name: p.codec.encode(values[p.name])
        for p in method.params
        if values.get(p.name, UNSET) is not UNSET
    }


def decode_args(method: Method, raw: Any) -> dict[str, Any]:
    """The keyword arguments of a call from its ``args`` object, validated.

    ``InvalidInput`` for an unknown, missing or invalid argument (named in ``field``).
    """
    obj = _object(raw, "args")
    known = {p.name for p in method.params}
    for name in obj:
        if name not in known:
            raise InvalidInput(f"{method.name} takes no argument {name!r}", field="args")
    kwargs: dict[str, Any] = {}
    for p in method.params:
        if p.name in obj:
            kwargs[p.name] = p.codec.decode(obj[p.name], p.name)
        elif p.default is _REQUIRED:
            raise InvalidInput(f"{method.name} needs {p.name!r}", field=p.name)
        else:
            kwargs[p.name] = p.default
    return kwargs


def encode_result(method: Method, value: Any) -> Any:
    """The ``result`` of a call, JSON-ready."""
    return method.result.encode(value)


def decode_result(method: Method, raw: Any) -> Any:
    """The value a call returned, built without re-validating (the server's store returned
    validated values); ``InvalidInput(field="result")`` when it is not of the method's shape.
    """
    try:
        return method.result.load(raw)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
        raise InvalidInput(
            f"{method.name} result is malformed: {error!r}", field="result"
        ) from error


def dumps(value: Any) -> bytes:
    """Compact JSON bytes (ASCII escapes keep every string exact, surrogates refused earlier)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def loads(body: bytes | str, field: str = "body") -> Any:
    """Parse JSON; ``InvalidInput(field)`` for anything that is not strict JSON."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(body, parse_constant=refuse)
    except (ValueError, RecursionError) as error:
        raise InvalidInput(f"{field} is not valid JSON: {error}", field=field) from None


#: Library errors by their stable ``code``, as the server sends them.
_ERRORS: dict[str, type[MemoryBankError]] = {
    "not_found": NotFound,
    "conflict": Conflict,
    "cursor_expired": CursorExpired,
    "store_error": StoreError,
    "store_unavailable": StoreUnavailable,
    # The *server's* store is closed (shutting down): for this client it is unreachable.
    "store_closed": StoreUnavailable,
}


def error_from_body(status: int, body: Any) -> MemoryBankError:
    """The library exception an error response stands for.

    ``body`` is the parsed ``{"code", "message", "field"?, "request_id"}``
    (or anything else a proxy may answer). The request id is appended to the
    message so a report can be matched with the server's log.
    """
    obj = body if isinstance(body, dict) else {}
    code, message = obj.get("code"), obj.get("message")
    message = message if isinstance(message, str) else f"HTTP {status}"
    request_id = obj.get("request_id")
    if isinstance(request_id, str):
        message = f"{message} (request {request_id})"
    if code in ("invalid_input", "payload_too_large"):  # 413: nothing was written either
        field = obj.get("field")
        return InvalidInput(message, field=field if isinstance(field, str) and field else "args")
    if code == "out_of_scope":
        field = obj.get("field")
        return OutOfScope(message, field=field if isinstance(field, str) and field else "user_id")
    if code == "thread_forbidden":
        return ThreadForbidden(message)
    if isinstance(code, str) and code in _ERRORS:
        return _ERRORS[code](message)
    if status in (401, 403):
        # A missing, bad or revoked key: retrying cannot help, like a refused login.
        return ConfigurationError(f"the server refused the API key: {message}")
    if status in (502, 503, 504) or status == 429:
        return StoreUnavailable(message)
    return StoreError(f"unexpected answer from the server: {message}")
