"""Write transactions with reads in between, written once for the SQL engines.

A verb's logic is a *program*: a generator that yields the statements of one step (sent
together: one round trip on MySQL), receives what each gave (``Results``) and decides the
next step from them; its return value is the verb's. Each engine runs a program in one
write transaction its own way (``SQLCore._transact``): SQLite on its writer thread
(``drive``), PostgreSQL and MySQL on a pooled connection (``run_program``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, TypeAlias, TypeVar

__all__ = ["AsyncStepRunner", "Program", "Results", "Statement", "StepRunner", "drive"]

T = TypeVar("T")
#: A statement and its parameters (``None``: none, for MySQL's ``BEGIN``).
Statement: TypeAlias = tuple[str, Sequence[Any] | None]
#: What each statement of a step gave: its rows ([] for a write) and the rows it changed.
Results: TypeAlias = list[tuple[list[tuple[Any, ...]], int]]
#: A transaction's logic: it yields steps and receives their ``Results``.
Program: TypeAlias = Generator[Sequence[Statement], Results, T]
#: How an engine runs one step in its transaction (``AsyncStepRunner`` in async code).
StepRunner: TypeAlias = Callable[[Sequence[Statement]], Results]
AsyncStepRunner: TypeAlias = Callable[[Sequence[Statement]], Awaitable[Results]]


def drive(program: Program[T], run: StepRunner) -> T:
    """Run ``program``'s steps with ``run`` (an empty step gives no results); its value."""
    try:
        step = next(program)
        while True:
            step = program.send(run(step) if step else [])
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
