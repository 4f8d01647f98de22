"""``Capability``: the optional features a store may claim in ``capabilities``.

A ``StrEnum``: each member is its string (``Capability.TTL == "ttl"``, same hash), so a
check written against the old free strings (``"pgvector" in store.capabilities``) keeps
working, and a third-party store may still claim a string of its own.

The conformance suite reads them: a case marked ``@pytest.mark.requires(Capability.X)``
is skipped, with ``Capability.X`` named in the reason, on a store that does not claim
``X``; every other case runs on every store.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Capability"]


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
    #: ``working_runs`` and ``snapshot_runs`` list run ids (they return lists, never
    #: ``None``).
    RUN_LISTING = "run_listing"
    #: ``summary_agents`` lists the agents that have summaries (a list, never ``None``).
    SUMMARY_AGENT_LISTING = "summary_agent_listing"
