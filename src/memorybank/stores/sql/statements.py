"""Statements written once for SQLite, PostgreSQL and MySQL/MariaDB (their differences in
``memorybank.stores.sql.dialect``): the dynamic parts of ``thread_update`` and the whole
of ``record_list``'s read. I/O-free: each store runs them with its own driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memorybank.stores.contract.types import Unset, Visibility
from memorybank.stores.sql.common import dump, scope_sql
from memorybank.stores.sql.dialect import Dialect

__all__ = ["owner_filter", "record_list_query", "taken_ids_query", "thread_sets"]


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
