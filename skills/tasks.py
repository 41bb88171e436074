"""The skill graph's periodic jobs (seed 000's schedule, UTC). Each takes ``dry_run`` and is
recorded as a ``JobRun``; each acts on sets and can stop or repeat at any point."""

from __future__ import annotations

from core.jobs import periodic_job
from core.models import JobRun
from skills.services import conflicts, learning, proposals, upkeep


@periodic_job(
    description="Expire skill proposals (drafts, submitted, under review) nobody reviewed "
    "within 14 days of their writing or submission.",
    every_seconds=3600,
    expires_seconds=3300,
    time_limit=600,
    soft_time_limit=540,
)
def expire_proposals(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return proposals.proposals_expire(dry_run=dry_run)


@periodic_job(
    description="Move the trust score of agents idle for 7 days toward neutral (0.5) by 5%.",
    crontab="0 2 * * *",
    expires_seconds=3 * 3600,
    time_limit=900,
    soft_time_limit=840,
)
def trust_decay(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return learning.trust_decay(dry_run=dry_run)


# --- conflicts and upkeep ----------------------------------------------------------------------


@periodic_job(
    description="Detect skill conflicts (overlap, contradiction, dependency: missing and "
    "cycles by traversal, version mismatch, naming), resolve those gone, auto-repair "
    "missing dependencies into proposals.",
    crontab="15 4 * * *",
    expires_seconds=3 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def conflict_scan(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return conflicts.scan_all(dry_run=dry_run)


@periodic_job(
    description="Recompute skills' health scores (outcomes, recency, open conflicts).",
    crontab="30 4 * * *",
    expires_seconds=3 * 3600,
    time_limit=1800,
    soft_time_limit=1700,
)
def health(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return upkeep.health_update(dry_run=dry_run)


@periodic_job(
    description="Decay the effectiveness of skills unused for 30 days (x 0.9).",
    crontab="0 5 * * 0",
    expires_seconds=6 * 3600,
    time_limit=1800,
    soft_time_limit=1700,
)
def stale_decay(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return upkeep.stale_decay(dry_run=dry_run)


@periodic_job(
    description="Re-index and re-embed skills whose text or embedding model changed; "
    "restore deleted skill nodes in the knowledge graph.",
    crontab="0 5 * * 0",
    expires_seconds=6 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def reembed(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return upkeep.reembed(dry_run=dry_run)


@periodic_job(
    description="Turn task types that fail, or that no agent does well, into skill proposals.",
    crontab="0 3 1 * *",
    expires_seconds=12 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def gap_detection(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return upkeep.gaps_detect(dry_run=dry_run)


@periodic_job(
    description="Report the categories each team's agents cover (counts in the job run).",
    crontab="15 5 * * 1",
    expires_seconds=6 * 3600,
    time_limit=1800,
    soft_time_limit=1700,
)
def team_coverage(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return upkeep.coverage_report(dry_run=dry_run)
