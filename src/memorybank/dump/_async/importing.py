"""Import a dump (``memorybank import``/``migrate``): check it whole, then write it all or
nothing.

Two passes: ``_check_all`` reads every line into a temporary file and writes nothing
(each line held to ``memorybank.dump.checks``, every duplicate and the trailer checked;
under ``on_conflict="fail"`` the target read once per kind by ``_check_target``); then
the file is written, inside ``store.atomic(tenant)`` when the store claims
``Capability.ATOMIC``. The rules and guarantees: docs/dump-format.md.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import IO, Any, Literal

from memorybank.dump import checks as _checks
from memorybank.dump import format as _dump
from memorybank.errors import Conflict, InvalidInput
from memorybank.records import Entry, Thread
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import UNSET, NewEntry, VectorItem

__all__ = ["WRITE_PAGE", "ImportReport", "OnConflict", "Progress", "import_dump"]

#: Entries written per store call; ids read per batch read of the target.
WRITE_PAGE = 500

OnConflict = Literal["skip", "overwrite", "fail"]
Progress = Callable[[str], None]

#: A model id naming its vectors' size (``"openai:text-embedding-3-small@1536"``).
_SIZED_MODEL = re.compile(r"@([1-9][0-9]{0,5})$")


@dataclass(slots=True)
class ImportReport:
    """What an import did, by line type: ``written`` and ``skipped`` counts."""

    written: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    #: the model of the dump's vectors (``None``: it carries none)
    vector_model: str | None = None
    #: vectors written (the target's model matched) and vectors left out (it did not)
    vectors_written: int = 0
    vectors_dropped: int = 0
    #: what the source store could not enumerate, so the dump lacks it (header ``unlisted``)
    unlisted: list[str] = field(default_factory=list)
    #: what the caller should know (an old dump without a trailer)
    warnings: list[str] = field(default_factory=list)
    #: why the dump was taken as partial (``allow_partial``: cut, or disagreeing with its
    #: trailer); ``None``: it was complete
    partial: str | None = None
    #: whether the writes were one atomic step (the store claims ``Capability.ATOMIC``)
    atomic: bool = False

    def add(self, counts: dict[str, int], kind: str, n: int = 1) -> None:
        counts[kind] = counts.get(kind, 0) + n


def _new_entry(entry: Entry) -> NewEntry:
    return NewEntry(
        id=entry.id,
        role=entry.role,
        content=entry.content,
        name=entry.name,
        tool_calls=entry.tool_calls,
        tool_call_id=entry.tool_call_id,
        metadata=entry.metadata,
        state=entry.state,
        token_count=entry.token_count,
        created_at=entry.created_at,
        idempotency_key=entry.idempotency_key,
        extra=entry.extra,
        item=entry.item,
    )


class _Importer:
    """Writes a dump's lines into a store, one thread at a time."""

    def __init__(
        self,
        store: AsyncStore,
        tenant: str,
        on_conflict: OnConflict,
        progress: Progress | None,
        carry: str | None,
    ) -> None:
        self.carry = carry  # the vector model written to the target, None: no vectors
        self.vectors: list[VectorItem] = []
        self.store = store
        self.tenant = tenant
        self.on_conflict = on_conflict
        self.progress = progress
        self.report = ImportReport()
        self.thread: Thread | None = None  # the thread whose entries are being written
        self.branches: list[dict[str, Any]] = []
        self.created: set[str] = set()
        self.pending: list[NewEntry] = []
        self.pending_branch: str | None = None
        self.skipping = False
        self.saved_at = datetime.now(UTC)  # for snapshots: the header's created_at

    def _tick(self, kind: str) -> None:
        if self.progress is not None:
            self.progress(kind)

    async def _flush(self) -> None:
        if self.pending and self.thread is not None and self.pending_branch is not None:
            await self.store.entry_append(
                self.tenant,
                self.thread.id,
                self.pending,
                updated_at=self.thread.updated_at,
                branch=self.pending_branch,
            )
            self.report.add(self.report.written, "entry", len(self.pending))
        self.pending = []
        await self._put_vectors()

    def _vector(self, data: dict[str, Any], kind: str, item_id: str, thread: str | None) -> None:
        vector = _checks.check_vector(data)
        if vector is None:
            return
        if self.carry is None:
            self.report.vectors_dropped += 1
            return
        self.vectors.append(VectorItem(kind, item_id, self.carry, vector, thread))

    async def _put_vectors(self) -> None:
        if self.vectors:
            await self.store.vector_put(self.tenant, self.vectors)
            self.report.vectors_written += len(self.vectors)
            self.vectors = []

    async def _complete(self, thread: Thread, branches: list[dict[str, Any]]) -> bool:
        """Whether the target already holds this thread with every branch at full length."""
        have = {b.name for b in await self.store.branch_list(self.tenant, thread.id)}
        for info in branches:
            if info["name"] not in have:
                return False
            count = await self.store.entry_count(self.tenant, thread.id, branch=info["name"])
            if count != info["entries"]:
                return False
        return True

    async def _open_branch(self, name: str) -> None:
        """Create branch ``name`` as dumped (forked at its shared prefix), once."""
        assert self.thread is not None
        if name in self.created:
            return
        info = next((b for b in self.branches if b["name"] == name), None)
        if info is None:
            raise InvalidInput(f"entry on undeclared branch {name!r}", field="branch")
        for earlier in self.branches:  # sources first: branches are dumped oldest first
            if earlier["name"] == name:
                break
            await self._open_branch(earlier["name"])
        source, fork = info.get("from_branch"), info.get("fork_entry")
        if source is None or source not in self.created:
            source, fork = next(iter(self.created)), None
        await self.store.branch_create(
            self.tenant,
            self.thread.id,
            name,
            from_branch=source,
            from_entry=fork,
            created_at=datetime.fromisoformat(info["created_at"]),
        )
        if fork is None:
            await self.store.entry_clear(self.tenant, self.thread.id, branch=name)
        self.created.add(name)

    async def _finish_thread(self) -> None:
        await self._flush()
        thread = self.thread
        if thread is None or self.skipping:
            self.thread = None
            return
        for info in self.branches:
            await self._open_branch(info["name"])
        await self.store.thread_update(
            self.tenant,
            thread.id,
            updated_at=thread.updated_at,
            current_branch=thread.current_branch,
        )
        if "main" not in {b["name"] for b in self.branches}:
            await self.store.branch_delete(self.tenant, thread.id, "main")
        self.thread = None
        self._tick("thread")

    def _skips(self, held: bool, kind: str, what: str) -> bool:
        """Whether a line of ``kind`` naming ``what`` is skipped: the target ``held`` it
        (``on_conflict``: ``fail`` raises ``Conflict``, ``overwrite`` writes it again)."""
        if held and self.on_conflict == "fail":
            raise Conflict(f"{what} already exists in the target")
        if held and self.on_conflict == "skip":
            self.report.add(self.report.skipped, kind)
            return True
        return False

    async def thread_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        thread = _checks.check_thread(data)
        thread.tenant_id = self.tenant
        branches = _checks.check_branches(data, thread)
        self.thread, self.branches, self.created = thread, branches, set()
        self.skipping, self.pending_branch = False, None
        existing = await self.store.thread_get(self.tenant, thread.id)
        if existing is not None:
            if self.on_conflict == "fail":
                raise Conflict(f"thread {thread.id!r} already exists in the target")
            # skip keeps a complete thread; a half-written one (interrupted import) is redone
            if self.on_conflict == "skip" and await self._complete(thread, branches):
                self.skipping = True
                self.report.add(self.report.skipped, "thread")
                return
            await self.store.thread_delete(self.tenant, thread.id)
        first = replace(thread, tenant_id=self.tenant, current_branch="main")  # dumped one: last
        await self.store.thread_create(first)
        self.created.add("main")
        self.report.add(self.report.written, "thread")

    async def entry_line(self, data: dict[str, Any]) -> None:
        entry = _checks.check_entry(data)
        if self.thread is None or entry.thread_id != self.thread.id:
            raise InvalidInput("an entry line must follow its thread's line", field="entry")
        if self.skipping:
            self.report.add(self.report.skipped, "entry")
            return
        if entry.branch != self.pending_branch:
            await self._flush()
            await self._open_branch(entry.branch)
            self.pending_branch = entry.branch
        self.pending.append(_new_entry(entry))
        self._vector(data, "entry", entry.id, entry.thread_id)
        if len(self.pending) >= WRITE_PAGE:
            await self._flush()
        self._tick("entry")

    async def record_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        record = _checks.check_record(data)
        existing = await self.store.record_get(self.tenant, record.kind, record.id)
        if self._skips(existing is not None, "record", f"{record.kind} {record.id!r}"):
            return
        await self.store.record_put(self.tenant, [record])
        self._vector(data, record.kind, record.id, None)
        await self._put_vectors()
        self.report.add(self.report.written, "record")
        self._tick("record")

    async def snapshot_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        run, owner, value = _checks.check_snapshot(data)
        held = await self.store.snapshot_load(self.tenant, run) is not None
        if self._skips(held, "snapshot", f"the snapshot of run {run!r}"):
            return
        await self.store.snapshot_save(
            self.tenant, run, value, user_id=owner, saved_at=self.saved_at, owner_check=False
        )
        self.report.add(self.report.written, "snapshot")
        self._tick("snapshot")

    async def working_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        run, items = _checks.check_working(data)
        held = bool(await self.store.working_items(self.tenant, run))
        if self._skips(held, "working", f"working memory of run {run!r}"):
            return
        if held:  # overwrite replaces it whole
            await self.store.working_clear(self.tenant, run)
        for key, value in items.items():
            await self.store.working_set(self.tenant, run, key, value)
        self.report.add(self.report.written, "working")
        self._tick("working")

    async def summary_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        summary = _checks.check_summary(data)
        have = await self.store.summary_list(
            self.tenant, agent_id=summary.agent_id, user_id=summary.user_id
        )
        if any(s.id == summary.id for s in have):
            # summaries have no replace in the contract: overwrite keeps the stored one
            if self.on_conflict == "fail":
                raise Conflict(f"summary {summary.id!r} already exists in the target")
            self.report.add(self.report.skipped, "summary")
            return
        await self.store.summary_add(self.tenant, summary)
        self.report.add(self.report.written, "summary")
        self._tick("summary")


