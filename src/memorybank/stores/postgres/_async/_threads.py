"""Threads and branches of the PostgreSQL store: create, read, list, update and
delete threads; fork, list and delete branches (a fork copies the entries it keeps).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memorybank.errors import Conflict, NotFound
from memorybank.records import Branch, Thread
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.postgres.statements import T_COLS
from memorybank.stores.sql.common import THREAD_COLUMNS, dump, row_to_branch, row_to_thread
from memorybank.stores.sql.dialect import POSTGRES
from memorybank.stores.sql.statements import thread_sets


class ThreadsMixin(PostgresBase):
    """The ``_threads`` part of the store (see the module docstring)."""

    # -- threads -----------------------------------------------------------

    async def thread_create(self, thread: Thread) -> Thread:
        """Insert the thread and its first branch in one statement."""
        await self._fetch(
            self._sql.thread_create,
            {
                "tenant": thread.tenant_id,
                "id": thread.id,
                "user": thread.user_id,
                "agent": thread.agent_id,
                "title": thread.title,
                "metadata": dump(thread.metadata),
                "status": thread.status,
                "created": thread.created_at,
                "updated": thread.updated_at,
                "branch": thread.current_branch,
            },
        )
        return thread

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        """The thread row, or ``None``."""
        rows = await self._fetch(self._sql.thread_get, (tenant, thread_id), retry=True)
        return row_to_thread(rows[0]) if rows else None

    async def thread_list(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads by ``updated_at`` then id, newest first, filtered."""
        where = ["tenant_id = %(tenant)s"]
        params: dict[str, Any] = {"tenant": tenant, "limit": limit}
        for column, value in (("user_id", user_id), ("agent_id", agent_id)):
            if isinstance(value, Unset):
                continue
            if value is None:
                where.append(f"{column} IS NULL")
            else:
                where.append(f"{column} = %({column})s")
                params[column] = value
        if status is not None:
            where.append("status = %(status)s")
            params["status"] = status
        query = (
            f"SELECT {THREAD_COLUMNS} FROM {self.prefix}threads WHERE {' AND '.join(where)}"
            " ORDER BY updated_at DESC, id DESC LIMIT %(limit)s::bigint"
        )
        return [row_to_thread(r) for r in await self._fetch(query, params, retry=True)]

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
        """One ``UPDATE ... RETURNING``; a new current branch must exist."""
        sets, params = thread_sets(
            POSTGRES, updated_at=updated_at, title=title, metadata=metadata, status=status,
            current_branch=current_branch,
        )  # fmt: skip
        branch_check = ""
        if not isinstance(current_branch, Unset):
            branch_check = (
                f" AND EXISTS (SELECT 1 FROM {self.prefix}branches b"
                " WHERE b.tenant_id = t.tenant_id AND b.thread_id = t.id AND b.name = %s)"
            )
        query = (
            f"UPDATE {self.prefix}threads t SET {sets}"
            f" WHERE t.tenant_id = %s AND t.id = %s{branch_check} RETURNING {T_COLS}"
        )
        params += [tenant, thread_id]
        if branch_check:
            params.append(current_branch)
        rows = await self._fetch(query, params)
        if rows:
            return row_to_thread(rows[0])
        if branch_check and await self.thread_get(tenant, thread_id) is not None:
            raise NotFound(f"branch {current_branch!r} not found")
        raise NotFound(f"thread {thread_id!r} not found")

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        """Lock the thread row, then delete it with its branches and entries."""
        async with self._transaction() as conn:
            if not await self._rows(conn, self._sql.lock_thread, (tenant, thread_id)):
                return False
            await self._rows(conn, self._sql.thread_delete, {"tenant": tenant, "id": thread_id})
            return True

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """Threads by ids, in one statement."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        rows = await self._fetch(self._sql.thread_get_many, (tenant, wanted), retry=True)
        found = {thread.id: thread for thread in map(row_to_thread, rows)}
        return {tid: found[tid] for tid in wanted if tid in found}

    # -- branches ----------------------------------------------------------

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
        """Check under a key-share lock of the thread, then copy the source's entries."""
        params: dict[str, Any] = {
            "tenant": tenant,
            "thread": thread_id,
            "name": name,
            "from": from_branch,
            "entry": from_entry,
            "created": created_at,
        }
        async with self._transaction() as conn:
            rows = await self._rows(conn, self._sql.branch_check, params)
            if not rows:
                raise NotFound(f"thread {thread_id!r} not found")
            source_last, taken, entry_position = rows[0]
            if source_last is None:
                raise NotFound(f"branch {from_branch!r} not found")
            if taken:
                raise Conflict(f"branch {name!r} already exists")
            if from_entry is not None and entry_position is None:
                raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
            params["upto"] = source_last if from_entry is None else entry_position
            await self._rows(conn, self._sql.branch_copy, params)
        return Branch(
            name=name,
            thread_id=thread_id,
            created_at=created_at,
            from_branch=from_branch,
            from_entry=from_entry,
        )

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        """Branches by creation time, then name."""
        rows = await self._fetch(self._sql.branch_list, (tenant, thread_id), retry=True)
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return [row_to_branch(r) for r in rows if r[0] is not None]

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        """Lock the thread row, refuse the current branch, delete the branch and its entries."""
        async with self._transaction() as conn:
            rows = await self._rows(conn, self._sql.lock_thread_branch, (tenant, thread_id))
            if not rows:
                raise NotFound(f"thread {thread_id!r} not found")
            if rows[0][0] == name:
                raise Conflict(f"cannot delete the current branch {name!r}")
            done = await self._rows(
                conn, self._sql.branch_delete, {"tenant": tenant, "thread": thread_id, "name": name}
            )
            return bool(done[0][0])
