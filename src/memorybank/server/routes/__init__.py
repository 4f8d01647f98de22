"""The REST routes, one module a part of the API; the answers they share are here."""

from __future__ import annotations

from typing import TypeVar

from fastapi import Response

from memorybank.errors import NotFound

__all__ = ["NO_CONTENT", "deleted", "found"]

T = TypeVar("T")

#: The answer of a route that changed something and has nothing to say (204).
NO_CONTENT = Response(status_code=204)


def found(value: T | None, what: str) -> T:
    """``value``, or 404 ``not_found`` naming ``what`` (e.g. ``"fact 'f1'"``) when ``None``."""
    if value is None:
        raise NotFound(f"{what} not found")
    return value


def deleted(done: bool, what: str) -> Response:
    """204 when the delete ``done`` something, else 404 ``not_found`` naming ``what``."""
    if not done:
        raise NotFound(f"{what} not found")
    return NO_CONTENT
