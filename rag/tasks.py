from __future__ import annotations

import logging

from celery import shared_task

from core.embeddings.base import EmbeddingError
from core.jobs import PeriodicJob, job_run
from rag import services
from rag.models import Document

logger = logging.getLogger("engram.rag")

PERIODIC_JOBS = [
    PeriodicJob(
        name="rag.recover_documents",
        task="rag.tasks.recover_documents",
        description="Re-queue documents left pending or claimed by a dead worker.",
        every_seconds=600,
        expires_seconds=540,
    ),
]


@shared_task(bind=True, time_limit=300, soft_time_limit=240, acks_late=True)
def recover_documents(self) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("rag.recover_documents", task_id=self.request.id or "") as run:
        run.counts = services.documents_recover()
    return run.counts


@shared_task(
    bind=True,
    acks_late=True,
    time_limit=30 * 60,
    soft_time_limit=28 * 60,
    max_retries=3,
)
def process_document(self, document_id: int) -> str:  # type: ignore[no-untyped-def]
    """Ingest one document. The task id is the claim, so a redelivered task resumes its own."""
    if not Document.objects.filter(pk=document_id).exists():
        return "gone"
    claim = self.request.id or None
    try:
        return services.document_process(document_id=document_id, claim=claim)
    except EmbeddingError as exc:
        # Transient provider trouble: retry with backoff, then give up visibly.
        if self.request.retries < self.max_retries:
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
        if claim:
            services.document_mark_failed(document_id=document_id, claim=claim, error=str(exc))
        return "failed"


@shared_task(
    bind=True,
    acks_late=True,
    time_limit=60 * 60,
    soft_time_limit=58 * 60,
    max_retries=3,
)
def process_documents(self, document_ids: list[int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Ingest a batch upload's documents together (see ``documents_process_batch``)."""
    claim = self.request.id or None
    try:
        return dict(services.documents_process_batch(document_ids=document_ids, claim=claim))
    except EmbeddingError as exc:
        if self.request.retries < self.max_retries:
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
        if claim:
            services.documents_mark_failed(claim=claim, error=str(exc))
        return {"failed": len(document_ids)}
