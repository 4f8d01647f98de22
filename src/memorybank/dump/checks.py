"""The checks every line of a dump passes before ``memorybank import`` writes anything.

I/O-free. A dump is a file from anywhere: each line is held to the rules the
library's own writes follow (``memorybank.rules.validate`` and the verbs'
checks: a fact's confidence, an entity's name, an entry's role and token
count, ...), so that nothing an import writes can make a later read fail. Each
check returns the decoded value or raises ``InvalidInput`` naming the field
(``data.confidence``, ``entry.role``, ...); ``memorybank.dump._async.portability``
adds the line number (``DumpLineError``).

A record's ``data`` is checked per kind (the keys its verbs write, by their
rules; other keys only as JSON), then read back through the very function the
library reads it with (``fact_from_record``, ``document_from_record``, the
graph's entity and relation readers): whatever that function cannot read is
refused here rather than failing a ``facts.list`` later.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from memorybank.core._async.core import MAX_CONTENT_CHARS
from memorybank.core._async.facts import _check_confidence, _check_optional_text, fact_from_record
from memorybank.core.documents import document_from_record
from memorybank.dump import format as _dump
from memorybank.errors import InvalidInput
from memorybank.graph._async import records as _graph
from memorybank.graph._async.checks import (
    _SOURCES,
    _ids,
    _label,
    _labels,
    _texts,
    _weight,
)
from memorybank.records import ROLES, Branch, Entry, Summary, Thread
from memorybank.rules import validate as v
from memorybank.stores.contract.types import Record

__all__ = [
    "DumpLineError",
    "check_branches",
    "check_entry",
    "check_record",
    "check_snapshot",
    "check_summary",
    "check_thread",
    "check_vector",
    "check_working",
    "parse_line",
]


class DumpLineError(InvalidInput):
    """A line of a dump is invalid: ``line`` is its number (the header is line 1)."""

    def __init__(self, line: int, message: str, *, field: str) -> None:
        super().__init__(f"line {line} of the dump: {message}", field=field)
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        return (_line_error, (self.line, str(self), self.field))


def _line_error(line: int, message: str, field: str) -> DumpLineError:
    error = DumpLineError(line, "", field=field)
    error.args = (message,)
    return error


def parse_line(line: str) -> dict[str, Any]:
    """One line as a JSON object; ``InvalidInput`` if it is not JSON, too deep or no object."""
    try:
        data = json.loads(line)
    except RecursionError as error:
        raise InvalidInput(
            f"the line is nested too deeply (more than {v.MAX_JSON_DEPTH} levels are refused)",
            field="line",
        ) from error
    except ValueError as error:
        raise InvalidInput(f"the line is not JSON ({error})", field="line") from error
    if not isinstance(data, dict):
        raise InvalidInput(
            f"the line is JSON but not an object (a {type(data).__name__})", field="line"
        )
    return data


def _member(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    body = data.get(name)
    if not isinstance(body, dict):
        raise InvalidInput(f"a {name} line needs a {name!r} object", field=name)
    return body


def _in(prefix: str, error: InvalidInput) -> InvalidInput:
    """``error`` with its field named inside ``prefix`` (``data`` -> ``record.data``)."""
    field = error.field if error.field.startswith(prefix + ".") else f"{prefix}.{error.field}"
    return InvalidInput(str(error), field=field)


def _json(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a JSON object", field=field)
    return v.check_json_object(value, field)


# -- threads and entries ---------------------------------------------------------------


def check_thread(data: Mapping[str, Any]) -> Thread:
    """The ``thread`` of a thread line, checked as ``threads.create`` checks its arguments."""
    thread = _dump.decode(Thread, _member(data, "thread"))
    v.check_id(thread.id, "thread.id")
    v.check_optional_id(thread.user_id, "thread.user_id")
    v.check_optional_id(thread.agent_id, "thread.agent_id")
    if thread.title is not None:
        v.check_text(thread.title, "thread.title", max_chars=v.MAX_LABEL_CHARS)
    thread.metadata = _json(thread.metadata, "thread.metadata")
    if thread.status not in ("active", "archived"):
        raise InvalidInput(
            f"thread.status must be 'active' or 'archived', got {thread.status!r}",
            field="thread.status",
        )
    v.check_time(thread.created_at, "thread.created_at")
    v.check_time(thread.updated_at, "thread.updated_at")
    v.check_id(thread.current_branch, "thread.current_branch")
    return thread


def check_branches(data: Mapping[str, Any], thread: Thread) -> list[dict[str, Any]]:
    """The ``branches`` of a thread line: named once each, sources declared before their forks,
    the current branch among them."""
    branches = data.get("branches")
    if not isinstance(branches, list) or not branches:
        raise InvalidInput("a thread line needs its branches (a non-empty list)", field="branches")
    seen: set[str] = set()
    for i, info in enumerate(branches):
        where = f"branches[{i}]"
        if not isinstance(info, dict):
            raise InvalidInput(f"{where} must be an object", field=where)
        branch = _dump.decode(Branch, {**info, "thread_id": thread.id})
        v.check_id(branch.name, f"{where}.name")
        if branch.name in seen:
            raise InvalidInput(f"branch {branch.name!r} is listed twice", field=f"{where}.name")
        v.check_time(branch.created_at, f"{where}.created_at")
        v.check_optional_id(branch.from_branch, f"{where}.from_branch")
        v.check_optional_id(branch.from_entry, f"{where}.from_entry")
        v.check_limit(info.get("entries"), f"{where}.entries", allow_none=False)
        fork = v.check_optional_id(info.get("fork_entry"), f"{where}.fork_entry")
        if fork is not None and branch.from_branch not in seen:
            raise InvalidInput(
                f"branch {branch.name!r} forks at an entry of {branch.from_branch!r},"
                " which is not listed before it",
                field=f"{where}.from_branch",
            )
        seen.add(branch.name)
    if thread.current_branch not in seen:
        raise InvalidInput(
            f"the current branch {thread.current_branch!r} is not among the thread's branches",
            field="thread.current_branch",
        )
    return branches


def check_entry(data: Mapping[str, Any]) -> Entry:
    """The ``entry`` of an entry line, checked as ``entries.add`` checks a message."""
    entry = _dump.decode(Entry, _member(data, "entry"))
    v.check_id(entry.id, "entry.id")
    v.check_id(entry.thread_id, "entry.thread_id")
    v.check_id(entry.branch, "entry.branch")
    v.check_limit(entry.position, "entry.position", allow_none=False)
    if entry.role not in ROLES:
        raise InvalidInput(
            f"entry.role must be one of {sorted(ROLES)}, got {entry.role!r}", field="entry.role"
        )
    if entry.content is not None:
        v.check_text(entry.content, "entry.content", max_chars=MAX_CONTENT_CHARS)
    if entry.name is not None:
        v.check_text(entry.name, "entry.name", max_chars=v.MAX_LABEL_CHARS)
    for i, call in enumerate(entry.tool_calls):
        v.check_id(call.id, f"entry.tool_calls[{i}].id")
        v.check_text(
            call.name, f"entry.tool_calls[{i}].name", max_chars=v.MAX_LABEL_CHARS, allow_empty=False
        )
        v.check_text(
            call.arguments, f"entry.tool_calls[{i}].arguments", max_chars=MAX_CONTENT_CHARS
        )
    v.check_optional_id(entry.tool_call_id, "entry.tool_call_id")
    if entry.role == "tool" and entry.tool_call_id is None:
        raise InvalidInput("a tool entry needs its tool_call_id", field="entry.tool_call_id")
    entry.metadata = _json(entry.metadata, "entry.metadata")
    entry.state = _json(entry.state, "entry.state")
    entry.extra = _json(entry.extra, "entry.extra")
    if entry.item is not None:
        entry.item = _json(entry.item, "entry.item")
    v.check_limit(entry.token_count, "entry.token_count", allow_none=False)
    v.check_time(entry.created_at, "entry.created_at")
    key = entry.idempotency_key
    if key is not None:
        # the caller's key, or ``key + "\x1f" + str(i)`` for member i >= 1 of a batch
        base, sep, member = key.partition("\x1f") if isinstance(key, str) else (key, "", "")
        v.check_id(base, "entry.idempotency_key")
        if sep and not (member.isdigit() and member.isascii() and int(member) >= 1):
            raise InvalidInput(
                "entry.idempotency_key is neither a key nor a batch member's key",
                field="entry.idempotency_key",
            )
    return entry


# -- records ---------------------------------------------------------------------------

_Check = Callable[[object, str], object]


def _opt(check: _Check) -> _Check:
    return lambda value, field: None if value is None else check(value, field)


def _iso(value: object, field: str) -> datetime:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be an ISO 8601 time", field=field)
    try:
        when = datetime.fromisoformat(value)
    except ValueError as error:
        raise InvalidInput(f"{field} is not an ISO 8601 time: {value!r}", field=field) from error
    return v.check_time(when, field)


def _source(value: object, field: str) -> str:
    if value not in _SOURCES:
        raise InvalidInput(f"{field} must be one of {list(_SOURCES)}, got {value!r}", field=field)
    return str(value)


def _provenance(value: object, field: str) -> object:
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be an object of id lists", field=field)
    for key, ids in value.items():
        _ids(ids if isinstance(ids, list) else 0, field)
        v.check_text(key, field)
    return value


def _id(value: object, field: str) -> str:
    return v.check_id(value, field)


def _version(value: object, field: str) -> int | None:
    number = v.check_limit(value, field)
    if number == 0:
        raise InvalidInput(f"{field} must be at least 1", field=field)
    return number


def _observations(value: object, field: str) -> object:
    return _texts(value, field, MAX_CONTENT_CHARS)


_FACT: dict[str, tuple[_Check, bool]] = {
    "category": (lambda x, f: _check_optional_text(x, f), False),
    "confidence": (lambda x, f: _check_confidence(x), False),
    "source": (lambda x, f: _check_optional_text(x, f), False),
    "metadata": (_opt(_json), False),
    "source_entries": (_ids, False),
    "version": (_version, False),
    "fact_id": (_opt(_id), False),
    "created_at": (_opt(_iso), False),
}
_RELATION: dict[str, tuple[_Check, bool]] = {
    "source_id": (_id, True),
    "target_id": (_id, True),
    "type": (_label, True),
    "label": (_opt(_label), False),
    "weight": (_opt(_weight), False),
    "bidirectional": (_opt(v.check_bool), False),
    "properties": (_opt(_json), False),
    "confidence": (_opt(v.check_unit), False),
    "source": (_opt(_source), False),
    "provenance": (_ids, False),
    "valid_at": (_opt(_iso), False),
    "invalid_at": (_opt(_iso), False),
    "expired_at": (_opt(_iso), False),
    "support": (_ids, False),
}
#: Per record kind: the checks of its ``data`` keys (``required``), whether it needs a
#: ``key``, and the library's reader of it (``None``: read only through its keys).
_Kind = tuple[dict[str, tuple[_Check, bool]], bool, Callable[[Record], object] | None]
_KINDS: dict[str, _Kind] = {
    "fact": (_FACT, False, fact_from_record),
    "fact_version": (_FACT, False, fact_from_record),
    "fact_source": ({"fact_id": (_id, True)}, True, None),
    "core_fact": ({}, True, None),
    "core_fact_history": ({"key": (_id, True)}, True, None),
    "document": ({"metadata": (_opt(_json), False)}, False, document_from_record),
    "graph_entity": (
        {
            "name": (_label, True),
            "type": (_label, True),
            "aliases": (_labels, False),
            "observations": (_observations, False),
            "properties": (_opt(_json), False),
            "confidence": (_opt(v.check_unit), False),
            "source": (_opt(_source), False),
            "obs_provenance": (_opt(_provenance), False),
        },
        False,
        lambda record: (_graph._entity("t", record), _graph._obs_provenance(record)),
    ),
    "graph_ident": ({"entity_id": (_id, True)}, False, None),
    "graph_name": ({"entity_id": (_id, True)}, True, None),
    "graph_out": (_RELATION, True, lambda record: _graph._relation("t", record)),
    "graph_in": (_RELATION, True, lambda record: _graph._relation("t", record)),
    "graph_slot": ({"source_id": (_id, True), "type": (_label, True)}, True, None),
    "graph_source": ({"what": (_label, True), "id": (_id, True)}, True, None),
    "graph_support": ({"inferred_id": (_id, True)}, True, None),
    "graph_ingested": ({"entry_id": (_id, True)}, True, None),
    "working_owner": ({"run_id": (_id, True)}, False, None),
    # a consolidation run, each change it made (what undo restores) and a fact's feedback:
    # read only by memory.consolidation and memory.feedback, which check them there
    "consolidation_run": ({}, False, None),
    "consolidation_change": ({"fact_id": (_id, True)}, False, None),
    # an entity merge of a run (what undo restores) and an interrupted run's plan
    "consolidation_entity_change": ({"entity_id": (_id, True), "into": (_id, True)}, True, None),
    "consolidation_plan": ({}, True, None),
    "fact_feedback": ({}, True, None),
    # an item's importance and last use (memorybank.importance): read only by memory.usage
    "memory_usage": ({"item_kind": (_label, True)}, True, None),
}
assert set(_KINDS) == set(_dump.RECORD_KINDS), "a record kind without its checks"


def check_record(data: Mapping[str, Any]) -> Record:
    """The ``record`` of a record line: its fields by the contract's rules, its ``data`` by
    its kind's (see the module docstring)."""
    record = _dump.decode(Record, _member(data, "record"))
    if record.kind not in _KINDS:
        raise InvalidInput(
            f"record.kind {record.kind!r} is not one a dump carries", field="record.kind"
        )
    keys, needs_key, reader = _KINDS[record.kind]
    v.check_id(record.id, "record.id")
    v.check_optional_id(record.agent_id, "record.agent_id")
    v.check_optional_id(record.user_id, "record.user_id")
    v.check_text(record.content, "record.content", max_chars=MAX_CONTENT_CHARS)
    record.data = _json(record.data, "record.data")
    v.check_time(record.created_at, "record.created_at")
    v.check_time(record.updated_at, "record.updated_at")
    if record.expires_at is not None:
        v.check_time(record.expires_at, "record.expires_at")
    v.check_limit(record.revision, "record.revision", allow_none=False)
    if needs_key:
        v.check_id(record.key, "record.key")
    else:
        v.check_optional_id(record.key, "record.key")
    for name, (check, required) in keys.items():
        field = f"record.data.{name}"
        if name not in record.data:
            if required:
                raise InvalidInput(f"a {record.kind} record needs {field}", field=field)
            continue
        try:
            check(record.data[name], field)
        except InvalidInput as error:
            raise _in("record.data", error) from error
    if reader is not None:
        try:
            reader(record)
        except Exception as error:  # whatever the library's reader cannot read is refused
            raise InvalidInput(
                f"the {record.kind} record cannot be read back: {error!r}", field="record.data"
            ) from error
    return record


