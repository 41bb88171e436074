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
from django.db import connection, transaction
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


def _claim(document_ids: list[int], claim: str) -> list[int]:
    """Claim the documents that are free to process (two statements, whatever their number);
    returns the ids claimed."""
    now = timezone.now()
    claimable = (
        Q(status__in=[Document.Status.PENDING, Document.Status.FAILED])
        | Q(status=Document.Status.PROCESSING, processing_task_id=claim)
        | Q(
            status=Document.Status.PROCESSING,
            processing_started_at__lt=now - PROCESSING_STALE_AFTER,
        )
    )
    with transaction.atomic():
        claimed = list(
            Document.objects.filter(pk__in=document_ids)
            .filter(claimable)
            .exclude(knowledge_base__status__in=["paused", "archived"])
            .select_for_update(of=("self",))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        Document.objects.filter(pk__in=claimed).update(
            status=Document.Status.PROCESSING,
            processing_task_id=claim,
            processing_started_at=now,
            chunks_embedded=0,
            error="",
        )
    return claimed


@dataclass
class _Prepared:
    document: Document
    pieces: list[Any]
    texts: list[str]  # what each piece is embedded and keyword-indexed as
    terms: list[keyword.ChunkTerms]


def _prepare(document: Document, embed: Any) -> _Prepared:
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
    texts = [
        indexed_text(title=document.title, heading_path=piece.heading_path, text=piece.text)
        for piece in pieces
    ]
    return _Prepared(document, pieces, texts, [keyword.chunk_terms(text) for text in texts])


def _prepare_claimed(
    document_ids: list[int], claim: str, provider: Any, outcomes: Counter[str]
) -> list[_Prepared]:
    """Claim, load, then extract and chunk the documents that need (re-)indexing.

    Documents whose content and model are already indexed are finished as unchanged; those that
    fail extraction or chunking are marked failed. Each prepared document's chunk total is
    recorded (progress: chunks embedded / total); one that lost its claim meanwhile is dropped.
    """
    claimed = _claim(document_ids, claim)
    outcomes["skipped"] += len(document_ids) - len(claimed)
    documents = Document.objects.select_related("knowledge_base").filter(pk__in=claimed)
    unchanged: list[int] = []
    prepared: list[_Prepared] = []
    for document in documents.order_by("pk"):
        if (
            document.indexed_checksum == document.checksum
            and document.indexed_model == provider.model_id
        ):
            unchanged.append(document.pk)
            continue
        try:
            prepared.append(_prepare(document, provider.embed_documents))
        except (ValidationFailed, ValueError) as exc:
            _finish([document.pk], claim, status=Document.Status.FAILED, error=str(exc))
            outcomes["failed"] += 1
    outcomes["unchanged"] += _finish(unchanged, claim, status=Document.Status.INDEXED)
    if not prepared:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE rag_document AS d SET chunks_total = t.total "
            "FROM unnest(%s::bigint[], %s::int[]) AS t(id, total) "
            "WHERE d.id = t.id AND d.processing_task_id = %s RETURNING d.id",
            [[p.document.pk for p in prepared], [len(p.pieces) for p in prepared], claim],
        )
        still_ours = {row[0] for row in cursor.fetchall()}
    outcomes["skipped"] += len(prepared) - len(still_ours)
    return [p for p in prepared if p.document.pk in still_ours]


