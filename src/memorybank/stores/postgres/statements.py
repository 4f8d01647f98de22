"""The PostgreSQL store's SQL statements, built once per table prefix
(``Statements``), and the fragments they are made of (column lists, the append
statements, "last N", scope filters, vector deletes).
"""

from __future__ import annotations

import re
from typing import Any

from memorybank.stores.contract.types import Visibility
from memorybank.stores.sql.common import (
    ENTRY_COLUMNS,
    PAGE_COLUMNS,
    RECORD_COLUMNS,
    THREAD_COLUMNS,
    scope_sql,
)
from memorybank.stores.sql.statements import qualified

T_COLS = qualified("t", THREAD_COLUMNS)

# Record columns for the batch reads: ``data`` as its text (``json`` keeps it as
# written), parsed by ``row_to_record`` (the fast parser when installed) rather than
# by the driver's ``json.loads``.
R_READ = qualified("r", RECORD_COLUMNS).replace(", r.data,", ", r.data::text,")
_E_COLS = qualified("e", ENTRY_COLUMNS)


def _read(columns: str, alias: str = "") -> str:
    """``columns`` (on ``alias``) as reads select them: an empty metadata/state object
    comes back as NULL (no JSON to parse; ``row_to_entry`` maps NULL to ``{}``)."""
    return ", ".join(
        f"NULLIF({alias}{c}::text, '{{}}')" if c in ("metadata", "state") else f"{alias}{c}"
        for c in (c.strip() for c in columns.split(","))
    )


E_READ = _read(ENTRY_COLUMNS, "e.")


_NULL_ENTRY = (
    "NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::text,"
    " NULL::jsonb, NULL::text, NULL::json, NULL::json, NULL::integer, NULL::timestamptz,"
    " NULL::text"
)


_APPEND = """
WITH input AS (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS i(
        id text, role text, content text, name text, tool_calls jsonb, tool_call_id text,
        metadata json, state json, token_count integer, created_at timestamptz,
        idempotency_key text, fingerprint text, ord bigint)
),
probe AS (
    SELECT user_id, current_branch FROM {p}threads
    WHERE tenant_id = %(tenant)s AND id = %(thread)s
),
allowed AS (
    SELECT coalesce(%(branch)s::text, current_branch) AS branch FROM probe
    WHERE NOT %(check_owner)s::bool OR user_id IS NOT DISTINCT FROM %(owner)s::text
),
existing AS (
    SELECT {e_cols}, i.ord, coalesce(e.fingerprint <> i.fingerprint, false) AS clash
    FROM input i
    JOIN allowed a ON true
    JOIN {p}entries e ON e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s
        AND e.branch = a.branch AND e.idempotency_key = i.idempotency_key
),
fresh AS (
    SELECT i.*, row_number() OVER (ORDER BY i.ord) AS rn
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM existing x WHERE x.ord = i.ord)
),
th AS (
    UPDATE {p}threads t SET updated_at = %(now)s
    FROM allowed a
    WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s
      AND EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = %(tenant)s
                  AND b.thread_id = %(thread)s AND b.name = a.branch)
      AND NOT EXISTS (SELECT 1 FROM existing WHERE clash)
    RETURNING {t_cols}
),
br AS (
    UPDATE {p}branches b SET last_position = b.last_position + (SELECT count(*) FROM fresh),
        entry_count = b.entry_count + (SELECT count(*) FROM fresh)
    FROM allowed a, th
    WHERE b.tenant_id = %(tenant)s AND b.thread_id = %(thread)s AND b.name = a.branch
    RETURNING b.name, b.last_position - (SELECT count(*) FROM fresh) AS base
),
ins AS (
    INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content, name,
        tool_calls, tool_call_id, metadata, state, token_count, created_at, idempotency_key,
        fingerprint)
    SELECT %(tenant)s, %(thread)s, br.name, br.base + f.rn, f.id, f.role, f.content, f.name,
        f.tool_calls, f.tool_call_id, f.metadata, f.state, f.token_count,
        f.created_at, f.idempotency_key, f.fingerprint
    FROM fresh f CROSS JOIN br
    RETURNING id, position
),
result AS (
    -- inserted rows: only where they went (the caller has the rest); stored ones: all
    SELECT f.ord, ins.position, {null_entry} FROM ins JOIN fresh f ON f.id = ins.id
    UNION ALL
    SELECT x.ord, x.position, {x_cols} FROM existing x
)
SELECT
    CASE WHEN NOT EXISTS (SELECT 1 FROM probe) THEN 1
         WHEN NOT EXISTS (SELECT 1 FROM allowed) THEN 2
         WHEN EXISTS (SELECT 1 FROM existing WHERE clash) THEN 4
         WHEN NOT EXISTS (SELECT 1 FROM th) THEN 3
         ELSE 0 END,
    (SELECT branch FROM allowed),
    {th_cols},
    r.*
FROM (SELECT 1) AS one
LEFT JOIN th ON true
LEFT JOIN result r ON true
"""