#: One dumped entry: its id, idempotency key and line.
_Dumped = tuple[str, str | None, int]


class _Checker:
    """The first pass of an import: every line checked, nothing written (see the module
    docstring). Keeps what crosses lines: the current thread's branches and entries (ids,
    keys, the entries its forks start from), the ids of everything else with its line (for
    duplicates and the target's conflicts), the vectors' size, the line counts and the
    checksum."""

    def __init__(
        self, version: int, allow_partial: bool, vector_size: tuple[int, str] | None = None
    ) -> None:
        self.version = version
        self.allow_partial = allow_partial
        self.checksum = _dump.Checksum()
        self.trailer: dict[str, Any] | None = None
        #: what the lines hold, with the line that holds it
        self.threads: dict[str, int] = {}
        self.records: dict[str, dict[str, int]] = {}  # kind -> id -> line
        self.summaries: dict[str, dict[str, int]] = {}  # agent -> id -> line
        self.summary_ids: dict[str, int] = {}
        self.snapshots: dict[str, int] = {}
        self.working: dict[str, int] = {}
        #: the size every vector must have, and what says so
        self.vector_size = vector_size
        self.thread: Thread | None = None
        self.thread_line = 0
        self.branches: dict[str, dict[str, Any]] = {}
        self.wanted: set[str] = set()  # the fork entries of the current thread's branches
        self.seen: dict[str, tuple[str, int]] = {}  # fork entry -> (branch, ordinal on it)
        self.counts: dict[str, int] = {}  # entry lines per branch of the current thread
        self.dumped: dict[str, list[_Dumped]] = {}  # per branch of the current thread
        self.ids: dict[str, dict[str, int]] = {}  # branch -> entry id -> line
        self.keys: dict[str, dict[str, int]] = {}  # branch -> idempotency key -> line
        self.dropped: str | None = None  # a cut last line left out (``allow_partial``)

    def line(self, number: int, data: dict[str, Any]) -> str:
        """Check one body line; its type."""
        if self.trailer is not None:
            raise InvalidInput("a line follows the dump's trailer", field="type")
        kind = data.get("type")
        if kind == _dump.TRAILER and self.version >= _dump.TRAILER_VERSION:
            self.end_thread()
            self.trailer = data
            return _dump.TRAILER
        if kind not in _dump.LINE_TYPES:
            raise InvalidInput(
                f"unknown line type {kind!r} (a dump of version {self.version} holds"
                f" {', '.join(_dump.LINE_TYPES)})",
                field="type",
            )
        if kind == "thread":
            self.end_thread()
            thread = _checks.check_thread(data)
            branches = _checks.check_branches(data, thread)
            _once(self.threads, thread.id, number, f"thread {thread.id!r}", "thread.id")
            self.thread, self.thread_line = thread, number
            self.branches = {info["name"]: info for info in branches}
            self.wanted = {b["fork_entry"] for b in branches if b.get("fork_entry") is not None}
            self.seen, self.counts, self.dumped, self.ids, self.keys = {}, {}, {}, {}, {}
        elif kind == "entry":
            self.entry(number, data)
        else:
            self.end_thread()
            if kind == "record":
                record = _checks.check_record(data)
                self.vector(number, data)
                _once(
                    self.records.setdefault(record.kind, {}),
                    record.id,
                    number,
                    f"{record.kind} record {record.id!r}",
                    "record.id",
                )
            elif kind == "summary":
                summary = _checks.check_summary(data)
                _once(self.summary_ids, summary.id, number, f"summary {summary.id!r}", "summary.id")
                self.summaries.setdefault(summary.agent_id, {})[summary.id] = number
            elif kind == "snapshot":
                run = _checks.check_snapshot(data)[0]
                _once(
                    self.snapshots, run, number, f"the snapshot of run {run!r}", "snapshot.run_id"
                )
            else:
                run = _checks.check_working(data)[0]
                _once(
                    self.working,
                    run,
                    number,
                    f"the working memory of run {run!r}",
                    "working.run_id",
                )
        return str(kind)

    def entry(self, number: int, data: dict[str, Any]) -> None:
        entry = _checks.check_entry(data)
        self.vector(number, data)
        if self.thread is None or entry.thread_id != self.thread.id:
            raise InvalidInput(
                f"entry {entry.id!r} of thread {entry.thread_id!r} does not follow"
                " its thread's line",
                field="entry.thread_id",
            )
        if entry.branch not in self.branches:
            raise InvalidInput(
                f"entry {entry.id!r} is on branch {entry.branch!r}, which its thread's"
                " line does not list",
                field="entry.branch",
            )
        where = f"on branch {entry.branch!r} of thread {entry.thread_id!r}"
        _once(
            self.ids.setdefault(entry.branch, {}),
            entry.id,
            number,
            f"entry {entry.id!r} {where}",
            "entry.id",
        )
        key = entry.idempotency_key
        if key is not None:
            _once(
                self.keys.setdefault(entry.branch, {}),
                key,
                number,
                f"idempotency key {key!r} {where}",
                "entry.idempotency_key",
            )
        self.dumped.setdefault(entry.branch, []).append((entry.id, key, number))
        ordinal = self.counts[entry.branch] = self.counts.get(entry.branch, 0) + 1
        if entry.id in self.wanted:
            self.seen.setdefault(entry.id, (entry.branch, ordinal))

    def vector(self, number: int, data: dict[str, Any]) -> None:
        """A line's vector: valid, and of the size every vector of the import has."""
        vector = _checks.check_vector(data)
        if vector is None:
            return
        if self.vector_size is None:
            self.vector_size = (len(vector), f"the first vector of the dump (line {number})")
        elif len(vector) != self.vector_size[0]:
            size, why = self.vector_size
            raise InvalidInput(
                f"the vector has {len(vector)} numbers where {why} has {size}",
                field="vector",
            )

    def _holds(self, branch: str, entry: str, upto: int | None, depth: int = 0) -> bool:
        """Whether ``branch`` will hold ``entry`` once imported (within its first ``upto``
        dumped entries when given): dumped on it, or in the prefix it forks with."""
        found = self.seen.get(entry)
        if found is not None and found[0] == branch:
            return upto is None or found[1] <= upto
        info = self.branches.get(branch)
        if info is None or depth > len(self.branches):
            return False
        fork, source = info.get("fork_entry"), info.get("from_branch")
        if fork is None or source is None or not self._holds(source, fork, None, depth + 1):
            return False
        if entry == fork:
            return True
        # entry is in the shared prefix if it comes before the fork entry on the source
        where, fork_at = self.seen.get(entry), self.seen.get(fork)
        if where is not None and fork_at is not None and where[0] == fork_at[0]:
            return where[1] <= fork_at[1]
        return False

    def _content(self, branch: str, held: dict[str, list[_Dumped]]) -> list[_Dumped]:
        """The entries ``branch`` holds once imported, oldest first: the prefix it shares
        with its source (up to the fork entry), then its dumped ones."""
        if branch in held:
            return held[branch]
        held[branch] = []  # a cycle of sources reads as empty (refused elsewhere)
        info = self.branches[branch]
        fork, source = info.get("fork_entry"), info.get("from_branch")
        prefix: list[_Dumped] = []
        if fork is not None and source in self.branches:
            for item in self._content(source, held):
                prefix.append(item)
                if item[0] == fork:
                    break
        held[branch] = prefix + self.dumped.get(branch, [])
        return held[branch]

    def _shared(self, name: str, held: dict[str, list[_Dumped]]) -> None:
        """No dumped entry of branch ``name`` repeats an id or idempotency key of the
        entries it shares with its source (the store would refuse or skip it)."""
        assert self.thread is not None
        dumped = self.dumped.get(name, [])
        if not dumped:
            return
        shared = self._content(name, held)[: -len(dumped)]
        ids = {item[0]: item[2] for item in shared}
        keys = {item[1]: item[2] for item in shared if item[1] is not None}
        info = self.branches[name]
        for entry_id, key, number in dumped:
            first = ids.get(entry_id)
            what, field = f"entry {entry_id!r}", "entry.id"
            if first is None and key is not None:
                first = keys.get(key)
                what, field = f"idempotency key {key!r}", "entry.idempotency_key"
            if first is not None:
                raise _checks.DumpLineError(
                    number,
                    f"{what} is already on branch {name!r} of thread {self.thread.id!r}: the"
                    f" branch shares it with {info.get('from_branch')!r} up to its fork entry"
                    f" (line {first})",
                    field=field,
                )

    def end_thread(self) -> None:
        """The current thread is complete: every branch's fork entry must be in the dump, and
        no branch may hold an entry id or idempotency key twice (shared prefix included)."""
        if self.thread is None:
            return
        for name, info in self.branches.items():
            fork, source = info.get("fork_entry"), info.get("from_branch")
            if fork is not None and source is not None and not self._holds(source, fork, None):
                raise _checks.DumpLineError(
                    self.thread_line,
                    f"thread {self.thread.id!r}: branch {name!r} forks from {source!r} at entry"
                    f" {fork!r}, and that fork entry is missing from the dump (a dump cut"
                    " short, or edited)",
                    field="fork_entry",
                )
        held: dict[str, list[_Dumped]] = {}
        for name in self.branches:
            self._shared(name, held)
        self.thread, self.branches, self.wanted, self.seen = None, {}, set(), {}
        self.dumped, self.ids, self.keys = {}, {}, {}


