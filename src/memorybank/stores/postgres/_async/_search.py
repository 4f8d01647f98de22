"""Keyword search of the PostgreSQL store: ``to_tsquery`` over the generated
``search`` columns of entries and records, ranked by ``ts_rank_cd``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memorybank.stores.contract._async.store import SearchHit, Visibility
from memorybank.stores.contract.types import best_hits, searched_kinds
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.postgres.rows import tsquery
from memorybank.stores.postgres.statements import scope_filter


class SearchMixin(PostgresBase):
    """The ``_search`` part of the store (see the module docstring)."""

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """Full text search over the generated tsvectors, ranked by ``ts_rank_cd``.

        One statement: the best ``k`` entries ``UNION ALL`` the best ``k`` records.
        """
        terms = tsquery(query)
        wanted = searched_kinds(kinds, thread_id)
        record_kinds = [kind for kind in wanted if kind != "entry"]
        want_entries = "entry" in wanted
        if not terms or k <= 0 or not (want_entries or record_kinds):
            return []
        p = self.prefix
        params: dict[str, Any] = {"tenant": tenant, "q": terms, "k": k}
        # A scalar subquery: computed once per statement, even in a generic plan
        # (psycopg prepares repeated statements), and still usable by the GIN index.
        tsq = "(SELECT to_tsquery('english', %(q)s))"
        parts: list[str] = []
        if want_entries:
            source = f"{p}entries e JOIN {p}threads t ON t.tenant_id = e.tenant_id"
            source += " AND t.id = e.thread_id"
            where = ""
            if thread_id is not None:
                where += " AND e.thread_id = %(thread)s"
                params["thread"] = thread_id
            scope = scope_filter("t", visible_to, params)
            if thread_id is None and scope:
                # A scope and no thread (one user, one agent, shared-only on either axis):
                # the scope is the set of threads it may see, matched inside
                # ``entries_scoped`` (words and thread in one GIN index), so only the
                # matches in scope are read. No join: with one, a plan could reach the
                # entries per thread by the primary key, reading every entry of those
                # threads, or fetch every match of the tenant and filter after the join.
                # (No scope at all: every thread of the tenant, nothing to narrow.)
                source = f"{p}entries e"
                where += (
                    f" AND ARRAY[e.thread_id] && ARRAY(SELECT t.id FROM {p}threads t"
                    f" WHERE t.tenant_id = %(tenant)s{scope})"
                )
            else:
                where += scope
            parts.append(
                f"(SELECT 'entry', e.id, e.thread_id, e.branch, ts_rank_cd(e.search, {tsq}) AS s"
                f" FROM {source} WHERE e.search @@ {tsq} AND e.tenant_id = %(tenant)s"
                f"{where} ORDER BY s DESC, e.id LIMIT %(k)s)"
            )
        if record_kinds:
            params["kinds"] = record_kinds
            where = scope_filter("r", visible_to, params)
            parts.append(
                f"(SELECT r.kind, r.id, NULL, NULL, ts_rank_cd(r.search, {tsq}) AS s"
                f" FROM {p}records r WHERE r.search @@ {tsq} AND r.tenant_id = %(tenant)s"
                f" AND r.kind = ANY(%(kinds)s::text[]){where} ORDER BY s DESC, r.id LIMIT %(k)s)"
            )
        rows = await self._fetch(" UNION ALL ".join(parts), params, retry=True)
        return best_hits((SearchHit(r[0], r[1], float(r[4]), r[2], r[3]) for r in rows), k)
