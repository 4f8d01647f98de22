"""A scoped vector search scores the scope's own rows (``VectorSlot.find``).

One thread's rows, or one user's and the shared ones, come from per-code row
groups, large scopes from contiguous copies (``groups.Blocks``). The answers must
be the ones a mask over every row gives, through appends after a copy was made,
deletions (zeroed in the copies too), hidden rows and unknown owners; and a
SQLite store must never return a deleted vector from a copy.
"""

from __future__ import annotations

import numpy as np
import pytest

from memorybank.stores.contract.types import UNSET, Visibility
from memorybank.stores.vectors import exact as _vectors
from memorybank.stores.vectors import groups as _groups
from memorybank.stores.vectors.exact import CachedRows, VectorSlot

DIM = 16


def _rows(rng: np.random.Generator, start: int, count: int) -> tuple[CachedRows, np.ndarray]:
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = CachedRows()
    users = ["alice", "bob", None, "carol"]
    for i in range(count):
        n = start + i
        user = users[int(rng.integers(0, 4))] if n % 5 else "alice"
        rows.add(n + 1, f"e{n}", f"t{n % 7}", "agent", user, True, vectors[i].tobytes())
    return rows, vectors


def _masked(
    slot: VectorSlot, q: np.ndarray, k: int, thread: str | None, vis: Visibility | None
) -> list[tuple[int, float]]:
    """The answer of a mask over every row, exact (the reference)."""
    mask = slot.mask(thread, vis)
    rows = np.flatnonzero(mask)
    if not len(rows):
        return []
    scores = slot.matrix[rows] @ q
    order = np.lexsort((rows, -scores))[:k]
    return [(int(rows[i]), float(scores[i])) for i in order]


def _same(found: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [r for r, _ in found] == [r for r, _ in want]
    assert np.allclose([s for _, s in found], [s for _, s in want], atol=1e-5)


SCOPES = [
    ("t3", None),
    ("t3", Visibility(UNSET, "bob")),
    (None, Visibility(UNSET, "alice")),
    (None, Visibility(UNSET, "bob")),
    (None, Visibility(UNSET, None)),  # shared rows only
    (None, Visibility(UNSET, "nobody")),  # a user no row has: the shared ones
    (None, Visibility("agent", "carol")),
    (None, Visibility("other-agent", "carol")),
    ("no-such-thread", None),
]


@pytest.mark.parametrize("thread,vis", SCOPES)
def test_find_equals_a_mask_over_every_row(
    monkeypatch: pytest.MonkeyPatch, thread: str | None, vis: Visibility | None
) -> None:
    monkeypatch.setattr(_groups, "BLOCK_MIN_ROWS", 30)
    monkeypatch.setattr(_groups, "BLOCK_EXTEND", 25)
    rng = np.random.default_rng(11)
    slot = VectorSlot(DIM)
    rows, _ = _rows(rng, 0, 400)
    slot.append(rows)
    queries = rng.normal(size=(6, DIM)).astype(np.float32)
    for q in queries:
        _same(slot.find(q, 12, thread, vis), _masked(slot, q, 12, thread, vis))
    # rows appended after the copies were made: fewer than BLOCK_EXTEND, then more
    for count in (10, 60):
        more, _ = _rows(rng, slot.n, count)
        slot.append(more)
        for q in queries:
            _same(slot.find(q, 12, thread, vis), _masked(slot, q, 12, thread, vis))
    # deletions: out of every answer, and their copies zeroed
    gone = [int(slot.rowids[i]) for i in range(0, slot.n, 3)]
    slot.forget(gone)
    for q in queries:
        found = slot.find(q, 50, thread, vis)
        _same(found, _masked(slot, q, 50, thread, vis))
        assert all(slot.alive[r] for r, _ in found)


def test_deleted_rows_leave_no_copy_and_hidden_rows_stay_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_groups, "BLOCK_MIN_ROWS", 30)
    rng = np.random.default_rng(5)
    slot = VectorSlot(DIM)
    rows, vectors = _rows(rng, 0, 300)
    slot.append(rows)
    alice = Visibility(UNSET, "alice")
    slot.find(vectors[0], 5, None, alice)  # makes alice's (and the shared rows') copies
    assert slot.blocks.held > 0
    slot.forget([1])  # row 0 (rowid 1) is alice's: its copy is zeroed
    held = [b for b in slot.blocks._blocks.values() if 0 in b.rows.tolist()]
    assert held and all(not b.matrix[0].any() for b in held)
    assert 0 not in [r for r, _ in slot.find(vectors[0], 5, None, alice)]
    slot.visible[5] = False  # a row whose owner is gone
    assert 5 not in [r for r, _ in slot.find(vectors[5], 300, None, alice)]
    assert 5 not in [r for r, _ in slot.find(vectors[5], 300, "t5", None)]


def test_blocks_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_groups, "BLOCK_MIN_ROWS", 10)
    monkeypatch.setattr(_vectors, "BLOCK_BUDGET", 120)
    rng = np.random.default_rng(2)
    slot = VectorSlot(DIM)
    slot.append(_rows(rng, 0, 420)[0])  # 7 threads of 60 rows
    q = rng.normal(size=DIM).astype(np.float32)
    for t in range(7):
        _same(slot.find(q, 5, f"t{t}", None), _masked(slot, q, 5, f"t{t}", None))
        assert slot.blocks.held <= 120
    assert len(slot.blocks._blocks) == 2  # the two most recent threads


def test_wide_scopes_take_the_mask_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope of more than ``SCOPED_EXACT_LIMIT`` rows is masked over every row, as before."""
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", 50)
    rng = np.random.default_rng(3)
    slot = VectorSlot(DIM)
    slot.append(_rows(rng, 0, 300)[0])
    alice = Visibility(UNSET, "alice")
    assert slot._scope_parts(None, alice) is None
    assert slot._scope_parts("t1", None) is not None  # 43 rows
    q = rng.normal(size=DIM).astype(np.float32)
    _same(slot.find(q, 10, None, alice), _masked(slot, q, 10, None, alice))
    assert slot.blocks.held == 0


def test_sqlite_search_never_returns_a_deleted_vector_from_a_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from memorybank import Memory

    monkeypatch.setattr(_groups, "BLOCK_MIN_ROWS", 20)
    rng = np.random.default_rng(9)
    with Memory(f"sqlite:///{tmp_path}/m.db") as memory:
        store = memory.store
        thread = memory.threads.create(user_id="alice", agent_id="a")
        entries = memory.entries.add_many(
            thread.id, [{"role": "user", "content": f"m {i}"} for i in range(40)]
        )
        vectors = rng.normal(size=(40, DIM)).astype(np.float32)
        from memorybank.stores.contract._sync.store import VectorItem

        store.vector_put(
            memory.tenant_id,
            [
                VectorItem("entry", e.id, "m", v.tolist(), thread.id)
                for e, v in zip(entries, vectors, strict=True)
            ],
        )
        alice = Visibility(UNSET, "alice")

        def best(i: int) -> str:
            hits = store.vector_search(
                memory.tenant_id,
                vectors[i].tolist(),
                model_id="m",
                kinds=["entry"],
                k=1,
                visible_to=alice,
            )
            return hits[0].id

        assert best(7) == entries[7].id  # the copy of alice's rows is made here
        memory.entries.delete(thread.id, entries[7].id)
        assert best(7) != entries[7].id
