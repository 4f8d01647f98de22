"""Webhook endpoints, managed with the admin key: ``/v1/admin/webhooks``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from memorybank.server.deps import AdminDep
from memorybank.server.models import Page
from memorybank.server.pagination import PageDep
from memorybank.server.webhook_models import WebhookCreated, WebhookIn, WebhookOut, WebhookPatch
from memorybank.webhooks.registry import Webhooks

__all__ = ["router", "webhooks"]


def webhooks(request: Request) -> Webhooks:
    """The process's ``Webhooks`` registry."""
    found: Webhooks = request.app.state.webhooks
    return found


HooksDep = Annotated[Webhooks, Depends(webhooks)]


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1/admin", tags=["admin"])

    @api.post("/webhooks", status_code=201, summary="Register a webhook endpoint for a tenant")
    async def create_webhook(body: WebhookIn, admin: AdminDep, hooks: HooksDep) -> WebhookCreated:
        info, secret = await hooks.create(**body.model_dump())
        return WebhookCreated(webhook=WebhookOut.model_validate(info), secret=secret)

    @api.get("/webhooks", summary="List webhook endpoints (of a tenant), oldest first")
    async def list_webhooks(
        page: PageDep, admin: AdminDep, hooks: HooksDep, tenant: str | None = None
    ) -> Page[WebhookOut]:
        fetch = hooks.list
        return await page.first_n(lambda n: fetch(tenant, limit=n), WebhookOut.model_validate)

    @api.get("/webhooks/{webhook_id}", summary="Get a webhook endpoint and its delivery state")
    async def get_webhook(webhook_id: str, admin: AdminDep, hooks: HooksDep) -> WebhookOut:
        return WebhookOut.model_validate(await hooks.get(webhook_id))

    @api.patch(
        "/webhooks/{webhook_id}",
        summary="Change a webhook endpoint: URL, kinds, description; pause or resume it",
    )
    async def update_webhook(
        webhook_id: str, body: WebhookPatch, admin: AdminDep, hooks: HooksDep
    ) -> WebhookOut:
        # A field left out keeps its value: the registry's default (UNSET, or None).
        info = await hooks.update(webhook_id, **body.model_dump(exclude_unset=True))
        return WebhookOut.model_validate(info)

    @api.delete("/webhooks/{webhook_id}", summary="Delete a webhook endpoint")
    async def delete_webhook(webhook_id: str, admin: AdminDep, hooks: HooksDep) -> WebhookOut:
        return WebhookOut.model_validate(await hooks.delete(webhook_id))

    return api
