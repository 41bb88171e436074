"""Periodic maintenance jobs: declared in code by each app, recorded as ``JobRun`` rows.

Each app lists its jobs in ``<app>/tasks.py`` as ``PERIODIC_JOBS``; ``setup_periodic_tasks``
turns them into django-celery-beat rows that operators then own.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from django.apps import apps
from django.utils import timezone

from core.models import JobRun

logger = logging.getLogger("engram.jobs")

ENGRAM_APPS = ("core", "rag", "content", "skills", "memory")


@dataclass(frozen=True)
class PeriodicJob:
    """A maintenance job's defaults. ``every_seconds`` or ``crontab`` (5 fields), not both."""

    name: str
    task: str
    description: str
    expires_seconds: int
    every_seconds: int | None = None
    crontab: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.every_seconds is None) == (self.crontab is None):
            raise ValueError(f"{self.name}: give exactly one of every_seconds or crontab")
        if self.crontab is not None and len(self.crontab.split()) != 5:
            raise ValueError(f"{self.name}: crontab needs 5 fields")

    @property
    def fingerprint(self) -> str:
        schedule = f"every:{self.every_seconds}" if self.every_seconds else f"cron:{self.crontab}"
        return f"{self.task}|{schedule}|expires:{self.expires_seconds}"


def app_modules(name: str) -> Iterator[tuple[str, ModuleType]]:
    """``(label, <app>.<name> module)`` of every installed Engram app that has one, in
    dependency order (the apps below first): how ``core`` finds what the apps above it offer
    (their periodic jobs, their daily digests) without importing them. A module that exists but
    fails to import raises."""
    for label in ENGRAM_APPS:
        if not apps.is_installed(label):
            continue
        try:
            module = importlib.import_module(f"{label}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{label}.{name}":
                raise
            continue
        yield label, module


def periodic_jobs() -> list[PeriodicJob]:
    jobs: list[PeriodicJob] = []
    for _, module in app_modules("tasks"):
        jobs.extend(getattr(module, "PERIODIC_JOBS", []))
    names = [job.name for job in jobs]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ValueError(f"periodic job names must be unique: {sorted(duplicates)}")
    return jobs


@contextlib.contextmanager
def job_run(job: str, *, task_id: str = "") -> Iterator[JobRun]:
    """Record one run: the body fills ``run.counts``; an exception marks it failed and re-raises."""
    run = JobRun.objects.create(job=job, task_id=task_id or "")
    try:
        yield run
    except Exception as exc:
        run.status = JobRun.Status.FAILED
        run.error = f"{type(exc).__name__}: {exc}"[:5000]
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at", "counts"])
        logger.exception("job %s failed", job)
        raise
    run.status = JobRun.Status.SUCCEEDED
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "finished_at", "counts"])
    logger.info("job %s finished", job, extra={"counts": run.counts})