def _once(seen: dict[str, int], key: str, number: int, what: str, field: str) -> None:
    """Note ``key`` at line ``number``; a ``DumpLineError`` when an earlier line has it."""
    first = seen.setdefault(key, number)
    if first != number:
        raise _checks.DumpLineError(
            number, f"{what} appears twice in the dump (first on line {first})", field=field
        )


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), WRITE_PAGE):
        yield ids[start : start + WRITE_PAGE]


async def _listed(store: AsyncStore, tenant: str, kind: str, wanted: dict[str, int]) -> set[str]:
    """Which of ``wanted``'s runs the target holds a snapshot (``kind`` ``snapshot``) or
    working memory (``working``) of: from the store's run listing, a page at a time, or
    one read a run when the store cannot list them."""
    lister = store.snapshot_runs if kind == "snapshot" else store.working_runs
    found: set[str] = set()
    after: str | None = None
    while True:
        page = await lister(tenant, after=after, limit=WRITE_PAGE)
        if page is None:  # the store cannot list its runs
            for run in wanted:
                if kind == "snapshot":
                    held = await store.snapshot_load(tenant, run) is not None
                else:
                    held = bool(await store.working_items(tenant, run))
                if held:
                    found.add(run)
            return found
        found.update(run for run in page if run in wanted)
        if len(page) < WRITE_PAGE:
            return found
        after = page[-1]


