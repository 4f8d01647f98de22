"""API keys: created, listed and revoked by an operator, kept hashed in the store itself.

A key is ``mb_<prefix>_<secret>``. ``<prefix>`` (12 hex characters) is the
key's public id and its lookup key; the whole key is hashed with Argon2id
(``argon2-cffi``) and only the hash is stored. Keys live as records of kind
``"api_key"`` in the reserved tenant ``RESERVED_TENANT``, which no API caller
can name: every tenant the server accepts passes ``rules.validate.check_tenant``,
which refuses names starting with ``~``.

Verifying a key costs an Argon2 check (tens of milliseconds by design) and a
record read. Each process therefore remembers, in memory:

* which secrets verified against which stored hash (for good: a key's hash
  never changes, so Argon2 runs once per key and process);
* which secrets are live, for ``cache_seconds`` (default
  ``DEFAULT_CACHE_SECONDS``): within that time a request is authenticated
  without reading the store. After it, the key's record is read again.

Staleness bound: a revocation made in *this* process (``KeyRing.revoke``, the
admin routes) takes effect on the next request; one made by *another* process
(``memorybank keys revoke``, another worker) takes effect in this process
within ``cache_seconds``. ``cache_seconds=0`` reads the record on every request
(revocation everywhere at once, one more store read per request). Only
successes are trusted from memory: a bad, unknown or revoked key is looked up
again each time and never answered from the cache.

Guessing is bounded, in Argon2 runs rather than in requests (an unknown or
revoked key id costs one record read and no Argon2 at all):

* a wrong secret already tried against a key's current hash is refused
  without running Argon2 again (a bounded memory of recent failures);
* each key id may fail ``FAILURE_BURST`` verifications at once, then one per
  ``FAILURE_REFILL_SECONDS`` (a token bucket; runs in flight count);
* each client (``verify(..., client=)``: the server passes the peer's address)
  may fail ``CLIENT_BURST`` verifications, then one per
  ``CLIENT_REFILL_SECONDS``, across every key id; a client whose secret
  passes Argon2 (a real key, verified for the first time here) gets its whole
  budget back, so a proxy's many clients, or a client that mistyped a key
  once, are not held back for long;
* at most ``ARGON2_PARALLEL`` verifications run at once per process (each
  holds 19 MiB while it runs), so memory stays flat under a flood.

Past a bound ``verify`` raises ``TooManyAttempts`` (the server: 429
``too_many_attempts`` with ``Retry-After``) without running Argon2. Keys that
already verified in this process are unaffected: their secret is recognised
before any bound is consulted. (Behind a proxy every client has the proxy's
address: the per-client bound is then the proxy's, and the per-key bound
still holds.)
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from memorybank.core._async.cas import put_changed, put_new, retry_conflicts, system_record
from memorybank.errors import InvalidInput, NotFound
from memorybank.rules import validate as v
from memorybank.server.errors import ApiError
from memorybank.stores.contract._async.store import UNSET, AsyncStore, Record

__all__ = [
    "ARGON2_PARALLEL",
    "CLIENT_BURST",
    "CLIENT_REFILL_SECONDS",
    "DEFAULT_CACHE_SECONDS",
    "FAILURE_BURST",
    "FAILURE_REFILL_SECONDS",
    "KEY_KIND",
    "RESERVED_TENANT",
    "KeyInfo",
    "KeyRing",
    "TooManyAttempts",
    "parse_key",
]

#: Where API keys are stored (as records of kind ``KEY_KIND``).
RESERVED_TENANT = "~memorybank-server"
KEY_KIND = "api_key"
_PREFIX_HEX = 12  # 48 bits: unique ids; collisions are retried on create
_CACHE_SIZE = 4096
#: How long a verified key is trusted without reading its record (seconds).
DEFAULT_CACHE_SECONDS = 2.0
#: Failed verifications one key id may have at once (then one per ``FAILURE_REFILL_SECONDS``).
FAILURE_BURST = 5
FAILURE_REFILL_SECONDS = 2.0
#: Failed verifications one client may have at once (then one per ``CLIENT_REFILL_SECONDS``).
CLIENT_BURST = 10
CLIENT_REFILL_SECONDS = 1.0
#: Argon2 verifications running at once in one process.
ARGON2_PARALLEL = 2


class TooManyAttempts(ApiError):
    """Too many failed verifications for this key id or from this client: 429
    ``too_many_attempts``, ``Retry-After`` the seconds until one more is allowed."""

    def __init__(self, retry_after: float) -> None:
        seconds = max(1, math.ceil(retry_after))
        super().__init__(
            429,
            "too_many_attempts",
            "too many failed attempts with this key; retry later",
            headers={"Retry-After": str(seconds)},
        )
        self.retry_after = seconds


class _Bucket:
    """A token bucket of failures: ``burst`` at once, one more every ``refill`` seconds."""

    __slots__ = ("inflight", "last", "refill", "tokens")

    def __init__(self, burst: int, refill: float, now: float) -> None:
        self.tokens = float(burst)
        self.refill = refill
        self.last = now
        self.inflight = 0

    def _update(self, now: float, burst: int) -> None:
        self.tokens = min(float(burst), self.tokens + (now - self.last) / self.refill)
        self.last = now

    def wait(self, now: float, burst: int, *, count_inflight: bool) -> float:
        """Seconds until a verification may run (``0``: now)."""
        self._update(now, burst)
        free = self.tokens - (self.inflight if count_inflight else 0)
        return 0.0 if free >= 1 else (1 - free) * self.refill


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
        cache_seconds: how long a verified key is trusted without reading its
            record again: the longest a revocation made by another process
            goes unseen here (``0``: read on every request).
        monotonic: returns seconds on a clock that never goes back; inject for tests.
    """

    def __init__(
        self,
        store: AsyncStore,
        *,
        clock: Callable[[], datetime] | None = None,
        hasher: PasswordHasher | None = None,
        cache_seconds: float = DEFAULT_CACHE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not cache_seconds >= 0:
            raise InvalidInput("cache_seconds must be >= 0", field="cache_seconds")
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self._hasher = hasher or PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
        self._cache_seconds = float(cache_seconds)
        self._monotonic = monotonic
        # (key id, stored hash) -> sha256 of the secret that verified against it
        self._verified: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        # sha256 of a live secret -> (its key, when this process stops trusting it)
        self._live: OrderedDict[bytes, tuple[KeyInfo, float]] = OrderedDict()
        # Bumped by every revocation here: a verify that read the record before
        # a revocation of this process does not put its (stale) answer in ``_live``.
        self._generation = 0
        # (key id, stored hash, sha256 of a secret) that failed Argon2: refused again for free
        self._failed: OrderedDict[tuple[str, str, bytes], None] = OrderedDict()
        self._by_key: OrderedDict[str, _Bucket] = OrderedDict()
        self._by_client: OrderedDict[str, _Bucket] = OrderedDict()
        self._argon2 = asyncio.Semaphore(ARGON2_PARALLEL)
        # Verifications running now, by (key id, stored hash, fingerprint): the same
        # secret sent by several requests at once runs Argon2 once.
        self._running: dict[tuple[str, str, bytes], asyncio.Future[bool]] = {}
        #: Argon2 verifications run by this ring (successes and failures).
        self.verifications = 0

    async def create(self, tenant: str, label: str | None = None) -> tuple[KeyInfo, str]:
        """A new key for ``tenant``: its info and the secret (shown once, never stored)."""
        tenant = v.check_tenant(tenant)
        if label is not None:
            label = v.check_text(label, "label", max_chars=v.MAX_LABEL_CHARS)
        now = v.check_time(self._clock(), "clock()")

        async def step() -> tuple[KeyInfo, str]:
            prefix = secrets.token_hex(_PREFIX_HEX // 2)
            secret = f"mb_{prefix}_{secrets.token_urlsafe(32)}"
            digest = await asyncio.to_thread(self._hasher.hash, secret)
            data: dict[str, Any] = {"tenant": tenant, "label": label, "hash": digest}
            # Guarded on "absent": a prefix drawn twice raises Conflict and is drawn anew.
            record = system_record(KEY_KIND, prefix, data, now, key=tenant)
            await put_new(self._store, RESERVED_TENANT, record)
            return _info(record), secret

        return await retry_conflicts(step, "a new key id")

    async def verify(self, secret: str, *, client: str | None = None) -> KeyInfo | None:
        """The key's info if ``secret`` is a live (not revoked) key, else ``None``.

        A key verified less than ``cache_seconds`` ago is answered from memory
        (see the module's docstring for the staleness bound). ``client`` (the
        caller's address) is what the per-client bound counts; past a bound,
        ``TooManyAttempts`` is raised without running Argon2."""
        prefix = parse_key(secret)
        if prefix is None:
            return None
        fingerprint = hashlib.sha256(secret.encode()).digest()
        live = self._live.get(fingerprint)
        if live is not None:
            if self._monotonic() < live[1]:
                return live[0]
            del self._live[fingerprint]
        generation = self._generation
        record = await self._store.record_get(RESERVED_TENANT, KEY_KIND, prefix)
        if record is None or record.data.get("revoked_at") is not None:
            return None
        stored = str(record.data.get("hash", ""))
        cache_key = (prefix, stored)
        known = self._verified.get(cache_key)
        if known is not None and hmac.compare_digest(known, fingerprint):
            self._verified.move_to_end(cache_key)
        elif not await self._argon2_verifies(prefix, stored, secret, fingerprint, client):
            return None
        info = _info(record)
        if self._cache_seconds > 0 and generation == self._generation:
            _remember(self._live, fingerprint, (info, self._monotonic() + self._cache_seconds))
        return info

    async def _argon2_verifies(
        self, prefix: str, stored: str, secret: str, fingerprint: bytes, client: str | None
    ) -> bool:
        """Run Argon2 within the bounds of the module's docstring; remember the outcome."""
        failed_key = (prefix, stored, fingerprint)
        if failed_key in self._failed:
            self._failed.move_to_end(failed_key)
            return False
        running = self._running.get(failed_key)
        if running is not None:
            return await asyncio.shield(running)
        now = self._monotonic()
        by_key = _bucket(self._by_key, prefix, FAILURE_BURST, FAILURE_REFILL_SECONDS, now)
        by_client = (
            None
            if client is None
            else _bucket(self._by_client, client, CLIENT_BURST, CLIENT_REFILL_SECONDS, now)
        )
        wait = by_key.wait(now, FAILURE_BURST, count_inflight=True)
        if by_client is not None:
            wait = max(wait, by_client.wait(now, CLIENT_BURST, count_inflight=False))
        if wait > 0:
            raise TooManyAttempts(wait)
        outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._running[failed_key] = outcome
        by_key.inflight += 1
        try:
            async with self._argon2:
                self.verifications += 1
                await asyncio.to_thread(self._hasher.verify, stored, secret)
        except (VerificationError, InvalidHashError):
            for bucket in (by_key, by_client):
                if bucket is not None:
                    bucket.tokens -= 1
            _remember(self._failed, failed_key, None)
            outcome.set_result(False)
            return False
        except Exception as error:  # the hasher itself failed: so do the waiters
            outcome.set_exception(error)
            outcome.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        except BaseException:  # cancelled (the client went away): waiters are too
            outcome.cancel()
            raise
        finally:
            by_key.inflight -= 1
            del self._running[failed_key]
        if by_client is not None:
            by_client.tokens = float(CLIENT_BURST)
        _remember(self._verified, (prefix, stored), fingerprint)
        outcome.set_result(True)
        return True

    def forget(self, key_id: str) -> None:
        """Stop trusting key ``key_id`` from memory (its next use reads the store)."""
        self._generation += 1
        for fingerprint, (info, _) in list(self._live.items()):
            if info.id == key_id:
                del self._live[fingerprint]

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
            key=UNSET if tenant is None else v.check_tenant(tenant),
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
            data = {**record.data, "revoked_at": now.isoformat()}
            return _info(await put_changed(self._store, RESERVED_TENANT, record, data, now))

        try:
            return await retry_conflicts(step, f"key {key_id!r}")
        finally:
            self.forget(key_id)


def _bucket(
    buckets: OrderedDict[str, _Bucket], name: str, burst: int, refill: float, now: float
) -> _Bucket:
    """The bucket of ``name`` in an LRU of at most ``_CACHE_SIZE`` (a new one is full)."""
    bucket = buckets.get(name)
    if bucket is None:
        bucket = _Bucket(burst, refill, now)
        _remember(buckets, name, bucket)
    else:
        buckets.move_to_end(name)
    return bucket


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    """Put ``key`` in an LRU ``cache`` of at most ``_CACHE_SIZE`` entries."""
    cache[key] = value
    cache.move_to_end(key)
    if len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
