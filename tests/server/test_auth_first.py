"""A caller without a valid key learns nothing from the body it sent: a body that is not
JSON (or not UTF-8) gets 401 on every route that takes one, not the 422 a caller with a
key gets."""

from __future__ import annotations

import pytest

from tests.server.conftest import Api
from tests.server.test_auth import ALL, BAD_KEYS, make_world, tenant
from tests.server.test_auth import api as api  # one app for the module, as there

# Every test makes tenants of its own (``tenant``), so they share the module's app.
pytestmark = pytest.mark.asyncio(loop_scope="module")

BODY_ROUTES = sorted(route for route, case in ALL.items() if case.body is not None)
MALFORMED = {"not json": b"{not json", "not utf-8": b'{"title": "\xff\xfe"}'}


@pytest.mark.parametrize("route", BODY_ROUTES, ids=" ".join)
async def test_a_malformed_body_without_a_valid_key_is_401(
    api: Api, route: tuple[str, str]
) -> None:
    good = await api.key(tenant("tenant-a"))
    world = await make_world(api, good)
    method, template = route
    path = template.format(**ALL[route].params(world))
    real_prefix = good["Authorization"].split("_")[1]
    keys = {**BAD_KEYS, "wrong secret": {"Authorization": f"Bearer mb_{real_prefix}_wrong"}}
    for kind, body in MALFORMED.items():
        for name, headers in keys.items():
            answer = await api.client.request(
                method, path, content=body, headers={**headers, "content-type": "application/json"}
            )
            assert answer.status_code == 401, (kind, name, answer.text)
            assert answer.json()["code"] == "unauthorized"
            assert answer.headers["www-authenticate"] == "Bearer"
        # With a valid key the same body is the caller's mistake: 422 naming the body.
        answer = await api.client.request(
            method, path, content=body, headers={**good, "content-type": "application/json"}
        )
        if route[1].startswith("/v1/admin"):  # a tenant's key on an admin route
            assert answer.status_code == 403, answer.text
        else:
            assert answer.status_code == 422, (kind, answer.text)
            assert answer.json()["field"].startswith("body")
