"""Webhook endpoints: registered per tenant by an operator, kept in the store itself.

An endpoint is a record of kind ``WEBHOOK_KIND`` in the reserved tenant
``WEBHOOK_TENANT`` (no caller can name a tenant starting with ``~``), keyed by the
tenant it serves, so every store keeps them through the ordinary record contract and
no store needs a table of its own. Its ``data`` holds the URL, the event kinds it
wants (``None``: all), its signing secret (needed in the clear to sign: unlike an API
key it cannot be hashed; it is shown once when created and never returned after),
its state (``"active"`` or ``"paused"`` with the reason) and the delivery state the
workers keep: the cursor of the last event delivered, the consecutive failures, the
last error, and the lease of the worker delivering it
(``memorybank.stores.contract._async.leases``).

Every change is a compare-and-swap on the record's revision (retried on a fresh
read), so an operator's pause and a worker's cursor never overwrite each other.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from memorybank.core._async.cas import put_changed, put_new, retry_conflicts, system_record
from memorybank.errors import InvalidInput, NotFound
from memorybank.events.types import EVENT_KINDS
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import UNSET, AsyncStore, Record
from memorybank.stores.contract.types import Unset

__all__ = [
    "ACTIVE",
    "PAUSED",
    "WEBHOOK_KIND",
    "WEBHOOK_TENANT",
    "WebhookInfo",
    "Webhooks",
    "info_of",
]

#: The reserved tenant holding every tenant's endpoints.
WEBHOOK_TENANT = "~memorybank-webhooks"
#: The record kind of one endpoint.
WEBHOOK_KIND = "webhook"
ACTIVE = "active"
PAUSED = "paused"
_ID_HEX = 16
_SECRET_PREFIX = "whsec_"
_MIN_SECRET = 16
_MAX_URL = 2048
_MAX_KINDS = 100


@dataclasses.dataclass(frozen=True, slots=True)
class WebhookInfo:
    """An endpoint as an operator sees it (never its secret).

    ``state`` is ``"active"`` or ``"paused"``; ``paused_reason`` says why it was paused
    (by an operator, after ``failures`` consecutive failed deliveries, or because its
    cursor fell out of the feed's retention). ``cursor`` is the feed cursor of the last
    event delivered (or skipped as not wanted); ``delivered`` counts acknowledged
    deliveries; ``last_error`` is the last failure's description.
    """

    id: str
    tenant: str
    url: str
    kinds: tuple[str, ...] | None
    description: str | None
    state: str
    paused_reason: str | None
    paused_at: datetime | None
    failures: int
    last_error: str | None
    last_attempt_at: datetime | None
    last_success_at: datetime | None
    delivered: int
    cursor: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def paused(self) -> bool:
        """Whether deliveries are paused."""
        return self.state == PAUSED


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def info_of(record: Record) -> WebhookInfo:
    """The ``WebhookInfo`` of an endpoint's record."""
    data = record.data
    kinds = data.get("kinds")
    cursor = data.get("cursor")
    return WebhookInfo(
        id=record.id,
        tenant=str(data["tenant"]),
        url=str(data["url"]),
        kinds=None if kinds is None else tuple(str(k) for k in kinds),
        description=data.get("description"),
        state=str(data.get("state", ACTIVE)),
        paused_reason=data.get("paused_reason"),
        paused_at=_time(data.get("paused_at")),
        failures=int(data.get("failures", 0)),
        last_error=data.get("last_error"),
        last_attempt_at=_time(data.get("last_attempt_at")),
        last_success_at=_time(data.get("last_success_at")),
        delivered=int(data.get("delivered", 0)),
        cursor=None if cursor is None else str(cursor),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def check_url(url: object) -> str:
    """An endpoint URL: absolute ``http``/``https`` with a host, at most 2048 characters."""
    if not isinstance(url, str) or not url or len(url) > _MAX_URL:
        raise InvalidInput(
            f"url must be an http(s) URL of at most {_MAX_URL} characters", field="url"
        )
    try:
        parsed = urlsplit(url)
        parsed.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise InvalidInput(f"url {url!r} is not a URL", field="url") from None
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or any(c.isspace() for c in url)
    ):
        raise InvalidInput(f"url must be an absolute http(s) URL, got {url!r}", field="url")
    return url


def check_kinds(kinds: object) -> tuple[str, ...] | None:
    """Event kinds an endpoint wants: ``None`` (all) or a non-empty list of names."""
    if kinds is None:
        return None
    if isinstance(kinds, str) or not isinstance(kinds, Sequence) or not kinds:
        raise InvalidInput("kinds must be null (every kind) or a non-empty list", field="kinds")
    if len(kinds) > _MAX_KINDS:
        raise InvalidInput(f"at most {_MAX_KINDS} kinds", field="kinds")
    unknown = [k for k in kinds if k not in EVENT_KINDS]
    if unknown:
        raise InvalidInput(
            f"unknown event kind {unknown[0]!r}; one of {', '.join(sorted(EVENT_KINDS))}",
            field="kinds",
        )
    return tuple(dict.fromkeys(str(k) for k in kinds))


def _check_secret(secret: object) -> str:
    if not isinstance(secret, str) or len(secret) < _MIN_SECRET or len(secret) > 1000:
        raise InvalidInput(
            f"secret must be a string of {_MIN_SECRET} to 1000 characters", field="secret"
        )
    return secret


class Webhooks:
    """The webhook endpoints kept in ``store`` (any memorybank store; the caller owns it).

    Args:
        store: the store whose tenants' events are delivered.
        clock: returns the current time (timezone-aware); inject for tests.
    """

    def __init__(self, store: AsyncStore, *, clock: Callable[[], datetime] | None = None) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))

    async def create(
        self,
        tenant: str,
        url: str,
        *,
        kinds: Sequence[str] | None = None,
        secret: str | None = None,
        description: str | None = None,
        start: Literal["now", "beginning"] = "now",
    ) -> tuple[WebhookInfo, str]:
        """Register an endpoint of ``tenant``: its info and its signing secret (generated
        when not given; returned this once).

        ``kinds``: the event kinds to deliver (``None``: every kind). ``start``:
        ``"now"`` delivers the events written from now on; ``"beginning"`` also those
        the feed still keeps from before.
        """
        tenant = v.check_tenant(tenant)
        url = check_url(url)
        wanted = check_kinds(kinds)
        secret = (
            _SECRET_PREFIX + secrets.token_urlsafe(32) if secret is None else _check_secret(secret)
        )
        if description is not None:
            description = v.check_text(description, "description", max_chars=v.MAX_LABEL_CHARS)
        if start not in ("now", "beginning"):
            raise InvalidInput("start must be 'now' or 'beginning'", field="start")
        now = v.check_time(self._clock(), "clock()")

        async def step() -> WebhookInfo:
            webhook_id = "wh_" + secrets.token_hex(_ID_HEX // 2)
            data: dict[str, Any] = {
                "tenant": tenant,
                "url": url,
                "kinds": None if wanted is None else list(wanted),
                "secret": secret,
                "description": description,
                "state": ACTIVE,
                "since": now.isoformat() if start == "now" else None,
                "cursor": None,
                "failures": 0,
                "delivered": 0,
            }
            record = system_record(WEBHOOK_KIND, webhook_id, data, now, key=tenant)
            await put_new(self._store, WEBHOOK_TENANT, record)
            return info_of(record)

        return await retry_conflicts(step, "a new webhook id"), secret

    async def _record(self, webhook_id: str, tenant: str | None) -> Record:
        record = await self._store.record_get(
            WEBHOOK_TENANT, WEBHOOK_KIND, v.check_id(webhook_id, "webhook_id")
        )
        if record is None or (tenant is not None and record.data.get("tenant") != tenant):
            raise NotFound(f"webhook {webhook_id!r} not found")
        return record

    async def get(self, webhook_id: str, *, tenant: str | None = None) -> WebhookInfo:
        """The endpoint ``webhook_id`` (of ``tenant`` when given). ``NotFound`` otherwise."""
        return info_of(await self._record(webhook_id, tenant))

    async def secret(self, webhook_id: str) -> str:
        """The signing secret of ``webhook_id`` (for the delivery workers)."""
        return str((await self._record(webhook_id, None)).data["secret"])

    async def list(
        self, tenant: str | None = None, *, limit: int | None = None
    ) -> list[WebhookInfo]:
        """Endpoints (of ``tenant`` when given), oldest first."""
        records = await self._store.record_list(
            WEBHOOK_TENANT,
            WEBHOOK_KIND,
            key=UNSET if tenant is None else v.check_tenant(tenant),
            limit=v.check_limit(limit, "limit"),
        )
        return [info_of(r) for r in records]

    async def update(
        self,
        webhook_id: str,
        *,
        tenant: str | None = None,
        url: str | None = None,
        kinds: Sequence[str] | Unset | None = UNSET,
        description: str | Unset | None = UNSET,
        paused: bool | None = None,
    ) -> WebhookInfo:
        """Change an endpoint: its URL, kinds, description, or pause (``paused=True``) or
        resume it (``paused=False``: its failures are reset and delivery goes on from its
        cursor, so nothing is skipped). ``NotFound`` if there is no such endpoint."""
        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = check_url(url)
        if not isinstance(kinds, Unset):
            wanted = check_kinds(kinds)
            changes["kinds"] = None if wanted is None else list(wanted)
        if not isinstance(description, Unset):
            changes["description"] = (
                None
                if description is None
                else v.check_text(description, "description", max_chars=v.MAX_LABEL_CHARS)
            )

        async def step() -> WebhookInfo:
            record = await self._record(webhook_id, tenant)
            now = v.check_time(self._clock(), "clock()")
            data = {**record.data, **changes}
            if paused is True and data.get("state") != PAUSED:
                data.update(
                    state=PAUSED, paused_reason="paused by an operator", paused_at=now.isoformat()
                )
            elif paused is False and data.get("state") == PAUSED:
                data.update(state=ACTIVE, paused_reason=None, paused_at=None, failures=0)
            return info_of(await put_changed(self._store, WEBHOOK_TENANT, record, data, now))

        return await retry_conflicts(step, f"webhook {webhook_id!r}")

    async def delete(self, webhook_id: str, *, tenant: str | None = None) -> WebhookInfo:
        """Remove an endpoint (its worker stops at its next step). ``NotFound`` if absent."""
        record = await self._record(webhook_id, tenant)
        await self._store.record_delete(WEBHOOK_TENANT, WEBHOOK_KIND, [record.id])
        return info_of(record)