def check_vector(data: Mapping[str, Any]) -> list[float] | None:
    """A line's ``vector`` (``None``: none), checked as stored vectors are."""
    vector = data.get("vector")
    return None if vector is None else v.check_vector(vector, "vector")


# -- summaries, snapshots, working memory ----------------------------------------------


def check_summary(data: Mapping[str, Any]) -> Summary:
    """The ``summary`` of a summary line, checked as ``summaries.add`` checks its arguments."""
    summary = _dump.decode(Summary, _member(data, "summary"))
    v.check_id(summary.id, "summary.id")
    v.check_id(summary.agent_id, "summary.agent_id")
    v.check_optional_id(summary.user_id, "summary.user_id")
    v.check_text(summary.content, "summary.content", max_chars=MAX_CONTENT_CHARS, allow_empty=False)
    v.check_time(summary.created_at, "summary.created_at")
    return summary


def _json_text(value: object, field: str) -> str:
    """JSON text as working memory and snapshots hold it (what ``dump_json`` accepts)."""
    text = v.check_text(value, field, max_chars=v.MAX_PAYLOAD_CHARS)
    try:
        parsed = json.loads(text)
    except RecursionError as error:
        raise InvalidInput(f"{field} is nested too deeply", field=field) from error
    except ValueError as error:
        raise InvalidInput(f"{field} is not JSON text ({error})", field=field) from error
    v.dump_json(parsed, field)
    return text


def check_snapshot(data: Mapping[str, Any]) -> tuple[str, str | None, str]:
    """``(run_id, owner, JSON text)`` of a snapshot line."""
    body = _member(data, "snapshot")
    run = v.check_id(body.get("run_id"), "snapshot.run_id")
    owner = v.check_optional_id(body.get("user_id"), "snapshot.user_id")
    return run, owner, _json_text(body.get("value"), "snapshot.value")


def check_working(data: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """``(run_id, {key: JSON text})`` of a working line."""
    body = _member(data, "working")
    run = v.check_id(body.get("run_id"), "working.run_id")
    items = body.get("items")
    if not isinstance(items, dict):
        raise InvalidInput("working.items must map keys to JSON text", field="working.items")
    for key, value in items.items():
        v.check_id(key, "working.items")
        _json_text(value, f"working.items[{key!r}]")
    return run, items
