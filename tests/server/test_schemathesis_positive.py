"""Every request the schema calls valid is accepted: schemathesis's
``positive_data_acceptance`` (and ``not_a_server_error``) over every tenant route, in
process (the app over ASGI, its lifespan entered, an in-memory store), bounded: a fixed
seed, the positive scenarios of the coverage phase and the schema's examples, about a
minute.

Accepted means any answer but 400/422 (schemathesis counts 401, 403, 404 and 409 as the
server's business: a drawn id rarely exists). The few refusals the schema cannot state
are listed in ``UNSTATABLE`` with the reason; anything else fails the test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.config import SchemathesisConfig  # noqa: E402
from schemathesis.engine import events, from_schema  # noqa: E402
from schemathesis.python import asgi  # noqa: E402

from memorybank.server import create_app  # noqa: E402

ADMIN = "schemathesis-admin"
SEED = 20261130

#: ``(operation, field)`` of a 422 the schema cannot state, and why. Each is said where a
#: user meets it: the field's description (``server.schema_limits.CANNOT_STATE``,
#: ``MessageIn``'s ``tool_call_id``, the store route's description) and docs/server.md.
UNSTATABLE: dict[tuple[str, str], str] = {
    # The store protocol's body is {"v": 1, "args": {...}} whatever the method; each
    # method's arguments are checked by memorybank.stores.http.wire, not stated per method.
    ("POST /v1/store/{method}", "*"): "arguments depend on the path's method",
    # Needs the server's embedder: this server has none (the schema is the same either way).
    ("POST /v1/documents", "embedding"): "a vector needs an embedder",
    # Two fields of one body: invalid_at after valid_at.
    ("POST /v1/graph/relations", "invalid_at"): "a relation ends after it starts",
    # A tool result answers a call an earlier assistant entry of the branch made: what
    # the branch holds is not the body's (MessageIn's tool_call_id says so).
    **{
        (operation, "tool_call_id"): "a tool result answers an earlier call of the branch"
        for operation in (
            "POST /v1/threads/{thread_id}/entries",
            "POST /v1/threads/{thread_id}/entries/batch",
            "POST /cortex/agents/{name}/memory",
        )
    },
    # The user is X-User-Id or the body's user_id: one of two places.
    ("POST /v1/consolidate", "user_id"): "X-User-Id or user_id",
    ("POST /v1/sessions", "user_id"): "X-User-Id or user_id",
}

_CONFIG = """
seed = {seed}
headers = {{ Authorization = "Bearer {key}" }}
continue-on-failure = true
[generation]
mode = "positive"
max-examples = 5
[checks]
enabled = false
not_a_server_error.enabled = true
positive_data_acceptance.enabled = true
[phases]
examples.enabled = true
coverage.enabled = true
fuzzing.enabled = false
stateful.enabled = false
# the change feed's long poll: a drawn wait (up to MAX_WAIT seconds) outlasts the
# client's read timeout, so its requests ask for no wait
[[operations]]
include-path = "/v1/events"
parameters = {{ wait = 0 }}
"""


def _refusals(schema: Any) -> list[tuple[str, str, int, str]]:
    """``(operation, check, status, body)`` of every failed check."""
    failed: list[tuple[str, str, int, str]] = []
    for event in from_schema(schema).execute():
        if isinstance(event, events.FatalError | events.NonFatalError):
            raise AssertionError(f"schemathesis could not run: {event}")
        if not isinstance(event, events.ScenarioFinished):
            continue
        recorder = event.recorder
        for case_id, checks in recorder.checks.items():
            for check in checks:
                if check.failure_info is None:
                    continue
                response = recorder.interactions[case_id].response
                status = response.status_code if response is not None else 0
                body = response.content.decode(errors="replace") if response else ""
                failed.append((recorder.label, check.name, status, body))
    return failed


def _field(body: str) -> str:
    try:
        return str(json.loads(body).get("field"))
    except (ValueError, AttributeError):
        return ""


def test_every_request_the_schema_calls_valid_is_accepted() -> None:
    app: Any = create_app("memory://", admin_key=ADMIN, mcp=False)  # an ASGI app
    with asgi.get_client(app) as client:
        created = client.post(
            "/v1/admin/keys", json={"tenant": "fuzz"}, headers={"Authorization": f"Bearer {ADMIN}"}
        )
    key = created.json()["secret"]
    config = SchemathesisConfig.from_str(_CONFIG.format(seed=SEED, key=key))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=config)
    failed = _refusals(schema.exclude(path_regex="^/v1/admin"))
    unexpected = [
        f"{operation} [{check}] {status}: {body[:300]}"
        for operation, check, status, body in failed
        if check != "positive_data_acceptance"
        or not ((operation, _field(body)) in UNSTATABLE or (operation, "*") in UNSTATABLE)
    ]
    assert not unexpected, "\n".join(sorted(set(unexpected)))
