"""What a framework adapter stored with an entry, read back (one rule for every adapter)."""

from __future__ import annotations

from typing import Any

from memorybank.errors import InvalidInput
from memorybank.records import Entry

__all__ = ["stored_payload"]


def stored_payload(entry: Entry, key: str, writer: str, field: str) -> dict[str, Any]:
    """The framework message ``writer`` kept in ``entry.state[key]``; an entry written some
    other way (no such payload) is refused with ``InvalidInput`` naming ``field``, never
    silently dropped or guessed at."""
    payload = entry.state.get(key)
    if not isinstance(payload, dict):
        raise InvalidInput(
            f"entry {entry.id!r} of the thread was not written by {writer}", field=field
        )
    return payload
