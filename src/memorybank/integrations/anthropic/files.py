"""The Claude memory tool's file system over memorybank records: paths, limits and commands.

Pure code: a ``Files`` is the snapshot of one principal's files (the records the
tool read), and each command returns a ``Plan`` (the tool's answer, the records
to write, the records to delete) without touching the store; the tool in
``_async/tool.py`` (and its generated ``_sync`` twin) reads the snapshot and
applies the plan. The answers and errors are worded as the SDK's own
``BetaLocalFilesystemMemoryTool`` words them (its tests, ported, assert them).

Why records, not documents: a memory file is addressed by its exact path,
edited in place and renamed; a record has an id derived from the path, a
revision to compare-and-set on (two edits of one file never lose one) and a
key to list by, and its versions are records of their own (as core facts keep
their history). Documents are chunks for search, with no id of the caller's,
no revision and no rename.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memorybank.integrations._common import needs_extra
from memorybank.rules.ids import compound_id, new_id
from memorybank.stores.contract import Record, RecordGuard

try:
    from anthropic.lib.tools._beta_functions import ToolError
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise needs_extra(
        "memorybank.integrations.anthropic", "the Anthropic SDK", "anthropic"
    ) from error

__all__ = [
    "FILE",
    "ROOT",
    "VERSION",
    "Files",
    "Limits",
    "Plan",
    "ToolError",
    "Version",
    "check_path",
]

#: The record kind of a memory file (one record per path, its content the file's text).
FILE = "claude_memory_file"
#: The record kind of a file's versions (one per change, keyed by the file's record id).
VERSION = "claude_memory_version"
#: The one directory the tool may touch.
ROOT = "/memories"
#: The SDK's limit on the lines a file may have to be viewed.
MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
MAX_PATH_CHARS = 1024
MAX_NAME_CHARS = 255
MAX_DEPTH = 16

_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


@dataclass(frozen=True)
class Limits:
    """How much one principal (user and agent) may keep."""

    max_file_bytes: int = 100_000
    max_total_bytes: int = 5_000_000
    max_files: int = 1_000


@dataclass(frozen=True)
class Version:
    """One change of a file: what it did, the content after it and when.

    ``op`` is ``create``, ``edit``, ``rename`` (the file came from ``renamed_from``),
    ``move`` (it went to ``renamed_to``) or ``delete``; after ``move`` and
    ``delete`` the content is ``""``.
    """

    path: str
    op: str
    content: str
    at: datetime
    renamed_from: str | None = None
    renamed_to: str | None = None


@dataclass
class Plan:
    """What a command answers and what it changes (applied by the tool)."""

    result: str
    puts: list[Record] = field(default_factory=list)
    deletes: list[Record] = field(default_factory=list)
    guard: RecordGuard | None = None


def _refuse(path: str, reason: str) -> ToolError:
    return ToolError(f"Path {path} is not allowed: {reason}")


def check_path(path: object) -> str:
    """``path`` normalised (``/memories`` or ``/memories/a/b``), or ``ToolError``.

    Refused: anything not under ``/memories``, ``..`` and ``.`` segments, empty
    segments (``//``), backslashes, percent-encoded characters (``%2e``, ``%2f``),
    control characters, characters that Unicode compatibility folds into others
    (a fullwidth solidus or full stop, U+FF0F and U+FF0E), over-long names and
    over-deep paths. One trailing ``/`` is allowed (a directory).
    """
    if not isinstance(path, str):
        raise ToolError(f"Path must be a string, got: {type(path).__name__}")
    if not path.startswith(ROOT) or path[len(ROOT) : len(ROOT) + 1] not in ("", "/"):
        raise ToolError(f"Path must start with /memories, got: {path}")
    if len(path) > MAX_PATH_CHARS:
        raise _refuse(path, f"longer than {MAX_PATH_CHARS} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in path):
        raise _refuse(path, "control characters")
    if "\\" in path:
        raise _refuse(path, "backslashes")
    if _ENCODED.search(path):
        raise _refuse(path, "percent-encoded characters")
    if unicodedata.normalize("NFKC", path) != path:
        raise _refuse(path, "characters that Unicode normalisation changes")
    rest = path[len(ROOT) :]
    if rest.endswith("/"):
        rest = rest[:-1]
    if not rest:
        return ROOT
    names = rest[1:].split("/")
    if any(name in (".", "..") for name in names):
        raise ToolError(f"Path {path} would escape /memories directory")
    if any(not name for name in names):
        raise _refuse(path, "empty path segments")
    if any(len(name) > MAX_NAME_CHARS for name in names):
        raise _refuse(path, f"a name longer than {MAX_NAME_CHARS} characters")
    if len(names) > MAX_DEPTH:
        raise _refuse(path, f"deeper than {MAX_DEPTH} levels")
    return ROOT + "/" + "/".join(names)


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ToolError(f"Invalid `{name}` parameter: it should be a string.")
    return value


def _int(value: object, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolError(f"Invalid `{name}` parameter: it should be an integer.")
    return value


def format_size(size: int) -> str:
    """A size as the SDK's local tool shows it (``0B``, ``512B``, ``1.5K``, ``2M``)."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / (1024**i)
    return f"{int(scaled)}{units[i]}" if scaled == int(scaled) else f"{scaled:.1f}{units[i]}"


def _size(content: str) -> int:
    return len(content.encode("utf-8"))


def _numbered(lines: Sequence[str], start: int) -> str:
    return "\n".join(
        f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)
    )


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _inside(path: str, directory: str) -> bool:
    return path.startswith(directory + "/")


