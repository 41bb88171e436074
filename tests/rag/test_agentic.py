"""Agentic RAG (issue 19): rounds, sufficiency, gaps, reformulation, synthesis, bounds, tenancy."""

from __future__ import annotations

import json
import re

import pytest

import core.llm
from rag import evidence
from rag.agentic import services as agentic
from rag.rerank import reset_reranker
from rag.tuning import TUNING
from tests.support.openai_standin import openai_standin_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

URL = "/api/v1/rag/agentic"
KBS = "/api/v1/rag/knowledge-bases"

HARBOUR = [
    (
        "Harbour cranes",
        "The harbour cranes lift containers from ships onto the quay. Crane operators work in "
        "shifts of eight hours. Each crane lifts about thirty containers an hour.",
    ),
    (
        "Harbour tides",
        "Tides in the harbour rise twice a day. Ships enter the harbour at high tide because "
        "the channel is shallow. The tide tables are published every spring.",
    ),
    (
        "Harbour pilots",
        "Pilots guide large ships through the harbour channel. A pilot boards each ship at the "
        "outer buoy. Pilots know the harbour's sandbanks and currents.",
    ),
    (
        "Bakery",
        "The bakery opens at six. Sourdough bread rises overnight in baskets. Croissants are "
        "folded with butter eleven times.",
    ),
]


def code(response) -> str:
    return str(response.json()["error"]["code"])


@pytest.fixture
def kb_id(agent_client, django_capture_on_commit_callbacks) -> int:
    client = agent_client.client
    kb = client.post(KBS, {"name": "Port", "chunk_size": 64, "chunk_overlap": 8}, format="json")
    assert kb.status_code == 201, kb.json()
    for title, text in HARBOUR:
        with django_capture_on_commit_callbacks(execute=True):
            made = client.post(
                f"{KBS}/{kb.json()['id']}/documents", {"title": title, "text": text}, format="json"
            )
        assert made.status_code == 201, made.json()
    return int(kb.json()["id"])


def ask(agent_client, **body):
    response = agent_client.client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def assert_consistent(answer: dict, *, top_k: int) -> None:
    """The contract's shape and the sufficiency rule, for any answer."""
    assert set(answer) == {"answer", "sources", "rounds", "total_results"}
    for number, one in enumerate(answer["rounds"], start=1):
        assert set(one) == {
            "query",
            "results",
            "sufficient",
            "avg_score",
            "gaps",
            "reformulated_query",
            "reformulated_by",
            "target",
            "mode",
            "bridge",
        }
        scores = [hit["score"] for hit in one["results"]]
        assert len(scores) <= top_k
        assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
        mean = sum(scores) / len(scores) if scores else 0.0
        assert one["avg_score"] == pytest.approx(mean, abs=1e-3)
        # A round whose results name a bridge entity has a hop left to make.
        assert one["sufficient"] == (
            len(scores) >= TUNING.agentic.min_relevant_results
            and one["avg_score"] >= TUNING.agentic.min_avg_score
            and one["bridge"] is None
        )
        last = number == len(answer["rounds"])
        assert (one["reformulated_query"] is None) == last
        if not last:
            assert not one["sufficient"]
            assert answer["rounds"][number]["query"] == one["reformulated_query"]
    sources = answer["sources"]
    assert len(sources) <= top_k
    assert [s["score"] for s in sources] == sorted((s["score"] for s in sources), reverse=True)
    assert [s["ref"] for s in sources] == list(range(1, len(sources) + 1))
    for source in sources:
        assert {"chunk_id", "document_id", "document_title", "text", "score"} <= set(source)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer["answer"])}
    assert cited <= {s["ref"] for s in sources}
    assert cited == {s["ref"] for s in sources if s["cited"]}
    found = {hit["chunk_id"] for one in answer["rounds"] for hit in one["results"]}
    assert answer["total_results"] == len(found) >= len(sources)


def test_the_seed_constants() -> None:
    assert TUNING.agentic.min_relevant_results == 3
    assert TUNING.agentic.min_avg_score == 0.5
    assert agentic.DEFAULT_MAX_ROUNDS == 3
    assert agentic.MAX_ROUNDS_LIMIT == 5


