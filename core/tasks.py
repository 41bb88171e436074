"""Core maintenance tasks."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from core import services
from core.jobs import PeriodicJob, job_run
from core.models import JobRun

PERIODIC_JOBS = [
    PeriodicJob(
        name="core.prune_api_keys",
        task="core.tasks.prune_api_keys",
        description="Delete API keys revoked or expired longer ago than API_KEY_RETENTION_DAYS.",
        crontab="17 3 * * *",
        expires_seconds=6 * 3600,
    ),
    PeriodicJob(
        name="core.prune_job_runs",
        task="core.tasks.prune_job_runs",
        description="Delete job run records older than JOB_RUN_RETENTION_DAYS.",
        crontab="27 3 * * *",
        expires_seconds=6 * 3600,
    ),
]


@shared_task(bind=True, time_limit=600, soft_time_limit=540, acks_late=True)
def prune_api_keys(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("core.prune_api_keys", task_id=self.request.id or "") as run:
        found = services.api_keys_prune(retention=settings.API_KEY_RETENTION, dry_run=dry_run)
        run.counts = {"would_delete" if dry_run else "deleted": found}
    return run.counts


@shared_task(bind=True, time_limit=600, soft_time_limit=540, acks_late=True)
def prune_job_runs(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    with job_run("core.prune_job_runs", task_id=self.request.id or "") as run:
        cutoff = timezone.now() - settings.JOB_RUN_RETENTION
        old = JobRun.objects.filter(started_at__lt=cutoff).exclude(pk=run.pk)
        if dry_run:
            run.counts = {"would_delete": old.count()}
        else:
            deleted, _ = old.delete()
            run.counts = {"deleted": deleted}
    return run.counts
