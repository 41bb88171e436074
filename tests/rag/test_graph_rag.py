"""Graph RAG: retrieval and context endpoints, communities (Leiden), the seed constants, the
LLM paths through the stand-in server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import igraph
import pytest

from core.actors import Actor
from rag.graph import retrieval
from rag.graph.graph_rag import graph_context
from rag.graph.services import communities
from rag.graph.services.build import documents_graph_index
from rag.models import (
    Document,
    GraphCommunity,
    GraphCommunityMember,
    GraphMention,
    GraphNode,
)
from rag.spaces import CHUNKS, space_weights
from rag.tuning import TUNING
from tests.conftest import AuthedAgent
from tests.support.openai_standin import (
    OpenAIStandIn,
    openai_standin_fixture,  # noqa: F401 (pytest collects fixtures from module globals)
)

pytestmark = pytest.mark.django_db

RETRIEVE, CONTEXT = "/api/v1/rag/graph/retrieve", "/api/v1/rag/graph/context"
COMMUNITIES = "/api/v1/rag/graph/communities"

PAPERS = [
    "Marie Curie studied radioactivity with Pierre Curie in Paris. Marie Curie isolated "
    "polonium and radium. Pierre Curie measured radium heat output with Marie Curie.",
    "Henri Becquerel discovered uranium rays. Henri Becquerel shared the Nobel Prize with "
    "Marie Curie and Pierre Curie for radioactivity research.",
    "Albert Einstein explained the photoelectric effect. Albert Einstein worked with Max "
    "Planck on quantum theory. Max Planck introduced energy quanta with Albert Einstein.",
    "Niels Bohr built an atomic model from quantum theory. Niels Bohr debated Albert "
    "Einstein about quantum theory. Max Planck admired Niels Bohr.",
]


@pytest.fixture
def corpus(ingest: Callable[..., Document]) -> list[Document]:
    return [ingest(text) for text in PAPERS]


def test_retrieve_answers_results_with_their_communities(
    agent_client: AuthedAgent, actor: Actor, corpus: list[Document]
) -> None:
    run = communities.communities_compute(account_id=actor.account_id)
    assert run.communities.get(0, 0) >= 1
    response = agent_client.client.post(
        RETRIEVE, {"query": "Who worked with Pierre Curie?", "top_k": 3}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert 1 <= len(body["results"]) <= 3
    assert body["results"][0]["document_id"] in {corpus[0].pk, corpus[1].pk}
    assert len(body["seeds"]) <= TUNING.seeds.max_nodes
    assert len(body["communities"]) <= TUNING.walk.max_communities
    ids = {c["id"] for c in body["communities"]}
    assert any(r["community_id"] in ids for r in body["results"])
    assert all(c["summary"] for c in body["communities"])
    bare = agent_client.client.post(
        RETRIEVE, {"query": "polonium", "include_summaries": False}, format="json"
    ).json()
    assert all(c["summary"] is None for c in bare["communities"])
    for bad in ({"query": "x", "max_hops": 0}, {"query": "x", "top_k": 101}, {"query": ""}):
        assert agent_client.client.post(RETRIEVE, bad, format="json").status_code == 400


def test_context_keeps_the_budget_hard_and_names_provenance(
    agent_client: AuthedAgent, actor: Actor, corpus: list[Document]
) -> None:
    communities.communities_compute(account_id=actor.account_id)
    response = agent_client.client.post(
        CONTEXT, {"query": "quantum theory and Albert Einstein"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["token_budget"] == 4000 and 0 < body["tokens"] <= 4000
    names = [s["name"] for s in body["sections"]]
    assert "documents" in names
    chunk = next(s for s in body["sections"] if s["name"] == "documents")["items"][0]
    assert chunk["kind"] == "chunk" and chunk["source"]["document_id"] in {d.pk for d in corpus}
    assert chunk["source"]["path"]
    for budget in (50, 80, 120):
        built = graph_context(actor=actor, query="quantum theory", token_budget=budget)
        assert built.tokens <= budget  # the context and its metadata echoes: test_graph_rag_context


def test_leiden_is_stable_for_a_fixed_seed() -> None:
    graph = igraph.Graph.Erdos_Renyi(n=200, m=800)
    graph.es["weight"] = [1.0 + (i % 3) for i in range(graph.ecount())]
    first, _ = communities.leiden(graph, seed=7)
    assert [communities.leiden(graph, seed=7)[0] for _ in range(3)] == [first] * 3
    found, _ = communities.detect(graph, list(range(1000, 1200)), seed=7, levels=2)
    assert all(len(c.node_ids) >= TUNING.walk.community_min_size for c in found)
    again, _ = communities.detect(graph, list(range(1000, 1200)), seed=7, levels=2)
    assert [c.node_ids for c in again] == [c.node_ids for c in found]
    assert {c.level for c in found} == {0, 1}


def test_communities_are_stored_replaced_and_listed(
    agent_client: AuthedAgent, actor: Actor, corpus: list[Document]
) -> None:
    first = agent_client.client.post(COMMUNITIES, {"seed": 3}, format="json")
    assert first.status_code == 200, first.content
    stored = list(GraphCommunity.objects.order_by("level", "number").values_list("size", flat=True))
    assert stored and min(stored) >= TUNING.walk.community_min_size
    members = set(GraphCommunityMember.objects.filter(level=0).values_list("node_id", flat=True))
    agent_client.client.post(COMMUNITIES, {"seed": 3}, format="json")
    assert (
        list(GraphCommunity.objects.order_by("level", "number").values_list("size", flat=True))
        == stored
    )  # replaced, the same for the same seed
    assert (
        set(GraphCommunityMember.objects.filter(level=0).values_list("node_id", flat=True))
        == members
    )
    listed = agent_client.client.get(COMMUNITIES).json()["results"]
    assert listed and listed[0]["members"] and listed[0]["summary"]
    dry = agent_client.client.post(COMMUNITIES, {"dry_run": True}, format="json").json()
    assert dry["communities"] >= 1 and dry["summaries"] == "extractive"


def _seeds(actor: Actor, corpus: list[Document], vector: Any) -> list[retrieval.Seed]:
    """The seed nodes of the query ``vector`` in the corpus's knowledge base."""
    return retrieval.seed_nodes(
        account_ids=[actor.account_id], space=CHUNKS, scope_ids=[corpus[0].knowledge_base_id],
        vector=vector,
    )  # fmt: skip