def test_rounds_stop_on_sufficiency(agent_client, kb_id, tune) -> None:
    # Evidence near 1 for every hit: the first round with three results suffices.
    tune("rag.evidence.intercept", 20.0)
    answer = ask(agent_client, query="How many containers does a harbour crane lift?", top_k=3)
    assert_consistent(answer, top_k=3)
    assert len(answer["rounds"]) == 1
    first = answer["rounds"][0]
    assert first["sufficient"] and first["avg_score"] >= 0.5 and len(first["results"]) == 3
    assert first["reformulated_query"] is None


def test_rounds_run_to_max_rounds_when_never_sufficient(agent_client, kb_id, tune) -> None:
    tune("rag.evidence.intercept", -20.0)
    for rounds in (1, 2, 5):
        answer = ask(agent_client, query="harbour crane containers", max_rounds=rounds, top_k=4)
        assert_consistent(answer, top_k=4)
        assert len(answer["rounds"]) == rounds
        assert not any(one["sufficient"] for one in answer["rounds"])
    queries = [one["query"] for one in answer["rounds"]]
    assert len(set(queries)) == 5, queries  # every reformulation is a new query


def test_default_is_three_rounds(agent_client, kb_id, tune) -> None:
    tune("rag.evidence.intercept", -20.0)
    assert len(ask(agent_client, query="harbour tide")["rounds"]) == 3


def test_fewer_than_three_results_never_suffice(agent_client, kb_id, tune) -> None:
    tune("rag.evidence.intercept", 20.0)  # every hit near 1
    answer = ask(agent_client, query="harbour crane", top_k=2, max_rounds=2)
    assert_consistent(answer, top_k=2)
    assert [one["sufficient"] for one in answer["rounds"]] == [False, False]
    assert all(one["avg_score"] > 0.9 for one in answer["rounds"])


def test_offline_reformulation_is_pseudo_relevance_feedback(agent_client, kb_id, tune):
    tune("rag.evidence.intercept", -20.0)
    answer = ask(agent_client, query="crane shifts", max_rounds=2, top_k=3)
    first = answer["rounds"][0]
    added = first["reformulated_query"].removeprefix("crane shifts").split()
    assert 1 <= len(added) <= TUNING.agentic.expansion_terms
    best_text = " ".join(
        f"{hit['document_title']} {hit['text']}".lower()
        for hit in first["results"][: TUNING.agentic.feedback_results]
    )
    assert all(word in best_text for word in added), (added, best_text)
    assert not {"crane", "shifts"} & set(added)


def test_gaps_name_the_question_words_no_result_covers(agent_client, kb_id) -> None:
    answer = ask(agent_client, query="harbour pilots zeppelin", max_rounds=1, top_k=3)
    gaps = answer["rounds"][0]["gaps"]
    assert "zeppelin" in gaps
    assert "harbour" not in gaps and "pilots" not in gaps


def test_offline_answer_is_extractive_and_every_sentence_is_cited(agent_client, kb_id) -> None:
    answer = ask(agent_client, query="Why do ships enter the harbour at high tide?", top_k=5)
    assert_consistent(answer, top_k=5)
    text = answer["answer"]
    assert "channel is shallow" in text
    sentences = [s for s in re.split(r"(?<=\])\s+", text) if s]
    assert 1 <= len(sentences) <= TUNING.agentic.answer_sentences
    by_ref = {s["ref"]: s["text"] for s in answer["sources"]}
    for sentence in sentences:
        body, ref = re.fullmatch(r"(.*) \[(\d+)\]", sentence).groups()  # type: ignore[union-attr]
        assert body in " ".join(by_ref[int(ref)].split())
    assert answer["sources"][0]["document_title"] == "Harbour tides"


@pytest.mark.real_embeddings  # scores calibrated on the model
def test_calibrated_scores_separate_relevant_from_unrelated(agent_client, kb_id) -> None:
    relevant = ask(agent_client, query="harbour tide tables published", max_rounds=1, top_k=1)
    unrelated = ask(agent_client, query="quantum chromodynamics lattice", max_rounds=1, top_k=1)
    assert relevant["rounds"][0]["avg_score"] > unrelated["rounds"][0]["avg_score"] + 0.2


def test_no_knowledge_base_means_no_sources(agent_client) -> None:
    answer = ask(agent_client, query="anything at all", max_rounds=2)
    assert answer["answer"] == "" and answer["sources"] == [] and answer["total_results"] == 0
    assert [one["results"] for one in answer["rounds"]] == [[], []]


