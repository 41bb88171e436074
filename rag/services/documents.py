"""Documents: validated uploads, content changes, reprocessing, deletion and recovery."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.actors import Actor
from core.errors import Conflict, PayloadTooLarge
from rag import keyword
from rag.extraction import extract_text
from rag.models import Document, KnowledgeBase
from rag.services.pipeline import PROCESSING_STALE_AFTER

logger = logging.getLogger("engram.rag")


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
    document = _document_build(
        kb=kb,
        data=data,
        filename=filename,
        content_type=content_type,
        title=title,
        source=source,
        metadata=metadata,
    )
    with transaction.atomic():
        document.save()
        if enqueue:
            _enqueue_processing(document.pk)
    return document


def _document_build(
    *,
    kb: KnowledgeBase,
    data: bytes,
    filename: str | None = None,
    content_type: str | None = None,
    title: str = "",
    source: str = "",
    metadata: DocumentMetadata | None = None,
) -> Document:
    """A validated, unsaved document for an upload: anything wrong raises before a write."""
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
    # The relations come from the loaded knowledge base: validating them would query each one.
    document.full_clean(exclude=["original", "account", "knowledge_base"])
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
        chunks, terms = keyword.postings_remove_documents(
            knowledge_base_id=kb.pk, document_ids=[document.pk]
        )
        KnowledgeBase.objects.filter(pk=kb.pk).update(
            chunk_count=F("chunk_count") - chunks, total_terms=F("total_terms") - terms
        )
        document.delete()


def _claim_is_stale(document: Document) -> bool:
    started = document.processing_started_at
    return started is None or started < timezone.now() - PROCESSING_STALE_AFTER


def documents_create_batch(
    *, actor: Actor, kb: KnowledgeBase, uploads: list[dict[str, Any]], enqueue: bool = True
) -> list[Document]:
    """Store several uploads all or nothing (every one is validated before the single insert),
    then process them as one batch task: their chunks are embedded together in full batches
    instead of one small embedding call per document.

    Each item of ``uploads`` takes ``document_create``'s keyword arguments (except ``enqueue``:
    ``enqueue=False`` leaves processing to the caller).
    """
    built = [_document_build(kb=kb, **upload) for upload in uploads]
    with transaction.atomic():
        documents = Document.objects.bulk_create(built)
        ids = [document.pk for document in documents]
        if enqueue:
            transaction.on_commit(lambda: _send_batch_processing(ids))
    return documents


def _send_batch_processing(document_ids: list[int]) -> bool:
    from kombu.exceptions import OperationalError

    from rag.tasks import process_documents

    try:
        process_documents.delay(document_ids)
    except OperationalError:
        logger.warning("broker unavailable; %s documents stay pending", len(document_ids))
        return False
    return True


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
