"""The SQLite store's search: FTS5 keyword search and vector search.

Stored vectors, and the in-process vector slots (exact, or ANN indexes with their files).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import Unset, Visibility
from memorybank.stores.contract.items import EntryRow, SearchHit
from memorybank.stores.contract.types import best_hits, names_user, searched_kinds
from memorybank.stores.sql._async.core import Statement
from memorybank.stores.sql._async.entry_reads import E, pairs_found, windows_found
from memorybank.stores.sql.common import (
    fts_query,
    row_to_entry,
    row_to_entry_row,
    row_to_thread,
    scope_sql,
    unit_vector_bytes,
    vector_array,
)
from memorybank.stores.sqlite._async._base import SQLiteStoreBase, rows_of, vector_files
from memorybank.stores.sqlite.schema import SHARED_TOKEN, scope_token
from memorybank.stores.vectors import exact as _vectors
from memorybank.stores.vectors._async.cache import BACKGROUND_LOAD_ROWS
from memorybank.stores.vectors.exact import (
    CachedRows,
    ScopedRows,
    VectorCache,
    VectorSlot,
    exact_hits,
    unit_query,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.records import Entry, Thread
    from memorybank.stores.contract._async.search_store import Windows, WindowsFound
    from memorybank.stores.contract.items import VectorItem
else:  # NumPy loads with the first vector read, not with the store (cold start)
    from memorybank.runtime.np import np


#: An entry's key (thread id, entry id).
Pair = tuple[str, str]


class SearchMixin(SQLiteStoreBase):
    """Keyword and vector search."""

    # -- search ----------------------------------------------------------------------------

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        p = self.prefix
        match = fts_query(query)
        searched = searched_kinds(kinds, thread_id)  # records belong to no thread

        def owner_tokens(conn: sqlite3.Connection) -> list[str] | None:
            """The owner tokens the hits can carry (``fts_scope``), or None for any."""
            if thread_id is not None:
                row = conn.execute(
                    f"SELECT user_id FROM {p}threads WHERE tenant_id = ? AND id = ?",
                    (tenant, thread_id),
                ).fetchone()
                return None if row is None else [scope_token(tenant, row[0])]
            if visible_to is None or isinstance(visible_to.user_id, Unset):
                return None
            if visible_to.user_id is None:
                return [SHARED_TOKEN]
            return [scope_token(tenant, visible_to.user_id), SHARED_TOKEN]

        def owned(tokens: list[str]) -> str:
            """The match of entries whose owner token is one of ``tokens``."""
            owners = " OR ".join(f'"{token}"' for token in tokens)
            return f"content : ({match}) AND fts_scope : ({owners})"

        def ranked_first(conn: sqlite3.Connection, fts: str, tokens: list[str]) -> list[SearchHit]:
            """Hits of a search over the owners' entries (no thread): the index ranks its
            matches alone, and only the best are joined to their rows and scope-checked,
            widening while the check drops some and the index has more.

            ``bm25`` plus the join for every match cost a user with 50,000 entries (486
            matches a query, 1M entries stored) 15.4 ms of CPU; ranking first, 9.6 ms.
            """
            rank = f"bm25({fts}, 1.0, 0.0)"
            query = owned(tokens)
            scope, scope_params = scope_sql("t.", visible_to, "?")
            limit = k
            while True:
                best = conn.execute(
                    f"SELECT rowid, -{rank} FROM {fts} WHERE {fts} MATCH ? ORDER BY {rank} LIMIT ?",
                    (query, limit),
                ).fetchall()
                score = dict(best)
                kept: list[SearchHit] = []
                for start in range(0, len(best), 500):
                    chunk = [rowid for rowid, _ in best[start : start + 500]]
                    rows = conn.execute(
                        # the rows by rowid, then each one's thread (CROSS JOIN keeps that
                        # order, "+" keeps the planner off the tenant's whole entries index:
                        # 250 ms a search at 1M entries)
                        f"SELECT e.rowid, e.id, e.thread_id, e.branch FROM {p}entries e"
                        f" CROSS JOIN {p}threads t"
                        " ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                        f" WHERE e.rowid IN ({', '.join('?' * len(chunk))}) AND +e.tenant_id = ?"
                        f"{scope}",
                        [*chunk, tenant, *scope_params],
                    ).fetchall()
                    kept += [SearchHit("entry", r[1], float(score[r[0]]), r[2], r[3]) for r in rows]
                if len(kept) >= k or len(best) < limit:
                    kept.sort(key=lambda h: -h.score)
                    return kept[:k]
                limit *= 4

        def entry_hits(conn: sqlite3.Connection, fts: str, scoped: bool) -> list[SearchHit]:
            """Hits of the entries index ``fts``; ``scoped``: it has the owner column."""
            tokens = owner_tokens(conn) if scoped else None
            if scoped and thread_id is None and tokens:
                return ranked_first(conn, fts, tokens)
            rank = f"bm25({fts}, 1.0, 0.0)" if scoped else f"bm25({fts})"
            sql = (
                f"SELECT e.id, e.thread_id, e.branch, -{rank}"
                f" FROM {fts} JOIN {p}entries e ON e.rowid = {fts}.rowid"
                f" JOIN {p}threads t ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                f" WHERE {fts} MATCH ? AND e.tenant_id = ?"
            )
            # The owner clause only narrows what FTS5 walks; the scope check below decides.
            query = owned(tokens) if tokens else match
            params: list[Any] = [query, tenant]
            if thread_id is not None:
                sql += " AND e.thread_id = ?"
                params.append(thread_id)
            scope, scope_params = scope_sql("t.", visible_to, "?")
            sql += scope
            params += scope_params
            sql += f" ORDER BY {rank} LIMIT ?"
            params.append(k)
            return [
                SearchHit("entry", r[0], float(r[3]), r[1], r[2])
                for r in conn.execute(sql, params).fetchall()
            ]

        def tail_hits(conn: sqlite3.Connection) -> list[SearchHit]:
            """A read-only file's entries above the mark, searched in a temporary index
            (their scores come from that small index: the order among them is exact)."""
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{p}tail_fts USING fts5("
                " content, tokenize='porter unicode61 remove_diacritics 2')"
            )
            conn.execute(f"DELETE FROM temp.{p}tail_fts")
            conn.execute(
                f"INSERT INTO temp.{p}tail_fts (rowid, content) SELECT rowid, content"
                f" FROM {p}entries WHERE content IS NOT NULL AND rowid >"
                f" (SELECT indexed FROM {p}fts_state WHERE name = 'entries')"
            )
            return entry_hits(conn, f"{p}tail_fts", False)  # the temp schema is searched first

        complete = True

        def op(conn: sqlite3.Connection) -> list[SearchHit]:
            if not match or k <= 0:
                return []
            hits: list[SearchHit] = []
            if "entry" in kinds:
                hits += entry_hits(conn, f"{p}entries_fts", True)
                if not complete:
                    hits += tail_hits(conn)
            record_kinds = [kind for kind in searched if kind != "entry"]
            if record_kinds:
                marks = ", ".join("?" * len(record_kinds))
                sql = (
                    f"SELECT r.kind, r.id, -bm25({p}records_fts)"
                    f" FROM {p}records_fts JOIN {p}records r ON r.rowid = {p}records_fts.rowid"
                    f" WHERE {p}records_fts MATCH ? AND r.tenant_id = ? AND r.kind IN ({marks})"
                )
                params: list[Any] = [match, tenant, *record_kinds]
                scope, scope_params = scope_sql("r.", visible_to, "?")
                sql += scope
                params += scope_params
                sql += f" ORDER BY bm25({p}records_fts) LIMIT ?"
                params.append(k)
                hits += [
                    SearchHit(r[0], r[1], float(r[2])) for r in conn.execute(sql, params).fetchall()
                ]
            return best_hits(hits, k)

        def indexed_op(conn: sqlite3.Connection) -> list[SearchHit] | None:
            """``op``, or None when some entries are not in the keyword index yet."""
            if match and k > 0 and "entry" in kinds and self._fts_lag(conn):
                return None
            return op(conn)

        # On a read connection; the writer only indexes what a search would miss.
        found = await self._run_read(indexed_op)
        if found is None:
            complete = await self._run(self._fts_catch_up)
            found = await self._run_read(op)
        return found

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        latest = {(i.kind, i.id, i.model_id): i for i in items}  # the last one of a key wins
        rows = [
            (tenant, i.kind, i.id, i.model_id, i.thread_id, unit_vector_bytes(i.vector))
            for i in latest.values()
        ]

        def op(conn: sqlite3.Connection) -> None:
            # Replace = delete + insert, so a changed vector gets a new rowid: the
            # in-process vector caches detect changes by rowids and counts.
            conn.executemany(
                f"DELETE FROM {self.prefix}vectors WHERE tenant_id = ? AND kind = ? AND id = ?"
                " AND model_id = ?",
                [r[:4] for r in rows],
            )
            conn.executemany(
                f"INSERT INTO {self.prefix}vectors (tenant_id, kind, id, model_id, thread_id,"
                " vector) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

        await self._run(lambda: self._write(op))

    def _vector_rows(
        self, conn: sqlite3.Connection, tenant: str, model_id: str, kind: str, after: int
    ) -> CachedRows:
        sql = self._owned_vectors(kind, "rowid")
        params = (tenant, model_id, kind, after)
        if after > 0:
            # the rows above a rowid (only ever new ones: AUTOINCREMENT) as one range of
            # the table, not a walk of the key's whole index range
            sql = sql.replace(
                "WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = ?",
                "WHERE +v.tenant_id = ? AND +v.model_id = ? AND +v.kind = ?",
            )

        found = conn.execute(sql + " ORDER BY v.rowid", params).fetchall()
        rows = CachedRows()
        if found:
            rowids, ids, threads, agents, users, alive, blobs = map(list, zip(*found, strict=True))
            rows = CachedRows(rowids, ids, threads, agents, users, [bool(a) for a in alive], blobs)
        return rows

    def _vector_slot(
        self, conn: sqlite3.Connection, tenant: str, model_id: str, kind: str, dim: int
    ) -> VectorSlot:
        """The cached vectors of (tenant, model, kind), brought up to date on ``conn``
        (the writer's or a read connection; the caller holds the cache's lock).

        Used as is when ``conn`` saw no commit since it last checked the slot (the
        same ``PRAGMA data_version`` and change count; per connection, by ``id``: the
        store's connections live as long as its cache), or when the key's change
        signals (``_vector_signals``: three index lookups) are the ones the slot's
        rows were read at. Otherwise, in one snapshot, an indexed ``count`` read, the
        key's deletions logged since the slot's log sequence (``vector_deletes``) and
        the rows above its max rowid bring it up to date incrementally: deleted rows
        are marked dead (``VectorSlot.forget``: out of every search and of the HNSW
        index) and new rows appended. Rowids are AUTOINCREMENT (never reused, new ones
        above every older one) and ``vector_put`` gives every written vector a new
        rowid, so a replaced vector is a logged deletion plus a new row. The slot is
        reloaded instead when it cannot catch up: the log no longer holds every
        deletion since its sequence (pruned), rows were updated in place
        (``vector_changes``), the counts disagree, or a quarter of its rows are dead
        (the reload compacts them away; the HNSW index is reused, checked row by row).

        A read connection's snapshot begins here, under the lock, so slots are only
        ever brought to a snapshot at least as new as the one before: a search issued
        after a write returned finds the slot holding it.
        """
        cache = self._vectors()
        key = (tenant, model_id, kind)
        slot = cache.slots.get(key)
        loads: dict[tuple[str, str, str], _SlotLoad] = self.__dict__.get("_vector_loads", {})
        if slot is None and key in loads and loads[key].done.is_set():
            # loaded by a thread of its own (``_vector_cold``); caught up below, as after
            # another process's writes (a failed load leaves None: loaded here instead)
            slot = loads.pop(key).slot
            if slot is not None:
                cache.slots[key] = slot
        stamp = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        checked = slot.stamp if slot is not None and isinstance(slot.stamp, _Checked) else None
        if checked is not None and slot is not None and slot.dim == dim:
            if checked.connections.get(id(conn)) == stamp:
                return slot
        else:
            checked = None
        # one snapshot for the checks and the reads (a read connection's is open already)
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")
        try:
            signals = self._vector_signals(conn, key)
            if checked is not None and slot is not None and checked.signals == signals:
                checked.connections[id(conn)] = stamp  # no vector of the key written since
                return slot
            count, updates, log = self._vector_counts(conn, key, signals)
            log_min, log_top = log
            if (
                slot is not None
                and slot.dim == dim
                and slot.deletes == updates
                and slot.log_seq is not None
                and (log_min == 0 or log_min <= slot.log_seq + 1)
            ):
                gone = self._vector_deleted(conn, key, slot.log_seq, slot.max_rowid)
                added = self._vector_rows(conn, tenant, model_id, kind, slot.max_rowid)
                if slot.count - len(gone) + len(added.rowids) == count:
                    slot.forget(gone)
                    shared = slot.shared
                    slot.append(added)
                    slot.count, slot.log_seq = count, log_top
                    slot.stamp = _Checked(signals, {id(conn): stamp})
                    if slot.dead * 4 < max(slot.n, 1):
                        if shared and not slot.shared:  # grew out of its files' room
                            self._vector_share(key, slot)
                        return slot
            old = slot if slot is not None and slot.dim == dim else None
            slot = self._vector_slot_read(conn, key, dim, count, updates, log, old)
            slot.stamp = _Checked(signals, {id(conn): stamp})
            cache.slots[key] = slot
            return slot
        finally:
            if own:
                conn.execute("COMMIT")

    def _vectors(self) -> VectorCache:
        """This store's vector slots, made on first use (shared by its threads: hold
        ``lock`` to bring them up to date or search them)."""
        cache: VectorCache | None = self.__dict__.get("_vector_cache")
        if cache is None:
            cache = self.__dict__.setdefault("_vector_cache", VectorCache())
        return cache

    def _vector_count(self, conn: sqlite3.Connection, key: tuple[str, str, str]) -> int:
        """How many vectors ``key`` (tenant, model, kind) has."""
        (count,) = conn.execute(
            f"SELECT count(*) FROM {self.prefix}vectors"
            " WHERE tenant_id = ? AND model_id = ? AND kind = ?",
            key,
        ).fetchone()
        return int(count)

    def _vector_signals(self, conn: sqlite3.Connection, key: tuple[str, str, str]) -> Signals:
        """What changes with any write of the key's vectors, in three index lookups: the
        table's top rowid (an insert: rowids only grow), the deletion log's lowest and
        highest sequence (a delete, by trigger) and the key's in-place update count (by
        trigger). Inside the caller's snapshot."""
        p = self.prefix
        top, log_min, log_top, updates = conn.execute(
            f"SELECT (SELECT coalesce(max(rowid), 0) FROM {p}vectors),"
            f" (SELECT coalesce(min(seq), 0) FROM {p}vector_deletes),"
            f" (SELECT coalesce(max(seq), 0) FROM {p}vector_deletes),"
            f" (SELECT coalesce(max(deletes), 0) FROM {p}vector_changes"
            " WHERE tenant_id = ? AND model_id = ? AND kind = ?)",
            key,
        ).fetchone()
        return int(top), int(log_min), int(log_top), int(updates)

    def _vector_counts(
        self, conn: sqlite3.Connection, key: tuple[str, str, str], signals: Signals | None = None
    ) -> tuple[int, int, tuple[int, int]]:
        """The key's vector count, its in-place update count and the deletion log's lowest
        and highest sequence (inside the caller's snapshot, of which ``signals`` are)."""
        _, log_min, log_top, updates = signals or self._vector_signals(conn, key)
        return self._vector_count(conn, key), updates, (log_min, log_top)

    def _vector_slot_read(
        self,
        conn: sqlite3.Connection,
        key: tuple[str, str, str],
        dim: int,
        count: int,
        updates: int,
        log: tuple[int, int],
        old: VectorSlot | None,
    ) -> VectorSlot:
        """A new slot of every stored vector of ``key`` (from the files when they are
        current, else from the table), inside the caller's snapshot; not registered."""
        tenant, model_id, kind = key
        slot = None
        if old is None:
            slot = self._vector_slot_from_files(conn, key, dim, count, updates, log)
        if slot is None:
            slot = VectorSlot(dim)
            slot.append(self._vector_rows(conn, tenant, model_id, kind, 0))
            if old is not None and old.has_ann():
                # the index of the earlier rows, checked row by row when next used
                index = old.ann_index()  # its builder stopped first
                rows = old.ann_rows()
                live = old.alive[:rows]
                slot.inherit_ann(index, old.rowids[:rows][live], old.matrix[:rows][live])
        slot.count, slot.deletes, slot.log_seq = count, updates, log[1]
        if not slot.shared:
            self._vector_share(key, slot)
        return slot

    def _vector_share(self, key: tuple[str, str, str], slot: VectorSlot) -> None:
        """Have the slot's matrix be files every process of the host maps, one copy in
        memory for them all (``files.Persisted.room``), rather than a copy of its own.

        Only a slot of at least ``SHARE_MIN_ROWS`` rows, none deleted since they were
        read, whose rows are the database's live ones as of its ``log_seq`` and
        ``deletes``, with no index of its own (its builder persists that with its
        vectors: the next process maps those). The current files are mapped when they
        hold exactly its rows (another process saved them); else its rows are saved
        under a new token (not fsynced: a cache, checked at every load) and mapped.
        ``VectorSlot.share`` swaps the matrix only for bit-identical rows, so a search
        sees the same vectors before and after. The caller holds the cache's lock, or
        owns the slot alone (a load).
        """
        if (
            self.path == ":memory:"
            or self._view  # a snapshot's rows are not the files' to replace
            or slot.shared
            or slot.dead
            or slot.n < _vectors.SHARE_MIN_ROWS
            or slot.deletes is None
            or slot.has_ann()
            or slot.ann_pending()
        ):
            return
        files = vector_files()
        folder = files.directory(self.path)
        n = slot.n
        for attempt in range(2):
            found = files.load(folder, self.prefix, *key, slot.dim, index=False)
            if found is not None and found.room is not None:
                if slot.share(found.rowids, found.vectors, found.room):
                    return
            if attempt:
                return
            token = files.save(
                folder,
                self.prefix,
                *key,
                None,
                slot.matrix[:n],
                slot.rowids[:n],
                slot.ids[:n],
                slot.deletes,
                slot.log_seq,
                durable=False,
            )
            if token is None:
                return

    def _vector_deleted(
        self, conn: sqlite3.Connection, key: tuple[str, str, str], after: int, upto: int
    ) -> list[int]:
        """Rowids (at most ``upto``) of the key's vectors deleted after log sequence ``after``."""
        return [
            r[0]
            for r in conn.execute(
                f"SELECT deleted FROM {self.prefix}vector_deletes"
                " WHERE tenant_id = ? AND model_id = ? AND kind = ? AND seq > ? AND deleted <= ?",
                (*key, after, upto),
            )
        ]

    def _vector_slot_from_files(
        self,
        conn: sqlite3.Connection,
        key: tuple[str, str, str],
        dim: int,
        count: int,
        updates: int,
        log: tuple[int, int],
    ) -> VectorSlot | None:
        """The slot with the ANN index and vectors persisted by an earlier process (or the
        vectors alone, ``_vector_share``), or None.

        Used only when the files pass their own checks (``files.load``).
        If the database's update count for the key is the one the files
        recorded, the deletion log still holds every deletion since the files'
        log sequence (``log``: the log's lowest and highest sequence now), and
        once the rows deleted since are dropped the rowids and ids up to their
        max rowid are the ones they hold, the vectors are read from the files and
        only later rows from the database; otherwise every row is read from the
        database and the index is checked row by row against it
        (``VectorSlot.inherit_ann``). The scope of every row always comes from
        the database.
        """
        if self.path == ":memory:":
            return None
        if count < min(_vectors.SHARE_MIN_ROWS, _vectors.ANN_THRESHOLD):
            return None
        files = vector_files()
        tenant, model_id, kind = key
        found = files.load(
            files.directory(self.path),
            self.prefix,
            tenant,
            model_id,
            kind,
            dim,
            index=_vectors.ann_available(),
        )
        if found is None:
            return None
        slot = _vectors.VectorSlot(dim)
        log_min, _ = log
        if (
            found.deletes == updates
            and found.log_seq is not None
            and (log_min == 0 or log_min <= found.log_seq + 1)
        ):
            gone = self._vector_deleted(conn, key, found.log_seq, found.max_rowid)
            index, rowids, vectors, ids = found.index, found.rowids, found.vectors, found.ids
            if gone:
                keep = ~np.isin(rowids, np.asarray(gone, dtype=np.int64))
                dropped = rowids[~keep]
                if len(dropped) and index is not None:
                    index = slot.drop_keys(index, dropped)
                rowids, vectors = rowids[keep], vectors[keep]
                ids = [i for i, k in zip(ids, keep.tolist(), strict=True) if k]
            known = self._vector_scopes(conn, key, found.max_rowid, ids)
            if known is not None and np.array_equal(known.rowids, rowids):
                slot.append_scoped(known, ids, vectors)
                if not gone and found.room is not None:  # the files' rows, shared
                    slot.share(found.rowids, found.vectors, found.room)
                if index is not None:
                    slot.set_ann(index, slot.n, "loaded")
                    slot.saved_rows = slot.n
                    slot.dead_since_save = len(found.rowids) - len(rowids)
                slot.append(self._vector_rows(conn, tenant, model_id, kind, found.max_rowid))
                return slot
            if gone:  # the index lost keys above: let inherit_ann see only what it holds
                found.rowids, found.vectors = rowids, vectors
        slot.append(self._vector_rows(conn, tenant, model_id, kind, 0))
        if found.index is not None:
            slot.inherit_ann(found.index, found.rowids, found.vectors)
        return slot

    def _vector_scopes(
        self, conn: sqlite3.Connection, key: tuple[str, str, str], upto: int, ids: list[str]
    ) -> ScopedRows | None:
        """Rows up to rowid ``upto`` with the ``ids`` persisted for them, scoped from the database.

        Rowids and thread ids come from the ``vectors_model`` index alone (no
        vector is read), entries' as one row per thread (its rowids joined in
        SQL), so a load costs no Python object per row; agent, user and
        liveness from the owning threads (one lookup per thread) or records.
        None when the row count differs from ``ids``.
        """
        p = self.prefix
        tenant, _, kind = key
        rows = f"{p}vectors INDEXED BY {p}vectors_model"
        where = "WHERE tenant_id = ? AND model_id = ? AND kind = ? AND rowid <= ?"
        if kind == "entry":
            found = conn.execute(
                f"SELECT g.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL, g.n, g.rowids"
                f" FROM (SELECT thread_id, count(*) AS n, group_concat(rowid) AS rowids"
                f" FROM {rows} {where} GROUP BY thread_id) g"
                f" LEFT JOIN {p}threads t ON t.tenant_id = ? AND t.id = g.thread_id",
                (*key, upto, tenant),
            ).fetchall()
            counts = np.asarray([r[4] for r in found], dtype=np.int64)
            if int(counts.sum()) != len(ids):
                return None
            text = ",".join(r[5] for r in found)
            rowids = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)
            if len(rowids) != len(ids):
                return None
            groups = [(r[0], r[1], r[2], bool(r[3])) for r in found]
            group_of = np.repeat(np.arange(len(found), dtype=np.intp), counts)
            order = np.argsort(rowids, kind="stable")
            return ScopedRows(rowids[order], group_of[order], groups)
        found = conn.execute(f"SELECT rowid FROM {rows} {where}", (*key, upto)).fetchall()
        listed = sorted(r[0] for r in found)
        if len(listed) != len(ids):
            return None
        owners = {
            r[0]: (r[1], r[2])
            for r in conn.execute(
                f"SELECT id, agent_id, user_id FROM {p}records WHERE tenant_id = ? AND kind = ?",
                (tenant, kind),
            )
        }
        numbered: dict[tuple[str | None, str | None, str | None, bool], int] = {}
        nobody = (None, None)
        of = [
            numbered.setdefault((None, *owners.get(i, nobody), i in owners), len(numbered))
            for i in ids
        ]
        return ScopedRows(
            np.asarray(listed, dtype=np.int64), np.asarray(of, dtype=np.intp), list(numbered)
        )

    def _vector_save(
        self, key: tuple[str, str, str], slot: VectorSlot, *, final: bool = False
    ) -> None:
        """Persist the slot's ANN index when due (``files.save_slot``)."""
        vector_files().save_slot(self.path, self.prefix, key, slot, final=final)

    async def vector_search(
        self,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:

        prepared = unit_query(vector, kinds, k, thread_id)
        if prepared is None:
            return []
        query, wanted, dim, fetch = prepared

        def op(conn: sqlite3.Connection) -> list[SearchHit]:
            hits: list[SearchHit] = []
            cold: list[str] = []  # kinds answered from the table while their slot loads
            found: list[tuple[str, VectorSlot, list[tuple[int, float]]]] = []
            # The cache's lock before this snapshot's first read (``_vector_slot``); the
            # hits are confirmed after it, in the same snapshot, beside other searches.
            with self._vectors().lock:
                for kind in wanted:
                    if self._vector_cold(conn, tenant, model_id, kind, dim, thread_id, visible_to):
                        cold.append(kind)
                        continue
                    slot = self._vector_slot(conn, tenant, model_id, kind, dim)
                    if slot.persist is None:  # the slot's builder saves what it built
                        slot.persist = functools.partial(
                            self._vector_save, (tenant, model_id, kind)
                        )
                    best = slot.find(query, fetch, thread_id, visible_to)
                    if best:
                        found.append((kind, slot, best))
            for kind in cold:
                hits += self._scoped_exact(
                    conn, query, tenant, model_id, kind, k, thread_id, visible_to
                )
            # A slot's rows are append-only (a reload makes a new slot): the positions
            # ``find`` gave name the same rows while other searches catch the slot up.
            for kind, slot, best in found:
                # The scope of the hits is re-checked in SQL: the cache is only a shortlist.
                # The best k first (normally all of them pass); the rest of the shortlist
                # only when some failed.
                confirmed = self._vector_confirm(
                    conn, tenant, model_id, kind, thread_id, visible_to, slot, best[:k]
                )
                kept = [(i, score) for i, score in best[:k] if slot.ids[i] in confirmed]
                if len(kept) < min(k, len(best)) and len(best) > k:
                    confirmed |= self._vector_confirm(
                        conn, tenant, model_id, kind, thread_id, visible_to, slot, best[k:]
                    )
                    kept = [(i, score) for i, score in best if slot.ids[i] in confirmed]
                if len(kept) < min(k, len(best)) and len(best) == fetch:
                    statements = self._vector_statements(
                        tenant, model_id, [kind], thread_id, visible_to, ", v.vector"
                    )
                    hits += self._exact_vectors(conn, query, statements, k)
                    continue
                hits += [
                    SearchHit(kind, slot.ids[i], score, slot.threads[i]) for i, score in kept[:k]
                ]
            return best_hits(hits, k)

        # On a read connection, beside other searches and the writer.
        return await self._run_read(op)

    def _vector_cold(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        model_id: str,
        kind: str,
        dim: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> bool:
        """Whether a narrowed search's hits are read from the table (``_scoped_exact``)
        while the key's slot loads on a thread of its own; False: search the slot
        (loaded, small enough to load now, an unnarrowed scope, a database in memory,
        or a load that failed). The caller holds the cache's lock.

        The first search of a key used to load every vector of the tenant before it
        answered: 70 s at 1M vectors, for a user with 500 entries. From
        ``BACKGROUND_LOAD_ROWS`` vectors a thread's or a user's search reads only its
        scope's vectors (a user's: by her threads and the shared ones) until the slot
        is ready; the next search (``_vector_slot``) registers it and catches it up with
        what was written meanwhile, as after a write by another process.
        """
        cache: VectorCache | None = self.__dict__.get("_vector_cache")
        key = (tenant, model_id, kind)
        loads: dict[tuple[str, str, str], _SlotLoad] = self.__dict__.setdefault("_vector_loads", {})
        load = loads.get(key)
        if cache is not None and key in cache.slots:
            loads.pop(key, None)  # loaded meanwhile (a wider search): this one is not needed
            return False
        narrowed = thread_id is not None or names_user(visible_to)
        if not narrowed or self.path == ":memory:":
            if load is not None:  # a wider search needs every row: it waits for the load
                load.done.wait()  # (``_vector_slot`` takes it) rather than read them twice
            return False
        if load is None:
            if self._vector_count(conn, key) < BACKGROUND_LOAD_ROWS:
                return False
            load = loads[key] = _SlotLoad(self, key, dim)
        elif load.done.is_set():
            return False  # ``_vector_slot`` takes it
        return True

    def _scoped_exact(
        self,
        conn: sqlite3.Connection,
        query: NDArray[np.float32],
        tenant: str,
        model_id: str,
        kind: str,
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[SearchHit]:
        """Best ``k`` of the scope's vectors read from the table: a thread's, or a user's
        by the threads she may see (one index range per thread, not a walk of the key)."""
        if kind != "entry" or thread_id is not None:
            statements = self._vector_statements(
                tenant, model_id, [kind], thread_id, visible_to, ", v.vector"
            )
            return self._exact_vectors(conn, query, statements, k)
        p = self.prefix
        scope, scope_params = scope_sql("t.", visible_to, "?")
        threads = [
            r[0]
            for r in conn.execute(
                f"SELECT t.id FROM {p}threads t WHERE t.tenant_id = ?{scope}",
                [tenant, *scope_params],
            )
        ]
        statements = [
            (
                f"SELECT v.kind, v.id, v.thread_id, v.vector FROM {p}vectors v"
                " WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = 'entry'"
                f" AND v.thread_id IN ({', '.join('?' * len(chunk))})",
                [tenant, model_id, *chunk],
            )
            for chunk in (threads[i : i + 500] for i in range(0, len(threads), 500))
        ]
        return self._exact_vectors(conn, query, statements, k)

    def _vector_confirm(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        model_id: str,
        kind: str,
        thread_id: str | None,
        visible_to: Visibility | None,
        slot: VectorSlot,
        best: Sequence[tuple[int, float]],
    ) -> set[str]:
        """The ids among the rows ``best`` of ``slot`` that are in scope now, checked in SQL."""
        if not best:
            return set()
        p = self.prefix
        if kind == "entry" and thread_id is not None:
            # One thread: its scope is checked once, and each hit by one lookup of the
            # row the cache scored (its rowid) in ``vectors_model``: still a vector of
            # this model in this thread. No table page is read, the rows' vectors
            # included. (A row replaced since the cache was read is not confirmed.)
            rowids = slot.rowids[[i for i, _ in best]].tolist()
            wanted = list(dict.fromkeys(rowids))
            scope, scope_params = scope_sql("t.", visible_to, "?")
            sql = (
                f"SELECT v.rowid FROM {p}vectors v INDEXED BY {p}vectors_model"
                " WHERE v.tenant_id = ? AND v.model_id = ? AND v.kind = 'entry'"
                f" AND v.thread_id = ? AND v.rowid IN ({', '.join('?' * len(wanted))})"
                f" AND EXISTS (SELECT 1 FROM {p}threads t WHERE t.tenant_id = ? AND t.id = ?"
                f"{scope})"
            )
            params = [tenant, model_id, thread_id, *wanted, tenant, thread_id, *scope_params]
            found = {r[0] for r in conn.execute(sql, params)}
            return {
                slot.ids[i] for (i, _), rowid in zip(best, rowids, strict=True) if rowid in found
            }
        # (no thread here: a thread's entries are confirmed above, records have none)
        ids = {kind: list(dict.fromkeys(slot.ids[i] for i, _ in best))}
        statements = self._vector_statements(tenant, model_id, [kind], None, visible_to, "", ids)
        return {r[1] for r in rows_of(conn, statements)}

    def _exact_vectors(
        self,
        conn: sqlite3.Connection,
        query: Any,
        statements: Sequence[Statement],
        k: int,
    ) -> list[SearchHit]:
        """Uncached exact search over the rows ``(kind, id, thread_id, vector)`` of
        ``statements`` (when the cache's scope information was stale, or while it loads)."""
        return exact_hits(query, rows_of(conn, statements), k)

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        got = await self.vector_get_arrays(tenant, kind, ids, model_id=model_id)
        return {vid: vector.tolist() for vid, vector in got.items()}

    async def vector_get_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        return await self._vc_arrays(tenant, kind, list(dict.fromkeys(ids)), model_id)

    # -- a search's reads, fused: one hand-off to a read connection each ---------------

    async def search_entries(
        self, tenant: str, wanted: Mapping[str, Sequence[str]], *, model_id: str | None = None
    ) -> tuple[dict[str, Thread], dict[tuple[str, str], Entry], dict[str, NDArray[np.float32]]]:
        """The threads, the entries and their vectors in one snapshot of one read
        connection (``AsyncStore.search_entries``)."""
        return await self._search_entries(tenant, wanted, model_id, self._entry_reads, row_to_entry)

    async def search_entry_rows(
        self, tenant: str, wanted: Mapping[str, Sequence[str]], *, model_id: str | None = None
    ) -> tuple[dict[str, Thread], dict[tuple[str, str], EntryRow], dict[str, NDArray[np.float32]]]:
        """``search_entries`` reading the ``EntryRow`` columns alone
        (``AsyncStore.search_entry_rows``)."""
        rows = self._entry_row_reads
        return await self._search_entries(tenant, wanted, model_id, rows, row_to_entry_row)

    async def _search_entries(
        self,
        tenant: str,
        wanted: Mapping[str, Sequence[str]],
        model_id: str | None,
        columns: str,
        convert: Callable[[Sequence[Any]], E],
    ) -> tuple[dict[str, Thread], dict[Pair, E], dict[str, NDArray[np.float32]]]:
        thread_ids = list(dict.fromkeys(wanted))
        pairs = list(dict.fromkeys((tid, eid) for tid, ids in wanted.items() for eid in ids))

        def op(
            conn: sqlite3.Connection,
        ) -> tuple[dict[str, Thread], dict[Pair, E], dict[str, NDArray[np.float32]]]:
            rows = rows_of(conn, self._threads_reads(tenant, thread_ids))
            threads = {thread.id: thread for thread in map(row_to_thread, rows)}
            asked = [pair for pair in pairs if pair[0] in threads]
            entries = pairs_found(rows_of(conn, self._pairs_reads(tenant, asked, columns)), convert)
            vectors: dict[str, NDArray[np.float32]] = {}
            if model_id is not None and entries:
                vectors = self._entry_vectors(conn, tenant, model_id, entries)
            return {tid: threads[tid] for tid in thread_ids if tid in threads}, entries, vectors

        if not thread_ids:
            return {}, {}, {}
        return await self._run_read(op)

    async def _search_windows(
        self, tenant: str, windows: Windows, model: str | None, known: Collection[str], rows: bool
    ) -> WindowsFound:
        """The windows and their entries' vectors in one snapshot of one read connection
        (``AsyncStore.search_windows``); ``rows``: the ``EntryRow`` columns alone."""
        asked = list(windows)
        columns = self._entry_row_reads if rows else self._entry_reads
        convert: Callable[[Sequence[Any]], Entry | EntryRow] = (
            row_to_entry_row if rows else row_to_entry
        )

        def op(conn: sqlite3.Connection) -> WindowsFound:
            found = windows_found(
                rows_of(conn, self._windows_reads(tenant, asked, columns)), len(asked), convert
            )
            vectors: dict[str, NDArray[np.float32]] = {}
            if model is not None:
                pairs = [(e.thread_id, e.id) for window in found for e in window]
                unknown = [pair for pair in pairs if pair[1] not in known]
                if unknown:
                    vectors = self._entry_vectors(conn, tenant, model, unknown)
            return found, vectors

        if not asked:
            return [], {}
        return await self._run_read(op)

    def _entry_vectors(
        self,
        conn: sqlite3.Connection,
        tenant: str,
        model_id: str,
        entries: Collection[tuple[str, str]],
    ) -> dict[str, NDArray[np.float32]]:
        """The vectors of ``model_id`` of these ``(thread id, entry id)``: those the
        store's vector cache holds (``VectorSlot.vectors_of``: rows of the threads a
        search's hits fall in, already in memory), the others read from the table
        (reading 170 candidates' vectors from the table was a tenth of a search's CPU)."""
        cache: VectorCache | None = self.__dict__.get("_vector_cache")
        slot = None if cache is None else cache.slots.get((tenant, model_id, "entry"))
        vectors: dict[str, NDArray[np.float32]] = {}
        if cache is not None and slot is not None:
            with cache.lock:
                vectors = slot.vectors_of(entries)
        ids = list(dict.fromkeys(eid for _, eid in entries if eid not in vectors))
        if ids:
            rows = rows_of(conn, self._vectors_reads(tenant, "entry", ids, model_id))
            vectors.update({vid: vector_array(blob) for vid, blob in rows})
        return vectors


#: ``_vector_signals``: the vectors table's top rowid, the deletion log's lowest and
#: highest sequence, the key's update count.
Signals = tuple[int, int, int, int]


@dataclass
class _Checked:
    """What a slot was last brought up to date against (``VectorSlot.stamp``)."""

    #: The key's ``_vector_signals`` in the snapshot the slot's rows were read or
    #: caught up to: a snapshot with the same signals holds the same rows.
    signals: Signals
    #: By ``id`` of each connection that has checked the slot since: its ``PRAGMA
    #: data_version`` and change count then (unchanged: nothing committed since).
    connections: dict[int, tuple[int, int]]


class _SlotLoad:
    """One slot loaded on a daemon thread with a connection of its own (the store's
    connection stays free for requests); ``slot`` is None when the load failed (the
    next search then loads it as before)."""

    def __init__(self, store: SearchMixin, key: tuple[str, str, str], dim: int) -> None:
        self.slot: VectorSlot | None = None
        self.done = threading.Event()
        self._store, self._key, self._dim = store, key, dim
        threading.Thread(target=self._run, name="memorybank-vector-load", daemon=True).start()

    def _run(self) -> None:
        store = self._store
        try:
            conn = store._open(store.path)
            try:
                conn.execute("BEGIN")  # one snapshot, as _vector_slot reads
                count, updates, log = store._vector_counts(conn, self._key)
                slot = store._vector_slot_read(
                    conn, self._key, self._dim, count, updates, log, None
                )
                conn.execute("COMMIT")
            finally:
                conn.close()
            slot.stamp = None  # another connection's: never taken for the store's own
            self.slot = slot
        except Exception:
            logger.warning("loading cached vectors of %s failed", self._key, exc_info=True)
        finally:
            self.done.set()
