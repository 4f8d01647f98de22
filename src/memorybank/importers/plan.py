"""What an importer read from another memory system, as memorybank records: I/O-free.

An importer (``memorybank.importers.<system>``) reads the other system's own storage into a
``Plan``: threads with their branches and messages, and records (facts, their history,
documents, core facts), each with a deterministic memorybank id derived from the system's
own id and with its provenance in ``metadata["source"]`` (``{"system": ..., "id": ...}``).
``Plan.lines`` renders it as a memorybank dump (docs/dump-format.md); ``apply`` writes that
dump with ``on_conflict="skip"``, so the ids make a second import add nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorybank.core._async.core import _provider_dict
from memorybank.core._async.facts import _record as _fact_record
from memorybank.core._async.facts import version_record
from memorybank.core.documents import document_record
from memorybank.dump import format as _dump
from memorybank.errors import InvalidInput, NotFound
from memorybank.memory._async.core_facts import CORE_FACT, CORE_FACT_HISTORY, core_fact_id
from memorybank.records import Entry, Fact
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id
from memorybank.stores.contract.types import Record
from memorybank.tokens import Tokenizer, count_message_tokens

__all__ = [
    "UNCOUNTED",
    "ImportResult",
    "Plan",
    "PlannedBranch",
    "PlannedEntry",
    "PlannedThread",
    "Unmapped",
    "as_utc",
    "branch_length",
    "fact",
    "provenance",
    "read_json",
    "source_id",
]


#: Record kinds written beside another and not counted on their own (a core fact's history).
UNCOUNTED = frozenset({CORE_FACT_HISTORY})


def read_json(source: str, what: str) -> Any:
    """The JSON document in the file ``source`` (``NotFound``: no such file;
    ``InvalidInput``: not JSON), ``what`` naming it in the errors."""
    path = Path(source)
    if not path.is_file():
        raise NotFound(f"no {what} at {source!r}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise InvalidInput(f"{source!r} is not a {what} (JSON): {error}", field="source") from error


def source_id(system: str, *parts: str) -> str:
    """The memorybank id of an item imported from ``system``: the system and its own id(s)
    joined by ``:`` (``compound_id``: hashed when longer than an id may be)."""
    return compound_id(":".join((system, *parts)))


def provenance(system: str, original: str, **more: Any) -> dict[str, Any]:
    """The ``metadata["source"]`` of an imported item: the system and its own id."""
    return {"system": system, "id": original, **more}


def as_utc(value: datetime | str | float | int | None, default: datetime) -> datetime:
    """A timezone-aware UTC time from the other system's value (ISO text, naive times taken
    as UTC, epoch seconds); ``default`` when it has none."""
    if value is None or value == "":
        return default
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


@dataclass(slots=True)
class PlannedEntry:
    """One message to import: a chat message or a Responses item, stored as given."""

    id: str
    message: Mapping[str, Any]
    created_at: datetime
    source: dict[str, Any]


@dataclass(slots=True)
class PlannedBranch:
    """A branch of a thread; a fork lists only its entries after ``fork_entry``."""

    name: str
    created_at: datetime
    entries: list[PlannedEntry] = field(default_factory=list)
    from_branch: str | None = None
    fork_entry: str | None = None


@dataclass(slots=True)
class PlannedThread:
    """One thread to import, with its branches (the first is ``main``)."""

    id: str
    user_id: str | None
    agent_id: str | None
    title: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    branches: list[PlannedBranch]
    current_branch: str = "main"


@dataclass(slots=True)
class Unmapped:
    """Something of the other system that has no memorybank equivalent (not imported)."""

    what: str
    count: int
    why: str


@dataclass(slots=True)
class Plan:
    """Everything an importer read, ready to write (see the module docstring)."""

    system: str
    threads: list[PlannedThread] = field(default_factory=list)
    records: list[tuple[Record, list[float] | None]] = field(default_factory=list)
    #: the model of the records' vectors (``None``: they carry none)
    vector_model: str | None = None
    unmapped: list[Unmapped] = field(default_factory=list)

    def skip(self, what: str, count: int, why: str) -> None:
        """Note ``count`` items of ``what`` left out, and why."""
        if count:
            self.unmapped.append(Unmapped(what, count, why))

    def counts(self) -> dict[str, int]:
        """Items found, by memorybank kind: ``thread``, ``entry``, ``branch`` (forks) and
        each record kind."""
        out: dict[str, int] = {}
        for thread in self.threads:
            out["thread"] = out.get("thread", 0) + 1
            out["branch"] = out.get("branch", 0) + len(thread.branches) - 1
            n = sum(len(b.entries) for b in thread.branches)
            out["entry"] = out.get("entry", 0) + n
        for record, _ in self.records:
            if record.kind not in UNCOUNTED:
                out[record.kind] = out.get(record.kind, 0) + 1
        return {kind: n for kind, n in out.items() if n or kind == "thread"}

    # -- records -----------------------------------------------------------------------

    def add_fact(self, fact: Fact, vector: list[float] | None = None) -> None:
        """A fact, as ``memory.facts`` stores it."""
        self.records.append((_fact_record(fact), vector))

    def add_fact_version(self, fact: Fact, replaced_at: datetime) -> None:
        """An earlier value of a fact (``facts.history``), as ``facts.update`` keeps it."""
        self.records.append((version_record(fact, replaced_at), None))

    def add_document(
        self,
        document_id: str,
        content: str,
        metadata: dict[str, Any],
        *,
        user_id: str | None,
        agent_id: str | None,
        created_at: datetime,
        updated_at: datetime,
        vector: list[float] | None = None,
    ) -> None:
        """A document, as ``memory.documents.add`` stores it."""
        record = document_record(
            document_id,
            content,
            metadata,
            agent_id=agent_id,
            user_id=user_id,
            created_at=created_at,
            updated_at=updated_at,
        )
        self.records.append((record, vector))

    def add_core_fact(
        self,
        user_id: str | None,
        key: str,
        value: str,
        *,
        created_at: datetime,
        updated_at: datetime,
    ) -> None:
        """A core fact (``memory.core_facts``) set once, with its one history value."""
        record_id = core_fact_id(user_id, key)
        current = Record(
            kind=CORE_FACT,
            id=record_id,
            agent_id=None,
            user_id=user_id,
            content=value,
            data={},
            created_at=created_at,
            updated_at=updated_at,
            key=key,
            revision=1,
        )
        history = Record(
            kind=CORE_FACT_HISTORY,
            id=compound_id(f"{record_id}@{updated_at.isoformat()}"),
            agent_id=None,
            user_id=user_id,
            content=value,
            data={"key": key},
            created_at=updated_at,
            updated_at=updated_at,
            key=record_id,
        )
        self.records += [(current, None), (history, None)]

    # -- the dump ----------------------------------------------------------------------

    def lines(
        self,
        tenant: str,
        tokenizer: Tokenizer,
        *,
        max_content_chars: int,
        vectors: Mapping[str, list[float]] | None = None,
        vector_model: str | None = None,
    ) -> Iterator[str]:
        """The plan as a memorybank dump for ``tenant`` (header to trailer). Each entry's
        token count is the ``tokenizer``'s, as ``entries.add`` counts it. ``vectors`` (by
        record id, of ``vector_model``) replace the records' own (re-embedded)."""
        model = self.vector_model if vectors is None else vector_model
        checksum = _dump.Checksum()
        head = _dump.dumps(_dump.header(tenant, datetime.now(UTC), vector_model=model))
        checksum.add(head)
        yield head
        for thread in self.threads:
            for kind, line in _thread_lines(tenant, thread, tokenizer, max_content_chars):
                checksum.add(line, kind)
                yield line
        for record, vector in self.records:
            data: dict[str, Any] = {"type": "record", "record": record}
            chosen = vector if vectors is None else vectors.get(record.id)
            if chosen is not None and model is not None:
                data["vector"] = chosen
            line = _dump.dumps(data)
            checksum.add(line, "record")
            yield line
        yield _dump.dumps(_dump.trailer(checksum))


