from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from rag import keyword
from rag.models import Chunk, Document, KeywordTerm, KnowledgeBase
from rag.search import SEARCH_MODES
from rag.spaces import CHUNKS

pytestmark = pytest.mark.django_db

CORPUS = {
    "d1": ("Vaccines", "Measles vaccination prevents measles outbreaks in children."),
    "d2": ("Statins", "Statins lower LDL cholesterol and reduce cardiovascular events."),
    "d3": ("Sleep", "Short sleep duration is associated with obesity in adults."),
    "d4": ("Coffee", "Coffee consumption and the risk of type 2 diabetes."),
}
QUERIES = {
    "q1": ("Measles vaccines prevent outbreaks", "d1"),
    "q2": ("cholesterol lowering drugs reduce heart attacks", "d2"),
    "q3": ("sleeping too little makes people obese", "d3"),
}


def beir(tmp_path: Path) -> Path:
    (tmp_path / "qrels").mkdir()
    with (tmp_path / "corpus.jsonl").open("w") as fh:
        for doc_id, (title, text) in CORPUS.items():
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (tmp_path / "queries.jsonl").open("w") as fh:
        for qid, (text, _) in QUERIES.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with (tmp_path / "qrels" / "test.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, (_, doc) in QUERIES.items():
            fh.write(f"{qid}\t{doc}\t1\n")
    return tmp_path


@pytest.mark.real_embeddings  # retrieval quality (nDCG) is asserted
def test_rag_eval_loads_through_the_pipeline_scores_and_reuses(tmp_path: Path) -> None:
    dataset = beir(tmp_path)
    out = StringIO()
    call_command("rag_eval", dataset=dataset, split="test", json=True, stdout=out)
    report = json.loads(out.getvalue())
    assert report["documents"] == 4 and report["queries"] == 3
    assert set(report["modes"]) == {*SEARCH_MODES, "agentic"}  # every mode the API offers
    for metrics in report["modes"].values():
        assert set(metrics) == {"ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_ms"}
        assert metrics["recall@10"] == 1.0  # four documents: every relevant one is in the top 10
    assert report["modes"]["hybrid"]["ndcg@10"] >= 0.9
    # Agentic RAG is scored by its sources' order: no worse than the search it starts from.
    assert report["modes"]["agentic"]["ndcg@10"] >= report["modes"]["hybrid"]["ndcg@10"] - 1e-9
    kb = KnowledgeBase.objects.get(name__startswith="beir:")
    assert Chunk.objects.filter(knowledge_base=kb).count() == 4  # chunked, embedded, indexed
    assert KeywordTerm.objects.filter(knowledge_base=kb).exists()

    call_command("rag_eval", dataset=dataset, split="test", json=True, stdout=StringIO())
    assert Document.objects.filter(knowledge_base=kb).count() == 4  # reused, not reloaded


def test_rag_eval_reports_a_missing_split(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"dev\.tsv"):
        call_command("rag_eval", dataset=beir(tmp_path), split="dev", stdout=StringIO())


def test_rag_search_prints_explained_results(ingest, agent_client) -> None:
    ingest("# Backups\n\nBack up the database nightly with pg_dump.")
    out = StringIO()
    call_command(
        "rag_search", "database backup", account=agent_client.agent.account.slug, stdout=out
    )
    text = out.getvalue()
    assert " 1. " in text and "pg_dump" in text and "keyword #1" in text
    with pytest.raises(CommandError):
        call_command("rag_search", "x", account="nope", stdout=StringIO())


def test_rag_reindex_applies_new_chunking(ingest, kb) -> None:
    document = ingest(
        "# A\n\n" + " ".join(f"Sentence number {i} about indexing." for i in range(60))
    )
    before = Chunk.objects.filter(document=document).count()
    KnowledgeBase.objects.filter(pk=kb.pk).update(chunk_size=512, chunk_overlap=0)
    out = StringIO()
    call_command("rag_reindex", kb=kb.pk, force=True, stdout=out)
    assert "indexed: 1" in out.getvalue()
    assert Chunk.objects.filter(document=document).count() < before
    call_command("rag_reindex", since="1d", stdout=out)  # unchanged content: nothing re-embedded
    assert "unchanged: 1" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("rag_reindex", since="yesterday", stdout=StringIO())


def test_rag_rebuild_index_restores_keyword_statistics(ingest, kb) -> None:
    ingest("# One\n\nCats and dogs.")
    ingest("# Two\n\nDogs and birds.")
    expected = dict(KeywordTerm.objects.filter(knowledge_base=kb).values_list("term", "df"))
    KeywordTerm.objects.filter(knowledge_base=kb).delete()  # corrupted derived data
    KnowledgeBase.objects.filter(pk=kb.pk).update(chunk_count=0, total_terms=0)
    call_command("rag_rebuild_index", kb=[kb.pk], skip_vector=True, stdout=StringIO())
    assert dict(KeywordTerm.objects.filter(knowledge_base=kb).values_list("term", "df")) == expected
    kb.refresh_from_db()
    assert kb.chunk_count == 2
    assert keyword.keyword_search(space=CHUNKS, scope_ids=[kb.pk], query="dogs", limit=5)


@pytest.mark.django_db(transaction=True)
def test_rag_rebuild_index_rebuilds_the_vector_index() -> None:
    out = StringIO()
    call_command("rag_rebuild_index", stdout=out)  # REINDEX CONCURRENTLY runs outside a transaction
    assert "rebuilding the HNSW index" in out.getvalue() and out.getvalue().endswith("done\n")


def test_rag_rebuild_index_graph_restores_the_node_index(kb) -> None:
    from core.actors import actor_for_account
    from rag.graph.services import nodes as graph_services
    from rag.models import GraphNodeTerm, GraphScope
    from rag.spaces import GRAPH_NODES

    actor = actor_for_account(kb.account_id)
    graph_services.node_create(actor=actor, name="Harbour", entity_type="place")
    graph_services.node_create(actor=actor, name="Harbour master", entity_type="person")
    scope = GraphScope.objects.get(account_id=kb.account_id)
    expected = dict(GraphNodeTerm.objects.filter(scope=scope).values_list("term", "df"))
    GraphNodeTerm.objects.filter(scope=scope).delete()
    GraphScope.objects.filter(pk=scope.pk).update(node_count=0, total_terms=0)
    call_command("rag_rebuild_index", graph=True, skip_vector=True, stdout=StringIO())
    assert dict(GraphNodeTerm.objects.filter(scope=scope).values_list("term", "df")) == expected
    scope.refresh_from_db()
    assert scope.node_count == 2
    hits = keyword.keyword_search(space=GRAPH_NODES, scope_ids=[scope.pk], query="harbour", limit=5)
    assert len(hits) == 2
