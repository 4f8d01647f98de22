"""memorybank.recall's ranking core on small synthetic data: every assertion can fail."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest

from memorybank.recall import (
    Analyzer,
    BM25Index,
    Candidate,
    ConversationStructure,
    HybridRanker,
    HybridWeights,
    SearchOptions,
    asked_role,
    date_match,
    has_temporal_intent,
    has_time_expression,
    mentioned_speakers,
    normalize_array,
    parse_date_spans,
    rank,
    reciprocal_rank_fusion,
    weighted_fusion,
)

MAY = datetime(2024, 5, 3, 10, 0, tzinfo=UTC)
JUNE = datetime(2024, 6, 20, 18, 0, tzinfo=UTC)

# Only the keyword signal and one context feature at a time, so each test
# isolates the behaviour it names.
KEYWORD_ONLY = HybridWeights(
    keyword=1.0,
    semantic=0.0,
    after=(),
    question_after=0.0,
    before=(),
    session=0.0,
    speaker=0.0,
    date=0.0,
    time_word=0.0,
    role=0.0,
    feedback=0.0,
)


def opts(**weights: object) -> SearchOptions:
    return SearchOptions(weights=KEYWORD_ONLY).with_weights(**weights)


def turn(i: int, name: str, text: str, when: datetime = MAY, thread: str = "t") -> Candidate:
    return Candidate(f"{thread}{i}", thread, i, f"{name}: {text}", name, when)


# ---------------------------------------------------------------------- text / BM25
def test_stemming_joins_running_and_runs() -> None:
    an = Analyzer()
    assert an.terms("running") == an.terms("runs") == ["run"]
    assert an.terms("The cats were sleeping") == ["cat", "sleep"]


def test_analyzer_without_stemmer_keeps_words() -> None:
    assert Analyzer(language=None).terms("running dogs") == ["running", "dogs"]


def test_bm25_matches_hand_computed_score() -> None:
    idx = BM25Index(k1=1.2, b=0.75, analyzer=Analyzer(language=None))
    idx.add("a", "apple banana")
    idx.add("b", "apple cherry cherry")
    idx.add("c", "date")
    # N=3, df(cherry)=1, |b|=3, avgdl=(2+3+1)/3=2
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / 2))
    assert idx.scores("cherry") == pytest.approx({"b": expected})
    # a term in 2 of 3 docs keeps a positive idf (Lucene form)
    assert idx.idf("apple") == pytest.approx(math.log(1 + 1.5 / 2.5))
    assert idx.scores("apple")["a"] > idx.scores("apple")["b"]  # shorter doc wins


def test_bm25_incremental_remove_and_replace_equal_fresh_index() -> None:
    idx = BM25Index()
    idx.add("1", "my dog loves the beach")
    idx.add("2", "the cat hates water")
    idx.add("3", "a dog and a cat")
    idx.remove("3")
    idx.add("2", "the dog sleeps")  # replace
    fresh = BM25Index()
    fresh.add("1", "my dog loves the beach")
    fresh.add("2", "the dog sleeps")
    assert idx.scores("dog") == pytest.approx(fresh.scores("dog"))
    assert len(idx) == 2 and "3" not in idx
    assert idx.remove("3") is False
    assert idx.search("running dogs", limit=1) == idx.search("dog", limit=1)
    ((doc, score),) = idx.search("dog", allowed={"2"})
    assert doc == "2" and score == pytest.approx(fresh.scores("dog")["2"])


def test_bm25_stemmed_search_finds_inflected_form() -> None:
    idx = BM25Index()
    idx.add("x", "I went running yesterday")
    idx.add("y", "Cooking pasta tonight")
    assert [d for d, _ in idx.search("runs")] == ["x"]


# ---------------------------------------------------------------------- fusion
def test_normalize_array_methods() -> None:
    x = np.array([0.0, 2.0, 4.0])
    assert normalize_array(x, "max").tolist() == [0.0, 0.5, 1.0]
    assert normalize_array(np.array([0.2, 0.3, 0.4]), "minmax") == pytest.approx([0, 0.5, 1])
    assert normalize_array(np.array([3.0, 3.0]), "minmax").tolist() == [0.0, 0.0]


def test_weighted_fusion_keeps_score_gaps_where_rrf_does_not() -> None:
    keyword = {"a": 10.0, "b": 1.0, "c": 0.9}
    semantic = {"b": 0.52, "c": 0.50, "a": 0.49}
    fused = weighted_fusion(
        {"keyword": keyword, "semantic": semantic},
        {"keyword": 1.0, "semantic": 0.6},
        {"keyword": "max", "semantic": "minmax"},
    )
    assert max(fused, key=fused.__getitem__) == "a"  # the decisive keyword hit wins
    rrf = reciprocal_rank_fusion(
        [
            sorted(keyword, key=keyword.__getitem__, reverse=True),
            sorted(semantic, key=semantic.__getitem__, reverse=True),
        ]
    )
    assert rrf["b"] > rrf["a"]  # rank-only fusion lets the near-tie in cosine decide
    assert rrf["a"] == pytest.approx(1 / 61 + 1 / 63)


def test_weighted_fusion_missing_ids_get_nothing_from_that_signal() -> None:
    fused = weighted_fusion(
        {"kw": {"a": 2.0, "b": 1.0}, "sem": {"c": 0.9, "a": 0.1}}, {"kw": 1.0, "sem": 1.0}
    )
    assert fused == pytest.approx({"a": 1.0, "b": 0.0, "c": 1.0})


# ---------------------------------------------------------------------- conversation
def conversation() -> list[Candidate]:
    return [
        turn(0, "Ann", "Did you go anywhere nice on holiday?"),
        turn(1, "Bob", "Yes, Lisbon, we ate so many pastries."),
        turn(2, "Ann", "I adopted a puppy named Rex."),
        turn(3, "Bob", "Congratulations, what breed?"),
        turn(4, "Ann", "A beagle, he loves the beach."),
        turn(5, "Bob", "I started painting landscapes.", JUNE),
        turn(6, "Ann", "Landscapes are my favourite too.", JUNE),
    ]


def test_a_question_hands_its_relevance_to_the_answer() -> None:
    cands = conversation()
    query = "What breed is it?"  # matches Bob's question t3; Ann's answer t4 comes next
    plain = rank(query, cands, options=opts())
    assert plain[0].id == "t3"
    asked = rank(query, cands, options=opts(question_after=0.7))
    assert [r.id for r in asked[:2]] == ["t3", "t4"]
    assert asked[1].score == pytest.approx(0.7 * asked[0].score)
    # a statement hands on nothing extra
    told = rank("beagle beach", cands, options=opts(question_after=0.7))
    assert next(r for r in told if r.id == "t5").score == 0.0


def test_weak_hits_lend_little_and_the_session_prior_needs_own_evidence() -> None:
    day = datetime(2024, 5, 1, 9, tzinfo=UTC)
    cands = [
        Candidate("strong", "t", 0, "Ann: zebra zebra safari", "Ann", day),
        Candidate("after_strong", "t", 1, "Bob: Got it.", "Bob", day),
        Candidate("weak", "t", 2, "Ann: a safari once", "Ann", day),
        Candidate("after_weak", "t", 3, "Bob: Got it.", "Bob", day),
    ]
    query = "zebra safari"
    flat = SearchOptions(weights=KEYWORD_ONLY, context_strength=0.0).with_weights(after=(0.5,))
    lent = {r.id: r.score for r in rank(query, cands, options=flat)}
    gated = {r.id: r.score for r in rank(query, cands, options=replace(flat, context_strength=1.0))}
    assert lent["after_strong"] == gated["after_strong"]  # the best hit lends in full
    assert gated["after_weak"] < lent["after_weak"]  # a weak one lends less
    session = SearchOptions(weights=KEYWORD_ONLY).with_weights(session=0.8)
    scores = {r.id: r.score for r in rank(query, cands, options=session)}
    assert scores["after_strong"] == scores["after_weak"] == 0.0  # no evidence of their own
    ungated = {
        r.id: r.score for r in rank(query, cands, options=replace(session, session_evidence=0.0))
    }
    assert ungated["after_strong"] > 0.0


@pytest.mark.parametrize(
    ("query", "role"),
    [
        ("What breed is my dog?", "user"),
        ("How many bikes do I own?", "user"),
        ("Can you suggest some accessories for my phone?", "user"),  # advice now
        ("Which hotel did you recommend?", "assistant"),
        ("You mentioned some resources for guided imagery, can you list them again?", "assistant"),
        ("Remind me of the venue from our previous chat", "assistant"),
        ("What is the capital of France?", None),
    ],
)
def test_asked_role_reads_whose_words_the_query_wants(query: str, role: str | None) -> None:
    assert asked_role(query) == role


def test_the_role_asked_about_ranks_first_only_in_a_chat_with_an_assistant() -> None:
    day = datetime(2024, 5, 1, 9, tzinfo=UTC)
    chat = [
        Candidate("u", "t", 0, "I adopted a beagle puppy last week", None, day, role="user"),
        Candidate(
            "a",
            "t",
            1,
            "A lovely breed for a puppy owner: that breed needs long walks.",
            None,
            day,
            role="assistant",
        ),
    ]
    query = "What breed is the puppy I adopted?"
    plain = rank(query, chat, options=opts())
    assert plain[0].id == "a"  # more of the query's words
    boosted = rank(query, chat, options=opts(role=1.0))
    assert boosted[0].id == "u" and boosted[0].signals["role"] == 1.0
    assert rank("Which breed did you say I adopted?", chat, options=opts(role=1.0))[0].id == "a"
    # two people talking (every turn a "user" message): the role tells nothing
    people = [replace(c, role="user") for c in chat]
    assert [r.score for r in rank(query, people, options=opts(role=1.0))] == [
        r.score for r in rank(query, people, options=opts())
    ]


def test_neighbour_expansion_surfaces_the_next_turn() -> None:
    cands = conversation()
    query = "Where did Bob go on holiday?"
    plain = rank(query, cands, options=opts())
    assert plain[0].id == "t0"
    assert next(r for r in plain if r.id == "t1").score == 0.0  # no shared word
    expanded = rank(query, cands, options=opts(after=(0.5,)))
    assert [r.id for r in expanded[:2]] == ["t0", "t1"]
    assert expanded[1].score == pytest.approx(0.5 * expanded[0].score)


def test_feedback_words_find_the_mention_that_shares_no_word_with_the_query() -> None:
    # "dog" is only in the first turn; the evidence names the dog, not the word
    filler = ["bought a new bike", "the weather was grey", "cooked lentil soup",
              "read a novel about ships", "called my sister", "fixed the kitchen tap",
              "watched a chess match", "planted tomatoes"]  # fmt: skip
    cands = [
        turn(0, "Ann", "My dog Max loves the park."),
        *(turn(i + 1, "Ann", text) for i, text in enumerate(filler)),
        turn(9, "Ann", "Max is a golden retriever."),
    ]
    query = "What breed is my dog?"
    on = [r.id for r in rank(query, cands, options=opts(feedback=0.4))]
    off = [r.id for r in rank(query, cands, options=opts())]
    assert on[:2] == ["t0", "t9"], on
    assert off[0] == "t0" and off[-1] == "t9", off  # no shared word: last of the ties
    ranker = HybridRanker(cands, opts(feedback=0.4))
    feedback = ranker.signals(query).feedback
    assert feedback is not None
    # "max" (in two candidates) is a feedback word; "park" (in one) and "dog" (asked) are not
    assert feedback[9] > 0 and feedback[0] > 0 and not feedback[1:9].any()


def test_feedback_words_come_only_from_strong_first_hits() -> None:
    # the second hit scores far below the first: its words ("cilantro") lift nothing
    cands = [
        turn(0, "Ann", "My dog Max eats dog treats."),
        turn(1, "Ann", "The dog next door hates cilantro."),
        *(turn(i + 2, "Ann", f"filler line number {i}") for i in range(8)),
        turn(10, "Ann", "Cilantro tastes of soap to me."),
        turn(11, "Ann", "Max chews everything."),
    ]
    ranker = HybridRanker(cands, opts(feedback=0.4))
    sig = ranker.signals("What treats does my dog eat?")
    first = ranker.combine(sig, replace(ranker.options.weights, feedback=0.0))
    assert first[1] < 0.5 * first[0]
    assert sig.feedback is not None
    assert sig.feedback[11] > 0 and sig.feedback[10] == 0


def test_neighbours_do_not_cross_sessions_or_threads() -> None:
    cands = [*conversation(), turn(0, "Cy", "Unrelated thread start", MAY, thread="u")]
    st = ConversationStructure(cands, session_gap=timedelta(hours=1), window=1)
    assert st.session.tolist() == [0, 0, 0, 0, 0, 1, 1, 2]
    assert st.prev[0].tolist() == [-1, 0, 1, 2, 3, -1, 5, -1]
    assert st.next[0].tolist() == [1, 2, 3, 4, -1, 6, -1, -1]


def test_session_smoothing_lifts_session_mates() -> None:
    cands = conversation()
    query = "puppy beagle holiday"
    plain = {r.id: r.score for r in rank(query, cands, options=opts())}
    smoothed = {r.id: r.score for r in rank(query, cands, options=opts(session=0.5))}
    # t0 (holiday) has evidence of its own and shares the session of the hits
    assert 0.0 < plain["t0"] < smoothed["t0"]
    assert plain["t1"] == smoothed["t1"] == 0.0  # no evidence of its own: no lift
    assert smoothed["t5"] == 0.0  # other session: no lift
    ungated = replace(opts(session=0.5), session_evidence=0.0)
    assert {r.id: r.score for r in rank(query, cands, options=ungated)}["t1"] > 0.0


def test_speaker_named_in_query_is_preferred() -> None:
    cands = [
        turn(0, "Ann", "I love hiking in the mountains."),
        turn(1, "Bob", "I love hiking in the mountains."),
    ]
    assert [r.id for r in rank("Does Bob love hiking?", cands, options=opts())] == ["t0", "t1"]
    boosted = rank("Does Bob love hiking?", cands, options=opts(speaker=0.3))
    assert [r.id for r in boosted] == ["t1", "t0"]
    assert boosted[0].score == pytest.approx(1.3 * boosted[1].score)
    assert mentioned_speakers("What is Bob's dog called?", ["Ann", "Bob Stone"]) == {"Bob Stone"}
    assert mentioned_speakers("What does Anna like?", ["Ann"]) == set()


def test_speaker_names_are_not_keywords_by_default() -> None:
    cands = [turn(0, "Ann", "Bob, the weather is lovely"), turn(1, "Bob", "Rain all day")]
    ranker = HybridRanker(cands, opts())
    assert ranker.keyword_scores("What did Bob say?").tolist() == [0.0, 0.0]


def test_date_in_query_prefers_entries_from_that_month() -> None:
    cands = [
        turn(0, "Ann", "We went camping by the lake.", MAY),
        turn(1, "Ann", "We went camping by the lake.", JUNE),
    ]
    assert rank("When did Ann go camping in June?", cands, options=opts())[0].id == "t0"
    assert rank("When did Ann go camping in June?", cands, options=opts(date=0.5))[0].id == "t1"


def test_date_parsing_and_matching() -> None:
    (span,) = parse_date_spans("on 8 May, 2023")
    assert (span.start, span.end, span.year_known) == (date(2023, 5, 8), date(2023, 5, 8), True)
    (june,) = parse_date_spans("camping in June?")
    assert not june.year_known
    assert parse_date_spans("I may come") == []
    assert date_match(datetime(2022, 6, 30, tzinfo=UTC), [june]) == 1.0  # any year
    assert date_match(datetime(2022, 7, 7, tzinfo=UTC), [june]) == pytest.approx(
        0.5
    )  # 7 of 14 days after
    assert date_match(datetime(2022, 8, 1, tzinfo=UTC), [june]) == 0.0
    assert date_match(None, [june]) == 0.0


def test_when_questions_prefer_entries_with_time_words() -> None:
    assert has_temporal_intent("When did you move?") and has_temporal_intent("How long ago?")
    assert not has_temporal_intent("What did you eat?")
    assert has_time_expression("I moved there last year") and not has_time_expression("so cool")
    cands = [
        turn(0, "Ann", "I moved to Berlin, love it."),
        turn(1, "Ann", "I moved to Berlin last year."),
    ]
    assert rank("When did Ann move to Berlin?", cands, options=opts(time_word=0.5))[0].id == "t1"


def test_semantic_signal_from_vectors() -> None:
    base = conversation()[:3]
    vecs = [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.7, 0.7])]
    cands = [
        Candidate(c.id, c.thread_id, c.position, c.text, c.name, c.created_at, v)
        for c, v in zip(base, vecs, strict=True)
    ]
    out = rank(
        "zzz", cands, query_vector=np.array([0.1, 1.0]), options=opts(keyword=0.0, semantic=1.0)
    )
    assert [r.id for r in out] == ["t1", "t2", "t0"]
    given = rank(
        "zzz",
        cands,
        semantic_scores={"t0": 0.9, "t1": 0.1, "t2": 0.5},
        options=opts(keyword=0.0, semantic=1.0),
    )
    assert [r.id for r in given] == ["t0", "t2", "t1"]


def test_weak_cosines_are_not_stretched_over_the_keyword_match() -> None:
    # the keyword finds a passing mention ("t1"); every cosine is weak (at most 0.20),
    # so the best of them counts a third of a full match (0.15 of the 0.45 from the
    # lowest to 0.5) instead of a full one
    base = conversation()[:3]
    cosines = {"t0": 0.20, "t1": 0.05, "t2": 0.10}
    keyword = {"t0": 0.5, "t1": 1.0, "t2": 0.0}
    weights = {"keyword": 1.0, "semantic": 1.2}
    scaled = rank(
        "zzz", base, keyword_scores=keyword, semantic_scores=cosines, options=opts(**weights)
    )
    assert [r.id for r in scaled][:2] == ["t1", "t0"]
    stretched = replace(opts(**weights), semantic_reference=0.0)  # plain min-max
    plain = rank("zzz", base, keyword_scores=keyword, semantic_scores=cosines, options=stretched)
    assert [r.id for r in plain][:2] == ["t0", "t1"]
    # a strong match (above the reference) is normalised as plain min-max
    strong = {"t0": 0.80, "t1": 0.05, "t2": 0.10}
    a = rank("zzz", base, keyword_scores=keyword, semantic_scores=strong, options=opts(**weights))
    b = rank("zzz", base, keyword_scores=keyword, semantic_scores=strong, options=stretched)
    assert [(r.id, r.score) for r in a] == [(r.id, r.score) for r in b]


def test_default_options_rank_answer_in_top_two() -> None:
    out = rank("Where did Bob go on holiday?", conversation(), limit=2)
    assert {r.id for r in out} == {"t0", "t1"}
