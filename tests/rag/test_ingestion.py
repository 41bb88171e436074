from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from core.actors import actor_for_account
from core.embeddings import get_embedding_provider
from core.embeddings.generations import current_index
from core.errors import Conflict
from rag import keyword, services
from rag.indexing import indexed_text
from rag.models import Chunk, Document, KeywordPosting, KeywordTerm, KnowledgeBase
from rag.services import pipeline, swap
from rag.spaces import CHUNKS

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


@pytest.mark.real_embeddings  # the default configuration's model id is recorded
def test_upload_is_chunked_embedded_and_indexed(ingest, kb) -> None:
    document = ingest(GUIDE, title="Guide")
    assert document.status == Document.Status.INDEXED, document.error
    assert document.progress == 1.0
    chunks = list(Chunk.objects.filter(document=document).order_by("position"))
    assert len(chunks) >= 2
    assert document.chunks_total == document.chunks_embedded == len(chunks)
    assert all(
        c.embedding_model == "local:all-MiniLM-L6-v2"
        and c.embedding is not None
        and len(c.embedding) == 384
        for c in chunks
    )
    assert chunks[0].heading_path == ["Installing"]
    assert any(c.heading_path == ["Installing", "Linux"] for c in chunks)
    assert_index_consistent(kb)


def test_processing_the_same_content_twice_changes_nothing(ingest, kb) -> None:
    document = ingest(GUIDE)
    before = list(Chunk.objects.filter(document=document).values_list("id", "text"))
    services.document_reprocess(actor=actor_for_account(document.account_id), document=document)
    assert services.document_process(document_id=document.pk) == "unchanged"
    assert list(Chunk.objects.filter(document=document).values_list("id", "text")) == before
    forced = services.document_reprocess(
        actor=actor_for_account(document.account_id), document=document, force=True
    )
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
            actor=actor_for_account(document.account_id),
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
    services.document_delete(actor=actor_for_account(gone.account_id), document=gone)
    assert not Chunk.objects.filter(document_id=gone.pk).exists()
    assert not KeywordPosting.objects.filter(document_id=gone.pk).exists()
    assert Chunk.objects.filter(document=keep).exists()
    assert_index_consistent(kb)


def test_a_document_deleted_meanwhile_is_not_found_not_an_error(ingest, kb) -> None:
    """Two requests racing (the document deleted twice, or with its knowledge base, between a
    request's read of it and its delete: the fuzzer found it as a 500): 404, nothing changed."""
    from core.errors import NotFound

    actor = actor_for_account(kb.account_id)
    keep = ingest("# Keep\n\nValkey keeps working memory.")
    twice = ingest(GUIDE)
    stale = Document.objects.get(pk=twice.pk)
    services.document_delete(actor=actor, document=twice)
    with pytest.raises(NotFound) as raised:
        services.document_delete(actor=actor, document=stale)
    assert raised.value.code == "document_not_found"
    assert Chunk.objects.filter(document=keep).exists()
    assert_index_consistent(kb)
    services.knowledge_base_delete(actor=actor, kb=kb)
    with pytest.raises(NotFound):
        services.document_delete(actor=actor, document=keep)


