"""Pseudo-relevance feedback (RM3, ``rag.feedback``) and the ``prf`` search mode."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from rag.feedback import rm3
from rag.search import MODES, chunk_search
from rag.tuning import TUNING


def test_rm3_adds_the_feedback_units_terms_and_keeps_the_query_share() -> None:
    expansion = rm3(
        ["research", "caroline"],
        [
            (Counter({"caroline": 1, "adopt": 2, "agenc": 2}), 0.9),
            (Counter({"adopt": 1, "agenc": 1, "call": 1}), 0.6),
        ],
        terms=4,
    )
    assert math.isclose(sum(expansion.weights.values()), 1.0)
    added = [term for term, _ in expansion.added]
    assert added[:2] == ["adopt", "agenc"]  # in both units, most frequent
    assert "research" not in added and "caroline" not in added  # query terms are not "added"
    # The query's own terms keep the original weight between them, plus what feedback gives them.
    assert expansion.weights["research"] == pytest.approx(TUNING.feedback.original_weight / 2)
    assert expansion.weights["caroline"] > TUNING.feedback.original_weight / 2


def test_rm3_weighs_units_by_their_first_pass_score() -> None:
    strong, weak = Counter({"alpha": 1}), Counter({"beta": 1})
    expansion = rm3(["q"], [(strong, 3.0), (weak, 1.0)], terms=2)
    weights = dict(expansion.added)
    assert weights["alpha"] == pytest.approx(3 * weights["beta"])


def test_rm3_without_feedback_keeps_the_query() -> None:
    expansion = rm3(["a", "b"], [(Counter(), 1.0)])
    assert expansion.weights == {"a": 0.5, "b": 0.5} and expansion.added == ()


@pytest.mark.django_db
def test_prf_finds_by_feedback_terms_what_the_query_words_miss(actor, kb, ingest) -> None:
    ingest("Caroline researched adoption agencies for months before she decided.")
    ingest("The adoption agencies she called were helpful and kind.")
    ingest("A recipe for banana bread with walnuts and butter.")
    ingest("Deploy the payment service behind the load balancer.")
    query = "What did Caroline research?"

    keyword = chunk_search(actor=actor, query=query, mode="keyword")
    assert [hit.text for hit in keyword.hits] == [
        "Caroline researched adoption agencies for months before she decided."
    ]
    hybrid = chunk_search(actor=actor, query=query, mode="hybrid")
    assert hybrid.expansion == ()

    prf = chunk_search(actor=actor, query=query, mode="prf")
    assert prf.mode == "prf" and prf.fusion == "weighted"
    assert {"adopt", "agenc"} <= {term for term, _ in prf.expansion}
    helpful = next(hit for hit in prf.hits if hit.text.startswith("The adoption agencies"))
    # Found by the expanded keyword stage, which the plain query's BM25 never reached.
    assert helpful.keyword_rank is not None and helpful.vector_rank is not None
    assert "prf" in prf.stage_ms


def test_prf_is_a_mode_of_every_search() -> None:
    assert "prf" in MODES


@pytest.mark.django_db
def test_the_search_api_runs_prf_and_explains_it(agent_client, kb, ingest) -> None:
    ingest("Caroline researched adoption agencies for months before she decided.")
    ingest("The adoption agencies she called were helpful and kind.")
    response = agent_client.client.post(
        "/api/v1/rag/search", {"query": "What did Caroline research?", "mode": "prf"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["mode"] == "prf"
    assert "adopt" in [item["term"] for item in body["expansion"]]
    assert all(set(hit["explanation"]) >= {"vector", "keyword"} for hit in body["results"])
    plain = agent_client.client.post(
        "/api/v1/rag/search", {"query": "What did Caroline research?"}, format="json"
    ).json()
    assert plain["expansion"] == []


def test_group_lift_raises_units_whose_group_matches_often() -> None:
    from rag.granularity import group_lift

    order = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]
    # Units 2, 3 and 4 share a session; unit 1 is alone in its own.
    groups = {1: "session_1", 2: "session_2", 3: "session_2", 4: "session_2"}
    lifted = group_lift(order, groups, weight=0.5, top=3)
    assert [unit for unit, _ in lifted][:2] == [2, 3]
    assert all(0 <= score <= 1 for _, score in lifted)
    assert group_lift(order, groups, weight=0.0) == order


def test_query_analysis_drops_question_words_only_when_something_else_is_left(
    tune,
) -> None:
    from rag import analysis

    tune("rag.keyword.query_function_words", True)
    assert analysis.analyze_query("What did she research?") == ["research"]
    assert analysis.analyze_query("Who did it?") == analysis.analyze("Who did it?")
    tune("rag.keyword.query_function_words", False)
    assert analysis.analyze_query("What did she research?") == analysis.analyze(
        "What did she research?"
    )


def test_query_analysis_leaves_statements_whole() -> None:
    """A claim's auxiliaries and pronouns may be what it says; only a question's frame goes."""
    from rag import analysis

    claim = "Vitamin D has no effect on her bones"
    assert not analysis.asks(claim)
    assert analysis.analyze_query(claim) == analysis.analyze(claim)
    assert analysis.asks("has she moved")
    assert analysis.asks("the dog's name?")
    assert analysis.analyze_query("has she moved") == analysis.analyze("moved")


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
@pytest.mark.django_db
def test_a_document_with_several_matching_chunks_lifts_them(actor, kb, ingest, tune):

    filler = " ".join(f"word{i}" for i in range(60))
    ingest(
        f"# Soil\n\nTomato plants want deep loose soil. {filler}\n\n"
        f"# Water\n\nTomato plants want water at the roots. {filler}"
    )
    ingest("Tomato soil water tomato.")
    query = "tomato soil water"

    def order() -> list[int]:
        hits = chunk_search(actor=actor, query=query, mode="hybrid", top_k=3).hits
        return [hit.document_id for hit in hits]

    tune("rag.granularity.group_weight_all", 0.0)
    plain = order()
    tune("rag.granularity.group_weight_all", 5.0)
    lifted = order()
    several = max(set(plain), key=plain.count)  # the document with two chunks found
    assert plain.count(several) == 2 and plain[0] != several
    assert lifted[:2] == [several, several]


@pytest.mark.parametrize(
    ("question", "several"),
    [
        ("What books has Melanie read?", True),
        ("Which classical musicians does she enjoy listening to?", True),
        ("What transgender-specific events has Caroline attended?", True),
        ("How many times has she been to the beach?", True),
        ("What do Jon and Gina both like?", True),
        ("What are some changes she has faced?", True),
        ("What book did Melanie read?", False),  # singular
        ("What does Melanie do to destress?", False),  # no object before the auxiliary
        ("Which song motivates Caroline?", False),  # a verb in "s", no auxiliary after it
        ("What Jon thinks the ideal studio looks like?", False),
        ("When did Melanie paint a sunset?", False),
        ("Tomatoes has many vitamins", False),  # a statement: not a question
    ],
)
def test_query_analysis_tells_questions_asking_for_several_things(
    question: str, several: bool
) -> None:
    from rag.analysis import asks_for_several

    assert asks_for_several(question) is several


def test_group_diversity_spreads_the_best_over_their_groups_and_keeps_the_ranks_scores() -> None:
    from rag.granularity import group_diversify

    order = [(1, 1.0), (2, 0.95), (3, 0.9), (4, 0.85), (5, 0.5), (6, 0.4)]
    groups = {1: "s1", 2: "s1", 3: "s1", 4: "s2", 5: "s3", 6: "s1"}
    spread = group_diversify(order, groups, weight=0.2, depth=5)
    # Unit 2 (0.95 x 0.8 = 0.76) yields to unit 4, the first of its session (0.85); unit 3
    # (0.9 x 0.8 ** 2 = 0.576) still passes unit 5 (0.5); unit 6 is beyond the depth and stays
    # last.
    assert [unit for unit, _ in spread] == [1, 4, 2, 3, 5, 6]
    assert [score for _, score in spread] == [score for _, score in order]
    # One group, or no weight: the ranking as it was.
    assert group_diversify(order, dict.fromkeys(range(1, 7), "s1"), weight=0.2) == order
    assert group_diversify(order, groups, weight=0.0) == order
    # Units without a group are each their own: nothing to spread.
    assert group_diversify(order, {}, weight=0.9) == order
