"""``forget_user`` leaves no trace of the user's words in the SQLite file.

Every kind of user-owned data gets words nobody else uses (entries, facts and a
fact's earlier version, documents, summaries, snapshots, core facts and their
history, graph entities and relations, working memory); another user gets the same kinds with
words of her own. After ``forget_user`` and ``close``, the raw bytes of the
database (and of its ``-wal``/``-shm`` files, if any are left) are searched
for every word: the
forgotten user's appear zero times, the other user's still do (the scan finds
what is there). The words end in a digit, so the porter stemmer indexes them
unchanged and a surviving index term would be found too.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from memorybank import AsyncMemory
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.stores.sqlite._async import AsyncSQLiteStore


def _words(tag: str, n: int) -> list[str]:
    return [f"{tag}{uuid.uuid4().hex[:10]}{i % 10}" for i in range(n)]


WORDS = 30  # two per kind (see ``_fill``)


async def _fill(memory: AsyncMemory, user: str, words: list[str]) -> list[str]:
    """One of each user-owned kind, each with two of ``words`` (all 30 are used; graph
    entities carry one in their name, two in an observation; a relation two in its label).

    Returns the words still stored afterwards: all but the two of the fact's
    first content, which ``facts.update`` replaced (and the store overwrote).
    """
    w = iter(words)

    def text() -> str:
        return f"note {next(w)} and {next(w)}."

    thread = await memory.threads.create(user_id=user, title=text())
    long_text = text() + " filler" * 3000  # spills into overflow pages, freed whole
    await memory.entries.add_many(
        thread.id,
        [{"role": "user", "content": long_text}, {"role": "assistant", "content": text()}],
    )
    fact = await memory.facts.add(agent_id="a1", user_id=user, content=text())
    await memory.facts.update(fact.id, content=text())
    await memory.documents.add(text(), user_id=user)
    await memory.summaries.add(agent_id="a1", user_id=user, content=text())
    # Words at the end of a big value lie on its last overflow page, freed whole.
    await memory.snapshots.save(f"run-{user}", {"pad": "x" * 100_000, "plan": text()}, user_id=user)
    core = AsyncCoreFacts(memory=memory, user_id=user)
    await core.set("city", text())
    await core.set("city", text())  # the first value stays in the key's history
    graph = memory.graph
    entity = await graph.add_entity(next(w), user_id=user, observations=[text()])
    other = await graph.add_entity(next(w), user_id=user, type="place")
    await graph.add_relation(entity.id, "lives_in", other.id, user_id=user, label=text())
    # working memory of a run she opened (scoped, and named on the root handle)
    await memory.scoped(user_id=user, agent_id="a1").working(f"w-{user}").set("plan", text())
    await memory.working(f"w2-{user}", user_id=user).set("pad", "y" * 50_000 + text())
    return words[:6] + words[8:]


def _occurrences(path: Path, words: list[str]) -> dict[str, int]:
    """How often each word's UTF-8 bytes occur in the database and its side files."""
    blobs = [
        candidate.read_bytes()
        for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal"))
        if candidate.exists()
    ]
    return {word: sum(blob.count(word.encode()) for blob in blobs) for word in words}


async def test_forget_user_leaves_none_of_her_words_in_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "forget.db"
    alice = _words("alicew", WORDS)
    bob = _words("bobw", WORDS)
    memory = AsyncMemory(AsyncSQLiteStore(path))
    await _fill(memory, "alice", alice)
    bob = await _fill(memory, "bob", bob)
    # Her words were on disk before, or the scan below proves nothing.
    assert all(count > 0 for count in _occurrences(path, alice).values())
    assert await memory.forget_user("alice") > 0
    # At once, while the store is still open (as a file backup would copy it)...
    assert _occurrences(path, alice) == dict.fromkeys(alice, 0)
    await memory.store.close()
    # ... and after the last connection checkpointed and removed the WAL.

    assert _occurrences(path, alice) == dict.fromkeys(alice, 0)
    assert all(count > 0 for count in _occurrences(path, bob).values())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for table in ("entries_fts", "records_fts"):
            row = conn.execute(
                f"INSERT INTO memorybank_{table} (memorybank_{table}) VALUES ('integrity-check')"
            )
            assert row.fetchall() == []


async def test_forget_user_erases_her_working_memory_and_no_one_elses(tmp_path: Path) -> None:
    memory = AsyncMemory(AsyncSQLiteStore(tmp_path / "w.db"))
    try:
        alice = memory.scoped(user_id="alice", agent_id="a1")
        await alice.working("run").set("k", 1)
        await memory.working("run2", user_id="alice").set("k", 2)
        await memory.scoped(user_id="bob", agent_id="a1").working("run").set("k", 3)
        await memory.working("run").set("k", 4)  # the root's own, no user
        await memory.forget_user("alice")
        assert await alice.working("run").get("k") is None
        assert await memory.working("run2", user_id="alice").get("k") is None
        assert await memory.scoped(user_id="bob", agent_id="a1").working("run").get("k") == 3
        assert await memory.working("run").get("k") == 4
        assert len(await memory.store.working_runs(memory.tenant_id) or []) == 2
    finally:
        await memory.close()
