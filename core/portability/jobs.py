"""Export and import as Celery jobs (the API and the admin; docs/portability.md, "Over the API").

``export_job_enqueue`` and ``import_job_enqueue`` check the actor now (an owner, or an agent
whose key has the ``admin`` scope, always on its own account), record a ``PortabilityJob``
(queued) and send ``core.tasks.portability_job`` once the transaction commits. The worker
(``portability_job_run``):

1. claims the job by compare-and-set (queued, or running under this task id, or under a claim
   older than the task's time limit), so a message delivered twice runs it once;
2. runs ``account_export`` (the archive saved to the job's ``archive``) or ``account_import``
   (of the archive uploaded), writing ``progress`` after each kind on a connection of its own
   (visible while the run's transaction, or the export's snapshot, is still open);
3. ends the job ``succeeded`` (progress 1, counts, digest) or ``failed`` with the error's code,
   message and details (a bad archive names the file inside it and the line).

A foreign job answers exactly like a missing one (404 ``portability_job_not_found``).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.actors import MANAGE_ACCOUNT, Actor, actor_for_account
from core.errors import Conflict, NotFound, PayloadTooLarge, ValidationFailed, error_answer
from core.models import Account, PortabilityJob
from core.queue import task_send_on_commit

logger = logging.getLogger("engram.portability")

Job = PortabilityJob
TIME_LIMIT = 6 * 3600
SOFT_TIME_LIMIT = TIME_LIMIT - 300
STALE_AFTER = timedelta(seconds=TIME_LIMIT + 300)
MAX_RETRIES = 3


def max_import_bytes() -> int:
    """An uploaded archive's size limit (``PORTABILITY_MAX_IMPORT_BYTES``)."""
    return int(settings.PORTABILITY_MAX_IMPORT_BYTES)


def job_not_found() -> NotFound:
    return NotFound("No such export or import job.", code="portability_job_not_found")


def _check(actor: Actor, account_id: int) -> None:
    actor.require(account_id, MANAGE_ACCOUNT)
    actor.require_scope("admin")


def _send(job: Job) -> None:
    from core.tasks import portability_job

    task_send_on_commit(portability_job, job.pk)


def export_job_enqueue(
    *,
    actor: Actor,
    account_id: int | None = None,
    with_vectors: bool = False,
    agent_name: str = "",
) -> Job:
    """An export of the actor's account (``account_id`` for people, who may own several),
    queued. ``agent_name``: only that agent's share (404 ``agent_not_found`` now, not later)."""
    account = actor.account_id if account_id is None else account_id
    _check(actor, account)
    if agent_name:
        from core.models import Agent

        if not Agent.objects.filter(account_id=account, name=agent_name).exists():
            raise NotFound(f"No agent named {agent_name!r} in the account.", code="agent_not_found")
    with transaction.atomic():
        job = Job.objects.create(
            account_id=account,
            kind=Job.Kind.EXPORT,
            agent_id=actor.agent_id,
            actor=str(actor)[:200],
            with_vectors=with_vectors,
            agent_name=agent_name,
        )
        _send(job)
    return job


def import_job_enqueue(*, actor: Actor, upload: UploadedFile, account_id: int | None = None) -> Job:
    """An import of the uploaded archive into the actor's own account, queued: 413
    ``import_too_large`` over the size limit, 400 ``import_empty`` for an empty file. The
    archive itself is checked by the worker (a bad one fails the job, naming file and line)."""
    account = actor.account_id if account_id is None else account_id
    _check(actor, account)
    size = upload.size or 0
    limit = max_import_bytes()
    if size > limit:
        raise PayloadTooLarge(
            f"Archives are limited to {limit} bytes.",
            code="import_too_large",
            details={"limit": limit, "size": size},
        )
    if size == 0:
        raise ValidationFailed("The archive is empty.", code="import_empty")
    with transaction.atomic():
        job = Job.objects.create(
            account_id=account,
            kind=Job.Kind.IMPORT,
            agent_id=actor.agent_id,
            actor=str(actor)[:200],
            size_bytes=size,
        )
        job.archive.save("archive.tar.gz", upload, save=False)
        Job.objects.filter(pk=job.pk).update(archive=job.archive.name)
        _send(job)
    return job


def jobs_for(actor: Actor) -> QuerySet[Job]:
    """The jobs the actor may read: those of the accounts it manages (an agent's key, only
    with the ``admin`` scope: otherwise none)."""
    key = actor.api_key
    if actor.agent is not None and (key is None or not key.has_scope("admin")):
        return Job.objects.none()
    return Job.objects.filter(account_id__in=list(actor.accounts_with(MANAGE_ACCOUNT)))


def portability_job_get(actor: Actor, job_id: int, *, kind: str | None = None) -> Job:
    """One job the actor may read (404 ``portability_job_not_found`` otherwise: another
    account's answers exactly like a missing one; an import's id asked as an export's too)."""
    jobs = jobs_for(actor).filter(pk=job_id)
    if kind is not None:
        jobs = jobs.filter(kind=kind)
    job = jobs.first()
    if job is None:
        raise job_not_found()
    return job


