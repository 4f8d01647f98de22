"""Appends of the PostgreSQL store: one statement each (with or without
idempotency keys), or combined across concurrent callers (``_combine``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import pq

from memorybank.errors import Conflict
from memorybank.records import Entry, Thread
from memorybank.rules.idempotency import key_reused
from memorybank.stores.contract._async.store import AppendResult, NewEntry, Unset
from memorybank.stores.contract.appends import new_entry
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.postgres.rows import (
    E_START,
    KEY_RACES,
    N_ENTRY,
    N_THREAD,
    new_entry_json,
)
from memorybank.stores.sql._async.appends import SQLAppends
from memorybank.stores.sql.appends import AppendItem, no_branch, refusal
from memorybank.stores.sql.common import dump, row_to_entry, row_to_thread, tool_calls_value


class AppendsMixin(PostgresBase, SQLAppends):
    """The ``_appends`` part of the store (see the module docstring)."""

    def _id_refused(self, cause: BaseException) -> bool:
        return (
            isinstance(cause, psycopg.errors.UniqueViolation)
            and cause.diag.constraint_name == f"{self.prefix}entries_id"
        )

    async def _append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        """One statement: owner check, thread and branch locks, keys, positions, insert
        (the rules of ``SQLAppends`` as SQL: one round trip, docs/postgres.md)."""
        # A key repeated within the batch is sent once; later copies get its entry.
        first_of: dict[str, int] = {}
        sent: list[NewEntry] = []
        slot: list[int] = []
        for new in entries:
            key = new.idempotency_key
            if key is not None and key in first_of:
                slot.append(first_of[key])
                continue
            if key is not None:
                first_of[key] = len(sent)
            slot.append(len(sent))
            sent.append(new)
        if all(e.idempotency_key is None for e in sent):
            if self._pool is None:  # one connection: the caller's, maybe in its transaction
                return await self._append_plain(tenant, thread_id, sent, updated_at, branch, owner)
            return await self._appends.submit(tenant, (thread_id, branch, owner, sent, updated_at))
        batch = dump([{**new_entry_json(e), "ord": index} for index, e in enumerate(sent, 1)])
        params = {
            "tenant": tenant,
            "thread": thread_id,
            "branch": branch,
            "check_owner": not isinstance(owner, Unset),
            "owner": None if isinstance(owner, Unset) else owner,
            "now": updated_at,
            "batch": batch,
        }
        rows = await self._append_rows(params)
        status, resolved = rows[0][0], rows[0][1]
        if status == 4:
            raise key_reused(rows[0][E_START + N_ENTRY - 1])
        refused = refusal(
            thread_id, resolved, found=status != 1, allowed=status != 2, branch=status != 3
        )
        if refused is not None:
            raise refused
        thread = row_to_thread(rows[0][2 : 2 + N_THREAD])
        stored: dict[int, Entry] = {}
        for row in rows:
            ord_ = row[2 + N_THREAD]
            if ord_ is None:
                continue
            index = int(ord_) - 1
            if row[E_START] is not None:  # already on the branch (idempotency key)
                stored[index] = row_to_entry(row[E_START : E_START + N_ENTRY])
            else:
                stored[index] = new_entry(sent[index], thread_id, resolved, row[3 + N_THREAD])
        if len(stored) < len(sent):  # the branch was deleted after the statement's checks
            raise no_branch(resolved)
        return AppendResult([stored[i] for i in slot], thread)

    async def _append_combined(
        self, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        """The plain appends of concurrent callers as one statement (``_combine``)."""
        if len(items) == 1:
            thread_id, branch, owner, sent, updated_at = items[0]
            return [await self._append_plain(tenant, thread_id, sent, updated_at, branch, owner)]
        batch: list[dict[str, Any]] = []
        for thread_id, branch, owner, sent, updated_at in items:
            check = not isinstance(owner, Unset)
            for e in sent:
                batch.append(
                    {
                        "ord": len(batch),
                        "thread": thread_id,
                        "branch": branch,
                        "check_owner": check,
                        "owner": owner if check else None,
                        "now": updated_at.isoformat(),
                        **new_entry_json(e),  # (no idempotency keys here: ignored)
                    }
                )
        rows = await self._fetch(self._sql.append_many, {"tenant": tenant, "batch": dump(batch)})
        stored: dict[tuple[str, str], tuple[str, int]] = {}
        threads: dict[str, Thread] = {}
        for row in rows:
            stored[row[0], row[2]] = (row[1], int(row[3]))
            if row[0] not in threads:
                threads[row[0]] = row_to_thread(row[4 : 4 + N_THREAD])
        results: list[AppendResult | Exception] = []
        for thread_id, branch, owner, sent, updated_at in items:
            got = [stored.get((thread_id, e.id)) for e in sent]
            if all(g is not None for g in got):
                results.append(
                    AppendResult(
                        [
                            new_entry(e, thread_id, g[0], g[1])
                            for e, g in zip(sent, got, strict=True)
                            if g is not None
                        ],
                        threads[thread_id],
                    )
                )
                continue
            try:  # refused (nothing of it written): alone, it raises why
                results.append(
                    await self._append_plain(tenant, thread_id, sent, updated_at, branch, owner)
                )
            except Exception as error:
                results.append(error)
        return results

    async def _append_plain(
        self,
        tenant: str,
        thread_id: str,
        sent: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        """A batch without idempotency keys: one statement, nothing to compare."""
        params: dict[str, Any] = {
            "tenant": tenant,
            "thread": thread_id,
            "branch": branch,
            "check_owner": not isinstance(owner, Unset),
            "owner": None if isinstance(owner, Unset) else owner,
            "now": updated_at,
            "count": len(sent),
        }
        if len(sent) == 1:
            one = sent[0]
            calls = tool_calls_value(one.tool_calls, one.extra, one.item)
            params.update(
                id=one.id,
                role=one.role,
                content=one.content,
                name=one.name,
                tool_calls=None if calls is None else dump(calls),
                tool_call_id=one.tool_call_id,
                metadata=dump(one.metadata) if one.metadata else "{}",
                state=dump(one.state) if one.state else "{}",
                token_count=one.token_count,
                created_at=one.created_at,
            )
            query = self._sql.append_one
        else:
            params["batch"] = dump(  # (no idempotency keys here: their fields are null)
                [{**new_entry_json(e), "ord": index} for index, e in enumerate(sent, 1)]
            )
            query = self._sql.append_plain
        rows = await self._fetch(query, params)
        if not rows:
            found = await self._fetch(self._sql.append_refusal, params)
            user_id, resolved = found[0] if found else (None, None)
            allowed = isinstance(owner, Unset) or user_id == owner
            raise refusal(thread_id, resolved, found=bool(found), allowed=allowed) or no_branch(
                resolved
            )
        name, base = rows[0][0], rows[0][1]
        if name is None:  # the branch was deleted after the statement's checks
            raise no_branch(branch if branch is not None else rows[0][2 + N_THREAD - 1])
        thread = row_to_thread(rows[0][2 : 2 + N_THREAD])
        return AppendResult(
            [new_entry(e, thread_id, name, base + i) for i, e in enumerate(sent, 1)], thread
        )

    async def _append_rows(self, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run the append statement; again when it lost an idempotency-key race.

        The statement's snapshot predates the lock it waits for, so a key stored by
        a writer that committed meanwhile is invisible to it: its insert then fails
        on the unique index and the whole statement rolls back (nothing written).
        The next run sees that entry and compares fingerprints like any other.
        """
        for attempt in range(KEY_RACES):
            try:
                return await self._fetch(self._sql.append, params)
            except Conflict as error:
                cause = error.__cause__
                lost = (
                    isinstance(cause, psycopg.errors.UniqueViolation)
                    and cause.diag.constraint_name == f"{self.prefix}entries_key"
                    # a caller's transaction is aborted by the error: it cannot go on
                    and (
                        self._conn is None
                        or self._conn.info.transaction_status == pq.TransactionStatus.IDLE
                    )
                )
                if not lost or attempt == KEY_RACES - 1:
                    raise
        raise AssertionError("unreachable")
