"""Celery tasks of pages and articles: the link sync after each save, re-syncs when titles
change, and the daily summary pages."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from content.services import links, summaries
from core.jobs import periodic_job
from core.models import JobRun
from core.queue import INGESTION, INTERACTIVE, queued_task

logger = logging.getLogger("engram.content")


class DailySummariesFailed(RuntimeError):
    """Some accounts got no summary page (the others did)."""


@periodic_job(
    description="Write each account's summary page of the previous day (pages created or "
    "changed, documents indexed, memories promoted...; prose when an LLM is configured). "
    "Running again rewrites that day's pages; kwargs: dry_run, day (YYYY-MM-DD).",
    # Early morning: the day summarised is over (memory's 4:00 consolidation counts in the
    # day it ran, so the order of the two jobs does not matter).
    crontab="30 4 * * *",
    expires_seconds=6 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def daily_summaries(run: JobRun, dry_run: bool = False, day: str | None = None) -> dict[str, int]:
    report = summaries.daily_summaries_write(
        day=dt.date.fromisoformat(day) if day else None, dry_run=dry_run
    )
    run.counts = report.counts  # recorded with the failure below
    if report.errors:
        failed = ", ".join(f"{a}: {e}" for a, e in sorted(report.errors.items()))
        raise DailySummariesFailed(f"{len(report.errors)} account(s) failed ({failed})")
    return report.counts


@periodic_job(
    description="Sync the pages and articles whose sync a write scheduled but that never "
    "ran (the broker was down when the write committed, or a worker died): their graph "
    "node, links and embedding. kwargs: dry_run.",
    every_seconds=600,
    expires_seconds=540,
    time_limit=600,
    soft_time_limit=540,
)
def sync_pending(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return links.pending_sync_sweep(dry_run=dry_run)


@queued_task(queue=INTERACTIVE, time_limit=300, soft_time_limit=240, acks_late=True)
def page_sync(page_id: int) -> dict[str, Any] | None:
    """A saved page's node, embedding and ``references`` edges."""
    report = links.page_sync(page_id=page_id)
    if report is None:
        return None
    return {"links": report.links, "created": report.created, "removed": report.removed}


@queued_task(queue=INTERACTIVE, time_limit=300, soft_time_limit=240, acks_late=True)
def article_sync(article_id: int) -> bool:
    """A saved article's embedding (its nodes follow through the pages that link to it)."""
    return links.article_sync(article_id=article_id)


@queued_task(queue=INGESTION, time_limit=900, soft_time_limit=840, acks_late=True)
def pages_relink(
    account_id: int | None, names: list[str], node_ids: list[int] | None = None
) -> int:
    """Re-sync the pages whose links may name one of ``names`` or reach ``node_ids``."""
    page_ids = links.linking_candidates(account_id=account_id, names=names, node_ids=node_ids or [])
    for page_id in page_ids:
        links.page_sync(page_id=page_id)
    return len(page_ids)
