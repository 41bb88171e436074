from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from core import services, tasks
from core.actors import actor_for_account
from core.jobs import PeriodicJob, job_run, periodic_jobs
from core.models import ApiKey, JobRun
from core.periodic import periodic_tasks_sync
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_prune_api_keys_deletes_only_long_dead_keys() -> None:
    agent = AgentFactory.create()
    live, _ = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    recently_revoked, _ = services.api_key_create(
        actor=actor_for_account(agent.account_id), agent=agent
    )
    services.api_key_revoke(actor=actor_for_account(agent.account_id), key=recently_revoked)
    old_revoked, _ = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    long_expired, _ = services.api_key_create(
        actor=actor_for_account(agent.account_id), agent=agent
    )
    long_ago = timezone.now() - timedelta(days=90)
    ApiKey.objects.filter(pk=old_revoked.pk).update(revoked_at=long_ago)
    ApiKey.objects.filter(pk=long_expired.pk).update(expires_at=long_ago)

    assert tasks.prune_api_keys.delay(dry_run=True).get() == {"would_delete": 2}
    assert ApiKey.objects.count() == 4
    result = tasks.prune_api_keys.delay()

    assert result.get() == {"deleted": 2}
    assert set(ApiKey.objects.values_list("pk", flat=True)) == {live.pk, recently_revoked.pk}
    run = JobRun.objects.filter(job="core.prune_api_keys").first()  # the newest
    assert run is not None and run.status == JobRun.Status.SUCCEEDED
    assert run.counts == {"deleted": 2}
    assert run.finished_at is not None


def test_prune_job_runs_keeps_recent_runs() -> None:
    old = JobRun.objects.create(job="x", started_at=timezone.now() - timedelta(days=400))
    recent = JobRun.objects.create(job="x")
    assert tasks.prune_job_runs.delay(dry_run=True).get() == {"would_delete": 1}
    assert JobRun.objects.filter(pk=old.pk).exists()
    tasks.prune_job_runs.delay()
    assert not JobRun.objects.filter(pk=old.pk).exists()
    assert JobRun.objects.filter(pk=recent.pk).exists()


def test_failed_job_is_recorded_with_its_error() -> None:
    with pytest.raises(ValueError), job_run("demo.failing") as run:
        run.counts = {"seen": 3}
        raise ValueError("disk on fire")
    run = JobRun.objects.get(job="demo.failing")
    assert run.status == JobRun.Status.FAILED
    assert run.error == "ValueError: disk on fire"
    assert run.counts == {"seen": 3}


def test_every_app_job_is_declared_with_expiry() -> None:
    jobs = periodic_jobs()
    assert {"core.prune_api_keys", "core.prune_job_runs"} <= {job.name for job in jobs}
    assert all(job.expires_seconds > 0 for job in jobs)


def test_each_job_name_is_written_once_where_the_job_is() -> None:
    """``@periodic_job`` derives a job's name (``<app>.<function>``) and its task's
    (``<app>.tasks.<function>``): a tasks module spells a job's name at most once (a name kept
    from before, ``job=``), and never its task's."""
    jobs = periodic_jobs()
    assert len({job.name for job in jobs}) == len(jobs)
    for job in jobs:
        app = job.name.split(".")[0]
        source = (Path(__file__).resolve().parents[2] / app / "tasks.py").read_text()
        assert source.count(f'"{job.name}"') <= 1, job.name
        assert f'"{job.task}"' not in source, job.task
        assert job.task == f"{app}.tasks.{job.task.rsplit('.', 1)[1]}"


def test_the_registry_is_what_the_beat_rows_and_celery_carry() -> None:
    from config.celery import app

    jobs = periodic_jobs()
    periodic_tasks_sync()
    rows = PeriodicTask.objects.filter(name__in=[job.name for job in jobs])
    assert dict(rows.values_list("name", "task")) == {job.name: job.task for job in jobs}
    app.loader.import_default_modules()
    assert {job.task for job in jobs} <= set(app.tasks)
    # Today's names, unchanged by the declaration (beat rows of running installations use them).
    assert {
        "memory.prune_short_term": "memory.tasks.prune_short_term",
        "memory.index_pending": "memory.tasks.index_pending_sweep",
        "core.prune_api_keys": "core.tasks.prune_api_keys",
        "content.daily_summaries": "content.tasks.daily_summaries",
    }.items() <= {job.name: job.task for job in jobs}.items()