async def _check_target(store: AsyncStore, tenant: str, checker: _Checker) -> None:
    """Under ``on_conflict="fail"``: refuse (``Conflict``), naming the first such line, a
    dump holding what the target already holds (one batch read per kind, see the module
    docstring)."""
    found: list[tuple[int, str]] = []  # (line, what)
    ids = list(checker.threads)
    for chunk in _chunks(ids):
        for thread_id in await store.thread_get_many(tenant, chunk):
            found.append((checker.threads[thread_id], f"thread {thread_id!r}"))
    for kind, records in checker.records.items():
        for chunk in _chunks(list(records)):
            for record_id in await store.record_get_many(tenant, kind, chunk):
                found.append((records[record_id], f"{kind} record {record_id!r}"))
    for agent, summaries in checker.summaries.items():
        for summary in await store.summary_list(tenant, agent_id=agent, user_id=UNSET):
            if summary.id in summaries:
                found.append((summaries[summary.id], f"summary {summary.id!r}"))
    for kind, runs, what in (
        ("snapshot", checker.snapshots, "the snapshot of run"),
        ("working", checker.working, "the working memory of run"),
    ):
        if runs:
            for run in await _listed(store, tenant, kind, runs):
                found.append((runs[run], f"{what} {run!r}"))
    if found:
        number, what = min(found)
        more = f" (and {len(found) - 1} more line(s) of the dump)" if len(found) > 1 else ""
        raise Conflict(
            f"line {number} of the dump: {what} already exists in the target{more}; on_conflict"
            " 'fail' refuses the import and nothing was written ('skip' keeps what the"
            " target holds, 'overwrite' replaces it)"
        )


