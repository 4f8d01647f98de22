"""Records of the PostgreSQL store (facts, documents, core facts): the statements of
their writes (``SQLWrites`` runs them, guarded or not), reads by id or key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memorybank.stores.contract._async.store import Record, Visibility
from memorybank.stores.contract.pages import pick_records
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.postgres.statements import R_READ, keyed, record_at, scope_filter
from memorybank.stores.sql.common import RECORD_COLUMNS, dump, row_to_record
from memorybank.stores.sql.program import Statement


class RecordsMixin(PostgresBase):
    """The ``_records`` part of the store (see the module docstring)."""

    _record_columns = R_READ  # on ``r``; reads by id are its own (``record_at``)

    def _record_put_statements(self, tenant: str, records: Sequence[Record]) -> list[Statement]:
        """One ``INSERT ... ON CONFLICT DO UPDATE`` for the batch, one JSON parameter (the
        last copy of an id wins)."""
        latest = {(r.kind, r.id): r for r in records}
        batch = dump(
            [
                {
                    "kind": r.kind,
                    "id": r.id,
                    "agent_id": r.agent_id,
                    "user_id": r.user_id,
                    "key": r.key,
                    "content": r.content,
                    "data": r.data,
                    "created_at": r.created_at.isoformat(),
                    "updated_at": r.updated_at.isoformat(),
                    "expires_at": None if r.expires_at is None else r.expires_at.isoformat(),
                    "revision": r.revision,
                }
                for r in latest.values()
            ]
        )
        return [(self._sql.record_put, (tenant, batch))]

    def _record_delete_statements(
        self, tenant: str, kind: str, ids: Sequence[str]
    ) -> tuple[list[Statement], list[int]]:
        """The records and their vectors deleted in one statement (the ids one array)."""
        key = (tenant, kind, list(ids))
        return [(self._sql.record_delete, (*key, tenant, *key))], [0]

    async def record_get_many(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, Record]:
        """One statement: a primary-key descent per id (the ids as one parameter); what
        ``visible_to`` may not see is left out of the answer."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        params = {"ids": ids, "tenant": tenant, "kind": kind}
        rows = await self._fetch(self._sql.record_get_many, params, retry=True)
        found = {row[1]: row_to_record(row) for row in rows}
        return pick_records(ids, found.get, visible_to)

    async def record_list_keys_linked(
        self,
        tenant: str,
        links: Mapping[str, str],
        keys: Sequence[str],
        linked_kind: str,
        *,
        visible_to: Visibility | None = None,
    ) -> tuple[dict[str, list[Record]], dict[str, Record]]:
        """One statement: the ``_list_keys`` rows, then a primary-key descent
        (``record_at``) per distinct id they name, scoped the same way."""
        kinds = list(links)
        wanted = list(dict.fromkeys(keys))
        if not wanted or not kinds:
            return {kind: [] for kind in kinds}, {}
        p = self.prefix
        params: dict[str, Any] = {
            "tenant": tenant,
            "kinds": kinds,
            "fields": [links[kind] for kind in kinds],
            "keys": wanted,
            "linked": linked_kind,
        }
        field = "(%(fields)s::text[])[array_position(%(kinds)s::text[], r.kind)]"
        query = (
            f"WITH k AS MATERIALIZED ({keyed(p)}),"
            f" e AS MATERIALIZED (SELECT {R_READ}, CASE WHEN"
            f" json_typeof(r.data -> {field}) = 'string' THEN r.data ->> {field} END AS far"
            f" FROM k r WHERE true{scope_filter('r', visible_to, params)})"
            f" SELECT 0 AS part, {RECORD_COLUMNS} FROM e"
            f" UNION ALL SELECT 1, {R_READ} FROM (SELECT DISTINCT far FROM e"
            f" WHERE far IS NOT NULL) x, LATERAL {record_at(p, '%(linked)s', 'x.far')} r"
            " WHERE r.tenant_id = %(tenant)s AND r.kind = %(linked)s AND r.id = x.far"
            f"{scope_filter('r', visible_to, params)} ORDER BY 1, 8, 3"
        )
        by: dict[str, list[Record]] = {kind: [] for kind in kinds}
        linked: dict[str, Record] = {}
        for row in await self._fetch(query, params, retry=True):
            record = row_to_record(row[1:])
            if row[0] == 0:
                by[record.kind].append(record)
            else:
                linked[record.id] = record
        return by, linked

    async def record_list_links(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        field: str,
        targets: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """``_list_keys`` with the far end checked in SQL: only the links come back."""
        if not targets:
            return []
        return await self._list_keys(tenant, [kind], keys, visible_to, (field, targets))

    async def _list_keys(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        visible_to: Visibility | None,
        link: tuple[str, Sequence[str]] | None = None,
    ) -> list[Record]:
        """One statement for every kind: a probe of the ``records_key`` index per (kind,
        key) pair (``keyed``), then the scope (and ``link``: the far end) on the rows found."""
        wanted = list(dict.fromkeys(keys))
        if not wanted or not kinds:
            return []
        params: dict[str, Any] = {"tenant": tenant, "kinds": list(kinds), "keys": wanted}
        where = ""
        if link is not None:
            params["field"], targets = link
            params["targets"] = list(dict.fromkeys(targets))
            where = (
                " AND r.data ->> %(field)s::text = ANY(%(targets)s::text[])"
                " AND json_typeof(r.data -> %(field)s::text) = 'string'"
            )
        query = (
            f"WITH r AS MATERIALIZED ({keyed(self.prefix)}) SELECT {R_READ} FROM r"
            f" WHERE true{where}{scope_filter('r', visible_to, params)}"
            " ORDER BY r.created_at, r.id"
        )
        return [row_to_record(r) for r in await self._fetch(query, params, retry=True)]
