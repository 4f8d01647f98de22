"""I/O-free pieces shared by the SQL stores: time encoding, JSON columns, row mapping.

SQLite and MySQL store times as integer microseconds since the Unix epoch
(exact, sortable, no timezone ambiguity); PostgreSQL uses ``timestamptz``
(also microseconds). JSON columns hold compact UTF-8 JSON text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memorybank.records import Branch, Entry, Summary, Thread, ToolCall
from memorybank.stores.contract.items import EntryRow, Record
from memorybank.stores.contract.types import Unset, Visibility

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "ENTRY_COLUMNS",
    "ENTRY_ROW_COLUMNS",
    "PAGE_COLUMNS",
    "RECORD_COLUMNS",
    "THREAD_COLUMNS",
    "EntryKeys",
    "dump",
    "entry_payload",
    "from_us",
    "fts_query",
    "load",
    "messages_of_rows",
    "row_to_branch",
    "row_to_entry",
    "row_to_entry_row",
    "row_to_record",
    "row_to_summary",
    "row_to_thread",
    "run_ids_sql",
    "search_words",
    "to_us",
    "tool_calls_from_json",
    "tool_calls_to_json",
    "tool_calls_value",
    "unit_vector_bytes",
    "vector_array",
    "vector_array_from_text",
    "vector_from_bytes",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FAST_LIMIT_US = 7_258_118_400_000_000  # 2200-01-01

#: Table names after the prefix on PostgreSQL and MySQL (for tools that drop a prefix's
#: tables, e.g. tests): the change feed's last, made on its first enable, not by a migration.
TABLES = (
    "threads", "branches", "entries", "working", "snapshots", "summaries", "records",
    "vectors", "vector_stamps", "schema_version",
    "events", "events_tenants", "events_config", "events_mute",
)  # fmt: skip
#: Column order every SQL store selects threads in (``row_to_thread`` reads it).
THREAD_COLUMNS = (
    "id, tenant_id, user_id, agent_id, title, metadata, status, created_at, updated_at,"
    " current_branch"
)
#: Entry columns of a page whose thread and branch the caller knows
#: (``page_row_to_entry`` reads them): fewer values for the driver to build.
PAGE_COLUMNS = (
    "id, position, role, content, name, tool_calls, tool_call_id, metadata, state,"
    " token_count, created_at, idempotency_key"
)
#: What a search ranks of an entry (``row_to_entry_row`` reads it): ``EntryRow``'s fields.
ENTRY_ROW_COLUMNS = "id, thread_id, branch, position, role, content, name, created_at"
#: Column order every SQL store selects entries in (``row_to_entry`` reads it).
ENTRY_COLUMNS = (
    "id, thread_id, branch, position, role, content, name, tool_calls, tool_call_id,"
    " metadata, state, token_count, created_at, idempotency_key"
)


#: Column order every SQL store selects records in (``row_to_record`` reads it).
RECORD_COLUMNS = (
    "kind, id, agent_id, user_id, content, data, created_at, updated_at, key, expires_at, revision"
)

_WORD = re.compile(r"\w+", re.UNICODE)
#: A run of digits that may be an integer beyond 64 bits (``orjson`` reads those as
#: floats): such text is parsed by ``json``, which keeps every integer exact.
_LONG_DIGITS = re.compile(r"[0-9][0-9]{18}")  # (faster to scan than [0-9]{19})


def to_us(value: datetime) -> int:
    """Microseconds since the epoch, exactly (no float rounding)."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


#: Datetimes of integers converted lately (a context build re-reads the same recent
#: entries every turn): a lookup is several times cheaper than a conversion. Emptied
#: whole when it holds ``_DATETIMES_MAX`` (datetimes are immutable: sharing is safe).
_DATETIMES: dict[int, datetime] = {}
_DATETIMES_MAX = 16_384


def _datetime_of(value: int) -> datetime:
    """``fromtimestamp`` of a float is twice as fast as adding a ``timedelta``, and
    exact: a float's error at today's epoch seconds is under 0.25 µs, and
    ``fromtimestamp`` rounds to the nearest microsecond. Times beyond year 2200 take
    the slower exact path."""
    if 0 <= value < _FAST_LIMIT_US:
        return datetime.fromtimestamp(value / 1_000_000, UTC)
    return _EPOCH + timedelta(microseconds=int(value))


