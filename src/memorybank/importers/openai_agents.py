"""Import OpenAI Agents SDK sessions: ``SQLiteSession`` and ``SQLAlchemySession`` databases.

``pip install 'memorybank[import-openai-agents]'``. ``source`` is the ``db_path`` a
``SQLiteSession`` was given, or the URL a ``SQLAlchemySession.from_url`` was given
(``sqlite+aiosqlite:///...``, ``postgresql+asyncpg://...``, ``postgresql+psycopg://...``;
read with SQLAlchemy's synchronous driver of the same database). Both keep the SDK's two
tables, ``agent_sessions`` and ``agent_messages`` (other names: ``sessions_table``,
``messages_table``).

Each session becomes the thread of its id (owner ``user_id``, agent ``agent_id``: the SDK
has neither), each stored item one entry, in the session's order, with the item's row time;
the item is kept whole (``Entry.item``), so ``MemorybankSession.get_items()`` returns what
``SQLiteSession.get_items()`` returned. Provenance: the thread's ``metadata["source"]`` is
``{"system": "openai-agents", "id": SESSION}``, each entry's ``{"system": "openai-agents",
"id": ROW_ID, "session": SESSION}``.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorybank.errors import InvalidInput, NotFound
from memorybank.importers.plan import (
    Plan,
    PlannedBranch,
    PlannedEntry,
    PlannedThread,
    as_utc,
    provenance,
    source_id,
)

__all__ = ["SYSTEM", "read"]

SYSTEM = "openai-agents"
#: Tables ``AdvancedSQLiteSession`` adds (its conversation branches and usage): not imported.
_ADVANCED = ("message_structure", "turn_usage")

Row = tuple[Any, ...]


def _sync_url(url: str) -> str:
    """The synchronous SQLAlchemy URL of the database an async one names."""
    scheme, sep, rest = url.partition("://")
    base = scheme.split("+", 1)[0]
    driver = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql"}
    return f"{driver.get(base, scheme)}{sep}{rest}"


def _query(source: str, sql: list[str]) -> tuple[list[list[Row]], list[str]]:
    """The rows of each statement of ``sql`` and the names of the database's tables."""
    if "://" not in source:
        path = Path(source)
        if not path.is_file():
            raise NotFound(f"no SQLiteSession database at {source!r}")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
            return [conn.execute(s).fetchall() for s in sql], tables
    try:
        import sqlalchemy
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "reading a SQLAlchemySession URL needs SQLAlchemy:"
            " pip install 'memorybank[import-openai-agents]'"
        ) from error
    engine = sqlalchemy.create_engine(_sync_url(source))
    try:
        with engine.connect() as conn:
            tables = list(sqlalchemy.inspect(conn).get_table_names())
            return [
                [tuple(r) for r in conn.execute(sqlalchemy.text(s)).fetchall()] for s in sql
            ], tables
    finally:
        engine.dispose()


def read(
    source: str,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
) -> Plan:
    """Read every session of the database at ``source`` (see the module docstring)."""
    for name in (sessions_table, messages_table):
        if not name.replace("_", "").isalnum():
            raise InvalidInput(f"{name!r} is not a table name", field="table")
    (sessions, items), tables = _query(
        source,
        [
            f"SELECT session_id, created_at, updated_at FROM {sessions_table} ORDER BY session_id",
            f"SELECT id, session_id, message_data, created_at FROM {messages_table} ORDER BY id",
        ],
    )
    now = datetime.now(UTC)
    plan = Plan(SYSTEM)
    threads: dict[str, PlannedThread] = {}
    for session, created, updated in sessions:
        created_at = as_utc(created, now)
        threads[session] = PlannedThread(
            id=str(session),
            user_id=user_id,
            agent_id=agent_id,
            title=None,
            metadata={"source": provenance(SYSTEM, str(session))},
            created_at=created_at,
            updated_at=as_utc(updated, created_at),
            branches=[PlannedBranch("main", created_at)],
        )
    orphans = 0
    for row_id, session, data, created in items:
        thread = threads.get(session)
        if thread is None:  # a message row without its session row (no foreign keys on)
            orphans += 1
            continue
        thread.branches[0].entries.append(
            PlannedEntry(
                id=source_id(SYSTEM, str(session), str(row_id)),
                message=json.loads(data),
                created_at=as_utc(created, thread.created_at),
                source=provenance(SYSTEM, str(row_id), session=str(session)),
            )
        )
    plan.threads = list(threads.values())
    plan.skip(
        "items without a session row",
        orphans,
        f"{messages_table} rows whose session is not in {sessions_table}",
    )
    for table in _ADVANCED:
        if table in tables:
            plan.skip(
                f"AdvancedSQLiteSession table {table}",
                1,
                "its branches and usage have no memorybank equivalent; the items are imported",
            )
    return plan
