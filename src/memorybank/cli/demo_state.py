"""What ``memorybank serve --demo`` keeps between starts: one record in the store.

The first start on a store seeds tenant ``default`` (``DEMO_TENANT``: the tenant
``Memory()`` and every CLI command use when none is named, so ``memorybank threads``
after ``make run`` lists the demo; the scripted conversation and the showcase,
``cli.demo``), creates a demo API key and, unless an admin key is
given, makes one up. It saves them in one record of kind ``DEMO_KIND`` in the
server's reserved tenant (``server.keys.RESERVED_TENANT``, which no API caller
can name), next to the API keys' hashes. A later start reads that record and
reuses what is still valid: the same demo key (if it verifies, i.e. it was not
revoked), the same admin key and the same demo thread (if it still exists). So
starting the demo twice adds no key and no thread.

The record holds the two secrets in clear: the demo is a local try-out, and
whoever reads the store can read every tenant's memory anyway. ``--reset-demo``
revokes the saved demo key and seeds a new demo thread and key (earlier data
stays); deleting the SQLite file starts from nothing. A store seeded by an earlier
version, whose demo is in tenant ``demo`` (``LEGACY_DEMO_TENANT``), is seeded again in
``DEMO_TENANT`` with a new demo key (the old key is revoked, its data stays).
"""

from __future__ import annotations

import asyncio
import io
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from memorybank.cli.demo import DemoClock, run_demo, seed_showcase
from memorybank.core._sync.cas import system_record
from memorybank.embeddings.base import Embedder
from memorybank.errors import NotFound
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import DEFAULT_TENANT, Memory
from memorybank.server.keys import RESERVED_TENANT, KeyRing

__all__ = [
    "DEMO_KIND",
    "DEMO_RECORD",
    "DEMO_TENANT",
    "LEGACY_DEMO_TENANT",
    "DemoState",
    "demo_tenant",
    "has_demo",
    "prepare_demo",
]

#: The tenant the demo seeds and its key acts in: the default tenant of ``Memory()`` and
#: of every CLI command, so the CLI reads the demo of ``make run`` with no ``--tenant``.
DEMO_TENANT = DEFAULT_TENANT
#: Where ``serve --demo`` seeded its demo before it used ``DEMO_TENANT`` (a saved state
#: without a ``tenant`` field).
LEGACY_DEMO_TENANT = "demo"
#: Kind and id of the saved demo state (in the reserved tenant).
DEMO_KIND = "serve_demo"
DEMO_RECORD = "demo"
#: The label of the demo API key (``memorybank keys list``).
DEMO_KEY_LABEL = "make run"


@dataclass(frozen=True)
class DemoState:
    """What the banner prints: the keys, the demo thread, and whether they were reused."""

    admin_key: str
    demo_key: str
    thread_id: str
    reused: bool


def _keyring(url: str | None, call: Any) -> Any:
    """Run ``call(KeyRing)`` on the store at ``url`` (opened and closed here)."""

    async def run() -> Any:
        async with AsyncMemory(url) as other:
            return await call(KeyRing(other.store))

    return asyncio.run(run())


def demo_tenant(store: Any) -> str | None:
    """The tenant where ``memorybank serve --demo`` seeded the (sync) ``store``'s demo,
    ``None`` when it never did."""
    saved = store.record_get(RESERVED_TENANT, DEMO_KIND, DEMO_RECORD)
    if saved is None:
        return None
    return str(saved.data.get("tenant", LEGACY_DEMO_TENANT))


def has_demo(store: Any) -> bool:
    """Whether ``memorybank serve --demo`` seeded a demo in the (sync) ``store``."""
    return demo_tenant(store) is not None


def prepare_demo(
    url: str | None,
    embedder: Embedder | None,
    *,
    admin_key: str | None,
    reset: bool = False,
) -> DemoState:
    """Seed (first start) or reuse (later starts) the demo on the store at ``url``."""
    clock = DemoClock()
    with Memory(url, clock=clock, tenant_id=DEMO_TENANT, embedder=embedder) as memory:
        saved = memory.store.record_get(RESERVED_TENANT, DEMO_KIND, DEMO_RECORD)
        data: dict[str, Any] = dict(saved.data) if saved is not None else {}
        moved = saved is not None and data.get("tenant", LEGACY_DEMO_TENANT) != DEMO_TENANT
        reused = saved is not None and not reset and not moved
        if reset or moved:  # a new thread and key (a moved demo's key acts in its old tenant)
            if data.get("key_id"):
                try:
                    _keyring(url, lambda ring: ring.revoke(data["key_id"]))
                except NotFound:
                    pass
            data = {"admin_key": data.get("admin_key")}
        thread_id = data.get("thread_id")
        if thread_id is None or memory.threads.get(thread_id) is None:
            thread_id = run_demo(memory, Console(file=io.StringIO()), clock=clock)
            seed_showcase(memory, thread_id, clock=clock)  # every inspector page has data
            reused = False
        key: str | None = data.get("demo_key")
        info = None if key is None else _keyring(url, lambda ring: ring.verify(key))
        if key is None or info is None or info.tenant != DEMO_TENANT:
            info, key = _keyring(url, lambda ring: ring.create(DEMO_TENANT, DEMO_KEY_LABEL))
            data["key_id"] = info.id
            reused = False
        admin = admin_key or data.get("admin_key") or f"admin-{secrets.token_urlsafe(24)}"
        fresh = {
            "tenant": DEMO_TENANT,
            "thread_id": thread_id,
            "demo_key": key,
            "key_id": data["key_id"],
            # A given admin key ($MEMORYBANK_ADMIN_KEY, --admin-key) is the operator's:
            # not saved. A made-up one is, so the next start prints the same.
            "admin_key": data.get("admin_key") if admin_key else admin,
        }
        if fresh != data:
            now = datetime.now(UTC)
            first = None if saved is None else saved.created_at
            record = system_record(DEMO_KIND, DEMO_RECORD, fresh, now, created_at=first)
            memory.store.record_put(RESERVED_TENANT, [record])
    return DemoState(admin_key=admin, demo_key=key, thread_id=thread_id, reused=reused)