def test_seed_constants_are_enforced(
    agent_client: AuthedAgent, actor: Actor, corpus: list[Document], tune: Any
) -> None:
    from core.embeddings import get_embedding_provider

    vector = get_embedding_provider().embed_query("Marie Curie radium")
    seeds = _seeds(actor, corpus, vector)
    assert 1 <= len(seeds) <= TUNING.seeds.max_nodes == 5
    assert all(1 - s.similarity <= TUNING.seeds.distance_threshold == 0.8 for s in seeds)
    # A query unlike every node seeds nothing: nodes farther than the threshold are refused.

    tune("rag.seeds.distance_threshold", -1.0)
    assert _seeds(actor, corpus, vector) == []
    # At most max_communities communities, however many the walk reaches.
    from rag.graph.entities import Entity
    from rag.graph.services.index import nodes_resolve

    made, _ = nodes_resolve(
        account_id=actor.account_id, entities=[Entity(f"Topic {i}", "concept") for i in range(15)]
    )
    reached = {}
    for number, (key, node_id) in enumerate(sorted(made.items())):
        community = GraphCommunity.objects.create(
            account_id=actor.account_id, level=0, number=number, size=3
        )
        GraphCommunityMember.objects.create(
            community=community, node_id=node_id, account_id=actor.account_id
        )
        reached[node_id] = retrieval.Reach(
            node_id, key, "concept", node_id, 1, 1.0 / (number + 1), [(key, "")]
        )
    kept = retrieval._communities(reached)
    assert len(kept) == TUNING.walk.max_communities == 10
    assert len(reached) == 10  # the nodes of the communities left out are dropped
    assert TUNING.walk.community_min_size == 3


