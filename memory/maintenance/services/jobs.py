"""Cluster maintenance asked for now, as a Celery job (docs/memory/maintenance.md, "Cluster
maintenance").

A run can take minutes (re-embedding, UMAP: its first compilation alone took 46 s), so it never
runs in a web process: ``maintenance_job_enqueue`` checks the actor (the same checks as a run:
memory managers, agents with the ``write`` scope over the contexts they may write, ``admin``
keys over the whole account), records a ``MaintenanceJob`` (queued) and sends the task once the
transaction commits. The worker (``maintenance_job_run``):

1. claims the job by compare-and-set (queued, or running under this same task id, or under a
   claim older than the task's time limit: a worker that died), so a job runs once however
   often its message is delivered; a job that is completed, failed or held elsewhere is left
   alone;
2. runs ``cluster_maintenance.maintenance_run`` as the API's synchronous run did, the report
   recorded on the job as soon as it exists;
3. ends the job ``completed`` with its report, or ``failed`` with the error (code and message;
   the report too, when the run had made one). A provider or store that is down (a 503 the API
   would answer) puts the job back in the queue while the task has retries left.

``maintenance_jobs_recover`` (a periodic job) re-sends jobs still queued after
``RESEND_AFTER`` (the broker was down when they were asked for) and fails those a lost worker
left running past their time limit: every job ends in a visible state.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.actors import Actor
from core.errors import NotFound, error_answer
from core.queue import task_send_on_commit
from memory.maintenance.services import cluster_maintenance
from memory.models import MaintenanceJob, MemoryMaintenanceReport
from memory.roles import MANAGE_MEMORY

logger = logging.getLogger("engram.memory")

Job = MaintenanceJob
# The task's limits (memory.tasks.maintenance_job), here so that the stale-claim window derives
# from them: a claim older than the hard limit belongs to a worker that is gone.
TIME_LIMIT = 3 * 3600
SOFT_TIME_LIMIT = TIME_LIMIT - 300
STALE_AFTER = timedelta(seconds=TIME_LIMIT + 300)
MAX_RETRIES = 3
RESEND_AFTER = timedelta(minutes=10)
OPEN = (Job.Status.QUEUED, Job.Status.RUNNING)


def job_not_found() -> NotFound:
    return NotFound("No such maintenance job.", code="maintenance_job_not_found")


def _send(job: Job) -> None:
    from memory.tasks import maintenance_job

    task_send_on_commit(maintenance_job, job.pk)


def maintenance_job_enqueue(
    *,
    actor: Actor,
    trigger: str,
    dry_run: bool = False,
    context_ids: Sequence[int] | None = None,
    account_id: int | None = None,
) -> Job:
    """A run asked for now, queued: by a memory manager, an agent whose key has the ``admin``
    scope (any context of the account), or an agent with the ``write`` scope (the contexts it
    may write; 404 ``context_not_found`` for one it cannot read, 403 ``context_read_only``,
    409 ``context_archived``), all checked here, before anything is queued. The same request
    while an identical one is still queued or running answers that job instead of queueing a
    second run."""
    account = actor.account_id if account_id is None else account_id
    actor.require(account, MANAGE_MEMORY)
    actor.require_scope("write")
    ids = cluster_maintenance.requested_contexts(actor, context_ids)
    agent_id = actor.agent_id
    with transaction.atomic():
        waiting = (
            Job.objects.filter(
                account_id=account, actor=str(actor)[:200], dry_run=dry_run, status__in=OPEN
            )
            .filter(Q(agent_id=agent_id) if agent_id is not None else Q(agent__isnull=True))
            .filter(Q(context_ids=ids) if ids is not None else Q(context_ids__isnull=True))
            .order_by("-pk")
            .first()
        )
        if waiting is not None:
            return waiting
        job = Job.objects.create(
            account_id=account,
            agent_id=agent_id,
            actor=str(actor)[:200],
            trigger=trigger,
            dry_run=dry_run,
            context_ids=ids,
        )
        _send(job)
    return job


def jobs_for(actor: Actor) -> Any:
    """The jobs the actor reads: those of the accounts where it manages memory; an agent whose
    key lacks the ``admin`` scope, only those it asked for (as its reports)."""
    jobs = Job.objects.filter(account_id__in=list(actor.accounts_with(MANAGE_MEMORY)))
    key = actor.api_key
    if actor.agent is not None and key is not None and not key.has_scope("admin"):
        jobs = jobs.filter(agent_id=actor.agent.pk)
    return jobs


def maintenance_job_get(actor: Actor, job_id: int) -> Job:
    """One job the actor may read (404 ``maintenance_job_not_found`` otherwise: another
    account's answers exactly like a missing one)."""
    job = jobs_for(actor).filter(pk=job_id).first()
    if job is None:
        raise job_not_found()
    return job


# --- the worker ----------------------------------------------------------------------------


def _claim(job_id: int, claim: str) -> Job | None:
    """Take the job for this run (compare-and-set), or None when it is not this run's to do."""
    now = timezone.now()
    claimable = Q(status=Job.Status.QUEUED) | Q(
        Q(status=Job.Status.RUNNING) & (Q(claim=claim) | Q(started_at__lt=now - STALE_AFTER))
    )
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(claimable, pk=job_id).first()
        if job is None:
            return None
        job.status, job.claim, job.started_at = Job.Status.RUNNING, claim, now
        job.attempts += 1
        job.save(update_fields=["status", "claim", "started_at", "attempts"])
    return job


def _end(job: Job, claim: str, **fields: Any) -> bool:
    """End the job as this run holds it (a run that lost its claim changes nothing)."""
    return bool(
        Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, claim=claim).update(**fields)
    )


