"""The graph built from text: entities of document chunks, exact re-ingestion, graph search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor, actor_for_account
from rag import services
from rag.graph.entities import text_entities
from rag.graph.names import name_key
from rag.graph.services.index import COOCCURS
from rag.models import Document, GraphEdge, GraphMention, GraphNode, KnowledgeBase
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

CURIE = (
    "Marie Curie worked at the University of Paris with Pierre Curie. "
    "She discovered radium and polonium in 1898.\n\n"
    "Marie Curie won the Nobel Prize in Physics with Henri Becquerel. "
    "The Nobel Prize committee praised radioactivity research."
)
SEARCH = "/api/v1/rag/search"


def test_offline_extraction_finds_names_terms_and_key_phrases() -> None:
    found = text_entities(
        "Marie Curie worked at the University of Paris. BRCA1 mutations raise breast cancer "
        "risk, and insulin resistance is linked to IL-6 levels."
    )
    by_name = {e.name: e.entity_type for e in found.entities}
    assert by_name["Marie Curie"] == "person"
    assert by_name["University of Paris"] == "organisation"
    assert by_name["BRCA1"] == "term" and by_name["IL-6"] == "term"
    assert by_name["insulin resistance"] == "concept"
    saliences = [e.salience for e in found.entities]
    assert saliences == sorted(saliences, reverse=True) and saliences[0] == 1.0
    # A sentence's first word alone is no name; a stop word run is no phrase.
    assert "She" not in by_name and text_entities("Yes. It is so.").entities == []


def test_name_keys_merge_spelling_variants() -> None:
    assert name_key("The  Beatles!") == name_key("beatles") == "beatles"
    assert name_key("IL-6") == "il 6"


def test_ingestion_links_chunks_to_entity_nodes_and_reingestion_is_exact(
    actor: Actor, ingest: Callable[..., Document], kb: KnowledgeBase
) -> None:
    document = ingest(CURIE)
    assert document.status == Document.Status.INDEXED
    curie = GraphNode.objects.get(name_key="marie curie")
    assert curie.entity_type == "person" and curie.embedding is not None
    chunk_ids = set(document.chunks.values_list("id", flat=True))
    linked = set(
        GraphMention.objects.filter(node=curie, space="chunks").values_list("unit_id", flat=True)
    )
    assert linked and linked <= chunk_ids
    assert curie.mention_count == len(linked)
    assert GraphEdge.objects.filter(relation_type=COOCCURS).exists()
    before = (
        sorted(GraphNode.objects.values_list("name_key", "mention_count")),
        sorted(GraphEdge.objects.values_list("source__name_key", "target__name_key", "weight")),
        GraphMention.objects.count(),
    )
    forced = services.document_reprocess(
        actor=actor_for_account(document.account_id), document=document, force=True
    )
    assert services.document_process(document_id=forced.pk) == "indexed"
    from rag.graph.services.build import documents_graph_index

    documents_graph_index(document_ids=[document.pk])
    after = (
        sorted(GraphNode.objects.values_list("name_key", "mention_count")),
        sorted(GraphEdge.objects.values_list("source__name_key", "target__name_key", "weight")),
        GraphMention.objects.count(),
    )
    assert after == before  # no duplicate node, no stale mention, the same weights
    new_chunks = set(current_chunk_ids(document))
    assert set(GraphMention.objects.values_list("unit_id", flat=True)) <= new_chunks


def test_deleting_a_document_or_its_base_forgets_what_the_graph_derived_from_it(
    actor: Actor,
    ingest: Callable[..., Document],
    kb: KnowledgeBase,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Once a deletion commits, the chunks' mentions go (``rag.tasks.graph_forget_chunks``, run
    here by eager Celery): the nodes they named count no mention of them and the co-occurrence
    edges they made are gone; another document's mentions stay, until its base goes too."""
    other = services.knowledge_base_create(actor=actor, name="Other")
    ingest("Ada Lovelace wrote notes on the Analytical Engine with Charles Babbage.")
    ingest("Grace Hopper built the first compiler with Howard Aiken.", target=other)
    gone = ingest(CURIE)
    curie = GraphNode.objects.get(name_key="marie curie")
    assert curie.mention_count > 0

    def mentioned(key: str) -> bool:
        return GraphMention.objects.filter(node__name_key=key).exists()

    with django_capture_on_commit_callbacks(execute=True):
        services.document_delete(actor=actor, document=gone)
    curie.refresh_from_db()
    assert not mentioned("marie curie") and curie.mention_count == 0
    assert not GraphEdge.objects.filter(source=curie).exclude(weight=0).exists()
    assert not GraphEdge.objects.filter(target=curie).exclude(weight=0).exists()
    assert mentioned("ada lovelace") and mentioned("grace hopper")

    with django_capture_on_commit_callbacks(execute=True):
        services.knowledge_base_delete(actor=actor, kb=kb)
    assert not GraphMention.objects.filter(space="chunks", scope_id=kb.pk).exists()
    assert not mentioned("ada lovelace") and mentioned("grace hopper")
    assert GraphNode.objects.get(name_key="ada lovelace").mention_count == 0


def current_chunk_ids(document: Document) -> list[int]:
    return list(document.chunks.values_list("id", flat=True))


