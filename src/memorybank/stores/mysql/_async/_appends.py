"""Appends of the MySQL store: one transaction per append (one round trip for a
small batch without idempotency keys, two otherwise), or one for several concurrent
ones (write combining). Why each is written so, with the measurements: docs/mysql.md
("Appends and write combining").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from memorybank.errors import Conflict
from memorybank.records import Thread
from memorybank.stores.contract._async.store import AppendResult, NewEntry, Unset
from memorybank.stores.contract.appends import new_entry
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.compat import AsyncMySQLConnection
from memorybank.stores.mysql.rows import (
    BEGIN,
    E_COLS,
    INSERT_COLS,
    INSERT_WIDTH,
    T_COLS,
    Statement,
    entry_values,
    id_clash,
    idem_hash,
)
from memorybank.stores.sql._async.appends import SQLAppends
from memorybank.stores.sql.appends import AppendItem, append_branch, plan_keyed
from memorybank.stores.sql.common import row_to_thread, to_us
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import marks

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
    row: list[Any] = json.loads(head[0][0]) if head else [None] * 13
    got = append_branch(
        thread_id,
        row_to_thread(row) if head else None,
        owner,
        branch,
        lambda _: row[10] is not None,
        allowed=isinstance(owner, Unset) or bool(row[12]),  # the server's verdict
    )
    if isinstance(got, Exception):
        raise got
    return *got, int(row[11])


class AppendsMixin(MySQLBase, SQLAppends):
    """``entry_append`` and its transactions."""

    def _id_refused(self, cause: BaseException) -> bool:
        return id_clash(cause, self.prefix)

    async def _append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        """One transaction: one round trip alone, two in a batch or with idempotency
        keys (no ``RETURNING``: positions read under the lock first; docs/mysql.md)."""
        item = (thread_id, branch, owner, entries, updated_at)
        if all(e.idempotency_key is None for e in entries) and 0 < len(entries) <= _FAST_BATCH:
            return await self._appends.submit(tenant, item)
        [result] = await self._with_retry(lambda conn: self._append_many(conn, tenant, [item]))
        if isinstance(result, Exception):
            raise result
        return result

    async def _append_combined(
        self, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        """The appends of concurrent callers, to any threads, in one transaction and a
        fixed number of statements (``_append_many``; a lone one: ``_append_lone``). A
        refused caller (no thread, other owner, no branch) gets its error and wrote
        nothing; the others are stored. When the id key refused the transaction (a
        caller's id taken, or two callers' one id), each caller runs alone, so that
        only those whose ids are taken are refused (``entry_append`` names the id)."""
        if len(items) == 1:  # a lone append: one round trip
            return [await self._alone(tenant, items[0])]
        out: list[AppendResult | Exception] = []
        for chunk in _by_size(items):  # no statement much bigger than an append alone
            try:
                out += await self._with_retry(
                    partial(self._append_many, tenant=tenant, items=chunk)
                )
            except Conflict as error:
                if error.__cause__ is None or not id_clash(error.__cause__, self.prefix):
                    raise
                out += [await self._alone(tenant, item) for item in chunk]
        return out

    async def _alone(self, tenant: str, item: AppendItem) -> AppendResult | Exception:
        """``_append_lone`` in a transaction of its own; the caller's result or refusal."""
        try:
            return await self._with_retry(lambda conn: self._append_lone(conn, tenant, item))
        except Exception as error:  # the caller's alone: raised to it by the combiner
            return error

    async def _append_lone(
        self, conn: AsyncMySQLConnection, tenant: str, item: AppendItem
    ) -> AppendResult:
        """One caller's append (up to ``_FAST_BATCH`` entries, no idempotency keys) in
        ONE round trip: the locking read keeps the counter and branch in session
        variables, NULL when a check fails, and the plain writes that follow are
        conditional on them (docs/mysql.md)."""
        thread_id, branch, owner, entries, updated_at = item
        values = marks(MYSQL, INSERT_WIDTH - 4)
        rows = [
            f"SELECT %s, %s, @memorybank_branch, @memorybank_last + {k}, {values}"
            " FROM DUAL WHERE @memorybank_last IS NOT NULL"
            for k in range(1, len(entries) + 1)
        ]
        added = len(entries)
        statements: list[Statement] = [
            (BEGIN, None),
            self._lock_statement(tenant, thread_id, branch, owner),
            ("SELECT @memorybank_row", None),
            (
                f"INSERT INTO {self._entries} ({INSERT_COLS}) " + " UNION ALL ".join(rows),
                [v for new in entries for v in (tenant, thread_id, *entry_values(new))],
            ),
            (
                f"UPDATE {self._branches} SET last_position = @memorybank_last + {added},"
                f" entry_count = entry_count + {added} WHERE tenant_id = %s AND thread_id = %s"
                " AND name = @memorybank_branch AND @memorybank_last IS NOT NULL",
                (tenant, thread_id),
            ),
            (
                f"UPDATE {self._threads} SET updated_at = %s WHERE tenant_id = %s AND id = %s"
                " AND @memorybank_last IS NOT NULL",
                (to_us(updated_at), tenant, thread_id),
            ),
            ("COMMIT", None),
        ]
        head = (await self._run(conn, statements))[3][0]
        thread, name, position = _append_head(
            [] if head[0][0] is None else head, thread_id, branch, owner
        )
        stored = [new_entry(new, thread_id, name, position + k) for k, new in enumerate(entries, 1)]
        return AppendResult(stored, dataclasses.replace(thread, updated_at=updated_at))

    async def _append_many(
        self, conn: AsyncMySQLConnection, tenant: str, items: Sequence[AppendItem]
    ) -> list[AppendResult | Exception]:
        """The callers' appends in one transaction of two round trips (no ``RETURNING``:
        positions read under the lock first; not ``_transact``: its ``COMMIT`` would be
        a third): round trip 1 locks the threads (in id order: two such transactions
        never deadlock) and the branches appended to, and reads the entries under the
        callers' idempotency keys; round trip 2 inserts every allowed entry, sets each
        counter and ``updated_at`` once, and commits. Each caller's refusal (the head's,
        or a key reused: ``append_branch``, ``plan_keyed``) is its own result."""
        tids = sorted({item[0] for item in items})
        named = sorted({item[1] for item in items if item[1] is not None})
        matches = ["b.name = t.current_branch"] if any(i[1] is None for i in items) else []
        matches += [f"b.name IN ({marks(MYSQL, len(named))})"] if named else []
        # Rows are read, and locked, in thread id order: the order of the threads'
        # primary key, which the plan scans (ORDER BY t.id keeps that plan; ordering by
        # the branch name too added a temporary table and a filesort: 32 threads, 650 ->
        # 325 us). A thread's branch rows are locked only after its thread row.
        lock: Statement = (
            f"SELECT JSON_ARRAY({T_COLS}, b.name, b.last_position)"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            f" AND b.thread_id = t.id AND ({' OR '.join(matches)})"
            f" WHERE t.tenant_id = %s AND t.id IN ({marks(MYSQL, len(tids))})"
            " ORDER BY t.id FOR UPDATE",
            (*named, tenant, *tids),
        )
        keyed = [k for k, i in enumerate(items) if any(e.idempotency_key is not None for e in i[3])]
        reads = [self._keyed_read(tenant, items[k]) for k in keyed]
        results = await self._run(conn, [(BEGIN, None), lock, *reads])
        held = dict(zip(keyed, (rows for rows, _ in results[3:]), strict=True))
        threads: dict[str, Thread] = {}
        counters: dict[tuple[str, str], int] = {}
        branches: dict[str, set[str]] = {}  # of each thread, those locked
        for (text,) in results[2][0]:
            row = json.loads(text)
            read = row_to_thread(row)
            threads.setdefault(read.id, read)
            if row[10] is not None:
                counters[read.id, row[10]] = int(row[11])
                branches.setdefault(read.id, set()).add(row[10])
        locked = dict(counters)
        out: list[AppendResult | Exception] = []
        values: list[Any] = []
        touched: dict[str, datetime] = {}
        for k, (thread_id, branch, owner, sent, updated_at) in enumerate(items):
            got = append_branch(
                thread_id, threads.get(thread_id), owner, branch,
                branches.get(thread_id, set()).__contains__,
            )  # fmt: skip
            if isinstance(got, Exception):
                out.append(got)
                continue
            thread, name = got
            try:
                stored, added = plan_keyed(
                    sent, held.get(k, ()), thread_id, name, counters[thread_id, name]
                )
            except Conflict as reused:  # a key held with another payload
                out.append(reused)
                continue
            for at, new in added:
                values += (tenant, thread_id, name, at, *entry_values(new))
                counters[thread_id, name] = at
            touched[thread_id] = max(updated_at, touched.get(thread_id, updated_at))
            out.append(AppendResult(stored, dataclasses.replace(thread, updated_at=updated_at)))
        writes: list[Statement] = []
        if values:
            writes.append(self._insert(values))
        # each branch appended to: its new counter and how many entries it gained
        moved = [(t, n, p, p - locked[t, n]) for (t, n), p in counters.items() if p > locked[t, n]]
        if touched:
            writes += self._bumps(tenant, moved, touched)
        await self._run(conn, [*writes, ("COMMIT", None)])
        return out

    def _keyed_read(self, tenant: str, item: AppendItem) -> Statement:
        """The entries (and fingerprints) the caller's branch holds under its keys."""
        thread_id, branch, _, entries, _ = item
        keys = [e.idempotency_key for e in entries if e.idempotency_key is not None]
        hashes = [idem_hash(k) for k in keys]  # keys are long: the index is on a hash
        return (
            f"SELECT {E_COLS}, e.fingerprint FROM {self._entries} e JOIN {self._threads} t"
            " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
            " WHERE e.tenant_id = %s AND e.thread_id = %s"
            " AND e.branch = COALESCE(%s, t.current_branch)"
            f" AND e.idem_hash IN ({marks(MYSQL, len(hashes))})",
            (tenant, thread_id, branch, *hashes),
        )

    def _entry_insert(
        self, tenant: str, thread_id: str, branch: str, position: int, entry: NewEntry
    ) -> Statement:
        return self._insert((tenant, thread_id, branch, position, *entry_values(entry)))

    def _insert(self, values: Sequence[Any]) -> Statement:
        """One multi-row ``INSERT`` of entries (``INSERT_WIDTH`` values a row)."""
        rows = len(values) // INSERT_WIDTH
        return (
            f"INSERT INTO {self._entries} ({INSERT_COLS}) VALUES "
            + ", ".join([f"({marks(MYSQL, INSERT_WIDTH)})"] * rows),
            values,
        )

    def _bumps(
        self,
        tenant: str,
        moved: Sequence[tuple[str, str, int, int]],
        touched: dict[str, datetime],
    ) -> list[Statement]:
        """The ``UPDATE``s of an append, one ``CASE`` statement per table: each branch in
        ``moved`` (thread, name, new counter, entries gained), each thread's ``updated_at``."""
        among = f" WHERE tenant_id = %s AND {{}} IN ({marks(MYSQL, len(touched))})"
        branch = " WHEN thread_id = %s AND name = %s THEN %s" * len(moved)
        writes: list[Statement] = []
        if moved:
            writes.append(
                (
                    f"UPDATE {self._branches} SET last_position = CASE{branch} ELSE last_position"
                    f" END, entry_count = entry_count + CASE{branch} ELSE 0 END"
                    + among.format("thread_id"),
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
                + " ELSE updated_at END"
                + among.format("id"),
                (*(v for t, when in touched.items() for v in (t, to_us(when))), tenant, *touched),
            )
        )
        return writes

    def _lock_statement(
        self, tenant: str, thread_id: str, branch: str | None, owner: str | Unset | None
    ) -> Statement:
        """Lock the thread and branch rows; the row goes to ``@memorybank_row`` (the
        thread, branch, counter and owner verdict), the counter (NULL when there is no
        such branch or the owner differs) to ``@memorybank_last`` and the branch name to
        ``@memorybank_branch``, all NULL when there is no such thread (``MAX`` of at most
        one row: always one row, so every variable is set afresh). ``SELECT ... INTO ...
        FROM``: the one place for ``INTO`` that every MySQL and MariaDB accepts without a
        deprecation warning (MySQL 8.0.20 deprecated ``INTO`` before ``FOR UPDATE``; at
        the end is 8.0.20+ only)."""
        unset = isinstance(owner, Unset)
        verdict = "t.user_id <=> %s"
        row = f"JSON_ARRAY({T_COLS}, b.name, b.last_position, {verdict})"
        allowed = "TRUE" if unset else verdict
        args: tuple[Any, ...] = (None,) if unset else (owner, owner)
        return (
            # one JSON_ARRAY column: PyMySQL parses a column's metadata in pure Python;
            # aggregates: exactly one row, all NULL when the thread is missing
            f"SELECT MAX({row}), MAX(IF({allowed}, b.last_position, NULL)), MAX(b.name)"
            " INTO @memorybank_row, @memorybank_last, @memorybank_branch"
            f" FROM {self._threads} t LEFT JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
            " AND b.thread_id = t.id AND b.name = COALESCE(%s, t.current_branch)"
            " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
            (*args, branch, tenant, thread_id),
        )
