"""``Capability``: the optional features a store may claim in ``capabilities``.

A ``StrEnum``: each member is its string (``Capability.TTL == "ttl"``, same hash), so a
check written against the old free strings (``"pgvector" in store.capabilities``) keeps
working, and a third-party store may still claim a string of its own.

The conformance suite reads them: a case marked ``@pytest.mark.requires(Capability.X)``
is skipped, with ``Capability.X`` named in the reason, on a store that does not claim
``X``; every other case runs on every store. ``RUN_STATE``, ``TEXT_SEARCH`` and
``VECTOR_SEARCH`` say which groups of the contract's derived methods (``OVERRIDES``) a
store answers itself; a store that claims none of them runs the derived paths in every
case, so nothing is skipped.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["OVERRIDES", "Capability"]


class Capability(StrEnum):
    """An optional feature of a store (see the module docstring)."""

    #: What a write returned survives closing the store, reopening it and a crash of
    #: the process (SQLite, PostgreSQL, MySQL, Redis with persistence on).
    DURABLE = "durable"
    #: The data lives in this process and is gone when the store closes (in-memory).
    VOLATILE = "volatile"
    #: Several processes may open the same store at once, every guarantee holding
    #: across them (SQLite files and the server stores).
    MULTI_PROCESS = "multi_process"
    #: Every call crosses the network to a ``memorybank serve`` (the HTTP store); the
    #: other capabilities are the server's store's.
    REMOTE = "remote"
    #: The store expires data by itself after a configured time (Redis ``ttl``,
    #: ``working_ttl``, ``snapshot_ttl``).
    TTL = "ttl"
    #: Keyword search by SQLite FTS5 (``text_search`` ranks by bm25).
    FTS5 = "fts5"
    #: Vectors in PostgreSQL's pgvector, searched in SQL (known after first use).
    PGVECTOR = "pgvector"
    #: ``vector_search`` is answered by an external vector index (``memorybank.vector_index``)
    #: and re-checked in the store.
    VECTOR_INDEX = "vector_index"
    #: The store answers working memory, snapshots and summaries itself (tables or keys of
    #: its own) instead of the records the contract derives them from.
    RUN_STATE = "run_state"
    #: The store answers ``text_search`` from a keyword index of its own instead of the
    #: contract's derived scan.
    TEXT_SEARCH = "text_search"
    #: The store keeps vectors itself and answers ``vector_put``, ``vector_search`` and
    #: ``vector_get`` instead of the records the contract derives them from.
    VECTOR_SEARCH = "vector_search"
    #: ``snapshot(tenant)`` yields a view whose reads all see one point in time (a read
    #: transaction of the store's own); without it the contract's default yields the store
    #: itself, each read seeing its own moment (``memorybank.dump`` then re-reads until stable).
    SNAPSHOT = "snapshot"
    #: ``atomic(tenant)`` gives a view of the store whose writes commit together or not
    #: at all, a crash of the process included (``memorybank import`` writes a dump so).
    ATOMIC = "atomic"
    #: The store keeps a change feed (``events_enable``, ``events_list``, ...): every change
    #: recorded in the same transaction as the change, in commit order per tenant.
    EVENTS = "events"


#: The methods each override capability stands for: a store that defines any of a group's
#: methods itself defines them all and claims the capability (``memorybank.testing`` checks
#: it), since a group's methods share one representation (derived records, or the store's own).
OVERRIDES: Final[dict[Capability, tuple[str, ...]]] = {
    Capability.RUN_STATE: (
        "working_set", "working_get", "working_delete", "working_items", "working_clear",
        "working_runs", "snapshot_save", "snapshot_load", "snapshot_delete", "snapshot_runs",
        "summary_add", "summary_list", "summary_agents",
    ),
    Capability.TEXT_SEARCH: ("text_search",),
    Capability.VECTOR_SEARCH: ("vector_put", "vector_search", "vector_get"),
}  # fmt: skip
