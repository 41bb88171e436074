"""The memory tiers' periodic clean-up jobs. Each deletes what has expired already (and is
invisible to every read since it expired), so a run can stop or repeat at any point: idempotent
by construction."""

from __future__ import annotations

from celery import shared_task

from core.jobs import PeriodicJob, job_run
from memory import services

PERIODIC_JOBS = [
    PeriodicJob(
        name="memory.prune_short_term",
        task="memory.tasks.prune_short_term",
        description="Delete expired short-term memory entries.",
        every_seconds=600,
        expires_seconds=540,
    ),
    PeriodicJob(
        name="memory.prune_pools",
        task="memory.tasks.prune_pools",
        description="Delete expired memory pools (with their grants and events) and pool "
        "bulletin events older than POOL_EVENT_RETENTION_DAYS.",
        every_seconds=900,
        expires_seconds=840,
    ),
]


@shared_task(bind=True, time_limit=600, soft_time_limit=540, acks_late=True)
def prune_short_term(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.prune_short_term", task_id=self.request.id or "") as run:
        run.counts = services.short_term_prune_expired(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=900, soft_time_limit=840, acks_late=True)
def prune_pools(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.prune_pools", task_id=self.request.id or "") as run:
        run.counts = services.pools_prune_expired(dry_run=dry_run)
    return run.counts