# The append of a batch without idempotency keys (every ``remember``): the thread row
# is updated (and so locked) only when it exists, passes the owner check and has the
# branch; then the branch counter reserves the positions and the rows go in. No row back
# means nothing was written: ``_append_refusal`` then says why (a second round trip,
# only on that error path).
_APPEND_PLAIN = """
WITH th AS (
    UPDATE {p}threads t SET updated_at = %(now)s
    WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s
      AND (NOT %(check_owner)s::bool OR t.user_id IS NOT DISTINCT FROM %(owner)s::text)
      AND EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = %(tenant)s
                  AND b.thread_id = %(thread)s
                  AND b.name = coalesce(%(branch)s::text, t.current_branch))
    RETURNING {t_cols}
),
br AS (
    UPDATE {p}branches b SET last_position = b.last_position + %(count)s::bigint,
        entry_count = b.entry_count + %(count)s::bigint
    FROM th
    WHERE b.tenant_id = %(tenant)s AND b.thread_id = %(thread)s
      AND b.name = coalesce(%(branch)s::text, th.current_branch)
    RETURNING b.name, b.last_position - %(count)s::bigint AS base
),
ins AS (
    INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content, name,
        tool_calls, tool_call_id, metadata, state, token_count, created_at)
    SELECT %(tenant)s, %(thread)s, br.name, br.base + i.ord, i.id, i.role, i.content, i.name,
        i.tool_calls, i.tool_call_id, i.metadata, i.state, i.token_count, i.created_at
    FROM br CROSS JOIN {rows}
)
SELECT br.name, br.base, {th_cols} FROM th LEFT JOIN br ON true
"""
# Concurrent plain appends of one tenant, to any threads, as ONE statement (write
# combining, see ``_combine``): the threads named are locked in id order (so two such
# statements never deadlock), each caller's rows pass its own owner and branch checks,
# every thread and branch counter touched is updated once, and the rows go in with
# positions numbered per (thread, branch) in queue order. Rows back: one per stored
# entry, with its thread row; a caller whose entries are missing wrote nothing and is
# run again alone (which raises its error, or stores it if the world changed).
_APPEND_MANY = """
WITH input AS (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS i(
        ord integer, thread text, branch text, check_owner boolean, owner text,
        now timestamptz, id text, role text, content text, name text, tool_calls jsonb,
        tool_call_id text, metadata json, state json, token_count integer,
        created_at timestamptz)
),
locked AS (
    SELECT t.id, t.user_id, t.current_branch FROM {p}threads t
    WHERE t.tenant_id = %(tenant)s AND t.id IN (SELECT thread FROM input)
    ORDER BY t.id
    FOR NO KEY UPDATE
),
ok AS (
    SELECT i.*, coalesce(i.branch, l.current_branch) AS bname
    FROM input i JOIN locked l ON l.id = i.thread
    WHERE (NOT i.check_owner OR l.user_id IS NOT DISTINCT FROM i.owner)
      AND EXISTS (SELECT 1 FROM {p}branches b WHERE b.tenant_id = %(tenant)s
                  AND b.thread_id = i.thread AND b.name = coalesce(i.branch, l.current_branch))
),
th AS (
    UPDATE {p}threads t SET updated_at = m.now
    FROM (SELECT thread, max(now) AS now FROM ok GROUP BY thread) m
    WHERE t.tenant_id = %(tenant)s AND t.id = m.thread
    RETURNING {t_cols}
),
br AS (
    UPDATE {p}branches b SET last_position = b.last_position + c.n,
        entry_count = b.entry_count + c.n
    FROM (SELECT thread, bname, count(*) AS n FROM ok GROUP BY thread, bname) c
    WHERE b.tenant_id = %(tenant)s AND b.thread_id = c.thread AND b.name = c.bname
    RETURNING b.thread_id, b.name, b.last_position - c.n AS base
),
ins AS (
    INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content, name,
        tool_calls, tool_call_id, metadata, state, token_count, created_at)
    SELECT %(tenant)s, o.thread, o.bname,
        br.base + row_number() OVER (PARTITION BY o.thread, o.bname ORDER BY o.ord),
        o.id, o.role, o.content, o.name, o.tool_calls, o.tool_call_id, o.metadata, o.state,
        o.token_count, o.created_at
    FROM ok o JOIN br ON br.thread_id = o.thread AND br.name = o.bname
    RETURNING thread_id, branch, id, position
)
SELECT ins.thread_id, ins.branch, ins.id, ins.position, {th_cols}
FROM ins JOIN th ON th.id = ins.thread_id
"""
# Where ``_APPEND_PLAIN``'s rows come from: a JSON batch, or (one entry, every
# ``remember``) plain parameters, which neither side has to encode or parse as JSON.
_BATCH_ROWS = """json_to_recordset(%(batch)s::json) AS i(
        id text, role text, content text, name text, tool_calls jsonb, tool_call_id text,
        metadata json, state json, token_count integer, created_at timestamptz, ord bigint)"""
