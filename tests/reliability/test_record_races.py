"""Real races on every store: threads hammering one fact, one core fact, one snapshot.

Each worker thread opens a store of its own (its own connection or pool, as a
second process would; the in-memory store is shared, it lives in one process),
and the workers start together behind a barrier. What must hold: no acknowledged
fact version vanishes or is written twice, every core-fact ``set`` is in the
history with the last writer's value current, and of two users saving the same
new snapshot exactly one owns it while the other gets ``ThreadForbidden``.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from memorybank import Memory
from memorybank.errors import ThreadForbidden
from memorybank.memory._sync.core_facts import CoreFacts
from memorybank.stores import InMemoryStore, SQLiteStore
from memorybank.stores.contract._sync.store import Store
from tests.conftest import require_server

T = TypeVar("T")

STORES = ["memory", "sqlite", "postgres", "redis", "mysql"]
ROUNDS = 50


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _postgres(prefix: str) -> Callable[[], Store]:
    import psycopg

    from memorybank.stores.postgres._sync import PostgresStore
    from tests.stores.test_contract_postgres import URL

    try:
        with psycopg.connect(URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        require_server("PostgreSQL", error)
    return lambda: PostgresStore.from_url(URL, prefix=prefix, pool_size=2, timeout=10)


def _redis(prefix: str) -> Callable[[], Store]:
    import redis

    from memorybank.stores.redis._sync import RedisStore
    from tests.stores.test_contract_redis import REDIS_URL

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as error:
        require_server("redis", error)
    finally:
        client.close()
    return lambda: RedisStore.from_url(REDIS_URL, prefix=f"mbtest:{prefix}:", timeout=10)


def _mysql(prefix: str) -> Callable[[], Store]:
    import pymysql

    from memorybank.stores.mysql._sync import MySQLStore
    from tests.stores.test_contract_mysql import URL, connect

    try:
        connect().close()
    except pymysql.err.Error as error:
        require_server("MySQL", error)
    return lambda: MySQLStore.from_url(URL, prefix=prefix, pool_size=2, timeout=10)


def _drop(kind: str, prefix: str) -> None:
    if kind == "postgres":
        from tests.stores.test_contract_postgres import URL, drop_tables

        drop_tables(URL, prefix)
    elif kind == "redis":
        from tests.stores.test_contract_redis import REDIS_URL, drop_prefix

        drop_prefix(REDIS_URL, f"mbtest:{prefix}:")
    elif kind == "mysql":
        from tests.stores.test_contract_mysql import drop_tables as drop_mysql

        drop_mysql(prefix)


@pytest.fixture(params=STORES)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens a store on the test's backend; every call is a new client of the same data."""
    kind: str = request.param
    prefix = f"r{uuid.uuid4().hex[:10]}_"
    opened: list[Store] = []
    if kind == "memory":
        shared = InMemoryStore()
        make: Callable[[], Store] = lambda: shared  # noqa: E731
    elif kind == "sqlite":
        path = tmp_path / "races.db"
        make = lambda: SQLiteStore(path)  # noqa: E731
    else:
        request.applymarker(pytest.mark.server)
        make = {"postgres": _postgres, "redis": _redis, "mysql": _mysql}[kind](prefix)

    def opener() -> Store:
        store = make()
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
    _drop(kind, prefix)


def _race(workers: list[Callable[[], T]]) -> list[T | BaseException]:
    """Run the workers on threads started together; each one's result or exception."""
    barrier = threading.Barrier(len(workers))
    results: list[T | BaseException] = [RuntimeError("did not finish")] * len(workers)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = workers[i]()
        except BaseException as error:  # reported to the test, which asserts on it
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    return results


def _memories(open_store: Callable[[], Store], n: int = 2) -> list[Memory]:
    return [Memory(open_store()) for _ in range(n)]


