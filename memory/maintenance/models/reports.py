"""Cluster maintenance reports: one row per run of
``memory.maintenance.services.cluster_maintenance`` (docs/memory/maintenance.md, "Cluster
maintenance"), what it found and what it changed, kept as JSON."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models

from core.models import Account, Agent
from core.querysets import AccountScopedQuerySet


class MemoryMaintenanceReport(models.Model):
    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        API = "api", "API"
        ADMIN = "admin", "Admin"
        COMMAND = "command", "Command"
        MCP = "mcp", "MCP tool"

    class Status(models.TextChoices):
        COMPLETED = "completed", "Completed"
        SHORT_CIRCUITED = "short_circuited", "Short-circuited"
        FAILED = "failed", "Failed"

    class ShortCircuit(models.TextChoices):
        REPORT_TODAY = "report_today", "A report for today exists"
        TOO_FEW_NEW = "too_few_new", "Too few memories written since the last report"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    actor = models.CharField(max_length=200, blank=True)
    # The agent that asked for the run (an agent without the admin scope reads only its own).
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    dry_run = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices)
    short_circuit = models.CharField(max_length=12, choices=ShortCircuit.choices, blank=True)
    short_circuit_detail = models.CharField(max_length=300, blank=True)
    # A short-circuited report is updated, not repeated, while the same reason holds.
    checks = models.PositiveIntegerField(default=1)
    context_ids = models.JSONField(default=list, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    rewrite_model = models.CharField(max_length=200, blank=True)
    entries_seen = models.PositiveIntegerField(default=0)
    reembedded = models.PositiveIntegerField(default=0)
    cluster_count = models.PositiveIntegerField(default=0)
    kept_count = models.PositiveIntegerField(default=0)
    replaced_count = models.PositiveIntegerField(default=0)
    skipped_count = models.PositiveIntegerField(default=0)
    # [{context_id, entries, reembedded, reduction, clusters, noise, timings_ms}]
    contexts = models.JSONField(default=list, blank=True)
    # [{context_id, label, size, members, reduction, groups: [{kept, absorbed, ...}]}]
    clusters = models.JSONField(default=list, blank=True)
    # [{context_id, kept, absorbed, cluster, group, method, replacement, statements: [{entry_id,
    # text, start, end, covered_by, carried}], carried, payload, applied}]
    kept = models.JSONField(default=list, blank=True)
    # [{entry_ids, reason, context_id?, cluster?, lost?: [statements], details?}]
    skipped = models.JSONField(default=list, blank=True)
    timings_ms = models.JSONField(default=dict, blank=True)
    params = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar[AccountScopedQuerySet[MemoryMaintenanceReport]] = (
        AccountScopedQuerySet.as_manager()  # type: ignore[assignment]
    )

    class Meta:
        verbose_name = "memory maintenance report"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at"], name="memory_maint_report_recent")
        ]

    def __str__(self) -> str:
        kind = "dry run" if self.dry_run else "run"
        return f"maintenance {kind} {self.pk} ({self.get_status_display()})"

    @property
    def replaced_ids(self) -> list[int]:
        """Every entry absorbed (or, in a dry run, to be absorbed) by a kept one."""
        return [i for item in self.kept for i in item.get("absorbed", [])]

    @property
    def fact_check(self) -> dict[str, Any]:
        """What the fact check did (docs/memory/maintenance.md, "Nothing automatic loses a fact"):
        the statements of absorbed entries checked and carried into kept ones, and the groups
        refused (``would_lose_facts``) with the entries that stayed current and the statements
        that would have been lost."""
        statements = [(item, s) for item in self.kept for s in item.get("statements", [])]
        refused = [s for s in self.skipped if s.get("reason") == "would_lose_facts"]
        return {
            "statements_checked": len(statements),
            "statements_carried": sum(1 for _, s in statements if s.get("carried")),
            "carried": [
                {"kept": item["kept"], "from_entry": s["entry_id"], "text": s["text"]}
                for item, s in statements
                if s.get("carried")
            ],
            "groups_refused": len(refused),
            "stayed_current": sorted({i for s in refused for i in s["entry_ids"]}),
            "refused": [
                {
                    "entry_ids": s["entry_ids"],
                    "lost": s.get("lost") or s.get("details", {}).get("statements", []),
                }
                for s in refused
            ],
        }
