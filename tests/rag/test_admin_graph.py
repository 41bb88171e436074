"""The graph drawn for people: a node's neighbourhood as JSON and as a page that draws it with
the vendored Cytoscape.js, scoped by the person's memberships; pages open their own admin page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from content import services as content_services
from core import services as core_services
from core.actors import actor_for_agent
from rag.graph.services import nodes as graph_services
from rag.models import GraphNode
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    orchard = AccountFactory.create(name="Orchard", slug="orchard")
    bramble = AccountFactory.create(name="Bramble", slug="bramble")
    writer = actor_for_agent(AgentFactory.create(account=orchard))
    spy = actor_for_agent(AgentFactory.create(account=bramble))
    with django_capture_on_commit_callbacks(execute=True):
        target = content_services.page_create(actor=writer, title="Harbour Notes", content="Tides.")
        ferry = content_services.page_create(
            actor=writer, title="Ferry Times", content="Boats leave from [[Harbour Notes]]."
        )
        secret = content_services.page_create(actor=spy, title="Secrets", content="Hidden.")
    target.refresh_from_db()
    ferry.refresh_from_db()
    secret.refresh_from_db()
    person = graph_services.node_create(
        actor=writer, account_id=orchard.pk, name="Ada Pilot", entity_type="person"
    )
    graph_services.edge_create(
        actor=writer,
        account_id=orchard.pk,
        source_id=person.pk,
        target_id=target.node_id or 0,
        relation_type="wrote",
    )
    ada = UserFactory.create(username="ada", is_staff=True)
    core_services.membership_grant(account=orchard, user=ada, role="author")
    client = Client()
    client.force_login(ada)
    return {
        "client": client,
        "target": target,
        "ferry": ferry,
        "secret": secret,
        "person": person,
    }


def test_a_nodes_neighbourhood_as_json(world) -> None:
    target = world["target"]
    response = world["client"].get(reverse("admin:rag_graphnode_graph_data", args=[target.node_id]))
    assert response.status_code == 200
    data = response.json()
    assert data["center"] == target.node_id and data["truncated"] is False
    nodes = {node["name"]: node for node in data["nodes"]}
    assert set(nodes) == {"Harbour Notes", "Ferry Times", "Ada Pilot"}
    assert nodes["Harbour Notes"]["hops"] == 0 and nodes["Ferry Times"]["hops"] == 1
    # Pages open their page; other nodes their graph node page.
    assert nodes["Ferry Times"]["url"] == reverse(
        "admin:content_page_change", args=[world["ferry"].pk]
    )
    assert nodes["Ada Pilot"]["url"] == reverse(
        "admin:rag_graphnode_change", args=[world["person"].pk]
    )
    relations = {(e["source"], e["target"], e["relation_type"]) for e in data["edges"]}
    assert (world["ferry"].node_id, target.node_id, "references") in relations
    assert (world["person"].pk, target.node_id, "wrote") in relations


def test_the_page_draws_with_the_vendored_library(world) -> None:
    client = world["client"]
    page = client.get(reverse("admin:content_page_change", args=[world["target"].pk]))
    graph_url = reverse("admin:rag_graphnode_graph", args=[world["target"].node_id])
    assert graph_url in page.content.decode()
    drawing = client.get(graph_url).content.decode()
    assert "vendor/cytoscape/cytoscape.min.js" in drawing and "rag/graph.js" in drawing
    assert "cdn" not in drawing.lower() and "https://" not in drawing.split("<body", 1)[1]
    assert "<title>Graph of “Harbour Notes” | Engram admin</title>" in drawing
    assert "Django" not in drawing
    node_page = client.get(reverse("admin:rag_graphnode_change", args=[world["person"].pk]))
    assert reverse("admin:rag_graphnode_graph", args=[world["person"].pk]) in (
        node_page.content.decode()
    )


def test_the_vendored_library_and_its_licence_are_there() -> None:
    script = finders.find("vendor/cytoscape/cytoscape.min.js")
    licence = finders.find("vendor/cytoscape/LICENSE")
    assert script and licence
    assert Path(str(script)).stat().st_size > 100_000
    assert "Cytoscape Consortium" in Path(str(licence)).read_text()
    assert str(settings.BASE_DIR / "core" / "static") in str(script)


def test_another_accounts_node_is_missing(world) -> None:
    client = world["client"]
    foreign = world["secret"].node_id
    missing = GraphNode.objects.order_by("-pk").first().pk + 1000  # type: ignore[union-attr]
    for node_id in (foreign, missing):
        data = client.get(reverse("admin:rag_graphnode_graph_data", args=[node_id]))
        assert data.status_code == 404 and data.json()["error"]["code"] == "node_not_found"
        page = client.get(reverse("admin:rag_graphnode_graph", args=[node_id]))
        assert page.status_code == 404
        assert "Secrets" not in page.content.decode()


def test_hops_and_limits_are_bounded(world) -> None:
    client = world["client"]
    url = reverse("admin:rag_graphnode_graph_data", args=[world["person"].pk])
    one = client.get(url, {"hops": "1"}).json()
    assert {n["name"] for n in one["nodes"]} == {"Ada Pilot", "Harbour Notes"}
    two = client.get(url, {"hops": "2"}).json()
    assert {n["name"] for n in two["nodes"]} == {"Ada Pilot", "Harbour Notes", "Ferry Times"}
    limited = client.get(url, {"hops": "2", "limit": "1"}).json()
    assert len(limited["nodes"]) == 2 and limited["truncated"] is True
    for bad in ({"hops": "x"}, {"hops": "99"}, {"limit": "-5"}):
        assert client.get(url, bad).status_code == 200


def test_people_without_a_role_see_nothing(world) -> None:
    stranger = UserFactory.create(username="stranger", is_staff=True)
    client = Client()
    client.force_login(stranger)
    response = client.get(reverse("admin:rag_graphnode_graph_data", args=[world["person"].pk]))
    assert response.status_code in (403, 404)
    assert "Ada Pilot" not in response.content.decode()
