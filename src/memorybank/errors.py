"""The exception tree. Every error memorybank raises is one of these.

::

    MemoryBankError                 .code
    ├── ConfigurationError          "configuration_error"   bad URL, missing extra, bad option,
    │                                                       login rejected (password, unknown db)
    ├── InvalidInput                "invalid_input"         bad argument; nothing was written
    │   └── OutOfScope              "out_of_scope"          a scoped handle's call named another
    │                                                       user or agent than its own
    ├── NotFound                    "not_found"             thread/entry/branch/record absent
    ├── Conflict                    "conflict"              id already taken, concurrent change
    │   ├── HistoryDiverged         "history_diverged"      a framework adapter's save() was
    │   │                                                   given messages the stored history
    │   │                                                   does not start (nothing written)
    │   └── LeaseLost               "lease_lost"            a background worker's claim on a
    │                                                       job ran out and another took it
    ├── ThreadForbidden             "thread_forbidden"      thread owned by another user
    ├── CursorExpired               "cursor_expired"        a change-feed cursor older than
    │                                                       the events kept (HTTP 410)
    ├── ExtractionError             "extraction_error"      an extraction model's answer was
    │                                                       unusable (not JSON, wrong shape)
    └── StoreError                  "store_error"           the backend failed
        ├── StoreUnavailable        "store_unavailable"     server down, timeout, pool exhausted
        └── StoreClosed             "store_closed"          used after close()

Driver exceptions (sqlite3, psycopg, redis, ...) never reach callers: stores
translate them at their boundary and chain the original as ``__cause__``.
``InvalidInput`` is also a ``ValueError`` and ``NotFound`` a ``LookupError`` so
generic handlers keep working.

A server that rejects the store's login (bad password, unknown user, role or
database) raises ``ConfigurationError`` at once: retrying cannot help. A server
that is down or unreachable raises ``StoreUnavailable``: retrying later may.
memorybank logs through the ``memorybank`` logger (a ``NullHandler`` is
attached, so nothing reaches stderr unless the application configures logging).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigurationError",
    "Conflict",
    "CursorExpired",
    "ExtractionError",
    "HistoryDiverged",
    "InvalidInput",
    "LeaseLost",
    "MemoryBankError",
    "NotFound",
    "OutOfScope",
    "StoreClosed",
    "StoreError",
    "StoreUnavailable",
    "ThreadForbidden",
]


class MemoryBankError(Exception):
    """Base of every memorybank error. ``code`` is a stable machine-readable string."""

    code: str = "memorybank_error"


class ConfigurationError(MemoryBankError):
    """The library is configured wrongly (bad URL, missing optional extra, bad option).

    Also raised when a server rejects the store's login (bad credentials, unknown
    database, role or user): the driver's error is ``__cause__``.
    """

    code = "configuration_error"


class InvalidInput(MemoryBankError, ValueError):
    """An argument is invalid. ``field`` names it (never empty). Nothing was written.

    ``field`` is the parameter's name (``"content"``, ``"metadata"``,
    ``"tool_calls"``, ``"created_at"``, ...); the message says what is wrong
    with it.
    """

    code = "invalid_input"

    def __init__(self, message: str, *, field: str) -> None:
        if not isinstance(field, str) or not field:
            raise TypeError("InvalidInput needs the name of the offending field")
        super().__init__(message)
        self.field: str = field

    def __reduce__(self) -> tuple[Any, ...]:
        return (_invalid_input, (str(self), self.field))


def _invalid_input(message: str, field: str) -> InvalidInput:
    """Rebuild a pickled ``InvalidInput`` (its ``field`` is keyword-only)."""
    return InvalidInput(message, field=field)


class OutOfScope(InvalidInput):
    """A call on a scoped handle (``memory.scoped(user_id=...)``, or a server request with
    ``X-User-Id``) named another ``user_id``/``agent_id`` than the handle's own: acting
    for another principal is refused, never obeyed. Nothing was written. Over REST, 403
    ``out_of_scope``.
    """

    code = "out_of_scope"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_out_of_scope, (str(self), self.field))


def _out_of_scope(message: str, field: str) -> OutOfScope:
    """Rebuild a pickled ``OutOfScope``."""
    return OutOfScope(message, field=field)


class NotFound(MemoryBankError, LookupError):
    """The thread, entry, branch or record does not exist (in this tenant)."""

    code = "not_found"


class Conflict(MemoryBankError):
    """The write conflicts with existing data (id already taken, concurrent change)."""

    code = "conflict"


class LeaseLost(Conflict):
    """A background worker's claim on a job record (``memorybank.stores.contract.leases``)
    is no longer its own: the lease ran out and another worker took the record, or the
    job was finished and removed. The worker stops that job's work and writes nothing
    of it; the new holder does it."""

    code = "lease_lost"


class HistoryDiverged(Conflict):
    """A framework adapter's ``save(messages)`` was given messages that do not start with
    the stored history (``result.new_messages()`` where the whole history was meant, or
    a history rewritten elsewhere). Nothing was written.

    ``save`` never deletes unless asked: add new messages with ``append``, or pass
    ``replace=True`` to make the stored history exactly the given messages.
    ``stored`` is how many messages the thread holds, ``shared`` how many of them the
    given messages start with.
    """

    code = "history_diverged"

    def __init__(self, message: str, *, stored: int, shared: int) -> None:
        super().__init__(message)
        self.stored: int = stored
        self.shared: int = shared

    def __reduce__(self) -> tuple[Any, ...]:
        return (_history_diverged, (str(self), self.stored, self.shared))


def _history_diverged(message: str, stored: int, shared: int) -> HistoryDiverged:
    """Rebuild a pickled ``HistoryDiverged`` (its counts are keyword-only)."""
    return HistoryDiverged(message, stored=stored, shared=shared)


class ThreadForbidden(MemoryBankError):
    """The thread belongs to another user. The message reveals nothing about the thread."""

    code = "thread_forbidden"

    def __init__(self, message: str = "thread access forbidden") -> None:
        super().__init__(message)


class CursorExpired(MemoryBankError):
    """A change-feed cursor (``memory.events.list(after=...)``) points before the oldest
    event still kept: events between it and the oldest kept one were pruned (older than
    the feed's keep time), or the cursor belongs to another tenant's or an erased feed.
    Reading on would skip changes, so nothing is returned: the reader resynchronises
    (reads the state afresh) and starts again with ``after=None``. Over REST, 410
    ``cursor_expired``.
    """

    code = "cursor_expired"


class ExtractionError(MemoryBankError):
    """An extractor's model answered, but unusably: not JSON, the wrong shape, a refusal,
    or an answer cut off at the token limit. Nothing was written. Retrying the same
    text with the same model rarely helps; an unreachable endpoint raises
    ``StoreUnavailable`` instead."""

    code = "extraction_error"


class StoreError(MemoryBankError):
    """The storage backend failed. The driver's exception is ``__cause__``."""

    code = "store_error"


class StoreUnavailable(StoreError):
    """The backend cannot be reached or did not answer within the timeout."""

    code = "store_unavailable"


class StoreClosed(StoreError):
    """The store (or the Memory using it) was closed."""

    code = "store_closed"
