"""A search's reads as a program of steps (``AsyncStore.search_program``).

A hybrid search reads its candidates in several dependent steps (the vector hits, the
hits' threads and rows, the windows around the best of them, the vectors and records
still missing, the k entries it returns), with ranking between them. Written as a
generator that yields a ``Step`` and is sent its result, the same pipeline runs on every
store: the contract's driver awaits each step in turn, and a store that can serve the
reads in one place serves them there (SQLite: the whole program in one snapshot of one
read connection, one hand-off instead of one per step; a step it cannot serve there, an
embedder call, is handed back to the event loop with the rest of the program).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

__all__ = ["Call", "Compute", "Read", "SearchProgram", "Started", "Step", "Wait"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Read:
    """A read of the store by the name of its method: ``store.<name>(*args, **kwargs)``
    (awaited by the async store)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Compute:
    """CPU work (a ranking): off the event loop (``aoffload``), inline on a thread."""

    fn: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class Call:
    """Anything else (an embedder call, the facts' reads): ``fn()``, awaited by the
    async store, always on the event loop."""

    fn: Callable[[], Any]


class Started(Protocol):
    """A call begun before the program (``runtime.concurrency.AsyncBackgroundCall``)."""

    def ended(self) -> bool: ...  # from any thread

    def result(self) -> Any: ...  # once ended, from any thread

    def wait(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Wait:
    """The result of ``call``, begun before the program (the query's embedding, beside
    the keyword search): awaited, or taken at once where it is done already."""

    call: Started


Step: TypeAlias = Read | Compute | Call | Wait
#: A program of steps returning ``T``: each step yielded is sent its result.
SearchProgram: TypeAlias = Generator[Step, Any, T]
