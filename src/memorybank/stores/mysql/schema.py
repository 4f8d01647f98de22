"""The MySQL store's schema: table names and the migrations that build it, as SQL
text (``{p}`` is the table prefix, ``{bin}`` the exact collation).

Schema: created on first use by the first operation of a store, under
``GET_LOCK`` so several processes starting together migrate once. Migration 2
rebuilds ``entries`` (``ALTER TABLE``: a copy of the table, slow on a big one);
a migration cut short is re-run, its "duplicate column/key" errors ignored.

Exact ids (migration 3): versions 1 and 2 used ``utf8mb4_bin``, a PAD SPACE
collation in which ``"acme" = "acme "``: a tenant, thread, user or key with a
trailing space reached another's rows. Migration 3 moves every string column
(all but the searched ``content``) to the server's NO PAD binary collation,
``utf8mb4_nopad_bin`` (MariaDB) or ``utf8mb4_0900_bin`` (MySQL 8.0.17+), one
``ALTER TABLE`` per table: each is rebuilt once, rows kept (no two rows can
merge: the new collation only tells more values apart). Rows written under a
padded look-alike before the upgrade keep the spelling they were written with.
While it runs, processes of an older memorybank on the same tables can get
"Illegal mix of collations" from joins across a converted and an unconverted
table; upgrade them together. A fresh schema takes about a second longer to
create (every table is made, then converted).
"""

from __future__ import annotations

from memorybank.stores.mysql.rows import ID_HASH_SQL
from memorybank.stores.sql.common import TABLES as TABLES

#: The table options of migrations 1 and 2 (kept as they were: migrations are never
#: edited). ``utf8mb4_bin`` is a PAD SPACE collation: "acme" = "acme " in it, so
#: migration 3 moves every compared column to the exact collation, ``{bin}``.
TABLE = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
_ID = "VARCHAR(255) NOT NULL"
_OPT_ID = "VARCHAR(255) NULL"
_KIND = "VARCHAR(64) NOT NULL"  # record kinds; short, so composite keys fit InnoDB's 3072 bytes
_MODEL = "VARCHAR(191) NOT NULL"  # embedding model ids (191 x 4 bytes: the vectors key fits)
#: Text searched with FULLTEXT: case- and accent-insensitive (a binary collation would
#: make InnoDB's full-text matching case-sensitive). Only the search uses the collation;
#: the stored text round-trips byte for byte either way.
_SEARCHED = "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
IGNORED_ON_RERUN = {1060, 1061}  # duplicate column / key name: a re-run of a half-done migration

# Exact ids (migration 3). Every id, tenant, key, owner, kind and model column gets a
# NO PAD binary collation, ``{bin}`` in the statements: MariaDB's ``utf8mb4_nopad_bin``
# or MySQL 8's ``utf8mb4_0900_bin`` (``_exact_collation`` asks the server which it has
# and checks that it really tells "x" from "x "). Binary: "X" <> "x" and no Unicode
# folding; NO PAD: trailing spaces count. Why not VARBINARY: the columns would come back
# as ``bytes`` on every read (a decode in every row mapper, and JSON_ARRAY pages would
# need HEX round trips), and a byte-length column would change what length of id fits,
# while a VARCHAR(255) holds exactly the 255 characters ``check_id`` accepts, whatever
# their UTF-8 length. Index key lengths do not change with the collation (utf8mb4: 4
# bytes a character): the widest keys, (tenant_id, thread_id, branch, position) and
# (tenant_id, kind, id, model_id), are 3068 and 3060 bytes, under InnoDB's 3072.
_X = "CHARACTER SET utf8mb4 COLLATE {bin}"
_XID = f"VARCHAR(255) {_X} NOT NULL"
_XOPT = f"VARCHAR(255) {_X} NULL"
_XKIND = f"VARCHAR(64) {_X} NOT NULL"
_XWORD = f"VARCHAR(16) {_X} NOT NULL"  # role, status
_XMODEL = f"VARCHAR(191) {_X} NOT NULL"
_XTEXT = f"TEXT {_X} NULL"
_XJSON = f"LONGTEXT {_X} NOT NULL"
_XTABLE = "DEFAULT CHARACTER SET utf8mb4 COLLATE {bin}"