def _spool() -> IO[str]:
    """Where the first pass keeps the checked lines for the second (a temporary file)."""
    return tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")


def _vector_size(
    model: object, model_id: str | None, dimensions: int | None
) -> tuple[int, str] | None:
    """The size the dump's vectors must have, and what says so: the target's embedder
    (``dimensions``, when its model is the dump's), or a model id that names it
    (``...@1536``); ``None``: the dump's first vector sets it."""
    if not isinstance(model, str):
        return None
    if dimensions is not None and model == model_id:
        return dimensions, f"the target's embedder ({model_id!r})"
    sized = _SIZED_MODEL.search(model)
    if sized is not None:
        return int(sized.group(1)), f"the dump's model ({model!r})"
    return None


async def import_dump(
    store: AsyncStore,
    tenant: str | None,
    lines: Iterable[str],
    *,
    on_conflict: OnConflict = "fail",
    model_id: str | None = None,
    progress: Progress | None = None,
    allow_partial: bool = False,
    plan: Callable[[dict[str, int]], None] | None = None,
    dimensions: int | None = None,
) -> ImportReport:
    """Write a dump's ``lines`` into ``store``, all or nothing; what was written and skipped.

    Two passes (see the module docstring). The first checks every line
    (``memorybank.dump.checks``: the rules of the library's own writes), the order of
    threads and entries, that every branch's fork entry is there, duplicates of every
    kind, the vectors' size, and the trailer's counts and checksum, writing nothing
    and keeping the lines in a temporary file; then, under ``on_conflict="fail"``,
    whether the target already holds any of it. A refused dump raises
    ``InvalidInput`` (``DumpLineError`` with the line number) and nothing of it is
    written. The second pass writes, in one ``store.atomic(tenant)`` when the store
    claims ``Capability.ATOMIC`` (``report.atomic``): then an import that fails or is
    killed while writing leaves the target as it was.

    ``tenant`` ``None`` keeps the dump's tenant; either way a reserved tenant
    (``~...``, the server's) is refused. A version 3 dump must end with its
    trailer and agree with it: otherwise ``InvalidInput(field="trailer")``,
    unless ``allow_partial`` (then what is there is written, a cut last line
    left out, and ``report.partial`` says why). Version 1 and 2 dumps have no
    trailer: they import with a warning in ``report.warnings``.

    ``on_conflict`` decides for a thread, record, summary, snapshot or working memory
    that already exists: ``"fail"`` refuses the import before anything is written
    (``DumpLineError`` naming the first such line), ``"skip"`` keeps the stored one (a
    thread only when complete: a thread left half-written by an interrupted import
    into a store without ``ATOMIC`` is written again, so re-running resumes), and
    ``"overwrite"`` replaces it (summaries excepted: kept). A run's snapshot and its
    working memory (version 2) count as one item each; ``overwrite`` replaces the
    working memory whole.

    Vectors in the dump are written only when ``model_id`` (the target's
    embedder model) is the dump's ``vector_model``; otherwise they are left
    out and counted in ``vectors_dropped`` (re-embed with ``embed_pending``).
    Every vector must have one size: ``dimensions`` (the target's embedder's, when
    ``model_id`` is the dump's model), else the size a model id like ``...@1536``
    names, else the first vector's. ``progress`` is called with each line's type as
    it is written, ``plan`` once before writing with the counts of lines per type.
    """
    iterator = iter(lines)
    first = next(iterator, None)
    if first is None:
        raise InvalidInput("the dump is empty", field="header")
    first = first.rstrip("\r\n")
    head = _dump.parse_header(first)
    target = tenant if tenant is not None else head.get("tenant")
    if target is None:
        raise InvalidInput("the dump names no tenant; pass one", field="tenant")
    target = v.check_tenant(target, "tenant")
    version = int(head["version"])
    model = head.get("vector_model")
    carry = model if isinstance(model, str) and model == model_id else None
    report = ImportReport()
    report.vector_model = model if isinstance(model, str) else None
    unlisted = head.get("unlisted")
    report.unlisted = [str(u) for u in unlisted] if isinstance(unlisted, list) else []
    saved_at = datetime.now(UTC)  # for snapshots: the header's created_at
    created = head.get("created_at")
    if isinstance(created, str):
        try:
            saved_at = v.check_time(datetime.fromisoformat(created), "header.created_at")
        except ValueError as error:
            raise InvalidInput("the header's created_at is not a time", field="header") from error
    checker = _Checker(version, allow_partial, _vector_size(model, model_id, dimensions))
    checker.checksum.add(first)
    with _spool() as spool:
        _check_all(checker, iterator, spool, report)
        if on_conflict == "fail":
            await _check_target(store, target, checker)
        if plan is not None:
            plan(dict(checker.checksum.counts))
        spool.seek(0)
        if Capability.ATOMIC in store.capabilities:
            report.atomic = True
            async with store.atomic(target) as view:
                await _write(view, target, spool, on_conflict, progress, carry, report, saved_at)
        else:
            await _write(store, target, spool, on_conflict, progress, carry, report, saved_at)
    return report


