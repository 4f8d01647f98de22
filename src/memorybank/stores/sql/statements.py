"""Statements written once for SQLite, PostgreSQL and MySQL/MariaDB (their differences in
``memorybank.stores.sql.dialect``), one function a statement: threads and branches
(forks, their copies and deletes), records, working memory, entry reads, updates,
deletes and compaction, and a user's erasure. I/O-free: the verbs that run them the
same way on every engine are ``memorybank.stores.sql._async.core.SQLCore``; each store
runs the rest with its own driver (SQLite in one connection, PostgreSQL in one
statement where it can, MySQL in one round trip of several), and keeps only what its
engine does its own way (PostgreSQL's prepared statements over arrays, MySQL's kept
branch counts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from memorybank.errors import Conflict, NotFound
from memorybank.records import Branch, Summary, Thread
from memorybank.stores.contract.types import Unset, Visibility
from memorybank.stores.sql.common import THREAD_COLUMNS, dump, row_to_branch, scope_sql
from memorybank.stores.sql.dialect import Dialect

if TYPE_CHECKING:
    from memorybank.stores.contract.items import Record

__all__ = [
    "FORGET_COUNTED",
    "EntryPage",
    "RunStatements",
    "after_position",
    "branch_copy_query",
    "branch_deletable",
    "branch_entries",
    "branch_fork_query",
    "branch_list_query",
    "branch_named",
    "branch_of_query",
    "branches_found",
    "compact_prefix_query",
    "created_bounds",
    "entries_by_ids_query",
    "entry_pairs_query",
    "entry_position_query",
    "entry_update_rows",
    "entry_vectors_gone",
    "entry_windows_query",
    "forget_user_queries",
    "fork_point",
    "ids_in",
    "marks",
    "owner_filter",
    "qualified",
    "record_list_query",
    "record_page_query",
    "record_upsert",
    "records_by_ids_query",
    "records_by_keys_query",
    "records_delete_query",
    "run_statements",
    "taken_ids_query",
    "thread_delete_queries",
    "thread_get_query",
    "thread_insert",
    "thread_list_query",
    "thread_sets",
    "thread_update_query",
    "updated_thread",
]


def qualified(alias: str, columns: str) -> str:
    """``columns`` (comma-separated) each prefixed with ``alias``."""
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


def marks(d: Dialect, count: int) -> str:
    """``count`` placeholders, comma-separated (an ``IN`` list or a row of values)."""
    return ", ".join([d.mark] * count)


# -- threads and branches ------------------------------------------------------------


def thread_get_query(d: Dialect, threads: str) -> str:
    """One thread by id (``THREAD_COLUMNS``); parameters ``(tenant, id)``."""
    return f"SELECT {THREAD_COLUMNS} FROM {threads} WHERE tenant_id = {d.mark} AND id = {d.mark}"


def thread_insert(d: Dialect, threads: str, thread: Thread) -> tuple[str, tuple[Any, ...]]:
    """The thread's row (its first branch is the caller's: each engine keeps other
    counters on it). PostgreSQL inserts both in one statement instead."""
    sql = f"INSERT INTO {threads} ({THREAD_COLUMNS}) VALUES ({marks(d, 5)}, {d.json_mark},"
    sql += f" {marks(d, 4)})"
    return sql, (
        thread.id, thread.tenant_id, thread.user_id, thread.agent_id, thread.title,
        dump(thread.metadata), thread.status, d.time(thread.created_at),
        d.time(thread.updated_at), thread.current_branch,
    )  # fmt: skip


def thread_list_query(
    d: Dialect,
    source: str,
    tenant: str,
    *,
    user_id: str | Unset | None,
    agent_id: str | Unset | None,
    status: str | None,
    limit: int | None,
) -> tuple[str, list[Any]]:
    """``thread_list``'s read from ``source`` (the table, with an index hint where the
    engine needs one): newest ``updated_at`` first, then id."""
    owners, params = owner_filter(d, "", user_id=user_id, agent_id=agent_id)
    if status is not None:
        owners += f" AND status = {d.mark}"
        params.append(status)
    sql = (
        f"SELECT {THREAD_COLUMNS} FROM {source} WHERE tenant_id = {d.mark}{owners}"
        f" ORDER BY updated_at DESC, id DESC LIMIT {d.mark}"
    )
    return sql, [tenant, *params, d.no_limit if limit is None else limit]


def thread_sets(
    d: Dialect,
    *,
    updated_at: datetime,
    title: str | Unset | None,
    metadata: dict[str, Any] | Unset,
    status: str | Unset,
    current_branch: str | Unset,
) -> tuple[str, list[Any]]:
    """``thread_update``'s ``SET`` list (``updated_at`` and each given field) and its
    parameters, in order. The caller checks that a new ``current_branch`` exists."""
    sets = [f"updated_at = {d.mark}"]
    params: list[Any] = [d.time(updated_at)]
    given = (
        ("title", d.mark, title),
        ("metadata", d.json_mark, metadata if isinstance(metadata, Unset) else dump(metadata)),
        ("status", d.mark, status),
        ("current_branch", d.mark, current_branch),
    )
    for column, mark, value in given:
        if not isinstance(value, Unset):
            sets.append(f"{column} = {mark}")
            params.append(value)
    return ", ".join(sets), params


def thread_update_query(
    d: Dialect,
    threads: str,
    branches: str,
    tenant: str,
    thread_id: str,
    *,
    updated_at: datetime,
    title: str | Unset | None,
    metadata: dict[str, Any] | Unset,
    status: str | Unset,
    current_branch: str | Unset,
) -> tuple[str, list[Any]]:
    """``thread_update``'s ``UPDATE``: the given fields, only where a new
    ``current_branch`` exists (the caller reads the thread back in the same
    transaction). ``updated_thread`` then names what was missing."""
    sets, params = thread_sets(
        d, updated_at=updated_at, title=title, metadata=metadata, status=status,
        current_branch=current_branch,
    )  # fmt: skip
    sql = f"UPDATE {threads} SET {sets} WHERE tenant_id = {d.mark} AND id = {d.mark}"
    params += [tenant, thread_id]
    if not isinstance(current_branch, Unset):
        sql += (
            f" AND EXISTS (SELECT 1 FROM {branches} b WHERE b.tenant_id = {d.mark}"
            f" AND b.thread_id = {d.mark} AND b.name = {d.mark})"
        )
        params += [tenant, thread_id, current_branch]
    return sql, params


def updated_thread(thread: Thread | None, thread_id: str, current_branch: str | Unset) -> Thread:
    """The thread after ``thread_update_query`` (read back, or as it stands when the
    update matched nothing): ``NotFound`` for the thread, or for the new current branch
    when the thread does not name it (the update's branch test refused it)."""
    if thread is None:
        raise NotFound(f"thread {thread_id!r} not found")
    if not isinstance(current_branch, Unset) and thread.current_branch != current_branch:
        raise NotFound(f"branch {current_branch!r} not found")
    return thread


def thread_delete_queries(
    d: Dialect, threads: str, branches: str, entries: str, vectors: str
) -> tuple[str, str, str, str]:
    """Delete a thread, its branches, its entries and their vectors, in this order (in
    one transaction); each takes ``(tenant, thread_id)``. PostgreSQL: one statement."""
    of = f"WHERE tenant_id = {d.mark} AND thread_id = {d.mark}"
    return (
        f"DELETE FROM {threads} WHERE tenant_id = {d.mark} AND id = {d.mark}",
        f"DELETE FROM {branches} {of}",
        f"DELETE FROM {entries} {of}",
        f"DELETE FROM {vectors} {of} AND kind = 'entry'",
    )


def branch_fork_query(
    d: Dialect, threads: str, branches: str, entries: str, *, extra: str = "NULL", lock: str = ""
) -> str:
    """What a fork needs, in one read (``lock``: the engine's lock of the thread row):
    the thread, the source branch, a branch already named so, the position of the
    entry the fork is cut at on the source, and ``extra`` (an engine's own column of
    the source ``s``). Parameters ``(from_entry, from_branch, name, tenant, thread_id)``;
    ``fork_point`` reads the row."""
    on = "tenant_id = t.tenant_id AND {0}.thread_id = t.id AND {0}.name = " + d.mark
    return (
        f"SELECT t.id, s.name, n.name, (SELECT e.position FROM {entries} e"
        " WHERE e.tenant_id = t.tenant_id AND e.thread_id = t.id AND e.branch = s.name"
        f" AND e.id = {d.mark}), {extra} FROM {threads} t"
        f" LEFT JOIN {branches} s ON s.{on.format('s')}"
        f" LEFT JOIN {branches} n ON n.{on.format('n')}"
        f" WHERE t.tenant_id = {d.mark} AND t.id = {d.mark}{lock}"
    )


def fork_point(
    rows: Sequence[Sequence[Any]],
    thread_id: str,
    name: str,
    from_branch: str,
    from_entry: str | None,
) -> int | None:
    """The rule of a fork, from ``branch_fork_query``'s rows: the thread and the source
    branch exist, ``name`` is free, ``from_entry`` (if given) is on the source. The
    position the copy ends at (``None``: the whole source)."""
    if not rows:
        raise NotFound(f"thread {thread_id!r} not found")
    _, source, taken, position, _ = rows[0]
    if source is None:
        raise NotFound(f"branch {from_branch!r} not found")
    if taken is not None:
        raise Conflict(f"branch {name!r} already exists")
    if from_entry is not None and position is None:
        raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
    return None if from_entry is None else int(position)


def branch_list_query(d: Dialect, threads: str, branches: str) -> str:
    """The thread's branches by creation time, then name, in one read with the thread:
    a row of NULLs for a thread without branches, none without the thread
    (``branches_found``); parameters ``(tenant, thread_id)``."""
    return (
        "SELECT b.name, b.thread_id, b.created_at, b.from_branch, b.from_entry"
        f" FROM {threads} t LEFT JOIN {branches} b ON b.tenant_id = t.tenant_id"
        f" AND b.thread_id = t.id WHERE t.tenant_id = {d.mark} AND t.id = {d.mark}"
        " ORDER BY b.created_at, b.name"
    )


def branches_found(rows: Sequence[Sequence[Any]], thread_id: str) -> list[Branch]:
    """The branches of ``branch_list_query``'s rows; ``NotFound`` without the thread."""
    if not rows:
        raise NotFound(f"thread {thread_id!r} not found")
    return [row_to_branch(row) for row in rows if row[0] is not None]


def owner_filter(d: Dialect, alias: str, **columns: str | Unset | None) -> tuple[str, list[Any]]:
    """``" AND ..."`` conditions matching each given column exactly (``None``: no value),
    and their parameters. ``IS NULL`` and ``=`` keep every engine on its indexes."""
    sql = ""
    params: list[Any] = []
    for column, value in columns.items():
        if isinstance(value, Unset):
            continue
        if value is None:
            sql += f" AND {alias}{column} IS NULL"
        else:
            sql += f" AND {alias}{column} = {d.mark}"
            params.append(value)
    return sql, params


# -- entries -----------------------------------------------------------------------


def entries_by_ids_query(d: Dialect, entries: str, threads: str, columns: str, count: int) -> str:
    """``count`` entries by id on a branch (``None``: the thread's current one), read
    with the thread row: none when the thread is absent. ``columns`` on ``e``;
    parameters ``(tenant, thread_id, branch, *ids)``."""
    return (
        f"SELECT {columns} FROM {entries} e JOIN {threads} t"
        " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
        f" WHERE e.tenant_id = {d.mark} AND e.thread_id = {d.mark}"
        f" AND e.branch = COALESCE({d.mark}, t.current_branch) AND e.id IN ({marks(d, count)})"
    )


def entry_update_rows(
    d: Dialect,
    entries: str,
    tenant: str,
    thread_id: str,
    branch: str,
    changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
) -> tuple[str, list[tuple[Any, ...]]]:
    """``entry_update``'s statement and a row of parameters per change: an entry's
    content, state and token count, by id on ``branch``."""
    sql = (
        f"UPDATE {entries} SET content = {d.mark}, state = {d.json_mark}, token_count = {d.mark}"
        f" WHERE tenant_id = {d.mark} AND thread_id = {d.mark} AND branch = {d.mark}"
        f" AND id = {d.mark}"
    )
    rows = [
        (content, dump(state), tokens, tenant, thread_id, branch, entry_id)
        for entry_id, content, state, tokens in changes
    ]
    return sql, rows


def compact_prefix_query(d: Dialect, entries: str, verb: str) -> str:
    """The branch's entries up to a position, for compaction: ``verb`` is
    ``"SELECT id"`` (add ``ORDER BY position``, and a lock where the engine takes one)
    or ``"DELETE"``; parameters ``(tenant, thread_id, branch, through_position)``."""
    return (
        f"{verb} FROM {entries} WHERE tenant_id = {d.mark} AND thread_id = {d.mark}"
        f" AND branch = {d.mark} AND position <= {d.mark}"
    )


# -- records -----------------------------------------------------------------------


def record_upsert(
    d: Dialect, table: str, tenant: str, records: Sequence[Record]
) -> tuple[str, list[tuple[Any, ...]]]:
    """One upsert by (tenant, kind, id) and each record's parameters (``executemany``,
    or a statement a record). PostgreSQL upserts a batch as one JSON parameter instead."""
    updated = (
        "agent_id", "user_id", d.key_column, "content", "data", "created_at", "updated_at",
        "expires_at", "revision",
    )  # fmt: skip
    sql = (
        f"INSERT INTO {table} (tenant_id, kind, id, {', '.join(updated)})"
        f" VALUES ({marks(d, 7)}, {d.json_mark}, {marks(d, 4)})"
        + d.upsert("tenant_id, kind, id", updated)
    )
    rows = [
        d.upsert_params(
            (
                tenant, r.kind, r.id, r.agent_id, r.user_id, r.key, r.content, dump(r.data),
                d.time(r.created_at), d.time(r.updated_at),
                None if r.expires_at is None else d.time(r.expires_at), r.revision,
            ),
            len(updated),
        )
        for r in records
    ]  # fmt: skip
    return sql, rows


def records_by_ids_query(d: Dialect, table: str, columns: str, count: int) -> str:
    """``count`` records of one kind by id (their primary key); parameters
    ``(tenant, kind, *ids)``."""
    return (
        f"SELECT {columns} FROM {table} WHERE tenant_id = {d.mark} AND kind = {d.mark}"
        f" AND id IN ({marks(d, count)})"
    )


def records_delete_query(d: Dialect, table: str, count: int) -> str:
    """Delete ``count`` rows of one kind by id from ``table`` (the records, or their
    vectors); parameters ``(tenant, kind, *ids)``."""
    return (
        f"DELETE FROM {table} WHERE tenant_id = {d.mark} AND kind = {d.mark}"
        f" AND id IN ({marks(d, count)})"
    )


def records_by_keys_query(
    d: Dialect, table: str, columns: str, kinds: int, keys: int, visible_to: Visibility | None
) -> tuple[str, list[Any]]:
    """The records of ``kinds`` kinds holding one of ``keys`` keys (the key index, every
    kind at once) that ``visible_to`` may see; parameters ``(tenant, *kinds, *keys,
    *scope)``, the scope's returned here. Unsorted: the caller merges the chunks."""
    scope, params = scope_sql("", visible_to, d.mark)
    sql = (
        f"SELECT {columns} FROM {table} WHERE tenant_id = {d.mark}"
        f" AND kind IN ({marks(d, kinds)}) AND {d.key_column} IN ({marks(d, keys)}){scope}"
    )
    return sql, params


def record_page_query(
    d: Dialect,
    table: str,
    index: str,
    columns: str,
    tenant: str,
    kind: str,
    *,
    limit: int,
    after: tuple[datetime, str] | None,
    visible_to: Visibility | None,
) -> tuple[str, list[Any]]:
    """``record_page``'s read: one range of the (tenant, kind, created_at, id) index
    ``index`` from the cursor ``after``, as ``r``."""
    where = f"r.tenant_id = {d.mark} AND r.kind = {d.mark}"
    params: list[Any] = [tenant, kind]
    if after is not None:
        at = d.time(after[0])
        if d.row_values:
            where += f" AND (r.created_at, r.id) > ({d.mark}, {d.mark})"
            params += [at, after[1]]
        else:
            where += (
                f" AND (r.created_at > {d.mark} OR (r.created_at = {d.mark} AND r.id > {d.mark}))"
            )
            params += [at, at, after[1]]
    scope, scope_params = scope_sql("r.", visible_to, d.mark)
    sql = (
        f"SELECT {columns} FROM {table} r{d.hint(index)} WHERE {where}{scope}"
        f" ORDER BY r.created_at, r.id LIMIT {d.mark}"
    )
    return sql, [*params, *scope_params, limit]


def record_list_query(
    d: Dialect,
    table: str,
    columns: str,
    tenant: str,
    kind: str,
    *,
    agent_id: str | Unset | None,
    user_id: str | Unset | None,
    key: str | Unset | None,
    visible_to: Visibility | None,
    limit: int | None,
) -> tuple[str, list[Any]]:
    """``record_list``'s statement: the kind's records that match, oldest first
    (``created_at``, then id), at most ``limit``."""
    owners, owner_params = owner_filter(
        d, "r.", agent_id=agent_id, user_id=user_id, **{d.key_column: key}
    )
    scope, scope_params = scope_sql("r.", visible_to, d.mark)
    sql = (
        f"SELECT {columns} FROM {table} r WHERE r.tenant_id = {d.mark} AND r.kind = {d.mark}"
        f"{owners}{scope} ORDER BY r.created_at, r.id LIMIT {d.mark}"
    )
    return sql, [tenant, kind, *owner_params, *scope_params, d.no_limit if limit is None else limit]


def taken_ids_query(
    d: Dialect,
    entries: str,
    threads: str,
    tenant: str,
    thread_id: str,
    branch: str | None,
    ids: Sequence[str],
) -> tuple[str, list[Any]]:
    """The ``(id, branch)`` of those of ``ids`` that ``branch`` (``None``: the thread's
    current one) holds: the read after an append the unique index on entry ids refused,
    to name the id (``memorybank.rules.entry_ids.first_taken``)."""
    marks = ", ".join([d.mark] * len(ids))
    sql = (
        f"SELECT e.id, e.branch FROM {entries} e JOIN {threads} t"
        " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
        f" WHERE e.tenant_id = {d.mark} AND e.thread_id = {d.mark}"
        f" AND e.branch = COALESCE({d.mark}, t.current_branch) AND e.id IN ({marks})"
    )
    return sql, [tenant, thread_id, branch, *ids]


# -- per-run state -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunStatements:
    """A run's working memory (its keys: ``(tenant, run_id, key)``) and snapshot
    (``(tenant, run_id)``) statements, and an agent's summaries. The upserts take
    their ``*_params``; an owner-checked snapshot write claims the run
    (``snapshot_claim``, the upsert's row) or reads its owner under the row's lock
    (``snapshot_owner``)."""

    working_set: str
    working_get: str
    working_delete: str
    working_items: str
    working_clear: str
    snapshot_save: str
    snapshot_claim: str
    snapshot_owner: str
    snapshot_load: str
    snapshot_delete: str
    summary_add: str
    summary_list: str

    @staticmethod
    def working_set_params(
        d: Dialect, tenant: str, run_id: str, key: str, value: str
    ) -> tuple[Any, ...]:
        return d.upsert_params((tenant, run_id, key, value), 1)

    @staticmethod
    def snapshot_save_params(
        d: Dialect, tenant: str, run_id: str, user_id: str | None, value: str, at: datetime
    ) -> tuple[Any, ...]:
        return d.upsert_params((tenant, run_id, user_id, value, d.time(at)), 3)

    @staticmethod
    def summary_params(d: Dialect, tenant: str, s: Summary) -> tuple[Any, ...]:
        return (tenant, s.id, s.agent_id, s.user_id, s.content, d.time(s.created_at))


@cache
def run_statements(
    d: Dialect, working: str, snapshots: str, summaries: str, summary_order: str = "id"
) -> RunStatements:
    """The ``RunStatements`` of these tables (built once per store). ``summary_list``
    takes ``(tenant, agent_id, *any_user(user_id))``; it orders ties of ``created_at``
    by ``summary_order`` (PostgreSQL: its insertion sequence)."""
    m, k = d.mark, d.key_column
    run = f"tenant_id = {m} AND run_id = {m}"
    return RunStatements(
        working_set=(
            f"INSERT INTO {working} (tenant_id, run_id, {k}, value) VALUES ({marks(d, 4)})"
            + d.upsert(f"tenant_id, run_id, {k}", ("value",))
        ),
        working_get=f"SELECT value FROM {working} WHERE {run} AND {k} = {m}",
        working_delete=f"DELETE FROM {working} WHERE {run} AND {k} = {m}",
        working_items=f"SELECT {k}, value FROM {working} WHERE {run} ORDER BY {k}",
        working_clear=f"DELETE FROM {working} WHERE {run}",
        snapshot_save=(
            f"INSERT INTO {snapshots} (tenant_id, run_id, user_id, value, saved_at)"
            f" VALUES ({marks(d, 5)})"
            + d.upsert("tenant_id, run_id", ("user_id", "value", "saved_at"))
        ),
        snapshot_claim=(
            f"INSERT INTO {snapshots} (tenant_id, run_id, user_id, value, saved_at)"
            f" VALUES ({marks(d, 5)})" + d.if_absent("tenant_id, run_id")
        ),
        snapshot_owner=f"SELECT user_id FROM {snapshots} WHERE {run}{d.lock_row}",
        snapshot_load=f"SELECT user_id, value FROM {snapshots} WHERE {run}",
        snapshot_delete=f"DELETE FROM {snapshots} WHERE {run}",
        summary_add=(
            f"INSERT INTO {summaries} (tenant_id, id, agent_id, user_id, content, created_at)"
            f" VALUES ({marks(d, 6)})"
        ),
        summary_list=(
            f"SELECT id, agent_id, user_id, content, created_at FROM {summaries}"
            f" WHERE tenant_id = {m} AND agent_id = {m}"
            f" AND ({m} OR user_id IS NULL OR user_id = {m}) ORDER BY created_at, {summary_order}"
        ),
    )


# -- erasure and deletes of entries ------------------------------------------------------


def _user_threads(
    d: Dialect, t: Callable[[str], str], table: str, extra: str = ""
) -> tuple[str, int]:
    """Delete the rows of ``table`` (by ``thread_id``) of the user's threads, and how
    many parameters it takes (``(tenant, user_id)``, the tenant twice for three).
    MySQL deletes through a join (a single-table ``DELETE ... IN (SELECT ...)`` is a
    dependent subquery per row on MariaDB)."""
    m = d.mark
    if d.quote:  # MySQL/MariaDB
        return (
            f"DELETE x FROM {t(table)} x JOIN {t('threads')} t ON t.tenant_id = x.tenant_id"
            f" AND t.id = x.thread_id WHERE t.tenant_id = {m} AND t.user_id = {m}{extra}",
            2,
        )
    return (
        f"DELETE FROM {t(table)} WHERE tenant_id = {m} AND thread_id IN"
        f" (SELECT id FROM {t('threads')} WHERE tenant_id = {m} AND user_id = {m}){extra}",
        3,
    )


def forget_user_queries(
    d: Dialect, t: Callable[[str], str], tenant: str, user_id: str
) -> list[tuple[str, tuple[str, ...]]]:
    """``forget_user``'s deletes, in order, in one transaction: the user's threads with
    their entries, branches and the entries' vectors, then the vectors of the user's
    records, the user's snapshots, summaries and records. The rows it erased are the
    sum of the rowcounts at ``FORGET_COUNTED``. PostgreSQL: one statement instead."""
    m = d.mark
    own = f"WHERE tenant_id = {m} AND user_id = {m}"
    if d.quote:
        record_vectors = (
            f"DELETE v FROM {t('vectors')} v JOIN {t('records')} r ON r.tenant_id = v.tenant_id"
            f" AND r.kind = v.kind AND r.id = v.id WHERE r.tenant_id = {m} AND r.user_id = {m}"
            " AND v.kind <> 'entry'",
            2,
        )
    else:
        record_vectors = (
            f"DELETE FROM {t('vectors')} WHERE tenant_id = {m} AND kind <> 'entry'"
            f" AND (kind, id) IN (SELECT kind, id FROM {t('records')} {own})",
            3,
        )
    steps = [
        _user_threads(d, t, "vectors", " AND kind = 'entry'"),
        _user_threads(d, t, "entries"),
        _user_threads(d, t, "branches"),
        (f"DELETE FROM {t('threads')} {own}", 2),
        record_vectors,
        *((f"DELETE FROM {t(table)} {own}", 2) for table in ("snapshots", "summaries", "records")),
    ]
    params = {2: (tenant, user_id), 3: (tenant, tenant, user_id)}
    return [(sql, params[n]) for sql, n in steps]


#: The steps of ``forget_user_queries`` whose rowcounts are the rows erased (entries,
#: threads, snapshots, summaries, records).
FORGET_COUNTED = (1, 3, 5, 6, 7)


def entry_vectors_gone(
    d: Dialect,
    entries: str,
    thread_id: str,
    entry_ids: Sequence[str],
    others: Sequence[str],
    chunk: int = 500,
) -> list[tuple[str, tuple[Any, ...]]]:
    """Conditions on ``v`` (a vectors row) selecting the vectors of these deleted entries
    of one branch that no other branch (``others``) holds a copy of (a fork copies
    entries with their ids, and a vector goes with the last copy), a chunk of ids
    each, with their parameters (the tenant is the caller's). Each other branch is
    one lookup of the entries' id index per id."""
    held = ""
    if others:
        held = (
            f" AND NOT EXISTS (SELECT 1 FROM {entries} o WHERE o.tenant_id = v.tenant_id"
            f" AND o.thread_id = v.thread_id AND o.branch IN ({marks(d, len(others))})"
            " AND o.id = v.id)"
        )
    ids = list(dict.fromkeys(entry_ids))
    return [
        (
            f"v.kind = 'entry' AND v.thread_id = {d.mark} AND v.id IN ({marks(d, len(part))})"
            + held,
            (thread_id, *part, *others),
        )
        for part in (ids[i : i + chunk] for i in range(0, len(ids), chunk))
    ]


def branch_of_query(d: Dialect, threads: str, lock: str = "") -> str:
    """The branch a call names, or (``NULL``) the thread's current one, and the current
    one; parameters ``(branch, tenant, thread_id)``, no row without the thread
    (``branch_named``). ``lock``: the engine's lock of the thread row."""
    m = d.mark
    return (
        f"SELECT COALESCE({m}, t.current_branch), t.current_branch FROM {threads} t"
        f" WHERE t.tenant_id = {m} AND t.id = {m}{lock}"
    )


def branch_named(rows: Sequence[Sequence[Any]], thread_id: str) -> str:
    """The branch of ``branch_of_query``'s rows; ``NotFound`` without the thread."""
    if not rows:
        raise NotFound(f"thread {thread_id!r} not found")
    return str(rows[0][0])


def branch_deletable(rows: Sequence[Sequence[Any]], thread_id: str, name: str) -> None:
    """The rule of ``branch_delete``, from ``branch_of_query``'s rows: the thread exists
    and ``name`` is not its current branch (a missing branch deletes nothing)."""
    branch_named(rows, thread_id)
    if rows[0][1] == name:
        raise Conflict(f"cannot delete the current branch {name!r}")


def branch_entries(d: Dialect, condition: str = "") -> str:
    """A branch's entries ``e`` (parameters ``(tenant, thread_id, branch)``) matching
    ``condition``: ``ids_in``, ``AFTER_POSITION`` or none (the whole branch), the rows an
    ``entry_delete``, ``entry_truncate_after``, ``entry_clear`` or ``branch_delete``
    removes."""
    m = d.mark
    return f"e.tenant_id = {m} AND e.thread_id = {m} AND e.branch = {m}{condition}"


def ids_in(d: Dialect, count: int) -> str:
    """``branch_entries``' condition of ``entry_delete``: ``count`` ids."""
    return f" AND e.id IN ({marks(d, count)})"


def after_position(d: Dialect) -> str:
    """``branch_entries``' condition of ``entry_truncate_after``: after a position."""
    return f" AND e.position > {d.mark}"


class EntryPage(NamedTuple):
    """``entry_list``'s page of a branch: from its last position back, ``offset`` skipped,
    at most ``limit`` entries (``None``: all), created before ``before`` and after
    ``after`` where given."""

    limit: int | None
    offset: int
    before: datetime | None
    after: datetime | None


def created_bounds(d: Dialect, alias: str, page: EntryPage) -> tuple[str, list[Any]]:
    """``page``'s conditions on ``{alias}created_at`` (before ``before``, after ``after``,
    each where given) and their parameters."""
    sql, args = "", []
    if page.before is not None:
        sql += f" AND {alias}created_at < {d.mark}"
        args.append(d.time(page.before))
    if page.after is not None:
        sql += f" AND {alias}created_at > {d.mark}"
        args.append(d.time(page.after))
    return sql, args


def entry_position_query(d: Dialect, entries: str, threads: str) -> str:
    """The branch and position of an entry on a branch (``NULL``: the thread's current
    one); parameters ``(tenant, thread_id, entry_id, branch)``."""
    m = d.mark
    return (
        f"SELECT e.branch, e.position FROM {entries} e JOIN {threads} t"
        " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
        f" WHERE e.tenant_id = {m} AND e.thread_id = {m} AND e.id = {m}"
        f" AND e.branch = COALESCE({m}, t.current_branch)"
    )


def branch_copy_query(d: Dialect, entries: str, columns: str) -> str:
    """A fork's copy of the source branch's entries up to a position (``columns``: the
    engine's entry columns but ``branch``); parameters ``(name, tenant, thread_id,
    from_branch, upto)``. PostgreSQL copies and counts them in one statement."""
    m = d.mark
    return (
        f"INSERT INTO {entries} (branch, {columns}) SELECT {m}, {columns} FROM {entries}"
        f" WHERE tenant_id = {m} AND thread_id = {m} AND branch = {m} AND position <= {m}"
    )


def _given(
    d: Dialect, columns: str, types: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[str, str, tuple[Any, ...]]:
    """``rows`` as the relation ``w(columns)``: a ``WITH`` clause, the ``FROM`` item and
    their parameters. PostgreSQL: an array a column (``types``), ``unnest``ed (one
    statement text whatever the count); SQLite: a ``VALUES`` list, named by a ``WITH``
    (it names no columns of a subquery). MySQL reads neither (``EntryBatchReads``)."""
    if d.arrays:
        arrays = ", ".join(f"{d.mark}::{t}[]" for t in types)
        params = tuple([row[i] for row in rows] for i in range(len(types)))
        return "", f"unnest({arrays}) AS w({columns})", params
    one = f"({', '.join([d.mark] * len(types))})"
    values = ", ".join([one] * len(rows))
    return f"WITH w({columns}) AS (VALUES {values}) ", "w", tuple(x for r in rows for x in r)


def entry_windows_query(
    d: Dialect, threads: str, entries: str, columns: str, tenant: str, windows: Sequence[Any]
) -> tuple[str, tuple[Any, ...]]:
    """For each window ``(n, thread id, first, last)``: ``n``, then ``columns`` (on ``e``)
    of the entries of the thread's current branch within those positions, by window
    then position. ``CROSS JOIN`` keeps the windows outermost (SQLite joins in the
    order written): one thread lookup and one range of the position index each."""
    types = ("bigint", "text", "bigint", "bigint")
    head, w, params = _given(d, "n, thread_id, first, last", types, windows)
    return (
        f"{head}SELECT w.n, {columns} FROM {w} CROSS JOIN {threads} t CROSS JOIN {entries} e"
        f" WHERE t.tenant_id = {d.mark} AND t.id = w.thread_id AND e.tenant_id = t.tenant_id"
        " AND e.thread_id = t.id AND e.branch = t.current_branch"
        " AND e.position BETWEEN w.first AND w.last ORDER BY w.n, e.position",
        (*params, tenant),
    )


def entry_pairs_query(
    d: Dialect, threads: str, entries: str, columns: str, tenant: str, pairs: Sequence[Any]
) -> tuple[str, tuple[Any, ...]]:
    """``columns`` (on ``e``) of the entry of each ``(thread id, entry id)`` on its
    thread's current branch: a lookup of the entries' id index each, whatever the
    number of threads."""
    head, w, params = _given(d, "thread_id, id", ("text", "text"), pairs)
    return (
        f"{head}SELECT {columns} FROM {w} JOIN {threads} t ON t.tenant_id = {d.mark}"
        f" AND t.id = w.thread_id JOIN {entries} e ON e.tenant_id = t.tenant_id"
        " AND e.thread_id = t.id AND e.branch = t.current_branch AND e.id = w.id",
        (*params, tenant),
    )