@dataclass(slots=True)
class ImportResult:
    """What an import found in the other system and what it added.

    ``found`` and ``new`` count by memorybank kind (``thread``, ``branch``, ``entry``,
    ``fact``, ``fact_version``, ``document``, ``core_fact``, ...); ``new`` is what this run
    wrote (a dry run: would write), so a second run of the same import has ``new == {}``.
    ``unmapped`` lists what had no memorybank equivalent.
    """

    system: str
    dry_run: bool
    found: dict[str, int] = field(default_factory=dict)
    new: dict[str, int] = field(default_factory=dict)
    unmapped: list[Unmapped] = field(default_factory=list)
    #: vectors taken from the other system (same embedder model) and vectors computed here
    vectors_carried: int = 0
    vectors_embedded: int = 0

    @property
    def total_new(self) -> int:
        """Items added (a dry run: that would be added)."""
        return sum(self.new.values())

    def describe(self) -> list[str]:
        """The result as lines of text (what ``memorybank import-from`` prints)."""

        def counts(values: dict[str, int]) -> str:
            return ", ".join(f"{kind}: {n}" for kind, n in sorted(values.items())) or "nothing"

        verb = "would add" if self.dry_run else "added"
        out = [
            f"{self.system}: found {counts(self.found)}",
            f"{verb} {self.total_new} new items ({counts(self.new)})",
        ]
        if self.vectors_carried or self.vectors_embedded:
            out.append(f"vectors: {self.vectors_carried} carried, {self.vectors_embedded} embedded")
        out += [f"not imported: {u.count} {u.what} ({u.why})" for u in self.unmapped]
        return out


