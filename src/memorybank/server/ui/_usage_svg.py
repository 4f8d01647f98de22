"""A thread's token usage over time, drawn as SVG server-side (as the graph view is).

The chart plots the branch's entries in order: the running total of their
stored token counts as a line, each entry as a dot at its time (coloured by
role, its count in a tooltip). Time runs along x; entries written in the same
instant (a batch, a scripted clock) are spread evenly between their
neighbours so none hides another. No script, no library: the template turns
the numbers into ``<polyline>``, ``<circle>`` and ``<text>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memorybank.records import Entry

__all__ = ["UsageChart", "UsagePoint", "chart"]

WIDTH = 560
HEIGHT = 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 14, 12, 32


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """One entry: where it is drawn, its role, its tokens and the running total."""

    x: float
    y: float
    role: str
    position: int
    tokens: int
    total: int
    at: datetime


@dataclass(frozen=True, slots=True)
class UsageChart:
    """Everything the template draws, in a ``width`` x ``height`` view box."""

    points: list[UsagePoint]
    line: str  # the polyline's points attribute
    total: int
    first: datetime
    last: datetime
    ticks: list[tuple[float, int]]  # (y, tokens) of the horizontal grid lines
    width: int = WIDTH
    height: int = HEIGHT
    left: int = _LEFT
    bottom: float = HEIGHT - _BOTTOM
    right: float = WIDTH - _RIGHT


def _spread(times: Sequence[float]) -> list[float]:
    """``times`` (non-decreasing) with each run of equal values spread up to the next value."""
    out = list(times)
    i = 0
    while i < len(out):
        j = i
        while j + 1 < len(out) and times[j + 1] == times[i]:
            j += 1
        if j > i:
            # the gap to the next distinct time, or one step when the run ends the series
            nxt = times[j + 1] if j + 1 < len(times) else times[i] + 1.0
            for n in range(i, j + 1):
                out[n] = times[i] + (nxt - times[i]) * (n - i) / (j - i + 1)
        i = j + 1
    return out


def _nice(top: int) -> int:
    """A round step for about four grid lines up to ``top``."""
    raw = max(top / 4, 1)
    magnitude = int(10 ** (len(str(int(raw))) - 1))
    for step in (1, 2, 5, 10):
        if step * magnitude >= raw:
            return step * magnitude
    return 10 * magnitude  # pragma: no cover - the loop always returns


def chart(entries: Sequence[Entry]) -> UsageChart | None:
    """The chart of ``entries`` (oldest first), or ``None`` when there is nothing to draw."""
    if not entries:
        return None
    stamps = [e.created_at.timestamp() for e in entries]
    for n in range(1, len(stamps)):  # clock skew never draws a line backwards
        stamps[n] = max(stamps[n], stamps[n - 1])
    xs = _spread(stamps)
    span = (xs[-1] - xs[0]) or 1.0
    totals: list[int] = []
    running = 0
    for entry in entries:
        running += entry.token_count
        totals.append(running)
    step = _nice(running)
    top = max(step * -(-running // step), 1)  # the grid's top: a multiple of the step
    x0, x1 = _LEFT, WIDTH - _RIGHT
    y0, y1 = HEIGHT - _BOTTOM, _TOP

    def x_at(t: float) -> float:
        if len(entries) == 1:
            return (x0 + x1) / 2
        return round(x0 + (x1 - x0) * (t - xs[0]) / span, 1)

    def y_at(tokens: int) -> float:
        return round(y0 - (y0 - y1) * tokens / top, 1)

    points = [
        UsagePoint(
            x=x_at(t),
            y=y_at(total),
            role=e.role,
            position=e.position,
            tokens=e.token_count,
            total=total,
            at=e.created_at,
        )
        for e, t, total in zip(entries, xs, totals, strict=True)
    ]
    start = f"{points[0].x},{y0}"
    line = " ".join([start, *(f"{p.x},{p.y}" for p in points)])
    ticks = [(y_at(v), v) for v in range(0, top + 1, step)]
    return UsageChart(
        points=points,
        line=line,
        total=running,
        first=entries[0].created_at,
        last=entries[-1].created_at,
        ticks=ticks,
    )
