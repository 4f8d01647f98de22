"""``SQLCore``: the store verbs SQLite, PostgreSQL and MySQL/MariaDB share whole, written
once over two primitives each engine gives (``_table``, ``_select_many``) and its
``Dialect``. An engine overrides a verb only where it truly differs, saying why.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from memorybank.errors import NotFound
from memorybank.events.types import Event, check_floor, cursor_number, no_feed
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores.contract._async.store import SearchHit
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
from memorybank.stores.vectors.exact import CachedRows, top_k

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores.contract.items import Record
from memorybank.stores.sql.statements import (
    FORGET_COUNTED,
    RunStatements,
    branch_list_query,
    branches_found,
    entries_by_ids_query,
    forget_user_queries,
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

__all__ = ["SQLCore"]

#: Entry columns on ``e`` (reads joined with the thread row).
_ENTRY_ON_E = qualified("e", ENTRY_COLUMNS)

#: A statement and its parameters (``None``: none, for MySQL's ``BEGIN``).
Statement = tuple[str, Sequence[Any] | None]


class SQLCore(KeyReads):
    """The verbs written once for the SQL engines."""

    #: The engine's spelling (``memorybank.stores.sql.dialect``).
    dialect: ClassVar[Dialect]

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

    @abc.abstractmethod
    async def _write_one(self, sql: str, params: Sequence[Any]) -> int:
        """One statement in a transaction of its own; the rows it changed."""

    @abc.abstractmethod
    async def _write_many(self, statements: Sequence[Statement]) -> list[int]:
        """Statements in one transaction (retried whole where the engine retries a
        transaction lost to contention); the rows each changed."""

    def _vectors_deleting(self, tenant: str, where: str, params: Sequence[Any]) -> list[Statement]:
        """Statements to run before deleting the tenant's vectors that ``where`` (on
        ``v``) selects: MySQL bumps the vector cache's counters; SQLite logs the deletions
        by trigger and PostgreSQL in the deleting statement, so none."""
        return []

    @abc.abstractmethod
    async def _select_many(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """The rows of several reads, in order, as one read where the engine can (one
        snapshot on SQLite, one round trip on MySQL)."""

    async def _select(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self._select_many([(sql, params)])

    async def _write_rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One write whose statement ends in ``RETURNING``, in a transaction of its own;
        the rows it returns. An engine without ``RETURNING`` on ``UPDATE`` (MySQL) or
        whose verbs read back in their write's transaction (SQLite) overrides the verbs
        that use it (``thread_update``), not this."""
        raise NotImplementedError(f"{type(self).__name__} writes without RETURNING")

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
        """One ``UPDATE ... RETURNING`` of the given fields (``thread_update_query``); a
        new current branch must exist. No row back: the thread read tells what is missing."""
        sql, params = thread_update_query(
            self.dialect, self._table("threads"), self._table("branches"), tenant, thread_id,
            updated_at=updated_at, title=title, metadata=metadata, status=status,
            current_branch=current_branch, returning=THREAD_COLUMNS,
        )  # fmt: skip
        rows = await self._write_rows(sql, params)
        if rows:
            return row_to_thread(rows[0])
        return updated_thread(await self.thread_get(tenant, thread_id), thread_id, current_branch)

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        """The thread's branches, oldest first; ``NotFound`` without the thread."""
        sql = branch_list_query(self.dialect, self._table("threads"), self._table("branches"))
        return branches_found(await self._select(sql, (tenant, thread_id)), thread_id)

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        """Delete the thread, its branches, entries and their vectors in one transaction;
        whether it existed. PostgreSQL: one statement under the thread row's lock."""
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
        the rows erased. SQLite adds its index and file upkeep; PostgreSQL: one statement."""
        m, t, key = self.dialect.mark, self._table, (tenant, user_id)
        before = [
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
        """Run ``forget_user``'s statements in one transaction; an engine with a change
        feed adds its own statements around them, in the same transaction (SQLite)."""
        return await self._write_many(statements)

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads by id: one read (``IN`` lists, or one array on PostgreSQL)."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        d = self.dialect
        sql = f"SELECT {THREAD_COLUMNS} FROM {self._table('threads')} WHERE tenant_id = {d.mark}"
        rows = await self._select_many(
            [(f"{sql} AND id{cond}", (tenant, *ids)) for cond, ids in d.one_of(wanted)]
        )
        found = {thread.id: thread for thread in map(row_to_thread, rows)}
        return {tid: found[tid] for tid in wanted if tid in found}

    # -- the change feed's reads (each engine writes it with triggers of its own) -------

    @abc.abstractmethod
    def _feed_state_read(self) -> Statement:
        """The read answering one row: (the feed's tables exist, its triggers are on)."""

    @abc.abstractmethod
    def _missing_table(self, error: BaseException) -> bool:
        """Whether ``error``, raised by a read (or the driver's error it was raised
        from), says a table does not exist: the feed's, never made."""

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

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int, limit: int | None = None
    ) -> CachedRows:
        """The vectors after ``after`` (``seq``) with their owners' scope, one join."""
        m, t = self.dialect.mark, self._table
        if kind == "entry":
            sql = (
                "SELECT v.seq, v.id, v.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL,"
                f" v.vector FROM {t('vectors')} v LEFT JOIN {t('threads')} t"
                " ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
            )
        else:
            sql = (
                "SELECT v.seq, v.id, NULL, r.agent_id, r.user_id, r.id IS NOT NULL,"
                f" v.vector FROM {t('vectors')} v LEFT JOIN {t('records')} r"
                " ON r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
            )
        key = f"tenant_id = {m} AND {{0}}.model_id = {m} AND {{0}}.kind = {m} AND {{0}}.seq > {m}"
        sql += f" WHERE v.{key.format('v')}"
        args: tuple[Any, ...] = (tenant, model_id, kind, after)
        if limit is not None:  # whole seq groups: up to the seq of the limit-th row
            sql += (
                f" AND v.seq <= COALESCE((SELECT s.seq FROM {t('vectors')} s"
                f" WHERE s.{key.format('s')} ORDER BY s.seq LIMIT 1 OFFSET {m}),"
                " 9223372036854775807)"
            )
            args = (*args, *args, max(limit, 1) - 1)
        found = CachedRows()
        for seq, rid, tid, agent, user, alive, blob in await self._select_many(
            [(sql + " ORDER BY v.seq", args)]
        ):
            found.add(int(seq), rid, tid, agent, user, bool(alive), bytes(blob))
        return found

    async def _vc_check(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        shortlist: Mapping[str, Sequence[tuple[str, str | None]]],
        dim: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> tuple[dict[str, tuple[int, int]], set[tuple[str, str]]]:
        """The counters of ``kinds`` and the shortlisted ids in scope, in one read."""
        d, m = self.dialect, self.dialect.mark
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
        statements += self._vector_statements(tenant, model_id, wanted, None, visible_to, "", ids)
        stamps: dict[str, tuple[int, int]] = {}
        confirmed: set[tuple[str, str]] = set()
        for row in await self._select_many(statements) if statements else []:
            if len(row) == 4:
                stamps[str(row[0])] = (int(row[1]), int(row[2]))
            elif thread_id is None or row[2] == thread_id:
                confirmed.add((str(row[0]), str(row[1])))
        return stamps, confirmed

    async def _vc_exact(
        self,
        tenant: str,
        vector: Sequence[float],
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[SearchHit]:
        """Exact cosine top ``k`` (numpy) over every scoped vector of ``model_id``."""
        # a user's scope (while the key loads in process: ``_cold``)
        by_owner = thread_id is None and names_user(visible_to)
        statements = self._vector_statements(
            tenant, model_id, kinds, thread_id, visible_to, ", v.vector", by_owner=by_owner
        )
        if not statements or k <= 0:
            return []
        rows = await self._select_many(statements)
        best = top_k(vector, [bytes(row[3]) for row in rows], k)
        return [SearchHit(rows[i][0], rows[i][1], score, rows[i][2]) for i, score in best]

    async def _vc_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """The stored float32 vectors of these ids (missing ids absent), in one read."""
        d, m = self.dialect, self.dialect.mark
        sql = (
            f"SELECT id, vector FROM {self._table('vectors')} WHERE tenant_id = {m}"
            f" AND kind = {m} AND model_id = {m} AND id"
        )
        rows = await self._select_many(
            [(sql + cond, (tenant, kind, model_id, *part)) for cond, part in d.one_of(ids)]
        )
        return {str(row[0]): vector_array(bytes(row[1])) for row in rows}

    # -- entry reads ---------------------------------------------------------------------

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