def from_us(value: int | datetime) -> datetime:
    """The UTC datetime for an integer of microseconds (a datetime passes through as UTC);
    the datetimes of recently converted integers are remembered (``_DATETIMES``)."""
    found = _DATETIMES.get(value) if type(value) is int else None
    return _from_us_unseen(value) if found is None else found


def _from_us_unseen(value: int | datetime) -> datetime:
    """``from_us`` of a value not in ``_DATETIMES`` (an integer's datetime goes there)."""
    if type(value) is int:
        found = _datetime_of(value)
        if len(_DATETIMES) >= _DATETIMES_MAX:
            _DATETIMES.clear()
        _DATETIMES[value] = found
        return found
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return _datetime_of(value)


def dump(value: Any) -> str:
    """Compact JSON text for a JSON column."""
    import json  # on first use: reading history does not need it (cold start)

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def load(value: str | bytes | Mapping[str, Any] | Sequence[Any] | None) -> Any:
    """Parse a JSON column (drivers that decode JSON already pass objects through)."""
    if value is None:
        return None
    if value == "{}":
        return {}
    if isinstance(value, str):
        return _loads(value)
    if isinstance(value, bytes | bytearray):
        import json

        return json.loads(value)
    return value


def _loads(text: str) -> Any:
    """``json.loads``, through ``orjson`` (4x faster) when installed and the result is
    the same: no integer that could exceed 64 bits, and text ``orjson`` refuses (NaN,
    Infinity, lone surrogates) falls back to ``json``."""
    orjson = _orjson()
    if orjson is not None and _LONG_DIGITS.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    import json

    return json.loads(text)


_ORJSON: list[Any] = []


def _orjson() -> Any:
    """The ``orjson`` module (the server extra's fast parser) or ``None``; imported on
    the first JSON column read, not with the store (it loads ``uuid`` and ``platform``:
    a cold start that reads plain messages parses no JSON)."""
    if not _ORJSON:
        try:
            import orjson
        except ImportError:  # pragma: no cover - depends on the installed extras
            _ORJSON.append(None)
        else:
            _ORJSON.append(orjson)
    return _ORJSON[0]


def tool_calls_value(
    calls: Sequence[ToolCall],
    extra: Mapping[str, Any] | None = None,
    item: Mapping[str, Any] | None = None,
) -> Any:
    """The JSON value of an entry's ``tool_calls`` column: its calls and provider payload.

    Without a payload (the common case, and every row written before payloads
    existed) the column is ``[[id, name, arguments], ...]`` or NULL. With one it
    is an object ``{"c": calls, "x": extra, "i": item}`` where ``x`` and ``i``
    are the payload as JSON *text*: a string survives every store's JSON type
    exactly (PostgreSQL ``jsonb`` would reorder keys and turn ``1e16`` into an
    integer), so no store needs a new column or migration for it.
    """
    listed = [[c.id, c.name, c.arguments] for c in calls] or None
    if not extra and item is None:
        return listed
    value: dict[str, Any] = {"c": listed}
    if extra:
        value["x"] = dump(extra)
    if item is not None:
        value["i"] = dump(item)
    return value


def tool_calls_to_json(
    calls: Sequence[ToolCall],
    extra: Mapping[str, Any] | None = None,
    item: Mapping[str, Any] | None = None,
) -> str | None:
    """``tool_calls_value`` as JSON text (NULL for no calls and no payload)."""
    value = tool_calls_value(calls, extra, item)
    return None if value is None else dump(value)


def entry_payload(
    value: Any,
) -> tuple[tuple[ToolCall, ...], dict[str, Any], dict[str, Any] | None]:
    """The calls, ``extra`` and ``item`` of a ``tool_calls`` column (``tool_calls_value``)."""
    data = load(value)
    if not data:
        return (), {}, None
    if isinstance(data, dict):
        extra = data.get("x")
        item = data.get("i")
        return (
            _calls(data.get("c")),
            {} if extra is None else load(extra),
            None if item is None else load(item),
        )
    return _calls(data), {}, None


def _calls(data: Any) -> tuple[ToolCall, ...]:
    if not data:
        return ()
    return tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in data)


def tool_calls_from_json(value: Any) -> tuple[ToolCall, ...]:
    """Only the calls of a ``tool_calls`` column."""
    return entry_payload(value)[0]


