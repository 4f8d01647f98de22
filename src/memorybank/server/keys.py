"""API keys: created, listed and revoked by an operator, kept hashed in the store itself.

A key is ``mb_<prefix>_<secret>``. ``<prefix>`` (12 hex characters) is the
key's public id and its lookup key; the whole key is hashed with Argon2id
(``argon2-cffi``) and only the hash is stored. Keys live as records of kind
``"api_key"`` in the reserved tenant ``RESERVED_TENANT``, which no API caller
can name: every tenant the server accepts passes ``check_tenant``, which
refuses names starting with ``~``.

Verifying a key is one record read (so a revocation by any process, such as
``memorybank keys revoke``, takes effect on the next request everywhere) plus
an Argon2 check, which is cached per process for keys already verified
against the same stored hash (Argon2 costs tens of milliseconds by design).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from memorybank import _validate as v
from memorybank._async._cas import retry_conflicts
from memorybank._async.stores.base import UNSET, AsyncStore, Record, RecordGuard
from memorybank.errors import InvalidInput, NotFound

__all__ = [
    "KEY_KIND",
    "RESERVED_PREFIX",
    "RESERVED_TENANT",
    "KeyInfo",
    "KeyRing",
    "check_tenant",
    "parse_key",
]

#: Tenant names starting with this are the server's own; no caller can use one.
RESERVED_PREFIX = "~"
#: Where API keys are stored (as records of kind ``KEY_KIND``).
RESERVED_TENANT = "~memorybank-server"
KEY_KIND = "api_key"
_PREFIX_HEX = 12  # 48 bits: unique ids; collisions are retried on create
_CACHE_SIZE = 4096


def check_tenant(tenant: object, field: str = "tenant") -> str:
    """A tenant name a caller may use: an id not starting with ``RESERVED_PREFIX``."""
    name = v.check_id(tenant, field)
    if name.startswith(RESERVED_PREFIX):
        raise InvalidInput(
            f"{field} must not start with {RESERVED_PREFIX!r} (reserved for the server)",
            field=field,
        )
    return name


def parse_key(secret: str) -> str | None:
    """The key id (prefix) of a well-formed key ``mb_<prefix>_<random>``, else ``None``."""
    parts = secret.split("_", 2)
    if len(parts) != 3 or parts[0] != "mb" or not parts[2]:
        return None
    prefix = parts[1]
    if len(prefix) != _PREFIX_HEX or any(c not in "0123456789abcdef" for c in prefix):
        return None
    return prefix


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What is known about a key (never the secret): its id, tenant, label and state."""

    id: str
    tenant: str
    label: str | None
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        """Whether the key was revoked (it authenticates nothing any more)."""
        return self.revoked_at is not None


def _info(record: Record) -> KeyInfo:
    revoked = record.data.get("revoked_at")
    return KeyInfo(
        id=record.id,
        tenant=str(record.data["tenant"]),
        label=record.data.get("label"),
        created_at=record.created_at,
        revoked_at=None if revoked is None else datetime.fromisoformat(revoked),
    )


class KeyRing:
    """The API keys kept in ``store`` (the server's store; the caller keeps owning it).

    Args:
        store: any memorybank store.
        clock: returns the current time (timezone-aware); inject for tests.
        hasher: the Argon2 hasher. Default: Argon2id at OWASP's minimum
            (``t=2, m=19 MiB, p=1``): a key holds 256 random bits, so the hash
            guards a leaked store against nothing a slower one would stop.
    """

    def __init__(
        self,
        store: AsyncStore,
        *,
        clock: Callable[[], datetime] | None = None,
        hasher: PasswordHasher | None = None,
    ) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self._hasher = hasher or PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
        # (key id, stored hash) -> sha256 of the secret that verified against it
        self._verified: OrderedDict[tuple[str, str], bytes] = OrderedDict()

    async def create(self, tenant: str, label: str | None = None) -> tuple[KeyInfo, str]:
        """A new key for ``tenant``: its info and the secret (shown once, never stored)."""
        tenant = check_tenant(tenant)
        if label is not None:
            label = v.check_text(label, "label", max_chars=v.MAX_LABEL_CHARS)
        now = v.check_time(self._clock(), "clock()")

        async def step() -> tuple[KeyInfo, str]:
            prefix = secrets.token_hex(_PREFIX_HEX // 2)
            secret = f"mb_{prefix}_{secrets.token_urlsafe(32)}"
            digest = await asyncio.to_thread(self._hasher.hash, secret)
            data: dict[str, Any] = {"tenant": tenant, "label": label, "hash": digest}
            record = Record(
                kind=KEY_KIND,
                id=prefix,
                agent_id=None,
                user_id=None,
                content="",
                data=data,
                created_at=now,
                updated_at=now,
                key=tenant,
            )
            # Guarded on "absent": a prefix drawn twice raises Conflict and is drawn anew.
            await self._store.record_put(
                RESERVED_TENANT, [record], guard=RecordGuard(KEY_KIND, prefix, None)
            )
            return _info(record), secret

        return await retry_conflicts(step, "a new key id")

    async def verify(self, secret: str) -> KeyInfo | None:
        """The key's info if ``secret`` is a live (not revoked) key, else ``None``."""
        prefix = parse_key(secret)
        if prefix is None:
            return None
        record = await self._store.record_get(RESERVED_TENANT, KEY_KIND, prefix)
        if record is None or record.data.get("revoked_at") is not None:
            return None
        stored = str(record.data.get("hash", ""))
        fingerprint = hashlib.sha256(secret.encode()).digest()
        cache_key = (prefix, stored)
        known = self._verified.get(cache_key)
        if known is not None and hmac.compare_digest(known, fingerprint):
            self._verified.move_to_end(cache_key)
            return _info(record)
        try:
            await asyncio.to_thread(self._hasher.verify, stored, secret)
        except (VerificationError, InvalidHashError):
            return None
        self._verified[cache_key] = fingerprint
        if len(self._verified) > _CACHE_SIZE:
            self._verified.popitem(last=False)
        return _info(record)

    async def get(self, key_id: str) -> KeyInfo | None:
        """The key ``key_id``, or ``None``."""
        record = await self._store.record_get(
            RESERVED_TENANT, KEY_KIND, v.check_id(key_id, "key_id")
        )
        return None if record is None else _info(record)

    async def list(self, tenant: str | None = None, *, limit: int | None = None) -> list[KeyInfo]:
        """Keys (of ``tenant`` when given), oldest first; revoked ones included."""
        records = await self._store.record_list(
            RESERVED_TENANT,
            KEY_KIND,
            key=UNSET if tenant is None else check_tenant(tenant),
            limit=v.check_limit(limit, "limit"),
        )
        return [_info(r) for r in records]

    async def revoke(self, key_id: str) -> KeyInfo:
        """Revoke a key for good (idempotent). ``NotFound`` if there is no such key."""
        key_id = v.check_id(key_id, "key_id")

        async def step() -> KeyInfo:
            record = await self._store.record_get(RESERVED_TENANT, KEY_KIND, key_id)
            if record is None:
                raise NotFound(f"key {key_id!r} not found")
            if record.data.get("revoked_at") is not None:
                return _info(record)
            now = v.check_time(self._clock(), "clock()")
            guard = RecordGuard(KEY_KIND, key_id, record.revision)
            record.data = {**record.data, "revoked_at": now.isoformat()}
            record.revision += 1
            record.updated_at = now
            await self._store.record_put(RESERVED_TENANT, [record], guard=guard)
            return _info(record)

        return await retry_conflicts(step, f"key {key_id!r}")