def _thread_lines(
    tenant: str, thread: PlannedThread, tokenizer: Tokenizer, max_chars: int
) -> Iterator[tuple[str, str]]:
    branches = [
        {
            "name": b.name,
            "created_at": b.created_at,
            "from_branch": b.from_branch,
            "from_entry": b.fork_entry,
            "fork_entry": b.fork_entry,
            "entries": branch_length(thread, b),
        }
        for b in thread.branches
    ]
    head = {
        "type": "thread",
        "thread": {
            "id": thread.id,
            "tenant_id": tenant,
            "user_id": thread.user_id,
            "agent_id": thread.agent_id,
            "title": thread.title,
            "metadata": thread.metadata,
            "status": "active",
            "created_at": thread.created_at,
            "updated_at": thread.updated_at,
            "current_branch": thread.current_branch,
        },
        "branches": branches,
    }
    yield "thread", _dump.dumps(head)
    for branch in thread.branches:
        for position, planned in enumerate(branch.entries):
            entry = _entry(thread.id, branch.name, position, planned, tokenizer, max_chars)
            yield "entry", _dump.dumps({"type": "entry", "entry": entry})


def branch_length(thread: PlannedThread, branch: PlannedBranch) -> int:
    """Entries the branch holds once imported: its fork's shared prefix plus its own."""
    return len(_held(thread, branch, 0))


def _held(thread: PlannedThread, branch: PlannedBranch, depth: int) -> list[str]:
    """The ids of the entries ``branch`` holds, oldest first."""
    own = [e.id for e in branch.entries]
    if branch.fork_entry is None or branch.from_branch is None or depth > len(thread.branches):
        return own
    source = next(b for b in thread.branches if b.name == branch.from_branch)
    shared = _held(thread, source, depth + 1)
    return shared[: shared.index(branch.fork_entry) + 1] + own


def _entry(
    thread_id: str,
    branch: str,
    position: int,
    planned: PlannedEntry,
    tokenizer: Tokenizer,
    max_chars: int,
) -> Entry:
    clean = v.as_message(dict(planned.message), max_content_chars=max_chars)
    return Entry(
        id=planned.id,
        thread_id=thread_id,
        branch=branch,
        position=position,
        role=clean.role,
        content=clean.content,
        name=clean.name,
        tool_calls=clean.tool_calls,
        tool_call_id=clean.tool_call_id,
        metadata={**clean.metadata, "source": planned.source},
        state=dict(clean.state),
        token_count=count_message_tokens(tokenizer, _provider_dict(clean)),
        created_at=planned.created_at,
        extra=dict(clean.extra),
        item=None if clean.item is None else dict(clean.item),
    )


def fact(
    fact_id: str,
    content: str,
    *,
    user_id: str | None,
    agent_id: str | None,
    source: str,
    metadata: dict[str, Any],
    created_at: datetime,
    updated_at: datetime,
    category: str | None = None,
    version: int = 1,
    source_entries: Sequence[str] = (),
) -> Fact:
    """A ``Fact`` of an import (a shorthand for the record's many fields)."""
    return Fact(
        id=fact_id,
        agent_id=agent_id,
        user_id=user_id,
        content=content,
        category=category,
        confidence=None,
        source=source,
        metadata=metadata,
        source_entries=tuple(source_entries),
        created_at=created_at,
        updated_at=updated_at,
        version=version,
    )