#: ``MIGRATIONS[:n]`` built schema version ``n``; append, never edit.
MIGRATIONS: list[tuple[str, ...]] = [
    (
        f"""CREATE TABLE IF NOT EXISTS {{p}}threads (
            tenant_id {_ID}, id {_ID}, user_id {_OPT_ID}, agent_id {_OPT_ID}, title TEXT NULL,
            metadata LONGTEXT NOT NULL, status VARCHAR(16) NOT NULL,
            created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, current_branch {_ID},
            PRIMARY KEY (tenant_id, id),
            KEY {{p}}threads_updated (tenant_id, updated_at, id),
            KEY {{p}}threads_user (tenant_id, user_id, updated_at)
        ) {TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}branches (
            tenant_id {_ID}, thread_id {_ID}, name {_ID}, created_at BIGINT NOT NULL,
            from_branch {_OPT_ID}, from_entry {_OPT_ID}, last_position BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, thread_id, name)
        ) {TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}entries (
            tenant_id {_ID}, thread_id {_ID}, branch {_ID}, position BIGINT NOT NULL,
            id {_ID}, role VARCHAR(16) NOT NULL, content LONGTEXT NULL, name TEXT NULL,
            tool_calls LONGTEXT NULL, tool_call_id TEXT NULL, metadata LONGTEXT NOT NULL,
            state LONGTEXT NOT NULL, token_count INT NOT NULL, created_at BIGINT NOT NULL,
            idempotency_key {_OPT_ID}, idem_hash BIGINT UNSIGNED NULL,
            PRIMARY KEY (tenant_id, thread_id, branch, position),
            UNIQUE KEY {{p}}entries_idem (tenant_id, thread_id, branch, idem_hash),
            KEY {{p}}entries_id (tenant_id, thread_id, id)
        ) {TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}working (
            tenant_id {_ID}, run_id {_ID}, k {_ID}, value LONGTEXT NOT NULL,
            PRIMARY KEY (tenant_id, run_id, k)
        ) {TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}snapshots (
            tenant_id {_ID}, run_id {_ID}, user_id {_OPT_ID}, value LONGTEXT NOT NULL,
            saved_at BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, run_id),
            KEY {{p}}snapshots_user (tenant_id, user_id)
        ) {TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}summaries (
            tenant_id {_ID}, id {_ID}, agent_id {_ID}, user_id {_OPT_ID},
            content LONGTEXT NOT NULL, created_at BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, id),
            KEY {{p}}summaries_agent (tenant_id, agent_id, created_at)
        ) {TABLE}""",
    ),
    (
        # Keyword search over entries (one ALTER: one table rebuild).
        f"""ALTER TABLE {{p}}entries MODIFY content {_SEARCHED} NULL,
            ADD FULLTEXT KEY {{p}}entries_fts (content)""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}records (
            tenant_id {_ID}, kind {_KIND}, id {_ID}, agent_id {_OPT_ID}, user_id {_OPT_ID},
            k {_OPT_ID}, content {_SEARCHED} NOT NULL, data LONGTEXT NOT NULL,
            created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, expires_at BIGINT NULL,
            PRIMARY KEY (tenant_id, kind, id),
            KEY {{p}}records_list (tenant_id, kind, created_at),
            KEY {{p}}records_user (tenant_id, user_id, kind, created_at),
            KEY {{p}}records_key (tenant_id, kind, k),
            FULLTEXT KEY {{p}}records_fts (content)
        ) {TABLE}""",
        f"""CREATE TABLE IF NOT EXISTS {{p}}vectors (
            tenant_id {_ID}, kind {_KIND}, id {_ID}, model_id {_MODEL}, thread_id {_OPT_ID},
            vector MEDIUMBLOB NOT NULL,
            PRIMARY KEY (tenant_id, kind, id, model_id),
            KEY {{p}}vectors_model (tenant_id, model_id, kind, thread_id),
            KEY {{p}}vectors_thread (tenant_id, thread_id, kind)
        ) {TABLE}""",
    ),
    (
        # Exact ids: one ALTER per table (one rebuild each; rows kept). Every string
        # column moves, not only the compared ones: MySQL cannot pick between two
        # binary collations of one charset in an expression (JSON_ARRAY of a page row
        # would fail with "Illegal mix of collations"); searched ``content`` keeps
        # ``utf8mb4_unicode_ci``, which a binary collation outranks. The idempotency
        # key becomes TEXT: it is matched through ``idem_hash``, never indexed, so it
        # holds any key derived from a 255-character one.
        f"""ALTER TABLE {{p}}threads {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY id {_XID},
            MODIFY user_id {_XOPT}, MODIFY agent_id {_XOPT}, MODIFY title {_XTEXT},
            MODIFY metadata {_XJSON}, MODIFY status {_XWORD}, MODIFY current_branch {_XID}""",
        f"""ALTER TABLE {{p}}branches {_XTABLE}, MODIFY tenant_id {_XID},
            MODIFY thread_id {_XID}, MODIFY name {_XID}, MODIFY from_branch {_XOPT},
            MODIFY from_entry {_XOPT}""",
        f"""ALTER TABLE {{p}}entries {_XTABLE}, MODIFY tenant_id {_XID},
            MODIFY thread_id {_XID}, MODIFY branch {_XID}, MODIFY id {_XID},
            MODIFY role {_XWORD}, MODIFY name {_XTEXT}, MODIFY tool_calls LONGTEXT {_X} NULL,
            MODIFY tool_call_id {_XTEXT}, MODIFY metadata {_XJSON}, MODIFY state {_XJSON},
            MODIFY idempotency_key {_XTEXT}""",
        f"""ALTER TABLE {{p}}working {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY run_id {_XID},
            MODIFY k {_XID}, MODIFY value {_XJSON}""",
        f"""ALTER TABLE {{p}}snapshots {_XTABLE}, MODIFY tenant_id {_XID},
            MODIFY run_id {_XID}, MODIFY user_id {_XOPT}, MODIFY value {_XJSON}""",
        f"""ALTER TABLE {{p}}summaries {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY id {_XID},
            MODIFY agent_id {_XID}, MODIFY user_id {_XOPT}, MODIFY content {_XJSON}""",
        f"""ALTER TABLE {{p}}records {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY kind {_XKIND},
            MODIFY id {_XID}, MODIFY agent_id {_XOPT}, MODIFY user_id {_XOPT},
            MODIFY k {_XOPT}, MODIFY data {_XJSON}""",
        f"""ALTER TABLE {{p}}vectors {_XTABLE}, MODIFY tenant_id {_XID}, MODIFY kind {_XKIND},
            MODIFY id {_XID}, MODIFY model_id {_XMODEL}, MODIFY thread_id {_XOPT}""",
    ),
    # Records carry the revision that ``RecordGuard`` compares (an instant ADD COLUMN).
    ("ALTER TABLE {p}records ADD COLUMN revision BIGINT NOT NULL DEFAULT 0",),
    # The payload fingerprint of keyed entries (NULL on older rows: they match any
    # payload). Batch members' longer keys (see memorybank.rules.idempotency) fit the TEXT
    # key column of migration 3.
    (
        "ALTER TABLE {p}entries ADD COLUMN fingerprint"
        " CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL",
    ),
    # Change counters of the in-process vector cache (``_vector_cache``): ``seq`` is the
    # writing ``vector_put``'s version; deletes bump the generation.
    (
        "ALTER TABLE {p}vectors ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE {p}vectors ADD KEY {p}vectors_seq (tenant_id, model_id, kind, seq)",
        f"""CREATE TABLE IF NOT EXISTS {{p}}vector_stamps (
            tenant_id {_XID}, model_id {_XMODEL}, kind {_XKIND},
            version BIGINT NOT NULL DEFAULT 0, generation BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant_id, model_id, kind)
        ) ENGINE=InnoDB {_XTABLE}""",
        "INSERT IGNORE INTO {p}vector_stamps (tenant_id, model_id, kind)"
        " SELECT DISTINCT tenant_id, model_id, kind FROM {p}vectors",
    ),
    # The exact entry count of each branch, kept by every write that adds or removes a
    # branch's entries (appends, deletes, truncation, clearing, forks, compaction), in
    # a statement the write already runs where it has one: ``entry_count`` reads one
    # row instead of counting the branch's (10k entries: 1.5 ms -> 0.07 ms). An instant
    # ADD COLUMN, then one pass over the entries primary key; a re-run recounts. A
    # process of an older memorybank still running after the upgrade does not keep the
    # counts: upgrade them together.
    (
        "ALTER TABLE {p}branches ADD COLUMN entry_count BIGINT NOT NULL DEFAULT 0",
        "UPDATE {p}branches b JOIN (SELECT tenant_id, thread_id, branch, COUNT(*) AS n"
        " FROM {p}entries GROUP BY tenant_id, thread_id, branch) c"
        " ON b.tenant_id = c.tenant_id AND b.thread_id = c.thread_id AND b.name = c.branch"
        " SET b.entry_count = c.n",
    ),
    # Entry ids are unique on a branch (``memorybank.rules.entry_ids``), kept by a unique
    # key on a 64-bit hash of the id (the id itself does not fit beside the tenant,
    # thread and branch in InnoDB's 3072 bytes: 3068 with the hash). An instant ADD
    # COLUMN; the hash of every stored id, computed by the server as Python does
    # (``ID_HASH_SQL``), for the first copy of an id on its branch only: a branch
    # that already holds an id twice (imported before the rule) keeps both, the later
    # one without a hash (NULLs never clash), so the key builds on any data; then the
    # key (an in-place index build). A re-run hashes again and skips the built key. A
    # process of an older memorybank still running after the upgrade writes entries
    # without a hash, unchecked: upgrade them together.
    (
        "ALTER TABLE {p}entries ADD COLUMN id_hash BIGINT UNSIGNED NULL",
        "UPDATE {p}entries e JOIN (SELECT tenant_id, thread_id, branch, id,"
        " MIN(position) AS lowest FROM {p}entries GROUP BY tenant_id, thread_id, branch, id) f"
        " ON e.tenant_id = f.tenant_id AND e.thread_id = f.thread_id AND e.branch = f.branch"
        f" AND e.position = f.lowest SET e.id_hash = {ID_HASH_SQL.format(column='e.id')}",
        "ALTER TABLE {p}entries ADD UNIQUE KEY {p}entries_idh (tenant_id, thread_id, branch,"
        " id_hash)",
    ),
]
