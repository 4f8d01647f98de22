"""A server that refuses the store: a typed error at once, its reason kept, nothing on stderr.

Every case runs against a real listener (or a real closed port) of the suite's
own servers. "At once" is checked by what the error is, not by a clock: a
PostgreSQL pool that retried would end in a ``PoolTimeout``; here the cause is
the driver's own connection error, so no pool was waiting on it. A rejected
login (bad password, unknown database or role) is ``ConfigurationError``; a
refused or unreachable server is ``StoreUnavailable``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pymysql
import pytest
import redis

from memorybank import AsyncMemory, ConfigurationError, Memory, StoreUnavailable
from memorybank.errors import MemoryBankError
from memorybank.stores.mysql._async import AsyncMySQLStore
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from memorybank.stores.redis._async import AsyncRedisStore
from tests.conftest import require_server
from tests.reliability.conftest import OwnServer, spare_port

pytestmark = pytest.mark.server


def _with(url: str, *, user: str | None = None, password: str | None = None, path: str = "") -> str:
    """``url`` with another user, password or path (database)."""
    parts = urlsplit(url)
    host = f"{parts.hostname}:{parts.port}"
    name = parts.username if user is None else user
    secret = parts.password if password is None else password
    auth = f"{name}:{secret}@" if secret else (f"{name}@" if name else "")
    return urlunsplit((parts.scheme, auth + host, path or parts.path, parts.query, ""))


async def _refusal(memory: AsyncMemory, kind: type[MemoryBankError]) -> MemoryBankError:
    """The error two calls raise (both the same: nothing sticks or changes between them)."""
    errors = []
    for _ in range(2):
        with pytest.raises(kind) as info:
            await memory.threads.get("t1")
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1]) and str(errors[0]) == str(errors[1])
    return errors[0]


# -- PostgreSQL ----------------------------------------------------------------


async def test_postgres_closed_port_fails_at_once_with_the_refusal(
    capfd: pytest.CaptureFixture[str],
) -> None:
    store = AsyncPostgresStore.from_url(f"postgresql://postgres@127.0.0.1:{spare_port()}/x")
    error = await _refusal(AsyncMemory(store), StoreUnavailable)
    assert "Connection refused" in str(error)
    assert type(error.__cause__) is psycopg.OperationalError  # the driver's, not a PoolTimeout
    await store.close()
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"password": "wrong"}, 'password authentication failed for user "postgres"'),
        ({"user": "nobody"}, 'password authentication failed for user "nobody"'),
        ({"path": "/nodb"}, 'database "nodb" does not exist'),
    ],
    ids=["bad-password", "unknown-role", "unknown-database"],
)
async def test_postgres_rejected_login_is_a_configuration_error(
    own_postgres: OwnServer,
    change: dict[str, str],
    said: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The server answers, and no retry can change its answer.

    (An unknown role gets the same reply as a bad password over a password
    login: PostgreSQL does not tell a stranger which roles exist.)
    """
    store = AsyncPostgresStore.from_url(_with(own_postgres.url, **change))
    error = await _refusal(AsyncMemory(store), ConfigurationError)
    assert said in str(error)
    assert type(error.__cause__) is psycopg.OperationalError
    await store.close()
    assert capfd.readouterr().err == ""


async def test_postgres_unknown_database_over_trust_is_a_configuration_error() -> None:
    """The role-exists-but-database-does-not answer, where no password hides it."""
    from tests.stores.test_contract_postgres import URL

    try:
        psycopg.connect(URL, connect_timeout=3).close()
    except psycopg.OperationalError as unreachable:
        require_server("PostgreSQL", unreachable)
    store = AsyncPostgresStore.from_url(_with(URL, path="/memorybank_no_such_db"))
    error = await _refusal(AsyncMemory(store), ConfigurationError)
    assert 'database "memorybank_no_such_db" does not exist' in str(error)
    await store.close()


def test_postgres_sync_store_fails_at_once_too(capfd: pytest.CaptureFixture[str]) -> None:
    store = PostgresStore.from_url(f"postgresql://postgres@127.0.0.1:{spare_port()}/x")
    with pytest.raises(StoreUnavailable) as info:
        Memory(store).threads.list()
    assert type(info.value.__cause__) is psycopg.OperationalError
    store.close()
    assert capfd.readouterr().err == ""


