"""Appends of the MySQL store: one transaction per append, or one for several
concurrent ones (write combining).

Appends: one transaction, sent as multi-statement queries (PyMySQL's
client-side escaping is the same either way). It starts with
``START TRANSACTION; SELECT ... FROM threads LEFT JOIN branches ... FOR UPDATE``, which locks the
thread and branch rows and so serialises the appenders of a thread across
processes (its row comes back as one ``JSON_ARRAY`` column, like "last N": the
driver parses each column's metadata in pure Python, so 13 columns cost the
client more than the rest of the append). A batch of up to 16 entries without
idempotency keys (every ``remember``) is ONE round trip: the same query goes on with
``INSERT ... SELECT`` rows positioned at ``branches.last_position + k`` and an
``UPDATE`` of the counter, the branch's ``entry_count`` and ``updated_at`` (one
statement: the kept count costs no statement of its own), both conditional on the thread,
owner and branch (a failed check writes nothing; the client reads the locked
row to raise ``NotFound``/``ThreadForbidden``), then ``COMMIT``. Bigger or
idempotent batches take TWO round trips: the first also reads the stored
idempotency keys, the second is a multi-row ``INSERT``, the updates and
``COMMIT``. Positions come from the branch's counter, so they are gap-free as
appended and never reused after deletes (the in-memory store reuses the
positions of truncated entries; both are allowed by the contract: strictly
increasing in adding order). At READ COMMITTED the transactions' locks are
record locks on primary keys, no gap locks. A deadlock (1213) or
lock-wait timeout (1205) rolls back and retries the transaction (3 attempts,
short backoff: ``_with_retry``), then raises ``StoreUnavailable``.

Write combining (``memorybank._combine``): appends without idempotency keys (up
to 16 entries each) that one store object receives while one of its appends
for the same tenant is running (``APPEND_BATCHES``) wait, and then run together
as ONE transaction in two round trips whatever their number and threads (not
one: the lone append's writes conditional on the checks, as ``INSERT ...
SELECT`` per entry and an ``UPDATE`` of the join, cost the server about twice
the CPU of a multi-row ``INSERT`` and single-table ``UPDATE`` statements at 32 threads,
measured): ``SELECT`` of the threads
named and their branches ``FOR UPDATE`` (ordered by thread id, so two such
transactions never deadlock), then one multi-row ``INSERT``, one ``UPDATE`` of
the counters and one of ``updated_at`` (``CASE`` per thread), ``COMMIT``. Each
caller returns once its entries are committed; callers of one thread get
consecutive positions in arrival order; a refused caller (no thread, another
owner, no branch) gets its own error and writes nothing, the others are stored;
an error of the transaction itself reaches every caller in it. With one append
in flight nothing waits: the path above runs unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from memorybank._async.stores.base import UNSET, AppendResult, NewEntry, Unset
from memorybank._async.stores.mysql._base import MySQLBase
from memorybank._idempotency import clash, key_reused
from memorybank.errors import NotFound, ThreadForbidden
from memorybank.records import Entry, Thread
from memorybank.stores._mysql_compat import AsyncMySQLConnection
from memorybank.stores._mysql_rows import (
    BEGIN,
    E_COLS,
    INSERT_COLS,
    INSERT_WIDTH,
    T_COLS,
    AppendItem,
    Statement,
    build_thread,
    entry_values,
    idem_hash,
    placeholders,
)
from memorybank.stores._sql import row_to_entry, to_us

_FAST_BATCH = 16  # appends of up to this many entries without idempotency keys: one round trip
#: About how much entry text one combined append transaction carries (a caller's own
#: bigger batch still goes alone, as it would without combining).
_COMBINED_BYTES = 1 << 20


def _by_size(items: Sequence[AppendItem]) -> Iterator[Sequence[AppendItem]]:
    """``items`` in runs of about ``_COMBINED_BYTES`` of text (``max_allowed_packet``)."""
    start, size = 0, 0
    for k, item in enumerate(items):
        weight = sum(
            400
            + len(e.content or "")
            + (len(str(e.metadata)) if e.metadata else 0)
            + (len(str(e.state)) if e.state else 0)
            + (len(str(e.tool_calls)) if e.tool_calls else 0)
            for e in item[3]
        )
        if k > start and size + weight > _COMBINED_BYTES:
            yield items[start:k]
            start, size = k, 0
        size += weight
    yield items[start:]


def _append_head(
    head: list[tuple[Any, ...]], thread_id: str, branch: str | None, owner: str | Unset | None
) -> tuple[Thread, str, int]:
    """The thread, branch name and counter from an append's lock row, or the refusal."""
    if not head:
        raise NotFound(f"thread {thread_id!r} not found")
    row = json.loads(head[0][0])
    thread = build_thread(row)
    if not isinstance(owner, Unset) and not row[12]:
        raise ThreadForbidden()
    name = thread.current_branch if branch is None else branch
    if row[10] is None:
        raise NotFound(f"branch {name!r} not found")
    return thread, name, int(row[11])


