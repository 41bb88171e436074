"""Periodic maintenance jobs: declared in code by each app, recorded as ``JobRun`` rows.

A job is declared once, where its body is: ``@periodic_job(every_seconds=..., ...)`` (or
``crontab=...``) on a function of ``<app>/tasks.py`` makes it the Celery task
``<app>.tasks.<function>`` and the job ``<app>.<function>`` (its beat row's name and its
``JobRun.job``), registers the job in one registry (``periodic_jobs`` reads it), routes the task
to its queue (``core.queue``: maintenance unless ``queue`` says otherwise) and runs the body inside
``job_run``. ``setup_periodic_tasks`` turns the registry into django-celery-beat rows
that operators then own.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from celery import shared_task
from django.apps import apps
from django.utils import timezone

from core.models import JobRun
from core.queue import MAINTENANCE, task_queue_declare

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
    queue: str = MAINTENANCE

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


# Every periodic job, by name, as ``@periodic_job`` declared it (in import order).
_REGISTRY: dict[str, PeriodicJob] = {}


def periodic_jobs() -> list[PeriodicJob]:
    """Every app's periodic jobs, the apps below first: importing each ``<app>.tasks`` runs its
    ``@periodic_job`` declarations, which fill the registry."""
    for _ in app_modules("tasks"):
        pass
    order = {label: index for index, label in enumerate(ENGRAM_APPS)}
    return sorted(_REGISTRY.values(), key=lambda job: order.get(job.name.split(".")[0], 99))


# A periodic job's body: ``body(run, dry_run=..., **the beat row's other kwargs)`` returns the
# run's counts (it may fill ``run.counts`` itself first, to keep them when it then raises).
JobBody = Callable[..., dict[str, Any]]


def periodic_job(
    *,
    description: str,
    expires_seconds: int,
    time_limit: int,
    soft_time_limit: int,
    every_seconds: int | None = None,
    crontab: str | None = None,
    job: str | None = None,
    kwargs: dict[str, Any] | None = None,
    queue: str = MAINTENANCE,
) -> Callable[[JobBody], Any]:
    """Declare a periodic job on its body, once: the Celery task is ``<app>.tasks.<function>``
    (``acks_late``, with the given time limits; called with ``dry_run`` and the row's kwargs)
    on the queue ``queue``, the job ``<app>.<function>`` unless ``job`` names it (a name beat
    rows already carry), and each run is recorded by ``job_run``."""

    def declare(body: JobBody) -> Any:
        app = body.__module__.split(".")[0]
        name = job or f"{app}.{body.__name__}"
        spec = PeriodicJob(
            name=name,
            task=f"{app}.tasks.{body.__name__}",
            description=description,
            expires_seconds=expires_seconds,
            every_seconds=every_seconds,
            crontab=crontab,
            kwargs=dict(kwargs or {}),
            queue=queue,
        )
        known = _REGISTRY.get(name)
        if known is not None and known.task != spec.task:
            raise ValueError(f"periodic job names must be unique: {name} ({known.task})")
        task_queue_declare(spec.task, queue)
        _REGISTRY[name] = spec

        def run_job(self: Any, dry_run: bool = False, **options: Any) -> dict[str, Any]:
            with job_run(name, task_id=self.request.id or "") as run:
                run.counts = body(run, dry_run=dry_run, **options)
            return run.counts

        run_job.__name__ = run_job.__qualname__ = body.__name__
        run_job.__module__ = body.__module__
        run_job.__doc__ = body.__doc__ or description
        task = shared_task(
            bind=True,
            name=spec.task,
            time_limit=time_limit,
            soft_time_limit=soft_time_limit,
            acks_late=True,
        )(run_job)
        return task

    return declare


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
