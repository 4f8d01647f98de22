"""``SQLCore``: the store verbs SQLite, PostgreSQL and MySQL/MariaDB share whole, written
once over two primitives each engine gives (``_table``, ``_select_many``) and its
``Dialect``. An engine overrides a verb only where it truly differs, saying why.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from memorybank.errors import NotFound, ThreadForbidden
from memorybank.events.types import Event, check_floor, cursor_number, no_feed
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores.contract._async.store import SearchHit
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import (
    UNSET,
    Unset,
    Visibility,
    names_user,
    searched_kinds,
)
from memorybank.stores.sql._async.key_reads import KeyReads
from memorybank.stores.sql.common import (
    ENTRY_COLUMNS,
    RECORD_COLUMNS,
    THREAD_COLUMNS,
    any_user,
    page_row_to_entry,
    row_to_entry,
    row_to_record,
    row_to_summary,
    row_to_thread,
    run_ids_sql,
    scope_sql,
    vector_array,
)
from memorybank.stores.sql.dialect import Dialect
from memorybank.stores.sql.events import event_of_row, events_list_query
from memorybank.stores.sql.program import AsyncStepRunner, Program, Statement
from memorybank.stores.vectors.exact import CachedRows, VectorQuery, exact_hits

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores.contract.items import NewEntry, Record
    from memorybank.stores.vectors.exact import Checked, Shortlist, VectorScope
from memorybank.stores.sql.statements import (
    FORGET_COUNTED,
    EntryPage,
    RunStatements,
    after_position,
    branch_copy_query,
    branch_deletable,
    branch_entries,
    branch_fork_query,
    branch_list_query,
    branch_named,
    branch_of_query,
    branches_found,
    compact_prefix_query,
    entries_by_ids_query,
    entry_update_rows,
    entry_vectors_gone,
    forget_user_queries,
    fork_point,
    marks,
    qualified,
    record_list_query,
    record_page_query,
    records_by_ids_query,
    records_by_keys_query,
    run_statements,
    thread_delete_queries,
    thread_get_query,
    thread_list_query,
    thread_update_query,
    updated_thread,
)

__all__ = ["SQLCore", "Statement", "run_program"]

T = TypeVar("T")

#: Entry columns on ``e`` (reads joined with the thread row).
_ENTRY_ON_E = qualified("e", ENTRY_COLUMNS)


async def run_program(program: Program[T], run: AsyncStepRunner) -> T:
    """``drive`` with an engine's async ``run``: ``program``'s value."""
    try:
        step = next(program)
        while True:
            step = program.send(await run(step) if step else [])
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


class SQLCore(KeyReads):
    """The verbs written once for the SQL engines."""

    #: The engine's spelling (``memorybank.stores.sql.dialect``).
    dialect: ClassVar[Dialect]
    #: What every SQL engine offers (SQLite adds ``FTS5``; PostgreSQL ``PGVECTOR`` once it
    #: finds pgvector, and loses ``SNAPSHOT`` on one connection).
    capabilities: frozenset[str] = frozenset(
        {
            Capability.ATOMIC,
            Capability.EVENTS,
            Capability.DURABLE,
            Capability.MULTI_PROCESS,
            Capability.SNAPSHOT,
            Capability.RUN_STATE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
        }
    )

    @abc.abstractmethod
    def _table(self, name: str) -> str:
        """The store's table ``name`` as its statements name it (prefixed, quoted)."""

    #: The table prefix.
    prefix: str
    #: The columns a record is read with (``row_to_record``): unqualified, or on ``r``
    #: where the engine reads by id its own way (PostgreSQL).
    _record_columns: ClassVar[str] = RECORD_COLUMNS
    #: The (tenant_id, kind, created_at, id) index of records, unprefixed (``record_page``).
    _records_by_time: ClassVar[str] = "records_created"
    #: What orders an agent's summaries of one ``created_at`` (``summary_list``): their
    #: ids, or PostgreSQL's insertion sequence (its ``seq`` identity column).
    _summary_order: ClassVar[str] = "id"

    async def _write_one(self, sql: str, params: Sequence[Any]) -> int:
        """One statement in a transaction of its own; the rows it changed (``_write_many``
        of it, where the engine has no cheaper single write)."""
        return (await self._write_many([(sql, params)]))[0]

    @abc.abstractmethod
    async def _write_many(self, statements: Sequence[Statement]) -> list[int]:
        """Statements in one transaction (retried whole where the engine retries a
        transaction lost to contention); the rows each changed."""

    @abc.abstractmethod
    async def _select_many(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """The rows of several reads, in order, as one read where the engine can (one
        snapshot on SQLite, one round trip on MySQL)."""

    async def _select(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self._select_many([(sql, params)])

    async def _write_again(self, sql: str, params: Sequence[Any]) -> int:
        """``_write_one`` of a write that may run twice (idempotent): PostgreSQL runs it
        again on a fresh connection after a lost one, as it does reads."""
        return await self._write_one(sql, params)

    # -- threads and branches ----------------------------------------------------------

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        """The thread row, or ``None``."""
        rows = await self._select(
            thread_get_query(self.dialect, self._table("threads")), (tenant, thread_id)
        )
        return row_to_thread(rows[0]) if rows else None

    def _thread_source(self, user_id: str | Unset | None) -> str:
        """The table ``thread_list`` reads, with an index hint where the engine needs one."""
        return self._table("threads")

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
        sql, params = thread_list_query(
            self.dialect, self._thread_source(user_id), tenant, user_id=user_id,
            agent_id=agent_id, status=status, limit=limit,
        )  # fmt: skip
        return [row_to_thread(r) for r in await self._select(sql, params)]

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
        """The given fields updated (``thread_update_query``; a new current branch must
        exist), then the thread read back in the same transaction: what is missing."""
        update = thread_update_query(
            self.dialect, self._table("threads"), self._table("branches"), tenant, thread_id,
            updated_at=updated_at, title=title, metadata=metadata, status=status,
            current_branch=current_branch,
        )  # fmt: skip
        read = (thread_get_query(self.dialect, self._table("threads")), (tenant, thread_id))
        return await self._transact(
            lambda: self._thread_update_program(thread_id, current_branch, [update, read])
        )

    @staticmethod
    def _thread_update_program(
        thread_id: str, current_branch: str | Unset, step: Sequence[Statement]
    ) -> Program[Thread]:
        _, (rows, _) = yield step
        return updated_thread(row_to_thread(rows[0]) if rows else None, thread_id, current_branch)

    def _entry_update_program(
        self,
        tenant: str,
        thread_id: str,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> Program[int]:
        d, m, t = self.dialect, self.dialect.mark, self._table
        by_id = {c[0]: c for c in changes}  # the last change of an id wins
        # counted, not the updates' rowcounts: MySQL counts only rows whose value changed
        counted = [
            (
                f"SELECT COUNT(*) FROM {t('entries')} WHERE tenant_id = {m} AND thread_id = {m}"
                f" AND branch = {m} AND id{cond}",
                (tenant, thread_id, branch, *ids),
            )
            for cond, ids in d.one_of(list(by_id))
        ]
        sql, rows = entry_update_rows(d, t("entries"), tenant, thread_id, branch, [*by_id.values()])
        head, *results = yield [
            (
                f"SELECT t.id FROM {t('threads')} t WHERE t.tenant_id = {m} AND t.id = {m}"
                + d.lock_thread,
                (tenant, thread_id),
            ),
            *counted,
            *((sql, row) for row in rows),
        ]
        if not head[0]:
            raise NotFound(f"thread {thread_id!r} not found")  # nothing matched, nothing written
        return sum(int(found[0][0]) for found, _ in results[: len(counted)])

    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """Set content, state and token count by id on the branch, under the thread
        row's lock; how many of the ids the branch holds."""
        return await self._transact(
            lambda: self._entry_update_program(tenant, thread_id, branch, changes)
        )

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        """The thread's branches, oldest first; ``NotFound`` without the thread."""
        sql = branch_list_query(self.dialect, self._table("threads"), self._table("branches"))
        return branches_found(await self._select(sql, (tenant, thread_id)), thread_id)

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        """Delete the thread, its branches, entries and their vectors in one transaction;
        whether it existed (the thread row deleted first: an append holding it finishes
        first, a later one finds no thread)."""
        d, t = self.dialect, self._table
        key = (tenant, thread_id)
        before = self._vectors_deleting(
            tenant, f"v.thread_id = {d.mark} AND v.kind = 'entry'", (thread_id,)
        )
        queries = thread_delete_queries(d, t("threads"), t("branches"), t("entries"), t("vectors"))
        counts = await self._write_many([*before, *((sql, key) for sql in queries)])
        return counts[len(before)] > 0

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Erase the user's threads (with entries and their vectors), records (with
        theirs), snapshots and summaries in one transaction (``forget_user_queries``);
        the rows erased. SQLite adds its index and file upkeep."""
        m, t, key = self.dialect.mark, self._table, (tenant, user_id)
        before = [
            (  # the user's threads locked first: an append to one waits, then finds it gone
                f"SELECT id FROM {t('threads')} WHERE tenant_id = {m} AND user_id = {m}"
                + self.dialect.lock_row,
                key,
            ),
            *self._vectors_deleting(
                tenant,
                f"v.kind = 'entry' AND v.thread_id IN (SELECT t.id FROM {t('threads')} t"
                f" WHERE t.tenant_id = {m} AND t.user_id = {m})",
                key,
            ),
            *self._vectors_deleting(
                tenant,
                f"v.kind <> 'entry' AND v.id IN (SELECT r.id FROM {t('records')} r"
                f" WHERE r.tenant_id = {m} AND r.kind = v.kind AND r.user_id = {m})",
                key,
            ),
        ]
        queries = forget_user_queries(self.dialect, t, tenant, user_id)
        counts = await self._forget_write(tenant, user_id, [*before, *queries])
        return sum(counts[len(before) + i] for i in FORGET_COUNTED)

    async def _forget_write(
        self, tenant: str, user_id: str, statements: Sequence[Statement]
    ) -> list[int]:
        """Run ``forget_user``'s statements in one transaction with the change feed's
        steps (``_forget_program``); the rows each changed. SQLite and MySQL keep their own
        (SQLite's feed lists users; MySQL reads the feed's state before its one round trip)."""
        return await self._transact(lambda: self._forget_program(tenant, user_id, statements))

    def _forget_program(
        self, tenant: str, user_id: str, statements: Sequence[Statement]
    ) -> Program[list[int]]:
        """Where the database has a feed (its tables): the tenant's delete events muted
        first (a row no other transaction sees), then the erasure, then the user's events
        gone and, while the feed is on, one ``user.forgotten`` recorded (``_forgotten``)."""
        d, m, t = self.dialect, self.dialect.mark, self._table
        ((state, _),) = yield [self._feed_state_read()]
        if not state[0][0]:
            done = yield list(statements)
            return [count for _, count in done]
        mute = f"INSERT INTO {t('events_mute')} (tenant_id) VALUES ({m})"
        done = yield [(mute + d.if_absent("tenant_id"), (tenant,)), *statements]
        events = f"DELETE FROM {t('events')} WHERE tenant_id = {m} AND user_id = {m}"
        *_, (state, _) = yield [
            (f"DELETE FROM {t('events_mute')} WHERE tenant_id = {m}", (tenant,)),
            (events, (tenant, user_id)),
            self._feed_state_read(),
        ]
        if state[0][1]:
            yield self._forgotten(tenant, user_id)
        return [count for _, count in done[1:]]

    def _forgotten(self, tenant: str, user_id: str) -> list[Statement]:
        """The statements recording the feed's ``user.forgotten`` event of ``user_id``."""
        raise NotImplementedError(f"{type(self).__name__} records no user.forgotten event")

    # -- write transactions with reads in between (``_transact``) ---------------------
    #
    # The cold verbs below are written once as programs: generators that yield the
    # statements of one step (sent together: one round trip on MySQL) and receive what
    # each gave, deciding the next step from it. ``_transact`` runs a program in one
    # write transaction on the engine's own connection (SQLite's writer thread, a
    # PostgreSQL pooled connection, a MySQL one, retried whole after lock contention).

    @abc.abstractmethod
    async def _transact(self, program: Callable[[], Program[T]]) -> T:
        """Run ``program()`` in one write transaction; its value. Committed when it
        returns, rolled back when it raises (``program`` may run again on a retry)."""

    #: Whether branch rows keep ``entry_count`` and ``last_position`` (SQLite's do not:
    #: ``_branch_count``).
    _kept_counts: ClassVar[bool] = True
    #: The entry columns a fork copies (all but ``branch``, which the fork names).
    _copied_columns: ClassVar[str]

    @abc.abstractmethod
    def _entry_insert(
        self, tenant: str, thread_id: str, branch: str, position: int, entry: NewEntry
    ) -> Statement:
        """The insert of one entry at ``position`` (compaction's summary), its key kept
        and no keyword-index scope (SQLite's indexer writes it)."""

    def _vectors_deleting(self, tenant: str, where: str, params: Sequence[Any]) -> list[Statement]:
        """Statements to run before deleting the tenant's vectors that ``where`` (on
        ``v``) selects: the in-process vector cache's generation of their (model, kind)
        is bumped (SQLite logs the deletions by trigger instead)."""
        m = self.dialect.mark
        return [
            (
                f"UPDATE {self._table('vector_stamps')} s SET generation = s.generation + 1"
                f" WHERE s.tenant_id = {m} AND EXISTS (SELECT 1 FROM {self._table('vectors')} v"
                " WHERE v.tenant_id = s.tenant_id AND v.model_id = s.model_id"
                f" AND v.kind = s.kind AND {where})",
                (tenant, *params),
            )
        ]

    def _drop_entry_vectors(
        self, tenant: str, thread_id: str, gone: Sequence[str], others: Sequence[str]
    ) -> list[Statement]:
        """Delete the vectors of these deleted entries of one branch that no other branch
        (``others``) holds (``entry_vectors_gone``)."""
        d = self.dialect
        delete = d.delete_from(self._table("vectors"), "v") + f" WHERE v.tenant_id = {d.mark} AND "
        statements: list[Statement] = []
        for where, params in entry_vectors_gone(d, self._table("entries"), thread_id, gone, others):
            statements += [
                *self._vectors_deleting(tenant, where, params),
                (delete + where, (tenant, *params)),
            ]
        return statements

    def _recount(self, tenant: str, thread_id: str, branch: str, change: int) -> list[Statement]:
        """Keep the branch's ``entry_count`` after ``change`` entries came (or went)."""
        if not self._kept_counts or not change:
            return []
        m = self.dialect.mark
        return [
            (
                f"UPDATE {self._table('branches')} SET entry_count = entry_count + {m}"
                f" WHERE tenant_id = {m} AND thread_id = {m} AND name = {m}",
                (change, tenant, thread_id, branch),
            )
        ]

    def _locked_head(self, tenant: str, thread_id: str, branch: str | None) -> list[Statement]:
        """The first step of a write on a thread's entries: the thread row locked with the
        branch named (``branch_of_query``), and the names of its branches."""
        d, m = self.dialect, self.dialect.mark
        return [
            (
                branch_of_query(d, self._table("threads"), d.lock_thread),
                (branch, tenant, thread_id),
            ),
            (
                f"SELECT name FROM {self._table('branches')}"
                f" WHERE tenant_id = {m} AND thread_id = {m}",
                (tenant, thread_id),
            ),
        ]

    def _deleting(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        names: Sequence[Sequence[Any]],
        conditions: Sequence[tuple[str, Sequence[Any]]] = (("", ()),),
    ) -> Program[int]:
        """Delete branch ``name``'s entries matching any of ``conditions`` (on ``e``,
        ``branch_entries``) with the vectors no other branch holds, the thread row locked
        already; how many."""
        d, entries = self.dialect, self._table("entries")
        keys = [
            (branch_entries(d, cond), (tenant, thread_id, name, *extra))
            for cond, extra in conditions
        ]
        found = yield [
            (f"SELECT e.id FROM {entries} e WHERE {where}", args) for where, args in keys
        ]
        gone = [str(row[0]) for rows, _ in found for row in rows]
        if not gone:
            return 0
        others = [str(row[0]) for row in names if row[0] != name]
        done = yield [
            *((f"{d.delete_from(entries, 'e')} WHERE {where}", args) for where, args in keys),
            *self._recount(tenant, thread_id, name, -len(gone)),
            *self._drop_entry_vectors(tenant, thread_id, gone, others),
        ]
        return sum(count for _, count in done[: len(keys)])

    def _delete_program(
        self,
        tenant: str,
        thread_id: str,
        branch: str | None,
        entry_ids: Sequence[str] | None = None,
        after: str | None = None,
    ) -> Program[int]:
        """``entry_delete`` (``entry_ids``), ``entry_truncate_after`` (``after``) or
        ``entry_clear`` (neither) under the thread row's lock."""
        d, m = self.dialect, self.dialect.mark
        head, names = yield self._locked_head(tenant, thread_id, branch)
        name = branch_named(head[0], thread_id)
        conditions: list[tuple[str, Sequence[Any]]] = [("", ())]
        if entry_ids is not None:
            ids = list(dict.fromkeys(entry_ids))
            conditions = [(" AND e.id" + cond, params) for cond, params in d.one_of(ids)]
        elif after is not None:
            [(found, _)] = yield [
                (
                    f"SELECT position FROM {self._table('entries')} WHERE tenant_id = {m}"
                    f" AND thread_id = {m} AND branch = {m} AND id = {m}",
                    (tenant, thread_id, name, after),
                )
            ]
            if not found:
                raise NotFound(f"entry {after!r} not found on this branch")
            conditions = [(after_position(d), (found[0][0],))]
        if not conditions:
            return 0
        return (yield from self._deleting(tenant, thread_id, name, names[0], conditions))

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        """Delete these entries of the branch (``None``: the current one); how many."""
        return await self._transact(
            lambda: self._delete_program(tenant, thread_id, branch, entry_ids)
        )

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        """Delete the branch's entries after ``entry_id``; how many."""
        return await self._transact(
            lambda: self._delete_program(tenant, thread_id, branch, after=entry_id)
        )

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Delete every entry of the branch; how many."""
        return await self._transact(lambda: self._delete_program(tenant, thread_id, branch))

    def _branch_delete_program(self, tenant: str, thread_id: str, name: str) -> Program[bool]:
        m = self.dialect.mark
        head, names = yield self._locked_head(tenant, thread_id, None)
        branch_deletable(head[0], thread_id, name)
        [(_, deleted)] = yield [
            (
                f"DELETE FROM {self._table('branches')}"
                f" WHERE tenant_id = {m} AND thread_id = {m} AND name = {m}",
                (tenant, thread_id, name),
            )
        ]
        yield from self._deleting(tenant, thread_id, name, names[0])
        return deleted > 0

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        """Delete a branch with its entries (never the current one); whether it existed."""
        return await self._transact(lambda: self._branch_delete_program(tenant, thread_id, name))

    def _fork_program(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Program[Branch]:
        d, m, t = self.dialect, self.dialect.mark, self._table
        last = "s.last_position" if self._kept_counts else "NULL"
        [(rows, _)] = yield [
            (
                branch_fork_query(
                    d, t("threads"), t("branches"), t("entries"), extra=last, lock=d.lock_thread
                ),
                (from_entry, from_branch, name, tenant, thread_id),
            )
        ]
        upto = fork_point(rows, thread_id, name, from_branch, from_entry)
        if upto is None:  # the whole source: its last position, where kept
            upto = 2**62 if rows[0][4] is None else int(rows[0][4])
        row: tuple[Any, ...] = (
            tenant, thread_id, name, d.time(created_at), from_branch, from_entry,
        )  # fmt: skip
        columns, values = "", ""
        if self._kept_counts:  # the entries copied next, counted
            columns, values = (
                ", last_position, entry_count",
                (
                    f", {m}, (SELECT COUNT(*) FROM {t('entries')} WHERE tenant_id = {m}"
                    f" AND thread_id = {m} AND branch = {m} AND position <= {m})"
                ),
            )
            row += (upto, tenant, thread_id, from_branch, upto)
        yield [
            (
                f"INSERT INTO {t('branches')} (tenant_id, thread_id, name, created_at,"
                f" from_branch, from_entry{columns}) VALUES ({marks(d, 6)}{values})",
                row,
            ),
            (
                branch_copy_query(d, t("entries"), self._copied_columns),
                (name, tenant, thread_id, from_branch, upto),
            ),
        ]
        return Branch(name, thread_id, created_at, from_branch, from_entry)

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
        """Copy ``from_branch`` (up to ``from_entry``) into a new branch ``name``, under
        the thread row's lock."""
        return await self._transact(
            lambda: self._fork_program(tenant, thread_id, name, from_branch, from_entry, created_at)
        )

    def _compact_program(
        self,
        tenant: str,
        thread_id: str,
        branch: str,
        through: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> Program[bool]:
        d, m, t = self.dialect, self.dialect.mark, self._table
        prefix = (tenant, thread_id, branch, through)
        head, found, names = yield [
            (
                f"SELECT b.name FROM {t('threads')} t LEFT JOIN {t('branches')} b"
                f" ON b.tenant_id = t.tenant_id AND b.thread_id = t.id AND b.name = {m}"
                f" WHERE t.tenant_id = {m} AND t.id = {m}{d.lock_thread}",
                (branch, tenant, thread_id),
            ),
            (compact_prefix_query(d, t("entries"), "SELECT id") + " ORDER BY position", prefix),
            (
                f"SELECT name FROM {t('branches')} WHERE tenant_id = {m} AND thread_id = {m}",
                (tenant, thread_id),
            ),
        ]
        if not head[0]:
            raise NotFound(f"thread {thread_id!r} not found")
        if head[0][0][0] is None:
            raise NotFound(f"branch {branch!r} not found")
        ids = [str(row[0]) for row in found[0]]
        if ids != list(expected_ids):
            return False
        others = [str(row[0]) for row in names[0] if row[0] != branch]
        yield [
            (compact_prefix_query(d, t("entries"), "DELETE"), prefix),
            *self._drop_entry_vectors(tenant, thread_id, ids, others),
            *(
                []
                if summary is None
                else [self._entry_insert(tenant, thread_id, branch, through, summary)]
            ),
            *self._recount(tenant, thread_id, branch, (summary is not None) - len(ids)),
            (
                f"UPDATE {t('threads')} SET updated_at = {m} WHERE tenant_id = {m} AND id = {m}",
                (d.time(updated_at), tenant, thread_id),
            ),
        ]
        return True

    async def entry_compact(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        """Compare-and-swap the branch's prefix up to ``through_position`` for
        ``summary``, under the thread row's lock (so the comparison, a later read, sees
        every compaction or append that held it before)."""
        return await self._transact(
            lambda: self._compact_program(
                tenant, thread_id, branch, through_position, expected_ids, summary, updated_at
            )
        )

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads by id: one read (``IN`` lists, or one array on PostgreSQL)."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        rows = await self._select_many(self._threads_reads(tenant, wanted))
        found = {thread.id: thread for thread in map(row_to_thread, rows)}
        return {tid: found[tid] for tid in wanted if tid in found}

    def _threads_reads(self, tenant: str, thread_ids: Sequence[str]) -> list[Statement]:
        """The rows of the threads ``thread_ids`` (distinct): ``IN`` lists, or an array."""
        d = self.dialect
        sql = f"SELECT {THREAD_COLUMNS} FROM {self._table('threads')} WHERE tenant_id = {d.mark}"
        return [(f"{sql} AND id{cond}", (tenant, *ids)) for cond, ids in d.one_of(thread_ids)]

    # -- the change feed's reads (each engine writes it with triggers of its own) -------

    @abc.abstractmethod
    def _feed_state_read(self) -> Statement:
        """The read answering one row: (the feed's tables exist, its triggers are on)."""

    @abc.abstractmethod
    def _missing_table(self, error: BaseException) -> bool:
        """Whether ``error``, raised by a read (or the driver's error it was raised
        from), says a table does not exist: the feed's, never made."""

    async def _feed_state(self) -> tuple[bool, bool]:
        """(the feed's tables exist, its triggers are on): ``_feed_state_read``, one read."""
        rows = await self._select_many([self._feed_state_read()])
        return bool(rows[0][0]), bool(rows[0][1])

    def _keep_write(self, keep: timedelta) -> tuple[str, tuple[Any, ...]]:
        """``events_enable``'s write of the time events are kept: the config row upserted
        (whole seconds, at least one)."""
        d, seconds = self.dialect, max(1, int(keep.total_seconds()))
        return (
            f"INSERT INTO {self._table('events_config')} (name, value) VALUES ('keep', {d.mark})"
            + d.upsert("name", ["value"]),
            d.upsert_params((seconds,), 1),
        )

    async def events_keep(self) -> timedelta | None:
        keep = f"SELECT value FROM {self.prefix}events_config WHERE name = 'keep'"
        try:  # one read: the state, then the keep time (no feed: no table)
            (tables, on), *rows = await self._select_many([self._feed_state_read(), (keep, ())])
        except Exception as error:
            if not self._missing_table(error):
                raise
            return None
        return timedelta(seconds=int(rows[0][0])) if tables and on and rows else None

    async def events_list(
        self,
        tenant: str,
        *,
        after: str | None,
        kinds: Sequence[str] | None,
        user_id: str | Unset | None,
        agent_id: str | Unset | None,
        limit: int,
    ) -> list[Event]:
        p, mark = self.prefix, self.dialect.mark
        number = cursor_number(after)
        sql, params = events_list_query(
            p, mark, tenant, number, kinds=kinds, user_id=user_id, agent_id=agent_id, limit=limit
        )
        floor = f"SELECT COALESCE((SELECT floor FROM {p}events_tenants WHERE tenant_id = {mark}),0)"
        try:  # one read: the tenant's floor (one row), then the events (no feed: no table)
            (lowest, *_), *rows = await self._select_many([(floor, (tenant,)), (sql, params)])
        except Exception as error:
            if not self._missing_table(error):
                raise
            return no_feed(number)
        check_floor(after, number, int(lowest))
        return [event_of_row(r) for r in rows]

    # -- the reads behind the in-process vector cache (``CachedVectorStore``) ----------

    async def _vc_count(self, tenant: str, model_id: str, kind: str, limit: int) -> int:
        """The key's vectors counted up to ``limit`` (a bounded range of an index)."""
        m = self.dialect.mark
        sql = (
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {self._table('vectors')} WHERE tenant_id = {m}"
            f" AND model_id = {m} AND kind = {m} LIMIT {m}) c"
        )
        return int((await self._select_many([(sql, (tenant, model_id, kind, limit))]))[0][0])

    async def _vc_live(self, tenant: str, model_id: str, kind: str) -> dict[str, int]:
        """``id -> seq`` of every stored vector of the key (no vector read)."""
        m = self.dialect.mark
        sql = (
            f"SELECT id, seq FROM {self._table('vectors')} WHERE tenant_id = {m}"
            f" AND model_id = {m} AND kind = {m}"
        )
        rows = await self._select_many([(sql, (tenant, model_id, kind))])
        return {str(r[0]): int(r[1]) for r in rows}

    def _vector_statements(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        column: str,
        ids: Mapping[str, Sequence[str]] | None = None,
        *,
        by_owner: bool = False,
    ) -> list[Statement]:
        """The scoped vector reads (entries, records), selecting ``column`` after
        (kind, id, thread); with ``ids``, only those ids of each kind. ``by_owner``: the
        owners in scope are read first (``Dialect.straight_join``): a user's vectors, not
        a walk of the tenant's."""
        d, m, t = self.dialect, self.dialect.mark, self._table
        straight = d.straight_join if by_owner else ""
        wanted = searched_kinds(kinds, thread_id)
        record_kinds = [kind for kind in wanted if kind != "entry"]
        statements: list[Statement] = []
        if "entry" in wanted:
            sql = (
                f"SELECT {straight}'entry', v.id, v.thread_id{column} FROM {t('threads')} t"
                f" JOIN {t('vectors')} v ON v.tenant_id = t.tenant_id AND v.thread_id = t.id"
                f" WHERE v.tenant_id = {m} AND v.model_id = {m} AND v.kind = 'entry'"
            )
            args: list[Any] = [tenant, model_id]
            if thread_id is not None:
                sql += f" AND v.thread_id = {m}"
                args.append(thread_id)
            if ids is not None:
                sql += f" AND v.id IN ({marks(d, len(ids.get('entry', ())))})"
                args += ids.get("entry", ())
            scope, scope_args = scope_sql("t.", visible_to, m)
            statements.append((sql + scope, [*args, *scope_args]))
        if record_kinds:
            sql = (
                f"SELECT {straight}v.kind, v.id, NULL{column} FROM {t('records')} r"
                f" JOIN {t('vectors')} v ON v.tenant_id = r.tenant_id AND v.kind = r.kind"
                f" AND v.id = r.id WHERE v.tenant_id = {m} AND v.model_id = {m}"
                f" AND v.kind IN ({marks(d, len(record_kinds))})"
            )
            args = [tenant, model_id, *record_kinds]
            if ids is not None:
                rids = sorted({rid for kind in record_kinds for rid in ids.get(kind, ())})
                sql += f" AND v.id IN ({marks(d, len(rids))})"
                args += rids
            scope, scope_args = scope_sql("r.", visible_to, m)
            statements.append((sql + scope, [*args, *scope_args]))
        return statements

    def _owned_vectors(self, kind: str, seq: str) -> str:
        """The rows ``(seq, id, thread, agent, user, owner there, vector)`` of a key
        (tenant, model, kind) above a ``seq`` (its column: SQLite's is ``rowid``), each
        with its owner's scope: one join."""
        m, t = self.dialect.mark, self._table
        if kind == "entry":
            owner = "v.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL"
            join = f"{t('threads')} t ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
        else:
            owner = "NULL, r.agent_id, r.user_id, r.id IS NOT NULL"
            join = f"{t('records')} r ON r.tenant_id = v.tenant_id AND r.kind = v.kind"
            join += " AND r.id = v.id"
        return (
            f"SELECT v.{seq}, v.id, {owner}, v.vector FROM {t('vectors')} v LEFT JOIN {join}"
            f" WHERE v.tenant_id = {m} AND v.model_id = {m} AND v.kind = {m} AND v.{seq} > {m}"
        )

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int, limit: int | None = None
    ) -> CachedRows:
        """The vectors after ``after`` (``seq``) with their owners' scope, one join."""
        m, t = self.dialect.mark, self._table
        sql = self._owned_vectors(kind, "seq")
        args: tuple[Any, ...] = (tenant, model_id, kind, after)
        if limit is not None:  # whole seq groups: up to the seq of the limit-th row
            sql += (
                f" AND v.seq <= COALESCE((SELECT s.seq FROM {t('vectors')} s"
                f" WHERE s.tenant_id = {m} AND s.model_id = {m} AND s.kind = {m} AND s.seq > {m}"
                f" ORDER BY s.seq LIMIT 1 OFFSET {m}), 9223372036854775807)"
            )
            args = (*args, *args, max(limit, 1) - 1)
        found = CachedRows()
        for seq, rid, tid, agent, user, alive, blob in await self._select_many(
            [(sql + " ORDER BY v.seq", args)]
        ):
            found.add(int(seq), rid, tid, agent, user, bool(alive), bytes(blob))
        return found

    async def _vc_check(
        self, scope: VectorScope, kinds: Sequence[str], shortlist: Shortlist, dim: int
    ) -> Checked:
        """The counters of ``kinds`` and the shortlisted ids in scope, in one read."""
        d, m = self.dialect, self.dialect.mark
        tenant, model_id, thread_id = scope.tenant, scope.model_id, scope.thread_id
        statements: list[Statement] = []
        if kinds:  # the counters first; their rows have 4 columns, the confirmed ones 3
            statements.append(
                (
                    f"SELECT kind, version, generation, 0 FROM {self._table('vector_stamps')}"
                    f" WHERE tenant_id = {m} AND model_id = {m}"
                    f" AND kind IN ({marks(d, len(kinds))})",
                    (tenant, model_id, *kinds),
                )
            )
        ids = {kind: [rid for rid, _ in pairs] for kind, pairs in shortlist.items()}
        # No thread filter in SQL (checked below): the ids are primary-key lookups.
        wanted = searched_kinds(list(ids), thread_id)
        statements += self._vector_statements(
            tenant, model_id, wanted, None, scope.visible_to, "", ids
        )
        stamps: dict[str, tuple[int, int]] = {}
        confirmed: set[tuple[str, str]] = set()
        for row in await self._select_many(statements) if statements else []:
            if len(row) == 4:
                stamps[str(row[0])] = (int(row[1]), int(row[2]))
            elif thread_id is None or row[2] == thread_id:
                confirmed.add((str(row[0]), str(row[1])))
        return stamps, confirmed

    async def _vc_exact(self, q: VectorQuery) -> list[SearchHit]:
        """Exact cosine top ``k`` (numpy) over every scoped vector of ``model_id``."""
        # a user's scope (while the key loads in process: ``_cold``)
        by_owner = q.thread_id is None and names_user(q.visible_to)
        statements = self._vector_statements(
            q.tenant, q.model_id, q.kinds, q.thread_id, q.visible_to, ", v.vector",
            by_owner=by_owner,
        )  # fmt: skip
        if not statements or q.k <= 0:
            return []
        return exact_hits(q.vector, await self._select_many(statements), q.k)

    async def _vc_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """The stored float32 vectors of these ids (missing ids absent), in one read."""
        rows = await self._select_many(self._vectors_reads(tenant, kind, ids, model_id))
        return {str(row[0]): vector_array(bytes(row[1])) for row in rows}

    def _vectors_reads(
        self, tenant: str, kind: str, ids: Sequence[str], model_id: str
    ) -> list[Statement]:
        """The rows ``(id, vector)`` of these distinct ids' stored vectors."""
        d, m = self.dialect, self.dialect.mark
        sql = (
            f"SELECT id, vector FROM {self._table('vectors')} WHERE tenant_id = {m}"
            f" AND kind = {m} AND model_id = {m} AND id"
        )
        return [(sql + cond, (tenant, kind, model_id, *part)) for cond, part in d.one_of(ids)]

    # -- entry reads ---------------------------------------------------------------------

    async def entry_list(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        """The thread and a page of its branch (``None``: the current one) from the last
        position back, in one snapshot (``_thread_and_page``); oldest first unless
        ``newest_first``."""
        asked = EntryPage(limit, offset, before, after)
        thread, page = await self._thread_and_page(tenant, thread_id, branch, asked)
        name = thread.current_branch if branch is None else branch
        page.sort(key=itemgetter(1), reverse=newest_first)  # by position (1 in PAGE_COLUMNS)
        return thread, [page_row_to_entry(row, thread_id, name) for row in page]

    @abc.abstractmethod
    async def _thread_and_page(
        self, tenant: str, thread_id: str, branch: str | None, page: EntryPage
    ) -> tuple[Thread, list[Sequence[Any]]]:
        """``entry_list``'s read: the thread (``NotFound`` without it) and the
        ``PAGE_COLUMNS`` rows of the page, in any order: one statement, or (SQLite, in
        process) one snapshot of a read connection."""

    async def entry_get(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        """One entry of the branch (``None``: the current one), or ``None``."""
        return (await self.entry_get_many(tenant, thread_id, [entry_id], branch=branch)).get(
            entry_id
        )

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """Entries of the branch by ids, read with the thread row, in one read."""
        wanted = list(dict.fromkeys(entry_ids))
        if not wanted:
            return {}
        d, entries, threads = self.dialect, self._table("entries"), self._table("threads")
        rows = await self._select_many(
            [
                (
                    entries_by_ids_query(d, entries, threads, _ENTRY_ON_E, len(part)),
                    (tenant, thread_id, branch, *part),
                )
                for part in (wanted[i : i + 500] for i in range(0, len(wanted), 500))
            ]
        )
        found = {entry.id: entry for entry in map(row_to_entry, rows)}
        return {eid: found[eid] for eid in wanted if eid in found}

    def _branch_count(self, branch: str) -> str:
        """The entries on the thread ``t``'s branch ``branch`` (SQL): the branch row's kept
        ``entry_count``, a primary-key lookup. SQLite's branches keep no count (an append
        would write a second row): it counts the branch's index range."""
        return (
            f"(SELECT b.entry_count FROM {self._table('branches')} b"
            f" WHERE b.tenant_id = t.tenant_id AND b.thread_id = t.id AND b.name = {branch})"
        )

    async def entry_count(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Entries on the branch (``None``: the current one); ``NotFound`` without the
        thread, 0 for a branch it does not have."""
        m = self.dialect.mark
        rows = await self._select(
            f"SELECT COALESCE({self._branch_count(f'COALESCE({m}, t.current_branch)')}, 0)"
            f" FROM {self._table('threads')} t WHERE t.tenant_id = {m} AND t.id = {m}",
            (branch, tenant, thread_id),
        )
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][0])

    async def entry_count_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, int]:
        """``entry_count`` of several threads' current branches, in one read."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        d = self.dialect
        sql = (
            f"SELECT t.id, COALESCE({self._branch_count('t.current_branch')}, 0)"
            f" FROM {self._table('threads')} t WHERE t.tenant_id = {d.mark} AND t.id"
        )
        rows = await self._select_many(
            [(sql + cond, (tenant, *ids)) for cond, ids in d.one_of(wanted)]
        )
        return {str(tid): int(n) for tid, n in rows}

    # -- working memory, snapshots, summaries ----------------------------------------------

    @property
    def _runs_sql(self) -> RunStatements:
        t = self._table
        return run_statements(
            self.dialect, t("working"), t("snapshots"), t("summaries"), self._summary_order
        )

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Upsert one key."""
        sql = self._runs_sql
        params = sql.working_set_params(self.dialect, tenant, run_id, key, value)
        await self._write_again(sql.working_set, params)

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The JSON text under ``key``, or ``None``."""
        rows = await self._select(self._runs_sql.working_get, (tenant, run_id, key))
        return str(rows[0][0]) if rows else None

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key; whether it existed."""
        return await self._write_one(self._runs_sql.working_delete, (tenant, run_id, key)) > 0

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run."""
        rows = await self._select(self._runs_sql.working_items, (tenant, run_id))
        return {str(k): str(v) for k, v in rows}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Forget the run's working memory."""
        await self._write_again(self._runs_sql.working_clear, (tenant, run_id))

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Distinct run ids, compared bytewise."""
        return await self._run_ids("working", tenant, after, limit)

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Run ids with a snapshot, compared bytewise."""
        return await self._run_ids("snapshots", tenant, after, limit)

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Agent ids with a summary, compared bytewise."""
        return await self._run_ids("summaries", tenant, after, limit, "agent_id")

    async def _run_ids(
        self, table: str, tenant: str, after: str | None, limit: int | None, column: str = "run_id"
    ) -> list[str]:
        d = self.dialect
        sql, params = run_ids_sql(
            self._table(table), tenant, after, limit, d.mark, column + d.bytewise
        )
        return [str(row[0]) for row in await self._select(sql, params)]

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner, JSON text)`` or ``None``."""
        rows = await self._select(self._runs_sql.snapshot_load, (tenant, run_id))
        return (rows[0][0], str(rows[0][1])) if rows else None

    def _snapshot_owned(self, tenant: str, run_id: str, user_id: str | None) -> Program[bool]:
        """Whether the run has a snapshot, read under its row's lock; ``ThreadForbidden``
        if another user owns it."""
        [(rows, _)] = yield [(self._runs_sql.snapshot_owner, (tenant, run_id))]
        if rows and rows[0][0] not in (None, user_id):
            raise ThreadForbidden("snapshot access forbidden")
        return bool(rows)

    def _snapshot_save_program(
        self, tenant: str, run_id: str, user_id: str | None, value: str, saved_at: datetime
    ) -> Program[None]:
        sql, d = self._runs_sql, self.dialect
        row = (tenant, run_id, user_id, value, d.time(saved_at))
        [(_, claimed)] = yield [(sql.snapshot_claim, row)]
        if claimed != 1:  # the run had a snapshot: its owner's, or one anybody may take
            yield from self._snapshot_owned(tenant, run_id, user_id)
            yield [(sql.snapshot_save, sql.snapshot_save_params(d, *row[:4], saved_at))]

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        """Upsert the run's snapshot. Checked: the run claimed (a new one is ours), or its
        owner read under the row's lock, then the upsert, in one transaction."""
        if owner_check:
            await self._transact(
                lambda: self._snapshot_save_program(tenant, run_id, user_id, value, saved_at)
            )
            return
        sql = self._runs_sql
        params = sql.snapshot_save_params(self.dialect, tenant, run_id, user_id, value, saved_at)
        await self._write_again(sql.snapshot_save, params)

    def _snapshot_delete_program(
        self, tenant: str, run_id: str, user_id: str | None
    ) -> Program[bool]:
        if not (yield from self._snapshot_owned(tenant, run_id, user_id)):
            return False
        [(_, deleted)] = yield [(self._runs_sql.snapshot_delete, (tenant, run_id))]
        return deleted > 0

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete the run's snapshot; whether it existed. Checked: its owner read under
        the row's lock, in the delete's transaction."""
        if owner_check:
            return await self._transact(
                lambda: self._snapshot_delete_program(tenant, run_id, user_id)
            )
        return await self._write_one(self._runs_sql.snapshot_delete, (tenant, run_id)) > 0

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Insert one summary."""
        sql = self._runs_sql
        await self._write_one(sql.summary_add, sql.summary_params(self.dialect, tenant, summary))
        return summary

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for the user plus the shared ones, oldest first."""
        params = (tenant, agent_id, *any_user(user_id))
        return [row_to_summary(r) for r in await self._select(self._runs_sql.summary_list, params)]

    # -- record reads ----------------------------------------------------------------------

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        """One record, or ``None``: ``record_get_many`` of one id (one statement)."""
        return (await self.record_get_many(tenant, kind, [record_id])).get(record_id)

    async def record_get_many(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, Record]:
        """Primary-key reads, ``IN`` lists in one read."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        d, table = self.dialect, self._table("records")
        scope, seen = scope_sql("", visible_to, d.mark)
        rows = await self._select_many(
            [
                (
                    records_by_ids_query(d, table, self._record_columns, len(part)) + scope,
                    (tenant, kind, *part, *seen),
                )
                for part in (ids[i : i + 500] for i in range(0, len(ids), 500))
            ]
        )
        found = {row[1]: row_to_record(row) for row in rows}
        return {i: found[i] for i in ids if i in found}

    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Records of ``kind``, oldest first (``created_at``, id), filtered."""
        sql, params = record_list_query(
            self.dialect, self._table("records"), self._record_columns, tenant, kind,
            agent_id=agent_id, user_id=user_id, key=key, visible_to=visible_to, limit=limit,
        )  # fmt: skip
        return [row_to_record(r) for r in await self._select(sql, params)]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One range of the (tenant_id, kind, created_at, id) index from the cursor."""
        sql, params = record_page_query(
            self.dialect, self._table("records"), self.prefix + self._records_by_time,
            self._record_columns, tenant, kind, limit=limit, after=after, visible_to=visible_to,
        )  # fmt: skip
        return [row_to_record(r) for r in await self._select(sql, params)]

    async def _list_keys(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        visible_to: Visibility | None,
    ) -> list[Record]:
        """Reads of the key index for every kind at once (``kind IN (...)``), ``IN``
        lists of keys, in one read (``KeyReads``)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted or not kinds:
            return []
        d, table = self.dialect, self._table("records")
        statements: list[Statement] = []
        for part in (wanted[i : i + 500] for i in range(0, len(wanted), 500)):
            sql, scope = records_by_keys_query(
                d, table, self._record_columns, len(kinds), len(part), visible_to
            )
            statements.append((sql, (tenant, *kinds, *part, *scope)))
        rows = await self._select_many(statements)
        rows.sort(key=lambda row: (row[6], row[1]))  # created_at (µs), id: as SQL sorts
        return [row_to_record(row) for row in rows]