async def _write(
    store: AsyncStore,
    target: str,
    spool: IO[str],
    on_conflict: OnConflict,
    progress: Progress | None,
    carry: str | None,
    report: ImportReport,
    saved_at: datetime,
) -> None:
    """The second pass (see ``import_dump``): write the checked lines of ``spool``."""
    importer = _Importer(store, target, on_conflict, progress, carry)
    importer.report = report
    importer.saved_at = saved_at
    handlers = {
        "thread": importer.thread_line,
        "entry": importer.entry_line,
        "record": importer.record_line,
        "summary": importer.summary_line,
        "snapshot": importer.snapshot_line,
        "working": importer.working_line,
    }
    for spooled in spool:
        where, _, text = spooled.partition(" ")
        number = int(where)
        try:
            data = _checks.parse_line(text)
            handler = handlers.get(str(data.get("type")))
            if handler is not None:
                await handler(data)
        except InvalidInput as error:  # checked in the first pass: a store-side refusal
            raise _checks.DumpLineError(number, str(error), field=error.field) from error
        except Conflict as error:  # checked in the first pass: a write meanwhile
            raise Conflict(f"line {number} of the dump: {error}") from error
    await importer._finish_thread()


def _check_all(
    checker: _Checker, lines: Iterator[str], spool: IO[str], report: ImportReport
) -> None:
    """The first pass (see ``import_dump``): check every line into ``spool``, then the
    trailer."""
    pending: tuple[int, InvalidInput] | None = None  # a line that is not JSON: the last?
    number = 1
    for number, raw in enumerate(lines, start=2):
        if pending is not None:
            raise _checks.DumpLineError(pending[0], str(pending[1]), field=pending[1].field)
        text = raw.rstrip("\r\n")
        if "\n" in text or "\r" in text:
            raise _checks.DumpLineError(number, "a line break inside a line", field="line")
        try:
            data = _checks.parse_line(text) if text.strip() else None
        except InvalidInput as error:
            if error.field == "line" and checker.allow_partial and checker.trailer is None:
                pending = (number, error)  # taken as the cut end if no line follows
                continue
            raise _checks.DumpLineError(number, str(error), field=error.field) from error
        if data is None:
            if checker.trailer is None:
                checker.checksum.add(text)
            continue
        try:
            kind = checker.line(number, data)
        except _checks.DumpLineError:
            raise
        except InvalidInput as error:
            raise _checks.DumpLineError(number, str(error), field=error.field) from error
        if kind == _dump.TRAILER:
            continue
        checker.checksum.add(text, kind)
        spool.write(f"{number} {text}\n")  # the line's number for the second pass's errors
    if pending is not None:
        checker.dropped = f"line {pending[0]} (not JSON: cut in the middle) was left out"
    checker.end_thread()
    _check_trailer(checker, number, report)


