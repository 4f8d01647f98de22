"""History windows: I/O-free rules applied above every store.

The one invariant everything here keeps: a window never returns a tool result
whose calling assistant message it cut off (providers reject such a request,
and every later turn of the conversation fails with it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memorybank.records import Entry

__all__ = ["drop_orphan_tool_results", "strip_tool_calls", "take_token_budget"]


def strip_tool_calls(entries: Iterable[Entry]) -> list[Entry]:
    """Drop tool results and tool calls; an assistant entry left empty is dropped too."""
    kept: list[Entry] = []
    for entry in entries:
        if entry.role == "tool":
            continue
        if entry.tool_calls:
            if entry.content is None or entry.content == "":
                continue
            import dataclasses  # on first use, not with every Memory (cold start)

            entry = dataclasses.replace(entry, tool_calls=())
        kept.append(entry)
    return kept


def drop_orphan_tool_results(entries: Sequence[Entry]) -> list[Entry]:
    """Remove tool results whose calling assistant entry is not in ``entries``.

    ``entries`` is oldest first. A result counts as paired only when its call
    appears *earlier* in the window.
    """
    called: set[str] = set()
    kept: list[Entry] = []
    for entry in entries:
        if entry.role == "tool":
            if entry.tool_call_id not in called:
                continue
        elif entry.tool_calls:
            called.update(call.id for call in entry.tool_calls)
        kept.append(entry)
    return kept


def take_token_budget(newest_first: Iterable[Entry], max_tokens: int) -> tuple[list[Entry], bool]:
    """The longest run of newest entries whose token counts fit in ``max_tokens``.

    Returns the run newest first and whether the budget stopped it.
    """
    taken: list[Entry] = []
    used = 0
    for entry in newest_first:
        if used + entry.token_count > max_tokens:
            return taken, True
        used += entry.token_count
        taken.append(entry)
    return taken, False
