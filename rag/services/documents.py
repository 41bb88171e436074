"""Documents: validated uploads, content changes, reprocessing, deletion and recovery."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.actors import WRITE_DOCUMENTS, Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound, PayloadTooLarge
from core.queue import task_send
from core.writes import changes_of, changes_validate, row_update
from rag import keyword
from rag.extraction import CheckedUpload, check_upload
from rag.models import Document, KnowledgeBase
from rag.services.pipeline import (
    PROCESSING_STALE_AFTER,
    documents_give_up,
    extracted_size_check,
)
from rag.spaces import CHUNKS


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
    actor.require(kb.account_id, WRITE_DOCUMENTS)
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
        audit_record(
            actor=actor,
            action="rag.document.create",
            account_id=kb.account_id,
            target=document,
            changes={"knowledge_base": kb.pk, "title": document.title, "size": document.size_bytes},
        )
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
    extracted = _upload_check(data=data, filename=filename, content_type=content_type)
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


def _upload_check(*, data: bytes, filename: str | None, content_type: str | None) -> CheckedUpload:
    """What a web request checks before storing an upload: its size in bytes, then its format;
    text formats are extracted here and their text's length is limited too (a PDF's text is
    extracted, and limited, by the worker)."""
    if len(data) > settings.RAG_MAX_UPLOAD_BYTES:
        raise PayloadTooLarge(
            f"Uploads are limited to {settings.RAG_MAX_UPLOAD_BYTES} bytes.",
            code="upload_too_large",
            details={"limit": settings.RAG_MAX_UPLOAD_BYTES, "size": len(data)},
        )
    checked = check_upload(data=data, filename=filename, content_type=content_type)
    if checked.text is not None:
        extracted_size_check(len(checked.text))
    return checked


def document_replace_content(
    *,
    actor: Actor,
    document: Document,
    data: bytes,
    filename: str | None = None,
    content_type: str | None = None,
) -> Document:
    """New content for a document: its chunks are replaced atomically once processed.

    A run still processing the old content loses its claim: it can neither index the old content
    nor mark the document failed or indexed over the new one.
    """
    actor.require(document.account_id, WRITE_DOCUMENTS)
    checked = _upload_check(data=data, filename=filename, content_type=content_type)
    with transaction.atomic():
        Document.objects.filter(pk=document.pk).update(
            original=data,
            checksum=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
            content_type=checked.content_type,
            status=Document.Status.PENDING,
            error="",
            processing_task_id="",
            updated_at=timezone.now(),
        )
        audit_record(
            actor=actor,
            action="rag.document.replace_content",
            account_id=document.account_id,
            target=document,
            changes={"size": len(data)},
        )
        _enqueue_processing(document.pk)
    document.refresh_from_db()
    return document


# Metadata a person or agent may edit on a stored document; content has its own operation.
UPDATABLE_FIELDS = ("title", "doc_type", "tags", "lifecycle_state", "document_date", "metadata")


def document_update(*, actor: Actor, document: Document, **fields: Any) -> Document:
    """Change a document's descriptive fields; one UPDATE of exactly those fields.

    Processing state, progress and the original are never written from an instance read
    earlier, so an edit during ingestion cannot undo the pipeline's progress. A new title is
    part of every chunk's indexed text (``rag.indexing``): the document is queued for
    re-indexing, and a run still using the old title loses its claim and writes nothing.
    """
    actor.require(document.account_id, WRITE_DOCUMENTS)
    changes = changes_of(document, fields, UPDATABLE_FIELDS)
    if not changes:
        return document
    changes_validate(document, changes)
    reindex = "title" in changes
    return row_update(
        actor=actor,
        instance=document,
        changes=changes,
        also=(
            {
                "status": Document.Status.PENDING,
                "error": "",
                "processing_task_id": "",
                "indexed_checksum": "",
            }
            if reindex
            else None
        ),
        action="rag.document.update",
        account_id=document.account_id,
        missing=lambda: NotFound("No such document.", code="document_not_found"),
        then=(lambda: _enqueue_processing(document.pk)) if reindex else None,
    )


def document_reprocess(*, actor: Actor, document: Document, force: bool = False) -> Document:
    """Queue a document again (after a failure, a settings change, or a lost worker).

    A stale claim is released with it, so the dead worker's run, should it still be alive, can
    write nothing over the new one.
    """
    actor.require(document.account_id, WRITE_DOCUMENTS)
    now = timezone.now()
    # Compare-and-set: the instance was read earlier, a worker may have claimed it since.
    live_claim = Q(
        status=Document.Status.PROCESSING,
        processing_started_at__gte=now - PROCESSING_STALE_AFTER,
    )
    with transaction.atomic():
        updated = (
            Document.objects.filter(pk=document.pk)
            .exclude(live_claim)
            .update(
                status=Document.Status.PENDING,
                error="",
                processing_task_id="",
                indexed_checksum="" if force else F("indexed_checksum"),
                updated_at=now,
            )
        )
        if not updated:
            if Document.objects.filter(pk=document.pk).exists():
                raise Conflict("The document is being processed.", code="document_processing")
            raise NotFound("No such document.", code="document_not_found")
        audit_record(
            actor=actor,
            action="rag.document.reprocess",
            account_id=document.account_id,
            target=document,
            changes={"force": force},
        )
        _enqueue_processing(document.pk)
    document.refresh_from_db()
    return document


def document_delete(*, actor: Actor, document: Document) -> None:
    """Delete a document, its chunks and its index data (graph mentions once it commits:
    ``chunks_unlink_soon``), keeping corpus statistics exact. A
    document deleted meanwhile (by another request, or with its knowledge base) is 404
    ``document_not_found``, as a missing one."""
    actor.require(document.account_id, WRITE_DOCUMENTS)
    with transaction.atomic():
        kb = KnowledgeBase.objects.select_for_update().filter(pk=document.knowledge_base_id).first()
        # Under the base's lock no other delete of it or its documents runs: check it is there.
        if kb is None or not Document.objects.filter(pk=document.pk).exists():
            raise NotFound("No such document.", code="document_not_found")
        chunks, terms = keyword.postings_remove_documents(
            knowledge_base_id=kb.pk, document_ids=[document.pk]
        )
        KnowledgeBase.objects.filter(pk=kb.pk).update(
            chunk_count=F("chunk_count") - chunks, total_terms=F("total_terms") - terms
        )
        audit_record(
            actor=actor,
            action="rag.document.delete",
            account_id=document.account_id,
            target=document,
            changes={"title": document.title},
        )
        Document.objects.filter(pk=document.pk).delete()
        chunks_unlink_soon([kb.pk])


def chunks_unlink_soon(knowledge_base_ids: list[int]) -> None:
    """Once the deleting transaction commits: the graph mentions of the chunks it deleted from
    these knowledge bases dropped by a worker (``rag.tasks.graph_forget_chunks``; by this
    process with the broker down), so nothing derived from them stays in the graph."""
    from rag import tasks
    from rag.graph.services import mentions_forget_soon

    mentions_forget_soon(tasks.graph_forget_chunks, CHUNKS, knowledge_base_ids)


def documents_create_batch(
    *, actor: Actor, kb: KnowledgeBase, uploads: list[dict[str, Any]], enqueue: bool = True
) -> list[Document]:
    """Store several uploads all or nothing (every one is validated before the single insert),
    then process them as one batch task: their chunks are embedded together in full batches
    instead of one small embedding call per document.

    Each item of ``uploads`` takes ``document_create``'s keyword arguments (except ``enqueue``:
    ``enqueue=False`` leaves processing to the caller).
    """
    actor.require(kb.account_id, WRITE_DOCUMENTS)
    built = [_document_build(kb=kb, **upload) for upload in uploads]
    with transaction.atomic():
        documents = Document.objects.bulk_create(built)
        ids = [document.pk for document in documents]
        audit_record(
            actor=actor,
            action="rag.document.create_batch",
            account_id=kb.account_id,
            target_type="rag.document",
            target_id=f"{ids[0]}..{ids[-1]}" if ids else "",
            changes={"knowledge_base": kb.pk, "documents": ids},
        )
        if enqueue:
            transaction.on_commit(lambda: _send_batch_processing(ids))
    return documents


def _send_batch_processing(document_ids: list[int]) -> bool:
    """Queue a batch; if the broker is down its documents stay pending for the recovery job."""
    from rag.tasks import process_documents

    return task_send(process_documents, document_ids)


def _enqueue_processing(document_id: int) -> None:
    transaction.on_commit(lambda: _send_processing(document_id))


def _send_processing(document_id: int) -> bool:
    """Queue processing; if the broker is down the document stays pending for the recovery job
    (``rag.recover_documents``) instead of failing a request whose data is already committed."""
    from rag.tasks import process_document

    return task_send(process_document, document_id)


def documents_recover(
    *, pending_after: timedelta = timedelta(minutes=10), dry_run: bool = False
) -> dict[str, int]:
    """Re-queue documents nobody is processing: pending for a while, or claimed by a dead worker;
    give up (fail) those whose claims went stale RAG_MAX_PROCESSING_ATTEMPTS times instead.

    Returns {"found", "queued", "gave_up"}; a dry run changes nothing and reports what a run
    would do.
    """
    now = timezone.now()
    stale = Q(
        status=Document.Status.PROCESSING,
        processing_started_at__lt=now - PROCESSING_STALE_AFTER,
    )
    limit = settings.RAG_MAX_PROCESSING_ATTEMPTS
    stuck = Document.objects.filter(
        Q(status=Document.Status.PENDING, updated_at__lt=now - pending_after)
        | (stale & Q(attempts__lt=limit))
    ).exclude(knowledge_base__status__in=["paused", "archived"])
    ids = list(stuck.order_by("pk").values_list("id", flat=True)[:1000])
    if dry_run:
        exhausted = Document.objects.filter(stale, attempts__gte=limit).count()
        return {"found": len(ids), "queued": len(ids), "gave_up": exhausted, "dry_run": 1}
    gave_up = documents_give_up(stale_only=True)
    queued = sum(_send_processing(document_id) for document_id in ids)
    return {"found": len(ids), "queued": queued, "gave_up": gave_up}
