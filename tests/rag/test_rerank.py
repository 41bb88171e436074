"""The rerank stage against a local stand-in server speaking the real protocols."""

from __future__ import annotations

import json

import pytest

import core.llm
from rag.rerank import HttpReranker, LLMReranker
from rag.search import SearchHit
from tests.support.openai_standin import openai_standin_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def hits(*texts: str) -> list[SearchHit]:
    return [SearchHit(chunk_id=i, score=1.0 - i / 10, text=t) for i, t in enumerate(texts)]


def test_http_reranker_reorders_by_relevance(openai_standin) -> None:
    reranker = HttpReranker(base_url=openai_standin.base_url, model="bge-reranker", api_key="k")
    ranked = reranker.rerank(
        "backup the database", hits("restart the worker", "backup the database nightly")
    )
    assert [h.chunk_id for h in ranked] == [1, 0]
    assert ranked[0].rerank_score == 1.0
    sent = openai_standin.requests_to("/v1/rerank")[0]
    assert sent.body["documents"] == ["restart the worker", "backup the database nightly"]
    assert sent.body["model"] == "bge-reranker" and sent.headers["authorization"] == "Bearer k"


def test_http_reranker_retries_server_errors_then_fails_cleanly(openai_standin) -> None:
    from core.errors import ServiceUnavailable

    reranker = HttpReranker(base_url=openai_standin.base_url, model="m", max_retries=1)
    openai_standin.fail(503, times=1)
    assert len(reranker.rerank("q", hits("a", "b"))) == 2
    openai_standin.fail(503, times=5)
    with pytest.raises(ServiceUnavailable) as exc:
        reranker.rerank("q", hits("a"))
    assert exc.value.code == "provider_unavailable" and exc.value.status_code == 503
    assert exc.value.details == {
        "provider": "rerank",
        "reranker": "http",
        "reason": "status",
        "status": 503,
    }


def test_llm_reranker_uses_the_models_scores(openai_standin, settings) -> None:
    settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = (
        "openai",
        openai_standin.base_url,
        "m",
    )
    core.llm.reset_llm_provider()
    try:
        openai_standin.reply_with(json.dumps({"scores": [2, 9, 5]}))
        ranked = LLMReranker().rerank("q", hits("a", "b", "c"))
    finally:
        core.llm.reset_llm_provider()
    assert [h.chunk_id for h in ranked] == [1, 2, 0]
    assert (
        "Passages:"
        in openai_standin.requests_to("/v1/chat/completions")[0].body["messages"][-1]["content"]
    )


def test_llm_reranker_offline_keeps_the_fused_order() -> None:
    ranked = LLMReranker().rerank("q", hits("a", "b", "c"))
    assert [h.chunk_id for h in ranked] == [0, 1, 2]