@pytest.fixture
def llm(openai_standin, settings):
    settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = (
        "openai",
        openai_standin.base_url,
        "stand-in",
    )
    settings.LLM_MAX_RETRIES = 0
    core.llm.reset_llm_provider()
    yield openai_standin
    core.llm.reset_llm_provider()


def test_llm_reformulates_and_synthesises(agent_client, kb_id, llm, tune) -> None:
    tune("rag.evidence.intercept", -20.0)
    llm.reply_with(
        json.dumps({"query": "tide tables harbour channel"}),
        "Ships wait for high tide because the channel is shallow [1]. See also [9].",
    )
    answer = ask(agent_client, query="when can ships come in", max_rounds=2, top_k=3)
    assert_consistent_but_citations(answer)
    assert answer["rounds"][0]["reformulated_query"] == "tide tables harbour channel"
    assert answer["rounds"][1]["query"] == "tide tables harbour channel"
    assert answer["answer"].startswith("Ships wait for high tide")
    assert answer["sources"][0]["cited"] is True
    chats = llm.requests_to("/v1/chat/completions")
    assert len(chats) == 2
    reformulation = chats[0].body["messages"][-1]["content"]
    assert "when can ships come in" in reformulation and "Words of the question" in reformulation
    synthesis = chats[1].body["messages"]
    assert "cite" in synthesis[0]["content"]
    assert (
        "[1] " in synthesis[-1]["content"] and "when can ships come in" in synthesis[-1]["content"]
    )


def assert_consistent_but_citations(answer: dict) -> None:
    # The model may cite a number that names no source ([9] above): it marks nothing.
    refs = {s["ref"] for s in answer["sources"]}
    cited = {s["ref"] for s in answer["sources"] if s["cited"]}
    assert cited <= refs and 9 not in cited


def test_llm_reformulation_that_is_not_json_falls_back_to_feedback(
    agent_client, kb_id, llm, tune
) -> None:
    tune("rag.evidence.intercept", -20.0)
    llm.reply_with("not json", "still not json", "An answer [1].")
    answer = ask(agent_client, query="crane shifts", max_rounds=2, top_k=3)
    assert answer["rounds"][0]["reformulated_query"].startswith("crane shifts ")
    assert answer["answer"] == "An answer [1]."


def test_an_llm_outage_is_503(agent_client, kb_id, llm) -> None:
    llm.fail(503, times=5)
    response = agent_client.client.post(URL, {"query": "harbour", "max_rounds": 1}, format="json")
    assert response.status_code == 503 and code(response) == "provider_unavailable"


def test_the_reranker_scores_the_rounds(agent_client, kb_id, openai_standin, settings) -> None:
    settings.RERANK_PROVIDER, settings.RERANK_BASE_URL, settings.RERANK_MODEL = (
        "http",
        openai_standin.base_url,
        "rerank",
    )
    reset_reranker()
    try:
        # The stand-in's relevance is the share of query words a passage contains.
        answer = ask(agent_client, query="harbour", max_rounds=3, top_k=3)
    finally:
        reset_reranker()
    assert openai_standin.requests_to("/v1/rerank")
    assert_consistent(answer, top_k=3)
    first = answer["rounds"][0]
    assert [hit["explanation"]["rerank_score"] for hit in first["results"]] == [1.0, 1.0, 1.0]
    assert first["sufficient"] and len(answer["rounds"]) == 1


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"query": "x", "max_rounds": 0}, "validation_error"),
        ({"query": "x", "max_rounds": 6}, "validation_error"),
        ({"query": "x", "max_rounds": "3"}, "validation_error"),
        ({"query": "x", "top_k": 0}, "validation_error"),
        ({"query": "x", "top_k": 101}, "validation_error"),
        ({"query": ""}, "validation_error"),
        ({"query": "   "}, "validation_error"),
        ({"query": "x" * 4001}, "query_too_long"),
        ({}, "validation_error"),
        ({"query": "x", "knowledge_base_ids": [0]}, "validation_error"),
        ({"query": "x", "knowledge_base_ids": list(range(1, 102))}, "validation_error"),
        ({"query": "x", "knowledge_base_ids": "1"}, "validation_error"),
        ({"query": "x", "mode": "vector"}, "unknown_field"),
    ],
)
def test_bad_input_is_400_with_a_code(agent_client, body, error) -> None:
    response = agent_client.client.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    assert code(response) == error


