"""Key and tenant management with the admin key: ``/v1/admin/...``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from memorybank.server.deps import AdminDep, key_ring
from memorybank.server.keys import KeyRing
from memorybank.server.models import KeyCreated, KeyIn, KeyOut, Page, TenantOut
from memorybank.server.pagination import PageDep
from memorybank.server.routes import found

__all__ = ["router"]

KeysDep = Annotated[KeyRing, Depends(key_ring)]


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1/admin", tags=["admin"])

    @api.post("/keys", status_code=201, summary="Create an API key for a tenant")
    async def create_key(body: KeyIn, admin: AdminDep, keys: KeysDep) -> KeyCreated:
        info, secret = await keys.create(body.tenant, body.label)
        return KeyCreated(key=KeyOut.model_validate(info), secret=secret)

    @api.get("/keys", summary="List keys (of a tenant), oldest first")
    async def list_keys(
        page: PageDep, admin: AdminDep, keys: KeysDep, tenant: str | None = None
    ) -> Page[KeyOut]:
        fetch = keys.list
        return await page.first_n(lambda n: fetch(tenant, limit=n), KeyOut.model_validate)

    @api.get("/keys/{key_id}", summary="Get a key")
    async def get_key(key_id: str, admin: AdminDep, keys: KeysDep) -> KeyOut:
        return KeyOut.model_validate(found(await keys.get(key_id), f"key {key_id!r}"))

    @api.delete("/keys/{key_id}", summary="Revoke a key (idempotent)")
    async def revoke_key(key_id: str, admin: AdminDep, keys: KeysDep) -> KeyOut:
        return KeyOut.model_validate(await keys.revoke(key_id))

    @api.get("/tenants", summary="Tenants that have keys, by name")
    async def list_tenants(page: PageDep, admin: AdminDep, keys: KeysDep) -> Page[TenantOut]:
        async def fetch(n: int | None) -> list[tuple[str, list[int]]]:
            counts: dict[str, list[int]] = {}
            for info in await keys.list():
                count = counts.setdefault(info.tenant, [0, 0])
                count[0] += 1
                count[1] += not info.revoked
            return sorted(counts.items())

        return await page.first_n(
            fetch, lambda t: TenantOut(tenant=t[0], keys=t[1][0], live_keys=t[1][1])
        )

    @api.post("/tenants/{tenant}/revoke", summary="Revoke every key of a tenant")
    async def revoke_tenant(tenant: str, admin: AdminDep, keys: KeysDep) -> Page[KeyOut]:
        """The keys this call revoked, all on one page (``next_cursor`` null)."""
        revoked = [await keys.revoke(k.id) for k in await keys.list(tenant) if not k.revoked]
        return Page[KeyOut](items=[KeyOut.model_validate(k) for k in revoked])

    return api
