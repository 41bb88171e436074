"""Cluster maintenance as MCP tools (docs/mcp.md), thin over the same services as the API:
``memory_maintenance`` queues a run (``POST /api/v1/memory/maintenance``: a Celery job, never
run in the web process) and answers the job's id and status; ``memory_maintenance_status``
reads a job (``GET /api/v1/memory/maintenance/jobs/{id}``) with its report once it has ended."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from core import serializers as strict
from core.mcp import Call, Tool
from memory.apis.maintenance_reports import MaintenanceJobOutput, MaintenanceRunApi, ReportOutput
from memory.models import MaintenanceJob, MemoryMaintenanceReport
from memory.services import maintenance_jobs


class QueuedOutput(serializers.Serializer):
    job_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=MaintenanceJob.Status.choices)
    status_url = serializers.CharField(help_text="The job's status in the REST API.")


class StatusInput(strict.InputSerializer):
    job_id = strict.IdField(help_text="The job_id memory_maintenance answered.")


class StatusOutput(MaintenanceJobOutput):
    report = ReportOutput(
        allow_null=True,
        help_text="The run's report once the job has ended (what was kept, merged, skipped).",
    )


def _queue(call: Call) -> dict[str, Any]:
    job = maintenance_jobs.maintenance_job_enqueue(
        actor=call.actor,
        trigger=MemoryMaintenanceReport.Trigger.MCP,
        dry_run=call.data["dry_run"],
        context_ids=call.data.get("context_ids"),
    )
    return {
        "job_id": job.pk,
        "status": job.status,
        "status_url": reverse("v1:memory:memory-maintenance-job", args=[job.pk]),
    }


def _status(call: Call) -> dict[str, Any]:
    job = maintenance_jobs.maintenance_job_get(call.actor, call.data["job_id"])
    out = dict(MaintenanceJobOutput(job).data)
    ended = job.status in (MaintenanceJob.Status.COMPLETED, MaintenanceJob.Status.FAILED)
    report = job.report if ended and job.report_id is not None else None
    out["report"] = dict(ReportOutput(report).data) if report is not None else None
    return out


def _status_summary(out: Any) -> str:
    if out["status"] == "failed":
        return f"Job {out['job_id']} failed: {out['error']['code']}."
    if out["report"] is None:
        return f"Job {out['job_id']} is {out['status']}."
    report = out["report"]
    kind = "Dry run" if report["dry_run"] else "Run"
    return (
        f"Job {out['job_id']} completed. {kind} {report['id']}: {report['cluster_count']} "
        f"clusters; kept {report['kept_count']} memories absorbing {report['replaced_count']}; "
        f"skipped {report['skipped_count']}."
    )


TOOLS = (
    Tool(
        name="memory_maintenance",
        title="Merge near-duplicate memories",
        description=(
            "Queue cluster maintenance of long-term memories (those of `context_ids`, or every "
            "context: of the account with an admin key, that you may write otherwise): groups "
            "of near-duplicates are rewritten into one, the others archived (still readable as "
            "versions). `dry_run` plans without changing anything. It runs in the background "
            "(it may take minutes): this answers the job's `job_id` and `status` at once; call "
            "memory_maintenance_status with the job_id to learn when it has ended and read its "
            "report."
        ),
        scope="write",
        input=MaintenanceRunApi.InputSerializer,
        output=QueuedOutput,
        run=_queue,
        summary=lambda out: f"Maintenance job {out['job_id']} is {out['status']}.",
    ),
    Tool(
        name="memory_maintenance_status",
        title="Maintenance job status",
        description=(
            "The status of a job memory_maintenance queued: queued, running, completed or "
            "failed (with the error); once it has ended, its report (clusters found, memories "
            "kept and merged, what was skipped and why)."
        ),
        scope="read",
        input=StatusInput,
        output=StatusOutput,
        run=_status,
        summary=_status_summary,
    ),
)
