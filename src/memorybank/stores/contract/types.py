"""Plain values of the store contract, shared by the sync and async stores.

They live outside ``_async/`` so the generated sync code uses the very same
classes (one ``UNSET``, one ``Record``), never a generated copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from memorybank.rules.scope import UNSET, Unset, Visibility
from memorybank.stores.contract.items import (
    AppendResult,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    VectorItem,
)

__all__ = [
    "UNSET",
    "AppendResult",
    "NewEntry",
    "Record",
    "RecordGuard",
    "SearchHit",
    "Unset",
    "VectorItem",
    "Visibility",
    "best_hits",
    "by_kind",
    "names_user",
    "searched_kinds",
    "visible",
]


#: An ``entry_windows`` window ending here (or later) runs to the end of its thread.
LAST_POSITION: Final = 2**62


def by_kind(kinds: Sequence[str], records: Sequence[Record]) -> dict[str, list[Record]]:
    """``records`` (of ``kinds``) under their kind, in the order given; every kind is
    a key, in ``kinds``' order, an empty list when no record has it."""
    grouped: dict[str, list[Record]] = {kind: [] for kind in kinds}
    for record in records:
        grouped[record.kind].append(record)
    return grouped


def names_user(visible_to: Visibility | None) -> bool:
    """Whether ``visible_to`` narrows a search to one user's records (and the shared
    ones): a user is given, ``None`` included, not ``UNSET``."""
    return visible_to is not None and not isinstance(visible_to.user_id, Unset)


def visible(visible_to: Visibility | None, agent_id: str | None, user_id: str | None) -> bool:
    """``visible_to.admits(...)``, where ``None`` (no scope given) admits everything."""
    return visible_to is None or visible_to.admits(agent_id, user_id)


def best_hits(hits: Iterable[SearchHit], k: int) -> list[SearchHit]:
    """The best ``k`` of ``hits``, best first, ties by kind, id, then branch: the order
    every store's ``text_search`` and ``vector_search`` answer in."""
    return sorted(hits, key=lambda h: (-h.score, h.kind, h.id, h.branch or ""))[:k]


def searched_kinds(kinds: Sequence[str], thread_id: str | None) -> list[str]:
    """The kinds a vector search covers, once each: with a thread filter only entries
    (records belong to no thread)."""
    return [kind for kind in dict.fromkeys(kinds) if kind == "entry" or thread_id is None]
