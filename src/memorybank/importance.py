"""Importance, last use and decay of long-term memory (I/O-free rules and values).

Every fact, document and entry has an importance in ``[0, 1]`` and a last-used time,
kept in one ``memory_usage`` record per item (``usage_id(kind, id)``). The rules
(start, use, feedback), the use buffer and ``HalfLife`` decay: docs/consolidation.md
("Importance, last use and decay").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memorybank.errors import InvalidInput

__all__ = [
    "DECAY_POOL",
    "DEFAULT_IMPORTANCE",
    "USAGE",
    "USAGE_BATCH",
    "USAGE_WRITE",
    "USE_STEP",
    "HalfLife",
    "ItemKind",
    "ItemUsage",
    "UsageBuffer",
    "check_importance",
    "rated",
    "usage_id",
    "used",
]

#: The record kind of an item's importance and last use.
USAGE = "memory_usage"
#: An item's importance when none was given and it was never used nor rated.
DEFAULT_IMPORTANCE = 0.5
#: Fewest hits of the undecayed ranking a search with ``decay`` re-weighs.
DECAY_POOL = 30
#: How far one use moves importance up towards 1.
USE_STEP = 0.05
#: Items of the use buffer that make a search write it (with that search's hits).
USAGE_BATCH = 256
#: Most items one batch of a flush writes (one batch read, one batch write): room for
#: a full buffer and the hits of the search that filled it, written at once.
USAGE_WRITE = 2 * USAGE_BATCH

ItemKind = Literal["fact", "document", "entry"]
ITEM_KINDS: tuple[str, ...] = ("fact", "document", "entry")


def check_importance(value: object, field: str = "importance") -> float:
    """An importance: a finite number from 0 to 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.0 <= value <= 1.0
    ):
        raise InvalidInput(f"{field} must be a number from 0 to 1", field=field)
    return float(value)


def check_kind(value: object) -> str:
    if value not in ITEM_KINDS:
        raise InvalidInput("kind must be 'fact', 'document' or 'entry'", field="kind")
    return str(value)


def usage_id(kind: str, item_id: str) -> str:
    """The id of the ``memory_usage`` record of item ``(kind, item_id)``: fixed, so a use
    is an upsert, and kinds whose ids coincide never share one."""
    import hashlib  # on use only: a process that only reads history never loads it

    return "u" + hashlib.sha256(f"{kind}\x1f{item_id}".encode()).hexdigest()[:40]


def used(importance: float, uses: int) -> float:
    """The importance after ``uses`` more uses (each moves it ``USE_STEP`` towards 1)."""
    return 1.0 - (1.0 - importance) * (1.0 - USE_STEP) ** uses


def rated(value: float | None, useful: bool) -> float:
    """A value after one feedback: useful, halfway up to 1; not useful, halved (``None``
    counts as ``DEFAULT_IMPORTANCE``). Fact confidence follows the same rule."""
    now = DEFAULT_IMPORTANCE if value is None else value
    return now + (1.0 - now) / 2 if useful else now / 2


@dataclass(frozen=True, slots=True)
class ItemUsage:
    """An item's importance and use, as ``memory.usage.get`` returns them.

    ``explicit``: the importance was given (at write or by ``usage.set``) rather than
    only derived. ``last_used_at``: ``None`` when no search returned it yet.
    """

    kind: str
    id: str
    importance: float = DEFAULT_IMPORTANCE
    explicit: bool = False
    uses: int = 0
    last_used_at: datetime | None = None

    @classmethod
    def from_data(cls, kind: str, item_id: str, data: dict[str, Any]) -> ItemUsage:
        importance = data.get("importance")
        uses = data.get("uses")
        last = data.get("last_used_at")
        return cls(
            kind=kind,
            id=item_id,
            importance=(
                float(importance)
                if isinstance(importance, int | float) and 0.0 <= importance <= 1.0
                else DEFAULT_IMPORTANCE
            ),
            explicit=data.get("explicit") is True,
            uses=uses if isinstance(uses, int) and not isinstance(uses, bool) else 0,
            last_used_at=datetime.fromisoformat(last) if isinstance(last, str) else None,
        )

    def data(self, thread_id: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "item_kind": self.kind,
            "importance": self.importance,
            "explicit": self.explicit,
            "uses": self.uses,
            "last_used_at": None if self.last_used_at is None else self.last_used_at.isoformat(),
        }
        if thread_id is not None:
            out["thread_id"] = thread_id
        return out

    def after_uses(self, uses: int, at: datetime) -> ItemUsage:
        last = at if self.last_used_at is None else max(self.last_used_at, at)
        return ItemUsage(
            self.kind,
            self.id,
            used(self.importance, uses),
            self.explicit,
            self.uses + uses,
            last,
        )


