"""Threads and branches of the MySQL store: create, read, list, update and delete
threads; fork, list and delete branches (a fork copies the entries it keeps).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import pymysql

from memorybank.errors import Conflict
from memorybank.records import Branch, Thread
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.compat import AsyncMySQLConnection
from memorybank.stores.mysql.rows import BEGIN, INSERT_COLS
from memorybank.stores.sql.common import row_to_thread, to_us
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    branch_copy_query,
    branch_deletable,
    branch_entries,
    branch_fork_query,
    branch_of_query,
    fork_point,
    thread_get_query,
    thread_insert,
    thread_update_query,
    updated_thread,
)


class ThreadsMixin(MySQLBase):
    """Thread and branch verbs."""

    async def thread_create(self, thread: Thread) -> Thread:
        """Insert the thread and its first branch in one transaction."""
        async with self._connection() as conn:
            try:
                await self._run(
                    conn,
                    [
                        (BEGIN, None),
                        thread_insert(MYSQL, self._threads, thread),
                        (
                            f"INSERT INTO {self._branches} (tenant_id, thread_id, name, created_at,"
                            " from_branch, from_entry, last_position)"
                            " VALUES (%s, %s, %s, %s, NULL, NULL, 0)",
                            (
                                thread.tenant_id,
                                thread.id,
                                thread.current_branch,
                                to_us(thread.created_at),
                            ),
                        ),
                        ("COMMIT", None),
                    ],
                )
            except pymysql.err.IntegrityError as error:
                if error.args and error.args[0] == 1062:
                    raise Conflict(f"thread {thread.id!r} already exists") from error
                raise
        return dataclasses.replace(thread, metadata=dict(thread.metadata))

    async def thread_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        """Update the given fields and read the thread back, in one round trip."""
        update = thread_update_query(
            MYSQL, self._threads, self._branches, tenant, thread_id, updated_at=updated_at,
            title=title, metadata=metadata, status=status, current_branch=current_branch,
        )  # fmt: skip
        read = (thread_get_query(MYSQL, self._threads), (tenant, thread_id))
        rows = (await self._run_retried([update, read]))[1][0]
        thread = row_to_thread(rows[0]) if rows else None
        return updated_thread(thread, thread_id, current_branch)

    async def branch_create(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        """Copy ``from_branch`` (up to ``from_entry``) into a new branch, in one transaction."""
        return await self._with_retry(
            lambda conn: self._branch(
                conn, tenant, thread_id, name, from_branch, from_entry, created_at
            )
        )

    async def _branch(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        name: str,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        results = await self._run(
            conn,
            [
                (BEGIN, None),
                (
                    branch_fork_query(
                        MYSQL,
                        self._threads,
                        self._branches,
                        self._entries,
                        extra="s.last_position",
                        lock=" FOR UPDATE",
                    ),
                    (from_entry, from_branch, name, tenant, thread_id),
                ),
            ],
        )
        head = results[2][0]
        upto = fork_point(head, thread_id, name, from_branch, from_entry)
        if upto is None:
            upto = int(head[0][4])  # the source's last position

        await self._run(
            conn,
            [
                (
                    # entry_count: the source's entries up to ``upto``, the rows copied next
                    f"INSERT INTO {self._branches} (tenant_id, thread_id, name, created_at,"
                    " from_branch, from_entry, last_position, entry_count)"
                    " SELECT %s, %s, %s, %s, %s, %s, %s, COUNT(*)"
                    f" FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s"
                    " AND branch = %s AND position <= %s",
                    (
                        tenant,
                        thread_id,
                        name,
                        to_us(created_at),
                        from_branch,
                        from_entry,
                        upto,
                        tenant,
                        thread_id,
                        from_branch,
                        upto,
                    ),
                ),
                (
                    branch_copy_query(MYSQL, self._entries, INSERT_COLS.replace("branch, ", "")),
                    (name, tenant, thread_id, from_branch, upto),
                ),
                ("COMMIT", None),
            ],
        )
        return Branch(
            name=name,
            thread_id=thread_id,
            created_at=created_at,
            from_branch=from_branch,
            from_entry=from_entry,
        )

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        """Delete a branch and its entries (never the current one)."""
        return await self._with_retry(
            lambda conn: self._delete_branch(conn, tenant, thread_id, name)
        )

    async def _delete_branch(
        self, conn: AsyncMySQLConnection, tenant: str, thread_id: str, name: str
    ) -> bool:
        results = await self._run(
            conn,
            [
                (BEGIN, None),
                (branch_of_query(MYSQL, self._threads, " FOR UPDATE"), (None, tenant, thread_id)),
                (
                    f"SELECT name FROM {self._branches} WHERE tenant_id = %s AND thread_id = %s",
                    (tenant, thread_id),
                ),
                (
                    f"SELECT id FROM {self._entries}"
                    " WHERE tenant_id = %s AND thread_id = %s AND branch = %s",
                    (tenant, thread_id, name),
                ),
            ],
        )
        branch_deletable(results[2][0], thread_id, name)  # (the pool rolls back)
        others = [str(r[0]) for r in results[3][0] if r[0] != name]
        gone = [str(r[0]) for r in results[4][0]]
        key = (tenant, thread_id, name)
        results = await self._run(
            conn,
            [
                (
                    f"DELETE FROM {self._branches}"
                    " WHERE tenant_id = %s AND thread_id = %s AND name = %s",
                    key,
                ),
                (f"DELETE e FROM {self._entries} e WHERE {branch_entries(MYSQL)}", key),
                *self._drop_entry_vectors(tenant, thread_id, gone, others),
                ("COMMIT", None),
            ],
        )
        return results[0][1] > 0
