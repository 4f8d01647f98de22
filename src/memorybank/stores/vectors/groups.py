"""Row positions of a vector slot by owner, and contiguous copies of large owners' rows.

A scoped vector search (one user's rows and the shared ones, or one thread's)
needs only the rows of that scope. ``RowGroups`` keeps, per scope code, the
positions of the slot's rows holding it, updated as rows are appended (the
slot is append-only), so finding a scope's rows costs its own size, not a
pass over every row of the slot: with one million rows, a mask over all of
them costs several milliseconds before the first vector is scored.

Scoring rows scattered over the slot's matrix means gathering them first
(``matrix[rows]``: about 47 ms for 50,000 of a million 384-d rows, measured),
while the same product over a contiguous matrix takes about 6 ms. ``Blocks``
keeps such a copy of the rows of each large scope that searches use (an LRU
within a budget of rows), extended as the scope grows, with rows deleted since
zeroed like the slot's own (``forget``): no deleted vector stays in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from memorybank.runtime.np import np

__all__ = ["BLOCK_EXTEND", "BLOCK_MIN_ROWS", "Block", "Blocks", "RowGroups"]

#: A scope with at least this many rows is scored from a contiguous copy (a block);
#: below, gathering its rows costs less than a millisecond.
BLOCK_MIN_ROWS = 2_048
#: Rows a scope gained after its block was copied that are scored by gathering
#: them; from this many on the block is extended first.
BLOCK_EXTEND = 1_024


class RowGroups:
    """Ascending row positions per code, built as rows are appended."""

    def __init__(self) -> None:
        self._parts: dict[int, list[NDArray[np.intp]]] = {}

    def add(self, codes: NDArray[np.int32], start: int) -> None:
        """Rows ``start .. start + len(codes)`` have these codes (appended rows)."""
        if not len(codes):
            return
        order = np.argsort(codes, kind="stable").astype(np.intp)
        values, first = np.unique(codes[order], return_index=True)
        bounds = [*first.tolist(), len(codes)]
        for j, code in enumerate(values.tolist()):
            self._parts.setdefault(int(code), []).append(order[bounds[j] : bounds[j + 1]] + start)

    def rows(self, code: int) -> NDArray[np.intp]:
        """The positions of the rows holding ``code``, ascending."""
        parts = self._parts.get(code)
        if not parts:
            return np.zeros(0, dtype=np.intp)
        if len(parts) > 1:
            joined = np.concatenate(parts)
            self._parts[code] = [joined]
            return joined
        return parts[0]


@dataclass
class Block:
    """A contiguous copy of the vectors of ``rows`` (ascending positions in the slot)."""

    rows: NDArray[np.intp]
    matrix: NDArray[np.float32]


class Blocks:
    """Blocks by key (an axis and a code), least recently used first, within a budget of rows."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[str, int], Block] = {}
        self.held = 0  # rows held by every block

    def get(
        self,
        key: tuple[str, int],
        rows: NDArray[np.intp],
        matrix: NDArray[np.float32],
        budget: int,
    ) -> Block | None:
        """The block of ``rows`` (all the scope's rows now), copied or extended from
        ``matrix`` as needed; None when the scope is too small or outside ``budget``."""
        if len(rows) < BLOCK_MIN_ROWS or len(rows) > budget:
            return None
        block = self._blocks.pop(key, None)
        if block is not None:
            self.held -= len(block.rows)
            if len(rows) - len(block.rows) >= BLOCK_EXTEND:
                more = rows[len(block.rows) :]
                block = Block(rows, np.concatenate([block.matrix, matrix[more]]))
        if block is None:
            block = Block(rows, np.ascontiguousarray(matrix[rows]))
        while self._blocks and self.held + len(block.rows) > budget:
            oldest = next(iter(self._blocks))
            self.held -= len(self._blocks.pop(oldest).rows)
        self._blocks[key] = block  # the most recently used last
        self.held += len(block.rows)
        return block

    def forget(self, at: NDArray[np.intp]) -> None:
        """Zero the copies of the rows at positions ``at`` (deleted)."""
        for block in self._blocks.values():
            where = np.searchsorted(block.rows, at)
            inside = where < len(block.rows)
            hit = where[inside][block.rows[where[inside]] == at[inside]]
            if len(hit):
                block.matrix[hit] = 0.0

    def clear(self) -> None:
        self._blocks.clear()
        self.held = 0
