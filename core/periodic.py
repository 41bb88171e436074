"""Sync declared periodic jobs into django-celery-beat without trampling operator edits."""

from __future__ import annotations

import json

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from core.jobs import PeriodicJob, periodic_jobs
from core.models import PeriodicJobDefault


def _row_fingerprint(task: PeriodicTask) -> str:
    """The same fingerprint a ``PeriodicJob`` has, read back from the beat row."""
    if task.interval_id:
        interval = task.interval
        assert interval is not None
        seconds = (
            interval.every
            * {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "microseconds": 0}[
                interval.period
            ]
        )
        schedule = f"every:{seconds}"
    elif task.crontab_id:
        cron = task.crontab
        assert cron is not None
        fields = (cron.minute, cron.hour, cron.day_of_month, cron.month_of_year, cron.day_of_week)
        schedule = "cron:" + " ".join(fields)
    else:
        schedule = "other"
    expires = task.expire_seconds or 0
    return f"{task.task}|{schedule}|expires:{expires}"


def _apply_schedule(task: PeriodicTask, job: PeriodicJob) -> None:
    task.task = job.task
    task.description = job.description
    task.expire_seconds = job.expires_seconds
    task.kwargs = json.dumps(job.kwargs)
    task.interval = None
    task.crontab = None
    if job.every_seconds is not None:
        task.interval, _ = IntervalSchedule.objects.get_or_create(
            every=job.every_seconds, period=IntervalSchedule.SECONDS
        )
    else:
        assert job.crontab is not None
        minute, hour, dom, month, dow = job.crontab.split()
        task.crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_month=dom,
            month_of_year=month,
            day_of_week=dow,
            timezone="UTC",
        )


@transaction.atomic
def periodic_tasks_sync(jobs: list[PeriodicJob] | None = None) -> dict[str, str]:
    """Create missing beat rows; update a row to new defaults only if nobody edited it.

    A row still carries the fingerprint Engram last wrote (recorded in ``PeriodicJobDefault``)
    exactly when no operator changed its task, schedule or expiry; such a row follows new code
    defaults. Any edited row, and every row's enabled flag, is left alone.
    Returns ``{job name: "created" | "updated" | "unchanged" | "kept"}`` ("kept": operator edit).
    """
    report: dict[str, str] = {}
    for job in jobs if jobs is not None else periodic_jobs():
        task = PeriodicTask.objects.select_for_update().filter(name=job.name).first()
        recorded = PeriodicJobDefault.objects.filter(name=job.name).first()
        if task is None:
            task = PeriodicTask(name=job.name, enabled=True)
            _apply_schedule(task, job)
            task.save()
            report[job.name] = "created"
        elif _row_fingerprint(task) == job.fingerprint:
            report[job.name] = "unchanged"
        elif recorded is not None and _row_fingerprint(task) == recorded.fingerprint:
            _apply_schedule(task, job)
            task.save()
            report[job.name] = "updated"
        else:
            report[job.name] = "kept"
            continue
        PeriodicJobDefault.objects.update_or_create(
            name=job.name, defaults={"fingerprint": job.fingerprint}
        )
    return report