class Files:
    """One principal's memory files, as read, and the commands on them.

    Args:
        records: the principal's file records (kind ``FILE``).
        owner: the ``(user_id, agent_id)`` new records get (the handle's).
        now: the time the plan's records are stamped with.
        limits: the sizes one principal may keep.
    """

    def __init__(
        self,
        records: Iterable[Record],
        owner: tuple[str | None, str | None],
        now: datetime,
        limits: Limits,
    ) -> None:
        self.files = {r.key or "": r for r in records}
        self.owner = owner
        self.now = now
        self.limits = limits

    # -- helpers -------------------------------------------------------------

    def record_id(self, path: str) -> str:
        """The record id of ``path`` for this owner (two owners' ids never meet)."""
        return compound_id(json.dumps([*self.owner, path], ensure_ascii=False))

    def is_dir(self, path: str) -> bool:
        return path == ROOT or any(_inside(p, path) for p in self.files)

    def under(self, directory: str) -> list[str]:
        return sorted(p for p in self.files if _inside(p, directory))

    def _missing(self, path: str) -> ToolError:
        return ToolError(f"The path {path} does not exist. Please provide a valid path.")

    def _file(self, given: object) -> tuple[str, Record]:
        path = check_path(given)
        record = self.files.get(path)
        if record is None:
            if self.is_dir(path):
                raise ToolError(f"The path {given} is not a file.")
            raise self._missing(str(given))
        return path, record

    def _check_place(self, path: str, given: str) -> None:
        """``path`` may hold a file: it is not ``/memories``, a directory, or under a file."""
        if self.is_dir(path):
            raise ToolError(f"The path {given} is a directory")
        parent = path.rsplit("/", 1)[0]
        while parent != ROOT:
            if parent in self.files:
                raise ToolError(f"The path {parent} is a file, not a directory")
            parent = parent.rsplit("/", 1)[0]

    def _check_size(self, path: str, content: str) -> None:
        size = _size(content)
        if size > self.limits.max_file_bytes:
            raise ToolError(
                f"File {path} would be {size} bytes, over the limit of"
                f" {self.limits.max_file_bytes} bytes per file"
            )
        kept = [p for p in self.files if p != path]
        total = size + sum(_size(self.files[p].content) for p in kept)
        if total > self.limits.max_total_bytes:
            raise ToolError(
                f"Memory would hold {total} bytes, over the limit of"
                f" {self.limits.max_total_bytes} bytes in /memories"
            )
        if path not in self.files and len(kept) + 1 > self.limits.max_files:
            raise ToolError(
                f"Memory holds {len(kept)} files, the limit in /memories; delete one first"
            )

    def _write(
        self, path: str, content: str, op: str, *, renamed_from: str | None = None
    ) -> list[Record]:
        """The file record of ``path`` holding ``content`` and its version record."""
        old = self.files.get(path)
        user, agent = self.owner
        record_id = self.record_id(path)
        current = Record(
            kind=FILE,
            id=record_id,
            agent_id=agent,
            user_id=user,
            content=content,
            data={"bytes": _size(content)},
            created_at=self.now if old is None else old.created_at,
            updated_at=self.now,
            key=path,
            revision=1 if old is None else old.revision + 1,
        )
        return [current, self._version(path, record_id, content, op, renamed_from)]

    def _version(
        self,
        path: str,
        record_id: str,
        content: str,
        op: str,
        renamed_from: str | None = None,
        renamed_to: str | None = None,
    ) -> Record:
        user, agent = self.owner
        data: dict[str, object] = {"path": path, "op": op}
        if renamed_from is not None:
            data["renamed_from"] = renamed_from
        if renamed_to is not None:
            data["renamed_to"] = renamed_to
        return Record(
            kind=VERSION,
            id=new_id(),
            agent_id=agent,
            user_id=user,
            content=content,
            data=data,
            created_at=self.now,
            updated_at=self.now,
            key=record_id,
        )

    def _edit(self, path: str, record: Record, content: str, result: str) -> Plan:
        self._check_size(path, content)
        return Plan(
            result,
            puts=self._write(path, content, "edit"),
            guard=RecordGuard(FILE, record.id, record.revision),
        )

    # -- commands ------------------------------------------------------------

    def view(self, given: object, view_range: object = None) -> Plan:
        path = check_path(given)
        if self.is_dir(path):
            return Plan(self._listing(path))
        record = self.files.get(path)
        if record is None:
            raise self._missing(str(given))
        lines = record.content.split("\n")
        if len(lines) > MAX_LINES:
            raise ToolError(f"File {given} exceeds maximum line limit of 999,999 lines.")
        start = 1
        if view_range is not None:
            if (
                not isinstance(view_range, list | tuple)
                or len(view_range) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
                or view_range[0] < 1
                or (view_range[1] != -1 and view_range[1] < view_range[0])
            ):
                raise ToolError(
                    f"Invalid `view_range` parameter: {view_range}. It should be a list of"
                    " two integers [start, end] with 1 <= start and end == -1 or end >= start."
                )
            start = view_range[0]
            end = len(lines) if view_range[1] == -1 else view_range[1]
            lines = lines[start - 1 : end]
        return Plan(f"Here's the content of {given} with line numbers:\n" + _numbered(lines, start))

    def _listing(self, directory: str) -> str:
        rows = [(self._tree_size(directory), directory)]

        def walk(folder: str, depth: int) -> None:
            names: dict[str, bool] = {}
            for path in self.under(folder):
                name, _, deeper = path[len(folder) + 1 :].partition("/")
                names[name] = names.get(name, False) or bool(deeper)
            for name in sorted(names):
                if name.startswith("."):
                    continue
                child = f"{folder}/{name}"
                if names[name]:
                    rows.append((self._tree_size(child), f"{child}/"))
                    if depth < 2:
                        walk(child, depth + 1)
                else:
                    rows.append((_size(self.files[child].content), child))

        walk(directory, 1)
        header = (
            f"Here're the files and directories up to 2 levels deep in {directory},"
            " excluding hidden items:"
        )
        return header + "\n" + "\n".join(f"{format_size(s)}\t{p}" for s, p in rows)

    def _tree_size(self, directory: str) -> int:
        return sum(_size(self.files[p].content) for p in self.under(directory))

    def create(self, given: object, file_text: object) -> Plan:
        path = check_path(given)
        content = _text(file_text, "file_text")
        if path in self.files:
            raise ToolError(f"File {given} already exists")
        self._check_place(path, str(given))
        self._check_size(path, content)
        return Plan(
            f"File created successfully at: {given}",
            puts=self._write(path, content, "create"),
            guard=RecordGuard(FILE, self.record_id(path), None),
        )

    def str_replace(self, given: object, old_str: object, new_str: object) -> Plan:
        path, record = self._file(given)
        old, new = _text(old_str, "old_str"), _text(new_str, "new_str")
        content = record.content
        count = content.count(old) if old else 0
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {given}."
            )
        if count > 1:
            lines, start = [], 0
            while (pos := content.find(old, start)) != -1:
                lines.append(content[:pos].count("\n") + 1)
                start = pos + 1
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}`"
                f" in lines: {', '.join(map(str, lines))}. Please ensure it is unique"
            )
        changed = content[: content.find(old)].count("\n")
        edited = content.replace(old, new)
        new_lines = edited.split("\n")
        first, last = max(0, changed - 2), min(len(new_lines), changed + 3)
        snippet = _numbered(new_lines[first:last], first + 1)
        return self._edit(
            path,
            record,
            edited,
            "The memory file has been edited. Here is the snippet showing the change"
            " (with line numbers):\n" + snippet,
        )

    def insert(self, given: object, insert_line: object, insert_text: object) -> Plan:
        path, record = self._file(given)
        line, text = _int(insert_line, "insert_line"), _text(insert_text, "insert_text")
        lines = _split_lines_keeping_cr(record.content)
        if line < 0 or line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(line, text.rstrip("\n"))
        edited = "\n".join(lines)
        if not edited.endswith("\n"):
            edited += "\n"
        return self._edit(path, record, edited, f"The file {given} has been edited.")

    def delete(self, given: object) -> Plan:
        path = check_path(given)
        if path == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        gone = [path] if path in self.files else self.under(path)
        if not gone:
            raise ToolError(f"The path {given} does not exist")
        records = [self.files[p] for p in gone]
        return Plan(
            f"Successfully deleted {given}",
            puts=[self._version(r.key or "", r.id, "", "delete") for r in records],
            deletes=records,
        )

    def rename(self, old_given: object, new_given: object) -> Plan:
        old, new = check_path(old_given), check_path(new_given)
        if old == ROOT:
            raise ToolError("Cannot rename the /memories directory itself")
        if new in self.files or self.is_dir(new):
            raise ToolError(f"The destination {new_given} already exists")
        moved = [old] if old in self.files else self.under(old)
        if not moved:
            raise ToolError(f"The path {old_given} does not exist")
        if _inside(new, old):
            raise ToolError(f"Cannot move {old_given} into itself")
        targets = {p: new + p[len(old) :] for p in moved}
        puts: list[Record] = []
        for source, target in targets.items():
            self._check_place(target, target)
            puts.extend(
                self._write(target, self.files[source].content, "rename", renamed_from=source)
            )
            old_id = self.files[source].id
            puts.append(self._version(source, old_id, "", "move", renamed_to=target))
        records = [self.files[p] for p in moved]
        first = next(iter(targets.values()))
        return Plan(
            f"Successfully renamed {old_given} to {new_given}",
            puts=puts,
            deletes=records,
            guard=RecordGuard(FILE, self.record_id(first), None),
        )

    def clear(self) -> Plan:
        records = list(self.files.values())
        return Plan(
            "All memory cleared",
            puts=[self._version(r.key or "", r.id, "", "delete") for r in records],
            deletes=records,
        )


def versions(records: Iterable[Record]) -> list[Version]:
    """The version records of one file as ``Version`` values, oldest first."""
    out = []
    for r in records:
        came, went = r.data.get("renamed_from"), r.data.get("renamed_to")
        out.append(
            Version(
                path=str(r.data.get("path", "")),
                op=str(r.data.get("op", "")),
                content=r.content,
                at=r.created_at,
                renamed_from=came if isinstance(came, str) else None,
                renamed_to=went if isinstance(went, str) else None,
            )
        )
    return out