def row_to_thread(row: Sequence[Any]) -> Thread:
    """A ``Thread`` from a row selected with ``THREAD_COLUMNS``."""
    return Thread(
        id=row[0],
        tenant_id=row[1],
        user_id=row[2],
        agent_id=row[3],
        title=row[4],
        metadata=load(row[5]) or {},
        status=row[6],
        created_at=from_us(row[7]),
        updated_at=from_us(row[8]),
        current_branch=row[9],
    )


class EntryKeys(Protocol):
    """What ``Entry`` and ``EntryRow`` share that the reads of either key them by."""

    @property
    def id(self) -> str: ...

    @property
    def thread_id(self) -> str: ...


#: ``tuple.__new__``: an ``EntryRow`` made without its Python ``__new__`` (a search
#: reads 185 of them; the same tuple, a third of the cost)
_TUPLE = tuple.__new__


def row_to_entry_row(row: Sequence[Any]) -> EntryRow:
    """An ``EntryRow`` from a row selected with ``ENTRY_ROW_COLUMNS`` (its time looked up
    in ``_DATETIMES`` first, without the call of ``from_us``)."""
    created = _DATETIMES.get(row[7])
    if created is None:
        created = _from_us_unseen(row[7])
    values = (row[0], row[1], row[2], int(row[3]), row[4], row[5], row[6], created)
    return _TUPLE(EntryRow, values)


def row_to_entry(row: Sequence[Any]) -> Entry:
    """An ``Entry`` from a row selected with ``ENTRY_COLUMNS``."""
    return page_row_to_entry((row[0], *row[3:]), row[1], row[2])


def page_row_to_entry(row: Sequence[Any], thread_id: str, branch: str) -> Entry:
    """An ``Entry`` from a row selected with ``PAGE_COLUMNS`` (thread and branch known).

    This runs for every row of every read, so it avoids calls where a cheap
    test does: empty JSON objects and absent tool calls are the common case.
    """
    (id_, position, role, content, name, calls, call_id, metadata, state, tokens, created,
     key) = row  # fmt: skip
    if calls is None:
        tool_calls: tuple[ToolCall, ...] = ()
        extra: dict[str, Any] = {}
        item: dict[str, Any] | None = None
    else:
        tool_calls, extra, item = entry_payload(calls)
    return Entry(
        id_,
        thread_id,
        branch,
        int(position),
        role,
        content,
        name,
        tool_calls,
        call_id,
        {} if metadata is None or metadata == "{}" else load(metadata),
        {} if state is None or state == "{}" else load(state),
        int(tokens),
        from_us(created),
        key,
        extra,
        item,
    )


def row_to_branch(row: Sequence[Any]) -> Branch:
    """A ``Branch`` from ``(name, thread_id, created_at, from_branch, from_entry)``."""
    return Branch(
        name=row[0],
        thread_id=row[1],
        created_at=from_us(row[2]),
        from_branch=row[3],
        from_entry=row[4],
    )


def row_to_summary(row: Sequence[Any]) -> Summary:
    """A ``Summary`` from ``(id, agent_id, user_id, content, created_at)``."""
    return Summary(
        id=row[0], agent_id=row[1], user_id=row[2], content=row[3], created_at=from_us(row[4])
    )


def row_to_record(row: Sequence[Any]) -> Record:
    """A ``Record`` from a row selected with ``RECORD_COLUMNS``."""
    return Record(
        kind=row[0],
        id=row[1],
        agent_id=row[2],
        user_id=row[3],
        content=row[4],
        data=load(row[5]) or {},
        created_at=from_us(row[6]),
        updated_at=from_us(row[7]),
        key=row[8],
        expires_at=None if row[9] is None else from_us(row[9]),
        revision=int(row[10]),
    )


def fts_query(text: str) -> str:
    """A safe full-text query: every word of ``text`` quoted, OR-ed (BM25 ranks them).

    User text never reaches the FTS query parser as syntax, so quotes, ``NEAR``,
    ``*`` or ``-`` in a question cannot raise or change the meaning.
    """
    return " OR ".join(f'"{w}"' for w in search_words(text).split())


