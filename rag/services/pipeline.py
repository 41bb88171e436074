"""The ingestion pipeline: claim, extract, chunk and embed outside any transaction, then swap
a document's chunks, postings and statistics in one."""

from __future__ import annotations

import uuid
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from rag import keyword
from rag.chunking import chunk_document
from rag.extraction import extract_text
from rag.indexing import indexed_text
from rag.models import Chunk, Document, KnowledgeBase

EMBED_BATCH = 64
# A claim older than the task's hard time limit belongs to a worker that died.
PROCESSING_STALE_AFTER = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)


class ProcessingAborted(Exception):
    """Another run took the document over, or it was deleted: stop without writing."""


def _claim(document_id: int, claim: str) -> bool:
    now = timezone.now()
    claimable = (
        Q(status__in=[Document.Status.PENDING, Document.Status.FAILED])
        | Q(status=Document.Status.PROCESSING, processing_task_id=claim)
        | Q(
            status=Document.Status.PROCESSING,
            processing_started_at__lt=now - PROCESSING_STALE_AFTER,
        )
    )
    return bool(
        Document.objects.filter(pk=document_id)
        .filter(claimable)
        .exclude(knowledge_base__status__in=["paused", "archived"])
        .update(
            status=Document.Status.PROCESSING,
            processing_task_id=claim,
            processing_started_at=now,
            chunks_embedded=0,
            error="",
        )
    )


@dataclass
class _Prepared:
    document: Document
    pieces: list[Any]
    texts: list[str]  # what each piece is embedded and keyword-indexed as
    terms: list[keyword.ChunkTerms]


def _prepare(document: Document, claim: str, embed: Any) -> _Prepared:
    kb = document.knowledge_base
    extracted = extract_text(
        data=bytes(document.original), filename=document.source, content_type=document.content_type
    )
    pieces = chunk_document(
        extracted.text,
        strategy=kb.chunking_strategy,
        chunk_size=kb.chunk_size,
        chunk_overlap=kb.chunk_overlap,
        content_type=extracted.content_type,
        embed=embed,
    )
    _progress(document.pk, claim, chunks_total=len(pieces))
    texts = [
        indexed_text(title=document.title, heading_path=piece.heading_path, text=piece.text)
        for piece in pieces
    ]
    return _Prepared(document, pieces, texts, [keyword.chunk_terms(text) for text in texts])


def document_process(*, document_id: int, claim: str | None = None) -> str:
    """Extract, chunk and embed outside any transaction, then swap the chunks in one.

    Idempotent: a document whose content and embedding model match what is indexed is left as
    it is; a run whose claim was taken over (or whose document changed or vanished) writes
    nothing. Returns "indexed", "unchanged", "skipped" or "failed".
    """
    claim = claim or uuid.uuid4().hex
    if not _claim(document_id, claim):
        return "skipped"
    document = Document.objects.select_related("knowledge_base").get(pk=document_id)
    provider = get_embedding_provider()
    if (
        document.indexed_checksum == document.checksum
        and document.indexed_model == provider.model_id
    ):
        _finish(document_id, claim, status=Document.Status.INDEXED)
        return "unchanged"
    try:
        prepared = _prepare(document, claim, provider.embed_documents)
        vectors: list[Any] = []
        pieces = prepared.pieces
        for start in range(0, len(pieces), EMBED_BATCH):
            batch = prepared.texts[start : start + EMBED_BATCH]
            vectors.extend(provider.embed_documents(batch))
            _progress(document_id, claim, chunks_embedded=min(start + EMBED_BATCH, len(pieces)))
        _swap_chunks(document, claim, pieces, vectors, prepared.terms, provider.model_id)
    except ProcessingAborted:
        return "skipped"
    except (ValidationFailed, ValueError) as exc:
        _finish(document_id, claim, status=Document.Status.FAILED, error=str(exc))
        return "failed"
    return "indexed"


# Documents per group in batch processing: the model embeds one group while the previous one is
# written, so a group should take the model a while but keep memory small.
GROUP_DOCUMENTS = 16


def documents_process_batch(*, document_ids: list[int], claim: str | None = None) -> Counter[str]:
    """Process many documents, embedding one group while the database writes the previous one.

    Same guarantees as ``document_process`` per document. Bulk loads and re-indexing use it: one
    embedding call per small document wastes the model's batch capacity, and a strict
    embed-then-write sequence leaves the model idle during writes. Only the embedding runs on the
    helper thread (the model releases the GIL); every database call stays on the caller's thread
    and connection. Returns a count of outcomes.
    """
    claim = claim or uuid.uuid4().hex
    outcomes: Counter[str] = Counter()
    provider = get_embedding_provider()
    previous: tuple[list[_Prepared], Future[Any]] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as embedder:
        for start in range(0, len(document_ids), GROUP_DOCUMENTS):
            group = _prepare_group(
                document_ids[start : start + GROUP_DOCUMENTS], claim, provider, outcomes
            )
            texts = [text for item in group for text in item.texts]
            current = (group, embedder.submit(provider.embed_documents, texts))
            if previous is not None:
                _swap_group(*previous, claim, provider.model_id, outcomes)
            previous = current
        if previous is not None:
            _swap_group(*previous, claim, provider.model_id, outcomes)
    return outcomes