def test_a_declared_job_runs_as_its_task_and_records_its_run() -> None:
    assert tasks.prune_api_keys.delay(dry_run=True).get() == {"would_delete": 0}
    run = JobRun.objects.get(job="core.prune_api_keys")
    assert run.status == JobRun.Status.SUCCEEDED and run.counts == {"would_delete": 0}


def test_periodic_job_requires_exactly_one_schedule() -> None:
    with pytest.raises(ValueError):
        PeriodicJob(name="x", task="t", description="", expires_seconds=1)
    with pytest.raises(ValueError):
        PeriodicJob(
            name="x",
            task="t",
            description="",
            expires_seconds=1,
            every_seconds=5,
            crontab="* * * * *",
        )


def test_setup_periodic_tasks_creates_rows_idempotently() -> None:
    call_command("setup_periodic_tasks")
    call_command("setup_periodic_tasks")
    task = PeriodicTask.objects.get(name="core.prune_api_keys")
    assert task.task == "core.tasks.prune_api_keys"
    assert task.enabled
    assert task.expire_seconds == 6 * 3600
    assert task.crontab is not None and (task.crontab.minute, task.crontab.hour) == ("17", "3")
    assert PeriodicTask.objects.filter(name__startswith="core.").count() == 2


def test_operator_edits_are_never_overwritten() -> None:
    job = PeriodicJob(
        name="demo.job",
        task="core.tasks.prune_api_keys",
        description="d",
        every_seconds=60,
        expires_seconds=30,
    )
    assert periodic_tasks_sync([job]) == {"demo.job": "created"}
    task = PeriodicTask.objects.get(name="demo.job")
    task.enabled = False
    task.interval, _ = IntervalSchedule.objects.get_or_create(
        every=5, period=IntervalSchedule.MINUTES
    )
    task.save()

    changed_default = PeriodicJob(
        name="demo.job",
        task="core.tasks.prune_api_keys",
        description="d",
        every_seconds=120,
        expires_seconds=30,
    )
    assert periodic_tasks_sync([changed_default]) == {"demo.job": "kept"}
    task.refresh_from_db()
    assert task.enabled is False
    assert (task.interval.every, task.interval.period) == (5, IntervalSchedule.MINUTES)


def test_enabled_flag_survives_and_untouched_rows_follow_new_defaults() -> None:
    job = PeriodicJob(
        name="demo.job2",
        task="core.tasks.prune_api_keys",
        description="d",
        crontab="0 4 * * *",
        expires_seconds=30,
    )
    periodic_tasks_sync([job])
    PeriodicTask.objects.filter(name="demo.job2").update(enabled=False)

    new_default = PeriodicJob(
        name="demo.job2",
        task="core.tasks.prune_api_keys",
        description="d",
        crontab="30 5 * * *",
        expires_seconds=60,
    )
    assert periodic_tasks_sync([new_default]) == {"demo.job2": "updated"}
    task = PeriodicTask.objects.get(name="demo.job2")
    assert task.enabled is False  # the operator's switch stays
    assert isinstance(task.crontab, CrontabSchedule) and (
        task.crontab.minute,
        task.crontab.hour,
    ) == ("30", "5")
    assert task.expire_seconds == 60


def test_a_row_created_by_hand_with_a_job_name_is_kept() -> None:
    interval, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.HOURS)
    PeriodicTask.objects.create(
        name="demo.job3", task="core.tasks.prune_job_runs", interval=interval
    )
    job = PeriodicJob(
        name="demo.job3",
        task="core.tasks.prune_api_keys",
        description="d",
        every_seconds=60,
        expires_seconds=30,
    )
    assert periodic_tasks_sync([job]) == {"demo.job3": "kept"}
    assert PeriodicTask.objects.get(name="demo.job3").task == "core.tasks.prune_job_runs"
