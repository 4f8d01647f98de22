"""An orphan tool result over HTTP (see ``tests/rules/test_orphan_tool_results.py``)."""

from __future__ import annotations

from tests.rules.test_orphan_tool_results import ORPHAN, call, result
from tests.server.conftest import Api


async def test_rest_refuses_orphans(store_api: Api) -> None:
    """Over HTTP on every store: 422 naming ``tool_call_id``, nothing stored; a result
    whose call is stored is 201."""
    headers = await store_api.key("acme")
    client = store_api.client
    made = await client.post("/v1/threads", json={"agent_id": "atlas"}, headers=headers)
    assert made.status_code == 201, made.text
    entries = f"/v1/threads/{made.json()['id']}/entries"
    refused = await client.post(entries, json=result(ORPHAN), headers=headers)
    assert refused.status_code == 422, refused.text
    assert refused.json()["field"] == "tool_call_id"
    listed = await client.get(entries, headers=headers)
    assert listed.json()["items"] == []
    assert (await client.post(entries, json=call("c1"), headers=headers)).status_code == 201
    assert (await client.post(entries, json=result("c1"), headers=headers)).status_code == 201
