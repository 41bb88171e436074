"""Every write to knowledge bases and documents, including the ingestion pipeline."""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import Conflict, PayloadTooLarge, ValidationFailed
from rag import keyword
from rag.chunking import chunk_document
from rag.extraction import extract_text
from rag.indexing import indexed_text
from rag.models import Chunk, Document, KnowledgeBase, SearchQuery, SearchResult
from rag.search import DEFAULT_FUSION, SearchFilters, chunk_search

logger = logging.getLogger("engram.rag")

EMBED_BATCH = 64
# A claim older than the task's hard time limit belongs to a worker that died.
PROCESSING_STALE_AFTER = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)

_TRANSITIONS: dict[str, set[str]] = {
    KnowledgeBase.Status.ACTIVE: {"indexing", "paused", "error", "archived"},
    KnowledgeBase.Status.INDEXING: {"active", "paused", "error"},
    KnowledgeBase.Status.PAUSED: {"active", "archived"},
    KnowledgeBase.Status.ERROR: {"active", "indexing", "archived"},
    KnowledgeBase.Status.ARCHIVED: {"active"},
}


# --- knowledge bases -----------------------------------------------------------------------------


def knowledge_base_create(
    *,
    actor: Actor,
    name: str,
    description: str = "",
    chunking_strategy: str = KnowledgeBase.Chunking.MARKDOWN,
    chunk_size: int = 256,
    chunk_overlap: int = 32,
) -> KnowledgeBase:
    provider = get_embedding_provider()
    kb = KnowledgeBase(
        account_id=actor.account_id,
        name=name,
        description=description,
        embedding_provider=settings.EMBEDDING_PROVIDER,
        embedding_model=provider.model_id,
        chunking_strategy=chunking_strategy,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    _validate_chunking(chunk_size, chunk_overlap)
    if KnowledgeBase.objects.filter(account_id=actor.account_id, name=name).exists():
        raise Conflict("A knowledge base with this name exists.", code="knowledge_base_exists")
    kb.full_clean()
    kb.save()
    return kb


def _validate_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if not 32 <= chunk_size <= 8192:
        raise ValidationFailed("chunk_size must be 32-8192 tokens.", code="invalid_chunking")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValidationFailed(
            "chunk_overlap must be at least 0 and below chunk_size.", code="invalid_chunking"
        )


def knowledge_base_update(*, kb: KnowledgeBase, **fields: Any) -> KnowledgeBase:
    """Change name, description or chunking settings (new settings apply on reprocessing)."""
    allowed = {"name", "description", "chunking_strategy", "chunk_size", "chunk_overlap"}
    unknown = set(fields) - allowed
    if unknown:
        raise ValidationFailed(
            "Unknown fields.", code="unknown_fields", details={"fields": sorted(unknown)}
        )
    for name, value in fields.items():
        setattr(kb, name, value)
    _validate_chunking(kb.chunk_size, kb.chunk_overlap)
    if (
        "name" in fields
        and KnowledgeBase.objects.filter(account_id=kb.account_id, name=kb.name)
        .exclude(pk=kb.pk)
        .exists()
    ):
        raise Conflict("A knowledge base with this name exists.", code="knowledge_base_exists")
    kb.full_clean()
    kb.save()
    return kb


def knowledge_base_transition(*, kb: KnowledgeBase, to: str, message: str = "") -> KnowledgeBase:
    """Move a knowledge base along its lifecycle; refuses transitions that make no sense."""
    if to not in KnowledgeBase.Status.values:
        raise ValidationFailed("Unknown status.", code="invalid_status")
    if to not in _TRANSITIONS[kb.status]:
        raise Conflict(
            f"A knowledge base cannot go from {kb.status} to {to}.",
            code="invalid_transition",
            details={"from": kb.status, "to": to},
        )
    updated = KnowledgeBase.objects.filter(pk=kb.pk, status=kb.status).update(
        status=to, status_message=message, updated_at=timezone.now()
    )
    if not updated:
        raise Conflict("The knowledge base changed meanwhile; retry.", code="concurrent_update")
    kb.refresh_from_db()
    return kb


def knowledge_base_delete(*, kb: KnowledgeBase) -> None:
    """Delete a knowledge base with its documents; chunks and postings cascade in the database."""
    kb.delete()


# --- documents -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentMetadata:
    doc_type: str = ""
    tags: tuple[str, ...] = ()
    lifecycle_state: str = ""
    source_path: str = ""
    document_date: date | None = None
    extra: dict[str, Any] | None = None


def document_create(
    *,
    actor: Actor,
    kb: KnowledgeBase,
    data: bytes,
    filename: str | None = None,
    content_type: str | None = None,
    title: str = "",
    source: str = "",
    metadata: DocumentMetadata | None = None,
    enqueue: bool = True,
) -> Document:
    """Validate and store an upload (pending); processing starts once the transaction commits.

    ``enqueue=False`` leaves processing to the caller (bulk loads process in-process in batches).
    """
    if kb.status == KnowledgeBase.Status.ARCHIVED:
        raise Conflict("The knowledge base is archived.", code="knowledge_base_archived")
    if len(data) > settings.RAG_MAX_UPLOAD_BYTES:
        raise PayloadTooLarge(
            f"Uploads are limited to {settings.RAG_MAX_UPLOAD_BYTES} bytes.",
            code="upload_too_large",
            details={"limit": settings.RAG_MAX_UPLOAD_BYTES, "size": len(data)},
        )
    extracted = extract_text(data=data, filename=filename, content_type=content_type)
    meta = metadata or DocumentMetadata()
    document = Document(
        account_id=kb.account_id,
        knowledge_base=kb,
        title=(title or extracted.title or filename or "")[:500],
        source=(source or filename or "")[:1000],
        content_type=extracted.content_type,
        original=data,
        checksum=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        doc_type=meta.doc_type,
        tags=list(meta.tags),
        lifecycle_state=meta.lifecycle_state,
        source_path=meta.source_path,
        document_date=meta.document_date,
        metadata=meta.extra or {},
    )
    document.full_clean(exclude=["original"])
    with transaction.atomic():
        document.save()
        if enqueue:
            _enqueue_processing(document.pk)
    return document


def document_replace_content(
    *, document: Document, data: bytes, filename: str | None = None, content_type: str | None = None
) -> Document:
    """New content for a document: its chunks are replaced atomically once processed."""
    if len(data) > settings.RAG_MAX_UPLOAD_BYTES:
        raise PayloadTooLarge("Upload too large.", code="upload_too_large")
    extracted = extract_text(data=data, filename=filename, content_type=content_type)
    with transaction.atomic():
        Document.objects.filter(pk=document.pk).update(
            original=data,
            checksum=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
            content_type=extracted.content_type,
            status=Document.Status.PENDING,
            error="",
            updated_at=timezone.now(),
        )
        _enqueue_processing(document.pk)
    document.refresh_from_db()
    return document


def document_reprocess(*, document: Document, force: bool = False) -> Document:
    """Queue a document again (after a failure, a settings change, or a lost worker)."""
    if document.status == Document.Status.PROCESSING and not _claim_is_stale(document):
        raise Conflict("The document is being processed.", code="document_processing")
    with transaction.atomic():
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.PENDING,
            error="",
            indexed_checksum="" if force else F("indexed_checksum"),
            updated_at=timezone.now(),
        )
        _enqueue_processing(document.pk)
    document.refresh_from_db()
    return document