def _prepare_group(
    document_ids: list[int], claim: str, provider: Any, outcomes: Counter[str]
) -> list[_Prepared]:
    prepared: list[_Prepared] = []
    for document_id in document_ids:
        if not _claim(document_id, claim):
            outcomes["skipped"] += 1
            continue
        document = Document.objects.select_related("knowledge_base").get(pk=document_id)
        if (
            document.indexed_checksum == document.checksum
            and document.indexed_model == provider.model_id
        ):
            _finish(document_id, claim, status=Document.Status.INDEXED)
            outcomes["unchanged"] += 1
            continue
        try:
            prepared.append(_prepare(document, claim, provider.embed_documents))
        except (ValidationFailed, ValueError) as exc:
            _finish(document_id, claim, status=Document.Status.FAILED, error=str(exc))
            outcomes["failed"] += 1
    return prepared


def _swap_group(
    group: list[_Prepared],
    embedded: Future[Any],
    claim: str,
    model_id: str,
    outcomes: Counter[str],
) -> None:
    vectors = list(embedded.result()) if group else []
    offset = 0
    # One commit for the group; each document still swaps all-or-nothing (a savepoint), and a
    # document whose claim was taken over is skipped without writing.
    with transaction.atomic():
        for item in group:
            count = len(item.pieces)
            try:
                _swap_chunks(
                    item.document,
                    claim,
                    item.pieces,
                    vectors[offset : offset + count],
                    item.terms,
                    model_id,
                )
                outcomes["indexed"] += 1
            except ProcessingAborted:
                outcomes["skipped"] += 1
            offset += count


def _progress(document_id: int, claim: str, **fields: int) -> None:
    if not Document.objects.filter(pk=document_id, processing_task_id=claim).update(**fields):
        raise ProcessingAborted


def _finish(document_id: int, claim: str, *, status: str, error: str = "") -> None:
    Document.objects.filter(pk=document_id, processing_task_id=claim).update(
        status=status, error=error[:5000], processing_task_id="", updated_at=timezone.now()
    )


def document_mark_failed(*, document_id: int, claim: str, error: str) -> None:
    _finish(document_id, claim, status=Document.Status.FAILED, error=error)


def documents_mark_failed(*, claim: str, error: str) -> int:
    """Fail every document a batch run still holds (its claim); returns how many."""
    return Document.objects.filter(
        processing_task_id=claim, status=Document.Status.PROCESSING
    ).update(status=Document.Status.FAILED, error=error[:5000], processing_task_id="")


def _swap_chunks(
    document: Document,
    claim: str,
    pieces: list[Any],
    vectors: list[Any],
    terms: list[keyword.ChunkTerms],
    model_id: str,
) -> None:
    with transaction.atomic():
        locked = (
            Document.objects.select_for_update()
            .filter(pk=document.pk, processing_task_id=claim, checksum=document.checksum)
            .only("pk")
            .first()
        )
        if locked is None:
            raise ProcessingAborted
        kb = KnowledgeBase.objects.select_for_update().get(pk=document.knowledge_base_id)
        old_chunks, old_terms = 0, 0
        if document.indexed_at is not None:  # a document never indexed has nothing to replace
            old_chunks, old_terms = keyword.postings_remove_document(
                knowledge_base_id=kb.pk, document_id=document.pk
            )
            Chunk.objects.filter(document_id=document.pk).delete()
        new_chunks = Chunk.objects.bulk_create(
            [
                Chunk(
                    account_id=document.account_id,
                    knowledge_base_id=kb.pk,
                    document_id=document.pk,
                    position=piece.position,
                    text=piece.text,
                    heading_path=list(piece.heading_path),
                    token_count=piece.token_count,
                    start_char=piece.start_char,
                    end_char=piece.end_char,
                    embedding=vector,
                    embedding_model=model_id,
                    keyword_length=chunk_terms.length,
                )
                for piece, vector, chunk_terms in zip(pieces, vectors, terms, strict=True)
            ]
        )
        new_terms = sum(t.length for t in terms)
        chunk_count = kb.chunk_count - old_chunks + len(new_chunks)
        total_terms = kb.total_terms - old_terms + new_terms
        keyword.postings_add(
            knowledge_base_id=kb.pk,
            document_id=document.pk,
            chunks=[(chunk.pk, t) for chunk, t in zip(new_chunks, terms, strict=True)],
            avg_length=total_terms / chunk_count if chunk_count else 0.0,
        )
        KnowledgeBase.objects.filter(pk=kb.pk).update(
            chunk_count=chunk_count, total_terms=total_terms
        )
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.INDEXED,
            error="",
            processing_task_id="",
            chunks_total=len(new_chunks),
            chunks_embedded=len(new_chunks),
            indexed_checksum=document.checksum,
            indexed_model=model_id,
            indexed_at=timezone.now(),
            token_count=sum(piece.token_count for piece in pieces),
            updated_at=timezone.now(),
        )
