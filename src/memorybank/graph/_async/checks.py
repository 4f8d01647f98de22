"""Validation of the graph verbs' arguments (``InvalidInput`` on bad input)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from memorybank.errors import InvalidInput
from memorybank.graph.model import Direction
from memorybank.rules import validate as v

_SOURCES = ("extracted", "user", "inferred")


def _label(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    return v.check_text(value, field, max_chars=v.MAX_LABEL_CHARS)


def _optional_label(value: object, field: str) -> str | None:
    return None if value is None else _label(value, field)


def _labels(value: object, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of strings", field=field)
    return tuple(dict.fromkeys(_label(item, field) for item in value))


def _texts(value: object, field: str, max_chars: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of strings", field=field)
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInput(f"{field} must hold non-empty strings", field=field)
        out.append(v.check_text(item, field, max_chars=max_chars))
    return tuple(dict.fromkeys(out))


def _ids(value: object, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list of ids", field=field)
    return tuple(dict.fromkeys(v.check_id(item, field) for item in value))


def _weight(value: object, field: str = "weight") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number", field=field)
    if not 0 < value < 1e300:  # compared as given: a huge int must not reach float()
        raise InvalidInput(f"{field} must be a positive finite number", field=field)
    weight = float(value)
    if not math.isfinite(weight):
        raise InvalidInput(f"{field} must be a positive finite number", field=field)
    return weight


def _optional_number(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1e300 < value < 1e300:
        raise InvalidInput(f"{field} must be a finite number", field=field)
    return float(value)


def _optional_time(value: object, field: str) -> datetime | None:
    return None if value is None else v.check_time(value, field)


def _source(value: object) -> str:
    if value not in _SOURCES:
        raise InvalidInput(f"source must be one of {', '.join(_SOURCES)}", field="source")
    return str(value)


def _direction(value: object) -> Direction:
    if value == "out":
        return "out"
    if value == "in":
        return "in"
    if value == "both":
        return "both"
    raise InvalidInput("direction must be 'out', 'in' or 'both'", field="direction")


def _types(value: object, field: str = "types") -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({_label(value, field)})
    return frozenset(_labels(value, field))


def _depth(value: object, field: str) -> int:
    depth = v.check_limit(value, field, allow_none=False)
    if depth > 64:
        raise InvalidInput(f"{field} must be at most 64", field=field)
    return depth