def test_failure_is_visible_and_retryable(ingest, kb, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise ValueError("chunker exploded")

    monkeypatch.setattr(pipeline, "chunk_document", broken)
    document = ingest(GUIDE)
    assert document.status == Document.Status.FAILED
    assert document.error == "chunker exploded"
    assert not Chunk.objects.filter(document=document).exists()
    monkeypatch.undo()
    services.document_reprocess(actor=actor_for_account(document.account_id), document=document)
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
    services.knowledge_base_transition(actor=actor_for_account(kb.account_id), kb=kb, to="paused")
    document = ingest(GUIDE)
    assert document.status == Document.Status.PENDING
    services.knowledge_base_transition(actor=actor_for_account(kb.account_id), kb=kb, to="active")
    assert services.document_process(document_id=document.pk) == "indexed"


def test_invalid_transitions_are_refused(kb) -> None:
    from core.errors import Conflict

    services.knowledge_base_transition(actor=actor_for_account(kb.account_id), kb=kb, to="archived")
    with pytest.raises(Conflict) as exc:
        services.knowledge_base_transition(
            actor=actor_for_account(kb.account_id), kb=kb, to="indexing"
        )
    assert exc.value.code == "invalid_transition"


def test_bm25_scores_match_a_reference_implementation(ingest, kb, actor) -> None:
    docs = [
        "# A\n\nThe cat sat on the mat with another cat.",
        "# B\n\nDogs chase cats in the garden.",
        "# C\n\nA garden of roses, tulips and more roses.",
    ]
    for text in docs:
        ingest(text)
    hits = keyword.keyword_search(
        space=CHUNKS, scope_ids=[kb.pk], query="cats garden roses", limit=10
    )
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
    assert {h.unit_id: round(h.score, 9) for h in hits} == {
        k: round(v, 9) for k, v in expected.items()
    }
    assert [h.unit_id for h in hits] == sorted(expected, key=lambda k: -expected[k])


def test_chunk_vector_query_uses_the_hnsw_index(ingest, kb) -> None:
    """The exact query vector_search runs, on enough rows that the planner has a real choice."""
    import numpy as np

    from rag.vector import vector_literal

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
    assert f"Index Scan using {current_index('rag_chunk')}" in plan, plan


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

    assert tasks.recover_documents.delay(dry_run=True).get() == {
        "found": 1,
        "queued": 1,
        "gave_up": 0,
        "dry_run": 1,
    }
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING  # a dry run queues nothing

    counts = {"found": 1, "queued": 1, "gave_up": 0}
    assert tasks.recover_documents.delay().get() == counts
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED
    assert JobRun.objects.filter(job="rag.recover_documents").values("counts")[0] == {
        "counts": counts
    }


def test_vector_search_ignores_chunks_of_another_embedding_model(ingest, kb) -> None:
    from rag.vector import vector_search

    document = ingest("# Backups\n\nBack up the database nightly.")
    query = get_embedding_provider().embed_query("database backups")
    assert vector_search(space=CHUNKS, scope_ids=[kb.pk], query_vector=query, limit=5)
    Chunk.objects.filter(document=document).update(embedding_model="openai:old-model")
    assert vector_search(space=CHUNKS, scope_ids=[kb.pk], query_vector=query, limit=5) == []
    assert keyword.keyword_search(
        space=CHUNKS, scope_ids=[kb.pk], query="database backups", limit=5
    )


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
        services.document_reprocess(actor=actor_for_account(document.account_id), document=document)
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


# --- every failure ends visibly, never in a loop ------------------------------------------------


@contextlib.contextmanager
def soft_time_limit_signal() -> Iterator[Callable[[], None]]:
    """What a prefork worker does when a task's soft time limit expires: the pool sends the
    child SIGUSR1 and billiard's handler raises SoftTimeLimitExceeded wherever the task is."""
    from billiard.pool import soft_timeout_sighandler

    previous = signal.signal(signal.SIGUSR1, soft_timeout_sighandler)
    try:
        yield lambda: os.kill(os.getpid(), signal.SIGUSR1)
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_soft_time_limit_mid_document_fails_it_with_the_error(ingest, kb, monkeypatch) -> None:
    from rag import tasks

    document = ingest(GUIDE)
    before = sorted(Chunk.objects.filter(document=document).values_list("text", flat=True))
    Document.objects.filter(pk=document.pk).update(
        original=(GUIDE + "\n\nMore text.").encode(), checksum="v2", status="pending"
    )
    provider = get_embedding_provider()
    real = provider.embed_documents
    calls = {"n": 0}
    with soft_time_limit_signal() as expire:

        def slow(texts):
            calls["n"] += 1
            if calls["n"] == 2:
                expire()  # the limit expires while the second batch of chunks is embedded
            return real(texts)

        monkeypatch.setattr(pipeline, "EMBED_BATCH", 1)
        monkeypatch.setattr(provider, "embed_documents", slow)
        assert tasks.process_document.apply(args=(document.pk,)).get() == "failed"
    document.refresh_from_db()
    assert calls["n"] == 2  # stopped at once, not after embedding the rest
    assert document.status == Document.Status.FAILED
    assert document.error == "Timed out: processing took longer than the 1680 s soft time limit."
    assert document.processing_task_id == ""
    # The previous chunks stay searchable; nothing partial was written.
    assert sorted(Chunk.objects.filter(document=document).values_list("text", flat=True)) == before
    assert_index_consistent(kb)


def test_a_soft_time_limit_inside_a_library_that_catches_everything_still_stops_the_batch(
    actor, kb, monkeypatch
) -> None:
    """PDF parsing turns any exception into invalid_pdf; the time limit must not become one
    document's "not a readable PDF" while the batch carries on towards the hard limit."""
    from rag import tasks
    from rag.extraction import _pdf_open
    from tests.rag.test_extraction import build_pdf

    documents = [
        services.document_create(
            actor=actor, kb=kb, data=f"Note {n}.".encode(), content_type="text/plain", enqueue=False
        )
        for n in range(3)
    ]
    real_extract = pipeline.extract_text
    with soft_time_limit_signal() as expire:

        def extract(*, data, filename, content_type):
            if data == b"Note 1.":

                def expire_inside(reader):
                    expire()

                _pdf_open(build_pdf(["A page."]), expire_inside)  # raises invalid_pdf from it
            return real_extract(data=data, filename=filename, content_type=content_type)

        monkeypatch.setattr(pipeline, "extract_text", extract)
        monkeypatch.setattr(pipeline, "CLAIM_DOCUMENTS", 1)
        result = tasks.process_documents.apply(args=([d.pk for d in documents],)).get()
    assert result == {"failed": 2}
    states = {}
    for document in documents:
        document.refresh_from_db()
        states[document.pk] = (document.status, document.error)
    timed_out = "Timed out: processing took longer than the 3480 s soft time limit."
    assert states == {
        documents[0].pk: ("failed", timed_out),  # claimed and embedded, not yet written
        documents[1].pk: ("failed", timed_out),
        documents[2].pk: ("pending", ""),  # never claimed: the recovery job queues it
    }


@pytest.mark.parametrize("stage", ["chunking", "embedding", "writing"])
def test_an_exception_in_one_document_of_a_batch_fails_only_that_one(
    actor, kb, monkeypatch, stage
) -> None:
    from rag import tasks

    texts = [f"# Note {n}\n\nValkey holds working memory number {n}." for n in range(5)]
    texts[2] = "# Poison\n\nThis document breaks the pipeline."
    documents = [
        services.document_create(
            actor=actor, kb=kb, data=text.encode(), content_type="text/markdown", enqueue=False
        )
        for text in texts
    ]

    def poisoned(text: str) -> bool:
        return "breaks the pipeline" in text

    if stage == "chunking":
        real_chunk = pipeline.chunk_document

        def chunk(text, **kwargs):
            if poisoned(text):
                raise KeyError("chunker bug")
            return real_chunk(text, **kwargs)

        monkeypatch.setattr(pipeline, "chunk_document", chunk)
    elif stage == "embedding":
        provider = get_embedding_provider()
        real_embed = provider.embed_documents

        def embed(batch):
            if any(poisoned(text) for text in batch):
                raise IndexError("tokenizer bug")
            return real_embed(batch)

        monkeypatch.setattr(provider, "embed_documents", embed)
    else:
        real_write = swap._swap_in_knowledge_base

        def write(kb, items, model_id):
            if any(poisoned(bytes(item.document.original).decode()) for item, _ in items):
                raise RuntimeError("constraint bug")
            return real_write(kb, items, model_id)

        monkeypatch.setattr(swap, "_swap_in_knowledge_base", write)
    # Two groups, so a failure in one cannot hide behind the other.
    monkeypatch.setattr(pipeline, "CLAIM_DOCUMENTS", 3)
    monkeypatch.setattr(pipeline, "GROUP_CHUNKS", 2)

    result = tasks.process_documents.apply(args=([d.pk for d in documents],)).get()

    assert result == {"indexed": 4, "failed": 1}
    for document in documents:
        document.refresh_from_db()
    bad = documents[2]
    error_type = {"chunking": "KeyError", "embedding": "IndexError", "writing": "RuntimeError"}
    assert bad.status == Document.Status.FAILED
    assert bad.error == (
        f"Unexpected error while processing ({error_type[stage]}); see the worker log."
    )
    assert not Chunk.objects.filter(document=bad).exists()
    for good in documents[:2] + documents[3:]:
        assert good.status == Document.Status.INDEXED, good.error
        assert Chunk.objects.filter(document=good).count() == good.chunks_total > 0
    assert_index_consistent(kb)


def _kill_mid_document(document_id: int, claim: str, monkeypatch) -> None:
    """Run the pipeline until the worker 'dies' while embedding (BaseException: nothing in the
    pipeline can catch it, exactly like SIGKILL)."""

    class WorkerLost(BaseException):
        pass

    def dies(texts):
        raise WorkerLost

    with monkeypatch.context() as patch:
        patch.setattr(get_embedding_provider(), "embed_documents", dies)
        with pytest.raises(WorkerLost):
            services.document_process(document_id=document_id, claim=claim)


def test_a_document_whose_claim_keeps_going_stale_is_given_up_not_requeued(
    ingest, kb, settings, monkeypatch
) -> None:
    from rag import tasks

    settings.RAG_MAX_PROCESSING_ATTEMPTS = 3
    document = ingest(GUIDE)
    Document.objects.filter(pk=document.pk).update(
        original=b"# Replaced\n\nA document that kills its worker.", checksum="v2", status="pending"
    )
    queued: list[int] = []
    monkeypatch.setattr(tasks.process_document, "delay", queued.append)
    for attempt in (1, 2, 3):
        # The worker dies; the claim ages past the window; the recovery job runs.
        _kill_mid_document(document.pk, f"task-{attempt}", monkeypatch)
        document.refresh_from_db()
        assert (document.status, document.attempts) == ("processing", attempt)
        Document.objects.filter(pk=document.pk).update(
            processing_started_at=timezone.now() - pipeline.PROCESSING_STALE_AFTER - timedelta(1)
        )
        counts = tasks.recover_documents.apply().get()
        if attempt < 3:
            assert counts == {"found": 1, "queued": 1, "gave_up": 0}
            assert queued.pop() == document.pk
    assert counts == {"found": 0, "queued": 0, "gave_up": 1}
    assert queued == []
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.error == "Gave up after 3 attempts: worker lost or timed out."
    assert document.processing_task_id == ""
    # The old chunks were never touched; the next recovery run leaves the document alone.
    assert_index_consistent(kb)
    assert tasks.recover_documents.apply().get() == {"found": 0, "queued": 0, "gave_up": 0}
    # A person asking again starts a new count.
    services.document_reprocess(actor=actor_for_account(document.account_id), document=document)
    assert services.document_process(document_id=document.pk) == "indexed"
    document.refresh_from_db()
    assert document.attempts == 1


def test_a_redelivered_task_that_keeps_killing_its_worker_is_given_up(
    ingest, settings, monkeypatch
) -> None:
    """acks_late + reject_on_worker_lost redeliver the same task (same claim) after a worker
    dies: that loop is bounded too."""
    settings.RAG_MAX_PROCESSING_ATTEMPTS = 2
    document = ingest(GUIDE)
    Document.objects.filter(pk=document.pk).update(checksum="v2", status="pending")
    _kill_mid_document(document.pk, "task-1", monkeypatch)
    _kill_mid_document(document.pk, "task-1", monkeypatch)  # the redelivery dies too
    calls: list[object] = []
    monkeypatch.setattr(get_embedding_provider(), "embed_documents", calls.append)
    assert services.document_process(document_id=document.pk, claim="task-1") == "failed"
    assert calls == []  # not processed a third time
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.error == "Gave up after 2 attempts: worker lost or timed out."


def test_a_provider_retry_is_not_counted_as_a_lost_attempt(ingest, settings, monkeypatch) -> None:
    """A retried task gives its documents back (pending, with the reason) before it waits: the
    attempt ended cleanly, so retries never exhaust RAG_MAX_PROCESSING_ATTEMPTS."""
    from core.embeddings.base import EmbeddingError
    from rag import tasks

    settings.RAG_MAX_PROCESSING_ATTEMPTS = 1
    document = ingest(GUIDE)
    Document.objects.filter(pk=document.pk).update(checksum="v2", status="pending")
    provider = get_embedding_provider()
    real = provider.embed_documents
    seen: list[tuple[str, str]] = []

    def down_once(texts):
        if not seen:
            row = Document.objects.values_list("status", "error").get(pk=document.pk)
            seen.append(row)
            raise EmbeddingError("endpoint unreachable")
        seen.append(Document.objects.values_list("status", "error").get(pk=document.pk))
        return real(texts)

    monkeypatch.setattr(provider, "embed_documents", down_once)
    released: list[tuple[str, str, str]] = []
    real_release = services.documents_release

    def release(**kwargs):
        count = real_release(**kwargs)
        released.append(
            Document.objects.values_list("status", "processing_task_id", "error").get(
                pk=document.pk
            )
        )
        return count

    monkeypatch.setattr(services, "documents_release", release)
    # Eager apply() runs the retry inline once the first run returns Retry instead of raising it.
    assert tasks.process_document.apply(args=(document.pk,), throw=False).get() == "indexed"
    assert seen == [("processing", ""), ("processing", "")]
    assert released == [("pending", "", "Embedding failed, will retry: endpoint unreachable")]
    document.refresh_from_db()
    assert (document.status, document.attempts) == ("indexed", 1)


def test_a_live_claim_of_a_long_batch_is_never_taken_over_or_embedded_twice(
    ingest, monkeypatch
) -> None:
    """The stale-claim window derives from the tasks' own limits: the longest of them, so the
    claims of a batch task running past the single-document task's limit stay live."""
    from django.conf import settings as django_settings

    from rag import tasks

    limits = {}
    for task in (tasks.process_document, tasks.process_documents):
        soft, hard = task.soft_time_limit, task.time_limit
        assert soft is not None and hard is not None and soft < hard
        limits[task.name] = hard
    assert pipeline.PROCESSING_STALE_AFTER.total_seconds() > max(limits.values())
    # The broker must not redeliver a running task's message to a second worker either.
    visibility = django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert visibility > max(limits.values())

    document = ingest(GUIDE)
    # A batch task claimed the document just under its own hard limit ago: longer than any
    # single-document task may live, but the batch's worker is still alive.
    age = timedelta(seconds=limits[tasks.process_documents.name] - 30)
    assert age.total_seconds() > limits[tasks.process_document.name]
    Document.objects.filter(pk=document.pk).update(
        status="processing",
        checksum="v2",
        processing_task_id="batch-task",
        processing_started_at=timezone.now() - age,
    )
    embedded: list[object] = []
    monkeypatch.setattr(get_embedding_provider(), "embed_documents", embedded.append)
    assert tasks.recover_documents.apply().get() == {"found": 0, "queued": 0, "gave_up": 0}
    assert services.document_process(document_id=document.pk, claim="another-task") == "skipped"
    with pytest.raises(Conflict):
        services.document_reprocess(actor=actor_for_account(document.account_id), document=document)
    assert embedded == []
    document.refresh_from_db()
    assert (document.status, document.processing_task_id) == ("processing", "batch-task")


# --- size limits ------------------------------------------------------------------------------


def test_the_worker_fails_a_document_with_too_many_chunks(ingest, settings) -> None:
    settings.RAG_MAX_CHUNKS_PER_DOCUMENT = 2
    document = ingest(GUIDE)
    assert document.status == Document.Status.FAILED
    assert document.error.startswith("The document makes ")
    assert document.error.endswith("; the limit is 2 (RAG_MAX_CHUNKS_PER_DOCUMENT).")
    assert not Chunk.objects.filter(document=document).exists()


def test_the_worker_fails_a_pdf_whose_text_is_too_long(actor, kb, settings) -> None:
    """A PDF's text is only known once the worker extracts it."""
    from tests.rag.test_extraction import build_pdf

    settings.RAG_MAX_EXTRACTED_CHARS = 1000
    pdf = build_pdf(["A line of text that repeats. " * 20] * 3)
    document = services.document_create(
        actor=actor, kb=kb, data=pdf, filename="long.pdf", enqueue=False
    )
    assert services.document_process(document_id=document.pk) == "failed"
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.error.startswith("The document's text has ")
    assert document.error.endswith("; the limit is 1,000 (RAG_MAX_EXTRACTED_CHARS).")


def test_headings_longer_than_the_column_are_indexed_as_stored(ingest, kb) -> None:
    """The database cuts a heading to its column's length (bulk inserts cast to varchar(300));
    the keyword index must be computed from the same cut heading."""
    heading = "Very long heading " * 30
    document = ingest(f"# {heading}\n\nBody text under a heading far too long to store.")
    assert document.status == Document.Status.INDEXED, document.error
    paths = list(Chunk.objects.filter(document=document).values_list("heading_path", flat=True))
    assert paths and all(len(part) == 300 for path in paths for part in path)
    assert_index_consistent(kb)


# --- a superseded run never writes over what superseded it ------------------------------------


NEWEST = b"# Newest\n\nThe newest version: only tomatoes."


def test_new_content_is_not_marked_failed_by_the_run_it_superseded(
    ingest, kb, actor, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    document = ingest(GUIDE)
    Document.objects.filter(pk=document.pk).update(
        original=b"# Second\n\nA second version.", checksum="v2", status="pending"
    )
    queued: list[Callable[[], object]] = []

    def new_version_arrives_then_the_old_run_breaks(texts):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            services.document_replace_content(
                actor=actor, document=document, data=NEWEST, content_type="text/markdown"
            )
        queued.extend(callbacks)
        raise ValueError("the model refused the old text")

    with monkeypatch.context() as patch:
        patch.setattr(
            get_embedding_provider(), "embed_documents", new_version_arrives_then_the_old_run_breaks
        )
        assert services.document_process(document_id=document.pk, claim="old-run") == "skipped"
    document.refresh_from_db()
    assert (document.status, document.error) == ("pending", "")
    for send in queued:  # the new version's task
        send()
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.error
    assert "Newest" in " ".join(
        Chunk.objects.filter(document=document).values_list("text", flat=True)
    )
    assert_index_consistent(kb)


def test_new_content_is_not_marked_indexed_by_a_run_that_found_the_old_one_unchanged(
    ingest, kb, actor, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """The old run saw indexed content ("unchanged"); new content arrived before it said so.
    Were the old run to mark the document indexed, the new version's task would find nothing to
    claim and the new content would never be indexed."""
    document = ingest(GUIDE)
    services.document_reprocess(actor=actor, document=document)  # pending, content unchanged
    queued: list[Callable[[], object]] = []
    real_finish = pipeline._finish

    def new_version_arrives_first(document_ids, claim, *, status, error=""):
        if status == Document.Status.INDEXED and document_ids and not queued:
            with django_capture_on_commit_callbacks(execute=False) as callbacks:
                services.document_replace_content(
                    actor=actor, document=document, data=NEWEST, content_type="text/markdown"
                )
            queued.extend(callbacks)
        return real_finish(document_ids, claim, status=status, error=error)

    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "_finish", new_version_arrives_first)
        assert services.document_process(document_id=document.pk, claim="old-run") == "skipped"
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING
    for send in queued:
        send()
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.error
    assert document.indexed_checksum == document.checksum
    assert "Newest" in " ".join(
        Chunk.objects.filter(document=document).values_list("text", flat=True)
    )
    assert_index_consistent(kb)


def test_a_new_title_reaches_the_index(
    ingest, kb, actor, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """Every chunk is indexed behind its document's title: a retitled document whose chunks
    kept the old title would disagree with a rebuild, and a run still using the old title must
    not write it over the new one."""
    document = ingest(GUIDE, title="Guide")
    Document.objects.filter(pk=document.pk).update(checksum="v2", status="pending")
    queued: list[Callable[[], object]] = []
    provider = get_embedding_provider()
    real = provider.embed_documents

    def retitled_meanwhile(texts):
        if not queued:
            with django_capture_on_commit_callbacks(execute=False) as callbacks:
                services.document_update(actor=actor, document=document, title="Zeppelin manual")
            queued.extend(callbacks)
        return real(texts)

    with monkeypatch.context() as patch:
        patch.setattr(provider, "embed_documents", retitled_meanwhile)
        assert services.document_process(document_id=document.pk, claim="old-run") == "skipped"
    document.refresh_from_db()
    assert (document.title, document.status) == ("Zeppelin manual", "pending")
    for send in queued:
        send()
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.error
    assert_index_consistent(kb)
    hits = keyword.keyword_search(space=CHUNKS, scope_ids=[kb.pk], query="zeppelin", limit=10)
    assert len(hits) == Chunk.objects.filter(document=document).count() > 0

    # Other metadata is not indexed text: editing it re-indexes nothing.
    services.document_update(actor=actor, document=document, doc_type="manual", tags=["ops"])
    document.refresh_from_db()
    assert (document.status, document.doc_type) == ("indexed", "manual")


def test_exact_scans_are_for_small_scopes_and_small_shares_of_the_space() -> None:
    """Up to exact_scan_always units: always exact. Up to exact_scan_units: exact only while the
    scopes are at most exact_scan_share of the space (else the index's walk mostly meets them).
    A table never analysed (estimate -1) counts as the scopes' own: through the index."""
    from rag.tuning import TUNING
    from rag.vector import exact_scan_wanted

    limits = TUNING.vector
    assert exact_scan_wanted(limits.exact_scan_always, limits.exact_scan_always)
    assert exact_scan_wanted(1_000, 100_000)
    units = limits.exact_scan_units
    assert exact_scan_wanted(units, units / limits.exact_scan_share)
    assert not exact_scan_wanted(units, units)  # one context alone in the table: the index
    assert not exact_scan_wanted(units, -1)
    assert not exact_scan_wanted(units + 1, 10_000_000)


def test_vector_search_of_a_small_scope_is_exact_and_agrees_with_the_index(
    ingest, kb, tune
) -> None:
    """Small scopes compare every unit; larger ones go through the HNSW index. On a small base
    both find the same nearest chunks, in the same order, and the exact path reads no index of
    vectors."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from rag import vector

    for topic in ("database backups", "network routing", "garden soil", "tax returns"):
        ingest(f"# {topic.title()}\n\nNotes on {topic}, written down for later.")
    query = get_embedding_provider().embed_query("restoring a database from backups")
    with CaptureQueriesContext(connection) as exact_queries:
        exact = vector.vector_search(space=CHUNKS, scope_ids=[kb.pk], query_vector=query, limit=3)
    assert any("OFFSET 0" in q["sql"] for q in exact_queries.captured_queries)
    everything = sorted(
        (1 - float(np.dot(query, np.asarray(c.embedding))), c.pk)
        for c in Chunk.objects.filter(knowledge_base=kb)
    )
    assert [unit for unit, _ in exact] == [pk for _, pk in everything[:3]]

    tune("rag.vector.exact_scan_always", 0)
    tune("rag.vector.exact_scan_units", 0)
    with CaptureQueriesContext(connection) as index_queries:
        indexed = vector.vector_search(space=CHUNKS, scope_ids=[kb.pk], query_vector=query, limit=3)
    assert not any("OFFSET 0" in q["sql"] for q in index_queries.captured_queries)
    assert [unit for unit, _ in indexed] == [unit for unit, _ in exact]
