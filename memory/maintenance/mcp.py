"""Cluster maintenance as jobs of ``memory_consolidate`` (docs/mcp.md): ``action: maintenance``
queues a run (``POST /api/v1/memory/maintenance``: a Celery job, never run in the web process)
and answers the job's id and status URL; ``action: maintenance_status`` reads a job (``GET
/api/v1/memory/maintenance/jobs/{id}``). The same service calls and answers as the API views
(URLs as paths: a tool call has no host to make them absolute with)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from core import serializers as strict
from core.mcp import Call
from core.mcp.registry import Job
from memory.maintenance.apis.reports import (
    MaintenanceJobOutput,
    MaintenanceQueuedOutput,
    MaintenanceRunApi,
)
from memory.maintenance.services import jobs as maintenance_jobs
from memory.models import MemoryMaintenanceReport


class StatusInput(strict.InputSerializer):
    job_id = strict.IdField(help_text="The job_id action maintenance answered, e.g. 31.")


def _queue(call: Call) -> dict[str, Any]:
    job = maintenance_jobs.maintenance_job_enqueue(
        actor=call.actor,
        trigger=MemoryMaintenanceReport.Trigger.MCP,
        dry_run=call.data["dry_run"],
        context_ids=call.data.get("context_ids"),
    )
    url = reverse("v1:memory:memory-maintenance-job", args=[job.pk])
    return dict(MaintenanceQueuedOutput({"job_id": job.pk, "status_url": url}).data)


def _status(call: Call) -> dict[str, Any]:
    job = maintenance_jobs.maintenance_job_get(call.actor, call.data["job_id"])
    return dict(MaintenanceJobOutput(job).data)


def _status_summary(out: Any) -> str:
    if out["status"] == "failed":
        return f"Job {out['job_id']} failed: {out['error']['code']}."
    if out["report_id"] is None:
        return f"Job {out['job_id']} is {out['status']}."
    return f"Job {out['job_id']} {out['status']}: report {out['report_id']}."


MAINTENANCE = Job(
    value="maintenance",
    description="queue cluster maintenance of long-term memories (of context_ids, or every "
    "context you may write; of the account with an admin key): near-duplicates are merged "
    "into one, the others archived; dry_run plans only. Runs in the background: answers "
    "job_id at once (POST /memory/maintenance)",
    scope="write",
    rest="POST /api/v1/memory/maintenance",
    input=MaintenanceRunApi.InputSerializer,
    output=MaintenanceQueuedOutput,
    run=_queue,
    summary=lambda out: f"Maintenance job {out['job_id']} queued.",
    hints={
        "dry_run": "Plan without changing anything (default false).",
        "context_ids": "action maintenance: memory contexts to maintain, e.g. [12] (default: "
        "every context you may write).",
    },
)

MAINTENANCE_STATUS = Job(
    value="maintenance_status",
    description="a maintenance job's status (queued, running, completed, failed with error) "
    "and, once ended, its report's id (GET /memory/maintenance/jobs/{job_id})",
    scope="read",
    rest="GET /api/v1/memory/maintenance/jobs/{job_id}",
    input=StatusInput,
    output=MaintenanceJobOutput,
    run=_status,
    summary=_status_summary,
)
