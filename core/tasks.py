"""Core maintenance tasks."""

from __future__ import annotations

from django.conf import settings

from core import services
from core.jobs import periodic_job
from core.models import JobRun
from core.portability import jobs as portability_jobs
from core.queue import INGESTION, MAINTENANCE, queued_task


@periodic_job(
    description="Delete API keys revoked or expired longer ago than API_KEY_RETENTION_DAYS.",
    crontab="17 3 * * *",
    expires_seconds=6 * 3600,
    time_limit=600,
    soft_time_limit=540,
)
def prune_api_keys(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    found = services.api_keys_prune(retention=settings.API_KEY_RETENTION, dry_run=dry_run)
    return {"would_delete" if dry_run else "deleted": found}


@periodic_job(
    description="Delete job run records older than JOB_RUN_RETENTION_DAYS.",
    crontab="27 3 * * *",
    expires_seconds=6 * 3600,
    time_limit=600,
    soft_time_limit=540,
)
def prune_job_runs(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    from django.utils import timezone

    cutoff = timezone.now() - settings.JOB_RUN_RETENTION
    old = JobRun.objects.filter(started_at__lt=cutoff).exclude(pk=run.pk)
    if dry_run:
        return {"would_delete": old.count()}
    deleted, _ = old.delete()
    return {"deleted": deleted}


@queued_task(
    queue=INGESTION,
    bind=True,
    time_limit=portability_jobs.TIME_LIMIT,
    soft_time_limit=portability_jobs.SOFT_TIME_LIMIT,
    acks_late=True,
    max_retries=portability_jobs.MAX_RETRIES,
)
def portability_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    """An export or import asked for through the API or the admin
    (``core.portability.jobs``): claimed by compare-and-set, so a message delivered twice runs
    it once; back in the queue, with backoff, while a provider or store is down."""
    outcome = portability_jobs.portability_job_run(
        job_id=job_id,
        claim=self.request.id or f"local-{job_id}",
        retries_left=not self.request.is_eager
        and self.request.retries < portability_jobs.MAX_RETRIES,
    )
    if outcome == "retry":
        raise self.retry(countdown=60 * 2**self.request.retries)
    return outcome


@queued_task(queue=MAINTENANCE, bind=True, acks_late=True, time_limit=24 * 3600)
def embedding_generation_build(self, generation_id: int) -> str:  # type: ignore[no-untyped-def]
    """Build the next embedding generation (``core.embeddings.generations.generation_build``):
    resumable from the position it recorded, so a redelivered message continues the build."""
    from core.embeddings.generations import generation_build

    return generation_build(generation_id)