_ONE_ROW = """(VALUES (%(id)s::text, %(role)s::text, %(content)s::text, %(name)s::text,
        %(tool_calls)s::jsonb, %(tool_call_id)s::text, %(metadata)s::json, %(state)s::json,
        %(token_count)s::integer, %(created_at)s::timestamptz, 1::bigint)) AS i(
        id, role, content, name, tool_calls, tool_call_id, metadata, state, token_count,
        created_at, ord)"""

# "Last N": the thread row, then the page, in one statement (one snapshot). Page rows
# leave out the thread id and branch (the caller knows them) and send an empty
# metadata/state object as NULL, so there is less to parse.
_PAGE_COLUMNS = _read(PAGE_COLUMNS)
_LIST = """
(SELECT {thread_columns}, {null_page} FROM {p}threads
 WHERE tenant_id = %(tenant)s AND id = %(thread)s)
UNION ALL
(SELECT {null_thread}, {page_columns} FROM {p}entries
 WHERE tenant_id = %(tenant)s AND thread_id = %(thread)s
   AND branch = coalesce(%(branch)s::text, (
       SELECT current_branch FROM {p}threads WHERE tenant_id = %(tenant)s AND id = %(thread)s
   )){filters}
 ORDER BY position DESC
 LIMIT %(limit)s::bigint OFFSET %(offset)s::bigint)
"""


def nulls(count: int) -> str:
    """``count`` NULL columns: a ``UNION ALL`` part's missing ones (typed by the others)."""
    return ", ".join(["NULL"] * count)


