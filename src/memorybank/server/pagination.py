"""Opaque cursor pagination: every list route takes ``limit`` and ``cursor`` and
answers ``{"items": [...], "next_cursor": ...}``.

A cursor is an opaque string (today: ``o`` and the position of the next item in the
route's order, ``CURSOR_PATTERN``); clients pass it back unchanged and must not build
one. Items added or removed between two pages may shift a page by that many items
(offsets, not keysets: the library's lists are ordered by fields that are not unique).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query

from memorybank.errors import InvalidInput
from memorybank.server.models import Page
from memorybank.stores.contract.types import UNSET

__all__ = [
    "CURSOR_DESCRIPTION",
    "CURSOR_PATTERN",
    "DEFAULT_LIMIT",
    "ENTITY_CURSOR_PREFIX",
    "MAX_LIMIT",
    "AgentQuery",
    "CursorQuery",
    "LimitQuery",
    "OwnerDep",
    "PageDep",
    "Pager",
    "UserQuery",
    "decode_cursor",
    "encode_cursor",
    "opt",
    "paging_last",
]

T = TypeVar("T")

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000

LimitQuery = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Page size (1 to {MAX_LIMIT}).")]
#: Every cursor this server returns matches it (and every string that matches is one).
CURSOR_PATTERN = "^o(?:0|[1-9][0-9]{0,8})$"
#: What an entity listing's cursor starts with (the id of the page's last entity follows).
ENTITY_CURSOR_PREFIX = "e:"
#: Positions a cursor can name (``CURSOR_PATTERN``'s nine digits).
_MAX_OFFSET = 10**9

#: What a ``cursor`` query parameter is (``schema_limits`` states its pattern).
CURSOR_DESCRIPTION = "`next_cursor` of the previous page (opaque: pass it back unchanged)."
CursorQuery = Annotated[str | None, Query(max_length=300, description=CURSOR_DESCRIPTION)]


def encode_cursor(offset: int) -> str:
    """The cursor of the item at ``offset``."""
    return f"o{min(offset, _MAX_OFFSET - 1)}"


def decode_cursor(cursor: str | None) -> int:
    """The offset a cursor stands for (0 for none); ``InvalidInput`` (field ``cursor``)
    for a string no server made."""
    if cursor is None:
        return 0
    if re.fullmatch(CURSOR_PATTERN, cursor) is None:
        raise InvalidInput("cursor is not one this server returned", field="cursor")
    return int(cursor[1:])


@dataclass(frozen=True, slots=True)
class Pager:
    """A list route's ``limit`` and ``cursor`` query parameters (``PageDep``)."""

    limit: int
    cursor: str | None

    async def first_n(
        self, fetch: Callable[[int | None], Awaitable[Sequence[Any]]], out: Callable[[Any], T]
    ) -> Page[T]:
        """A page of a list the library can only cut from its start (``fetch(n)``: the
        first ``n`` items, ``None``: all): items ``[offset, offset + limit)``, each turned
        into its body by ``out``, and the next cursor. Costs a read of ``offset + limit + 1``
        items."""
        offset, limit = decode_cursor(self.cursor), self.limit
        want = offset + limit + 1
        items = list(await fetch(want if want < 2**31 else None))
        more = len(items) > offset + limit
        return Page[T](
            items=[out(item) for item in items[offset : offset + limit]],
            next_cursor=encode_cursor(offset + limit) if more else None,
        )


async def _pager(limit: LimitQuery = DEFAULT_LIMIT, cursor: CursorQuery = None) -> Pager:
    return Pager(limit, cursor)


#: The ``limit`` and ``cursor`` query parameters of a list route. Name it before the
#: route's other dependencies: the OpenAPI document lists its parameters in that order
#: (the route's own query parameters, then its dependencies').
PageDep = Annotated[Pager, Depends(_pager)]


def paging_last(route: object, problems: Sequence[Any]) -> list[Any]:
    """A 422's ``problems`` in the order of the route's parameters: FastAPI validates a
    dependency's before the route's own, so ``PageDep``'s problems move after the others,
    where a route's own ``limit`` and ``cursor`` (its last query parameters) stand."""
    dependant = getattr(route, "dependant", None)
    if dependant is None or all(d.call is not _pager for d in dependant.dependencies):
        return list(problems)
    paging = [p for p in problems if tuple(p.get("loc", ())) in _PAGING]
    return [p for p in problems if p not in paging] + paging


_PAGING = {("query", "limit"), ("query", "cursor")}


def opt(value: str | None) -> Any:
    """A query parameter left out is the library's ``UNSET`` (the caller's scope)."""
    return UNSET if value is None else value


AgentQuery = Annotated[str | None, Query(description="Agent (left out: the caller's scope).")]
UserQuery = Annotated[
    str | None, Query(description="User (left out: the caller's scope, X-User-Id).")
]


async def _owner(agent_id: AgentQuery = None, user_id: UserQuery = None) -> dict[str, Any]:
    return {"agent_id": opt(agent_id), "user_id": opt(user_id)}


#: The ``agent_id`` and ``user_id`` query parameters, as the verb's keyword arguments.
OwnerDep = Annotated[dict[str, Any], Depends(_owner)]