def test_search_api_reranks_when_configured(
    agent_client, openai_standin, settings, django_capture_on_commit_callbacks
) -> None:
    client = agent_client.client
    kb = client.post("/api/v1/rag/knowledge-bases", {"name": "R"}, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        for text in (
            "Nightly backup of the database volume.",
            "Restarting the worker process.",
            "Database tuning notes.",
        ):
            client.post(
                f"/api/v1/rag/knowledge-bases/{kb['id']}/documents", {"text": text}, format="json"
            )
    refused = client.post(
        "/api/v1/rag/search", {"query": "backup database", "rerank": True}, format="json"
    )
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "rerank_not_configured"

    settings.RERANK_PROVIDER, settings.RERANK_BASE_URL, settings.RERANK_MODEL = (
        "http",
        openai_standin.base_url,
        "m",
    )
    body = client.post(
        "/api/v1/rag/search",
        {"query": "nightly backup database volume", "rerank": True, "top_k": 2},
        format="json",
    ).json()
    assert body["results"][0]["text"] == "Nightly backup of the database volume."
    scores = [r["explanation"]["rerank_score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[1]
    assert "rerank" in body["timings_ms"]


# --- robustness -----------------------------------------------------------------------------


@pytest.fixture
def llm_standin(openai_standin, settings):
    settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = (
        "openai",
        openai_standin.base_url,
        "m",
    )
    settings.LLM_MAX_RETRIES = 0
    core.llm.reset_llm_provider()
    yield openai_standin
    core.llm.reset_llm_provider()


@pytest.mark.parametrize(
    "reply",
    [
        '{"scores": ["high", null, "7"]}',
        '{"scores": [NaN, 9, 5]}',
        '{"scores": [Infinity, 9, 5]}',
        '{"scores": [2, true, 5]}',
        '{"scores": [2, 9]}',
        '{"scores": "9, 2, 5"}',
    ],
)
def test_llm_scores_that_are_not_finite_numbers_keep_the_fused_order(llm_standin, reply) -> None:
    llm_standin.reply_with(reply)
    ranked = LLMReranker().rerank("q", hits("a", "b", "c"))
    assert [h.chunk_id for h in ranked] == [0, 1, 2]
    assert [h.rerank_score for h in ranked] == [None, None, None]


def test_an_llm_answer_that_is_not_json_keeps_the_fused_order(llm_standin) -> None:
    llm_standin.reply_with("I think the second passage.", "Still not JSON.")  # and the repair
    ranked = LLMReranker().rerank("q", hits("a", "b", "c"))
    assert [h.chunk_id for h in ranked] == [0, 1, 2]


def test_an_llm_outage_is_503_provider_unavailable(llm_standin) -> None:
    from core.errors import ServiceUnavailable

    llm_standin.fail(503, times=1)
    with pytest.raises(ServiceUnavailable) as exc:
        LLMReranker().rerank("q", hits("a", "b"))
    assert exc.value.code == "provider_unavailable"
    assert exc.value.details == {"provider": "rerank", "reranker": "llm", "reason": "llm"}


@pytest.mark.parametrize(
    "body",
    [
        {"results": [{"index": 0, "relevance_score": float("nan")}]},
        {"results": [{"index": 0, "relevance_score": "0.9"}]},
        {"results": [{"index": 7, "relevance_score": 0.9}]},
        {"results": [{"relevance_score": 0.9}]},
        {"data": []},
    ],
    ids=["nan", "string", "unknown-index", "no-index", "no-results"],
)
def test_a_broken_http_reranker_answer_is_503_provider_unavailable(openai_standin, body) -> None:
    from core.errors import ServiceUnavailable

    openai_standin.rerank_with(body)
    reranker = HttpReranker(base_url=openai_standin.base_url, model="m")
    with pytest.raises(ServiceUnavailable) as exc:
        reranker.rerank("q", hits("a", "b"))
    assert exc.value.code == "provider_unavailable"
    assert exc.value.details == {"provider": "rerank", "reranker": "http", "reason": "malformed"}


def test_an_unreachable_or_slow_http_reranker_is_503_provider_unavailable(openai_standin) -> None:
    import socket

    from core.errors import ServiceUnavailable

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = HttpReranker(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0)
    with pytest.raises(ServiceUnavailable) as exc:
        unreachable.rerank("q", hits("a"))
    assert (exc.value.code, exc.value.details["reason"]) == ("provider_unavailable", "unreachable")

    openai_standin.stall(1.0)
    slow = HttpReranker(base_url=openai_standin.base_url, model="m", timeout=0.2, max_retries=0)
    with pytest.raises(ServiceUnavailable) as exc:
        slow.rerank("q", hits("a"))
    assert (exc.value.code, exc.value.details["reason"]) == ("provider_unavailable", "timeout")


def test_the_http_reranker_is_built_once_per_process(openai_standin, settings) -> None:
    from rag.rerank import get_reranker, reset_reranker

    settings.RERANK_PROVIDER, settings.RERANK_BASE_URL, settings.RERANK_MODEL = (
        "http",
        openai_standin.base_url,
        "m",
    )
    reset_reranker()
    first = get_reranker()
    assert isinstance(first, HttpReranker)
    assert get_reranker() is first  # one client and connection pool, not one per search
    first.rerank("q", hits("a"))
    first.rerank("q", hits("b"))
    assert len(openai_standin.requests_to("/v1/rerank")) == 2
    settings.RERANK_MODEL = "other"
    rebuilt = get_reranker()
    assert isinstance(rebuilt, HttpReranker) and rebuilt is not first and rebuilt.model == "other"
    reset_reranker()


def test_search_api_never_answers_500_for_reranker_trouble(
    agent_client, llm_standin, settings, django_capture_on_commit_callbacks
) -> None:
    from rag.rerank import reset_reranker

    client = agent_client.client
    kb = client.post("/api/v1/rag/knowledge-bases", {"name": "R"}, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        for text in ("Nightly backup of the database.", "Restarting the worker process."):
            client.post(
                f"/api/v1/rag/knowledge-bases/{kb['id']}/documents", {"text": text}, format="json"
            )
    search = {"query": "backup database", "rerank": True, "top_k": 2}

    settings.RERANK_PROVIDER = "llm"
    llm_standin.reply_with('{"scores": ["high", null]}')
    unusable = client.post("/api/v1/rag/search", search, format="json")
    assert unusable.status_code == 200, unusable.json()
    assert [r["explanation"]["rerank_score"] for r in unusable.json()["results"]] == [None, None]

    settings.RERANK_PROVIDER, settings.RERANK_BASE_URL = "http", llm_standin.base_url
    reset_reranker()
    llm_standin.fail(503, times=3)  # the first try and both retries
    down = client.post("/api/v1/rag/search", search, format="json")
    assert down.status_code == 503, down.json()
    assert down.json()["error"]["code"] == "provider_unavailable"
    assert down.json()["error"]["details"]["provider"] == "rerank"
    reset_reranker()