def row_check(table: str, condition: str) -> str:
    """A filter the planner keeps as a per-row subplan (``EXISTS`` would become a join).

    Under an HNSW index scan this checks each candidate as it comes, and keeps
    the row estimate of the vectors scan, so the planner still picks the index.
    """
    return f"coalesce((SELECT true FROM {table} WHERE {condition} LIMIT 1), false)"


def _bump(p: str, deleted: str) -> str:
    """An UPDATE bumping the vector cache generation of the (model, kind)s in ``deleted``."""
    return (
        f"UPDATE {p}vector_stamps s SET generation = s.generation + 1"
        " WHERE s.tenant_id = %s AND (s.model_id, s.kind) IN"
        f" (SELECT model_id, kind FROM {deleted})"
    )


def scope_filter(alias: str, visible: Visibility | None, params: dict[str, Any]) -> str:
    """``scope_sql`` with named parameters (``v_agent_id``, ``v_user_id``) put in ``params``."""
    sql, values = scope_sql(f"{alias}.", visible, "%(v_{column})s")
    params.update(zip(re.findall(r"%\((v_\w+)\)s", sql), values, strict=True))
    return sql


def record_at(p: str, kind: str, rid: str) -> str:
    """A subquery: the first record at or after (tenant, ``kind``, ``rid``) in primary-key
    order; the caller checks that its kind and id are the ones asked for.

    "kind = k AND id = i" costs the same on the primary key (tenant, kind, id) as on
    ``records_user`` (tenant, kind, user_id, created_at, id) before the table has
    statistics (autovacuum off: possibly never), and the planner took ``records_user``,
    reading every record of the kind per id (100k documents: about 1 ms per id). A row
    comparison in the primary key's order with its ORDER BY ... LIMIT 1 is one descent
    of the primary key in any plan. (An extra "tenant_id = t" in the subquery made the
    scan start at the tenant's first record and walk to the key: 1 ms per id.) The
    callers check the tenant too, as an equality (the distribution column,
    docs/postgres.md).
    """
    return (
        f"(SELECT * FROM {p}records WHERE (tenant_id, kind, id) >= (%(tenant)s, {kind}, {rid})"
        " ORDER BY tenant_id, kind, id LIMIT 1)"
    )


def keyed(p: str) -> str:
    """A ``MATERIALIZED`` CTE's body: the records of ``%(kinds)s`` with one of ``%(keys)s``
    (every scope: the caller filters the scope, and anything else, outside).

    One probe of the key index ``(tenant_id, kind, key) WHERE key IS NOT NULL`` per
    (kind, key): three equalities, of which every other index serves at most two.
    With ``kind = ANY(kinds) AND key = ANY(keys)`` and the scope in one scan, a table
    never analyzed (autovacuum off) made "key = ANY" of 80 keys look unselective and
    "tenant_id = t AND kind = ANY(kinds)" select a few rows, and the planner took
    ``records_user`` (shared-only: ``user_id IS NULL``), reading every record of the
    kinds (100k relations: 35-300 ms, not 1); a generic plan took ``records_owner``,
    as "key = ANY($n)" does not prove the partial index's "key IS NOT NULL" (the array
    could be empty). ``OFFSET 0`` keeps the probe a subquery run per pair (not a join
    the planner could turn into a hash join over the tenant's records).
    """
    return (
        "SELECT r.* FROM unnest(%(kinds)s::text[]) AS kk(kind),"
        " unnest(%(keys)s::text[]) AS kx(key),"
        f" LATERAL (SELECT {RECORD_COLUMNS} FROM {p}records WHERE tenant_id = %(tenant)s"
        " AND kind = kk.kind AND key = kx.key AND key IS NOT NULL OFFSET 0) r"
    )