def document_process(*, document_id: int, claim: str | None = None) -> str:
    """Extract, chunk and embed outside any transaction, then swap the chunks in one.

    Idempotent: a document whose content and embedding model match what is indexed is left as
    it is; a run whose claim was taken over (or whose document changed or vanished) writes
    nothing. Progress is recorded every EMBED_BATCH chunks. Returns "indexed", "unchanged",
    "skipped" or "failed".
    """
    claim = claim or uuid.uuid4().hex
    provider = get_embedding_provider()
    outcomes: Counter[str] = Counter()
    prepared = _prepare_claimed([document_id], claim, provider, outcomes)
    if not prepared:
        return next(outcome for outcome, count in outcomes.items() if count)
    item = prepared[0]
    vectors: list[Any] = []
    try:
        for start in range(0, len(item.texts), EMBED_BATCH):
            vectors.extend(provider.embed_documents(item.texts[start : start + EMBED_BATCH]))
            done = min(start + EMBED_BATCH, len(item.texts))
            if not Document.objects.filter(pk=document_id, processing_task_id=claim).update(
                chunks_embedded=done
            ):
                return "skipped"  # taken over: stop embedding for nothing
    except ValueError as exc:
        _finish([document_id], claim, status=Document.Status.FAILED, error=str(exc))
        return "failed"
    _swap(prepared, [vectors], claim, provider.model_id, outcomes)
    return "indexed" if outcomes["indexed"] else "skipped"


# Batch processing claims and prepares CLAIM_DOCUMENTS documents at a time, and hands the model
# groups of at least GROUP_CHUNKS chunks: the model packs texts of similar length into its
# inference batches, which works better on a bigger group, while the previous group is written.
CLAIM_DOCUMENTS = 16
GROUP_CHUNKS = 256


def documents_process_batch(*, document_ids: list[int], claim: str | None = None) -> Counter[str]:
    """Process many documents, embedding one group while the database writes the previous one.

    Same guarantees as ``document_process`` per document. Bulk loads and re-indexing use it: one
    embedding call per small document wastes the model's batch capacity, and a strict
    embed-then-write sequence leaves the model idle during writes. A group costs a handful of
    statements, not a handful per document. Only the embedding runs on the helper thread (the
    model releases the GIL); every database call stays on the caller's thread and connection.
    Returns a count of outcomes.
    """
    claim = claim or uuid.uuid4().hex
    outcomes: Counter[str] = Counter()
    provider = get_embedding_provider()
    previous: tuple[list[_Prepared], Future[Any]] | None = None
    group: list[_Prepared] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as embedder:
        for start in range(0, len(document_ids), CLAIM_DOCUMENTS):
            group += _prepare_claimed(
                document_ids[start : start + CLAIM_DOCUMENTS], claim, provider, outcomes
            )
            last = start + CLAIM_DOCUMENTS >= len(document_ids)
            if not group or (sum(len(item.texts) for item in group) < GROUP_CHUNKS and not last):
                continue
            texts = [text for item in group for text in item.texts]
            current = (group, embedder.submit(provider.embed_documents, texts))
            group = []
            if previous is not None:
                _swap_embedded(*previous, claim, provider.model_id, outcomes)
            previous = current
        if previous is not None:
            _swap_embedded(*previous, claim, provider.model_id, outcomes)
    return +outcomes  # without zero counts


def _swap_embedded(
    group: list[_Prepared],
    embedded: Future[Any],
    claim: str,
    model_id: str,
    outcomes: Counter[str],
) -> None:
    if not group:
        return
    vectors = list(embedded.result())
    per_document = []
    offset = 0
    for item in group:
        per_document.append(vectors[offset : offset + len(item.pieces)])
        offset += len(item.pieces)
    _swap(group, per_document, claim, model_id, outcomes)


def _finish(document_ids: list[int], claim: str, *, status: str, error: str = "") -> int:
    if not document_ids:
        return 0
    return Document.objects.filter(pk__in=document_ids, processing_task_id=claim).update(
        status=status, error=error[:5000], processing_task_id="", updated_at=timezone.now()
    )


def document_mark_failed(*, document_id: int, claim: str, error: str) -> None:
    _finish([document_id], claim, status=Document.Status.FAILED, error=error)


def documents_mark_failed(*, claim: str, error: str) -> int:
    """Fail every document a batch run still holds (its claim); returns how many."""
    return Document.objects.filter(
        processing_task_id=claim, status=Document.Status.PROCESSING
    ).update(status=Document.Status.FAILED, error=error[:5000], processing_task_id="")