def test_an_alias_merges_an_extracted_entity_into_an_existing_node(
    actor: Actor, ingest: Callable[..., Document]
) -> None:
    from rag.graph.services import nodes as graph_services

    made = graph_services.node_create(
        actor=actor, name="Maria Sklodowska", entity_type="person", aliases=["Marie Curie"]
    )
    ingest(CURIE)
    assert not GraphNode.objects.filter(name_key="marie curie").exists()
    assert GraphMention.objects.filter(node=made).exists()


@pytest.mark.real_embeddings  # seeds found by embedding
def test_graph_search_explains_the_seed_and_path(
    agent_client: AuthedAgent, ingest: Callable[..., Document]
) -> None:
    ingest(CURIE)
    response = agent_client.client.post(
        SEARCH, {"query": "Who discovered polonium?", "mode": "graph"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["results"] and body["graph"]["seeds"]
    assert len(body["graph"]["seeds"]) <= 5
    assert {s["match"] for s in body["graph"]["seeds"]} == {"embedding"}  # no name in it
    named = agent_client.client.post(
        SEARCH, {"query": "What did Marie Curie discover?", "mode": "graph"}, format="json"
    ).json()["graph"]["seeds"]
    assert (named[0]["name"], named[0]["match"]) == ("Marie Curie", "name")
    graph = next(r["explanation"]["graph"] for r in body["results"] if r["explanation"]["graph"])
    assert graph["path"][0]["name"] == graph["seed"]["name"]
    assert graph["path"][-1]["name"] == graph["node"]["name"]
    hybrid = agent_client.client.post(
        SEARCH,
        {"query": "Who discovered polonium?", "stages": ["vector", "keyword", "graph"]},
        format="json",
    )
    assert hybrid.status_code == 200, hybrid.content
    assert any(r["explanation"]["graph"] for r in hybrid.json()["results"])
    refused = agent_client.client.post(
        SEARCH, {"query": "x", "mode": "vector", "stages": ["graph"]}, format="json"
    )
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_stages"


def test_a_document_whose_graph_task_never_ran_is_linked_by_the_periodic_job(
    actor: Actor, ingest: Callable[..., Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker is down when the chunks commit: the document is indexed and searchable, the
    graph lags (``graph_indexed_at`` differs from ``indexed_at``), and ``rag.graph_index_pending``
    links it; indexed again later, it is pending again until the graph holds the new chunks."""
    from kombu.exceptions import OperationalError

    from core.models import JobRun
    from rag import tasks
    from rag.graph.services.build import documents_graph_pending

    def broker_down(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(tasks.graph_index_documents, "delay", broker_down)
    document = ingest(CURIE)
    assert document.status == Document.Status.INDEXED and document.graph_indexed_at is None
    assert not GraphMention.objects.exists()
    assert list(documents_graph_pending()) == [document]

    assert tasks.graph_index_pending.delay(dry_run=True).get() == {
        "pending": 1, "indexed": 0, "mentions": 0, "dry_run": 1,
    }  # fmt: skip
    assert not GraphMention.objects.exists()
    counts = tasks.graph_index_pending.delay().get()
    assert counts["indexed"] == 1 and counts["mentions"] > 0
    assert GraphNode.objects.filter(name_key="marie curie").exists()
    document.refresh_from_db()
    assert document.graph_indexed_at == document.indexed_at
    assert not documents_graph_pending().exists()
    assert JobRun.objects.filter(job="rag.graph_index_pending").count() == 2

    forced = services.document_reprocess(
        actor=actor_for_account(document.account_id), document=document, force=True
    )
    assert services.document_process(document_id=forced.pk) == "indexed"
    assert list(documents_graph_pending()) == [document]  # the new chunks are not linked yet
    assert not GraphMention.objects.filter(unit_id__in=current_chunk_ids(document)).exists()
    assert tasks.graph_index_pending.delay().get()["indexed"] == 1
    assert GraphMention.objects.filter(unit_id__in=current_chunk_ids(document)).exists()
    assert not documents_graph_pending().exists()


def test_the_graph_mark_is_the_indexing_read_not_a_later_one(
    ingest: Callable[..., Document],
) -> None:
    """A document indexed again while its graph is being built keeps the older mark: the
    statement that marks it compares ``indexed_at`` with the one read with the chunks."""
    from unittest import mock

    from django.utils import timezone

    from rag.graph.services import build as graph_build
    from rag.graph.services.build import documents_graph_index, documents_graph_pending

    document = ingest(CURIE)
    assert not documents_graph_pending().exists()
    Document.objects.filter(pk=document.pk).update(graph_indexed_at=None)
    later = timezone.now()
    units_index = graph_build.units_index

    def index_then_reindex(**kwargs: Any) -> Any:
        outcome = units_index(**kwargs)
        Document.objects.filter(pk=document.pk).update(indexed_at=later)  # another worker
        return outcome

    with mock.patch.object(graph_build, "units_index", side_effect=index_then_reindex):
        documents_graph_index(document_ids=[document.pk])
    document.refresh_from_db()
    assert document.graph_indexed_at is None and document.indexed_at == later
    assert list(documents_graph_pending()) == [document]
    documents_graph_index(document_ids=[document.pk])
    document.refresh_from_db()
    assert document.graph_indexed_at == later
