"""Integers in query strings are ASCII digits within 64 bits, in every app (core.serializers.
FilterSerializer): Python's int() also reads other scripts' digits ("٣" is 3), "1_0" and
padding, and a number past 64 bits used to reach the service (``expected_version`` answered 409
for a version no pool can have). Each is a 400 with the parameter named, as bodies already are."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import transaction

from content import services as content_services
from core.actors import actor_for_agent
from rag.graph.services import nodes as graph_services
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

NOT_INTEGERS = ["٣", "３", "1_0", " 3", "3 ", "+3", "3.0", "0x3", "3e0"]
OUT_OF_RANGE = ["99999999999999999999", "-99999999999999999999", "1" + "0" * 5000]


def code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    return str(body["error"]["code"])


@pytest.fixture
def urls(agent_client: AuthedAgent) -> dict[str, tuple[str, str, str, dict[str, str]]]:
    """Each integer query parameter: (its name, the method, the path, other parameters)."""
    actor = actor_for_agent(agent_client.agent)
    node = graph_services.node_create(actor=actor, name="Harbour", entity_type="topic")
    with transaction.atomic():
        page = content_services.page_create(actor=actor, title="Harbour", content="Tides.")
    pools = "/api/v1/memory/pools"
    assert agent_client.client.post(pools, {"pool_id": "p"}, format="json").status_code == 201
    put = agent_client.client.put(f"{pools}/p/data/a", {"value": 1}, format="json")
    assert put.status_code == 200
    return {
        "graph top_k": ("top_k", "get", "/api/v1/graph/nodes", {"query": "harbour"}),
        "graph hops": ("hops", "get", f"/api/v1/graph/nodes/{node.pk}/neighbors", {}),
        "graph limit": ("limit", "get", f"/api/v1/graph/nodes/{node.pk}/neighbors", {}),
        "path from": ("from", "get", "/api/v1/graph/path", {"to": str(node.pk)}),
        "path to": ("to", "get", "/api/v1/graph/path", {"from": str(node.pk)}),
        "related limit": ("limit", "get", f"/api/v1/content/pages/{page.pk}/related", {}),
        "conflicts skill_id": ("skill_id", "get", "/api/v1/skills/conflicts", {}),
        "pool expected_version": ("expected_version", "delete", f"{pools}/p/data/a", {}),
    }


def _call(authed: AuthedAgent, method: str, path: str, params: dict[str, str]) -> Any:
    return getattr(authed.client, method)(f"{path}?{urlencode(params)}")


@pytest.mark.parametrize("value", NOT_INTEGERS + OUT_OF_RANGE)
def test_integer_query_parameters_are_ascii_digits_within_64_bits(
    agent_client: AuthedAgent, urls: dict[str, tuple[str, str, str, dict[str, str]]], value: str
) -> None:
    for parameter, method, path, others in urls.values():
        response = _call(agent_client, method, path, {**others, parameter: value})
        assert response.status_code == 400, (parameter, path, value, response.content[:300])
        assert code(response) == "validation_error"
        assert parameter in response.json()["error"]["details"], response.json()


def test_ascii_digits_still_work(
    agent_client: AuthedAgent, urls: dict[str, tuple[str, str, str, dict[str, str]]]
) -> None:
    _, method, path, _ = urls["graph hops"]
    assert _call(agent_client, method, path, {"hops": "2"}).status_code == 200
    _, method, path, _ = urls["pool expected_version"]
    assert _call(agent_client, method, path, {"expected_version": "2"}).status_code == 200


def test_a_version_past_64_bits_is_not_a_version_conflict(
    agent_client: AuthedAgent, urls: dict[str, tuple[str, str, str, dict[str, str]]]
) -> None:
    _, method, path, _ = urls["pool expected_version"]
    response = _call(agent_client, method, path, {"expected_version": "99999999999999999999"})
    assert response.status_code == 400 and code(response) == "validation_error"
    # Nothing was deleted: the key is still there at version 2.
    assert _call(agent_client, method, path, {"expected_version": "2"}).status_code == 200


def test_ids_in_query_strings_stop_where_path_ids_do(
    agent_client: AuthedAgent, urls: dict[str, tuple[str, str, str, dict[str, str]]]
) -> None:
    _, method, path, _ = urls["conflicts skill_id"]
    largest = _call(agent_client, method, path, {"skill_id": str(10**18 - 1)})
    assert largest.status_code == 200
    past = _call(agent_client, method, path, {"skill_id": str(10**18)})
    assert past.status_code == 400 and "skill_id" in past.json()["error"]["details"]


@pytest.mark.parametrize("value", ["5.05e-139", "0", "501", "٣"])
def test_a_graph_search_checks_the_page_size_it_declares(
    agent_client: AuthedAgent, urls: dict[str, tuple[str, str, str, dict[str, str]]], value: str
) -> None:
    """``GET /graph/nodes`` both lists and searches; its page parameters are declared for both,
    so a search with a malformed ``page_size`` is a 400 too, not a silently ignored value."""
    for params in ({"query": "harbour"}, {}):
        response = _call(agent_client, "get", "/api/v1/graph/nodes", {**params, "page_size": value})
        assert response.status_code == 400, (params, value, response.content[:300])
        assert code(response) == "invalid_page_size"
    searched = _call(
        agent_client, "get", "/api/v1/graph/nodes", {"query": "harbour", "page_size": "5"}
    )
    assert searched.status_code == 200 and searched.json()["results"]
