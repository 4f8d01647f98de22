"""Test helpers for the inspector: a live uvicorn server and the seeded memory.

``live_server(app)`` runs ``app`` with uvicorn in a background thread (its own
event loop) on a socket bound to ``127.0.0.1:0``, and stops it gracefully.
``seed(root)`` writes the memory every inspector test reads.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from memorybank.context._async.sessions import AsyncSessionManager
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server.keys import KeyRing
from memorybank.server.ui._views import PAGE_SIZE

ODD_ID = "odd/id?x=1&y#z %2F"
XSS = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@contextmanager
def live_server(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on a free loopback port; yields its base URL (``http://127.0.0.1:N``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@dataclass
class Seeded:
    tenant: str
    key: str
    other_key: str
    paging_key: str
    revoked_key: str
    order_thread: str
    bob_thread: str
    doomed_thread: str
    xss_thread: str
    fact_id: str
    entity_id: str
    edit_fact_id: str  # a fact and an entity the edit tests change (no other test reads them)
    edit_entity_id: str
    base: str = ""  # the live server's URL, once started
    url: str = ""  # the store's URL


async def seed(root: AsyncMemory, *, paging_threads: int = PAGE_SIZE + 5) -> Seeded:
    """Three tenants' memory and keys, written through the library.

    ``acme`` (``key``): threads of alice (entries with a tool call, a branch),
    bob, carol and nobody, a fact with two versions, a document, a summary,
    core facts (alice's, one set twice, and the tenant-wide set), dave's
    session, two open runs of working memory (one alice's) and two snapshots
    (one alice's), some holding markup;
    ``globex`` (``other_key``): one thread; ``paging`` (``paging_key``):
    ``paging_threads`` threads. ``revoked_key`` is an acme key already revoked.
    """
    tenant, other = f"acme-{uuid.uuid4().hex[:8]}", f"globex-{uuid.uuid4().hex[:8]}"
    ring = KeyRing(root.store)
    _, key = await ring.create(tenant, label="inspector test")
    _, other_key = await ring.create(other)
    paging = f"paging-{uuid.uuid4().hex[:8]}"
    _, paging_key = await ring.create(paging)
    for i in range(paging_threads):
        await root.tenant(paging).threads.create(thread_id=f"p-{i:03d}", title=f"Paged {i}")
    revoked, revoked_key = await ring.create(tenant)
    await ring.revoke(revoked.id)

    acme = root.tenant(tenant)
    order = await acme.threads.create(
        thread_id="t-orders", user_id="alice", agent_id="support", title="Order 1234 refund"
    )
    first = await acme.remember(
        order.id, "user", "My pelican-shaped lamp arrived broken, order 1234"
    )
    await acme.remember(
        order.id,
        "assistant",
        None,
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id": "1234"}'},
            }
        ],
    )
    await acme.remember(order.id, "tool", '{"status": "shipped"}', tool_call_id="call_1")
    await acme.remember(order.id, "assistant", "I have issued a refund for the lamp.")
    await acme.branches.create(order.id, "retry", from_entry=first.id)

    bob = await acme.threads.create(
        thread_id="t-bob", user_id="bob", agent_id="support", title="Bob asks"
    )
    await acme.remember(bob.id, "user", "bob's private question about invoices")
    await acme.threads.create(thread_id="t-carol", user_id="carol", title="Carol")
    await acme.remember("t-carol", "user", "carol wants to be forgotten")
    doomed = await acme.threads.create(thread_id="t-doomed", agent_id="support", title="Doomed")
    await acme.remember(doomed.id, "user", "please delete me")
    await acme.threads.create(thread_id=ODD_ID, title="odd")
    await acme.remember(ODD_ID, "user", "an odd id")
    xss = await acme.threads.create(thread_id="t-xss", agent_id="support", title=XSS)
    await acme.remember(xss.id, "user", XSS)

    fact = await acme.facts.add(
        content="Alice prefers email contact",
        user_id="alice",
        agent_id="support",
        category="preference",
        source="extraction",
        source_entries=[first.id],
    )
    await acme.facts.supersede(
        fact.id, "Alice prefers phone contact", user_id="alice", agent_id="support"
    )
    await acme.documents.add("Refund policy: pelican lamps are refundable within 30 days")
    await acme.summaries.add(content="Alice had a broken lamp", agent_id="support")

    # The graph: Ada works at Initech, in Paris; Bob's private project touches Initech.
    ada = await acme.graph.add_entity("Ada", type="person", observations=["writes compilers"])
    initech = await acme.graph.add_entity("Initech", type="organization")
    paris = await acme.graph.add_entity("Paris", type="location")
    await acme.graph.add_relation(ada.id, "works_at", initech.id)
    await acme.graph.add_relation(initech.id, "located_in", paris.id)
    project = await acme.graph.add_entity("Bob's secret project", user_id="bob")
    await acme.graph.add_relation(project.id, "funded_by", initech.id, user_id="bob")

    editable = await acme.facts.add(
        content="The desk opens at 9", user_id="alice", agent_id="billing", category="hours"
    )
    zed = await acme.graph.add_entity("Zed", type="person", aliases=["Z"], observations=["tall"])

    # Core facts, a session, working memory and snapshots (markup in some values).
    alice_core = AsyncCoreFacts(memory=acme, user_id="alice")
    await alice_core.set("name", "Alice")
    await alice_core.set("city", "Lyon")
    await alice_core.set("city", "Paris")
    await alice_core.set("motto", XSS)
    await AsyncCoreFacts(memory=acme).set("company", "Acme support desk")
    await AsyncCoreFacts(memory=acme, user_id="bob").set("secret", "bob's core secret")
    session = await AsyncSessionManager(acme).get_or_create(
        channel_type="slack", channel_id="C42", user_id="dave", agent_id="support"
    )
    await acme.remember(session.id, "user", "dave says hi on slack")
    await acme.working("run-open").set("plan", ["look up order", XSS])
    await acme.working("run-alice", user_id="alice").set("step", 2)
    await acme.working("run-bob", user_id="bob").set("bob-step", "private")
    await acme.snapshots.save("snap-shared", {"stage": "review", "note": XSS})
    await acme.snapshots.save("snap-alice", {"stage": "draft"}, user_id="alice")
    await acme.snapshots.save("snap-bob", {"stage": "bob-only"}, user_id="bob")

    globex = root.tenant(other)
    await globex.graph.add_entity("Globex doomsday device", type="object")
    await globex.threads.create(thread_id="g-secret", title="Globex plans")
    await globex.remember("g-secret", "user", "globex pelican merger")
    await globex.working("g-run").set("globex-plan", 1)
    await globex.snapshots.save("g-snap", {"globex": True})
    await AsyncCoreFacts(memory=globex).set("globex-core", "globex only")
    return Seeded(
        tenant=tenant,
        key=key,
        other_key=other_key,
        paging_key=paging_key,
        revoked_key=revoked_key,
        order_thread=order.id,
        bob_thread=bob.id,
        doomed_thread=doomed.id,
        xss_thread=xss.id,
        fact_id=fact.id,
        entity_id=ada.id,
        edit_fact_id=editable.id,
        edit_entity_id=zed.id,
    )
