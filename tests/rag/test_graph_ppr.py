"""Graph mode ranks by the graph: personalized PageRank over entities and passages
(``rag.graph.ppr``, ``rag.graph.retrieval``): a unit only the walk reaches comes first, hubs
are damped, the query's names seed before its embedding, intruders' graphs stay theirs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from core.actors import Actor
from rag.graph import ppr, retrieval
from rag.graph.chunks import chunk_search_staged
from rag.models import Document, GraphNode
from rag.search import SearchFilters
from rag.spaces import CHUNKS
from rag.tuning import TUNING
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

HARBOR = "The Harbor Library is run by Jonas Lind."
KIRUNA = "Jonas Lind was born in Kiruna."
QUESTION = "Where was the person who runs the Harbor Library born?"
DISTRACTORS = [
    "The harbor ferry leaves at noon and the library bus follows it.",
    "Anna Berg was born in Malmo and runs a bakery by the river.",
    "Where a person was born tells little about the library they read in.",
    "The person who runs the city museum is Erik Holm.",
]


def _search(actor: Actor, query: str, mode: str, kb_id: int) -> list[int]:
    outcome = chunk_search_staged(
        actor=actor, query=query, mode=mode, top_k=5,
        filters=SearchFilters(knowledge_base_ids=(kb_id,)),
    )  # fmt: skip
    return [hit.chunk_id for hit in outcome.hits]


def _chunk(document: Document) -> int:
    return document.chunks.values_list("id", flat=True).get()


def test_the_walk_ranks_the_hop_only_document_first(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    a, b = ingest(HARBOR), ingest(KIRUNA)
    for text in DISTRACTORS:
        ingest(text)
    kb_id = a.knowledge_base_id
    hybrid = _search(actor, QUESTION, "vector", kb_id)
    assert (
        _chunk(b) not in hybrid[:1]
    )  # the question shares no word with B: no stage finds it first
    graph = _search(actor, QUESTION, "graph", kb_id)
    assert graph[0] == _chunk(b) and _chunk(a) in graph[:3]
    outcome = chunk_search_staged(
        actor=actor, query=QUESTION, mode="graph", top_k=5,
        filters=SearchFilters(knowledge_base_ids=(kb_id,)),
    )  # fmt: skip
    explained = outcome.hits[0].graph  # type: ignore[attr-defined]
    assert explained["seed"]["name"] == "Harbor Library"
    assert [p["name"] for p in explained["path"]][-1] == explained["node"]["name"]
    # Hybrid search lets the graph lead this relation-chain question (the gate), not others.
    assert _search(actor, QUESTION, "hybrid", kb_id)[0] == _chunk(b)
    plain = "Where is the harbor library?"
    unchained = chunk_search_staged(
        actor=actor, query=plain, mode="hybrid", top_k=5,
        filters=SearchFilters(knowledge_base_ids=(kb_id,)),
    )  # fmt: skip
    assert not hasattr(unchained, "seeds")  # the plain hybrid search, no graph read
    # The query named the library: it seeds by name, before any embedding neighbour.
    assert outcome.seeds[0].name == "Harbor Library" and outcome.seeds[0].match == "name"  # type: ignore[attr-defined]


def test_a_hub_mentioned_by_every_unit_pulls_no_unrelated_unit_up() -> None:
    """Hub damping: a node that every unit mentions (a speaker who says every turn) has
    specificity 0, so the walk does not carry the seed's mass through it to the others."""
    units = TUNING.walk.hub_min_mentions + 10
    seed = retrieval.Seed(1, "Jonas Lind", "person", 0.9, "name", 1)
    reached = {
        1: retrieval.Reach(1, "Jonas Lind", "person", 1, 0, 1.0, [("Jonas Lind", "")], 1),
        2: retrieval.Reach(2, "Acme", "organisation", 1, 1, 0.5, [("Acme", "")], units),
    }
    edges = [(1, 2, "co_occurs", 3.0)]
    others = range(1001, 1000 + units)
    mentions = [(1, 1000, 1.0), (2, 1000, 0.8)] + [(2, u, 1.0) for u in others]
    similarity = dict.fromkeys([1000, *others], 0.0)
    hits = ppr.rank_units([seed], reached, edges, mentions, similarity, {}, units, 100)
    assert [h.unit_id for h in hits] == [1000]  # nothing flows through the hub
    # Were the hub rare (a corpus a million units large), it would spread the seed's mass.
    spread = ppr.rank_units([seed], reached, edges, mentions, similarity, {}, 10**6, 100)
    assert spread[0].unit_id == 1000 and len(spread) == units
    assert ppr.specificity(units, units) == 0.0 < ppr.specificity(1, units) < 1
    # Above hub_share of the searched units (and hub_min_mentions), a node is not walked from.
    assert retrieval.hub_limit(100_000) == 100_000 * TUNING.walk.hub_share
    assert retrieval.hub_limit(10) == TUNING.walk.hub_min_mentions


