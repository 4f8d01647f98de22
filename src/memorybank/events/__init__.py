"""The change feed: every change to a tenant's memory as an ordered list of ``Event``.

See ``memorybank.events.types`` and docs/events.md.
"""

from memorybank.events.types import (
    DOCUMENT_ADDED,
    DOCUMENT_DELETED,
    ENTRY_ADDED,
    ENTRY_DELETED,
    ENTRY_UPDATED,
    EVENT_KINDS,
    FACT_ADDED,
    FACT_DELETED,
    FACT_SUPERSEDED,
    GRAPH_CHANGED,
    THREAD_CREATED,
    THREAD_DELETED,
    THREAD_UPDATED,
    USER_FORGOTTEN,
    CursorExpired,
    Event,
)

__all__ = [
    "DOCUMENT_ADDED",
    "DOCUMENT_DELETED",
    "ENTRY_ADDED",
    "ENTRY_DELETED",
    "ENTRY_UPDATED",
    "EVENT_KINDS",
    "FACT_ADDED",
    "FACT_DELETED",
    "FACT_SUPERSEDED",
    "GRAPH_CHANGED",
    "THREAD_CREATED",
    "THREAD_DELETED",
    "THREAD_UPDATED",
    "USER_FORGOTTEN",
    "CursorExpired",
    "Event",
]
