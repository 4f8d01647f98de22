"""The ranking's per-text features: the same BM25 as the index, time words as before,
and a memo that stays bounded."""

from __future__ import annotations

import random

import numpy as np
import pytest

from memorybank.recall import features
from memorybank.recall.features import keyword_scores, text_features
from memorybank.recall.temporal import has_time_expression
from memorybank.stores.keyword.bm25 import BM25Index
from memorybank.stores.keyword.text import Analyzer, tokenize

WORDS = (
    "running runs ran cat cats dog paris may june yesterday trip bread baked the a of"
    " 2023 1998 week's sunday I'm photos camera lake hiking hiked museum"
).split()


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_keyword_scores_equal_the_index(seed: int) -> None:
    analyzer = Analyzer()
    texts = _texts(150, seed)
    index = BM25Index(k1=1.2, b=0.4, analyzer=analyzer)
    for i, text in enumerate(texts):
        index.add(str(i), text)
    for query in ("where did the cats run", "Paris trip in May 2023", "baked bread", "zzz"):
        terms = index.query_terms(query)
        expected = index.scores_for(query, [str(i) for i in range(len(texts))])
        got = keyword_scores(text_features(analyzer, texts), terms, 1.2, 0.4)
        assert np.array_equal(got, expected)  # exact: same formula, same order of additions
    assert keyword_scores(text_features(analyzer, texts), [], 1.2, 0.4).sum() == 0.0
    assert len(keyword_scores([], ["run"], 1.2, 0.4)) == 0


def test_features_match_the_analyser_and_time_words() -> None:
    analyzer = Analyzer()
    texts = [*_texts(200, 9), "", "back in 1998!", "on 2023-05-01", "x2023", "mayhem", "ok"]
    for text, found in zip(texts, text_features(analyzer, texts), strict=True):
        assert list(found.terms) == analyzer.terms(text)
        assert found.has_time == has_time_expression(text)
    assert [f.has_time for f in text_features(analyzer, texts[-5:])] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "MEMO_SIZE", 100)
    analyzer = Analyzer()
    text_features(analyzer, [f"message number {i}" for i in range(1_000)])
    memo = features._MEMOS[analyzer]
    assert len(memo) <= 100
    assert "message number 999" in memo  # the newest stay
    assert "message number 0" not in memo


def _tokenize_before(text: str) -> list[str]:
    """The tokeniser as it was written first: every match, then its apostrophe cut."""
    import re

    out = []
    for tok in re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()):
        quote = tok.find("'")
        out.append(tok[:quote] if quote >= 0 else tok)
    return out


def test_tokenize_keeps_its_tokens() -> None:
    from memorybank.stores.keyword.text import tokenize

    rng = random.Random(3)
    alphabet = "ab'c 0Z9'x'y' \u00e9-\u00fcnicode''d  I'm don't rock'n'roll 3'4 'quoted' it's"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in [*texts, "I'm", "don't stop", "rock'n'roll", "''", "x'"]:
        assert tokenize(text) == _tokenize_before(text), text
    assert tokenize("Don't STOP, it's 2023") == ["don", "stop", "it", "2023"]


@pytest.mark.parametrize("seed", range(4))
def test_session_pool_is_each_sessions_top_mean(seed: int) -> None:
    from datetime import UTC, datetime, timedelta

    from memorybank.recall.conversation import Candidate, ConversationStructure

    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    candidates = [
        Candidate(
            str(i),
            f"t{rng.randint(0, 6)}",
            rng.randint(0, 60),
            "x",
            created_at=start + timedelta(hours=rng.choice([0, 0, 1, 5, 30])),
        )
        for i in range(rng.randint(1, 120))
    ]
    structure = ConversationStructure(candidates)
    values = np.array([rng.choice([0.0, 0.5, rng.random(), -rng.random()]) for _ in candidates])
    for top in (1, 2, 3, 5):
        got = structure.session_pool(values, top=top)
        for i in range(len(candidates)):
            same = np.sort(values[structure.session == structure.session[i]])[::-1]
            expected = same[:top].mean()
            assert got[i] == expected  # the same bits as ndarray.mean


def test_tokenize_is_the_word_regex_on_any_text() -> None:
    """The fast path (no apostrophe) finds exactly the tokens of the regex, whatever the
    characters: non-ASCII letters, digits and case mappings, control characters."""
    import re

    word = re.compile(r"([a-z0-9]+)(?:'[a-z]+)?")
    rng = random.Random(2)
    alphabet = "abcXYZ019 '',.-_\t\n\u2019\u00e9\u0130\u212a\u00b2\u00df?!\x00\ud800"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        assert tokenize(text) == word.findall(text.lower()), text


def test_time_tokens_are_time_words_and_years() -> None:
    from memorybank.recall.temporal import tokens_have_time

    assert tokens_have_time(["we", "met", "in", "1999"])
    assert tokens_have_time(iter(["see", "you", "tomorrow"]))
    assert tokens_have_time(["2099"]) and tokens_have_time(["1900"])
    for tokens in (["1899"], ["2100"], ["19990"], ["x2020"], ["the", "cat"], []):
        assert not tokens_have_time(tokens), tokens
