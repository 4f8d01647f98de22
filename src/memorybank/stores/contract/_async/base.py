"""``AsyncStoreBase``: what every part of the store contract shares (lifecycle, capabilities).

Every capability ABC of the contract (``AsyncThreadStore``, ``AsyncEntryStore``, ...)
derives from it; ``AsyncStore`` composes them all. The guarantees every method keeps
(scope, ids, ordering, atomicity, idempotency, values, errors) are stated once, in
``memorybank.stores.contract._async.store``.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable
from typing import Any

from memorybank.stores.contract.renamed import RENAMED

__all__ = ["AsyncStoreBase"]


def _deprecated_alias(old: str, new: str) -> Callable[..., Any]:
    """``old``, kept for one release: warns, then calls the store's ``new``."""

    async def alias(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{type(self).__name__}.{old} is deprecated: call {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return await getattr(self, new)(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated (one release): ``{new}``."
    alias._renamed_to = new  # type: ignore[attr-defined]
    return alias


def _old_override(old: str, new: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """``new`` on a store that implements only ``old`` (written before the rename):
    warns, then calls that implementation."""

    async def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{type(self).__name__} implements {old}, deprecated: rename it {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return await method(self, *args, **kwargs)

    forward.__name__ = forward.__qualname__ = new
    forward.__doc__ = method.__doc__
    return forward


class AsyncStoreBase(abc.ABC):
    """Lifecycle and capabilities: the part of the contract every store has."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass that defines an old method name (``RENAMED``) and not the new one
        gets the new one calling it (before ``abc`` counts what is still abstract)."""
        super().__init_subclass__(**kwargs)
        for old, new in RENAMED.items():
            method = cls.__dict__.get(old)
            if callable(method) and new not in cls.__dict__:
                setattr(cls, new, _old_override(old, new, method))

    #: The optional features this store has: ``Capability`` members (a ``StrEnum``, so
    #: ``"ttl" in store.capabilities`` works too), or strings of a store's own. The
    #: conformance suite skips the cases marked ``requires(X)`` unless ``X`` is here.
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


for _old, _new in RENAMED.items():
    setattr(AsyncStoreBase, _old, _deprecated_alias(_old, _new))
