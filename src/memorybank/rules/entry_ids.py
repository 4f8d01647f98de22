"""Entry ids are unique on a branch: the rule, and the one error of each refusal.

``entry_append`` refuses, with ``Conflict`` and nothing written, a batch that holds an
id twice (``check_batch_ids``, before the store does anything) or an entry whose id
the branch already holds (``id_taken``, checked by each store inside the append's
atomic step, after idempotent replays were set aside: a replay is not written, so its
id is not checked). Branch copies share their source's ids, so uniqueness is per
branch. Every store raises exactly these errors (conformance: ``EntryIdCases``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from memorybank.errors import Conflict

if TYPE_CHECKING:
    from typing import Protocol

    class Identified(Protocol):
        """An entry to append as this rule reads it (``NewEntry`` is one)."""

        @property
        def id(self) -> str: ...


__all__ = ["check_batch_ids", "first_taken", "id_taken"]


def check_batch_ids(entries: Sequence[Identified]) -> None:
    """``Conflict`` when one id comes twice in ``entries`` (one append's batch)."""
    if len(entries) < 2:
        return
    seen: set[str] = set()
    for entry in entries:
        if entry.id in seen:
            raise Conflict(f"entry id {entry.id!r} is twice in one append")
        seen.add(entry.id)


def id_taken(entry_id: str, branch: str) -> Conflict:
    """The ``Conflict`` of an append whose entry id ``branch`` already holds."""
    return Conflict(f"entry id {entry_id!r} is already on branch {branch!r}")


def first_taken(ids: Sequence[str], held: Mapping[str, str]) -> Conflict | None:
    """``id_taken`` of the first of ``ids`` (batch order) found in ``held`` (id -> the
    branch holding it), or ``None``: how a store names the id its unique index refused."""
    first = next((i for i in ids if i in held), None)
    return None if first is None else id_taken(first, held[first])