class Statements:
    """Every SQL statement of one prefix, built once."""

    def __init__(self, p: str) -> None:
        self.thread_create = (
            f"WITH t AS (INSERT INTO {p}threads (tenant_id, id, user_id, agent_id, title, metadata,"
            " status, created_at, updated_at, current_branch) VALUES (%s, %s, %s::text, %s::text,"
            " %s::text, %s::json, %s, %s, %s, %s) RETURNING tenant_id, id, created_at,"
            " current_branch)"
            f" INSERT INTO {p}branches (tenant_id, thread_id, name, created_at)"
            " SELECT tenant_id, id, current_branch, created_at FROM t"
        )
        self.append = _APPEND.format(
            p=p,
            e_cols=_E_COLS,
            t_cols=T_COLS,
            th_cols=qualified("th", THREAD_COLUMNS),
            x_cols=qualified("x", ENTRY_COLUMNS),
            null_entry=_NULL_ENTRY,
        )
        self.append_plain = _APPEND_PLAIN.format(
            p=p, t_cols=T_COLS, th_cols=qualified("th", THREAD_COLUMNS), rows=_BATCH_ROWS
        )
        self.append_one = _APPEND_PLAIN.format(
            p=p, t_cols=T_COLS, th_cols=qualified("th", THREAD_COLUMNS), rows=_ONE_ROW
        )
        self.append_many = _APPEND_MANY.format(
            p=p, t_cols=T_COLS, th_cols=qualified("th", THREAD_COLUMNS)
        )
        self.append_refusal = (
            f"SELECT t.user_id, coalesce(%(branch)s::text, t.current_branch) FROM {p}threads t"
            " WHERE t.tenant_id = %(tenant)s AND t.id = %(thread)s"
        )
        # history(): the owner and the current branch's last N (role, content, name,
        # tool_calls, tool_call_id), oldest first, in one statement; an empty thread
        # gives one row of NULLs, an absent one none.
        self.entry_list_recent = (
            "SELECT t.user_id, e.role, e.content, e.name, e.tool_calls, e.tool_call_id"
            f" FROM {p}threads t LEFT JOIN LATERAL (SELECT position, role, content, name,"
            f" tool_calls, tool_call_id FROM {p}entries WHERE tenant_id = t.tenant_id"
            " AND thread_id = t.id AND branch = t.current_branch"
            " ORDER BY position DESC LIMIT %s::bigint) e ON true"
            " WHERE t.tenant_id = %s AND t.id = %s ORDER BY e.position"
        )
        self.entry_list: dict[tuple[bool, bool], str] = {}
        for has_before in (False, True):
            for has_after in (False, True):
                filters = ""
                if has_before:
                    filters += " AND created_at < %(before)s"
                if has_after:
                    filters += " AND created_at > %(after)s"
                self.entry_list[(has_before, has_after)] = _LIST.format(
                    p=p,
                    thread_columns=THREAD_COLUMNS,
                    null_page=nulls(len(PAGE_COLUMNS.split(","))),
                    null_thread=nulls(len(THREAD_COLUMNS.split(","))),
                    page_columns=_PAGE_COLUMNS,
                    filters=filters,
                )
        current = (
            f"coalesce(%(branch)s::text, (SELECT current_branch FROM {p}threads"
            " WHERE tenant_id = %(tenant)s AND id = %(thread)s))"
        )
        # Per id, the first row at or after (tenant, thread, branch, id) in the id index,
        # kept when it is that row: a row comparison only that index serves in order.
        # (With plain equalities a never-analyzed table ties it with the primary key
        # (tenant, thread, branch, position), and the planner picked the primary key,
        # reading the whole branch per id: 0.7 s per call at 10,000 entries.)
        self.entry_get_many = (
            f"SELECT {E_READ} FROM unnest(%(ids)s::text[]) AS x(id), LATERAL (SELECT *"
            f" FROM {p}entries WHERE (tenant_id, thread_id, branch, id)"
            f" >= (%(tenant)s, %(thread)s, {current}, x.id)"
            " ORDER BY tenant_id, thread_id, branch, id LIMIT 1) e"
            f" WHERE e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s"
            f" AND e.branch = {current} AND e.id = x.id"
        )
        # compaction's summary (``SQLCore._entry_insert``): the append's JSON row
        self.entry_insert = (
            f"INSERT INTO {p}entries (tenant_id, thread_id, branch, position, id, role, content,"
            " name, tool_calls, tool_call_id, metadata, state, token_count, created_at,"
            " idempotency_key, fingerprint) SELECT %s, %s, %s, %s, i.id, i.role, i.content,"
            " i.name, i.tool_calls, i.tool_call_id, i.metadata, i.state, i.token_count,"
            " i.created_at, i.idempotency_key, i.fingerprint"
            " FROM json_to_recordset(%s::json) AS i(id text, role text, content text,"
            " name text, tool_calls jsonb, tool_call_id text, metadata json, state json,"
            " token_count integer, created_at timestamptz, idempotency_key text,"
            " fingerprint text)"
        )
        self.entry_update = (
            f"WITH th AS (SELECT 1 FROM {p}threads WHERE tenant_id = %(tenant)s"
            " AND id = %(thread)s),"
            " c AS (SELECT * FROM json_to_recordset(%(changes)s::json)"
            " AS c(id text, content text, state json, token_count integer)),"
            f" u AS (UPDATE {p}entries e SET content = c.content, state = c.state,"
            " token_count = c.token_count FROM c WHERE EXISTS (SELECT 1 FROM th)"
            " AND e.tenant_id = %(tenant)s AND e.thread_id = %(thread)s"
            " AND e.branch = %(branch)s AND e.id = c.id RETURNING 1)"
            " SELECT EXISTS (SELECT 1 FROM th), (SELECT count(*) FROM u)"
        )
        self.record_put = (
            f"INSERT INTO {p}records (tenant_id, kind, id, agent_id, user_id, key, content, data,"
            " created_at, updated_at, expires_at, revision)"
            " SELECT %s, i.kind, i.id, i.agent_id, i.user_id, i.key, i.content, i.data,"
            " i.created_at, i.updated_at, i.expires_at, i.revision"
            " FROM json_to_recordset(%s::json) AS i(kind text, id text, agent_id text,"
            " user_id text, key text, content text, data json, created_at timestamptz,"
            " updated_at timestamptz, expires_at timestamptz, revision bigint)"
            " ON CONFLICT (tenant_id, kind, id) DO UPDATE SET agent_id = EXCLUDED.agent_id,"
            " user_id = EXCLUDED.user_id, key = EXCLUDED.key, content = EXCLUDED.content,"
            " data = EXCLUDED.data, created_at = EXCLUDED.created_at,"
            " updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at,"
            " revision = EXCLUDED.revision"
        )
        # Batch reads by ids are driven by the ids: a LIMIT 1 subquery per id (never
        # flattened). With "id = ANY(array)" a table never analyzed (autovacuum off) was
        # read whole per call.
        self.record_get_many = (
            f"SELECT {R_READ} FROM unnest(%(ids)s::text[]) AS x(id),"
            f" LATERAL {record_at(p, '%(kind)s', 'x.id')} r"
            " WHERE r.tenant_id = %(tenant)s AND r.kind = %(kind)s AND r.id = x.id"
        )
        # parameters: (tenant, kind, ids), tenant, (tenant, kind, ids); its rowcount: the
        # records deleted
        self.record_delete = (
            f"WITH v AS (DELETE FROM {p}vectors WHERE tenant_id = %s AND kind = %s"
            " AND id = ANY(%s::text[]) RETURNING model_id, kind),"
            f" g AS ({_bump(p, 'v')})"
            f" DELETE FROM {p}records WHERE tenant_id = %s AND kind = %s AND id = ANY(%s::text[])"
        )
        self.vector_put = (
            f"INSERT INTO {p}vectors (tenant_id, kind, id, model_id, thread_id, dim, embedding)"
            " SELECT %(tenant)s, i.kind, i.id, i.model_id, i.thread_id, i.dim, i.embedding"
            " FROM unnest(%(kinds)s::text[], %(ids)s::text[], %(models)s::text[],"
            " %(threads)s::text[], %(dims)s::integer[], %(embeddings)s::vector[])"
            " AS i(kind, id, model_id, thread_id, dim, embedding)"
            " ON CONFLICT (tenant_id, kind, id, model_id) DO UPDATE"
            " SET thread_id = EXCLUDED.thread_id, dim = EXCLUDED.dim,"
            " embedding = EXCLUDED.embedding"
        )
        # Without pgvector: the (tenant, model, kind) version is bumped first (its row
        # lock orders the writers) and stamped on the rows as ``seq``.
        self.vector_put_stamped = (
            "WITH i AS (SELECT * FROM unnest(%(kinds)s::text[], %(ids)s::text[],"
            " %(models)s::text[], %(threads)s::text[], %(dims)s::integer[],"
            " %(embeddings)s::bytea[]) AS i(kind, id, model_id, thread_id, dim, embedding)),"
            f" s AS (INSERT INTO {p}vector_stamps AS s (tenant_id, model_id, kind, version)"
            " SELECT DISTINCT %(tenant)s, model_id, kind, 1 FROM i ORDER BY 2, 3"
            " ON CONFLICT (tenant_id, model_id, kind) DO UPDATE SET version = s.version + 1"
            " RETURNING model_id, kind, version)"
            f" INSERT INTO {p}vectors (tenant_id, kind, id, model_id, thread_id, dim, embedding,"
            " seq) SELECT %(tenant)s, i.kind, i.id, i.model_id, i.thread_id, i.dim, i.embedding,"
            " s.version FROM i JOIN s ON s.model_id = i.model_id AND s.kind = i.kind"
            " ON CONFLICT (tenant_id, kind, id, model_id) DO UPDATE"
            " SET thread_id = EXCLUDED.thread_id, dim = EXCLUDED.dim,"
            " embedding = EXCLUDED.embedding, seq = EXCLUDED.seq"
        )
        self.vector_rows = (
            f"SELECT seq, embedding, id, thread_id FROM {p}vectors WHERE tenant_id = %s"
            " AND model_id = %s AND kind = %s AND seq > %s ORDER BY seq"
        )
        # at most a chunk: the rows of the first seq values holding ``limit`` rows (whole
        # seq groups), found by a walk of ``limit`` entries of ``vectors_seq``
        self.vector_rows_chunk = (
            f"SELECT seq, embedding, id, thread_id FROM {p}vectors WHERE tenant_id = %s"
            " AND model_id = %s AND kind = %s AND seq > %s AND seq <= coalesce((SELECT seq"
            f" FROM {p}vectors WHERE tenant_id = %s AND model_id = %s AND kind = %s"
            " AND seq > %s ORDER BY seq OFFSET %s LIMIT 1), 9223372036854775807) ORDER BY seq"
        )
        self.vector_owner_threads = (
            f"SELECT id, agent_id, user_id FROM {p}threads WHERE tenant_id = %s"
            " AND id = ANY(%s::text[])"
        )
        self.vector_owner_kind = (
            f"SELECT id, agent_id, user_id FROM {p}records WHERE tenant_id = %s AND kind = %s"
        )
        self.vector_owner_records = (
            f"SELECT id, agent_id, user_id FROM {p}records WHERE tenant_id = %s AND kind = %s"
            " AND id = ANY(%s::text[])"
        )
        # "model_id || ''": the primary key (tenant, kind, id) whatever the statistics say
        # (before the first ANALYZE the model index looks as cheap, and reads every vector)
        self.vector_get = (
            f"SELECT id, embedding{{text}} FROM {p}vectors WHERE tenant_id = %s AND kind = %s"
            " AND model_id || '' = %s AND id = ANY(%s::text[])"
        )
