"""``AsyncSearchStore``: keyword and vector search, and the vectors themselves (a part of
``AsyncStore``), derived from the other primitives.

Nothing here is required. The defaults are written once on threads, entries and
records: ``text_search`` ranks every text in scope by BM25 in this process;
vectors are records of the reserved kind ``VECTOR_KIND`` (owned like what they
embed, so ``forget_user`` takes them), and ``vector_search`` compares them all.
Both read everything in scope on every call: right for a small store, and the
reason a store with an index overrides them (claiming ``Capability.TEXT_INDEX``
or ``Capability.VECTOR_STORE``; the conformance suite checks the claims match).
Vectors whose record or entry is gone are skipped, and dropped when found.

"Scope" in ``memorybank.stores.contract._async.store`` applies: every hit is of the
tenant, and ``visible_to`` keeps what that agent and user may see.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from memorybank.errors import NotFound
from memorybank.rules.ids import compound_id
from memorybank.stores.contract._async.batch_reads import AsyncBatchReads
from memorybank.stores.contract.items import EntryRow, Record, SearchHit, VectorItem
from memorybank.stores.contract.types import Visibility, best_hits, searched_kinds, visible
from memorybank.stores.keyword.bm25 import BM25Index

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.records import Entry, Thread

    #: ``(thread id, first, last)`` positions (``entry_windows``).
    Windows: TypeAlias = Sequence[tuple[str, int, int]]
    #: The windows' entries, and the vectors read with them (``search_window_rows``).
    WindowsFound: TypeAlias = tuple[
        Sequence[Sequence[Entry | EntryRow]], dict[str, NDArray[np.float32]]
    ]
else:  # NumPy loads with the first vector read, not with the store
    from memorybank.runtime.np import np

__all__ = ["VECTOR_KIND", "AsyncSearchStore", "rank_texts"]

#: The record kind the derived vectors are kept under (no other code writes it).
VECTOR_KIND = "derived.vector"


def _vector_id(kind: str, item_id: str, model_id: str) -> str:
    import json  # on first use: a process that only reads history never needs it (cold start)

    return compound_id(json.dumps([kind, item_id, model_id], ensure_ascii=False))


def rank_texts(query: str, texts: Iterable[tuple[SearchHit, str]], k: int) -> list[SearchHit]:
    """The best ``k`` of ``texts`` (a zero-score hit and its text) for ``query`` by BM25,
    best first (ties: kind, id, branch). For stores that rank in this process: the
    derived ``text_search`` and the in-memory store."""
    hits: list[SearchHit] = []
    index = BM25Index()
    for hit, text in texts:
        index.add(str(len(hits)), text)
        hits.append(hit)
    return best_hits(
        (dataclasses.replace(hits[int(n)], score=s) for n, s in index.scores(query).items()), k
    )


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class AsyncSearchStore(AsyncBatchReads):
    """Search: keyword (``text_search``), vectors (``vector_put``/``search``/``get``)."""

    # -- keyword search --------------------------------------------------------

    async def _texts(
        self,
        tenant: str,
        kinds: Sequence[str],
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> AsyncIterator[tuple[SearchHit, str]]:
        """Every searchable text in scope, as a zero-score hit and its text."""
        if "entry" in kinds:
            if thread_id is None:
                threads = await self.thread_list(tenant)
            else:
                found = await self.thread_get(tenant, thread_id)
                threads = [] if found is None else [found]
            for thread in threads:
                if not visible(visible_to, thread.agent_id, thread.user_id):
                    continue
                for branch in await self.branch_list(tenant, thread.id):
                    try:
                        _, rows = await self.entry_list(tenant, thread.id, branch=branch.name)
                    except NotFound:
                        continue  # deleted meanwhile
                    for entry in rows:
                        if entry.content:
                            hit = SearchHit("entry", entry.id, 0.0, thread.id, branch.name)
                            yield hit, entry.content
        if thread_id is None:
            for kind in dict.fromkeys(kinds):
                if kind == "entry":
                    continue
                for record in await self.record_list(tenant, kind, visible_to=visible_to):
                    yield SearchHit(kind, record.id, 0.0), record.content

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
        """Best ``k`` keyword matches among records of ``kinds`` and entries (``"entry"``).

        Entries are matched on every branch (hits carry the branch) and scoped
        by their thread's ``agent_id``/``user_id``; ``thread_id`` restricts to
        one thread (and excludes records). Best first. Derived: BM25 over every
        text in scope (``rank_texts``).
        """
        return rank_texts(
            query, [item async for item in self._texts(tenant, kinds, thread_id, visible_to)], k
        )

    # -- vectors ---------------------------------------------------------------

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Store (replace) embeddings of records or entries, tagged with their model id.

        Derived: one record of ``VECTOR_KIND`` each, owned like the record or the
        entry's thread it embeds (an item whose record or thread is gone is not kept).
        """
        now = datetime.now(UTC)
        # The owners in one batch read per kind (threads for entries), not one read an item.
        threads = {i.thread_id for i in items if i.kind == "entry" and i.thread_id is not None}
        owners: dict[tuple[str, str], Any] = {
            ("entry", tid): thread
            for tid, thread in (await self.thread_get_many(tenant, list(threads))).items()
        }
        for kind in {i.kind for i in items if i.kind != "entry"}:
            ids = [i.id for i in items if i.kind == kind]
            found = await self.record_get_many(tenant, kind, ids)
            owners.update(((kind, rid), record) for rid, record in found.items())
        records: list[Record] = []
        for item in items:
            key = ("entry", item.thread_id or "") if item.kind == "entry" else (item.kind, item.id)
            owner = owners.get(key)
            if owner is None:
                continue
            data = {
                "kind": item.kind,
                "id": item.id,
                "thread_id": item.thread_id,
                "vector": _unit([float(x) for x in item.vector]),
            }
            vid = _vector_id(item.kind, item.id, item.model_id)
            owned = Record(VECTOR_KIND, vid, owner.agent_id, owner.user_id, "", data, now, now)
            records.append(dataclasses.replace(owned, key=item.model_id))
        if records:
            await self.record_put(tenant, records)

    async def _live(self, tenant: str, vectors: Sequence[Record]) -> list[Record]:
        """``vectors`` whose record or entry still exists; the others are deleted."""
        wanted: dict[str, list[str]] = {}
        for v in vectors:
            if v.data["kind"] == "entry":
                wanted.setdefault("entry:" + str(v.data["thread_id"]), []).append(v.data["id"])
            else:
                wanted.setdefault(v.data["kind"], []).append(v.data["id"])
        alive: set[tuple[str, str]] = set()
        for group, ids in wanted.items():
            if group.startswith("entry:"):
                thread_id = group[len("entry:") :]
                try:
                    branches = await self.branch_list(tenant, thread_id)
                    for branch in branches:
                        _, rows = await self.entry_list(tenant, thread_id, branch=branch.name)
                        alive.update((group, e.id) for e in rows)
                except NotFound:
                    continue
            else:
                alive.update((group, rid) for rid in await self.record_get_many(tenant, group, ids))
        live: list[Record] = []
        dead: list[Record] = []
        for v in vectors:
            group = (
                "entry:" + str(v.data["thread_id"]) if v.data["kind"] == "entry" else v.data["kind"]
            )
            (live if (group, v.data["id"]) in alive else dead).append(v)
        if dead:
            await self.record_delete(tenant, VECTOR_KIND, [v.id for v in dead])
        return live

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
        """Best ``k`` by cosine similarity among vectors of ``model_id`` (never mixed)."""
        wanted = set(searched_kinds(kinds, thread_id))
        candidates = [
            v
            for v in await self.record_list(
                tenant, VECTOR_KIND, key=model_id, visible_to=visible_to
            )
            if v.data["kind"] in wanted and (thread_id is None or v.data["thread_id"] == thread_id)
        ]
        query = _unit([float(x) for x in vector])
        hits = [
            SearchHit(
                v.data["kind"],
                v.data["id"],
                sum(a * b for a, b in zip(query, v.data["vector"], strict=False)),
                v.data["thread_id"],
            )
            for v in await self._live(tenant, candidates)
        ]
        return best_hits(hits, k)

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        """Stored vectors of ``model_id`` for these ids (missing ids are absent)."""
        by_id = {_vector_id(kind, i, model_id): i for i in dict.fromkeys(ids)}
        found = await self.record_get_many(tenant, VECTOR_KIND, list(by_id))
        live = await self._live(tenant, list(found.values()))
        return {by_id[v.id]: list(v.data["vector"]) for v in live}

    async def vector_get_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """``vector_get``'s vectors as float32 arrays (the same ids and values).

        What ranking reads: a store holding vectors as bytes or in a matrix
        overrides it and skips making a list of Python floats per vector
        (SQLite: 240 vectors of 384 floats, about 12 ms of conversions both ways).
        """
        got = await self.vector_get(tenant, kind, ids, model_id=model_id)
        return {rid: np.asarray(vector, dtype=np.float32) for rid, vector in got.items()}

    # -- a search's reads, fused --------------------------------------------------------

    async def search_entries(
        self, tenant: str, wanted: Mapping[str, Sequence[str]], *, model_id: str | None = None
    ) -> tuple[dict[str, Thread], dict[tuple[str, str], Entry], dict[str, NDArray[np.float32]]]:
        """What a search reads to resolve its entry hits, in one call: the threads of
        ``wanted`` (thread id -> entry ids) as ``thread_get_many``, their entries as
        ``entry_get_across`` (each on its thread's current branch), and the entries'
        vectors of ``model_id`` as ``vector_get_arrays`` (none when ``None``).

        This default makes the three reads; a store overrides it with one (SQLite: one
        hand-off to a read connection; PostgreSQL: one statement) and returns exactly
        the threads and entries they return. Of the vectors it may return only those
        it reads in that call (PostgreSQL without pgvector leaves the ones it caches in
        memory): the caller reads the others with ``vector_get_arrays``. The caller
        checks what it may see, as after ``thread_get_many``."""
        threads = await self.thread_get_many(tenant, list(wanted))
        entries = await self.entry_get_across(
            tenant, {tid: ids for tid, ids in wanted.items() if tid in threads}
        )
        vectors: dict[str, NDArray[np.float32]] = {}
        if model_id is not None and entries:
            vectors = await self.vector_get_arrays(
                tenant, "entry", [eid for _, eid in entries], model_id=model_id
            )
        return threads, entries, vectors

    async def search_entry_rows(
        self, tenant: str, wanted: Mapping[str, Sequence[str]], *, model_id: str | None = None
    ) -> tuple[
        dict[str, Thread],
        Mapping[tuple[str, str], Entry | EntryRow],
        dict[str, NDArray[np.float32]],
    ]:
        """``search_entries`` for ranking: the same threads, entries and vectors, each
        entry as an ``EntryRow`` or an ``Entry`` (a store that reads every column anyway
        returns its entries: they hold the same fields). A hybrid search reads its
        candidates with it, and the entries it returns with ``entry_get_across``.

        This default is ``search_entries``; a store overrides it with a read of the
        ``EntryRow`` columns alone when that saves more than the search's one more read
        of the k it returns costs (SQLite: a hand-off to a read connection; PostgreSQL
        keeps the default, where that read is a round trip and saved nothing)."""
        return await self.search_entries(tenant, wanted, model_id=model_id)

    async def search_window_rows(
        self,
        tenant: str,
        windows: Sequence[tuple[str, int, int]],
        *,
        model_id: str | None = None,
        known: Collection[str] = (),
    ) -> WindowsFound:
        """``search_windows`` for ranking, its entries as ``search_entry_rows``'s."""
        return await self._search_windows(tenant, windows, model_id, known, True)

    async def search_windows(
        self,
        tenant: str,
        windows: Sequence[tuple[str, int, int]],
        *,
        model_id: str | None = None,
        known: Collection[str] = (),
    ) -> tuple[list[list[Entry]], dict[str, NDArray[np.float32]]]:
        """``entry_windows(tenant, windows)`` and, in the same call, the vectors of
        ``model_id`` (``vector_get_arrays``) of the entries they hold but ``known`` (ids
        whose vectors the caller has read already; none when ``model_id`` is ``None``).
        Search reads the neighbours of its best hits with it."""
        found, vectors = await self._search_windows(tenant, windows, model_id, known, False)
        return cast("list[list[Entry]]", found), vectors

    async def _search_windows(
        self, tenant: str, windows: Windows, model: str | None, known: Collection[str], rows: bool
    ) -> WindowsFound:
        """``search_windows`` (``rows``: ``search_window_rows``, whose entries may be
        ``EntryRow``s; else each one an ``Entry``).

        This default makes the two reads; a store overrides it with one and returns
        exactly the windows they return, and of the vectors those it reads in that
        call (``search_entries``). A store overriding ``search_windows`` instead has
        ``search_window_rows`` read with it."""
        if rows:
            return await self.search_windows(tenant, windows, model_id=model, known=known)
        found = await self.entry_windows(tenant, windows) if windows else []
        vectors: dict[str, NDArray[np.float32]] = {}
        if model is not None:
            ids = list(dict.fromkeys(e.id for window in found for e in window if e.id not in known))
            if ids:
                vectors = await self.vector_get_arrays(tenant, "entry", ids, model_id=model)
        return found, vectors
