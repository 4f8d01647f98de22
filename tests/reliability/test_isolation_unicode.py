"""Isolation between users whose ids look alike, on every store, through the library and
through REST (``X-User-Id`` as UTF-8 bytes, and ``X-User-Id-Encoded`` percent-encoded).

Ids compare exactly and are never normalised: ``"zoë"`` (one code point), ``"zoë"``
(``e`` and a combining diaeresis, NFD), the full-width ``"ｚｏë"`` and ``"Zoë"`` are four
users, and none of them sees another's threads, facts or documents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.all_stores import STORE_KINDS
from tests.server.conftest import Api, fresh_store, running_api

#: Four users whose names a human reads as one.
USERS = ("zo\u00eb", "zoe\u0308", "\uff5a\uff4f\u00eb", "Zo\u00eb")


def _raw(headers: Mapping[str, object]) -> list[tuple[bytes, bytes]]:
    """``headers`` as bytes, as they go on the wire (an id's UTF-8 bytes included)."""
    return [
        (k.encode(), v if isinstance(v, bytes) else str(v).encode()) for k, v in headers.items()
    ]


def _secret(user: str) -> str:
    return "secret-" + "-".join(f"{ord(c):x}" for c in user)


@pytest.fixture(params=STORE_KINDS)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """A thread, a fact and a document of each of ``USERS``, in tenant acme."""
    async with fresh_store(str(request.param), tmp_path) as store, running_api(store) as api:
        memory = api.memory.tenant("acme")
        for user in USERS:
            mine = memory.scoped(user_id=user)
            await mine.threads.create(title=_secret(user))
            await mine.facts.add(content=f"the fact {_secret(user)}")
            await mine.documents.add(f"the document {_secret(user)}")
        yield api


async def test_lookalike_users_see_only_their_own_records_in_the_library(world: Api) -> None:
    memory = world.memory.tenant("acme")
    for user in USERS:
        mine = memory.scoped(user_id=user)
        titles = [t.title for t in await mine.threads.list()]
        assert titles == [_secret(user)], user
        facts = [f.content for f in await mine.facts.list()]
        assert facts == [f"the fact {_secret(user)}"], user
        hits = await mine.search("document secret", kinds=["documents"])
        assert {h.content for h in hits} == {f"the document {_secret(user)}"}, user


async def test_lookalike_users_see_only_their_own_records_over_rest(world: Api) -> None:
    key = await world.key("acme")
    for user in USERS:
        others = [_secret(u) for u in USERS if u != user]
        for header in (
            {"X-User-Id": user.encode()},  # UTF-8 bytes, as curl or a Python client sends
            {"X-User-Id-Encoded": quote(user, safe="").encode()},  # as the TS client sends
        ):
            headers = _raw({**key, **header})
            threads = await world.client.get("/v1/threads", headers=headers)
            assert threads.status_code == 200, threads.text
            assert [t["title"] for t in threads.json()["items"]] == [_secret(user)], user
            facts = await world.client.get("/v1/facts", headers=headers)
            assert [f["content"] for f in facts.json()["items"]] == [f"the fact {_secret(user)}"]
            hits = await world.client.post(
                "/v1/search",
                json={"query": "document secret", "kinds": ["documents"]},
                headers=headers,
            )
            assert hits.status_code == 200, hits.text
            assert [h["document"]["content"] for h in hits.json()["items"]] == [
                f"the document {_secret(user)}"
            ]
            for answer in (threads, facts, hits):
                assert not any(secret in answer.text for secret in others), (user, header)
