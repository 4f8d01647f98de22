"""CrossEncoderReranker on a tiny cross-encoder built and saved here (random weights).

Nothing is downloaded: the model is a one-layer BERT made from a config, with
a vocabulary written by the test. Only behaviour is checked (the model's own
scores order the hits), never quality.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sentence_transformers", reason="pip install memorybank[local]")
pytest.importorskip("transformers", reason="pip install memorybank[local]")

from memorybank import AsyncMemory, ConfigurationError, Memory
from memorybank.rerank import CrossEncoderReranker, RerankCandidate, Reranker
from tests.rerank.test_stage import WORDS, fill, ids

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(
    {w for text in WORDS for w in text.split()} | {"where", "is", "my", "the"}
)]  # fmt: skip


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    wordpiece = Tokenizer(models.WordPiece({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    fast: Any = PreTrainedTokenizerFast  # untyped in some transformers releases
    fast(
        tokenizer_object=wordpiece,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_max_length=64,
    ).save_pretrained(path)
    bert: Any = BertConfig  # its keywords are typed differently across releases
    config = bert(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.2,  # spread-out random scores: distinct, so an order shows
    )
    torch.manual_seed(7)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def reranker(model_dir: Path) -> Iterator[CrossEncoderReranker]:
    with CrossEncoderReranker(model_dir, timeout=None) as rr:
        rr.load()
        yield rr


def own_scores(model_dir: Path, query: str, texts: list[str]) -> list[float]:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), local_files_only=True, device="cpu")
    return [float(x) for x in model.predict([(query, t) for t in texts], show_progress_bar=False)]


def test_scores_are_the_models_own(model_dir: Path, reranker: CrossEncoderReranker) -> None:
    assert isinstance(reranker, Reranker)
    texts = ["garden roses", "garden shed", "garden party"]
    got = reranker.rerank("where is my garden", [RerankCandidate(str(i), t) for i, t in
                                                 enumerate(texts)])  # fmt: skip
    assert got == pytest.approx(own_scores(model_dir, "where is my garden", texts))
    assert len(set(got)) == 3
    assert reranker.rerank("q", []) == []


def test_search_is_ordered_by_the_model(model_dir: Path, reranker: CrossEncoderReranker) -> None:
    with Memory("memory://", reranker=reranker) as mem:
        thread = fill(mem)
        hybrid = mem.search("garden", k=6, thread_id=thread, rerank=False)
        got = mem.search("garden", k=6, thread_id=thread, rerank_top=6)
    scores = own_scores(model_dir, "garden", [h.content or "" for h in hybrid])
    expected = [hybrid[i].id for i in sorted(range(6), key=lambda i: -scores[i])]
    assert expected != ids(hybrid)  # the model disagrees with hybrid: the test can fail
    assert ids(got) == expected
    assert [h.signals["rerank"] for h in got] == pytest.approx(sorted(scores, reverse=True))


async def test_async_search_is_ordered_by_the_model(
    model_dir: Path, reranker: CrossEncoderReranker
) -> None:
    async with AsyncMemory("memory://", reranker=reranker) as mem:
        thread = await mem.threads.create(user_id="u1", agent_id="bot")
        await mem.entries.add_many(thread.id, [{"role": "user", "content": t} for t in WORDS])
        hybrid = await mem.search("garden", k=6, thread_id=thread.id, rerank=False)
        got = await mem.search("garden", k=6, thread_id=thread.id, rerank_top=6)
    scores = own_scores(model_dir, "garden", [h.content or "" for h in hybrid])
    assert ids(got) == [hybrid[i].id for i in sorted(range(6), key=lambda i: -scores[i])]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_timeout_keeps_the_hybrid_order(
    model_dir: Path, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # a fresh reranker must load its model first: far longer than a microsecond
    with CrossEncoderReranker(model_dir, timeout=1e-6) as slow:
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            if asynchronous:
                async with AsyncMemory("memory://", reranker=slow) as amem:
                    thread = await amem.threads.create(user_id="u1", agent_id="bot")
                    await amem.entries.add_many(
                        thread.id, [{"role": "user", "content": t} for t in WORDS]
                    )
                    hybrid = ids(await amem.search("garden", k=5, thread_id=thread.id,
                                                   rerank=False))  # fmt: skip
                    got = ids(await amem.search("garden", k=5, thread_id=thread.id))
            else:
                with Memory("memory://", reranker=slow) as mem:
                    tid = fill(mem)
                    hybrid = ids(mem.search("garden", k=5, thread_id=tid, rerank=False))
                    got = ids(mem.search("garden", k=5, thread_id=tid))
    assert got == hybrid
    assert "took over" in caplog.text


def test_nothing_is_downloaded(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="nothing is downloaded"):
        CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L-6-v2-not-cached-here")
    with pytest.raises(ConfigurationError, match=r"no config\.json"):
        CrossEncoderReranker(tmp_path)
    with pytest.raises(ConfigurationError):
        CrossEncoderReranker(tmp_path, batch_size=0)


def test_a_closed_reranker_fails_and_search_survives(
    model_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    closed = CrossEncoderReranker(model_dir)
    closed.close()
    with pytest.raises(ConfigurationError):
        closed.rerank("q", [RerankCandidate("a", "garden"), RerankCandidate("b", "shed")])
    with Memory("memory://", reranker=closed) as mem:
        thread = fill(mem)
        hybrid = ids(mem.search("garden", k=5, thread_id=thread, rerank=False))
        with caplog.at_level(logging.WARNING, logger="memorybank"):
            assert ids(mem.search("garden", k=5, thread_id=thread)) == hybrid
    assert "keeping the hybrid order" in caplog.text
