"""The ingestion pipeline: claim, extract, chunk and embed outside any transaction, then swap
a document's chunks, postings and statistics in one (``rag.services.swap``).

Every document a run claims ends in a visible state: ``indexed`` (or left as it is when another
run took it over or its content changed meanwhile), or ``failed`` with the error: extraction or
chunking refused it, it is over a size limit, or anything unexpected broke on it (only that
document fails; the others of a batch go on). Only two things stop a whole run: the embedding
provider is unavailable (the task retries) and the task's soft time limit (the task fails what
it holds). What no code can catch (a lost worker, a hard time limit) leaves a claim that goes
stale; every claim counts an attempt, and a document whose attempts never finished
RAG_MAX_PROCESSING_ATTEMPTS times is given up (``failed``) instead of being processed again.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import connection, transaction
from django.db.models import Case, CharField, F, Q, Value, When
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from core.embeddings import get_embedding_provider
from core.embeddings.base import EmbeddingError
from core.errors import EngramError, PayloadTooLarge
from rag import keyword
from rag.chunking import chunk_document
from rag.extraction import extract_text
from rag.indexing import indexed_text
from rag.models import Chunk, Document
from rag.services.swap import _Prepared, _swap

logger = logging.getLogger("engram.rag")

EMBED_BATCH = 64


def _heading_chars() -> int:
    field = Chunk._meta.get_field("heading_path")
    assert isinstance(field, ArrayField) and field.base_field.max_length
    return int(field.base_field.max_length)


HEADING_CHARS = _heading_chars()  # what a stored heading is cut to
# A live worker holds a claim at most as long as its task's hard time limit (then it is killed):
# a claim older than the longest ingestion task's limit (settings.py defines them), plus a margin
# for clocks, belongs to a worker that died.
PROCESSING_STALE_AFTER = timedelta(seconds=settings.RAG_LONGEST_TASK_TIME_LIMIT + 120)
# What stops a run as a whole instead of failing the document it is on: the provider is down
# (the task retries) or the task is out of time (it must stop before the hard limit kills it).
RUN_ABORTS: tuple[type[BaseException], ...] = (EmbeddingError, SoftTimeLimitExceeded)


def run_abort(exc: BaseException) -> BaseException | None:
    """The run-stopping exception behind ``exc``, if any: libraries that catch everything (PDF
    parsing does) re-raise the time limit as their own error, with it as the cause."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, RUN_ABORTS):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _raise_if_abort(exc: BaseException) -> None:
    abort = run_abort(exc)
    if abort is not None:
        raise abort


def extracted_size_check(characters: int) -> None:
    """Refuse text longer than RAG_MAX_EXTRACTED_CHARS (413 ``document_too_large``)."""
    limit = settings.RAG_MAX_EXTRACTED_CHARS
    if characters > limit:
        raise PayloadTooLarge(
            f"The document's text has {characters:,} characters; the limit is {limit:,} "
            "(RAG_MAX_EXTRACTED_CHARS).",
            code="document_too_large",
            details={"characters": characters, "limit": limit},
        )


def _chunk_count_check(chunks: int) -> None:
    limit = settings.RAG_MAX_CHUNKS_PER_DOCUMENT
    if chunks > limit:
        raise PayloadTooLarge(
            f"The document makes {chunks:,} chunks; the limit is {limit:,} "
            "(RAG_MAX_CHUNKS_PER_DOCUMENT).",
            code="document_too_large",
            details={"chunks": chunks, "limit": limit},
        )


def _claim(document_ids: list[int], claim: str) -> tuple[list[int], int]:
    """Claim the documents that are free to process (at most three statements, whatever their
    number); returns the ids claimed and how many were given up.

    Each claim counts an attempt: the first of a cycle when the document was pending or failed,
    one more when it takes over a run that never finished (its own task redelivered after a lost
    worker, or a stale claim). A document that already had RAG_MAX_PROCESSING_ATTEMPTS unfinished
    attempts is failed instead: processing it is what kills the worker or runs out of time.
    """
    now = timezone.now()
    claimable = (
        Q(status__in=[Document.Status.PENDING, Document.Status.FAILED])
        | Q(status=Document.Status.PROCESSING, processing_task_id=claim)
        | Q(
            status=Document.Status.PROCESSING,
            processing_started_at__lt=now - PROCESSING_STALE_AFTER,
        )
    )
    limit = settings.RAG_MAX_PROCESSING_ATTEMPTS
    with transaction.atomic():
        rows = list(
            Document.objects.filter(pk__in=document_ids)
            .filter(claimable)
            .exclude(knowledge_base__status__in=["paused", "archived"])
            .select_for_update(of=("self",))
            .order_by("pk")
            .values_list("pk", "status", "attempts")
        )
        exhausted = [
            pk for pk, status, attempts in rows if status == "processing" and attempts >= limit
        ]
        claimed = [pk for pk, _, _ in rows if pk not in set(exhausted)]
        Document.objects.filter(pk__in=claimed).update(
            status=Document.Status.PROCESSING,
            processing_task_id=claim,
            processing_started_at=now,
            chunks_embedded=0,
            error="",
            # Both sides read the row as it was before this UPDATE.
            attempts=Case(
                When(status=Document.Status.PROCESSING, then=F("attempts") + 1), default=Value(1)
            ),
        )
        gave_up = documents_give_up(document_ids=exhausted) if exhausted else 0
    return claimed, gave_up


