"""Statements written once for SQLite, PostgreSQL and MySQL/MariaDB (their differences in
``memorybank.stores.sql.dialect``), one function a statement: threads and branches,
records, working memory, entry updates and compaction. I/O-free: each store runs them
with its own driver (SQLite in one connection, PostgreSQL in one statement where it
can, MySQL in one round trip of several), and keeps only what its engine does its own
way (PostgreSQL's prepared statements over arrays, MySQL's kept branch counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memorybank.errors import NotFound
from memorybank.records import Branch, Thread
from memorybank.stores.contract.types import Unset, Visibility
from memorybank.stores.sql.common import THREAD_COLUMNS, dump, row_to_branch, scope_sql
from memorybank.stores.sql.dialect import Dialect

__all__ = [
    "branch_list_query",
    "branches_found",
    "marks",
    "owner_filter",
    "record_list_query",
    "taken_ids_query",
    "thread_get_query",
    "thread_insert",
    "thread_list_query",
    "thread_sets",
    "thread_update_query",
    "updated_thread",
]


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
    returning: str = "",
) -> tuple[str, list[Any]]:
    """``thread_update``'s ``UPDATE``: the given fields, only where a new
    ``current_branch`` exists (``RETURNING returning`` where the engine has it; else
    the caller reads the thread back). ``updated_thread`` then names what was missing."""
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
    if returning:
        sql += f" RETURNING {returning}"
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
