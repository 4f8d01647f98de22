"""``GET /v1/embedding/status``: the caller's tenant's background embedding backlog."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from memorybank.server.deps import MemoryDep

__all__ = ["EmbeddingStatusOut", "router"]


class EmbeddingStatusOut(BaseModel):
    """The tenant's embedding backlog in this server process (``memory.embedding.status()``)."""

    mode: Literal["inline", "background"] = Field(
        description="When vectors are computed: in the write, or after it by a worker."
    )
    model_id: str | None = Field(description="The embedder's model (null: no embedder).")
    pending: int = Field(description="Entries and documents stored and not embedded yet.")
    capacity: int = Field(description="Texts the queue holds before a write waits (all tenants).")
    embedded: int = Field(description="Vectors stored by the worker since the process started.")
    failed: int = Field(description="Texts the embedder failed on (kept for the next start).")
    resuming: bool = Field(description="The worker is resuming work a stopped process left.")
    last_error: str | None = Field(description="The newest failure, as `ErrorType: message`.")


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1")

    @api.get(
        "/embedding/status",
        tags=["search"],
        summary="Background embedding backlog of the caller's tenant",
    )
    async def embedding_status(memory: MemoryDep) -> EmbeddingStatusOut:
        """What this process has queued for the tenant and not embedded yet, and what it
        did. With several server processes each answers for itself (``/metrics`` adds
        them up)."""
        return EmbeddingStatusOut.model_validate(memory.embedding.status(), from_attributes=True)

    return api