def documents_give_up(
    *, document_ids: Sequence[int] | None = None, stale_only: bool = False
) -> int:
    """Fail the processing documents (of ``document_ids``, else all) whose unfinished attempts
    reached RAG_MAX_PROCESSING_ATTEMPTS (with ``stale_only``, only those whose claim went stale);
    one conditional UPDATE. Returns how many."""
    documents = Document.objects.filter(
        status=Document.Status.PROCESSING, attempts__gte=settings.RAG_MAX_PROCESSING_ATTEMPTS
    )
    if document_ids is not None:
        documents = documents.filter(pk__in=document_ids)
    if stale_only:
        documents = documents.filter(
            processing_started_at__lt=timezone.now() - PROCESSING_STALE_AFTER
        )
    return documents.update(
        status=Document.Status.FAILED,
        error=Concat(
            Value("Gave up after "),
            Cast(F("attempts"), CharField()),
            Value(" attempts: worker lost or timed out."),
        ),
        processing_task_id="",
        updated_at=timezone.now(),
    )


def _prepare(document: Document, embed: Any) -> _Prepared:
    kb = document.knowledge_base
    extracted = extract_text(
        data=bytes(document.original), filename=document.source, content_type=document.content_type
    )
    extracted_size_check(len(extracted.text))
    pieces = chunk_document(
        extracted.text,
        strategy=kb.chunking_strategy,
        chunk_size=kb.chunk_size,
        chunk_overlap=kb.chunk_overlap,
        content_type=extracted.content_type,
        embed=embed,
    )
    _chunk_count_check(len(pieces))
    # Index each heading as it will be stored (the column's length): a longer one would be
    # indexed in full but stored cut, and the index would disagree with a rebuild from chunks.
    pieces = [
        piece
        if all(len(part) <= HEADING_CHARS for part in piece.heading_path)
        else replace(piece, heading_path=tuple(part[:HEADING_CHARS] for part in piece.heading_path))
        for piece in pieces
    ]
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
    fail extraction or chunking (or break them) are marked failed. Each prepared document's chunk
    total is recorded (progress: chunks embedded / total); one that lost its claim meanwhile is
    dropped.
    """
    claimed, gave_up = _claim(document_ids, claim)
    outcomes["failed"] += gave_up
    outcomes["skipped"] += len(document_ids) - len(claimed) - gave_up
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
        except Exception as exc:
            _fail([document.pk], claim, exc, outcomes)
    finished = _finish(unchanged, claim, status=Document.Status.INDEXED)
    outcomes["unchanged"] += finished
    outcomes["skipped"] += len(unchanged) - finished  # new content or a reprocess meanwhile
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
    nothing. Progress is recorded every EMBED_BATCH chunks. Any error ends the document failed,
    except those in RUN_ABORTS, which propagate to the task. Returns "indexed", "unchanged",
    "skipped" or "failed".
    """
    claim = claim or uuid.uuid4().hex
    provider = get_embedding_provider()
    outcomes: Counter[str] = Counter()
    prepared = _prepare_claimed([document_id], claim, provider, outcomes)
    if not prepared:
        return next((outcome for outcome, count in outcomes.items() if count), "skipped")
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
        indexed, _ = _swap(prepared, [vectors], claim, provider.model_id)
    except Exception as exc:
        _fail([document_id], claim, exc, outcomes)
        return "failed" if outcomes["failed"] else "skipped"
    return "indexed" if indexed else "skipped"


# Batch processing claims and prepares CLAIM_DOCUMENTS documents at a time, and hands the model
# groups of at least GROUP_CHUNKS chunks: the model packs texts of similar length into its
# inference batches, which works better on a bigger group, while the previous group is written.
CLAIM_DOCUMENTS = 16
GROUP_CHUNKS = 256


