"""Graph RAG's context is held to context assembly's rules (docs/rag.md, "Graph RAG"): only
chunks whose calibrated evidence reaches ``rag.evidence.context_min`` (``rag.tuning``) (and the
communities reached through them), ``tokens`` counting the text and every metadata echo within
the budget, and the HTTP body within BODY_BYTES_PER_TOKEN x token_budget + BODY_FIXED_BYTES."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from core import tuning
from core.actors import Actor
from core.metadata import BODY_BYTES_PER_TOKEN, BODY_FIXED_BYTES
from rag.graph.graph_rag import graph_context
from rag.graph.services import communities
from rag.models import Document
from rag.tokens import count_tokens_one
from tests.conftest import AuthedAgent
from tests.rag.test_graph_rag import PAPERS

pytestmark = pytest.mark.django_db
CONTEXT = "/api/v1/rag/graph/context"
HANDBOOK = (
    "Facilities handbook. Staff parking is on levels 2 and 3 of the north garage. Visitors "
    "park on level 1. The assembly point for fire alarms is the car park behind building B. "
    "The fridges in the kitchens are emptied every Friday at 16:00."
)


def _shown_tokens(context: str, items: list[dict[str, Any]]) -> int:
    echoes = [json.dumps(i["metadata"], separators=(",", ":"), ensure_ascii=False) for i in items]
    return count_tokens_one(context) + sum(count_tokens_one(e) for e in echoes if e != "{}")


@pytest.fixture
def corpus(ingest: Callable[..., Document], actor: Actor) -> dict[str, Any]:
    papers = [ingest(text, title="⚛" * 500) for text in PAPERS]
    handbook = ingest(HANDBOOK, title="Facilities handbook")
    communities.communities_compute(account_id=actor.account_id)
    return {"papers": {d.pk for d in papers}, "handbook": handbook.pk}


def _documents(body: dict[str, Any]) -> set[int]:
    return {
        item["source"]["document_id"]
        for section in body["sections"]
        for item in section["items"]
        if item["kind"] == "chunk"
    }


def test_only_chunks_on_topic_and_the_budget_covers_everything(
    agent_client: AuthedAgent,
    actor: Actor,
    corpus: dict[str, Any],
    tune: Any,
) -> None:
    asked = {"query": "Which garage levels are for staff parking?", "token_budget": 4000}
    body = agent_client.client.post(CONTEXT, asked, format="json").json()
    assert _documents(body) == {corpus["handbook"]}
    assert "Curie" not in body["context"] and "Einstein" not in body["context"]
    physics = agent_client.client.post(
        CONTEXT, {"query": "quantum theory and Albert Einstein"}, format="json"
    ).json()
    assert _documents(physics) and corpus["handbook"] not in _documents(physics)
    # Without the floor the graph's reach brings the other chunks in.
    tune("rag.evidence.context_min", None)
    padded = agent_client.client.post(CONTEXT, asked, format="json").json()
    assert _documents(padded) & corpus["papers"]
    tuning.reset()
    for budget in (50, 80, 120, 4000):
        built = graph_context(actor=actor, query="quantum theory", token_budget=budget)
        items = [i.as_json() for s in built.sections for i in s.items]
        assert built.tokens == _shown_tokens(built.context, items) <= budget


@pytest.mark.parametrize("token_budget", [50, 200])
def test_the_body_is_bounded_by_the_budget(
    agent_client: AuthedAgent, corpus: dict[str, Any], token_budget: int
) -> None:
    response = agent_client.client.post(
        CONTEXT,
        {"query": "Marie Curie radioactivity and quantum theory", "token_budget": token_budget},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    items = [i for s in body["sections"] for i in s["items"]]
    assert body["tokens"] == _shown_tokens(body["context"], items) <= token_budget
    assert len(response.content) <= BODY_BYTES_PER_TOKEN * token_budget + BODY_FIXED_BYTES
    for item in items:
        if item["kind"] == "community":
            assert len(item["source"]["node_ids"]) <= 20
            assert item["source"]["node_count"] >= len(item["source"]["node_ids"])
