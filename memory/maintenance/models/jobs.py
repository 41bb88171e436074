"""Cluster maintenance asked for now (the API, the MCP tool, the admin): a job run by a Celery
worker (``memory.maintenance.services.jobs``), never in the web process. Its state machine:

    queued --claim--> running --> completed (report_id)
                        |  \\----> failed (error; report_id when the run had made one)
                        \\--a provider or store down, retries left--> queued

The worker claims a job by compare-and-set (``claim``: the Celery task id), so a message
delivered twice runs the job once; a claim older than the task's time limit may be taken over,
and the recovery job fails what a lost worker left running and re-sends what the broker lost.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q

from core.models import Account, Agent
from core.querysets import AccountScopedQuerySet
from memory.maintenance.models.reports import MemoryMaintenanceReport


class MaintenanceJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    # Who asked: an agent (which reads its own jobs unless its key has the admin scope), or a
    # person or tool (``actor`` names them).
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor = models.CharField(max_length=200, blank=True)
    trigger = models.CharField(max_length=10, choices=MemoryMaintenanceReport.Trigger.choices)
    dry_run = models.BooleanField(default=False)
    # The contexts to maintain, resolved when it was asked for (null: every unarchived context
    # of the account, when the run starts).
    context_ids = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    report = models.ForeignKey(
        MemoryMaintenanceReport, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    error_code = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    claim = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar[AccountScopedQuerySet[MaintenanceJob]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "memory maintenance job"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["status", "created_at"],
                name="memory_maint_job_open",
                condition=Q(status__in=["queued", "running"]),
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "completed", "failed"]),
                name="memory_maint_job_status_valid",
            ),
        ]

    def __str__(self) -> str:
        kind = "dry run" if self.dry_run else "run"
        return f"maintenance {kind} job {self.pk} ({self.get_status_display()})"