async def test_postgres_store_opened_while_the_server_is_down_works_once_it_is_up(
    own_postgres: OwnServer,
) -> None:
    store = AsyncPostgresStore.from_url(own_postgres.url, timeout=3)
    memory = AsyncMemory(store)
    with own_postgres.down():
        error = await _refusal(memory, StoreUnavailable)
        assert "Connection refused" in str(error)
    thread = await memory.threads.create()
    assert await memory.threads.get(thread.id) == thread
    await store.close()


def test_postgres_pool_reconnection_warnings_stay_off_stderr(own_postgres: OwnServer) -> None:
    """psycopg_pool's warnings reach stderr only if the application configures logging.

    Run in a child process: pytest's own log capture would hide a last-resort
    print here. The child uses a store, the server goes away, the child's next
    call waits for the pool (which retries and logs a warning per attempt),
    then the child prints what it got: the store checks the server directly, and the
    message names the server's refusal, the chain ending with the driver's error.
    """
    child = textwrap.dedent(
        f"""
        import sys
        from memorybank import Memory
        from memorybank.stores.postgres._sync import PostgresStore
        store = PostgresStore.from_url({own_postgres.url!r}, timeout=2)
        memory = Memory(store)
        memory.threads.create()
        print("up", flush=True)
        sys.stdin.readline()
        try:
            memory.threads.list()
        except Exception as error:
            cause = error.__cause__
            while cause.__cause__ is not None:
                cause = cause.__cause__
            print(type(error).__name__, type(cause).__name__, "|", error, flush=True)
        store.close()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", child],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONWARNINGS": "error"},
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        assert process.stdout.readline().strip() == "up"
        with own_postgres.down():
            process.stdin.write("go\n")
            process.stdin.flush()
            out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert err == ""
    kind, cause, message = out.split(" ", 2)
    assert (kind, cause) == ("StoreUnavailable", "OperationalError")
    # a lost connection checks the server directly (not the pool's timeout): the
    # message names the server's own refusal
    assert "cannot connect to PostgreSQL" in message and "connection failed" in message
    assert "Connection refused" in message


# -- Redis ---------------------------------------------------------------------


async def test_redis_closed_port_fails_at_once_with_the_refusal(
    capfd: pytest.CaptureFixture[str],
) -> None:
    store = AsyncRedisStore.from_url(f"redis://127.0.0.1:{spare_port()}/0")
    error = await _refusal(AsyncMemory(store), StoreUnavailable)
    assert "Connection refused" in str(error) or "111" in str(error)
    assert isinstance(error.__cause__, redis.exceptions.ConnectionError)
    await store.close()
    assert capfd.readouterr().err == ""


async def test_redis_rejected_password_is_a_configuration_error(own_redis: OwnServer) -> None:
    store = AsyncRedisStore.from_url(_with(own_redis.url, user="", password="wrong"))
    error = await _refusal(AsyncMemory(store), ConfigurationError)
    assert "password" in str(error)
    assert isinstance(error.__cause__, redis.exceptions.AuthenticationError)
    await store.close()


# -- MySQL / MariaDB -------------------------------------------------------------


async def test_mysql_closed_port_fails_at_once_with_the_refusal(
    capfd: pytest.CaptureFixture[str],
) -> None:
    store = AsyncMySQLStore.from_url(f"mysql://root@127.0.0.1:{spare_port()}/test")
    error = await _refusal(AsyncMemory(store), StoreUnavailable)
    assert "Can't connect" in str(error)
    assert isinstance(error.__cause__, pymysql.err.OperationalError)
    await store.close()
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"password": "wrong"}, "Access denied for user 'root'"),
        ({"user": "nobody"}, "Access denied for user 'nobody'"),
        ({"path": "/nodb"}, "Unknown database 'nodb'"),
    ],
    ids=["bad-password", "unknown-user", "unknown-database"],
)
async def test_mysql_rejected_login_is_a_configuration_error(
    own_mariadb: OwnServer, change: dict[str, str], said: str
) -> None:
    store = AsyncMySQLStore.from_url(_with(own_mariadb.url, **change))
    error = await _refusal(AsyncMemory(store), ConfigurationError)
    assert said in str(error)
    assert isinstance(error.__cause__, pymysql.err.OperationalError)
    await store.close()