def export_download(actor: Actor, job_id: int) -> Job:
    """An export the actor may download: 404 as ``portability_job_get``; 409
    ``export_not_ready`` while it is queued or running (or when it failed)."""
    job = portability_job_get(actor, job_id, kind=Job.Kind.EXPORT)
    if job.status != Job.Status.SUCCEEDED or not job.archive:
        raise Conflict(
            "The export has not succeeded (yet): see its status.",
            code="export_not_ready",
            details={"status": job.status},
        )
    return job


# --- the worker ----------------------------------------------------------------------------


def _claim(job_id: int, claim: str) -> Job | None:
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
        job.progress = 0.0
        job.save(update_fields=["status", "claim", "started_at", "attempts", "progress"])
    return job


def _end(job: Job, claim: str, **fields: Any) -> bool:
    return bool(
        Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, claim=claim).update(**fields)
    )


@contextmanager
def _progress_writer(job_id: int, claim: str) -> Iterator[Any]:
    """A callback writing the job's progress on a connection of its own (autocommit), so it is
    visible while the run's transaction is open. Failing to write progress never fails a run."""
    connection = connections.create_connection(DEFAULT_DB_ALIAS)

    def write(done: int, total: int) -> None:
        value = min(max(done / total if total else 0.0, 0.0), 0.99)
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE core_portabilityjob SET progress = %s::float8 "
                    "WHERE id = %s AND status = 'running' AND claim = %s",
                    [value, job_id, claim],
                )
        except Exception:  # progress is advisory: never fail a run over it
            logger.warning("portability job %s: progress not written", job_id, exc_info=True)

    try:
        yield write
    finally:
        connection.close()


@contextmanager
def _local_copy(job: Job) -> Iterator[Path]:
    """The uploaded archive as a local file (the storage's own path when it has one)."""
    try:
        local = Path(job.archive.path)
    except NotImplementedError:  # a storage without local files (S3 and the like)
        local = None
    if local is not None:
        yield local
        return
    with tempfile.NamedTemporaryFile(suffix=".tar.gz") as handle:
        with job.archive.open("rb") as source:
            for chunk in source.chunks():
                handle.write(chunk)
        handle.flush()
        yield Path(handle.name)


def _run(job: Job, progress: Any) -> dict[str, Any]:
    from core.portability.services import account_export, account_import

    actor = actor_for_account(job.account_id)
    account = Account.objects.get(pk=job.account_id)
    if job.kind == Job.Kind.EXPORT:
        with tempfile.TemporaryDirectory(prefix="engram-export-job-") as tmp:
            out = Path(tmp) / f"{account.slug}.tar.gz"
            report = account_export(
                actor=actor,
                account=account,
                out=out,
                with_vectors=job.with_vectors,
                agent_name=job.agent_name or None,
                on_progress=progress,
            )
            with out.open("rb") as handle:
                job.archive.save(f"{account.slug}.tar.gz", File(handle), save=False)
            return {
                "archive": job.archive.name,
                "size_bytes": out.stat().st_size,
                "digest": report.digest,
                "counts": report.counts,
            }
    with _local_copy(job) as path:
        imported = account_import(
            path=path, account_slug=account.slug, actor=actor, on_progress=progress
        )
    return {
        "digest": imported.digest,
        "counts": imported.counts,
        "already_imported": imported.already_imported,
    }


def portability_job_run(*, job_id: int, claim: str, retries_left: bool) -> str:
    """Run the job ``job_id`` for the task ``claim``: ``succeeded``, ``failed``, ``retry``
    (a provider or store was down: back in the queue) or ``skipped`` (not this run's)."""
    job = _claim(job_id, claim)
    if job is None:
        return "skipped"
    try:
        with _progress_writer(job.pk, claim) as progress:
            result = _run(job, progress)
    except Exception as exc:
        answer = error_answer(exc)
        details: dict[str, Any]
        if answer is None:
            logger.exception("portability job %s failed", job.pk)
            code, message, details = "internal_error", f"{type(exc).__name__}: {exc}", {}
        else:
            error = answer.body["error"]
            code, message, details = error["code"], error["message"], error.get("details") or {}
        if answer is not None and answer.status >= 500 and retries_left:
            _end(job, claim, status=Job.Status.QUEUED, error_code=code, error=message[:5000])
            return "retry"
        _end(
            job,
            claim,
            status=Job.Status.FAILED,
            error_code=code,
            error=message[:5000],
            error_details=details,
            finished_at=timezone.now(),
        )
        return "failed"
    _end(
        job,
        claim,
        status=Job.Status.SUCCEEDED,
        progress=1.0,
        error_code="",
        error="",
        error_details={},
        finished_at=timezone.now(),
        **result,
    )
    return "succeeded"
