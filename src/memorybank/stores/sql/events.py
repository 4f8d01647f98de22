"""The change feed's SQL, for SQLite, PostgreSQL and MySQL/MariaDB (I/O-free): tables,
triggers, reads.

Why triggers. An event must commit in the same transaction as its change, on every write
path of the store (appends, forks, compaction, updates, deletes, record puts, imports),
from every process writing the database, and cost nothing while the feed is off. A
trigger on ``threads``, ``entries`` and ``records`` is all three at once: it runs inside
the statement that changes the row, whatever code issued it; enabling the feed creates
the triggers in the database (so every process writing it records from then on) and
disabling drops them (an append then runs exactly the statements it ran before). The
alternative, a statement of the feed beside each write in each store, would touch every
write path of every engine and still miss any path added later.

Order. A cursor is a per-tenant number that is commit-ordered: a reader polling with
``after=c`` never misses an event that commits later with a smaller number.

* SQLite has one writer at a time (``BEGIN IMMEDIATE``): an event's number, one more
  than the tenant's newest, is assigned in commit order already. ``events`` is a rowid
  table; each tenant has a range of rowids (``events_ranges``), an event the rowid
  ``base + number``: the last tenant's events (a database of one tenant: all) are
  appended at the end of the table, about one page more per commit. No delete removes a
  tenant's newest event (``events_prune`` keeps it; ``forget_user`` records its
  ``user.forgotten`` first, also while the feed is off), so a number never comes again.
  The index of users' events is not written by the append: it holds the tenant's
  events up to a mark, moved by a user-scoped read or a prune (``sqlite_list_users``).
* PostgreSQL's sequences are not (two transactions draw 5 and 6; 6 commits first, a
  reader reads 6 and moves past 5 before it commits). Its events take their number from
  the tenant's row of ``events_tenants``, incremented in the writing transaction: the
  row stays locked until that transaction ends, so the next writer of the tenant draws
  the next number only after the previous one committed (or rolled back, leaving the
  number unused). Writers of one tenant serialise on that row while the feed is on.
* MySQL/MariaDB: the same counter row, an InnoDB row locked by the writing transaction
  (``INSERT ... ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + 1)``, the number read
  back with ``LAST_INSERT_ID()`` by the event's insert). Its triggers have no ``UPDATE
  OF`` nor ``WHEN``: an update trigger compares the tracked columns and records only a
  change; a guarded write's placeholder row (revision -1) records nothing.

Each event row names the tenant, its kind, the time, the owner (user, agent) and ids.
Entries have no owner column: their triggers read the thread's. Deleting a thread is one
``thread.deleted``: the deletes of its entries, which find no thread, record nothing. Keep time: the
``keep`` row of ``events_config`` (seconds); ``events_prune`` deletes the tenant's
events older than that in bounded batches and raises the tenant's ``floor`` (the
highest number deleted): a cursor below the floor gets ``CursorExpired``. Enabling a
feed that was off raises every floor above the last number drawn: the changes made while
it was off were not recorded, so every cursor from before is expired too.

``forget_user`` mutes the delete triggers of the tenant (a row of ``events_mute``
inside its transaction, seen by no other), deletes the user's events, and records one
``user.forgotten`` event.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memorybank.events.types import GRAPH_CHANGED, RECORD_EVENTS, Event
from memorybank.stores.contract.types import Unset
from memorybank.stores.sql.common import from_us

__all__ = [
    "FEED_FUNCTIONS",
    "GRAPH_KINDS",
    "SQLITE_LISTED",
    "SQLITE_RANGE",
    "TRACKED_KINDS",
    "event_of_row",
    "events_list_query",
    "events_user_index",
    "mysql_disable",
    "mysql_emit",
    "mysql_enable",
    "mysql_tables",
    "postgres_disable",
    "postgres_enable",
    "postgres_tables",
    "sqlite_disable",
    "sqlite_enable",
    "sqlite_list_query",
    "sqlite_list_users",
    "sqlite_newest",
    "sqlite_range",
    "sqlite_ranges",
    "sqlite_tables",
    "sqlite_triggers",
    "sqlite_user_index",
]

#: Record kinds the feed reports, read from the one table of record events.
TRACKED_KINDS = tuple(dict.fromkeys(kind for kind, _ in RECORD_EVENTS))
#: Graph record kinds that make a ``graph.changed`` event (entities and relations; the
#: graph's index records change with them).
GRAPH_KINDS = tuple(k for k in TRACKED_KINDS if RECORD_EVENTS.get((k, "added")) == GRAPH_CHANGED)

_KINDS_SQL = ", ".join(f"'{k}'" for k in TRACKED_KINDS)
_GRAPH_SQL = ", ".join(f"'{k}'" for k in GRAPH_KINDS)
#: A thread's columns whose change is ``thread.updated``. The update triggers name them:
#: an append's bump of ``updated_at`` does not run the trigger at all.
_THREAD_FIELDS = "title, metadata, status, user_id, agent_id, current_branch"
#: An entry's columns whose change is ``entry.updated`` (every column an update may set).
#: On every engine an update that leaves them all as they were records nothing (the
#: memory and Redis stores compare the same values).
_ENTRY_FIELDS = "content, name, tool_calls, tool_call_id, metadata, state, token_count"
_EVENT_COLUMNS = "seq, kind, at, user_id, agent_id, thread_id, item_id, data"
#: The PostgreSQL functions of the feed (names after the prefix).
FEED_FUNCTIONS = ("events_emit", "events_entries", "events_threads", "events_records")
#: The triggers of the feed, per table and operation (names after the prefix).
_TRIGGERS = (
    ("events_entries_ins", "entries"),
    ("events_entries_upd", "entries"),
    ("events_entries_del", "entries"),
    ("events_threads_ins", "threads"),
    ("events_threads_upd", "threads"),
    ("events_threads_del", "threads"),
    ("events_records_ins", "records"),
    ("events_records_upd", "records"),
    ("events_records_del", "records"),
)


def event_of_row(row: Sequence[Any]) -> Event:
    """The ``Event`` of a row of ``events_list_query``."""
    seq, kind, at, user_id, agent_id, thread_id, item_id, data = row
    if isinstance(data, str):
        import json  # start-up: a store that reads history parses no JSON until here

        data = json.loads(data)
    when = at if isinstance(at, datetime) else from_us(at)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return Event(
        cursor=str(seq), id=f"ev-{seq}", kind=kind, at=when.astimezone(UTC), user_id=user_id,
        agent_id=agent_id, thread_id=thread_id, item_id=item_id, data=data or None,
    )  # fmt: skip


def _filters(
    mark: str,
    *,
    kinds: Sequence[str] | None,
    user_id: str | Unset | None,
    agent_id: str | Unset | None,
) -> tuple[str, list[Any]]:
    """The conditions of a read of events (`` AND ...``) and their parameters."""
    where = ""
    params: list[Any] = []
    if kinds is not None:
        where += f" AND kind IN ({', '.join([mark] * len(kinds))})"
        params.extend(kinds)
    if user_id is None:
        where += " AND user_id IS NULL"
    elif not isinstance(user_id, Unset):
        where += f" AND user_id = {mark}"
        params.append(user_id)
    if agent_id is None:
        where += " AND agent_id IS NULL"
    elif not isinstance(agent_id, Unset):
        where += f" AND (agent_id = {mark} OR agent_id IS NULL)"
        params.append(agent_id)
    return where, params


def events_list_query(
    p: str,
    mark: str,
    tenant: str,
    after: int,
    *,
    kinds: Sequence[str] | None,
    user_id: str | Unset | None,
    agent_id: str | Unset | None,
    limit: int,
) -> tuple[str, list[Any]]:
    """The read of a tenant's events after the number ``after`` (PostgreSQL, MySQL):
    ``(sql, params)``. ``user_id``: only that user's (``None``: only events of no user);
    ``agent_id``: only that agent's and those of no agent (``None``: only those of no
    agent)."""
    where, params = _filters(mark, kinds=kinds, user_id=user_id, agent_id=agent_id)
    sql = (
        f"SELECT {_EVENT_COLUMNS} FROM {p}events WHERE tenant_id = {mark} AND seq > {mark}"
        f"{where} ORDER BY seq LIMIT {mark}"
    )
    return sql, [tenant, after, *params, limit]


def events_user_index(p: str) -> str:
    """PostgreSQL's index of users' events: a user-scoped ``list`` reads that user's
    events after the cursor, not every event of the tenant after it. Events of no user
    are left out (an append to a shared thread writes no page of it): the one read of
    those, a handle scoped to no user, reads the tenant's events. (SQLite's holds the
    events up to a mark: ``sqlite_user_index``.)"""
    return (
        f"CREATE INDEX IF NOT EXISTS {p}events_user ON {p}events (tenant_id, user_id, seq)"
        " WHERE user_id IS NOT NULL"
    )


# -- SQLite ------------------------------------------------------------------------------

#: Now as integer microseconds (the store's time columns), in SQL.
_SQLITE_NOW = "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"


#: The numbers of one tenant's events: its events are the rows of ``events`` whose ``pos``
#: (the rowid) is in ``(base, base + SQLITE_RANGE)``, ``pos - base`` the event's number.
SQLITE_RANGE = 1 << 40
#: SQLite's index of users' events holds only the events marked ``listed = 1``: an event
#: is written unmarked (an append writes no page of the index) and marked later in
#: batches, up to the tenant's mark ``events_ranges.listed`` (``sqlite_list_users``).
SQLITE_LISTED = " AND listed = 1"


def sqlite_user_index(p: str) -> str:
    """SQLite's ``events_user``: the users' events up to their tenant's mark (every event
    of a user at or below the mark is in it, none above), by user and ``pos``."""
    return f"CREATE INDEX IF NOT EXISTS {p}events_user ON {p}events (user_id) WHERE listed = 1"


def sqlite_tables(p: str) -> list[str]:
    """The feed's tables (``events``, its index and ``events_ranges`` are made by the
    schema's migrations; the rest on first enable; all kept when disabled).

    ``events`` is a rowid table: an event is appended at the end of its tenant's range
    of rowids, and the last tenant's (a database of one tenant: every event) at the end
    of the table, where SQLite splits a full page by starting a new one (a table keyed by
    ``(tenant_id, seq)`` wrote 1.5 pages per event, this one 1.06)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}events (
            pos INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, kind TEXT NOT NULL,
            at INTEGER NOT NULL, user_id TEXT, agent_id TEXT, thread_id TEXT, item_id TEXT,
            data TEXT, listed INTEGER)""",
        sqlite_user_index(p),
        f"""CREATE TABLE IF NOT EXISTS {p}events_ranges (
            tenant_id TEXT NOT NULL PRIMARY KEY, base INTEGER NOT NULL,
            listed INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID""",
        f"""CREATE TABLE IF NOT EXISTS {p}events_tenants (
            tenant_id TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0,
            floor INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID""",
        f"""CREATE TABLE IF NOT EXISTS {p}events_config (
            name TEXT NOT NULL PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID""",
        f"""CREATE TABLE IF NOT EXISTS {p}events_mute (
            tenant_id TEXT NOT NULL PRIMARY KEY) WITHOUT ROWID""",
    ]


def sqlite_range(p: str, tenant: str) -> str:
    """Give the tenant ``tenant`` (SQL) its range when it has none: the next one up. Run
    where a tenant's first event can come from (a thread's or a record's insert, enable,
    ``user.forgotten``); an entry's or an update's tenant has one already (its thread or
    record was made with the feed on, or was there when it was switched on)."""
    return (
        f"INSERT INTO {p}events_ranges (tenant_id, base) SELECT {tenant},"
        f" COALESCE((SELECT MAX(base) FROM {p}events_ranges), 0) + {SQLITE_RANGE}"
        f" WHERE NOT EXISTS (SELECT 1 FROM {p}events_ranges WHERE tenant_id = {tenant})"
    )


def sqlite_newest(p: str, base: str) -> str:
    """The ``pos`` of the newest event of the range at ``base`` (SQL; ``NULL``: none)."""
    return (
        f"(SELECT x.pos FROM {p}events x WHERE x.pos > {base}"
        f" AND x.pos < {base} + {SQLITE_RANGE} ORDER BY x.pos DESC LIMIT 1)"
    )


def _sqlite_insert(p: str, kind: str, source: str, fields: str, *, ranged: bool = False) -> str:
    """``INSERT INTO events`` of one event made from ``source`` (``new``/``old``): one
    ``VALUES`` row, its owner read by scalar subqueries (an ``INSERT ... SELECT`` over a
    join costs the append about twice as much CPU); ``ranged``: its tenant's range made
    first when it has none."""
    tenant = f"{source}.tenant_id"
    return (
        (f"{sqlite_range(p, tenant)}; " if ranged else "")
        + f"INSERT INTO {p}events (pos, tenant_id, kind, at, user_id, agent_id, thread_id,"
        f" item_id, data) VALUES ({_sqlite_next(p, tenant)}, {tenant},"
        f" {kind}, {_SQLITE_NOW}, {fields});"
    )


def _sqlite_next(p: str, tenant: str) -> str:
    """The ``pos`` of the tenant's next event: one more than its newest (kept by every
    delete), or than its base. (A tenant with no range, which cannot be, would get
    SQLite's next rowid: above every range, read by no tenant.)"""
    return (
        f"(SELECT COALESCE({sqlite_newest(p, 'r.base')}, r.base) + 1"
        f" FROM {p}events_ranges r WHERE r.tenant_id = {tenant})"
    )


def _entry_fields(p: str, src: str) -> str:
    """An entry's event columns: its thread's owner (scalar subqueries), ids, and data
    (``json_object``: SQLite and MariaDB both have it)."""
    owner = f"FROM {p}threads t WHERE t.tenant_id = {src}.tenant_id AND t.id = {src}.thread_id"
    return (
        f"(SELECT t.user_id {owner}), (SELECT t.agent_id {owner}), {src}.thread_id, {src}.id,"
        f" json_object('branch', {src}.branch, 'role', {src}.role)"
    )


def _columns(fields: str) -> list[str]:
    return [c.strip() for c in fields.split(",")]


def _changed(fields: str, operator: str, cast: str = "") -> str:
    """Whether an update changed one of ``fields``, in a trigger's ``WHEN``: SQLite's
    ``IS NOT``, PostgreSQL's ``IS DISTINCT FROM`` (``cast``: its json columns have no
    equality, compared as text)."""
    return " OR ".join(f"old.{c}{cast} {operator} new.{c}{cast}" for c in _columns(fields))


def _thread_fields(src: str) -> str:
    return f"{src}.user_id, {src}.agent_id, {src}.id, NULL, NULL"


def _unmuted(p: str, src: str) -> str:
    return f"NOT EXISTS (SELECT 1 FROM {p}events_mute m WHERE m.tenant_id = {src}.tenant_id)"


def _record_fields(src: str, op: str, key: str = "key") -> str:
    """A record's event columns (``key``: the column of the record's key)."""
    return (
        f"{src}.user_id, {src}.agent_id, NULL,"
        f" CASE WHEN {src}.kind = 'fact_version' THEN {src}.{key} ELSE {src}.id END,"
        f" CASE WHEN {src}.kind = 'fact_version' THEN json_object('version', {src}.id)"
        f" WHEN {src}.kind IN ({_GRAPH_SQL}) THEN json_object('record', {src}.kind, 'op', '{op}')"
        " ELSE NULL END"
    )


def _added_kind(src: str) -> str:
    """The kind of the event of a tracked record's insert."""
    return (
        f"CASE {src}.kind WHEN 'fact' THEN 'fact.added' WHEN 'fact_version' THEN 'fact.superseded'"
        " WHEN 'document' THEN 'document.added' ELSE 'graph.changed' END"
    )


def _deleted_kind(src: str) -> str:
    """The kind of the event of a record's delete (facts, documents, graph)."""
    return (
        f"CASE {src}.kind WHEN 'fact' THEN 'fact.deleted'"
        " WHEN 'document' THEN 'document.deleted' ELSE 'graph.changed' END"
    )


#: Record kinds whose delete is an event.
_DELETED_SQL = f"'fact', 'document', {_GRAPH_SQL}"


def sqlite_enable(p: str) -> list[str]:
    """The statements that turn the feed on (tables exist): every tenant with threads or
    records given its range, every floor raised to the last number drawn (changes while
    off were not recorded), and the triggers."""
    return [
        *sqlite_disable(p),
        *sqlite_ranges(p),
        f"""INSERT INTO {p}events_tenants (tenant_id, floor)
            SELECT tenant_id, newest - base + 1 FROM (
                SELECT r.tenant_id, r.base, {sqlite_newest(p, "r.base")} AS newest
                FROM {p}events_ranges r) WHERE newest IS NOT NULL
            ON CONFLICT (tenant_id) DO UPDATE SET floor = excluded.floor""",
        *sqlite_triggers(p),
    ]


def sqlite_ranges(p: str) -> list[str]:
    """Give every tenant with threads or records its range (``sqlite_range``)."""
    return [
        f"""INSERT INTO {p}events_ranges (tenant_id, base)
            SELECT tenant_id, COALESCE((SELECT MAX(base) FROM {p}events_ranges), 0)
                + {SQLITE_RANGE} * ROW_NUMBER() OVER (ORDER BY tenant_id)
            FROM (SELECT tenant_id FROM {p}threads UNION SELECT tenant_id FROM {p}records)
            WHERE tenant_id NOT IN (SELECT tenant_id FROM {p}events_ranges)"""
    ]


def sqlite_triggers(p: str) -> list[str]:
    """The feed's triggers (its on switch)."""
    deleted = _sqlite_insert(p, _deleted_kind("old"), "old", _record_fields("old", "deleted"))
    added = _sqlite_insert(
        p, _added_kind("new"), "new", _record_fields("new", "added"), ranged=True
    )
    return [
        f"""CREATE TRIGGER {p}events_entries_ins AFTER INSERT ON {p}entries BEGIN
            {_sqlite_insert(p, "'entry.added'", "new", _entry_fields(p, "new"))} END""",
        f"""CREATE TRIGGER {p}events_entries_upd AFTER UPDATE OF {_ENTRY_FIELDS}
            ON {p}entries WHEN {_changed(_ENTRY_FIELDS, "IS NOT")} BEGIN
            {_sqlite_insert(p, "'entry.updated'", "new", _entry_fields(p, "new"))} END""",
        f"""CREATE TRIGGER {p}events_entries_del AFTER DELETE ON {p}entries
            WHEN {_unmuted(p, "old")} AND EXISTS (SELECT 1 FROM {p}threads t
                WHERE t.tenant_id = old.tenant_id AND t.id = old.thread_id) BEGIN
            {_sqlite_insert(p, "'entry.deleted'", "old", _entry_fields(p, "old"))} END""",
        f"""CREATE TRIGGER {p}events_threads_ins AFTER INSERT ON {p}threads BEGIN
            {_sqlite_insert(p, "'thread.created'", "new", _thread_fields("new"), ranged=True)}
            END""",
        f"""CREATE TRIGGER {p}events_threads_upd AFTER UPDATE OF {_THREAD_FIELDS}
            ON {p}threads WHEN {_changed(_THREAD_FIELDS, "IS NOT")} BEGIN
            {_sqlite_insert(p, "'thread.updated'", "new", _thread_fields("new"))}
            END""",
        f"""CREATE TRIGGER {p}events_threads_del AFTER DELETE ON {p}threads
            WHEN {_unmuted(p, "old")} BEGIN
            {_sqlite_insert(p, "'thread.deleted'", "old", _thread_fields("old"))}
            END""",
        f"""CREATE TRIGGER {p}events_records_ins AFTER INSERT ON {p}records
            WHEN new.kind IN ({_KINDS_SQL}) BEGIN {added} END""",
        f"""CREATE TRIGGER {p}events_records_upd AFTER UPDATE ON {p}records
            WHEN new.kind IN ({_GRAPH_SQL}) BEGIN
            {_sqlite_insert(p, "'graph.changed'", "new", _record_fields("new", "updated"))} END""",
        f"""CREATE TRIGGER {p}events_records_del AFTER DELETE ON {p}records
            WHEN old.kind IN ({_DELETED_SQL}) AND {_unmuted(p, "old")} BEGIN {deleted} END""",
    ]


def sqlite_disable(p: str) -> list[str]:
    """The statements that turn the feed off (its triggers dropped; events kept)."""
    return [f"DROP TRIGGER IF EXISTS {p}{name}" for name, _ in _TRIGGERS]


def sqlite_list_users(p: str) -> list[str]:
    """Mark the tenant's (``?1``) events of a user above its mark, and move the mark to
    its newest event (one write transaction): the user index then holds them all."""
    where = f"FROM {p}events_ranges r WHERE r.tenant_id = ?1"
    return [
        f"""UPDATE {p}events SET listed = 1 WHERE user_id IS NOT NULL
            AND pos > (SELECT r.base + r.listed {where})
            AND pos < (SELECT r.base + {SQLITE_RANGE} {where})""",
        f"""UPDATE {p}events_ranges AS r SET listed = {sqlite_newest(p, "r.base")} - r.base
            WHERE r.tenant_id = ?1 AND {sqlite_newest(p, "r.base")} IS NOT NULL""",
    ]


def sqlite_emit(p: str) -> list[str]:
    """One event written by the store itself (``user.forgotten``): tenant (``?1``),
    kind, user; its tenant's range made first when it has none."""
    return [
        sqlite_range(p, "?1"),
        f"INSERT INTO {p}events (pos, tenant_id, kind, at, user_id)"
        f" VALUES ({_sqlite_next(p, '?1')}, ?1, ?2, {_SQLITE_NOW}, ?3)",
    ]


def sqlite_list_query(
    p: str,
    tenant: str,
    base: int,
    after: int,
    before: int,
    *,
    kinds: Sequence[str] | None,
    user_id: str | Unset | None,
    agent_id: str | Unset | None,
    limit: int,
    listed: bool = False,
) -> tuple[str, list[Any]]:
    """SQLite's read of a tenant's events numbered after ``after`` and before ``before``
    (its range at ``base``): ``(sql, params)`` (``events_list_query``'s filters;
    ``listed``: only those in the user index, read through it)."""
    where, params = _filters("?", kinds=kinds, user_id=user_id, agent_id=agent_id)
    if listed:
        where += SQLITE_LISTED
    sql = (
        f"SELECT pos - {int(base)}, {_EVENT_COLUMNS.removeprefix('seq, ')} FROM {p}events"
        f" WHERE pos > ? AND pos < ? AND tenant_id = ?{where} ORDER BY pos LIMIT ?"
    )
    return sql, [base + after, base + before, tenant, *params, limit]


# -- PostgreSQL --------------------------------------------------------------------------


def postgres_tables(p: str) -> list[str]:
    """The feed's tables and its functions (created on enable; kept when disabled)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}events (
            tenant_id text NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
            at timestamptz NOT NULL, user_id text, agent_id text, thread_id text,
            item_id text, data jsonb, PRIMARY KEY (tenant_id, seq))""",
        events_user_index(p),
        f"""CREATE TABLE IF NOT EXISTS {p}events_tenants (
            tenant_id text PRIMARY KEY, seq bigint NOT NULL DEFAULT 0,
            floor bigint NOT NULL DEFAULT 0)""",
        f"""CREATE TABLE IF NOT EXISTS {p}events_config (
            name text PRIMARY KEY, value bigint NOT NULL)""",
        f"CREATE TABLE IF NOT EXISTS {p}events_mute (tenant_id text PRIMARY KEY)",
        # The one place a number is drawn: the tenant's row, locked until commit.
        f"""CREATE OR REPLACE FUNCTION {p}events_emit(
                t text, k text, u text, a text, th text, i text, d jsonb)
            RETURNS void LANGUAGE plpgsql AS $$
            DECLARE s bigint;
            BEGIN
                INSERT INTO {p}events_tenants AS c (tenant_id, seq) VALUES (t, 1)
                ON CONFLICT (tenant_id) DO UPDATE SET seq = c.seq + 1 RETURNING c.seq INTO s;
                INSERT INTO {p}events (tenant_id, seq, kind, at, user_id, agent_id,
                                       thread_id, item_id, data)
                VALUES (t, s, k, now(), u, a, th, i, d);
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {p}events_entries() RETURNS trigger
            LANGUAGE plpgsql AS $$
            DECLARE r record; k text; u text; a text;
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    IF EXISTS (SELECT 1 FROM {p}events_mute WHERE tenant_id = OLD.tenant_id)
                    THEN RETURN NULL; END IF;
                    r := OLD; k := 'entry.deleted';
                ELSIF TG_OP = 'INSERT' THEN r := NEW; k := 'entry.added';
                ELSE r := NEW; k := 'entry.updated';
                END IF;
                SELECT t.user_id, t.agent_id INTO u, a FROM {p}threads t
                WHERE t.tenant_id = r.tenant_id AND t.id = r.thread_id;
                IF NOT FOUND AND TG_OP = 'DELETE' THEN RETURN NULL; END IF;
                PERFORM {p}events_emit(r.tenant_id, k, u, a, r.thread_id, r.id,
                    jsonb_build_object('branch', r.branch, 'role', r.role));
                RETURN NULL;
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {p}events_threads() RETURNS trigger
            LANGUAGE plpgsql AS $$
            DECLARE r record; k text;
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    IF EXISTS (SELECT 1 FROM {p}events_mute WHERE tenant_id = OLD.tenant_id)
                    THEN RETURN NULL; END IF;
                    r := OLD; k := 'thread.deleted';
                ELSIF TG_OP = 'INSERT' THEN r := NEW; k := 'thread.created';
                ELSE r := NEW; k := 'thread.updated';
                END IF;
                PERFORM {p}events_emit(r.tenant_id, k, r.user_id, r.agent_id, r.id, NULL, NULL);
                RETURN NULL;
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {p}events_records() RETURNS trigger
            LANGUAGE plpgsql AS $$
            DECLARE r record; k text; op text; i text; d jsonb;
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    IF OLD.kind NOT IN ({_DELETED_SQL}) THEN RETURN NULL; END IF;
                    IF EXISTS (SELECT 1 FROM {p}events_mute WHERE tenant_id = OLD.tenant_id)
                    THEN RETURN NULL; END IF;
                    r := OLD; op := 'deleted';
                    k := {_deleted_kind("r")};
                ELSIF TG_OP = 'INSERT' THEN
                    IF NEW.kind NOT IN ({_KINDS_SQL}) THEN RETURN NULL; END IF;
                    r := NEW; op := 'added';
                    k := {_added_kind("r")};
                ELSE
                    IF NEW.kind NOT IN ({_GRAPH_SQL}) THEN RETURN NULL; END IF;
                    r := NEW; op := 'updated'; k := 'graph.changed';
                END IF;
                i := CASE WHEN r.kind = 'fact_version' THEN r.key ELSE r.id END;
                d := CASE WHEN r.kind = 'fact_version' THEN jsonb_build_object('version', r.id)
                     WHEN r.kind IN ({_GRAPH_SQL})
                     THEN jsonb_build_object('record', r.kind, 'op', op) ELSE NULL END;
                PERFORM {p}events_emit(r.tenant_id, k, r.user_id, r.agent_id, NULL, i, d);
                RETURN NULL;
            END $$""",
    ]


def postgres_enable(p: str) -> list[str]:
    """The statements that turn the feed on (tables and functions exist)."""
    return [
        *postgres_disable(p),
        f"UPDATE {p}events_tenants SET floor = seq + 1",
        f"""CREATE TRIGGER {p}events_entries_ins AFTER INSERT ON {p}entries
            FOR EACH ROW EXECUTE FUNCTION {p}events_entries()""",
        f"""CREATE TRIGGER {p}events_entries_upd AFTER UPDATE OF {_ENTRY_FIELDS}
            ON {p}entries FOR EACH ROW
            WHEN ({_changed(_ENTRY_FIELDS, "IS DISTINCT FROM", "::text")})
            EXECUTE FUNCTION {p}events_entries()""",
        f"""CREATE TRIGGER {p}events_entries_del AFTER DELETE ON {p}entries
            FOR EACH ROW EXECUTE FUNCTION {p}events_entries()""",
        f"""CREATE TRIGGER {p}events_threads_ins AFTER INSERT ON {p}threads
            FOR EACH ROW EXECUTE FUNCTION {p}events_threads()""",
        f"""CREATE TRIGGER {p}events_threads_upd AFTER UPDATE OF {_THREAD_FIELDS}
            ON {p}threads FOR EACH ROW
            WHEN ({_changed(_THREAD_FIELDS, "IS DISTINCT FROM", "::text")})
            EXECUTE FUNCTION {p}events_threads()""",
        f"""CREATE TRIGGER {p}events_threads_del AFTER DELETE ON {p}threads
            FOR EACH ROW EXECUTE FUNCTION {p}events_threads()""",
        f"""CREATE TRIGGER {p}events_records_ins AFTER INSERT ON {p}records
            FOR EACH ROW EXECUTE FUNCTION {p}events_records()""",
        f"""CREATE TRIGGER {p}events_records_upd AFTER UPDATE ON {p}records
            FOR EACH ROW EXECUTE FUNCTION {p}events_records()""",
        f"""CREATE TRIGGER {p}events_records_del AFTER DELETE ON {p}records
            FOR EACH ROW EXECUTE FUNCTION {p}events_records()""",
    ]


def postgres_disable(p: str) -> list[str]:
    """The statements that turn the feed off (its triggers dropped; events kept)."""
    return [f"DROP TRIGGER IF EXISTS {p}{name} ON {p}{table}" for name, table in _TRIGGERS]


def postgres_emit(p: str) -> str:
    """One event written by the store itself (``user.forgotten``): tenant, kind, user."""
    return f"SELECT {p}events_emit(%s, %s, %s, NULL, NULL, NULL, NULL)"


# -- MySQL / MariaDB ---------------------------------------------------------------------

#: Now as integer microseconds (the store's time columns), in SQL.
_MYSQL_NOW = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"
#: The tenant's next number, drawn from its counter row (locked until the transaction
#: ends) and left in ``LAST_INSERT_ID()`` for the next statement (in a trigger the value
#: is restored when the trigger ends: the writing statement's own is untouched). ``%s``
#: is the tenant.
_MYSQL_DRAW = (
    "INSERT INTO {p}events_tenants (tenant_id, seq) VALUES ({t}, LAST_INSERT_ID(1))"
    " ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + 1)"
)


def mysql_tables(p: str, collation: str) -> list[str]:
    """The feed's tables (created on first enable; kept when disabled): InnoDB, ids in
    the store's exact ``collation`` (its NO PAD binary utf8mb4)."""
    options = f"ENGINE=InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE {collation}"
    ident = "VARCHAR(255) NOT NULL"
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}events (
            tenant_id {ident}, seq BIGINT NOT NULL, kind VARCHAR(64) NOT NULL,
            at BIGINT NOT NULL, user_id VARCHAR(255) NULL, agent_id VARCHAR(255) NULL,
            thread_id VARCHAR(255) NULL, item_id VARCHAR(255) NULL, data LONGTEXT NULL,
            PRIMARY KEY (tenant_id, seq),
            -- a user-scoped list reads its user's events (``events_user_index``; MySQL
            -- has no partial index, so events of no user are in it too)
            KEY {p}events_user (tenant_id, user_id, seq)) {options}""",
        f"""CREATE TABLE IF NOT EXISTS {p}events_tenants (
            tenant_id {ident} PRIMARY KEY, seq BIGINT NOT NULL DEFAULT 0,
            floor BIGINT NOT NULL DEFAULT 0) {options}""",
        f"""CREATE TABLE IF NOT EXISTS {p}events_config (
            name VARCHAR(64) NOT NULL PRIMARY KEY, value BIGINT NOT NULL) {options}""",
        f"CREATE TABLE IF NOT EXISTS {p}events_mute (tenant_id {ident} PRIMARY KEY) {options}",
    ]


def _mysql_insert(p: str, kind: str, source: str, fields: str) -> str:
    """The two statements of one event made from ``source`` (``new``/``old``)."""
    return (
        f"{_MYSQL_DRAW.format(p=p, t=source + '.tenant_id')};"
        f" INSERT INTO {p}events (tenant_id, seq, kind, at, user_id, agent_id, thread_id,"
        f" item_id, data) VALUES ({source}.tenant_id, LAST_INSERT_ID(), {kind}, {_MYSQL_NOW},"
        f" {fields});"
    )


def _mysql_same(columns: Sequence[str]) -> str:
    """Whether an update left ``columns`` as they were, byte for byte (a ``content``
    column compares case-insensitively in its search collation: compared as bytes)."""
    return " AND ".join(
        f"CAST(OLD.{c} AS BINARY) <=> CAST(NEW.{c} AS BINARY)"
        if c == "content"
        else f"OLD.{c} <=> NEW.{c}"
        for c in columns
    )


def mysql_enable(p: str) -> list[str]:
    """The statements that turn the feed on (tables exist): every floor raised above
    the last number drawn (changes while off were not recorded), then the triggers.

    MySQL has no ``UPDATE OF`` nor ``WHEN``: an update trigger runs on every update and
    records an event only when a tracked column changed (an append's bump of a thread's
    ``updated_at`` records nothing). A guarded record write's placeholder (revision -1,
    ``SQLWrites._guarded``) is no record: its insert and delete record nothing, and
    the upsert that makes it a record is its ``added`` event."""
    ins = _mysql_insert
    entry_new, entry_old = _entry_fields(p, "NEW"), _entry_fields(p, "OLD")
    added = ins(p, _added_kind("NEW"), "NEW", _record_fields("NEW", "added", "k"))
    graph = ins(p, "'graph.changed'", "NEW", _record_fields("NEW", "updated", "k"))
    deleted = ins(p, _deleted_kind("OLD"), "OLD", _record_fields("OLD", "deleted", "k"))
    record_same = _mysql_same(("revision", "updated_at", "content", "data", "user_id", "agent_id"))
    entry_same = _mysql_same(_columns(_ENTRY_FIELDS))
    thread_same = _mysql_same(_columns(_THREAD_FIELDS))
    thread_exists = (
        f"EXISTS (SELECT 1 FROM {p}threads t WHERE t.tenant_id = OLD.tenant_id"
        " AND t.id = OLD.thread_id)"
    )
    unmuted = _unmuted(p, "OLD")
    thread_new, thread_old = _thread_fields("NEW"), _thread_fields("OLD")
    triggers = {
        "events_entries_ins": "BEGIN " + ins(p, "'entry.added'", "NEW", entry_new) + " END",
        "events_entries_upd": f"IF NOT ({entry_same}) THEN "
        + ins(p, "'entry.updated'", "NEW", entry_new) + " END IF",
        "events_entries_del": f"IF {unmuted} AND {thread_exists} THEN "
        + ins(p, "'entry.deleted'", "OLD", entry_old) + " END IF",
        "events_threads_ins": "BEGIN " + ins(p, "'thread.created'", "NEW", thread_new) + " END",
        "events_threads_upd": f"IF NOT ({thread_same}) THEN "
        + ins(p, "'thread.updated'", "NEW", thread_new) + " END IF",
        "events_threads_del": f"IF {unmuted} THEN "
        + ins(p, "'thread.deleted'", "OLD", thread_old) + " END IF",
        "events_records_ins": f"IF NEW.kind IN ({_KINDS_SQL}) AND NEW.revision <> -1 THEN"
        f" {added} END IF",
        "events_records_upd": f"IF OLD.revision = -1 AND NEW.revision <> -1"
        f" AND NEW.kind IN ({_KINDS_SQL}) THEN {added} ELSEIF OLD.revision <> -1"
        f" AND NEW.kind IN ({_GRAPH_SQL}) AND NOT ({record_same}) THEN {graph} END IF",
        "events_records_del": f"IF OLD.kind IN ({_DELETED_SQL}) AND OLD.revision <> -1"
        f" AND {unmuted} THEN {deleted} END IF",
    }  # fmt: skip
    operations = {"ins": "INSERT", "upd": "UPDATE", "del": "DELETE"}
    return [
        *mysql_disable(p),
        f"UPDATE {p}events_tenants SET floor = seq + 1",
        *(
            f"CREATE TRIGGER {p}{name} AFTER {operations[name[-3:]]} ON {p}{table}"
            f" FOR EACH ROW {triggers[name]}"
            for name, table in _TRIGGERS
        ),
    ]


def mysql_disable(p: str) -> list[str]:
    """The statements that turn the feed off (its triggers dropped; events kept)."""
    return sqlite_disable(p)


def mysql_emit(p: str) -> tuple[str, str]:
    """One event written by the store itself (``user.forgotten``): the number drawn
    (the tenant), then the event (tenant, kind, user)."""
    return (
        _MYSQL_DRAW.format(p=p, t="%s"),
        f"INSERT INTO {p}events (tenant_id, seq, kind, at, user_id)"
        f" VALUES (%s, LAST_INSERT_ID(), %s, {_MYSQL_NOW}, %s)",
    )
