"""Knowledge items on the real PostgreSQL with pgvector: bases (explicit and implicit), keyed
versioned items with sources, search through the engine leaving invalidated items out,
relationships as edges of rag's knowledge graph, bad input, tenancy, the MCP tools."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from core.actors import actor_for_agent
from core.embeddings.generations import current_index
from core.mcp import registry
from memory.knowledge import selectors, services
from memory.models import (
    KnowledgeItem,
    KnowledgeItemPosting,
    KnowledgeSource,
    KnowledgeStore,
)
from rag.models import GraphEdge, GraphNode
from tests.conftest import AuthedAgent
from tests.memory.conftest import code

pytestmark = pytest.mark.django_db

BASE = "/api/v1/knowledge"


def put(authed: AuthedAgent, base: str, key: str, content: str, **body: Any) -> Any:
    return authed.client.put(
        f"{BASE}/{base}/items/{key}", {"content": content, **body}, format="json"
    )


def query(authed: AuthedAgent, text: str, **body: Any) -> Any:
    return authed.client.post(f"{BASE}/query", {"query": text, **body}, format="json")


def state() -> Any:
    return (
        list(KnowledgeStore.objects.values_list("id", "name", "item_count", "total_terms")),
        list(
            KnowledgeItem.objects.order_by("pk").values_list(
                "id", "key", "version", "is_current", "content", "valid_to"
            )
        ),
        KnowledgeSource.objects.count(),
        GraphEdge.objects.count(),
    )


# --- bases ---------------------------------------------------------------------------------


def test_bases_are_created_explicitly_or_by_the_first_put(agent_client: AuthedAgent) -> None:
    created = agent_client.client.post(
        f"{BASE}/bases", {"name": "howto", "knowledge_type": "procedural"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created.json()["knowledge_type"] == "procedural"
    again = agent_client.client.post(f"{BASE}/bases", {"name": "howto"}, format="json")
    assert (again.status_code, code(again)) == (409, "knowledge_base_exists")
    bad_type = agent_client.client.post(
        f"{BASE}/bases", {"name": "x", "knowledge_type": "gossip"}, format="json"
    )
    assert bad_type.status_code == 400

    assert put(agent_client, "facts", "sky", "The sky is blue.").status_code == 201
    listed = agent_client.client.get(f"{BASE}/bases").json()["results"]
    assert {(b["name"], b["knowledge_type"]) for b in listed} == {
        ("howto", "procedural"),
        ("facts", "factual"),
    }


# --- items and versions --------------------------------------------------------------------


def test_put_creates_then_versions_and_keeps_history(agent_client: AuthedAgent) -> None:
    metadata = {"nested": {"list": [1, 2.5, None, "x"]}, "unicode": "café"}
    first = put(
        agent_client,
        "people",
        "user.alice:city",
        "Alice lives in Lisbon.",
        metadata=metadata,
        confidence=0.8,
        sources=[{"source_type": "conversation_message", "source_id": "m-1", "reliability": 0.9}],
    )
    assert first.status_code == 201, first.json()
    item = first.json()
    assert (item["base"], item["key"], item["version"], item["is_current"]) == (
        "people",
        "user.alice:city",
        1,
        True,
    )
    assert item["metadata"] == metadata and item["confidence"] == 0.8
    assert item["sources"][0]["source_type"] == "conversation_message"
    assert item["sources"][0]["source_id"] == "m-1" and item["valid_to"] is None

    same = put(
        agent_client,
        "people",
        "user.alice:city",
        "Alice lives in Lisbon.",
        metadata=metadata,
        confidence=0.8,
    )
    assert same.status_code == 200 and same.json()["version"] == 1

    second = put(
        agent_client,
        "people",
        "user.alice:city",
        "Alice moved to Porto.",
        sources=[{"source_type": "user", "source_id": "u1"}],
    )
    assert second.status_code == 200
    assert second.json()["version"] == 2 and second.json()["previous_id"] == item["id"]
    assert [s["source_type"] for s in second.json()["sources"]] == ["user"]

    got = agent_client.client.get(f"{BASE}/people/items/user.alice:city").json()
    assert got["content"] == "Alice moved to Porto." and got["version"] == 2
    versions = agent_client.client.get(f"{BASE}/people/items/user.alice:city/versions").json()
    assert [(v["version"], v["is_current"]) for v in versions["results"]] == [(2, True), (1, False)]
    # Each version keeps its own sources.
    assert versions["results"][1]["sources"][0]["source_id"] == "m-1"

    # Sources omitted: carried over to the new version.
    third = put(agent_client, "people", "user.alice:city", "Alice lives in Porto, Ribeira.")
    assert [s["source_id"] for s in third.json()["sources"]] == ["u1"]
    listed = agent_client.client.get(f"{BASE}/people/items").json()["results"]
    assert [(i["key"], i["version"]) for i in listed] == [("user.alice:city", 3)]


def test_one_current_version_per_key_is_a_constraint(agent_client: AuthedAgent) -> None:
    put(agent_client, "facts", "k1", "first")
    current = KnowledgeItem.objects.get(key="k1")
    with pytest.raises(IntegrityError), transaction.atomic():
        KnowledgeItem.objects.create(
            account_id=current.account_id, store_id=current.store_id, key="k1", content="dup"
        )


@pytest.mark.django_db(transaction=True)
def test_concurrent_puts_of_one_key_make_one_lineage(make_agent_client: Any) -> None:
    authed = make_agent_client()
    actor = actor_for_agent(authed.agent)
    services.knowledge_item_put(actor=actor, base="facts", key="race", content="v0")
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            services.knowledge_item_put(actor=actor, base="facts", key="race", content=f"v{n}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    versions = list(KnowledgeItem.objects.filter(key="race").values_list("version", "is_current"))
    assert sorted(v for v, _ in versions) == [1, 2, 3, 4, 5]
    assert [v for v, current in versions if current] == [5]
    assert len(set(KnowledgeItem.objects.filter(key="race").values_list("lineage", flat=True))) == 1
    store = KnowledgeStore.objects.get(name="facts")
    assert store.item_count == 1


# --- search and invalidation ---------------------------------------------------------------


def test_query_finds_items_explained_and_leaves_invalidated_ones_out(
    agent_client: AuthedAgent,
) -> None:
    put(agent_client, "travel", "office", "The office moved to Lisbon near the river.")
    put(agent_client, "travel", "deploy", "Deploys happen every Friday afternoon.")
    agent_client.client.post(
        f"{BASE}/bases", {"name": "recipes", "knowledge_type": "procedural"}, format="json"
    )
    put(agent_client, "recipes", "bread", "Bake the bread in Lisbon style at 220 degrees.")

    found = query(agent_client, "where is the office in Lisbon", bases=["travel"])
    assert found.status_code == 200, found.json()
    body = found.json()
    assert body["bases"] == ["travel"]
    hit = body["results"][0]
    assert hit["item"]["key"] == "office"
    assert hit["explanation"]["keyword_rank"] == 1 and hit["explanation"]["vector_rank"]
    assert {h["item"]["base"] for h in body["results"]} == {"travel"}

    everywhere = query(agent_client, "Lisbon").json()["results"]
    assert {h["item"]["key"] for h in everywhere} >= {"office", "bread"}
    by_type = query(agent_client, "Lisbon", knowledge_types=["procedural"]).json()
    assert [h["item"]["key"] for h in by_type["results"]] == ["bread"]

    actor = actor_for_agent(agent_client.agent)
    item = selectors.item_get(actor, "travel", "office")
    invalid = services.knowledge_item_invalidate(actor=actor, item=item, reason="moved")
    assert invalid.valid_to is not None and invalid.is_current
    assert not KnowledgeItemPosting.objects.filter(item_id=item.pk).exists()
    after = query(agent_client, "where is the office in Lisbon", bases=["travel"]).json()
    assert "office" not in {h["item"]["key"] for h in after["results"]}
    hits = selectors.knowledge_search(actor=actor, query="office Lisbon river", top_k=100)
    assert item.pk not in {h.item.pk for h in hits.hits}
    # Kept, never deleted, and readable with its validity.
    got = agent_client.client.get(f"{BASE}/travel/items/office").json()
    assert got["valid_to"] is not None
    # Writing the key again makes a new, valid, searchable version.
    again = put(agent_client, "travel", "office", "The office is in Lisbon near the river.")
    assert again.json()["version"] == 2 and again.json()["valid_to"] is None
    back = query(agent_client, "office Lisbon river", bases=["travel"]).json()
    assert back["results"][0]["item"]["key"] == "office"


def test_the_selector_for_context_assembly(agent_client: AuthedAgent) -> None:
    actor = actor_for_agent(agent_client.agent)
    agent_client.client.post(
        f"{BASE}/bases", {"name": "steps", "knowledge_type": "procedural"}, format="json"
    )
    put(agent_client, "steps", "release", "To release, tag the commit and run the pipeline.")
    put(agent_client, "facts", "release-day", "Releases happen on Thursdays.")
    found = selectors.knowledge_search(
        actor=actor, query="how to release", knowledge_types=["procedural"], top_k=5
    )
    assert [h.item.key for h in found.hits] == ["release"] and found.hits[0].score > 0
    store = KnowledgeStore.objects.get(name="facts")
    by_id = selectors.knowledge_search(actor=actor, query="release", base_ids=[store.pk])
    assert [h.item.key for h in by_id.hits] == ["release-day"]


# --- relationships -------------------------------------------------------------------------


def test_relationships_are_edges_of_the_knowledge_graph(agent_client: AuthedAgent) -> None:
    put(agent_client, "facts", "a", "Alpha depends on beta.")
    put(agent_client, "facts", "b", "Beta is a library.")
    body = {
        "source": {"base": "facts", "key": "a"},
        "target": {"base": "facts", "key": "b"},
        "relationship_type": "depends_on",
        "strength": 0.7,
    }
    created = agent_client.client.post(f"{BASE}/relationships", body, format="json")
    assert created.status_code == 201, created.json()
    edge = GraphEdge.objects.get(pk=created.json()["graph_edge_id"])
    a = KnowledgeItem.objects.get(key="a", is_current=True)
    b = KnowledgeItem.objects.get(key="b", is_current=True)
    assert (edge.source_id, edge.target_id, edge.relation_type, edge.weight) == (
        a.graph_node_id,
        b.graph_node_id,
        "depends_on",
        0.7,
    )
    assert a.graph_node_id is not None
    node = GraphNode.objects.get(pk=a.graph_node_id)
    assert (node.name, node.entity_type) == ("facts/a", "knowledge_item")
    # Visible through rag's graph API.
    neighbours = agent_client.client.get(f"/api/v1/graph/nodes/{a.graph_node_id}").json()
    assert "facts/a" in str(neighbours)
    out = agent_client.client.get(f"{BASE}/facts/items/a/relationships").json()["results"]
    assert [(r["direction"], r["target"], r["strength"]) for r in out] == [
        ("outgoing", {"base": "facts", "key": "b"}, 0.7)
    ]
    back = agent_client.client.get(f"{BASE}/facts/items/b/relationships").json()["results"]
    assert [(r["direction"], r["source"]["key"]) for r in back] == [("incoming", "a")]
    # A new version keeps the item's node, so its relationships stay.
    put(agent_client, "facts", "a", "Alpha depends on beta, version two.")
    assert KnowledgeItem.objects.get(key="a", is_current=True).graph_node_id == node.pk
    assert (
        len(agent_client.client.get(f"{BASE}/facts/items/a/relationships").json()["results"]) == 1
    )
    again = agent_client.client.post(f"{BASE}/relationships", body, format="json")
    assert (again.status_code, code(again)) == (409, "edge_exists")


# --- bad input -----------------------------------------------------------------------------


def test_bad_input_is_a_4xx_with_a_code_and_changes_nothing(agent_client: AuthedAgent) -> None:
    put(agent_client, "facts", "a", "Alpha.")
    before = state()
    cases = [
        (put(agent_client, "facts", "k" * 201, "x"), 400, "key_too_long"),
        (put(agent_client, "facts", "bad*key", "x"), 400, "invalid_key"),
        (put(agent_client, "facts", "k", "x", confidence=1.5), 400, "validation_error"),
        (put(agent_client, "facts", "k", "x", confidence=-0.1), 400, "validation_error"),
        (put(agent_client, "facts", "k", "   "), 400, "empty_content"),
        (
            put(agent_client, "facts", "k", "x", sources=[{"source_type": "rumour"}]),
            400,
            "validation_error",
        ),
        (
            put(
                agent_client, "facts", "k", "x", sources=[{"source_type": "user", "reliability": 2}]
            ),
            400,
            "validation_error",
        ),
        (put(agent_client, "b" * 101, "k", "x"), 400, "base_name_too_long"),
        (query(agent_client, "x", bases=["nope"]), 404, "knowledge_base_not_found"),
        (query(agent_client, "x" * 4001), 400, "query_too_long"),
        (query(agent_client, "x", max_results=101), 400, "validation_error"),
        (query(agent_client, "x", max_results=0), 400, "validation_error"),
        (agent_client.client.get(f"{BASE}/facts/items/nope"), 404, "knowledge_item_not_found"),
        (agent_client.client.get(f"{BASE}/nope/items"), 404, "knowledge_base_not_found"),
    ]
    rel = {
        "source": {"base": "facts", "key": "a"},
        "target": {"base": "facts", "key": "missing"},
        "relationship_type": "near",
    }
    cases += [
        (
            agent_client.client.post(f"{BASE}/relationships", rel, format="json"),
            404,
            "knowledge_item_not_found",
        ),
        (
            agent_client.client.post(
                f"{BASE}/relationships",
                {**rel, "target": {"base": "facts", "key": "a"}, "strength": 1.1},
                format="json",
            ),
            400,
            "validation_error",
        ),
        (
            agent_client.client.post(
                f"{BASE}/relationships",
                {**rel, "target": {"base": "facts", "key": "a"}},
                format="json",
            ),
            400,
            "self_loop",
        ),
    ]
    for response, status, expected in cases:
        assert (response.status_code, code(response)) == (status, expected), response.json()
    assert state() == before
    actor = actor_for_agent(agent_client.agent)
    for kwargs, expected in (
        ({"confidence": 2.0}, "invalid_confidence"),
        ({"sources": [services.SourceInput("rumour")]}, "invalid_source_type"),
        ({"sources": [services.SourceInput("user", reliability=-1)]}, "invalid_reliability"),
    ):
        with pytest.raises(Exception) as caught:
            services.knowledge_item_put(actor=actor, base="facts", key="k", content="x", **kwargs)
        assert getattr(caught.value, "code", None) == expected
    with pytest.raises(Exception) as caught:
        services.knowledge_relate(
            actor=actor,
            source=("facts", "a"),
            target=("facts", "a"),
            relationship_type="x",
            strength=3,
        )
    assert getattr(caught.value, "code", None) == "invalid_strength"
    assert state() == before


def test_a_read_key_cannot_write(make_agent_client: Any) -> None:
    reader = make_agent_client(scopes=("read",))
    response = put(reader, "facts", "a", "x")
    assert (response.status_code, code(response)) == (403, "insufficient_scope")
    assert query(reader, "x").status_code == 200


# --- tenancy -------------------------------------------------------------------------------


def test_another_accounts_bases_and_items_answer_like_missing_ones(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent, teammate: AuthedAgent
) -> None:
    put(agent_client, "secret", "plan", "The secret plan is tomatoes.")
    put(agent_client, "secret", "other", "Another secret.")
    # Bases are account-wide: a teammate reads and writes them.
    assert teammate.client.get(f"{BASE}/secret/items/plan").status_code == 200
    assert put(teammate, "secret", "plan", "Teammate's plan.").json()["version"] == 2

    intruder = other_agent_client
    for url in (
        f"{BASE}/secret/items/plan",
        f"{BASE}/secret/items",
        f"{BASE}/secret/items/plan/versions",
        f"{BASE}/secret/items/plan/relationships",
    ):
        foreign = intruder.client.get(url)
        missing = intruder.client.get(url.replace("secret", "nosuch"))
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
    foreign_query = query(intruder, "secret plan", bases=["secret"])
    assert foreign_query.status_code == 404
    assert query(intruder, "secret plan tomatoes").json()["results"] == []
    rel = {
        "source": {"base": "secret", "key": "plan"},
        "target": {"base": "secret", "key": "other"},
        "relationship_type": "near",
    }
    response = intruder.client.post(f"{BASE}/relationships", rel, format="json")
    assert (response.status_code, code(response)) == (404, "knowledge_base_not_found")
    # The same name in the intruder's account is its own base.
    assert put(intruder, "secret", "plan", "Mine.").status_code == 201
    assert KnowledgeStore.objects.filter(name="secret").count() == 2
    assert agent_client.client.get(f"{BASE}/secret/items/plan").json()["content"] == (
        "Teammate's plan."
    )


# --- MCP -----------------------------------------------------------------------------------


def test_the_mcp_tools_are_registered_with_their_scopes() -> None:
    tools = registry.tools()
    jobs = {
        (name, job.value): job.scope
        for name in ("memory_write", "memory_read", "memory_search")
        for job in tools[name].jobs
        if job.value.startswith("knowledge_")
    }
    assert jobs == {
        ("memory_write", "knowledge_item"): "write",
        ("memory_write", "knowledge_relationship"): "write",
        ("memory_read", "knowledge_item"): "read",
        ("memory_search", "knowledge_item"): "read",
    }


# --- admin ---------------------------------------------------------------------------------


def test_admin_shows_versions_sources_relationships_and_writes_through_services(
    agent_client: AuthedAgent,
) -> None:
    from django.test import Client
    from django.urls import reverse

    from core import services as core_services
    from tests.factories import UserFactory

    put(
        agent_client,
        "facts",
        "a",
        "Alpha v1.",
        sources=[{"source_type": "page", "source_id": "p9"}],
    )
    put(agent_client, "facts", "a", "Alpha v2.")
    put(agent_client, "facts", "b", "Beta.")
    agent_client.client.post(
        f"{BASE}/relationships",
        {
            "source": {"base": "facts", "key": "a"},
            "target": {"base": "facts", "key": "b"},
            "relationship_type": "explains",
        },
        format="json",
    )
    clients = {}
    for role in ("operator", "reviewer"):
        user = UserFactory.create(is_staff=True)
        core_services.membership_grant(account=agent_client.agent.account, user=user, role=role)
        clients[role] = Client()
        clients[role].force_login(user)
    item = KnowledgeItem.objects.get(key="a", is_current=True)
    change = reverse("admin:memory_knowledgeitem_change", args=[item.pk])
    page = clients["reviewer"].get(change).content.decode()
    # Every version with its sources, and the relationship to facts/b.
    assert "Alpha v1." in page and "page:p9" in page and "explains" in page and "facts/b" in page
    assert 'name="_save"' not in page  # reviewers read

    form = {
        "content": "Alpha v3.",
        "content_type": "text/plain",
        "metadata": "{}",
        "confidence": "1",
    }
    assert clients["operator"].post(change, form).status_code == 302
    current = KnowledgeItem.objects.get(key="a", is_current=True)
    assert (current.version, current.content) == (3, "Alpha v3.")
    assert [s.source_id for s in current.sources.all()] == ["p9"]  # carried over

    changelist = reverse("admin:memory_knowledgeitem_changelist")
    clients["operator"].post(changelist, {"action": "invalidate", "_selected_action": [current.pk]})
    current.refresh_from_db()
    assert current.valid_to is not None and current.is_current

    store = KnowledgeStore.objects.get(name="facts")
    nodes = set(KnowledgeItem.objects.values_list("graph_node_id", flat=True))
    delete = reverse("admin:memory_knowledgestore_delete", args=[store.pk])
    assert clients["operator"].post(delete, {"post": "yes"}).status_code == 302
    assert not KnowledgeItem.objects.exists() and not KnowledgeItemPosting.objects.exists()
    assert not GraphNode.objects.filter(pk__in=nodes).exists()


def test_the_index_is_rebuilt_from_the_items(agent_client: AuthedAgent) -> None:
    from io import StringIO

    from django.core.management import call_command

    put(agent_client, "facts", "a", "Harbour cranes lift containers.")
    put(agent_client, "facts", "b", "Tides turn at noon.")
    put(agent_client, "facts", "b", "Tides turn at one.")
    store = KnowledgeStore.objects.get(name="facts")
    expected = (store.item_count, store.total_terms, KnowledgeItemPosting.objects.count())
    KnowledgeItemPosting.objects.all().delete()
    KnowledgeStore.objects.filter(pk=store.pk).update(item_count=0, total_terms=0)
    KnowledgeItem.objects.update(embedding_model="")
    call_command("knowledge_rebuild_index", stdout=StringIO())
    store.refresh_from_db()
    assert (store.item_count, store.total_terms, KnowledgeItemPosting.objects.count()) == expected
    assert expected[0] == 2
    found = query(agent_client, "harbour cranes").json()["results"]
    assert found[0]["item"]["key"] == "a" and found[0]["explanation"]["vector_rank"] == 1


def test_the_vector_stage_uses_the_partial_hnsw_index(agent_client: AuthedAgent) -> None:
    import numpy as np

    from rag.vector import vector_literal

    put(agent_client, "facts", "seed", "A first item makes the base.")
    store = KnowledgeStore.objects.get(name="facts")
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(3000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    KnowledgeItem.objects.bulk_create(
        KnowledgeItem(
            account_id=store.account_id,
            store=store,
            key=f"k{i}",
            content=f"synthetic {i}",
            embedding=v,
            embedding_model="test",
        )
        for i, v in enumerate(vectors)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_knowledgeitem")
        cursor.execute(
            "EXPLAIN SELECT u.id, u.embedding <=> %(q)s::vector AS distance "
            "FROM memory_knowledgeitem u WHERE u.store_id = ANY(%(s)s) "
            "AND u.embedding_model = %(m)s AND u.is_current AND u.valid_to IS NULL "
            "ORDER BY distance LIMIT 50",
            {"q": vector_literal(vectors[7]), "s": [store.pk], "m": "test"},
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"Index Scan using {current_index('memory_knowledgeitem')}" in plan, plan


def test_memories_link_to_knowledge_items_the_caller_may_read(
    agent_client: AuthedAgent, other_agent_client: AuthedAgent
) -> None:
    item = put(agent_client, "facts", "crane", "The harbour crane lifts forty tonnes.").json()
    text = "The crane schedule changes every spring with the harbour tides and the weather"
    related = [{"kind": "knowledge_item", "id": item["id"]}]
    written = agent_client.client.post(
        "/api/v1/memory/tools/write", {"text": text, "related": related}, format="json"
    )
    assert written.status_code == 200 and written.json()["written"], written.json()
    found = agent_client.client.post(
        "/api/v1/memory/tools/related", {"related": related}, format="json"
    ).json()["results"]
    assert len(found) == 1
    foreign = other_agent_client.client.post(
        "/api/v1/memory/tools/write", {"text": text, "related": related}, format="json"
    )
    assert (foreign.status_code, code(foreign)) == (404, "related_not_found")


def test_a_search_without_sources_reads_a_statement_fewer(agent_client: AuthedAgent) -> None:
    """``load_sources=False`` (context assembly's knowledge) loads the same items, their base
    with them, without the sources' statement."""
    from django.test.utils import CaptureQueriesContext

    actor = actor_for_agent(agent_client.agent)
    services.knowledge_item_put(actor=actor, base="facts", key="tide", content="High tide at 6.")
    counts, found = [], []
    for load_sources in (True, False):
        with CaptureQueriesContext(connection) as captured:
            result = selectors.knowledge_search(
                actor=actor, query="tide", load_sources=load_sources
            )
        counts.append(len(captured))
        found.append([(h.item.pk, h.score, h.item.store.name) for h in result.hits])
    assert found[0] == found[1] and found[0][0][2] == "facts"
    assert counts[1] == counts[0] - 1


@pytest.mark.real_embeddings  # a floor calibrated on the model
def test_a_similarity_floor_keeps_hits_on_topic_and_skips_the_rest_when_none_is(
    agent_client: AuthedAgent,
) -> None:
    """``min_similarity`` (context assembly's knowledge on topic): of the best hits, those whose
    cosine similarity reaches it; when no item's does, only the vector stage runs."""
    from django.test.utils import CaptureQueriesContext

    actor = actor_for_agent(agent_client.agent)
    ferry = "The island ferry leaves the harbour at seven every morning."
    services.knowledge_item_put(actor=actor, base="facts", key="ferry", content=ferry)
    services.knowledge_item_put(
        actor=actor, base="facts", key="tomato", content="Tomato seedlings need sun at seven."
    )
    on_topic = "When does the island ferry leave the harbour?"
    unfloored = selectors.knowledge_search(actor=actor, query=on_topic)
    assert {h.item.key for h in unfloored.hits} == {"ferry", "tomato"}
    floored = selectors.knowledge_search(actor=actor, query=on_topic, min_similarity=0.5)
    assert [h.item.key for h in floored.hits] == ["ferry"]
    assert floored.hits[0].score == unfloored.hits[0].score and "keyword" in floored.timings_ms

    off_topic = "quarterly tax filing deadline at seven"
    assert selectors.knowledge_search(actor=actor, query=off_topic).hits  # found by its words
    with CaptureQueriesContext(connection) as skipped:
        none = selectors.knowledge_search(actor=actor, query=off_topic, min_similarity=0.5)
    with CaptureQueriesContext(connection) as whole:
        selectors.knowledge_search(actor=actor, query=off_topic)
    assert none.hits == [] and "vector" in none.timings_ms and "keyword" not in none.timings_ms
    assert len(skipped) < len(whole)


def test_writes_racing_a_deletion_are_not_found_not_an_error(agent_client: AuthedAgent) -> None:
    """A write that read its knowledge base, or its context, before another request deleted
    it answers 404 with the code of a missing one, not a 500 (the fuzzer found the same race
    on documents)."""
    from core.errors import NotFound
    from memory.long_term import services as ltm
    from memory.long_term.services.index import context_lock
    from memory.models import KnowledgeStore

    actor = actor_for_agent(agent_client.agent)
    item = services.knowledge_item_put(actor=actor, base="facts", key="moon", content="Full.")
    services.store_delete(actor=actor, store=KnowledgeStore.objects.get(pk=item.item.store_id))
    with pytest.raises(NotFound) as raised:
        services.knowledge_item_invalidate(actor=actor, item=item.item)
    assert raised.value.code == "knowledge_base_not_found"

    context = ltm.context_create(actor=actor, name="scratch")
    ltm.context_delete(actor=actor, context=context)
    with transaction.atomic(), pytest.raises(NotFound) as raised:
        context_lock(context.pk)
    assert raised.value.code == "context_not_found"