def document_delete(*, document: Document) -> None:
    """Delete a document, its chunks and its index data, keeping corpus statistics exact."""
    with transaction.atomic():
        kb = KnowledgeBase.objects.select_for_update().get(pk=document.knowledge_base_id)
        chunks, terms = keyword.postings_remove_document(
            knowledge_base_id=kb.pk, document_id=document.pk
        )
        KnowledgeBase.objects.filter(pk=kb.pk).update(
            chunk_count=F("chunk_count") - chunks, total_terms=F("total_terms") - terms
        )
        document.delete()


def _claim_is_stale(document: Document) -> bool:
    started = document.processing_started_at
    return started is None or started < timezone.now() - PROCESSING_STALE_AFTER


def _enqueue_processing(document_id: int) -> None:
    transaction.on_commit(lambda: _send_processing(document_id))


def _send_processing(document_id: int) -> bool:
    """Queue processing; if the broker is down the document stays pending for the recovery job
    (``rag.recover_documents``) instead of failing a request whose data is already committed."""
    from kombu.exceptions import OperationalError

    from rag.tasks import process_document

    try:
        process_document.delay(document_id)
    except OperationalError:
        logger.warning("broker unavailable; document %s stays pending", document_id)
        return False
    return True


def documents_recover(*, pending_after: timedelta = timedelta(minutes=10)) -> dict[str, int]:
    """Re-queue documents nobody is processing: pending for a while, or claimed by a dead worker."""
    now = timezone.now()
    stuck = Document.objects.filter(
        Q(status=Document.Status.PENDING, updated_at__lt=now - pending_after)
        | Q(
            status=Document.Status.PROCESSING,
            processing_started_at__lt=now - PROCESSING_STALE_AFTER,
        )
    ).exclude(knowledge_base__status__in=["paused", "archived"])
    ids = list(stuck.values_list("id", flat=True)[:1000])
    queued = sum(_send_processing(document_id) for document_id in ids)
    return {"found": len(ids), "queued": queued}


