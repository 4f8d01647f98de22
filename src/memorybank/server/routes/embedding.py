"""``GET /v1/embedding/status``: the caller's tenant's background embedding backlog."""

from __future__ import annotations

from fastapi import APIRouter

from memorybank.server.deps import MemoryDep
from memorybank.server.responses_generated import EmbeddingStatusOut

__all__ = ["router"]


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
        return EmbeddingStatusOut.model_validate(memory.embedding.status())

    return api
