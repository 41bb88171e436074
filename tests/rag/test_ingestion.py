from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core.embeddings import get_embedding_provider
from rag import keyword, services
from rag.indexing import indexed_text
from rag.models import Chunk, Document, KeywordPosting, KeywordTerm, KnowledgeBase
from rag.services import pipeline

pytestmark = pytest.mark.django_db

GUIDE = """# Installing

Engram runs with one command. The launcher starts PostgreSQL and Valkey from wheels.

## Linux

On Linux the embedded servers listen on unix sockets inside the data directory, never on the
standard ports, so they cannot collide with system servers.

# Searching

Hybrid search fuses vector similarity with BM25 keyword ranking using reciprocal rank fusion.
"""


def assert_index_consistent(kb: KnowledgeBase) -> None:
    """Corpus statistics equal what a from-scratch count of the chunks and postings gives."""
    kb.refresh_from_db()
    chunks = Chunk.objects.filter(knowledge_base=kb)
    assert kb.chunk_count == chunks.count()
    assert kb.total_terms == sum(chunks.values_list("keyword_length", flat=True))
    expected_df: Counter[str] = Counter()
    for text, path, title in chunks.values_list("text", "heading_path", "document__title"):
        expected_df.update(
            set(keyword.analyze(indexed_text(title=title, heading_path=path, text=text)))
        )
    stored_df = dict(KeywordTerm.objects.filter(knowledge_base=kb).values_list("term", "df"))
    assert stored_df == dict(expected_df)
    assert KeywordPosting.objects.filter(knowledge_base=kb).count() == sum(expected_df.values())


def test_upload_is_chunked_embedded_and_indexed(ingest, kb) -> None:
    document = ingest(GUIDE, title="Guide")
    assert document.status == Document.Status.INDEXED, document.error
    assert document.progress == 1.0
    chunks = list(Chunk.objects.filter(document=document).order_by("position"))
    assert len(chunks) >= 2
    assert document.chunks_total == document.chunks_embedded == len(chunks)
    assert all(
        c.embedding_model == "local:all-MiniLM-L6-v2" and len(c.embedding) == 384 for c in chunks
    )
    assert chunks[0].heading_path == ["Installing"]
    assert any(c.heading_path == ["Installing", "Linux"] for c in chunks)
    assert_index_consistent(kb)


def test_processing_the_same_content_twice_changes_nothing(ingest, kb) -> None:
    document = ingest(GUIDE)
    before = list(Chunk.objects.filter(document=document).values_list("id", "text"))
    services.document_reprocess(document=document)
    assert services.document_process(document_id=document.pk) == "unchanged"
    assert list(Chunk.objects.filter(document=document).values_list("id", "text")) == before
    forced = services.document_reprocess(document=document, force=True)
    assert services.document_process(document_id=forced.pk) == "indexed"
    assert [t for _, t in Chunk.objects.filter(document=document).values_list("id", "text")] == [
        t for _, t in before
    ]
    assert_index_consistent(kb)


