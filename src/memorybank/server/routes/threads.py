"""Threads, entries, history, branches, context and compaction: ``/v1/threads/...``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Response

from memorybank.context._async.compaction import AsyncCompactionService
from memorybank.errors import Conflict
from memorybank.records import Entry
from memorybank.server.deps import MemoryDep
from memorybank.server.models import (
    BranchIn,
    BranchOut,
    CheckoutIn,
    CompactIn,
    CompactionOut,
    ContextIn,
    ContextOut,
    Count,
    EntriesIn,
    EntryIn,
    EntryOut,
    MessageOut,
    Page,
    RewindIn,
    ThreadIn,
    ThreadOut,
    ThreadPatch,
)
from memorybank.server.pagination import (
    DEFAULT_LIMIT,
    CursorQuery,
    LimitQuery,
    OwnerDep,
    PageDep,
    decode_cursor,
    encode_cursor,
)
from memorybank.server.routes import deleted, found
from memorybank.server.routes.cortex import page_json

__all__ = ["router"]

BranchQuery = Annotated[str | None, Query(description="Branch (default: the current one).")]
IdempotencyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description=(
            "Same as the body's idempotency_key; both given and different: 409 conflict"
            " (one request cannot carry two keys)."
        ),
    ),
]


def one_key(body: str | None, header: str | None) -> str | None:
    """The request's idempotency key, given in the body or the header: two different
    keys conflict (409), as a key reused for another message does."""
    if body is not None and header is not None and body != header:
        raise Conflict("idempotency_key and the Idempotency-Key header differ")
    return body if body is not None else header


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1/threads")

    # -- threads ----------------------------------------------------------------

    @api.post("", status_code=201, tags=["threads"], summary="Create a thread")
    async def create_thread(body: ThreadIn, memory: MemoryDep) -> ThreadOut:
        return ThreadOut.model_validate(await memory.threads.create(**body.arguments()))

    @api.get("", tags=["threads"], summary="List threads, most recently updated first")
    async def list_threads(
        page: PageDep,
        memory: MemoryDep,
        owner: OwnerDep,
        status: Literal["active", "archived"] | None = None,
    ) -> Page[ThreadOut]:
        fetch = memory.threads.list
        return await page.first_n(
            lambda n: fetch(status=status, limit=n, **owner), ThreadOut.model_validate
        )

    @api.get("/{thread_id}", tags=["threads"], summary="Get a thread")
    async def get_thread(thread_id: str, memory: MemoryDep) -> ThreadOut:
        thread = await memory.threads.get(thread_id)
        return ThreadOut.model_validate(found(thread, f"thread {thread_id!r}"))

    @api.patch("/{thread_id}", tags=["threads"], summary="Change title, metadata or status")
    async def update_thread(thread_id: str, body: ThreadPatch, memory: MemoryDep) -> ThreadOut:
        return ThreadOut.model_validate(await memory.threads.update(thread_id, **body.arguments()))

    @api.delete(
        "/{thread_id}", status_code=204, tags=["threads"], summary="Delete a thread and its data"
    )
    async def delete_thread(thread_id: str, memory: MemoryDep) -> Response:
        return deleted(await memory.threads.delete(thread_id), f"thread {thread_id!r}")

    # -- entries ------------------------------------------------------------------

    @api.post("/{thread_id}/entries", status_code=201, tags=["entries"], summary="Append")
    async def add_entry(
        thread_id: str, body: EntryIn, memory: MemoryDep, idempotency_key: IdempotencyHeader = None
    ) -> EntryOut:
        """A retry with the same idempotency key (body field or ``Idempotency-Key``
        header) returns the stored entry; the key reused for another message: 409."""
        options = body.arguments()
        options["idempotency_key"] = one_key(body.idempotency_key, idempotency_key)
        entry = await memory.entries.add(thread_id, body.as_dict(), **options)
        return EntryOut.model_validate(entry)

    @api.post(
        "/{thread_id}/entries/batch",
        status_code=201,
        tags=["entries"],
        summary="Append several messages atomically",
    )
    async def add_entries(
        thread_id: str,
        body: EntriesIn,
        memory: MemoryDep,
        idempotency_key: IdempotencyHeader = None,
    ) -> Page[EntryOut]:
        """All messages or none; the idempotency key names the whole batch. The stored
        entries, in order, all on one page (``next_cursor`` null)."""
        options = body.arguments()
        options["idempotency_key"] = one_key(body.idempotency_key, idempotency_key)
        entries = await memory.entries.add_many(thread_id, **options)
        return Page[EntryOut](items=[EntryOut.model_validate(e) for e in entries])

    @api.get("/{thread_id}/entries", tags=["entries"], summary="List entries, paged from newest")
    async def list_entries(
        thread_id: str,
        memory: MemoryDep,
        limit: LimitQuery = DEFAULT_LIMIT,
        cursor: CursorQuery = None,
        before: datetime | None = None,
        after: datetime | None = None,
        order: Literal["asc", "desc"] = "asc",
        max_tokens: Annotated[int | None, Query(ge=0, le=2**31 - 1)] = None,
        include_tool_calls: bool = True,
        branch: BranchQuery = None,
    ) -> Page[EntryOut]:
        """Pages go from the newest entries back (``next_cursor`` reaches older ones);
        each page comes back in ``order``. The windows are ``entries.list``'s."""
        offset = decode_cursor(cursor)

        async def window(limit: int, offset: int, max_tokens: int | None) -> list[Entry]:
            return await memory.entries.list(
                thread_id,
                limit=limit,
                offset=offset,
                before=before,
                after=after,
                order=order,
                max_tokens=max_tokens,
                include_tool_calls=include_tool_calls,
                branch=branch,
            )

        rows = await window(limit, offset, max_tokens)
        next_cursor = None
        # A token budget is one window, not a list to page through.
        if rows and max_tokens is None:
            following = offset + len(rows)
            if await window(1, following, None):
                next_cursor = encode_cursor(following)
        return Page[EntryOut](
            items=[EntryOut.model_validate(e) for e in rows], next_cursor=next_cursor
        )

    @api.delete("/{thread_id}/entries", tags=["entries"], summary="Delete every entry of a branch")
    async def clear_entries(thread_id: str, memory: MemoryDep, branch: BranchQuery = None) -> Count:
        return Count(count=await memory.entries.clear(thread_id, branch=branch))

    @api.get("/{thread_id}/count", tags=["entries"], summary="Number of entries on a branch")
    async def count_entries(thread_id: str, memory: MemoryDep, branch: BranchQuery = None) -> Count:
        return Count(count=await memory.entries.count(thread_id, branch=branch))

    @api.get("/{thread_id}/entries/{entry_id}", tags=["entries"], summary="Get an entry")
    async def get_entry(
        thread_id: str, entry_id: str, memory: MemoryDep, branch: BranchQuery = None
    ) -> EntryOut:
        entry = await memory.entries.get(thread_id, entry_id, branch=branch)
        return EntryOut.model_validate(found(entry, f"entry {entry_id!r}"))

    @api.delete(
        "/{thread_id}/entries/{entry_id}", status_code=204, tags=["entries"], summary="Delete"
    )
    async def delete_entry(
        thread_id: str,
        entry_id: str,
        memory: MemoryDep,
        branch: BranchQuery = None,
        cascade_facts: bool = False,
    ) -> Response:
        done = await memory.entries.delete(
            thread_id, entry_id, branch=branch, cascade_facts=cascade_facts
        )
        return deleted(done, f"entry {entry_id!r}")

    @api.get(
        "/{thread_id}/history",
        tags=["entries"],
        summary="Last messages, oldest first",
        response_model=Page[MessageOut],
    )
    async def history(
        thread_id: str,
        memory: MemoryDep,
        last: Annotated[int, Query(ge=0, le=10_000)] = 20,
    ) -> Response:
        """The last ``last`` messages exactly as the library's ``history`` gives them
        (``Entry.to_message()``: content parts, provider fields, Responses items as
        stored), as ``items``. A window, whole on one page (``next_cursor`` null); page
        through a thread with ``/entries`` instead."""
        messages = await memory.history(thread_id, last=last)
        return Response(page_json(messages), media_type="application/json")

    # -- branches ----------------------------------------------------------------

    @api.post("/{thread_id}/branches", status_code=201, tags=["branches"], summary="Fork")
    async def create_branch(thread_id: str, body: BranchIn, memory: MemoryDep) -> BranchOut:
        return BranchOut.model_validate(await memory.branches.create(thread_id, **body.arguments()))

    @api.get("/{thread_id}/branches", tags=["branches"], summary="List branches, oldest first")
    async def list_branches(thread_id: str, page: PageDep, memory: MemoryDep) -> Page[BranchOut]:
        fetch = memory.branches.list
        return await page.first_n(lambda n: fetch(thread_id), BranchOut.model_validate)

    @api.delete(
        "/{thread_id}/branches/{name}", status_code=204, tags=["branches"], summary="Delete"
    )
    async def delete_branch(thread_id: str, name: str, memory: MemoryDep) -> Response:
        return deleted(await memory.branches.delete(thread_id, name), f"branch {name!r}")

    @api.post("/{thread_id}/checkout", tags=["branches"], summary="Make a branch current")
    async def checkout(thread_id: str, body: CheckoutIn, memory: MemoryDep) -> ThreadOut:
        return ThreadOut.model_validate(
            await memory.branches.checkout(thread_id, **body.arguments())
        )

    @api.post("/{thread_id}/rewind", tags=["branches"], summary="Delete entries after one")
    async def rewind(thread_id: str, body: RewindIn, memory: MemoryDep) -> Count:
        return Count(count=await memory.branches.rewind(thread_id, **body.arguments()))

    # -- context and compaction -----------------------------------------------------

    @api.post("/{thread_id}/context", tags=["context"], summary="Build a model call's context")
    async def build_context(thread_id: str, body: ContextIn, memory: MemoryDep) -> ContextOut:
        return ContextOut.model_validate(await memory.build_context(thread_id, **body.arguments()))

    @api.post("/{thread_id}/compact", tags=["context"], summary="Sliding-window compaction")
    async def compact(thread_id: str, body: CompactIn, memory: MemoryDep) -> CompactionOut:
        """Drops the entries older than the ``keep_recent`` newest (no model needed).
        Summary compaction needs a summarizing model, which the server does not hold."""
        result = await AsyncCompactionService(memory=memory).compact(thread_id, **body.arguments())
        return CompactionOut.model_validate(result)

    @api.post("/{thread_id}/restore", tags=["context"], summary="Undo reversible compaction")
    async def restore(thread_id: str, memory: MemoryDep) -> Count:
        return Count(count=await AsyncCompactionService(memory=memory).restore(thread_id))

    return api
