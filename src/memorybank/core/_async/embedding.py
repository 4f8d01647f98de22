"""``memory.embedding``: vectors computed after the write (``Memory(embed="background")``).

A background write journals its ids (``JOURNAL_TENANT``, leased per worker), stores its
entries and queues the journal records for one worker, which embeds them in batches of
``EMBED_BATCH`` and deletes the records; what a stopped process left is resumed by the
next start. The journal, its leases and what is never lost: docs/embeddings.md
("Background embedding").
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memorybank.core._async.cas import system_record
from memorybank.core._async.embed import EMBED_BATCH, embed_texts
from memorybank.embeddings.status import EmbeddingStatus, EmbedMode
from memorybank.errors import LeaseLost
from memorybank.rules.ids import new_id
from memorybank.runtime.concurrency import AsyncJobQueue
from memorybank.runtime.log import logger
from memorybank.stores.contract._async import leases
from memorybank.stores.contract.items import Record, VectorItem

if TYPE_CHECKING:
    from memorybank.embeddings.base import Embedder
    from memorybank.stores.contract._async.store import AsyncStore

__all__ = [
    "EMBED_JOB",
    "JOURNAL_TENANT",
    "RESUME_PAGE",
    "AsyncEmbedding",
]

#: The reserved tenant (no caller can name it) holding the journal of pending vectors.
JOURNAL_TENANT = "~memorybank-embed"
#: The record kind of one journal record: up to ``EMBED_BATCH`` ids of one write.
EMBED_JOB = "embed_job"
#: Journal records read per page when resuming.
RESUME_PAGE = 64

_ENTRY = "entry"
_DOCUMENT = "document"
#: Jobs embedded together: (tenant, kind, thread, branch).
_Group = tuple[str, str, str | None, str | None]


def _vector_kind(group: _Group) -> str:
    return _ENTRY if group[1] == _ENTRY else _DOCUMENT


@dataclasses.dataclass(frozen=True, slots=True)
class _Job:
    """One journal record: ids of one write, of one kind (and for entries one thread)."""

    id: str
    tenant: str
    kind: str  # "entry" or "document"
    thread_id: str | None
    branch: str | None
    ids: tuple[str, ...]
    held: Record | None = None  # the journal record as this worker last stored it (leased)

    def record(self, now: datetime) -> Record:
        data = {
            "tenant": self.tenant,
            "kind": self.kind,
            "thread_id": self.thread_id,
            "branch": self.branch,
            "ids": list(self.ids),
        }
        return system_record(EMBED_JOB, self.id, data, now)

    @classmethod
    def from_record(cls, record: Record) -> _Job | None:
        data = record.data
        ids, tenant, kind = data.get("ids"), data.get("tenant"), data.get("kind")
        thread, branch = data.get("thread_id"), data.get("branch")
        if not (
            isinstance(ids, list)
            and all(isinstance(i, str) for i in ids)
            and isinstance(tenant, str)
            and kind in (_ENTRY, _DOCUMENT)
            and (thread is None or isinstance(thread, str))
            and (branch is None or isinstance(branch, str))
            and (kind == _DOCUMENT or thread is not None)
        ):
            return None
        return cls(record.id, tenant, str(kind), thread, branch, tuple(ids))


class _Counts:
    """One tenant's numbers in ``status()``."""

    def __init__(self) -> None:
        self.pending = self.embedded = self.failed = 0
        self.last_error: str | None = None

    @staticmethod
    def copy(counts: _Counts) -> _Counts:
        out = _Counts()
        out.pending, out.embedded, out.failed = counts.pending, counts.embedded, counts.failed
        out.last_error = counts.last_error
        return out


