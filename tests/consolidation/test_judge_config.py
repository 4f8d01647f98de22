"""The judge and the background schedule configured in the service and the CLI:
``MEMORYBANK_JUDGE_URL``/``_MODEL``/``_API_KEY`` and ``MEMORYBANK_CONSOLIDATE_EVERY``
(``app_from_env``), ``memorybank consolidate --judge-url --judge-model``, ``serve``'s
flags checked before it starts; against the scripted OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memorybank import Memory
from memorybank.cli import app as cli_app
from memorybank.consolidation.config import consolidate_every, judge_from
from memorybank.errors import ConfigurationError
from memorybank.server.app import app_from_env
from memorybank.server.keys import KeyRing
from tests.llm_server import JudgeModel, ScriptedLLM, running
from tests.server.conftest import CHEAP_HASH

MODEL = "test-judge"

HIKE = "User likes hiking in the Alps"
HIKE_AGAIN = "User enjoys hiking trips in the Alps"


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    yield from running(ScriptedLLM(MODEL, JudgeModel(), tokens=40))


def says(server: ScriptedLLM, relation: str, a: str, b: str) -> None:
    """Script the judge's model: the pair of texts ``a``, ``b`` is ``relation``."""
    assert isinstance(server.answer, JudgeModel)
    server.answer.says(relation, a, b)


def test_settings_from_text() -> None:
    assert judge_from(environ={}) is None
    with pytest.raises(ConfigurationError, match="both"):
        judge_from("http://127.0.0.1:1/v1", environ={})
    with pytest.raises(ConfigurationError, match="both"):
        judge_from(environ={"MEMORYBANK_JUDGE_MODEL": "m"})
    judge = judge_from(
        environ={"MEMORYBANK_JUDGE_URL": "http://127.0.0.1:1/v1", "MEMORYBANK_JUDGE_MODEL": "m"}
    )
    assert judge is not None and judge.model == "m"
    judge.close()
    assert [consolidate_every(t) for t in ("90", "90s", "15m", "2h", "1d")] == [
        90.0,
        90.0,
        900.0,
        7200.0,
        86400.0,
    ]
    assert consolidate_every(None) is None and consolidate_every("off") is None
    for bad in ("0", "-5m", "soon", "5w"):
        with pytest.raises(ConfigurationError):
            consolidate_every(bad)


async def test_the_service_reads_the_judge_and_the_schedule_from_its_environment(
    server: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYBANK_URL", f"sqlite:///{tmp_path}/svc.db")
    monkeypatch.setenv("MEMORYBANK_ADMIN_KEY", "admin-key")
    monkeypatch.setenv("MEMORYBANK_EMBED", "inline")
    monkeypatch.setenv("MEMORYBANK_JUDGE_URL", server.base_url)
    monkeypatch.setenv("MEMORYBANK_JUDGE_MODEL", MODEL)
    monkeypatch.setenv("MEMORYBANK_JUDGE_API_KEY", "secret")
    monkeypatch.setenv("MEMORYBANK_CONSOLIDATE_EVERY", "1h")
    app = app_from_env()
    says(server, "duplicate", HIKE, HIKE_AGAIN)
    async with app.router.lifespan_context(app):
        ring = app.state.keys = KeyRing(app.state.memory.store, hasher=CHEAP_HASH)
        _, secret = await ring.create("svc", "test")
        ana = {"Authorization": f"Bearer {secret}", "X-User-Id": "ana"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            for text in (HIKE, HIKE_AGAIN):
                made = await client.post("/v1/facts", json={"content": text}, headers=ana)
                assert made.status_code == 201, made.text
            done = await client.post("/v1/consolidate", json={}, headers=ana)
            assert done.status_code == 200, done.text
            assert [c["decided_by"] for c in done.json()["changes"]] == ["judge"]
            assert done.json()["judge"]["model"] == MODEL
            # the background schedule looks after the tenant the requests named
            for text in ("Ana lives in Paris", "Ana lives in Rome"):
                await client.post("/v1/facts", json={"content": text}, headers=ana)
            [report] = await app.state.memory.consolidation.tick()
            assert (report.user_id, report.superseded) == ("ana", 1)
    assert server.requests and all(r["model"] == MODEL for r in server.requests)


def test_the_cli_consolidates_with_the_judge_it_is_given(
    server: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    with Memory(url) as memory:
        for text in (HIKE, HIKE_AGAIN):
            memory.facts.add(content=text, user_id="u")
    says(server, "duplicate", HIKE, HIKE_AGAIN)
    monkeypatch.setenv("MEMORYBANK_JUDGE_API_KEY", "secret")
    runner = CliRunner()
    flags = ["--judge-url", server.base_url, "--judge-model", MODEL]
    done = runner.invoke(cli_app, ["consolidate", "--user", "u", "--url", url, "--json", *flags])
    assert done.exit_code == 0, done.output
    assert '"decided_by": "judge"' in done.output
    with Memory(url) as memory:
        assert [f.content for f in memory.facts.list(user_id="u")] == [HIKE]
    half = runner.invoke(cli_app, ["consolidate", "--user", "u", "--url", url, "--judge-url", "x"])
    assert half.exit_code != 0 and "--judge-model" in half.output


def test_serve_refuses_bad_consolidation_flags_before_starting() -> None:
    runner = CliRunner()
    bad = runner.invoke(cli_app, ["serve", "--consolidate-every", "soon", "--port", "1"])
    assert bad.exit_code == 2 and "--consolidate-every" in bad.output
    half = runner.invoke(cli_app, ["serve", "--judge-model", MODEL, "--port", "1"])
    assert half.exit_code == 2 and "--judge-url" in half.output
