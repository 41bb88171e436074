"""One input contract for every search, in every app (core.search): a query of at most 4,000
characters (400 ``query_too_long``), ``top_k`` 1 to 100, a bounded threshold, bounded lists of
ids validated as ids, and ``timings_ms`` in every answer. The API states the bounds; the services
check them again for callers that skip the API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from content import selectors as content_selectors
from content import services as content_services
from content.models import Page
from core.actors import Actor, actor_for_agent
from core.errors import ValidationFailed
from core.search import MAX_LIST_ITEMS, MAX_QUERY_CHARS, MAX_TOP_K
from memory.long_term import services as ltm
from rag import services as rag_services
from rag.graph import selectors as graph
from rag.graph.services import nodes as graph_services
from rag.search import SearchFilters, chunk_search
from skills.selectors import catalog as skill_selectors
from skills.services import catalog as skill_services
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

LONG = "q" * (MAX_QUERY_CHARS + 1)
EXACT = "q" * MAX_QUERY_CHARS


def code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    return str(body["error"]["code"])


@pytest.fixture
def actor(agent_client: AuthedAgent) -> Actor:
    return actor_for_agent(agent_client.agent)


@pytest.fixture
def page(actor: Actor) -> Page:
    with transaction.atomic():
        return content_services.page_create(
            actor=actor, title="Harbour", content="Boats and tides in the harbour."
        )


# Each search: how to send it a query and a top_k, and how to send anything else.
Send = Callable[[AuthedAgent, dict[str, Any]], Any]


def _post(path: str, query_name: str = "query") -> Send:
    def send(authed: AuthedAgent, fields: dict[str, Any]) -> Any:
        body = dict(fields)
        if "query" in body:
            body[query_name] = body.pop("query")
        body.setdefault(query_name, "harbour tides")
        return authed.client.post(path, body, format="json")

    return send


def _graph_search(authed: AuthedAgent, fields: dict[str, Any]) -> Any:
    return authed.client.get("/api/v1/graph/nodes", {"query": "harbour tides", **fields})


def _memory_search(authed: AuthedAgent, fields: dict[str, Any]) -> Any:
    body = {"query": "harbour tides", **fields}
    body.pop("mode", None)  # one ranking across tiers: no modes
    return authed.client.post("/api/v1/memory/search", body, format="json")


SEARCHES: dict[str, Send] = {
    "memory_search": _memory_search,
    "memory_long_term_search": _post("/api/v1/memory/long-term/search"),
    "rag_search": _post("/api/v1/rag/search"),
    "rag_query": _post("/api/v1/rag/query"),
    "graph_nodes_search": _graph_search,
    "skills_discover": _post("/api/v1/skills/discover", query_name="description"),
}


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_a_query_over_4000_characters_is_400_query_too_long(
    name: str, agent_client: AuthedAgent
) -> None:
    send = SEARCHES[name]
    response = send(agent_client, {"query": LONG})
    assert response.status_code == 400, (name, response.content[:300])
    assert code(response) == "query_too_long"
    # Counted as sent: trailing blanks are characters too.
    padded = send(agent_client, {"query": "harbour" + " " * MAX_QUERY_CHARS})
    assert padded.status_code == 400 and code(padded) == "query_too_long"
    assert send(agent_client, {"query": EXACT}).status_code == 200, name


@pytest.mark.parametrize("name", sorted(SEARCHES))
@pytest.mark.parametrize("top_k", [0, MAX_TOP_K + 1, -1])
def test_top_k_is_1_to_100(name: str, top_k: int, agent_client: AuthedAgent) -> None:
    response = SEARCHES[name](agent_client, {"top_k": top_k})
    assert response.status_code == 400, (name, response.content[:300])
    assert code(response) == "validation_error"
    assert "top_k" in response.json()["error"]["details"]
    assert SEARCHES[name](agent_client, {"top_k": MAX_TOP_K}).status_code == 200


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_every_search_answers_timings_ms(
    name: str, agent_client: AuthedAgent, actor: Actor
) -> None:
    # Something to search in each space (a search with nothing to search answers no stages).
    rag_services.knowledge_base_create(actor=actor, name="Harbour")
    graph_services.node_create(actor=actor, name="Harbour tides", entity_type="topic")
    skill_services.skill_create(actor=actor, name="Read harbour tides", category="analysis")
    ltm.entries_create(
        actor=actor, context_id=None, items=[ltm.EntryInput(content="Harbour tides are high")]
    )
    body = SEARCHES[name](agent_client, {"mode": "keyword"}).json()
    assert isinstance(body["timings_ms"], dict), body
    assert "keyword" in body["timings_ms"], body["timings_ms"]
    assert "stage_ms" not in body


def test_related_pages_bound_their_limit_and_answer_timings_ms(
    agent_client: AuthedAgent, page: Page
) -> None:
    url = f"/api/v1/content/pages/{page.pk}/related"
    for limit in (0, content_selectors.MAX_RELATED + 1):
        response = agent_client.client.get(url, {"limit": limit})
        assert response.status_code == 400 and code(response) == "validation_error"
    body = agent_client.client.get(url, {"limit": 5}).json()
    assert set(body) == {"results", "timings_ms"} and "vector" in body["timings_ms"]


@pytest.mark.parametrize("threshold", [1.5, -1.01, "0.5"])
def test_the_threshold_is_bounded(agent_client: AuthedAgent, threshold: Any) -> None:
    response = agent_client.client.post(
        "/api/v1/rag/search", {"query": "x", "threshold": threshold}, format="json"
    )
    assert response.status_code == 400 and "threshold" in response.json()["error"]["details"]


@pytest.mark.parametrize(
    "ids",
    [
        list(range(1, MAX_LIST_ITEMS + 2)),  # one too many
        [0],
        [10**18],  # longer than any id a path takes
        ["1"],
    ],
)
def test_id_lists_are_bounded_and_hold_ids(agent_client: AuthedAgent, ids: list[Any]) -> None:
    response = agent_client.client.post(
        "/api/v1/rag/search",
        {"query": "x", "filters": {"knowledge_base_ids": ids}},
        format="json",
    )
    assert response.status_code == 400, response.json()
    assert "filters" in response.json()["error"]["details"]


def test_the_largest_id_is_an_id(agent_client: AuthedAgent) -> None:
    response = agent_client.client.post(
        "/api/v1/rag/search",
        {"query": "x", "filters": {"knowledge_base_ids": [10**18 - 1]}},
        format="json",
    )
    assert response.status_code == 404 and code(response) == "knowledge_base_not_found"


# --- the services check the same bounds --------------------------------------------------------


def _refused(expected: str, call: Callable[..., Any], **kwargs: Any) -> None:
    with pytest.raises(ValidationFailed) as refused:
        call(**kwargs)
    assert refused.value.code == expected


def test_the_services_refuse_a_long_query_too(actor: Actor) -> None:
    _refused("query_too_long", chunk_search, actor=actor, query=LONG)
    _refused("query_too_long", rag_services.search_run, actor=actor, query=LONG)
    _refused("query_too_long", graph.node_search, actor=actor, query=LONG)
    _refused("query_too_long", skill_selectors.skill_discover, actor=actor, description=LONG)
    for top_k in (0, MAX_TOP_K + 1):
        _refused("invalid_top_k", graph.node_search, actor=actor, query="x", top_k=top_k)


def test_the_services_bound_thresholds_lists_and_limits(actor: Actor, page: Page) -> None:
    for threshold in (1.5, float("nan"), -2.0):
        _refused("invalid_threshold", chunk_search, actor=actor, query="x", threshold=threshold)
    many = SearchFilters(knowledge_base_ids=tuple(range(1, MAX_LIST_ITEMS + 2)))
    _refused("too_many_items", rag_services.search_run, actor=actor, query="x", filters=many)
    for limit in (0, content_selectors.MAX_RELATED + 1):
        _refused("invalid_top_k", content_selectors.related, page=page, limit=limit)