# --- the pipeline --------------------------------------------------------------------------------


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


def documents_process_batch(*, document_ids: list[int], claim: str | None = None) -> Counter[str]:
    """Process many documents with their chunks embedded together, in full batches.

    Same guarantees as ``document_process`` per document (each swaps in its own transaction);
    bulk loads and re-indexing use it because one embedding call per small document wastes most
    of the model's batch capacity. Returns a count of outcomes.
    """
    claim = claim or uuid.uuid4().hex
    outcomes: Counter[str] = Counter()
    provider = get_embedding_provider()
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
    texts = [text for item in prepared for text in item.texts]
    vectors = list(provider.embed_documents(texts)) if texts else []
    offset = 0
    for item in prepared:
        count = len(item.pieces)
        try:
            _swap_chunks(
                item.document,
                claim,
                item.pieces,
                vectors[offset : offset + count],
                item.terms,
                provider.model_id,
            )
            outcomes["indexed"] += 1
        except ProcessingAborted:
            outcomes["skipped"] += 1
        offset += count
    return outcomes


def _progress(document_id: int, claim: str, **fields: int) -> None:
    if not Document.objects.filter(pk=document_id, processing_task_id=claim).update(**fields):
        raise ProcessingAborted


def _finish(document_id: int, claim: str, *, status: str, error: str = "") -> None:
    Document.objects.filter(pk=document_id, processing_task_id=claim).update(
        status=status, error=error[:5000], processing_task_id="", updated_at=timezone.now()
    )


def document_mark_failed(*, document_id: int, claim: str, error: str) -> None:
    _finish(document_id, claim, status=Document.Status.FAILED, error=error)


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


# --- analytics ------------------------------------------------------------------------------------


def search_query_record(
    *,
    actor: Actor,
    query: str,
    mode: str,
    top_k: int,
    threshold: float | None,
    filters: dict[str, Any],
    outcome: Any | None,
    latency_ms: float,
    error: str = "",
) -> SearchQuery:
    """Record one search with its results (two INSERTs)."""
    hits = outcome.hits if outcome is not None else []
    similarities = [h.vector_score for h in hits if h.vector_score is not None]
    status = (
        SearchQuery.Status.ERROR
        if error
        else (SearchQuery.Status.OK if hits else SearchQuery.Status.EMPTY)
    )
    record = SearchQuery.objects.create(
        account_id=actor.account_id,
        agent=actor.agent,
        query_text=query[:10000],
        mode=mode,
        fusion=outcome.fusion if outcome is not None else "",
        top_k=top_k,
        threshold=threshold,
        knowledge_base_ids=outcome.knowledge_base_ids if outcome is not None else [],
        filters=filters,
        result_count=len(hits),
        avg_score=sum(h.score for h in hits) / len(hits) if hits else None,
        # Quality: how close, semantically, the returned passages are to the query (mean cosine
        # similarity), discounted when fewer results came back than were asked for.
        quality_score=(
            (sum(similarities) / len(similarities)) * min(1.0, len(hits) / top_k)
            if similarities
            else None
        ),
        latency_ms=round(latency_ms, 3),
        stage_ms=outcome.stage_ms if outcome is not None else {},
        status=status,
        error=error[:5000],
    )
    SearchResult.objects.bulk_create(
        SearchResult(
            query=record,
            chunk_id=hit.chunk_id,
            document_id=hit.document_id or None,
            rank=rank,
            mode=mode,
            fusion=record.fusion,
            score=hit.score,
            vector_rank=hit.vector_rank,
            vector_score=hit.vector_score,
            keyword_rank=hit.keyword_rank,
            keyword_score=hit.keyword_score,
        )
        for rank, hit in enumerate(hits, start=1)
    )
    return record


def search_run(
    *,
    actor: Actor,
    query: str,
    mode: str = "hybrid",
    top_k: int = 10,
    filters: Any = None,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    threshold: float | None = None,
    rerank: bool = False,
) -> Any:
    """Search and record the query for analytics (an invalid request is not recorded)."""
    filters = filters or SearchFilters()
    started = time.perf_counter()
    outcome = chunk_search(
        actor=actor,
        query=query,
        mode=mode,
        top_k=top_k,
        filters=filters,
        fusion=fusion,
        weights=weights,
        threshold=threshold,
        rerank=rerank,
    )
    search_query_record(
        actor=actor,
        query=query,
        mode=mode,
        top_k=top_k,
        threshold=threshold,
        filters=filters.as_json(),
        outcome=outcome,
        latency_ms=(time.perf_counter() - started) * 1000,
    )
    return outcome
