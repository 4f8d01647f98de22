"""``EmbeddingStatus``: what ``memory.embedding.status()`` reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memorybank.errors import ConfigurationError
from memorybank.stores.contract._async.leases import DEFAULT_LEASE, lease_from_text

__all__ = [
    "EMBED_ENV",
    "EMBED_LEASE_ENV",
    "EmbedMode",
    "EmbeddingStatus",
    "embed_lease",
    "embed_mode",
]

#: When vectors of new entries and documents are computed: in the write
#: (``"inline"``) or after it, by a worker (``"background"``).
EmbedMode = Literal["inline", "background"]
#: Environment variable naming the server's mode (``memorybank serve --embed``).
EMBED_ENV = "MEMORYBANK_EMBED"
#: Environment variable naming the seconds a background worker holds a journal
#: record (``Memory(embed_lease=...)``; unset: ``DEFAULT_LEASE``).
EMBED_LEASE_ENV = "MEMORYBANK_EMBED_LEASE"


def embed_mode(name: str | None) -> EmbedMode:
    """A mode from configuration text: unset or empty is ``"background"`` (the server's)."""
    key = (name or "background").strip().lower()
    if key == "background":
        return "background"
    if key == "inline":
        return "inline"
    raise ConfigurationError(f"{EMBED_ENV} must be 'background' or 'inline', got {name!r}")


def embed_lease(text: str | None) -> float:
    """A lease length from configuration text: unset or empty is ``DEFAULT_LEASE``."""
    return lease_from_text(text, EMBED_LEASE_ENV, DEFAULT_LEASE)


@dataclass(frozen=True, slots=True)
class EmbeddingStatus:
    """The embedding backlog of one tenant, as this process sees it.

    Attributes:
        mode: ``"inline"`` or ``"background"`` (``Memory(embed=...)``).
        model_id: the embedder's model (``None``: no embedder, nothing is embedded).
        pending: entries and documents queued in this process and not embedded yet
            (``0`` in inline mode). Work resumed from an earlier process counts
            while it is being embedded.
        capacity: how many the queue holds before a write waits (shared by every
            tenant of the memory; ``0`` in inline mode).
        embedded: vectors the worker stored for this tenant since the memory opened.
        failed: texts the worker could not embed (they stay in the journal: the
            next start, or ``memory.embed_pending()``, catches them up).
        resuming: the worker is still reading work an earlier process left.
        last_error: the newest failure, as ``"ErrorType: message"``.
    """

    mode: EmbedMode
    model_id: str | None
    pending: int
    capacity: int
    embedded: int
    failed: int
    resuming: bool
    last_error: str | None
