"""Webhook endpoints through ``/v1/admin/webhooks`` and ``Webhooks``, on every store:
registered per tenant, the secret shown once, paused and resumed with compare-and-swap,
deleted; admin key only."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorybank.errors import InvalidInput, NotFound
from memorybank.webhooks import WEBHOOK_KIND, WEBHOOK_TENANT, Webhooks
from tests.all_stores import STORE_KINDS
from tests.server.conftest import Api, fresh_store, running_api


@pytest.fixture(params=STORE_KINDS)
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    # no delivery worker: these tests manage endpoints only
    async with (
        fresh_store(str(request.param), tmp_path) as store,
        running_api(store, webhooks=False) as running,
    ):
        yield running


def _tenant(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def test_register_list_pause_resume_delete(api: Api) -> None:
    c, admin = api.client, api.admin
    acme, zeta = _tenant("acme"), _tenant("zeta")
    made = await c.post(
        "/v1/admin/webhooks",
        json={"tenant": acme, "url": "https://example.test/hook", "kinds": ["entry.added"]},
        headers=admin,
    )
    assert made.status_code == 201, made.text
    hook, secret = made.json()["webhook"], made.json()["secret"]
    assert secret.startswith("whsec_") and len(secret) > 40
    assert hook["tenant"] == acme and hook["state"] == "active" and hook["kinds"] == ["entry.added"]
    assert hook["failures"] == 0 and hook["delivered"] == 0 and hook["cursor"] is None
    # the secret is stored (deliveries are signed with it) but never answered again
    got = await c.get(f"/v1/admin/webhooks/{hook['id']}", headers=admin)
    assert got.status_code == 200 and secret not in got.text and "secret" not in got.json()
    record = await api.memory.store.record_get(WEBHOOK_TENANT, WEBHOOK_KIND, hook["id"])
    assert record is not None and record.data["secret"] == secret

    own = await c.post(
        "/v1/admin/webhooks",
        json={"tenant": zeta, "url": "http://127.0.0.1:9/x", "secret": "s" * 32},
        headers=admin,
    )
    assert own.status_code == 201 and own.json()["secret"] == "s" * 32
    other = own.json()["webhook"]
    listed = await c.get("/v1/admin/webhooks", params={"tenant": acme}, headers=admin)
    assert [h["id"] for h in listed.json()["items"]] == [hook["id"]]
    everything = await c.get("/v1/admin/webhooks", headers=admin)
    assert {h["id"] for h in everything.json()["items"]} >= {hook["id"], other["id"]}

    paused = await c.patch(f"/v1/admin/webhooks/{hook['id']}", json={"paused": True}, headers=admin)
    assert paused.status_code == 200, paused.text
    assert paused.json()["state"] == "paused"
    assert paused.json()["paused_reason"] == "paused by an operator"
    changed = await c.patch(
        f"/v1/admin/webhooks/{hook['id']}",
        json={"kinds": None, "url": "https://example.test/v2"},
        headers=admin,
    )
    body = changed.json()
    assert body["kinds"] is None and body["url"] == "https://example.test/v2"
    assert body["state"] == "paused"  # a field left out stays as it was
    resumed = await c.patch(
        f"/v1/admin/webhooks/{hook['id']}", json={"paused": False}, headers=admin
    )
    assert resumed.json()["state"] == "active" and resumed.json()["paused_reason"] is None

    deleted = await c.delete(f"/v1/admin/webhooks/{hook['id']}", headers=admin)
    assert deleted.status_code == 200
    gone = await c.get(f"/v1/admin/webhooks/{hook['id']}", headers=admin)
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"
    assert (await c.delete(f"/v1/admin/webhooks/{hook['id']}", headers=admin)).status_code == 404


async def test_only_the_admin_key_manages_webhooks(api: Api) -> None:
    acme = _tenant("acme")
    key = await api.key(acme)
    body = {"tenant": acme, "url": "https://example.test/hook"}
    refused = await api.client.post("/v1/admin/webhooks", json=body, headers=key)
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert (await api.client.get("/v1/admin/webhooks", headers=key)).status_code == 403
    assert (await api.client.post("/v1/admin/webhooks", json=body)).status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.test/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "https:///no-host"}, "url"),
        ({"kinds": []}, "kinds"),
        ({"kinds": ["entry.exploded"]}, "kinds"),
        ({"secret": "short"}, "secret"),
        ({"tenant": "~memorybank-server"}, "tenant"),
    ],
)
async def test_bad_registrations_are_refused(api: Api, body: dict[str, object], field: str) -> None:
    sent = {"tenant": _tenant("acme"), "url": "https://example.test/hook", **body}
    answer = await api.client.post("/v1/admin/webhooks", json=sent, headers=api.admin)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field


async def test_concurrent_changes_are_never_lost(api: Api) -> None:
    """Pauses, resumes and URL changes at once: every call is built on the value it
    replaced (compare-and-swap), so the last state is one of them, whole."""
    hooks = Webhooks(api.memory.store)
    info, _ = await hooks.create(_tenant("acme"), "https://example.test/0")
    calls = [hooks.update(info.id, url=f"https://example.test/{i}") for i in range(1, 6)]
    calls += [hooks.update(info.id, paused=i % 2 == 0) for i in range(6)]
    done = await asyncio.gather(*calls)
    final = await hooks.get(info.id)
    assert final.url in {f"https://example.test/{i}" for i in range(1, 6)}
    assert final.state in ("active", "paused") and len(done) == 11
    record = await api.memory.store.record_get(WEBHOOK_TENANT, WEBHOOK_KIND, info.id)
    assert record is not None and record.revision >= 6  # one revision per change that changed it
    with pytest.raises(NotFound):
        await hooks.get(info.id, tenant="someone-else")
    with pytest.raises(InvalidInput):
        await hooks.update(info.id, url="gopher://x")


def test_the_cli_manages_endpoints(tmp_path: Path) -> None:
    """``memorybank webhooks create/list/pause/resume/delete`` on a SQLite file."""
    from tests.cli.test_cli import invoke

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    acme = _tenant("acme")
    made = invoke(
        "webhooks",
        "create",
        "--tenant",
        acme,
        "--endpoint",
        "https://example.test/h",
        "--kind",
        "entry.added",
        "--url",
        url,
    )
    assert made.exit_code == 0, made.output
    first, secret = made.output.strip().splitlines()
    hook_id = first.split()[1]
    assert secret.startswith("whsec_") and hook_id.startswith("wh_")
    assert invoke("webhooks", "pause", hook_id, "--url", url).output.strip().endswith("paused")
    listed = invoke("webhooks", "list", "--tenant", acme, "--url", url)
    assert hook_id in listed.output and "paused by an operator" in listed.output
    assert secret not in listed.output
    assert invoke("webhooks", "resume", hook_id, "--url", url).output.strip().endswith("active")
    assert invoke("webhooks", "delete", hook_id, "--url", url).exit_code == 0
    missing = invoke("webhooks", "delete", hook_id, "--url", url)
    assert missing.exit_code == 1 and "not_found" in missing.output
