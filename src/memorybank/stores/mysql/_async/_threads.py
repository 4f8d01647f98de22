"""Threads of the MySQL store: their creation and reads, and the columns a fork copies
(the other thread and branch verbs are the shared core's).
"""

from __future__ import annotations

import dataclasses

import pymysql

from memorybank.errors import Conflict
from memorybank.records import Thread
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import BEGIN, INSERT_COLS
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    thread_insert,
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