@dataclass(slots=True)
class Pending:
    """Uses of one item waiting in the buffer, with what a new record needs."""

    kind: str
    id: str
    agent_id: str | None
    user_id: str | None
    thread_id: str | None
    uses: int
    last_used_at: datetime


@dataclass(slots=True)
class UsageBuffer:
    """Uses noted by searches and not yet written: per tenant, per item (bounded: a
    memory flushes when it holds ``USAGE_BATCH`` items)."""

    items: dict[tuple[str, str, str], Pending] = field(default_factory=dict)

    def note(
        self,
        tenant: str,
        kind: str,
        item_id: str,
        at: datetime,
        *,
        agent_id: str | None,
        user_id: str | None,
        thread_id: str | None = None,
    ) -> None:
        key = (tenant, kind, item_id)
        pending = self.items.get(key)
        if pending is None:
            self.items[key] = Pending(kind, item_id, agent_id, user_id, thread_id, 1, at)
        else:
            pending.uses += 1
            pending.last_used_at = max(pending.last_used_at, at)

    def full(self) -> bool:
        return len(self.items) >= USAGE_BATCH

    def pending(self, tenant: str, kind: str, item_id: str) -> Pending | None:
        return self.items.get((tenant, kind, item_id))

    def take(self) -> dict[str, list[Pending]]:
        """Everything buffered, per tenant; the buffer empties."""
        taken, self.items = self.items, {}
        out: dict[str, list[Pending]] = {}
        for (tenant, _, _), pending in taken.items():
            out.setdefault(tenant, []).append(pending)
        return out


@dataclass(frozen=True, slots=True)
class HalfLife:
    """Weigh search scores by recency and importance: ``search(..., decay=HalfLife(days=30))``.

    A hit's score is multiplied by ``(floor + (1 - floor) * 0.5 ** (age / days)) *
    (1 + importance_weight * (importance - 0.5))``, where ``age`` is the time since the
    item was last used (by a search) or, never used, written. So a memory used today keeps
    its score, one unused for ``days`` loses a quarter (``floor=0.5``), and a very old one
    half; an importance of 1 adds half, 0 takes half (``importance_weight=1``). A negative
    score is divided instead, so a weight above 1 still helps. Hits are re-ordered by the
    weighted score among the best ``3 * k`` (at least 30) of the undecayed ranking.
    """

    days: float
    floor: float = 0.5
    importance_weight: float = 1.0

    def __post_init__(self) -> None:
        for name, low, high in (
            ("days", 0.0, math.inf),
            ("floor", 0.0, 1.0),
            ("importance_weight", 0.0, 1.0),
        ):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not low <= value <= high
                or (name == "days" and value <= 0)
            ):
                raise InvalidInput(f"HalfLife.{name} is out of range", field=f"decay.{name}")

    def weight(self, age_seconds: float, importance: float) -> float:
        recency = float(0.5 ** (max(age_seconds, 0.0) / (self.days * 86400.0)))
        return (self.floor + (1.0 - self.floor) * recency) * (
            1.0 + self.importance_weight * (importance - 0.5)
        )