def _ok(results: list[Any]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors


def test_concurrent_supersedes_keep_every_version(open_store: Callable[[], Store]) -> None:
    a, b = _memories(open_store)
    fact = a.facts.add(agent_id="agent", content="v0")

    def writer(memory: Memory, name: str) -> None:
        for i in range(ROUNDS):
            memory.facts.supersede(fact.id, f"{name}{i}")

    _ok(_race([lambda: writer(a, "a"), lambda: writer(b, "b")]))
    history = a.facts.history(fact.id)
    assert [f.version for f in history] == list(range(1, 2 * ROUNDS + 2))
    contents = [f.content for f in history]
    assert contents[0] == "v0"
    assert sorted(contents[1:]) == sorted(f"{n}{i}" for n in "ab" for i in range(ROUNDS))
    # Each writer's values appear in the order it wrote them.
    for name in "ab":
        mine = [c for c in contents if c.startswith(name)]
        assert mine == [f"{name}{i}" for i in range(ROUNDS)]


def test_supersede_and_in_place_update_lose_nothing(open_store: Callable[[], Store]) -> None:
    a, b = _memories(open_store)
    fact = a.facts.add(agent_id="agent", content="v0", metadata={"n": -1})

    def superseder() -> None:
        for i in range(ROUNDS):
            a.facts.supersede(fact.id, f"s{i}")

    def corrector() -> None:
        for i in range(ROUNDS):
            b.facts.update(fact.id, metadata={"n": i})

    _ok(_race([superseder, corrector]))
    history = a.facts.history(fact.id)
    assert [f.version for f in history] == list(range(1, ROUNDS + 2))
    assert [f.content for f in history] == ["v0", *(f"s{i}" for i in range(ROUNDS))]
    current = history[-1]
    # Neither writer overwrote the other's last change.
    assert current.content == f"s{ROUNDS - 1}"
    assert current.metadata == {"n": ROUNDS - 1}


def test_concurrent_core_fact_sets_all_reach_the_history(
    open_store: Callable[[], Store],
) -> None:
    user = _id("u")
    a, b = (CoreFacts(memory=m, user_id=user) for m in _memories(open_store))

    def writer(facts: CoreFacts, name: str) -> None:
        for i in range(ROUNDS):
            facts.set("city", f"{name}{i}")

    _ok(_race([lambda: writer(a, "a"), lambda: writer(b, "b")]))
    history = [value for value, _ in a.history("city")]
    assert sorted(history) == sorted(f"{n}{i}" for n in "ab" for i in range(ROUNDS))
    for name in "ab":
        assert [v for v in history if v.startswith(name)] == [f"{name}{i}" for i in range(ROUNDS)]
    # The current value is the last one written, and the history ends with it.
    assert a.get("city") == history[-1]


def test_two_users_saving_one_new_snapshot_exactly_one_wins(
    open_store: Callable[[], Store],
) -> None:
    alice, bob = _memories(open_store)
    runs = [_id("run") for _ in range(ROUNDS)]
    outcomes: dict[str, list[str]] = {"alice": [], "bob": []}
    barrier = threading.Barrier(2)

    def saver(memory: Memory, user: str) -> None:
        for run in runs:
            barrier.wait()
            try:
                memory.snapshots.save(run, {"by": user}, user_id=user)
                outcomes[user].append("won")
            except ThreadForbidden:
                outcomes[user].append("forbidden")

    _ok(_race([lambda: saver(alice, "alice"), lambda: saver(bob, "bob")]))
    for i, run in enumerate(runs):
        results = {outcomes["alice"][i], outcomes["bob"][i]}
        assert results == {"won", "forbidden"}, (run, outcomes["alice"][i], outcomes["bob"][i])
        winner = "alice" if outcomes["alice"][i] == "won" else "bob"
        loser_memory = bob if winner == "alice" else alice
        assert (alice if winner == "alice" else bob).snapshots.load(run, user_id=winner) == {
            "by": winner
        }
        with pytest.raises(ThreadForbidden):
            loser_memory.snapshots.load(run, user_id="bob" if winner == "alice" else "alice")


def test_a_delete_never_removes_a_snapshot_claimed_meanwhile(
    open_store: Callable[[], Store],
) -> None:
    """bob deletes an unowned snapshot while alice claims it: hers always survives."""
    alice, bob = _memories(open_store)
    runs = [_id("run") for _ in range(ROUNDS)]
    for run in runs:
        alice.snapshots.save(run, {"by": None})
    barrier = threading.Barrier(2)

    def claimer() -> None:
        for run in runs:
            barrier.wait()
            alice.snapshots.save(run, {"by": "alice"}, user_id="alice")

    def deleter() -> list[str]:
        outcomes = []
        for run in runs:
            barrier.wait()
            try:
                outcomes.append("deleted" if bob.snapshots.delete(run, user_id="bob") else "none")
            except ThreadForbidden:
                outcomes.append("forbidden")
        return outcomes

    results = _race([claimer, deleter])
    _ok(results)
    for run in runs:
        # Deleted before the claim (then saved again) or refused after it: never lost.
        assert alice.snapshots.load(run, user_id="alice") == {"by": "alice"}
