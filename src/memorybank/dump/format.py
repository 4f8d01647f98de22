"""The dump format of ``memorybank export``/``import``: JSON lines, I/O-free.

The header, the line types and the trailer are described in docs/dump-format.md. Records
are built from their dataclass fields, so a field added to ``Entry`` or ``Record`` flows
through unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from memorybank.errors import InvalidInput
from memorybank.rules.kinds import RECORD_KINDS

__all__ = [
    "FORMAT",
    "LINE_TYPES",
    "RECORD_KINDS",
    "TRAILER",
    "VERSION",
    "Checksum",
    "decode",
    "dumps",
    "encode",
    "header",
    "parse_header",
    "trailer",
]

#: The ``format`` of a dump's header line.
FORMAT = "memorybank-dump"
#: The format version this code writes and the newest it reads (2 added ``snapshot`` and
#: ``working`` lines and the header's ``unlisted``; 3 the ``end`` trailer; a version-1 or
#: version-2 dump reads as before, without the trailer's checks).
VERSION = 3
#: The first version whose dumps end with a trailer.
TRAILER_VERSION = 3
#: The ``type`` of the trailer line.
TRAILER = "end"
#: The line types of a dump's body, in the order export writes them (every kind of data the
#: store contract holds travels as one of these; ``tests/dump/test_portability.py`` checks it).
LINE_TYPES = ("thread", "entry", "record", "summary", "snapshot", "working")

T = TypeVar("T")


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses by field, datetimes ISO, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    return value


def dumps(value: Any) -> str:
    """One JSON line (no newline) for ``value``; non-ASCII text kept as is."""
    return json.dumps(encode(value), ensure_ascii=False, separators=(",", ":"))


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _decode_value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _decode_value(inner[0], value) if len(inner) == 1 else value
    if hint is datetime:
        return datetime.fromisoformat(value)
    if origin is tuple and args:
        return tuple(_decode_value(args[0], item) for item in value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return decode(hint, value)
    return value


def decode(cls: type[T], data: Any) -> T:
    """Build dataclass ``cls`` from ``encode``'s output; ``InvalidInput`` when malformed."""
    if not isinstance(data, dict):
        raise InvalidInput(f"a {cls.__name__} must be a JSON object", field=cls.__name__)
    hints = _hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    try:
        values = {
            name: _decode_value(hints[name], value) for name, value in data.items() if name in known
        }
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"bad {cls.__name__} in dump: {error}", field=cls.__name__) from error


def header(
    tenant: str,
    created_at: datetime,
    *,
    vector_model: str | None = None,
    unlisted: Sequence[str] = (),
) -> dict[str, Any]:
    """The first line of a dump (``vector_model``: the model of the vectors it carries;
    ``unlisted``: what the source could not enumerate, see the module docstring)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "tenant": tenant,
        "created_at": created_at.isoformat(),
        "kinds": list(RECORD_KINDS),
        "vector_model": vector_model,
        "unlisted": list(unlisted),
    }


def parse_header(line: str) -> dict[str, Any]:
    """Check a dump's first line; ``InvalidInput(field="header")`` if it is not one we read."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as error:
        raise InvalidInput("the dump's first line is not JSON", field="header") from error
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidInput(f"not a {FORMAT} (first line has no format header)", field="header")
    version = data.get("version")
    if not isinstance(version, int) or version < 1 or version > VERSION:
        raise InvalidInput(
            f"dump format version {version!r} is not supported (reads 1..{VERSION})",
            field="header",
        )
    return data


class Checksum:
    """The trailer's ``counts`` and ``sha256`` over a dump's lines, fed one line at a time."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.counts: dict[str, int] = dict.fromkeys(LINE_TYPES, 0)

    def add(self, line: str, kind: str | None = None) -> None:
        """Feed one line (without its newline); ``kind``: its type, counted (``None``: the
        header)."""
        self._hash.update(line.encode("utf-8", "surrogatepass"))
        self._hash.update(b"\n")
        if kind is not None:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def hexdigest(self) -> str:
        """The SHA-256 of the lines fed so far."""
        return self._hash.hexdigest()


def trailer(checksum: Checksum) -> dict[str, Any]:
    """The last line of a dump: counts per line type and the checksum of the lines before."""
    return {"type": TRAILER, "counts": dict(checksum.counts), "sha256": checksum.hexdigest()}