def _stored_entry(new: NewEntry, thread_id: str, branch: str, position: int) -> Entry:
    """The ``Entry`` just stored from ``new``."""
    return Entry(
        id=new.id,
        thread_id=thread_id,
        branch=branch,
        position=position,
        role=new.role,  # type: ignore[arg-type]
        content=new.content,
        name=new.name,
        tool_calls=new.tool_calls,
        tool_call_id=new.tool_call_id,
        metadata=dict(new.metadata),
        state=dict(new.state),
        token_count=new.token_count,
        created_at=new.created_at,
        idempotency_key=new.idempotency_key,
        extra=new.extra,
        item=new.item,
    )


class AppendsMixin(MySQLBase):
    """``append_entries`` and its transactions."""

    async def append_entries(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        updated_at: datetime,
        branch: str | None = None,
        owner: str | Unset | None = UNSET,
    ) -> AppendResult:
        """Append in one transaction, two round trips (see the module docstring)."""
        if all(e.idempotency_key is None for e in entries) and 0 < len(entries) <= _FAST_BATCH:
            item = (thread_id, branch, owner, entries, updated_at)
            return await self._appends.submit(tenant, item)
        return await self._append_now(tenant, thread_id, entries, updated_at, branch, owner)

    async def _append_combined(
        self, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        """The appends of concurrent callers, to any threads, in one transaction and a
        fixed number of statements (``_combine``): round trip 1 locks the threads (in
        id order: two such transactions never deadlock) and their branches named;
        round trip 2 inserts every allowed entry, sets each counter and ``updated_at``
        once, and commits. A refused caller (no thread, other owner, no branch) gets
        its error and wrote nothing; the others are stored."""
        out: list[AppendResult | Exception] = []
        for chunk in _by_size(items):  # no statement much bigger than an append alone
            if len(chunk) == 1:
                thread_id, branch, owner, sent, updated_at = chunk[0]
                try:
                    out.append(
                        await self._append_now(tenant, thread_id, sent, updated_at, branch, owner)
                    )
                except Exception as error:
                    if len(items) == 1:
                        raise
                    out.append(error)
                continue
            out += await self._append_chunk(tenant, chunk)
        return out

    async def _append_chunk(
        self, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        return await self._with_retry(lambda conn: self._append_many(conn, tenant, items))

    async def _append_many(
        self, conn: AsyncMySQLConnection, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        tids = sorted({item[0] for item in items})
        named = sorted({item[1] for item in items if item[1] is not None})
        branch_match = "b.name = t.current_branch"
        if named:
            branch_match = f"({branch_match} OR b.name IN ({placeholders(len(named))}))"
        lock: Statement = (
            f"SELECT JSON_ARRAY({T_COLS}, b.name, b.last_position)"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            f" AND b.thread_id = t.id AND {branch_match}"
            f" WHERE t.tenant_id = %s AND t.id IN ({placeholders(len(tids))})"
            " ORDER BY t.id, b.name FOR UPDATE",
            (*named, tenant, *tids),
        )
        results = await self._run(conn, [(BEGIN, None), lock])
        threads: dict[str, Thread] = {}
        counters: dict[tuple[str, str], int] = {}
        for (text,) in results[2][0]:
            row = json.loads(text)
            read = build_thread(row)
            threads.setdefault(read.id, read)
            if row[10] is not None:
                counters[read.id, row[10]] = int(row[11])
        locked = dict(counters)
        out: list[AppendResult | Exception] = []
        values: list[Any] = []
        touched: dict[str, datetime] = {}
        for thread_id, branch, owner, sent, updated_at in items:
            thread = threads.get(thread_id)
            if thread is None:
                out.append(NotFound(f"thread {thread_id!r} not found"))
                continue
            if not isinstance(owner, Unset) and thread.user_id != owner:
                out.append(ThreadForbidden())
                continue
            name = thread.current_branch if branch is None else branch
            position = counters.get((thread_id, name))
            if position is None:
                out.append(NotFound(f"branch {name!r} not found"))
                continue
            stored = []
            for new in sent:
                position += 1
                stored.append(_stored_entry(new, thread_id, name, position))
                values += (tenant, thread_id, name, position, *entry_values(new))
            counters[thread_id, name] = position
            touched[thread_id] = max(updated_at, touched.get(thread_id, updated_at))
            out.append(AppendResult(stored, dataclasses.replace(thread, updated_at=updated_at)))
        writes: list[Statement] = []
        if values:
            rows = len(values) // INSERT_WIDTH
            writes.append(
                (
                    f"INSERT INTO {self._entries} ({INSERT_COLS}) VALUES "
                    + ", ".join([f"({placeholders(INSERT_WIDTH)})"] * rows),
                    values,
                )
            )
            # each branch appended to: its new counter and how many entries it gained
            moved = [
                (t, n, p, p - locked[t, n]) for (t, n), p in counters.items() if p > locked[t, n]
            ]
            writes.append(
                (
                    f"UPDATE {self._branches} SET last_position = CASE"
                    + " WHEN thread_id = %s AND name = %s THEN %s" * len(moved)
                    + " ELSE last_position END, entry_count = entry_count + CASE"
                    + " WHEN thread_id = %s AND name = %s THEN %s" * len(moved)
                    + " ELSE 0 END WHERE tenant_id = %s AND thread_id IN"
                    f" ({placeholders(len(touched))})",
                    (
                        *(v for t, n, p, _ in moved for v in (t, n, p)),
                        *(v for t, n, _, k in moved for v in (t, n, k)),
                        tenant,
                        *touched,
                    ),
                )
            )
            writes.append(
                (
                    f"UPDATE {self._threads} SET updated_at = CASE"
                    + " WHEN id = %s THEN %s" * len(touched)
                    + " ELSE updated_at END WHERE tenant_id = %s"
                    + f" AND id IN ({placeholders(len(touched))})",
                    (
                        *(v for t, when in touched.items() for v in (t, to_us(when))),
                        tenant,
                        *touched,
                    ),
                )
            )
        writes.append(("COMMIT", None))
        await self._run(conn, writes)
        return out

    def _lock_statement(
        self, tenant: str, thread_id: str, branch: str | None, owner: str | Unset | None
    ) -> Statement:
        """Lock the thread and branch rows; the thread, branch, counter and owner verdict."""
        return (
            # one JSON_ARRAY column: PyMySQL parses a column's metadata in pure Python
            f"SELECT JSON_ARRAY({T_COLS}, b.name, b.last_position, t.user_id <=> %s)"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
            " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
            (None if isinstance(owner, Unset) else owner, branch, tenant, thread_id),
        )

    async def _append_now(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        return await self._with_retry(
            lambda conn: self._append(conn, tenant, thread_id, entries, updated_at, branch, owner)
        )

    async def _append(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        keys = [e.idempotency_key for e in entries if e.idempotency_key is not None]
        fast = not keys and 0 < len(entries) <= _FAST_BATCH
        # The owner verdict is the server's, computed in this transaction with the same
        # expression the fast path's writes are conditional on: the error raised below
        # and what was written can never disagree (a refused append writes nothing).
        lock = self._lock_statement(tenant, thread_id, branch, owner)
        statements: list[Statement] = [(BEGIN, None), lock]
        if fast:
            # One round trip: the writes are conditional on the checks (thread,
            # owner, branch), so a failed check writes nothing and the COMMIT
            # ends an empty transaction; positions come from the locked counter.
            statements += self._fast_writes(tenant, thread_id, entries, updated_at, branch, owner)
        elif keys:
            hashes = [idem_hash(k) for k in keys]
            statements.append(
                (
                    f"SELECT {E_COLS}, e.fingerprint FROM {self._entries} e JOIN {self._threads} t"
                    " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                    " WHERE e.tenant_id = %s AND e.thread_id = %s"
                    " AND e.branch = COALESCE(%s, t.current_branch)"
                    f" AND e.idem_hash IN ({', '.join(['%s'] * len(hashes))})",
                    (tenant, thread_id, branch, *hashes),
                )
            )
        results = await self._run(conn, statements)
        thread, name, position = _append_head(results[2][0], thread_id, branch, owner)
        by_key: dict[str, Entry] = {}
        if keys:
            prints: dict[str, str | None] = {}
            for found in results[3][0]:
                entry = row_to_entry(found[:-1])
                if entry.idempotency_key is not None:
                    by_key[entry.idempotency_key] = entry
                    prints[entry.idempotency_key] = found[-1]
            for new in entries:  # before any write; the exception rolls the transaction back
                if new.idempotency_key in prints and clash(
                    prints[new.idempotency_key], new.fingerprint
                ):
                    raise key_reused(new.idempotency_key)
        stored: list[Entry] = []
        values: list[Any] = []
        for new in entries:
            existing = by_key.get(new.idempotency_key) if new.idempotency_key else None
            if existing is not None:
                stored.append(existing)
                continue
            position += 1
            entry = _stored_entry(new, thread_id, name, position)
            if entry.idempotency_key is not None:
                by_key[entry.idempotency_key] = entry
            stored.append(entry)
            values += (tenant, thread_id, name, position, *entry_values(new))
        thread = dataclasses.replace(thread, updated_at=updated_at)
        if fast:
            return AppendResult(stored, thread)
        writes: list[Statement] = []
        added = len(values) // INSERT_WIDTH
        if added:
            row_marks = "(" + ", ".join(["%s"] * INSERT_WIDTH) + ")"
            writes.append(
                (
                    f"INSERT INTO {self._entries} ({INSERT_COLS}) VALUES "
                    + ", ".join([row_marks] * added),
                    values,
                )
            )
            writes.append(
                (
                    f"UPDATE {self._branches} SET last_position = %s,"
                    " entry_count = entry_count + %s"
                    " WHERE tenant_id = %s AND thread_id = %s AND name = %s",
                    (position, added, tenant, thread_id, name),
                )
            )
        writes.append(
            (
                f"UPDATE {self._threads} SET updated_at = %s WHERE tenant_id = %s AND id = %s",
                (to_us(updated_at), tenant, thread_id),
            )
        )
        writes.append(("COMMIT", None))
        await self._run(conn, writes)
        return AppendResult(stored, thread)

    def _fast_writes(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> list[Statement]:
        """INSERT ... SELECT and UPDATE that write only if thread, owner and branch check out."""
        source = (
            f" FROM {self._threads} t JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
            " WHERE t.tenant_id = %s AND t.id = %s"
        )
        where: list[Any] = [branch, tenant, thread_id]
        if not isinstance(owner, Unset):
            source += " AND t.user_id <=> %s"
            where.append(owner)
        marks = ", ".join(["%s"] * (INSERT_WIDTH - 4))
        selects = []
        args: list[Any] = []
        for offset, new in enumerate(entries, start=1):
            selects.append(
                f"SELECT t.tenant_id, t.id, b.name, b.last_position + {offset}, {marks}{source}"
            )
            args += (*entry_values(new), *where)
        return [
            (
                f"INSERT INTO {self._entries} ({INSERT_COLS}) " + " UNION ALL ".join(selects),
                args,
            ),
            (
                f"UPDATE {self._threads} t JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
                " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
                f" SET b.last_position = b.last_position + {len(entries)},"
                f" b.entry_count = b.entry_count + {len(entries)}, t.updated_at = %s"
                " WHERE t.tenant_id = %s AND t.id = %s"
                + (" AND t.user_id <=> %s" if not isinstance(owner, Unset) else ""),
                (branch, to_us(updated_at), *where[1:]),
            ),
            ("COMMIT", None),
        ]
