"""``Backlog``: a background runner's counts (exported by ``memorybank.extract``).

Apart from ``memorybank.runtime.concurrency`` (which still exports it) so opening a store
does not build its dataclass: a process that only reads history never needs it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Backlog"]


@dataclass(frozen=True, slots=True)
class Backlog:
    """What a background runner holds and has done, in units of work (entries).

    ``dropped``: refused at submit (backlog full, or after close); ``cancelled``:
    queued or running when close gave up waiting; ``last_error``: the newest
    failure, as ``"ErrorType: message"``.
    """

    queued: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0
    dropped: int = 0
    cancelled: int = 0
    last_error: str | None = None