def search_words(text: str) -> str:
    """The distinct words of ``text`` (runs of word characters, lower-cased), spaced:
    only word characters reach a full-text parser, never user text as its syntax
    (MySQL's ``AGAINST (... IN NATURAL LANGUAGE MODE)`` takes them as they are)."""
    return " ".join(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


def unit_vector_bytes(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32 bytes, scaled to unit length.

    The norm is taken in float64: in float32 the squares of components above
    about 1.8e19 overflow, and the vector would be stored as zeros or NaN.
    """
    import numpy as np

    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    return array.astype("<f4").tobytes()


def vector_from_bytes(blob: bytes) -> list[float]:
    """The list of floats stored by ``unit_vector_bytes``."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4").tolist()  # type: ignore[no-any-return]


def vector_array(blob: bytes) -> NDArray[np.float32]:
    """The vector stored by ``unit_vector_bytes``, as a float32 array (no copy: a
    read-only view of ``blob``)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


def vector_array_from_text(text: str) -> NDArray[np.float32]:
    """A vector in pgvector's text form (``"[0.1,0.2]"``) as a float32 array."""
    import numpy as np

    return np.array(text[1:-1].split(","), dtype=np.float32)


def scope_sql(alias: str, visible_to: Visibility | None, mark: str) -> tuple[str, list[Any]]:
    """``" AND ..."`` conditions keeping the rows ``visible_to`` may see, and their parameters.

    ``alias`` prefixes the columns (``"t."``), ``mark`` is the driver's placeholder
    (``?`` or ``%s``; a ``{column}`` in it is the column's name: PostgreSQL's named
    ``%(v_{column})s``). A ``None`` axis keeps shared rows only; an unset axis adds
    nothing. Plain ``IS NULL OR =`` keeps the owner indexes usable.
    """
    if visible_to is None:
        return "", []
    sql = ""
    params: list[Any] = []
    for column, asking in (("agent_id", visible_to.agent_id), ("user_id", visible_to.user_id)):
        if isinstance(asking, Unset):
            continue
        if asking is None:
            sql += f" AND {alias}{column} IS NULL"
        else:
            named = mark.format(column=column)
            sql += f" AND ({alias}{column} IS NULL OR {alias}{column} = {named})"
            params.append(asking)
    return sql, params


def any_user(user_id: str | Unset | None) -> tuple[bool, str | None]:
    """Parameters of ``(<any> OR user_id IS NULL OR user_id = <user>)``: UNSET matches all."""
    if isinstance(user_id, Unset):
        return True, None
    return False, user_id


def run_ids_sql(
    table: str,
    tenant: str,
    after: str | None,
    limit: int | None,
    mark: str,
    run_id: str = "run_id",
) -> tuple[str, list[Any]]:
    """``SELECT DISTINCT run_id`` of a tenant in ``table`` (working memory or snapshots),
    in id order, after ``after``, at most ``limit``; ``mark`` is the driver's placeholder
    and ``run_id`` the column as compared (PostgreSQL: ``run_id COLLATE "C"``, bytewise)."""
    sql = f"SELECT DISTINCT {run_id} FROM {table} WHERE tenant_id = {mark}"
    params: list[Any] = [tenant]
    if after is not None:
        sql += f" AND {run_id} > {mark}"
        params.append(after)
    sql += f" ORDER BY {run_id}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, params


def messages_of_rows(rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """``history()``'s messages from ``(role, content, name, tool_calls, tool_call_id)``
    rows, oldest first: exactly ``[e.to_message() for e in drop_orphan_tool_results(
    entries)]`` of the same entries, without making the entries (a read's main cost).
    """
    messages: list[dict[str, Any]] = []
    called: set[str] = set()
    for role, content, name, calls, call_id in rows:
        if role == "tool" and call_id not in called:
            continue  # its calling assistant entry is not in the window
        if calls is None:
            message: dict[str, Any] = {"role": role, "content": content}
            if name is not None:
                message["name"] = name
            if call_id is not None:
                message["tool_call_id"] = call_id
            messages.append(message)
            continue
        tool_calls, extra, item = entry_payload(calls)  # freshly parsed: no copies needed
        if role != "tool" and tool_calls:
            called.update(call.id for call in tool_calls)
        if item is not None:
            messages.append(item)
            continue
        message = {"role": role, "content": content}
        if name is not None:
            message["name"] = name
        if tool_calls:
            message["tool_calls"] = [call.to_dict() for call in tool_calls]
        if call_id is not None:
            message["tool_call_id"] = call_id
        if extra:
            message.update(extra)
        messages.append(message)
    return messages