def documents_process_batch(*, document_ids: list[int], claim: str | None = None) -> Counter[str]:
    """Process many documents, embedding one group while the database writes the previous one.

    Same guarantees as ``document_process`` per document: one document that breaks extraction,
    chunking, embedding or its swap fails alone. Bulk loads and re-indexing use it: one
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
    embedder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
    try:
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
                _swap_embedded(*previous, claim, provider, outcomes)
            previous = current
        if previous is not None:
            _swap_embedded(*previous, claim, provider, outcomes)
    except BaseException:
        # Out of time or provider down: do not wait for an embedding nobody will write.
        embedder.shutdown(wait=False, cancel_futures=True)
        raise
    embedder.shutdown()
    return +outcomes  # without zero counts


def _swap_embedded(
    group: list[_Prepared],
    embedded: Future[Any],
    claim: str,
    provider: Any,
    outcomes: Counter[str],
) -> None:
    if not group:
        return
    try:
        vectors = list(embedded.result())
    except Exception as exc:
        _raise_if_abort(exc)
        # Something in one document's text broke the model: embed them one by one so that only
        # that document fails.
        logger.warning("embedding a group failed; embedding its documents one by one")
        kept: list[_Prepared] = []
        per_document: list[list[Any]] = []
        for item in group:
            try:
                per_document.append(list(provider.embed_documents(item.texts)))
            except Exception as item_exc:
                _fail([item.document.pk], claim, item_exc, outcomes)
                continue
            kept.append(item)
        _swap_isolating(kept, per_document, claim, provider.model_id, outcomes)
        return
    per_document = []
    offset = 0
    for item in group:
        per_document.append(vectors[offset : offset + len(item.pieces)])
        offset += len(item.pieces)
    _swap_isolating(group, per_document, claim, provider.model_id, outcomes)


def _swap_isolating(
    group: list[_Prepared],
    vectors: list[list[Any]],
    claim: str,
    model_id: str,
    outcomes: Counter[str],
) -> None:
    """Swap a group in one transaction; if it breaks, swap its documents one at a time so that
    only the document that breaks it fails."""
    if not group:
        return
    try:
        indexed, skipped = _swap(group, vectors, claim, model_id)
    except Exception as exc:
        _raise_if_abort(exc)
        if len(group) == 1:
            _fail([group[0].document.pk], claim, exc, outcomes)
            return
        logger.warning("swapping a group failed; swapping its documents one by one")
        for item, item_vectors in zip(group, vectors, strict=True):
            _swap_isolating([item], [item_vectors], claim, model_id, outcomes)
        return
    outcomes["indexed"] += indexed
    outcomes["skipped"] += skipped


def _finish(document_ids: list[int], claim: str, *, status: str, error: str = "") -> int:
    if not document_ids:
        return 0
    return Document.objects.filter(pk__in=document_ids, processing_task_id=claim).update(
        status=status, error=error[:5000], processing_task_id="", updated_at=timezone.now()
    )


def _fail(document_ids: list[int], claim: str, exc: Exception, outcomes: Counter[str]) -> None:
    """Fail documents this run holds because of ``exc``; re-raises ``exc`` if it stops the run.

    The error the document shows is the domain error's message (or a ValueError's, which the
    chunkers raise for content they refuse); anything else is a bug, logged with its traceback
    and named by its type only.
    """
    _raise_if_abort(exc)
    if isinstance(exc, EngramError):
        error = exc.message
    elif isinstance(exc, ValueError):
        error = str(exc)
    else:
        logger.error("processing documents %s failed", document_ids, exc_info=exc)
        error = f"Unexpected error while processing ({type(exc).__name__}); see the worker log."
    failed = _finish(document_ids, claim, status=Document.Status.FAILED, error=error)
    outcomes["failed"] += failed
    outcomes["skipped"] += len(document_ids) - failed


def document_mark_failed(*, document_id: int, claim: str, error: str) -> None:
    _finish([document_id], claim, status=Document.Status.FAILED, error=error)


def documents_release(*, claim: str, note: str = "") -> int:
    """Give back the documents a run holds (pending again, unclaimed): its task will be retried
    (the provider was unavailable), so the attempt ended without the document being at fault.
    Returns how many."""
    return Document.objects.filter(
        processing_task_id=claim, status=Document.Status.PROCESSING
    ).update(
        status=Document.Status.PENDING,
        error=note[:5000],
        processing_task_id="",
        updated_at=timezone.now(),
    )


def documents_mark_failed(*, claim: str, error: str) -> int:
    """Fail every document a batch run still holds (its claim); returns how many."""
    return Document.objects.filter(
        processing_task_id=claim, status=Document.Status.PROCESSING
    ).update(
        status=Document.Status.FAILED,
        error=error[:5000],
        processing_task_id="",
        updated_at=timezone.now(),
    )
