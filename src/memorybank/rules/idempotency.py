"""Idempotency keys: the keys entries are stored under, and the payload fingerprint.

I/O-free and written once, above the stores: ``AsyncMemory`` turns the caller's
key into one stored key per message and computes one fingerprint per request;
a store only compares strings (see ``entry_append`` in the store contract).

Stored keys. ``add(message, idempotency_key=k)`` stores the message under
``k`` itself, and so does message 0 of ``add_many(messages, idempotency_key=k)``;
message ``i >= 1`` of the batch is stored under ``k + "\\x1f" + str(i)``. A key
given by a caller is printable (``_validate.check_id``), and U+001F (unit
separator) is not, so a stored key holding it is always a batch member, whose
caller's key is the text before the separator and whose index is the decimal
after it: no key given to ``add`` can equal a batch member's key, and two
different ``(key, index)`` pairs never share a stored key. ``add(m, key=k)`` is
exactly ``add_many([m], key=k)``: one key names one request, whichever verb
made it.

Fingerprint. The SHA-256 (hex) of a canonical JSON array holding, for every
message of the request in order, its ``role``, ``content``, ``name``,
``tool_calls`` (``[id, name, arguments]`` each), ``tool_call_id``,
``metadata`` and ``state``, then ``extra`` and ``item`` (the provider payload
kept verbatim) when either is set, as validated. Ids, ``created_at`` and
``token_count`` are left out: a retry gets a new id and time, and may count
tokens differently. Every message of a request carries the request's
fingerprint, so a retried batch with one message more, one less, or any
message changed differs on every member it shares with the stored batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.errors import Conflict

if TYPE_CHECKING:
    from typing import Any, Protocol, TypeVar

    from _typeshed import DataclassInstance

    from memorybank.records import ToolCall

    class Payload(DataclassInstance, Protocol):
        """An entry to append as the fingerprint reads it (``NewEntry`` is one)."""

        @property
        def role(self) -> str: ...
        @property
        def content(self) -> str | None: ...
        @property
        def name(self) -> str | None: ...
        @property
        def tool_calls(self) -> tuple[ToolCall, ...]: ...
        @property
        def tool_call_id(self) -> str | None: ...
        @property
        def metadata(self) -> dict[str, Any]: ...
        @property
        def state(self) -> dict[str, Any]: ...
        @property
        def extra(self) -> dict[str, Any]: ...
        @property
        def item(self) -> dict[str, Any] | None: ...

    P = TypeVar("P", bound=Payload)

__all__ = ["SEPARATOR", "clash", "fingerprint", "key_reused", "keyed"]

#: Joins a batch's key and a message's index in a stored key; never in a caller's key.
SEPARATOR = "\x1f"


def fingerprint(entries: Sequence[Payload]) -> str:
    """The SHA-256 hex digest of the payload of ``entries`` (see the module docstring)."""
    payload = [
        [
            e.role,
            e.content,
            e.name,
            [[c.id, c.name, c.arguments] for c in e.tool_calls],
            e.tool_call_id,
            e.metadata,
            e.state,
            # only when present: a plain message keeps the fingerprint it had before
            # payloads existed, so a retry across an upgrade still matches
            *([e.extra, e.item] if e.extra or e.item is not None else []),
        ]
        for e in entries
    ]
    # ASCII output: a lone surrogate (if validation ever lets one through) cannot fail encoding.
    import json  # on first use: reading history does not need it (cold start)

    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    import hashlib  # on first use: a read-only process never needs it (cold start)

    return hashlib.sha256(text.encode("ascii")).hexdigest()


def keyed(key: str | None, entries: Sequence[P]) -> list[P]:
    """``entries`` of one request with their stored keys and the request's fingerprint.

    ``key`` is the caller's (already validated) key; ``None`` returns the entries unchanged.
    """
    if key is None:
        return list(entries)
    digest = fingerprint(entries)
    import dataclasses  # on first use, not with every Memory (cold start)

    return [
        dataclasses.replace(
            entry,
            idempotency_key=key if index == 0 else f"{key}{SEPARATOR}{index}",
            fingerprint=digest,
        )
        for index, entry in enumerate(entries)
    ]


def clash(stored: str | None, new: str | None) -> bool:
    """Whether a stored entry's fingerprint refuses a new one (both known, and different)."""
    return stored is not None and new is not None and stored != new


def key_reused(stored_key: str | None) -> Conflict:
    """The ``Conflict`` a store raises when a key comes back with another payload."""
    key = (stored_key or "").split(SEPARATOR, 1)[0]
    return Conflict(f"idempotency key {key!r} was already used with a different payload")