def maintenance_job_run(*, job_id: int, claim: str, retries_left: bool) -> str:
    """Run the job ``job_id`` for the task ``claim``. Answers ``completed``, ``failed``,
    ``retry`` (back in the queue: a provider or store was down) or ``skipped`` (not this
    run's: done already, or held by another live run)."""
    job = _claim(job_id, claim)
    if job is None:
        return "skipped"
    reports: list[int] = []

    def noted(report: MemoryMaintenanceReport) -> None:
        reports.append(report.pk)
        Job.objects.filter(pk=job.pk, claim=claim).update(report_id=report.pk)

    try:
        report = cluster_maintenance.maintenance_run(
            account_id=job.account_id,
            trigger=job.trigger,
            actor_name=job.actor,
            dry_run=job.dry_run,
            context_ids=job.context_ids,
            agent_id=job.agent_id,
            on_report=noted,
        )
    except Exception as exc:
        answer = error_answer(exc)
        if answer is None:
            logger.exception("maintenance job %s failed", job.pk)
            code, message = "internal_error", f"{type(exc).__name__}: {exc}"
        else:
            code, message = answer.body["error"]["code"], answer.body["error"]["message"]
        if answer is not None and answer.status >= 500 and retries_left:
            _end(job, claim, status=Job.Status.QUEUED, error_code=code, error=message[:5000])
            return "retry"
        _end(
            job,
            claim,
            status=Job.Status.FAILED,
            error_code=code,
            error=message[:5000],
            report_id=reports[-1] if reports else None,
            finished_at=timezone.now(),
        )
        return "failed"
    _end(
        job,
        claim,
        status=Job.Status.COMPLETED,
        report_id=report.pk,
        error_code="",
        error="",
        finished_at=timezone.now(),
    )
    return "completed"


def maintenance_jobs_recover(*, dry_run: bool = False) -> dict[str, int]:
    """Re-send the jobs queued for longer than ``RESEND_AFTER`` (their message never reached a
    worker: the broker was down), and fail those running past ``STALE_AFTER`` (their worker
    was lost and their message with it)."""
    now = timezone.now()
    waiting = list(
        Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=now - RESEND_AFTER).order_by(
            "pk"
        )
    )
    stale = Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=now - STALE_AFTER)
    counts = {"resent": len(waiting), "failed": stale.count()}
    if dry_run:
        return counts
    for job in waiting:
        _send(job)
    counts["failed"] = stale.update(
        status=Job.Status.FAILED,
        error_code="worker_lost",
        error="The worker running this job stopped before it ended.",
        finished_at=now,
    )
    return counts
