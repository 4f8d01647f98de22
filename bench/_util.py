"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Latency:
    """Latency percentiles of a repeated call, in milliseconds."""

    p50: float
    p95: float

    @classmethod
    def of(cls, samples_s: Sequence[float]) -> Latency:
        return cls(statistics.median(samples_s) * 1000, percentile(samples_s, 0.95) * 1000)


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples``: the nearest sample by rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(fn: Callable[[], object], repeat: int, warmup: int = 5) -> Latency:
    """Call ``fn`` ``warmup + repeat`` times; percentiles of the last ``repeat``."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return Latency.of(samples)


def throughput(fn: Callable[[], int]) -> float:
    """Operations per second of ``fn``, which returns how many operations it did."""
    start = time.perf_counter()
    count = fn()
    return count / (time.perf_counter() - start)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table."""

    def cell(value: object) -> str:
        return f"{value:,.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