def _check_trailer(checker: _Checker, last: int, report: ImportReport) -> None:
    """The trailer's verdict: fine, a warning (old dump), partial (allowed) or an error."""
    if checker.version < _dump.TRAILER_VERSION:
        report.warnings.append(
            f"this version {checker.version} dump has no trailer: whether it is complete"
            " cannot be checked (dumps of version 3 and later can)"
        )
        return
    problem: str | None = None
    trailer = checker.trailer
    if trailer is None:
        problem = (
            f"the dump has no trailer (its last line, {last}, is not the 'end' line): it was"
            " cut short"
        )
    else:
        counts = trailer.get("counts")
        have = checker.checksum.counts
        if not isinstance(counts, dict):
            problem = "the trailer has no counts"
        else:
            wrong = [
                f"{kind}: {counts.get(kind, 0)} announced, {have.get(kind, 0)} found"
                for kind in sorted(set(counts) | set(have))
                if counts.get(kind, 0) != have.get(kind, 0)
            ]
            if wrong:
                problem = "the dump's lines disagree with its trailer (" + "; ".join(wrong) + ")"
            elif trailer.get("sha256") != checker.checksum.hexdigest():
                problem = "the dump's checksum disagrees with its trailer: a line was changed"
    if checker.dropped is not None:
        problem = f"{problem}; {checker.dropped}" if problem else checker.dropped
    if problem is None:
        return
    if not checker.allow_partial:
        raise InvalidInput(
            f"{problem}. Nothing was written; --allow-partial (allow_partial=True) imports"
            " what is there",
            field="trailer",
        )
    report.partial = problem
