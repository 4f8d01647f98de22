"""Write ``feed_v11.db`` and ``feed_v11.json``: a SQLite change feed as schema 11 kept it
(events keyed by ``(tenant_id, seq)``, every user's event in ``events_user``).

Run with the library of that schema on the path (commit 534701b6), from this
repository's root::

    PYTHONPATH=/path/to/old/src python tests/events/data/make_feed_v11.py

Two tenants, each with users' and shared threads, facts, a deleted entry and a pruned
start (its floor above 0); the JSON holds every tenant's events and each user's, as the
old library listed them (``test_feed_migration.py`` compares today's reads).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

from memorybank import Memory
from memorybank.events.types import Event

HERE = Path(__file__).resolve().parent
USERS = ("ana", "ben")


def _row(event: Event) -> list[object]:
    return [event.cursor, event.kind, event.user_id, event.thread_id, event.item_id]


def main() -> None:
    path = HERE / "feed_v11.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    expected: dict[str, object] = {}
    for tenant, rounds in (("acme", 6), ("beta", 4)):
        with Memory(f"sqlite:///{path}", tenant_id=tenant) as memory:
            memory.events.enable(keep=timedelta(days=7))
            threads = [memory.threads.create(user_id=u) for u in USERS]
            shared = memory.threads.create()
            for i in range(rounds):
                for thread in (*threads, shared):
                    memory.remember(thread.id, "user", f"{tenant} {i}")
            memory.facts.add(content=f"{tenant} likes tea", user_id="ana")
            entry = memory.entries.list(shared.id)[0]
            memory.entries.delete(shared.id, entry.id)
            everything = memory.events.list(limit=1000)
            expected[tenant] = {
                "events": [_row(e) for e in everything],
                "users": {
                    u: [_row(e) for e in memory.scoped(user_id=u).events.list(limit=1000)]
                    for u in USERS
                },
            }
    conn = sqlite3.connect(path, isolation_level=None)
    # a pruned start: cursors below 3 are gone
    conn.execute("DELETE FROM memorybank_events WHERE tenant_id = 'acme' AND seq <= 2")
    conn.execute("INSERT INTO memorybank_events_tenants (tenant_id, floor) VALUES ('acme', 2)")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    acme = expected["acme"]
    assert isinstance(acme, dict)
    users = {u: [r for r in rows if int(r[0]) > 2] for u, rows in acme["users"].items()}
    expected["acme"] = {"events": [r for r in acme["events"] if int(r[0]) > 2], "users": users}
    (HERE / "feed_v11.json").write_text(json.dumps(expected) + "\n")


if __name__ == "__main__":
    main()
