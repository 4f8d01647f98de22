"""The SQL engines' logic is written once (``memorybank.stores.sql``): each engine's store
overrides a verb of ``SQLCore`` only where the engine truly differs, each listed here with
the reason (the code says it too). A new override fails this test until it is justified.
"""

from __future__ import annotations

import pytest

from memorybank.stores.mysql._async import AsyncMySQLStore
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.sql._async.core import SQLCore
from memorybank.stores.sql.dialect import MYSQL, POSTGRES, SQLITE
from memorybank.stores.sqlite._async import AsyncSQLiteStore

#: What every engine gives the core: its table names, its reads and its transactions
#: (``_transact`` runs the shared write programs), its dialect, the names of its record
#: columns and index and its summaries' order, whether its branches keep counts, and its
#: entry columns (a fork's copy, a compaction's summary row), its read of a thread with a
#: page of its entries (``entry_list``'s), and its change feed's state read and
#: ``user.forgotten`` event.
PRIMITIVES = {
    "_table", "_select_many", "_write_many", "_write_one", "_write_again",
    "_transact", "dialect",
    "_record_columns", "_records_by_time", "_summary_order",
    "_kept_counts", "_copied_columns", "_entry_insert", "_feed_state_read", "_missing_table",
    "_forgotten", "_thread_and_page",
}  # fmt: skip

OWN: dict[type[SQLCore], dict[str, str]] = {
    AsyncSQLiteStore: {
        "capabilities": "FTS5 besides the shared ones: its keyword search ranks by bm25",
        "_thread_source": "no index holds updated_at: the owner index is named for a user",
        "_branch_count": "its branches keep no count (an append would write a second row)",
        "_vectors_deleting": "vector deletions are logged by trigger: no counters to bump",
        "forget_user": "the shared erasure, then the full-text merge, vector files, WAL",
        "_forget_write": "user.forgotten recorded even with the feed off (the tenant's rowid"
        " range), the user's events gone through the user index it fills lazily",
        "events_list": "a rowid range per tenant, the user index filled by reads (lazily)",
    },
    AsyncPostgresStore: {
        "_list_keys": "one probe of the key index per (kind, key): the planner's plans",
        "entry_get_many": "one array parameter, a descent of the id index per id",
        "entry_update": "one statement for the batch (json_to_recordset), not one a change",
        "record_get_many": "one primary-key descent per id (record_at), one array parameter",
        "_vc_rows": "COPY in binary into one buffer, the owners read apart (a join can plan"
        " as a nested loop over every record before the tables have statistics)",
        "_vc_check": "one statement: ids unnested, each a primary-key descent (LATERAL)",
        "_vc_exact": "pgvector's distances in SQL or its HNSW index, numpy only without it",
        "_vc_arrays": "the embedding column: pgvector's text, else the fallback's float32 bytea",
    },
    AsyncMySQLStore: {
        "_forget_write": "the erasure and the feed's steps in one round trip (the feed's state"
        " read before it), where the shared program takes four",
    },
}


def _overrides(cls: type[SQLCore]) -> set[str]:
    own = cls.__mro__[: cls.__mro__.index(SQLCore)]
    names = {name for name in vars(SQLCore) if not name.startswith(("__", "_abc"))}
    return {name for name in names if any(name in vars(k) for k in own)}


@pytest.mark.parametrize("cls", list(OWN), ids=lambda c: c.__name__)
def test_engines_override_the_core_only_where_they_differ(cls: type[SQLCore]) -> None:
    assert _overrides(cls) - PRIMITIVES == set(OWN[cls])


@pytest.mark.parametrize(
    ("store", "dialect"),
    [(AsyncSQLiteStore, SQLITE), (AsyncPostgresStore, POSTGRES), (AsyncMySQLStore, MYSQL)],
    ids=["sqlite", "postgres", "mysql"],
)
def test_each_engine_names_its_dialect(store: type[SQLCore], dialect: object) -> None:
    assert store.dialect is dialect


def test_many_values_are_one_array_or_bounded_lists() -> None:
    ids = [f"i{n}" for n in range(1001)]
    assert POSTGRES.one_of(ids) == [(" = ANY(%s::text[])", (ids,))]
    chunks = SQLITE.one_of(ids)
    assert [len(params) for _, params in chunks] == [500, 500, 1]
    assert chunks[2] == (" IN (?)", ("i1000",))
    assert MYSQL.one_of(["a", "b"]) == [(" IN (%s, %s)", ("a", "b"))]
    assert MYSQL.table("mb_", "threads") == "`mb_threads`"
    assert MYSQL.delete_from("`mb_vectors`", "v") == "DELETE v FROM `mb_vectors` v"
    assert SQLITE.delete_from("mb_vectors", "v") == "DELETE FROM mb_vectors AS v"
