"""The skill graph's periodic jobs (seed 000's schedule, UTC). Each takes ``dry_run`` and is
recorded as a ``JobRun``; each acts on sets and can stop or repeat at any point."""

from __future__ import annotations

from celery import shared_task

from core.jobs import PeriodicJob, job_run
from skills.services import conflicts, learning, proposals, upkeep

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


# --- conflicts and upkeep ----------------------------------------------------------------------

PERIODIC_JOBS += [
    PeriodicJob(
        name="skills.conflict_scan",
        task="skills.tasks.conflict_scan",
        description="Detect skill conflicts (overlap, contradiction, dependency: missing and "
        "cycles by traversal, version mismatch, naming), resolve those gone, auto-repair "
        "missing dependencies into proposals.",
        crontab="15 4 * * *",
        expires_seconds=3 * 3600,
    ),
    PeriodicJob(
        name="skills.health",
        task="skills.tasks.health",
        description="Recompute skills' health scores (outcomes, recency, open conflicts).",
        crontab="30 4 * * *",
        expires_seconds=3 * 3600,
    ),
    PeriodicJob(
        name="skills.stale_decay",
        task="skills.tasks.stale_decay",
        description="Decay the effectiveness of skills unused for 30 days (x 0.9).",
        crontab="0 5 * * 0",
        expires_seconds=6 * 3600,
    ),
    PeriodicJob(
        name="skills.reembed",
        task="skills.tasks.reembed",
        description="Re-index and re-embed skills whose text or embedding model changed; "
        "restore deleted skill nodes in the knowledge graph.",
        crontab="0 5 * * 0",
        expires_seconds=6 * 3600,
    ),
    PeriodicJob(
        name="skills.gap_detection",
        task="skills.tasks.gap_detection",
        description="Turn task types that fail, or that no agent does well, into skill proposals.",
        crontab="0 3 1 * *",
        expires_seconds=12 * 3600,
    ),
    PeriodicJob(
        name="skills.team_coverage",
        task="skills.tasks.team_coverage",
        description="Report the categories each team's agents cover (counts in the job run).",
        crontab="15 5 * * 1",
        expires_seconds=6 * 3600,
    ),
]


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def conflict_scan(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.conflict_scan", task_id=self.request.id or "") as run:
        run.counts = conflicts.scan_all(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=1800, soft_time_limit=1700, acks_late=True)
def health(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.health", task_id=self.request.id or "") as run:
        run.counts = upkeep.health_update(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=1800, soft_time_limit=1700, acks_late=True)
def stale_decay(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.stale_decay", task_id=self.request.id or "") as run:
        run.counts = upkeep.stale_decay(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def reembed(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.reembed", task_id=self.request.id or "") as run:
        run.counts = upkeep.reembed(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def gap_detection(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.gap_detection", task_id=self.request.id or "") as run:
        run.counts = upkeep.gaps_detect(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=1800, soft_time_limit=1700, acks_late=True)
def team_coverage(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("skills.team_coverage", task_id=self.request.id or "") as run:
        run.counts = upkeep.coverage_report(dry_run=dry_run)
    return run.counts
