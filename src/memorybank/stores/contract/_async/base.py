"""``AsyncStoreBase``: what every part of the store contract shares (lifecycle, capabilities).

Every capability ABC of the contract (``AsyncThreadStore``, ``AsyncEntryStore``, ...)
derives from it; ``AsyncStore`` composes them all. The guarantees every method keeps
(scope, ids, ordering, atomicity, idempotency, values, errors) are stated once, in
``memorybank.stores.contract._async.store``.
"""

from __future__ import annotations

import abc

__all__ = ["AsyncStoreBase"]


class AsyncStoreBase(abc.ABC):
    """Lifecycle and capabilities: the part of the contract every store has."""

    #: The optional features this store has: ``Capability`` members (a ``StrEnum``, so
    #: ``"ttl" in store.capabilities`` works too), or strings of a store's own. The
    #: conformance suite skips the cases marked ``requires(X)`` unless ``X`` is here, and
    #: checks that a store claims each override group (``OVERRIDES``) it overrides.
    capabilities: frozenset[str] = frozenset()

    # -- lifecycle -------------------------------------------------------------

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the store owns (connections, pools, threads).

        Idempotent. Anything a caller passed in (a client, a pool) is left open.
        Later calls raise ``StoreClosed``.
        """

    # -- space -----------------------------------------------------------------

    async def reclaim_space(self) -> None:
        """Give the space of deleted rows back to the file system, where the store holds it.

        Called by ``memory.prune`` after it deleted something. An embedded
        store shrinks its file (SQLite: ``VACUUM`` and a WAL truncation); a
        server store does nothing here (the server reuses freed pages; its
        vacuum, ``OPTIMIZE TABLE`` or AOF rewrite is the operator's), which is
        this default. Never changes what any read returns.
        """
        return None  # a server store has nothing to give back from the client side
