from __future__ import annotations

import logging
import uuid
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from core.embeddings.base import EmbeddingError
from core.jobs import periodic_job
from core.models import JobRun
from core.queue import INGESTION, queued_task
from rag import services
from rag.models import Document

logger = logging.getLogger("engram.rag")


# Documents one run of rag.graph_index_pending links to the graph, at most (the offline
# extractor takes about 20 ms a document of SciFact's size).
GRAPH_CATCH_UP_DOCUMENTS = 2000

DOCUMENT_SOFT_TIME_LIMIT, DOCUMENT_TIME_LIMIT = settings.RAG_DOCUMENT_TASK_TIME_LIMITS
BATCH_SOFT_TIME_LIMIT, BATCH_TIME_LIMIT = settings.RAG_BATCH_TASK_TIME_LIMITS


def _timed_out(task: Any) -> str:
    # The limit this run was given (a call may override the task's own).
    _, soft = task.request.timelimit or (None, None)
    seconds = soft or task.soft_time_limit
    return f"Timed out: processing took longer than the {seconds:g} s soft time limit."


def _unexpected(exc: Exception) -> str:
    return f"Unexpected error while processing ({type(exc).__name__}); see the worker log."


@periodic_job(
    description="Re-queue documents left pending or claimed by a dead worker; give up on "
    "those whose claims went stale RAG_MAX_PROCESSING_ATTEMPTS times.",
    every_seconds=600,
    expires_seconds=540,
    time_limit=300,
    soft_time_limit=240,
)
def recover_documents(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return services.documents_recover(dry_run=dry_run)


@periodic_job(
    description="Delete search queries (and their results) older than SEARCH_QUERY_RETENTION_DAYS.",
    crontab="37 3 * * *",
    expires_seconds=6 * 3600,
    time_limit=900,
    soft_time_limit=840,
)
def prune_search_queries(_run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return services.search_queries_prune(
        older_than=settings.SEARCH_QUERY_RETENTION, dry_run=dry_run
    )


@queued_task(
    queue=INGESTION,
    bind=True,
    acks_late=True,
    time_limit=DOCUMENT_TIME_LIMIT,
    soft_time_limit=DOCUMENT_SOFT_TIME_LIMIT,
    max_retries=3,
)
def process_document(self, document_id: int) -> str:  # type: ignore[no-untyped-def]
    """Ingest one document. The task id is the claim, so a redelivered task resumes its own.

    Every way out leaves the document in a visible state: the service fails a document that
    breaks; here the provider being down is retried, then failed, and running out of time fails
    the document (the hard limit would kill the worker a moment later).
    """
    if not Document.objects.filter(pk=document_id).exists():
        return "gone"
    claim = self.request.id or uuid.uuid4().hex
    try:
        return services.document_process(document_id=document_id, claim=claim)
    except EmbeddingError as exc:
        # Transient provider trouble: retry with backoff, then give up visibly.
        if self.request.retries < self.max_retries:
            services.documents_release(claim=claim, note=f"Embedding failed, will retry: {exc}")
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
        services.document_mark_failed(document_id=document_id, claim=claim, error=str(exc))
        return "failed"
    except SoftTimeLimitExceeded:
        services.document_mark_failed(document_id=document_id, claim=claim, error=_timed_out(self))
        return "failed"
    except Exception as exc:  # the service fails what breaks; this is the last line of defence
        logger.exception("processing document %s failed", document_id)
        services.document_mark_failed(document_id=document_id, claim=claim, error=_unexpected(exc))
        return "failed"


@queued_task(
    queue=INGESTION,
    bind=True,
    acks_late=True,
    time_limit=BATCH_TIME_LIMIT,
    soft_time_limit=BATCH_SOFT_TIME_LIMIT,
    max_retries=3,
)
def process_documents(self, document_ids: list[int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Ingest a batch upload's documents together (see ``documents_process_batch``).

    The documents it has not claimed yet when it fails or runs out of time stay pending: the
    recovery job queues them one by one.
    """
    claim = self.request.id or uuid.uuid4().hex
    try:
        return dict(services.documents_process_batch(document_ids=document_ids, claim=claim))
    except EmbeddingError as exc:
        if self.request.retries < self.max_retries:
            services.documents_release(claim=claim, note=f"Embedding failed, will retry: {exc}")
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
        return {"failed": services.documents_mark_failed(claim=claim, error=str(exc))}
    except SoftTimeLimitExceeded:
        error = _timed_out(self)
        return {"failed": services.documents_mark_failed(claim=claim, error=error)}
    except Exception as exc:
        logger.exception("processing a batch of %s documents failed", len(document_ids))
        return {"failed": services.documents_mark_failed(claim=claim, error=_unexpected(exc))}


@periodic_job(
    description="Recompute the Leiden communities (and their summaries) of every account "
    "whose knowledge graph changed since they were last computed.",
    every_seconds=600,
    expires_seconds=540,
    time_limit=3600,
    soft_time_limit=3500,
)
def graph_communities(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    from rag.graph.services.communities import communities_due

    return communities_due(dry_run=dry_run)


@periodic_job(
    description="Link to the knowledge graph the indexed documents whose chunks' entities it "
    "does not hold yet (their graph task was never sent, the broker being down, or failed), "
    "at most GRAPH_CATCH_UP_DOCUMENTS a run.",
    every_seconds=600,
    expires_seconds=540,
    time_limit=1800,
    soft_time_limit=1740,
)
def graph_index_pending(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    """The periodic catch-up of ``graph_index_documents`` (``documents_graph_catch_up``)."""
    from rag.graph.services.build import documents_graph_catch_up, documents_graph_pending

    if not settings.RAG_GRAPH_EXTRACTION:
        return {"pending": 0, "indexed": 0, "mentions": 0}
    elif dry_run:
        pending = documents_graph_pending().count()
        return {"pending": pending, "indexed": 0, "mentions": 0, "dry_run": 1}
    else:
        taken, outcome = documents_graph_catch_up(limit=GRAPH_CATCH_UP_DOCUMENTS)
        return {"pending": taken, "indexed": taken, "mentions": outcome.mentions}


@queued_task(queue=INGESTION, time_limit=1800, soft_time_limit=1740, acks_late=True)
def graph_forget_chunks(knowledge_base_ids: list[int]) -> dict[str, int]:
    """Drop the graph mentions of the chunks deleted from these knowledge bases (a document or
    a whole base deleted), refreshing the nodes they named."""
    from rag.graph.services import mentions_forget
    from rag.spaces import CHUNKS

    return {"nodes": mentions_forget(space=CHUNKS, scope_ids=knowledge_base_ids)}


@queued_task(queue=INGESTION, bind=True, time_limit=1800, soft_time_limit=1740, acks_late=True)
def graph_index_documents(self, document_ids: list[int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """The entities of newly indexed documents' chunks (``rag.graph.services.build``); never
    fails ingestion: an error is logged, the documents stay pending and
    ``rag.graph_index_pending`` indexes them later."""
    from rag.graph.services.build import documents_graph_index

    try:
        outcome = documents_graph_index(document_ids=document_ids)
    except Exception:
        logger.exception("graph indexing of documents %s failed", document_ids[:20])
        return {"failed": len(document_ids)}
    return {"units": outcome.units, "mentions": outcome.mentions, "nodes": outcome.nodes_created}
