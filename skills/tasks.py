"""The skill graph's periodic jobs (seed 000's schedule, UTC). Each takes ``dry_run`` and is
recorded as a ``JobRun``; each acts on sets and can stop or repeat at any point."""

from __future__ import annotations

from celery import shared_task

from core.jobs import PeriodicJob, job_run
from skills.services import learning, proposals

PERIODIC_JOBS = [
    PeriodicJob(
        name="skills.expire_proposals",
        task="skills.tasks.expire_proposals",
        description="Expire skill proposals (drafts, submitted, under review) nobody reviewed "
        "within 14 days of their writing or submission.",
        every_seconds=3600,
        expires_seconds=3300,
    ),
]


@shared_task(bind=True, time_limit=600, soft_time_limit=540, acks_late=True)
def expire_proposals(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.expire_proposals", task_id=self.request.id or "") as run:
        run.counts = proposals.proposals_expire(dry_run=dry_run)
    return run.counts


PERIODIC_JOBS += [
    PeriodicJob(
        name="skills.trust_decay",
        task="skills.tasks.trust_decay",
        description="Move the trust score of agents idle for 7 days toward neutral (0.5) by 5%.",
        crontab="0 2 * * *",
        expires_seconds=3 * 3600,
    ),
]


@shared_task(bind=True, time_limit=900, soft_time_limit=840, acks_late=True)
def trust_decay(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.trust_decay", task_id=self.request.id or "") as run:
        run.counts = learning.trust_decay(dry_run=dry_run)
    return run.counts