def test_pagerank_restarts_at_the_reset_vector_and_keeps_its_mass() -> None:
    # A path 0 - 1 - 2 and a lone node 3: from 0, mass decreases along the path, 3 gets none.
    mass = ppr.personalized_pagerank(
        4, np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1.0]),
        np.array([1.0, 0.0, 0.0, 0.0]), damping=0.5,
    )  # fmt: skip
    assert mass[0] > mass[1] > mass[2] > 0 == mass[3]
    assert mass.sum() == pytest.approx(1.0)
    reset = ppr.reset_vector(4, {0: 2.0}, {3: 1.0}, 0.25)
    assert reset.tolist() == pytest.approx([0.75, 0, 0, 0.25])


def _vector(text: str) -> list[float]:
    from core.embeddings import get_embedding_provider

    return list(get_embedding_provider().embed_query(text))


@pytest.mark.real_embeddings  # seeds found by embedding
def test_seeds_match_names_and_aliases_before_embeddings(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    from core.embeddings import get_embedding_provider
    from rag.graph.services import nodes as graph_services
    from rag.models import GraphMention

    made = graph_services.node_create(
        actor=actor, name="Maria Sklodowska", entity_type="person", aliases=["Marie Curie"]
    )
    document = ingest("Marie Curie isolated polonium. Jonas Lind was born in Kiruna.")
    chunk = _chunk(document)
    # An n-gram node that adds a verb to a name, nearest the query's embedding of all.
    junk = GraphNode.objects.create(
        account_id=actor.account_id, scope=made.scope, entity_type="concept",
        name="jonas lind was", name_key="jonas lind was", mention_count=1,
        embedding=_vector("Where was Jonas Lind born?"),
        embedding_model=get_embedding_provider().model_id,
    )  # fmt: skip
    GraphMention.objects.create(
        account_id=actor.account_id, node=junk, space="chunks",
        scope_id=document.knowledge_base_id, unit_id=chunk,
    )  # fmt: skip
    vector = get_embedding_provider().embed_query("Where was Jonas Lind born?")
    seeds = retrieval.seed_nodes(
        account_ids=[actor.account_id], space=CHUNKS, scope_ids=[document.knowledge_base_id],
        vector=vector, query="Where was Jonas Lind born?",
    )  # fmt: skip
    assert (seeds[0].name, seeds[0].match) == ("Jonas Lind", "name")
    assert "jonas lind was" not in {s.name for s in seeds}  # no slot for the verb n-gram
    assert len(seeds) <= TUNING.seeds.max_nodes
    # An alias names its node: "Marie Curie" seeds Maria Sklodowska, first.
    vector = get_embedding_provider().embed_query("What did Marie Curie isolate?")
    seeds = retrieval.seed_nodes(
        account_ids=[actor.account_id], space=CHUNKS, scope_ids=[document.knowledge_base_id],
        vector=vector, query="What did Marie Curie isolate?",
    )  # fmt: skip
    assert (seeds[0].node_id, seeds[0].match) == (made.pk, "alias")
    assert retrieval.query_names("Harbor Library's director")[0][0] == "harbor library director"


def test_an_intruders_graph_never_seeds_nor_answers(
    actor: Actor,
    ingest: Callable[..., Document],
    other_agent_client: AuthedAgent,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from core.actors import actor_for_agent
    from rag import services

    intruder = actor_for_agent(other_agent_client.agent)
    theirs = services.knowledge_base_create(
        actor=intruder, name="Theirs", chunk_size=64, chunk_overlap=8
    )
    for text in ("The Harbor Library is run by Eva Strand.", "Eva Strand was born in Narvik."):
        with django_capture_on_commit_callbacks(execute=True):
            services.document_create(
                actor=intruder, kb=theirs, data=text.encode(), content_type="text/markdown",
                metadata=services.DocumentMetadata(),
            )  # fmt: skip
    their_nodes = set(
        GraphNode.objects.filter(account_id=intruder.account_id).values_list("id", flat=True)
    )
    assert their_nodes  # the intruder owns a graph naming the same library
    a, b = ingest(HARBOR), ingest(KIRUNA)
    outcome = chunk_search_staged(
        actor=actor, query=QUESTION, mode="graph", top_k=10,
        filters=SearchFilters(knowledge_base_ids=(a.knowledge_base_id,)),
    )  # fmt: skip
    ours = {_chunk(a), _chunk(b)}
    assert {h.chunk_id for h in outcome.hits} <= ours
    assert outcome.hits[0].chunk_id == _chunk(b)
    assert not {s.node_id for s in outcome.seeds or []} & their_nodes  # type: ignore[attr-defined]
    for hit in outcome.hits:
        names = {p["name"] for p in (hit.graph or {}).get("path", [])}  # type: ignore[attr-defined]
        assert "Eva Strand" not in names
    # Searching every knowledge base it may read changes nothing: theirs is not among them.
    everything = chunk_search_staged(actor=actor, query=QUESTION, mode="graph", top_k=10)
    assert {h.chunk_id for h in everything.hits} <= ours


@pytest.mark.parametrize(
    ("query", "chain"),
    [
        ("Where was the person who runs the Harbor Library born?", True),
        ("In which city was the founder of Acme born?", True),
        ("Where was the person Tobias Sandhart married born?", True),
        ("Where did whoever started Redwood Robotics work?", True),
        ("When was Harbor Library's director born?", True),
        ("Who is the person who runs the Harbor Library?", False),  # the phrase is the answer
        ("What is the capital of France?", False),
        ("Who is Caroline's mother?", False),
        ("What did Caroline research?", False),
        ("The protein that binds IL-6 is upregulated in cancer.", False),  # a claim, no question
    ],
)
def test_the_gate_knows_a_relation_chain(query: str, chain: bool) -> None:
    from rag.graph.gate import needs_hop

    assert needs_hop(query) is chain


def test_the_query_names_its_relations() -> None:
    from rag.graph.gate import query_relations

    asked = query_relations("In which town was the person who founded the Maple Club raised?")
    assert asked == {"founded", "grew_up_in"}
    assert query_relations("What did Caroline research?") == frozenset()


def test_the_first_hop_follows_the_relation_next_to_the_named_entity() -> None:
    """ "Who runs the employer of Vera Ranvik?": the relations are works_at and leads, but the
    first hop from Vera Ranvik is works_at ("the employer of"); "runs" is the last hop's."""
    from rag.graph.gate import first_hop_relations, query_relations

    question = "Who runs the employer of Vera Ranvik?"
    assert query_relations(question) == {"works_at", "leads"}
    assert first_hop_relations(question) == {"works_at"}
    assert first_hop_relations("What is the alma mater of the person Ada Holm mentored?") == {
        "mentored"
    }
    assert first_hop_relations("Where is the brother of Ada Holm's friend?") is not None
    assert first_hop_relations("What did Caroline research?") is None  # no description


def test_a_chain_question_bridges_through_its_first_relation_not_its_last(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    """Vera Ranvik runs one museum and works at another: asked who runs her employer, the walk
    bridges through the museum she works at (the first hop's relation), so its director's
    document, which shares no word with the question, is found; the museum she runs, which
    matches "runs", does not take the bridge."""
    works = ingest("Vera Ranvik has been on the staff of the Upper Clover Museum since 1999.")
    director = ingest("Hakon Galdton is the director of the Upper Clover Museum.")
    ingest("The Pebble Library is run by Vera Ranvik. It is located in Corstad.")
    ingest("Ulrik Daltqvist works at the Pebble Library.")
    ingest("Lars Rookqvist joined the Pebble Library in 1997 and runs its reading club.")
    ingest("Who runs the ferry? The ferry is run by the harbour office of Corstad.")
    kb_id = works.knowledge_base_id
    found = _search(actor, "Who runs the employer of Vera Ranvik?", "graph", kb_id)
    assert _chunk(director) in found[:3], found


def test_a_chain_question_is_read_hop_by_hop() -> None:
    """Each bridge's relations, the first hop first; a description that is all the question asks
    is its answer, not a bridge."""
    from rag.graph.gate import chain_relations

    assert chain_relations(
        "What is the alma mater of the person the mentor of Viktor Lorby married?"
    ) == [{"mentored"}, {"married_to"}]
    assert chain_relations("Where does the coach of the club started by Petra Kell work?") == [
        {"founded"},
        {"leads"},
    ]
    assert chain_relations("Who is the employer of the sibling of Hana Jesssen?") == [
        {"sibling_of"}
    ]
    assert chain_relations("Where was the person who runs the Harbor Library born?") == [{"leads"}]
    assert chain_relations("What did Caroline research?") is None


def test_a_three_hop_question_carries_the_restart_to_the_second_bridge(
    actor: Actor, ingest: Callable[..., Document], tune: Callable[[str, Any], None]
) -> None:
    """ "The alma mater of the person the mentor of Viktor Lorby married": the restart moves from
    Viktor Lorby to his mentor (mentored), then on to the mentor's spouse (married_to), whose
    degree is the document only two hops find."""
    ingest("Jonas Almqvist mentored Viktor Lorby for six years.")
    ingest("Jonas Almqvist married Ida Sundberg in 2004.")
    final = ingest("Ida Sundberg took a degree at the Harburg Institute of Technology.")
    for text in (
        "Jonas Almqvist took a degree at the Tulbridge Academy.",
        "Viktor Lorby took a degree at Norrvik University.",
        "Viktor Lorby married Selma Dahl, who grew up in Lund.",
        "Selma Dahl took a degree at the Lund School of Art.",
        "Jonas Almqvist works with Ada Berg at the Tulbridge Academy.",
    ):
        ingest(text)
    question = "What is the alma mater of the person the mentor of Viktor Lorby married?"
    kb_id = final.knowledge_base_id
    assert _chunk(final) in _search(actor, question, "graph", kb_id)[:3]
    tune("rag.ppr.chain_next_shift", 0.0)
    assert _chunk(final) not in _search(actor, question, "graph", kb_id)[:3]