def test_the_service_checks_its_bounds_too(agent_client) -> None:
    from core.actors import actor_for_agent
    from core.errors import ValidationFailed

    actor = actor_for_agent(agent_client.agent)
    with pytest.raises(ValidationFailed) as raised:
        agentic.agentic_query(actor=actor, query="x", max_rounds=6)
    assert raised.value.code == "invalid_max_rounds"
    with pytest.raises(ValidationFailed):
        agentic.agentic_query(actor=actor, query="x", top_k=101)


def test_an_intruders_knowledge_base_answers_like_a_missing_one(
    agent_client, other_agent_client, kb_id, django_capture_on_commit_callbacks
) -> None:
    intruder = other_agent_client.client
    theirs = intruder.post(KBS, {"name": "Secret"}, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        intruder.post(
            f"{KBS}/{theirs}/documents",
            {"title": "Secret harbour", "text": "INTRUDERQX harbour crane secret plans."},
            format="json",
        )
    foreign = agent_client.client.post(
        URL, {"query": "harbour crane", "knowledge_base_ids": [theirs]}, format="json"
    )
    missing = agent_client.client.post(
        URL, {"query": "harbour crane", "knowledge_base_ids": [987654321]}, format="json"
    )
    assert foreign.status_code == missing.status_code == 404
    assert code(foreign) == code(missing) == "knowledge_base_not_found"
    mine = ask(agent_client, query="harbour crane secret plans", max_rounds=3)
    assert "INTRUDERQX" not in json.dumps(mine)
    assert mine["sources"] and all(s["knowledge_base_id"] == kb_id for s in mine["sources"])
    # And the intruder, asking the same, finds only its own.
    theirs_answer = intruder.post(URL, {"query": "harbour crane"}, format="json").json()
    assert {s["knowledge_base_id"] for s in theirs_answer["sources"]} == {theirs}


def test_pool_adjacent_violators() -> None:
    assert evidence.non_increasing([0.9, 0.2, 0.4, 0.1]) == pytest.approx([0.9, 0.3, 0.3, 0.1])
    assert evidence.non_increasing([0.1, 0.5, 0.9]) == pytest.approx([0.5, 0.5, 0.5])
    assert evidence.non_increasing([]) == []
    values = [0.3, 0.8, 0.1, 0.7, 0.6]
    fitted = evidence.non_increasing(values)
    assert fitted == sorted(fitted, reverse=True)
    assert sum(fitted) == pytest.approx(sum(values))


def test_reranker_scores_map_to_zero_to_one() -> None:
    common = {"similarity": 0.0, "coverage": 0.0}
    assert evidence.hit_evidence(**common, rerank_score=7.0, reranker="llm") == 0.7
    assert evidence.hit_evidence(**common, rerank_score=0.83, reranker="http") == 0.83
    assert evidence.hit_evidence(**common, rerank_score=4.0, reranker="http") > 0.98
    assert evidence.hit_evidence(**common, rerank_score=-4.0, reranker="http") < 0.02
    low = evidence.hit_evidence(similarity=0.1, coverage=0.0, rerank_score=None, reranker=None)
    high = evidence.hit_evidence(similarity=0.7, coverage=1.0, rerank_score=None, reranker=None)
    assert 0 < low < 0.5 < high < 1


@pytest.mark.parametrize(
    "query", ["!!! ??? ...", "the and of", "🚢⚓ harbour", "x" * 4000, "crane\x00shift", "ÆØÅ ß"]
)
def test_odd_questions_answer_or_are_refused_never_fail(agent_client, kb_id, query) -> None:
    response = agent_client.client.post(URL, {"query": query, "max_rounds": 2}, format="json")
    assert response.status_code in (200, 400), response.content[:500]
    if response.status_code == 200:
        assert_consistent(response.json(), top_k=10)


def test_queries_grow_with_rounds_not_with_results(agent_client, kb_id, tune) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    tune("rag.evidence.intercept", -20.0)  # every round runs

    def count(**body) -> int:
        with CaptureQueriesContext(connection) as queries:
            ask(agent_client, query="harbour crane tide pilot", **body)
        return len(queries)

    one, three = count(max_rounds=1, top_k=2), count(max_rounds=3, top_k=2)
    assert count(max_rounds=3, top_k=50) == three  # no query per result
    per_round = (three - one) / 2
    assert per_round <= 16, (one, three)
