"""How the CLI draws records: times, one-line contents, the entries table (the commands
and the demo share it)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.table import Table
from rich.text import Text

from memorybank.records import Entry

__all__ = ["CONTENT_CHARS", "entries_table", "format_content", "format_time"]

#: Longest content shown in a table cell before it is cut with an ellipsis.
CONTENT_CHARS = 160


def format_time(when: datetime) -> str:
    """A record time as ``YYYY-MM-DD HH:MM:SS`` (records are UTC)."""
    return when.strftime("%Y-%m-%d %H:%M:%S")


def format_content(entry: Entry, limit: int = CONTENT_CHARS) -> str:
    """One line for an entry's content: tool calls spelled out, cut at ``limit`` chars."""
    parts: list[str] = []
    if entry.content:
        parts.append(" ".join(entry.content.split()))
    parts.extend(f"→ {call.name}({call.arguments})" for call in entry.tool_calls)
    if entry.tool_call_id is not None:
        parts.insert(0, f"[{entry.tool_call_id}]")
    text = " ".join(parts)
    if len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    return text


def entries_table(
    entries: Sequence[Entry], *, title: str | None = None, content_chars: int = CONTENT_CHARS
) -> Table:
    """Entries as a table: position, time, role, name, content (one line, cut), tokens."""
    days = sorted({entry.created_at.date() for entry in entries})
    one_day = len(days) == 1  # then the date goes in the caption and cells hold the time
    table = Table(
        title=title,
        title_justify="left",
        caption=f"times in UTC on {days[0]}" if one_day else "times in UTC",
        caption_justify="left",
    )
    table.add_column("#", justify="right", style="cyan", no_wrap=True)
    table.add_column("time", style="dim", no_wrap=True)
    table.add_column("role", style="bold", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1)
    table.add_column("tokens", justify="right", no_wrap=True)
    for entry in entries:
        table.add_row(
            str(entry.position),
            entry.created_at.strftime("%H:%M:%S") if one_day else format_time(entry.created_at),
            Text(entry.role, style=_ROLE_STYLES.get(entry.role, "")),
            Text(entry.name or ""),
            Text(format_content(entry, content_chars)),
            str(entry.token_count),
        )
    return table


_ROLE_STYLES = {"system": "magenta", "user": "green", "assistant": "blue", "tool": "yellow"}