def test_the_walk_decays_by_the_space_s_hop_decay(
    actor: Actor, corpus: list[Document], monkeypatch: Any
) -> None:
    from core.embeddings import get_embedding_provider
    from memory.spaces import MEMORY_ENTRIES

    vector = get_embedding_provider().embed_query("Marie Curie radium")
    seeds = _seeds(actor, corpus, vector)
    similarity = {s.node_id: s.similarity for s in seeds}
    for decay in (0.5, 0.2):
        reached = retrieval._walk(seeds, 2, decay)
        assert any(r.hops >= 1 for r in reached.values())  # nodes past the seeds
        for node in reached.values():
            assert node.score == pytest.approx(similarity[node.seed_id] * decay**node.hops)
    # Each space walks with its own decay (chosen on its development data).
    assert (space_weights(CHUNKS).hop_decay, space_weights(MEMORY_ENTRIES).hop_decay) == (0.5, 0.2)
    used: list[float] = []
    walk = retrieval._walk

    def spy(
        starts: Any, hops: int, decay: float, visible: Any = None, **options: Any
    ) -> dict[int, Any]:
        used.append(decay)
        return walk(starts, hops, decay, visible, **options)

    monkeypatch.setattr(retrieval, "_walk", spy)
    retrieval.graph_rank(
        space=CHUNKS, scope_ids=[corpus[0].knowledge_base_id], account_ids=[actor.account_id],
        query="Marie Curie radium", depth=10, query_vector=vector,
    )  # fmt: skip
    assert used == [space_weights(CHUNKS).hop_decay]


# --- the LLM paths (the stand-in server: the protocol, not the quality) ---------------------


def test_llm_extraction_and_summaries_through_the_stand_in(
    actor: Actor, ingest: Callable[..., Document], llm: OpenAIStandIn, settings: Any
) -> None:
    settings.RAG_GRAPH_EXTRACTION = False
    document = ingest("Ada Lovelace wrote notes on the Analytical Engine of Charles Babbage.")
    llm.reply_with(
        json.dumps(
            {
                "entities": [
                    {"name": "Ada Lovelace", "type": "person", "aliases": ["Countess of "
                     "Lovelace"], "passages": [1]},
                    {"name": "Analytical Engine", "type": "concept", "passages": [1]},
                    {"name": "Charles Babbage", "type": "person", "passages": [1]},
                ],
                "relations": [
                    {"source": "Charles Babbage", "type": "Designed", "target":
                     "Analytical Engine", "passages": [1]},
                ],
            }
        ),
        json.dumps({"title": "Early computing", "summary": "Lovelace and Babbage's engine."}),
    )  # fmt: skip
    documents_graph_index(document_ids=[document.pk])
    ada = GraphNode.objects.get(name_key="ada lovelace")
    assert ada.alias_keys == ["countess of lovelace"]
    assert GraphMention.objects.filter(node=ada).count() == 1
    from rag.models import GraphEdge

    assert GraphEdge.objects.filter(relation_type="designed").count() == 1
    run = communities.communities_compute(account_id=actor.account_id)
    assert run.summaries == "llm:openai:stand-in-model" or run.summaries.startswith("llm:")
    community = GraphCommunity.objects.get()
    assert community.title == "Early computing" and community.summary_method.startswith("llm:")
    # A reply that does not hold falls back to the offline extractor.
    llm.reply_with("not json at all")
    documents_graph_index(document_ids=[document.pk])
    assert GraphMention.objects.filter(node__name_key="charles babbage").exists()
