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
    assert exc.value.code == "rerank_failed" and exc.value.status_code == 503


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