class _EmbedService:
    """The queue, the worker and the journal of one memory (shared by its handles)."""

    def __init__(
        self,
        store: AsyncStore,
        embedder: Embedder | None,
        capacity: int,
        lease: float = leases.DEFAULT_LEASE,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.lease = leases.check_lease(lease, "embed_lease")
        self.owner = new_id()  # this worker, in the leases of the journal records it holds
        self._next_scan: datetime | None = None  # when to look for expired leases again
        self.queue: AsyncJobQueue[_Job | None] = AsyncJobQueue(
            "memorybank-embed",
            capacity=capacity,
            batch=EMBED_BATCH,
            handle=self._handle,
            tick=min(5.0, max(0.05, self.lease / 4)),
        )
        self._counts: dict[str, _Counts] = {}
        self._lock = threading.Lock()
        # journal records this process queued or is embedding: as it last stored them
        # (its leases on them)
        self._own: dict[str, Record | None] = {}
        self._started = False
        self.resuming = False
        self.totals = _Counts()

    def counts(self, tenant: str) -> _Counts:
        found = self._counts.get(tenant)
        if found is None:
            found = self._counts[tenant] = _Counts()
        return found

    async def start(self) -> None:
        """Queue the resumption of what an earlier process left (once)."""
        if self._started or self.embedder is None:
            return
        self._started = True
        await self.queue.put(None, 0)

    async def journal(
        self, tenant: str, kind: str, thread_id: str | None, branch: str | None, ids: list[str]
    ) -> list[_Job]:
        """Store the journal records of a write about to happen (before it happens)."""
        batch = EMBED_BATCH
        if not ids:
            return []
        await self.start()
        jobs = [
            _Job(new_id(), tenant, kind, thread_id, branch, tuple(ids[i : i + batch]))
            for i in range(0, len(ids), batch)
        ]
        now = datetime.now(UTC)  # the wall clock, not the memory's: resume order, leases
        until = leases.expiry(now, self.lease)
        held = [leases.leased(job.record(now), self.owner, until) for job in jobs]
        jobs = [
            dataclasses.replace(job, held=record) for job, record in zip(jobs, held, strict=True)
        ]
        self._own.update((record.id, record) for record in held)
        try:
            await self.store.record_put(JOURNAL_TENANT, held)
        except BaseException:
            for job in jobs:
                self._own.pop(job.id, None)
            raise
        return jobs

    async def abandon(self, jobs: list[_Job]) -> None:
        """The write failed or added nothing: remove its journal records (best effort)."""
        for job in jobs:
            self._own.pop(job.id, None)
        if not jobs:
            return
        try:
            await self.store.record_delete(JOURNAL_TENANT, EMBED_JOB, [job.id for job in jobs])
        except Exception as error:  # the next start drops a record whose ids do not exist
            logger.warning("memorybank: could not remove an embedding journal record (%s)", error)

    async def submit(self, jobs: list[_Job], *, branch: str | None = None) -> None:
        """Queue the jobs of a stored write, waiting while the queue is full; ``branch``:
        the one the entries went to (a journal record written before may name none)."""
        for job in jobs:
            if job.branch is None and branch is not None:
                job = dataclasses.replace(job, branch=branch)
            self._count(job.tenant, pending=len(job.ids))
            if not await self.queue.put(job, len(job.ids)):  # closed: the journal keeps it
                self._count(job.tenant, pending=-len(job.ids))
                await self._release([job.id])

    async def _handle(self, jobs: list[_Job | None]) -> None:
        """A batch of the queue (an empty one is a tick: rescan when due)."""
        due = self._next_scan is not None and datetime.now(UTC) >= self._next_scan
        if due or any(job is None for job in jobs):
            await self._resume()
        live = [job for job in jobs if job is not None]
        if live:
            await self._embed(live)

    async def _resume(self) -> None:
        """Embed the journal records no live lease holds (claimed first, one by one)."""
        store = self.store
        self.resuming = True
        started = datetime.now(UTC)
        self._next_scan = leases.expiry(started, self.lease)  # at least once per lease
        try:
            after: tuple[datetime, str] | None = None
            while True:
                page = await store.record_page(
                    JOURNAL_TENANT, EMBED_JOB, limit=RESUME_PAGE, after=after
                )
                if not page:
                    return
                after = (page[-1].created_at, page[-1].id)
                batch: list[_Job] = []
                broken: list[str] = []
                for record in page:
                    if record.id in self._own:
                        continue
                    job = _Job.from_record(record)
                    if job is None:
                        broken.append(record.id)
                        continue
                    now = datetime.now(UTC)
                    lease = leases.lease_of(record)
                    if lease is not None and lease.live(now):
                        # another worker's (or a job that failed here): look again
                        # when its lease runs out
                        self._next_scan = min(self._next_scan, lease.until)
                        continue
                    held = await leases.claim(
                        store,
                        JOURNAL_TENANT,
                        record,
                        owner=self.owner,
                        until=leases.expiry(now, self.lease),
                        now=now,
                    )
                    if held is None:  # another worker claimed it first
                        continue
                    job = dataclasses.replace(job, held=held)
                    self._own[job.id] = held
                    if batch and sum(len(j.ids) for j in batch) + len(job.ids) > EMBED_BATCH:
                        await self._embed(batch, resumed=True)
                        batch = []
                    batch.append(job)
                if batch:
                    await self._embed(batch, resumed=True)
                if broken:
                    await store.record_delete(JOURNAL_TENANT, EMBED_JOB, broken)
        except Exception as error:  # the journal stays: the next start tries again
            self._failed(None, 0, error)
        finally:
            self.resuming = False

    async def _read(self, key: _Group, ids: list[str]) -> dict[str, str]:
        """The texts of the group's ids that still exist (missing ones absent)."""
        tenant, kind, thread_id, branch = key
        found: dict[str, Any]
        if kind == _ENTRY:
            assert thread_id is not None
            found = await self.store.entry_get_many(tenant, thread_id, ids, branch=branch)
        else:
            found = await self.store.record_get_many(tenant, _DOCUMENT, ids)
        return {rid: item.content for rid, item in found.items() if item.content}

    async def _embed(self, jobs: list[_Job], *, resumed: bool = False) -> None:
        """Embed what ``jobs`` name that exists and has no vector yet; drop their journal."""
        embedder = self.embedder
        store = self.store
        assert embedder is not None
        model = embedder.model_id
        if resumed:
            for job in jobs:
                self._count(job.tenant, pending=len(job.ids))
        try:
            mine = await self._hold(jobs)  # the jobs whose lease this worker still holds
            groups: dict[_Group, list[str]] = {}
            for job in mine:
                groups.setdefault((job.tenant, job.kind, job.thread_id, job.branch), []).extend(
                    job.ids
                )
            todo: list[tuple[_Group, str]] = []  # the group and id of each text
            texts: list[str] = []
            for key, ids in groups.items():
                found = await self._read(key, ids)
                if not found:
                    continue
                have = await store.vector_get(
                    key[0], _vector_kind(key), list(found), model_id=model
                )
                for rid, text in found.items():
                    if rid not in have:
                        todo.append((key, rid))
                        texts.append(text)
            vectors = await embed_texts(embedder, texts) if texts else []
            # a job whose lease ran out meanwhile is its new holder's: none of its vectors
            kept = await self._hold(mine)
            kept_ids = {job.id for job in kept}
            lost = {rid for job in mine if job.id not in kept_ids for rid in job.ids}
            # read again: what was deleted (or its user forgotten) while the embedder
            # ran gets no vector
            still: dict[_Group, dict[str, str]] = {}
            for key in {key for key, _ in todo}:
                still[key] = await self._read(key, [rid for k, rid in todo if k == key])
            by_tenant: dict[str, list[VectorItem]] = {}
            for (key, rid), vector in zip(todo, vectors, strict=True):
                if rid in still[key] and rid not in lost:
                    tid = key[2] if key[1] == _ENTRY else None
                    item = VectorItem(_vector_kind(key), rid, model, vector, tid)
                    by_tenant.setdefault(key[0], []).append(item)
            for tenant, items in by_tenant.items():
                await store.vector_put(tenant, items)
            if kept:
                await store.record_delete(JOURNAL_TENANT, EMBED_JOB, [job.id for job in kept])
            for tenant, items in by_tenant.items():
                self._count(tenant, embedded=len(items))
        except Exception as error:  # the journal keeps them: the next start retries
            for job in jobs:
                self._failed(job.tenant, len(job.ids), error)
            await self._release([job.id for job in jobs])  # for whoever retries, at once
        finally:
            for job in jobs:
                self._count(job.tenant, pending=-len(job.ids))
                self._own.pop(job.id, None)

    async def _release(self, ids: list[str]) -> None:
        """End this worker's leases on the journal records ``ids`` (best effort: a lease
        left runs out by itself) and forget them."""
        now = datetime.now(UTC)
        for rid in ids:
            held = self._own.pop(rid, None)
            if held is None:
                continue
            try:
                await leases.release(self.store, JOURNAL_TENANT, held, now=now)
            except Exception as error:
                logger.info("memorybank: could not release an embedding lease (%s)", error)

    async def close(self, within: float | None) -> None:
        """Stop the worker (the queue gets ``within`` seconds) and release the leases of
        what it leaves in the journal, so the next worker takes it at once."""
        await self.queue.close(within)
        left = [rid for rid, held in list(self._own.items()) if held is not None]
        await self._release(left)

    async def _hold(self, jobs: list[_Job]) -> list[_Job]:
        """The jobs whose lease this worker still holds; a lease with less than half its
        length left is renewed first. A job whose lease was taken over (or that another
        worker finished) is dropped: its holder does it."""
        kept: list[_Job] = []
        for job in jobs:
            held = job.held
            now = datetime.now(UTC)
            lease = None if held is None else leases.lease_of(held)
            if held is None or (
                lease is not None and (lease.until - now).total_seconds() >= self.lease / 2
            ):
                kept.append(job)
                continue
            try:
                held = await leases.renew(
                    self.store, JOURNAL_TENANT, held, until=leases.expiry(now, self.lease)
                )
            except LeaseLost as error:
                logger.info("memorybank: an embedding job went to another worker (%s)", error)
                self._own[job.id] = None  # nothing of it to release
                continue
            self._own[job.id] = held
            kept.append(dataclasses.replace(job, held=held))
        return kept

    def _count(
        self,
        tenant: str | None,
        *,
        pending: int = 0,
        embedded: int = 0,
        failed: int = 0,
        error: str | None = None,
    ) -> None:
        """Add to the tenant's numbers and the totals (writers and the worker's thread
        update them: under a lock, held for no await)."""
        with self._lock:
            for counts in (self.totals, None if tenant is None else self.counts(tenant)):
                if counts is not None:
                    counts.pending += pending
                    counts.embedded += embedded
                    counts.failed += failed
                    if error is not None:
                        counts.last_error = error

    def _failed(self, tenant: str | None, size: int, error: Exception) -> None:
        message = f"{type(error).__name__}: {error}"
        self._count(tenant, failed=size, error=message)
        logger.warning(
            "memorybank: background embedding failed (%s); the journal keeps it for the"
            " next start or memory.embed_pending()",
            message,
        )

    def status(self, tenant: str | None) -> EmbeddingStatus:
        embedder = self.embedder
        with self._lock:
            found = self.totals if tenant is None else self._counts.get(tenant, _Counts())
            counts = _Counts.copy(found)
        return EmbeddingStatus(
            mode="background",
            model_id=None if embedder is None else embedder.model_id,
            pending=max(0, counts.pending),
            capacity=self.queue.capacity,
            embedded=counts.embedded,
            failed=counts.failed,
            resuming=self.resuming,
            last_error=counts.last_error,
        )


class AsyncEmbedding:
    """``memory.embedding``: when vectors are computed, and the background backlog.

    With ``Memory(embed="inline")`` (the library's default) every write embeds
    before it returns, and these calls have nothing to wait for. With
    ``embed="background"`` writes return once stored (keyword search finds them
    at once) and a worker adds the vectors: see docs/embeddings.md.
    """

    def __init__(
        self, service: _EmbedService | None, embedder: Embedder | None, tenant: str
    ) -> None:
        self._service = service
        self._embedder = embedder
        self._tenant = tenant

    @property
    def mode(self) -> EmbedMode:
        """``"inline"`` or ``"background"``."""
        return "inline" if self._service is None else "background"

    async def start(self) -> None:
        """Start resuming what an earlier process left pending (idempotent; returns at
        once). The first background write, ``flush()`` and ``async with`` call it."""
        service = self._service
        if service is not None:
            await service.start()

    async def flush(self, within: float | None = None) -> bool:
        """Wait until every vector queued so far (and resumed) is stored; whether that
        happened within ``within`` seconds (``None``: no limit). A write that failed to
        embed counts as done (see ``status().failed``)."""
        service = self._service
        if service is None:
            return True
        await service.start()
        return await service.queue.join(within)

    def status(self) -> EmbeddingStatus:
        """This tenant's backlog, as this process sees it (see ``EmbeddingStatus``)."""
        service = self._service
        if service is None:
            embedder = self._embedder
            return EmbeddingStatus(
                mode="inline",
                model_id=None if embedder is None else embedder.model_id,
                pending=0,
                capacity=0,
                embedded=0,
                failed=0,
                resuming=False,
                last_error=None,
            )
        return service.status(self._tenant)

    def totals(self) -> EmbeddingStatus:
        """As ``status()``, summed over every tenant (the server's ``/metrics``)."""
        service = self._service
        return self.status() if service is None else service.status(None)