def test_changed_content_replaces_chunks_atomically(
    ingest, kb, django_capture_on_commit_callbacks
) -> None:
    document = ingest(GUIDE)
    other = ingest("# Other\n\nA second document about gardening and tomatoes.")
    with django_capture_on_commit_callbacks(execute=True):
        services.document_replace_content(
            document=document,
            data=b"# Replaced\n\nNothing about servers any more, only tomatoes.",
            content_type="text/markdown",
        )
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED
    texts = list(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert len(texts) == 1 and "Replaced" in texts[0]
    assert Chunk.objects.filter(document=other).exists()
    assert_index_consistent(kb)


def test_delete_removes_chunks_and_index_data(ingest, kb) -> None:
    keep = ingest("# Keep\n\nValkey keeps working memory.")
    gone = ingest(GUIDE)
    services.document_delete(document=gone)
    assert not Chunk.objects.filter(document_id=gone.pk).exists()
    assert not KeywordPosting.objects.filter(document_id=gone.pk).exists()
    assert Chunk.objects.filter(document=keep).exists()
    assert_index_consistent(kb)


def test_failure_is_visible_and_retryable(ingest, kb, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise ValueError("chunker exploded")

    monkeypatch.setattr(pipeline, "chunk_document", broken)
    document = ingest(GUIDE)
    assert document.status == Document.Status.FAILED
    assert document.error == "chunker exploded"
    assert not Chunk.objects.filter(document=document).exists()
    monkeypatch.undo()
    services.document_reprocess(document=document)
    assert services.document_process(document_id=document.pk) == "indexed"
    assert_index_consistent(kb)


def test_a_worker_killed_mid_document_leaves_nothing_partial(ingest, kb, monkeypatch) -> None:
    original = ingest(GUIDE)
    before = list(Chunk.objects.filter(document=original).values_list("text", flat=True))

    class WorkerKilled(BaseException):
        pass

    provider = get_embedding_provider()
    calls = {"n": 0}
    real = provider.embed_documents

    def dies_on_second_batch(texts):
        calls["n"] += 1
        if calls["n"] == 2:
            raise WorkerKilled
        return real(texts)

    monkeypatch.setattr(pipeline, "EMBED_BATCH", 1)
    monkeypatch.setattr(provider, "embed_documents", dies_on_second_batch)
    Document.objects.filter(pk=original.pk).update(
        original=(GUIDE + "\n\nMore text.").encode(), checksum="changed", status="pending"
    )
    with pytest.raises(WorkerKilled):
        services.document_process(document_id=original.pk, claim="task-1")
    original.refresh_from_db()
    assert original.status == Document.Status.PROCESSING
    assert original.chunks_embedded == 1
    # The old chunks are still the searchable ones: nothing partial, nothing duplicated.
    assert list(Chunk.objects.filter(document=original).values_list("text", flat=True)) == before
    assert_index_consistent(kb)

    monkeypatch.undo()
    # A fresh run cannot take a live claim, but takes a stale one; Celery's redelivery (same id)
    # resumes at once.
    assert services.document_process(document_id=original.pk, claim="task-2") == "skipped"
    assert services.document_process(document_id=original.pk, claim="task-1") == "indexed"
    texts = list(Chunk.objects.filter(document=original).values_list("text", flat=True))
    assert any("More text" in t for t in texts)
    assert len(texts) == len(
        set(Chunk.objects.filter(document=original).values_list("position", flat=True))
    )
    assert_index_consistent(kb)


def test_stale_claims_are_taken_over(ingest) -> None:
    document = ingest(GUIDE)
    Document.objects.filter(pk=document.pk).update(
        status="processing",
        processing_task_id="dead-worker",
        checksum="new",
        processing_started_at=timezone.now() - timedelta(hours=2),
    )
    assert services.document_process(document_id=document.pk, claim="fresh") == "indexed"


def test_a_superseded_run_writes_nothing(ingest, kb, monkeypatch) -> None:
    document = ingest(GUIDE)
    provider = get_embedding_provider()
    real = provider.embed_documents

    def content_changes_meanwhile(texts):
        Document.objects.filter(pk=document.pk).update(checksum="edited-meanwhile")
        return real(texts)

    monkeypatch.setattr(provider, "embed_documents", content_changes_meanwhile)
    Document.objects.filter(pk=document.pk).update(status="pending", checksum="v2")
    before = list(Chunk.objects.filter(document=document).values_list("id", flat=True))
    assert services.document_process(document_id=document.pk, claim="c") == "skipped"
    assert list(Chunk.objects.filter(document=document).values_list("id", flat=True)) == before


def test_paused_knowledge_base_defers_processing(ingest, kb) -> None:
    services.knowledge_base_transition(kb=kb, to="paused")
    document = ingest(GUIDE)
    assert document.status == Document.Status.PENDING
    services.knowledge_base_transition(kb=kb, to="active")
    assert services.document_process(document_id=document.pk) == "indexed"


def test_invalid_transitions_are_refused(kb) -> None:
    from core.errors import Conflict

    services.knowledge_base_transition(kb=kb, to="archived")
    with pytest.raises(Conflict) as exc:
        services.knowledge_base_transition(kb=kb, to="indexing")
    assert exc.value.code == "invalid_transition"


def test_bm25_scores_match_a_reference_implementation(ingest, kb, actor) -> None:
    docs = [
        "# A\n\nThe cat sat on the mat with another cat.",
        "# B\n\nDogs chase cats in the garden.",
        "# C\n\nA garden of roses, tulips and more roses.",
    ]
    for text in docs:
        ingest(text)
    hits = keyword.keyword_search(knowledge_base_ids=[kb.pk], query="cats garden roses", limit=10)
    chunks = {
        c.pk: keyword.analyze(
            indexed_text(title=c.document.title, heading_path=c.heading_path, text=c.text)
        )
        for c in Chunk.objects.filter(knowledge_base=kb).select_related("document")
    }
    n = len(chunks)
    avg = sum(len(t) for t in chunks.values()) / n
    expected = {}
    for cid, terms in chunks.items():
        score = 0.0
        for term in set(keyword.analyze("cats garden roses")):
            tf = terms.count(term)
            if tf:
                df = sum(1 for other in chunks.values() if term in other)
                score += keyword.idf(df, n) * keyword.tf_factor(tf, len(terms), avg)
        if score:
            expected[cid] = score
    assert {h.chunk_id: round(h.score, 9) for h in hits} == {
        k: round(v, 9) for k, v in expected.items()
    }
    assert [h.chunk_id for h in hits] == sorted(expected, key=lambda k: -expected[k])


def test_chunk_vector_query_uses_the_hnsw_index(ingest, kb) -> None:
    """The exact query vector_search runs, on enough rows that the planner has a real choice."""
    import numpy as np

    from rag.search import vector_literal

    document = ingest("# Seed\n\nA seed document.")
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(3000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    Chunk.objects.bulk_create(
        Chunk(
            account_id=kb.account_id,
            knowledge_base=kb,
            document=document,
            position=i + 1,
            text=f"synthetic {i}",
            token_count=2,
            embedding=v,
            embedding_model="test",
        )
        for i, v in enumerate(vectors)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")
        cursor.execute(
            "EXPLAIN SELECT c.id, c.embedding <=> %(q)s::vector AS distance FROM rag_chunk c "
            "WHERE c.knowledge_base_id = ANY(%(kbs)s) AND c.embedding_model = %(model)s "
            "ORDER BY distance LIMIT 50",
            {"q": vector_literal(vectors[7]), "kbs": [kb.pk], "model": "test"},
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using rag_chunk_embedding_hnsw" in plan, plan


def test_recovery_job_requeues_stuck_documents(ingest, kb, actor, monkeypatch) -> None:
    from core.models import JobRun
    from rag import tasks

    # The broker is down when the upload commits: the document is stored and stays pending.
    def broker_down(*args, **kwargs):
        from kombu.exceptions import OperationalError

        raise OperationalError("connection refused")

    monkeypatch.setattr(tasks.process_document, "delay", broker_down)
    document = ingest(GUIDE)
    assert document.status == Document.Status.PENDING
    monkeypatch.undo()
    Document.objects.filter(pk=document.pk).update(updated_at=timezone.now() - timedelta(hours=1))

    assert tasks.recover_documents.delay().get() == {"found": 1, "queued": 1}
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED
    assert JobRun.objects.get(job="rag.recover_documents").counts == {"found": 1, "queued": 1}


def test_vector_search_ignores_chunks_of_another_embedding_model(ingest, kb) -> None:
    from rag.search import vector_search

    document = ingest("# Backups\n\nBack up the database nightly.")
    query = get_embedding_provider().embed_query("database backups")
    assert vector_search(knowledge_base_ids=[kb.pk], query_vector=query, limit=5)
    Chunk.objects.filter(document=document).update(embedding_model="openai:old-model")
    assert vector_search(knowledge_base_ids=[kb.pk], query_vector=query, limit=5) == []
    assert keyword.keyword_search(knowledge_base_ids=[kb.pk], query="database backups", limit=5)


def test_a_batch_that_cannot_embed_fails_its_documents_visibly(actor, kb, monkeypatch) -> None:
    from core.embeddings.base import EmbeddingError
    from rag import tasks

    documents = [
        services.document_create(
            actor=actor, kb=kb, data=text.encode(), content_type="text/plain", enqueue=False
        )
        for text in ("First document.", "Second document.")
    ]

    def down(texts):
        raise EmbeddingError("embedding endpoint unreachable")

    monkeypatch.setattr(get_embedding_provider(), "embed_documents", down)
    monkeypatch.setattr(tasks.process_documents, "max_retries", 0)
    result = tasks.process_documents.apply(args=([d.pk for d in documents],))
    assert result.get() == {"failed": 2}
    for document in documents:
        document.refresh_from_db()
        assert document.status == Document.Status.FAILED
        assert document.error == "embedding endpoint unreachable"
        assert not Chunk.objects.filter(document=document).exists()


def test_a_batch_swaps_documents_of_several_knowledge_bases_in_groups(
    actor, kb, ingest, monkeypatch
) -> None:
    other_kb = services.knowledge_base_create(actor=actor, name="Other", chunk_size=64)
    indexed = ingest(GUIDE)  # indexed once already: the batch replaces its chunks
    Document.objects.filter(pk=indexed.pk).update(
        original=b"# Replaced\n\nOnly tomatoes now.", checksum="v2", status="pending"
    )
    fresh = [
        services.document_create(
            actor=actor,
            kb=target,
            data=f"# Note {n}\n\nValkey holds working memory number {n}.".encode(),
            content_type="text/markdown",
            enqueue=False,
        )
        for n, target in enumerate([kb, other_kb, kb, other_kb, kb])
    ]
    # Several groups, so embedding one overlaps writing another.
    monkeypatch.setattr(pipeline, "CLAIM_DOCUMENTS", 2)
    monkeypatch.setattr(pipeline, "GROUP_CHUNKS", 3)
    outcomes = services.documents_process_batch(document_ids=[indexed.pk] + [d.pk for d in fresh])
    assert outcomes == {"indexed": 6}
    for document in [indexed, *fresh]:
        document.refresh_from_db()
        assert document.status == Document.Status.INDEXED, document.error
        assert document.chunks_embedded == document.chunks_total == document.chunks.count() > 0
        assert document.indexed_checksum == document.checksum
    assert ["Replaced" in t for t in indexed.chunks.values_list("text", flat=True)] == [True]
    assert_index_consistent(kb)
    assert_index_consistent(other_kb)
    # Processing the same batch again re-embeds nothing.
    for document in [indexed, *fresh]:
        services.document_reprocess(document=document)
    again = services.documents_process_batch(document_ids=[indexed.pk] + [d.pk for d in fresh])
    assert again == {"unchanged": 6}


def test_a_batch_skips_only_the_document_that_changed_meanwhile(actor, kb, monkeypatch) -> None:
    documents = [
        services.document_create(
            actor=actor,
            kb=kb,
            data=f"Document number {n} about backups.".encode(),
            content_type="text/plain",
            enqueue=False,
        )
        for n in range(3)
    ]
    real_swap = pipeline._swap_embedded

    def second_document_edited_meanwhile(*args, **kwargs):
        # An edit lands after the batch read the document, before its chunks are written.
        Document.objects.filter(pk=documents[1].pk).update(checksum="edited-meanwhile")
        return real_swap(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_swap_embedded", second_document_edited_meanwhile)
    outcomes = services.documents_process_batch(document_ids=[d.pk for d in documents])
    assert outcomes == {"indexed": 2, "skipped": 1}
    assert not Chunk.objects.filter(document=documents[1]).exists()
    assert Chunk.objects.filter(document__in=[documents[0], documents[2]]).count() == 2
    assert_index_consistent(kb)
