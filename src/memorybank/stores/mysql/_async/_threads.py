"""Threads and branches of the MySQL store: create, read, list, update and delete
threads; fork, list and delete branches (a fork copies the entries it keeps).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import pymysql

from memorybank.errors import Conflict
from memorybank.records import Thread
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import BEGIN, INSERT_COLS
from memorybank.stores.sql.common import row_to_thread, to_us
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    thread_get_query,
    thread_insert,
    thread_update_query,
    updated_thread,
)


class ThreadsMixin(MySQLBase):
    """Thread and branch verbs."""

    _copied_columns = INSERT_COLS.replace("branch, ", "")

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