def _swap(
    group: list[_Prepared],
    vectors: list[list[Any]],
    claim: str,
    model_id: str,
    outcomes: Counter[str],
) -> None:
    """Replace the chunks, postings and statistics of a group of documents in one transaction.

    A document whose claim was taken over or whose content changed since it was read is left
    out (counted as skipped) without writing; the others swap together. Each knowledge base's
    row lock serialises its statistics; knowledge bases are locked before documents, in the
    order deletions take them.
    """
    with transaction.atomic():
        kbs = {
            kb.pk: kb
            for kb in KnowledgeBase.objects.select_for_update()
            .filter(pk__in={item.document.knowledge_base_id for item in group})
            .order_by("pk")
        }
        current = dict(
            Document.objects.select_for_update()
            .filter(pk__in=[item.document.pk for item in group], processing_task_id=claim)
            .order_by("pk")
            .values_list("pk", "checksum")
        )
        live = [
            (item, item_vectors)
            for item, item_vectors in zip(group, vectors, strict=True)
            if current.get(item.document.pk) == item.document.checksum
        ]
        outcomes["skipped"] += len(group) - len(live)
        if not live:
            return
        by_kb: dict[int, list[tuple[_Prepared, list[Any]]]] = {}
        for item, item_vectors in live:
            by_kb.setdefault(item.document.knowledge_base_id, []).append((item, item_vectors))
        for kb_id, items in by_kb.items():
            _swap_in_knowledge_base(kbs[kb_id], items, model_id)
        # One statement for the group (the checksum was verified under the row lock above).
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE rag_document AS d SET status = %s, error = '', processing_task_id = '', "
                "chunks_total = t.chunks, chunks_embedded = t.chunks, "
                "indexed_checksum = d.checksum, indexed_model = %s, indexed_at = now(), "
                "token_count = t.tokens, updated_at = now() "
                "FROM unnest(%s::bigint[], %s::int[], %s::int[]) AS t(id, chunks, tokens) "
                "WHERE d.id = t.id",
                [
                    Document.Status.INDEXED,
                    model_id,
                    [item.document.pk for item, _ in live],
                    [len(item.pieces) for item, _ in live],
                    [sum(piece.token_count for piece in item.pieces) for item, _ in live],
                ],
            )
        outcomes["indexed"] += len(live)


def _swap_in_knowledge_base(
    kb: KnowledgeBase, items: list[tuple[_Prepared, list[Any]]], model_id: str
) -> None:
    """Write one knowledge base's share of a group (the caller holds its row lock)."""
    # A document never indexed has nothing to replace.
    replaced = [item.document.pk for item, _ in items if item.document.indexed_at is not None]
    old_chunks, old_terms = keyword.postings_remove_documents(
        knowledge_base_id=kb.pk, document_ids=replaced
    )
    if replaced:
        Chunk.objects.filter(document_id__in=replaced).delete()
    new_chunks = Chunk.objects.bulk_create(
        [
            Chunk(
                account_id=item.document.account_id,
                knowledge_base_id=kb.pk,
                document_id=item.document.pk,
                position=piece.position,
                text=piece.text,
                heading_path=list(piece.heading_path),
                token_count=piece.token_count,
                start_char=piece.start_char,
                end_char=piece.end_char,
                embedding=vector,
                embedding_model=model_id,
                keyword_length=terms.length,
            )
            for item, item_vectors in items
            for piece, vector, terms in zip(item.pieces, item_vectors, item.terms, strict=True)
        ]
    )
    all_terms = [terms for item, _ in items for terms in item.terms]
    chunk_count = kb.chunk_count - old_chunks + len(new_chunks)
    total_terms = kb.total_terms - old_terms + sum(terms.length for terms in all_terms)
    keyword.postings_add(
        knowledge_base_id=kb.pk,
        chunks=[
            (chunk.pk, chunk.document_id, terms)
            for chunk, terms in zip(new_chunks, all_terms, strict=True)
        ],
        avg_length=total_terms / chunk_count if chunk_count else 0.0,
    )
    KnowledgeBase.objects.filter(pk=kb.pk).update(chunk_count=chunk_count, total_terms=total_terms)
