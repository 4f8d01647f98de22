"""I/O-free encoding of the Redis store: key escaping, thread/entry/record values,
options and the translation of driver errors (shared by the async store and its
generated sync twin)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.exceptions

from memorybank.errors import (
    ConfigurationError,
    Conflict,
    MemoryBankError,
    NotFound,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.records import Entry, Thread
from memorybank.rules.entry_ids import id_taken
from memorybank.rules.idempotency import key_reused
from memorybank.stores.contract.items import NewEntry, Record, RecordGuard
from memorybank.stores.contract.types import Unset
from memorybank.stores.sql.common import (
    dump,
    from_us,
    page_row_to_entry,
    row_to_thread,
    to_us,
    tool_calls_value,
)

#: Chunk size of pipelines and of the argument lists sent to one script.
CHUNK = 500
T = TypeVar("T")


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``items`` in slices of ``size`` (a pipeline's commands, a script's arguments)."""
    return (items[start : start + size] for start in range(0, len(items), size))


THREAD_FIELDS = ("id", "ten", "u", "a", "ti", "m", "s", "c", "up", "cb")


def esc(value: str) -> str:
    """Escape an id for use inside a key (same rule as the Lua ``esc``)."""
    return value.replace("%", "%25").replace(":", "%3A").replace("{", "%7B").replace("}", "%7D")


def unesc(value: str) -> str:
    """The id ``esc`` escaped."""
    return value.replace("%3A", ":").replace("%7B", "{").replace("%7D", "}").replace("%25", "%")


def as_str(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def opt_str(value: bytes | str | None) -> str | None:
    return None if value is None else as_str(value)


def decode_thread(row: Sequence[Any] | bytes | str) -> Thread:
    """A ``Thread`` from the 10 values of ``THREAD_FIELDS``, or from the scripts'
    ``cjson.encode`` of them (absent fields are ``false`` there)."""
    fields: Sequence[Any] = json.loads(row) if isinstance(row, bytes | str) else row
    values: list[Any] = [None if v is False else opt_str(v) for v in fields]
    values[7], values[8] = int(values[7]), int(values[8])
    return row_to_thread(values)


def entry_json(new: NewEntry) -> str:
    calls = tool_calls_value(new.tool_calls, new.extra, new.item)
    return dump(
        [
            to_us(new.created_at),
            new.id,
            new.role,
            new.content,
            new.name,
            calls,
            new.tool_call_id,
            new.metadata,
            new.state,
            new.token_count,
            new.idempotency_key,
            # the fingerprint goes last, and only with a key: unkeyed members stay as they were
            *([new.fingerprint] if new.idempotency_key and new.fingerprint else []),
        ]
    )


def decode_entry(member: bytes | str, thread_id: str, branch: str) -> Entry:
    """An ``Entry`` from a stored member ``[position, created, id, role, ...]`` (the SQL
    stores' page row, reordered: faster than building it by keywords)."""
    d = json.loads(member)
    return page_row_to_entry((d[2], d[0], *d[3:11], d[1], d[11]), thread_id, branch)


#: The error of each failing status a thread script replies (``raise_status``), made from
#: the reply's items after the status and the thread's id.
_STATUS: dict[str, Callable[[list[str], str], Exception]] = {
    "NOTFOUND": lambda _, thread_id: NotFound(f"thread {thread_id!r} not found"),
    "NOBRANCH": lambda a, _: NotFound(f"branch {a[0]!r} not found"),
    "EXISTS": lambda a, _: Conflict(f"branch {a[0]!r} already exists"),
    "NOENTRY": lambda a, _: NotFound(f"entry {a[0]!r} not found on branch {a[1]!r}"),
    "FORBIDDEN": lambda *_: ThreadForbidden(),
    "CONFLICT": lambda a, _: key_reused(a[0]),  # the key reused
    "TAKEN": lambda a, _: id_taken(a[0], a[1]),  # the id, the branch
}


def raise_status(out: Sequence[Any], thread_id: str) -> None:
    """Raise the error a thread script's status reply ``out`` reports (``OK``: none)."""
    error = _STATUS.get(as_str(out[0]))
    if error is not None:
        raise error([as_str(v) for v in out[1:]], thread_id)


def glob_escape(text: str) -> str:
    """``text`` matched literally in a SCAN ``MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def who(value: str | Unset | None) -> str:
    """An agent/user id for the scripts: ``"-"`` none, ``"*"`` any, ``"=<id>"`` that one."""
    if isinstance(value, Unset):
        return "*"
    return "-" if value is None else "=" + value


def record_json(record: Record) -> str:
    return dump(
        [
            record.agent_id,
            record.user_id,
            record.key,
            record.content,
            record.data,
            to_us(record.created_at),
            to_us(record.updated_at),
            None if record.expires_at is None else to_us(record.expires_at),
            record.revision,
        ]
    )


def guard_args(guard: RecordGuard | None) -> list[Any]:
    """A guard for the record scripts: ``(kind, id, revision)``, ``""`` for none/absent."""
    if guard is None:
        return ["", "", ""]
    return [guard.kind, guard.id, "" if guard.revision is None else guard.revision]


def decode_record(kind: str, record_id: str, data: list[Any]) -> Record:
    """A ``Record`` from its decoded JSON ``[agent, user, key, content, data, ...]``."""
    return Record(
        kind=kind,
        id=record_id,
        agent_id=data[0],
        user_id=data[1],
        content=data[3],
        data=data[4],
        created_at=from_us(data[5]),
        updated_at=from_us(data[6]),
        key=data[2],
        expires_at=None if data[7] is None else from_us(data[7]),
        revision=data[8] if len(data) > 8 else 0,
    )


def ttl_ms(seconds: float | None, name: str) -> int:
    if seconds is None:
        return 0
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise ConfigurationError(f"{name} must be a positive number of seconds or None")
    return max(1, round(seconds * 1000))


_URL_OPTIONS = ("prefix", "ttl", "working_ttl", "snapshot_ttl", "timeout", "max_connections")


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """The URL without memorybank's own query options, and those options."""
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        (ours.__setitem__(key, value) if key in _URL_OPTIONS else theirs.append((key, value)))
    return urlunsplit(parts._replace(query=urlencode(theirs))), ours


@contextmanager
def translated(closed: bool) -> Iterator[None]:
    """Raise ``StoreClosed`` if closed; turn driver errors into memorybank errors."""
    if closed:
        raise StoreClosed("the store is closed")
    try:
        yield
    except MemoryBankError:
        raise
    except (
        redis.exceptions.AuthenticationError,
        redis.exceptions.AuthenticationWrongNumberOfArgsError,
        redis.exceptions.AuthorizationError,
    ) as error:
        # Bad or missing credentials: retrying cannot help.
        raise ConfigurationError(f"redis refused the connection: {error}") from error
    except (
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        redis.exceptions.ClusterDownError,
        redis.exceptions.TryAgainError,
    ) as error:
        raise StoreUnavailable(f"redis unavailable: {error}") from error
    except redis.exceptions.RedisError as error:
        raise StoreError(f"redis error: {error}") from error
    except redis.exceptions.SlotNotCoveredError as error:
        raise StoreUnavailable(f"redis cluster unavailable: {error}") from error
    except redis.exceptions.RedisClusterException as error:
        # Not a RedisError: the cluster client's own failures (no reachable node, ...).
        if "connect" in str(error).lower():
            raise StoreUnavailable(f"redis cluster unavailable: {error}") from error
        raise StoreError(f"redis cluster error: {error}") from error
    except (TimeoutError, OSError) as error:
        raise StoreUnavailable(f"redis unavailable: {error}") from error
