"""Write the legacy-data fixtures: every kind of record, as a release wrote it.

Run with the OLD library on the path (a checkout of the commit whose schema the
fixtures keep), from this repository's root::

    PYTHONPATH=/path/to/old/src python tests/stores/legacy/make_fixtures.py COMMIT

It writes one corpus (``write_corpus``) into a SQLite file and into PostgreSQL,
MySQL/MariaDB and Redis under the prefix ``legacyfx_``, then keeps, in
``tests/stores/legacy/<COMMIT>/``: the SQLite file, the servers' rows as the
servers' own dump tools write them (``pg_dump``, ``mariadb-dump``; Redis as
``DUMP`` payloads), and each store's export (``export.<store>.jsonl``), read
through the old API. ``test_legacy_data.py`` loads them under a fresh prefix,
opens them with today's library (which migrates) and compares today's export.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memorybank import CoreFacts, Memory
from memorybank.dump._sync.portability import export_dump
from memorybank.testing._embedder import SynonymEmbedder

HERE = Path(__file__).resolve().parent
PREFIX = "legacyfx_"
TENANT = "legacy"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PG = "postgresql://postgres@127.0.0.1:5432/test"
MYSQL = "mysql://root@127.0.0.1:3306/test"
REDIS = "redis://127.0.0.1:6379/0"


def _clock() -> Any:
    """Each call 1 ms after the previous: the same times on every store and every run."""
    ticks = iter(range(10**7))
    return lambda: datetime(2026, 11, 1, tzinfo=UTC) + timedelta(milliseconds=next(ticks))


def write_corpus(memory: Memory) -> None:
    """Every kind of record the library writes, with the shapes that stores encode."""
    m = memory.tenant(TENANT)
    ann = m.threads.create(user_id="ann", agent_id="helper", title="Trip", metadata={"k": [1]})
    m.remember(ann.id, "user", "I am flying to Lisbon in May, a window seat please")
    m.remember(ann.id, "assistant", "Noted: Lisbon in May, window seat. Anything else?")
    m.entries.add(
        ann.id,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "book", "arguments": '{"city": "Lisbon"}'},
                }
            ],
        },
    )
    m.entries.add(ann.id, {"role": "tool", "tool_call_id": "call_1", "content": "booked: LX42"})
    m.entries.add_many(
        ann.id,
        [{"role": "user", "content": "Thanks ü 日本 😀"}, {"role": "assistant", "content": "-0.0"}],
        idempotency_key="batch-1",
    )
    first = m.entries.list(ann.id)[1]
    m.branches.create(ann.id, "alt", from_entry=first.id)
    m.entries.add(ann.id, {"role": "user", "content": "Make it Porto"}, branch="alt")
    bob = m.threads.create(user_id="bob", agent_id="helper")
    m.remember(bob.id, "user", "My car is blue and I drink chai")
    shared = m.threads.create(agent_id="helper")
    m.remember(shared.id, "system", "Shared notes, no user")
    fact = m.facts.add(content="Ann prefers window seats", user_id="ann", category="pref")
    m.facts.update(fact.id, content="Ann prefers aisle seats", user_id="ann")
    m.facts.add(content="Bob drives a blue car", user_id="bob", confidence=0.75, source="chat")
    m.facts.add(content="The office opens at 9", agent_id="helper")
    m.documents.add("Lisbon travel guide: trams and pastries", metadata={"lang": "en"})
    m.documents.add("Ann's passport expires 2030", user_id="ann")
    core = CoreFacts(memory=m, user_id="ann")
    core.set("name", "Ann")
    core.set("name", "Ann Lee")
    lisbon = m.graph.add_entity("Lisbon", type="city", aliases=["Lisboa"], user_id="ann")
    person = m.graph.add_entity("Ann", type="person", observations=["likes trams"], user_id="ann")
    m.graph.add_relation(person.id, "plans_to_visit", lisbon.id, user_id="ann")
    m.summaries.add(content="Ann is planning a trip", agent_id="helper", user_id="ann")
    m.summaries.add(content="Shared summary", agent_id="helper", user_id=None)
    m.snapshots.save("run-ann", {"step": 3, "todo": ["pack"]}, user_id="ann")
    m.snapshots.save("run-open", {"step": 1}, user_id=None)
    with m.working("run-1") as wm:
        wm.set("plan", {"a": 1})
        wm.set("unicode", "ü")


def export(memory: Memory) -> list[str]:
    """The tenant's export with vectors, header and trailer left out (they carry times
    and counts of the export itself)."""
    lines = list(export_dump(memory.store, TENANT, now=NOW, vector_model=SynonymEmbedder.model_id))
    return lines[1:-1]


def _stores(out: Path) -> dict[str, Any]:
    """The four stores, the servers' under ``PREFIX`` (the classes, not URLs: a URL's
    ``prefix`` parameter is not read by every store)."""
    from memorybank.stores import MySQLStore, PostgresStore, RedisStore, SQLiteStore

    return {
        "sqlite": SQLiteStore(str(out / "sqlite.db")),
        "postgres": PostgresStore.from_url(PG, prefix=PREFIX),
        "mysql": MySQLStore.from_url(MYSQL, prefix=PREFIX),
        "redis": RedisStore.from_url(REDIS, prefix=PREFIX),
    }


def _sql(command: list[str], sql: str) -> list[str]:
    return subprocess.run(
        [*command, sql], check=True, capture_output=True, text=True
    ).stdout.split()


def _clean() -> None:
    """Leave the shared servers as they were: drop the prefix's tables and keys."""
    import redis

    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-At", "-c"]
    mariadb = ["mariadb", "-h", "127.0.0.1", "-u", "root", "-N", "test", "-e"]
    pg = _sql(psql, f"SELECT tablename FROM pg_tables WHERE starts_with(tablename, '{PREFIX}')")
    if pg:
        _sql(psql, "DROP TABLE " + ", ".join(pg) + " CASCADE")
    my = _sql(mariadb, f"SHOW TABLES LIKE '{PREFIX.replace('_', chr(92) + '_')}%'")
    if my:
        _sql(mariadb, "DROP TABLE " + ", ".join(my))
    client = redis.Redis.from_url(REDIS)
    for key in list(client.scan_iter(match=f"{PREFIX}*")):
        client.delete(key)


def main(commit: str) -> None:
    _clean()
    out = HERE / commit
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, store in _stores(out).items():
        with Memory(store, embedder=SynonymEmbedder(), clock=_clock()) as memory:
            write_corpus(memory)
            (out / f"export.{name}.jsonl").write_text("\n".join(export(memory)) + "\n")
    pg = subprocess.run(
        ["pg_dump", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "--no-owner",
         "--no-privileges", "--inserts", "-t", f"{PREFIX}*"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    (out / "postgres.sql").write_text(pg)
    tables = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-u", "root", "-N", "-e",
         f"SHOW TABLES FROM test LIKE '{PREFIX.replace('_', chr(92) + '_')}%'"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    my = subprocess.run(
        ["mariadb-dump", "-h", "127.0.0.1", "-u", "root", "--skip-comments", "--hex-blob",
         "test", *tables],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    (out / "mysql.sql").write_text(my)
    import redis

    client = redis.Redis.from_url(REDIS)
    keys = sorted(client.scan_iter(match=f"{PREFIX}*"))
    payloads = {k.decode(): (client.dump(k) or b"").hex() for k in keys}
    (out / "redis.json").write_text(json.dumps(payloads, indent=0, sort_keys=True) + "\n")
    _clean()
    print(f"fixtures of {commit} in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
