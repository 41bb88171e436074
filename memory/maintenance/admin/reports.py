"""Cluster maintenance reports in the admin (docs/admin.md, "Memory maintenance"): read-only
reports with their clusters, what was kept, replaced and skipped; the list page draws memory
growth per tier and the latest run's cluster sizes (Chart.js, vendored under
``core/static/vendor/chart.js``). Operators (and owners) undo a run through an action; runs
start from the long-term memory contexts' actions (with a dry run), as jobs a worker runs: their
page (read-only) says where each stands and links its report once the run has ended."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from core.admin_base import AccountScopedAdmin
from memory.maintenance.selectors import reports as selectors
from memory.maintenance.services import cluster_rewrite
from memory.models import MaintenanceJob, MemoryMaintenanceReport
from memory.roles import MANAGE_MEMORY

GROWTH_DAYS = 30


def _pretty(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return format_html('<pre style="max-height: 30rem; overflow: auto">{}</pre>', text)


class RunKindMixin:
    """A run's dry-run flag in words: a real run is not a failure, and Django's boolean icons
    (a red cross for "no") made it look like one."""

    @admin.display(description="run", ordering="dry_run")
    def run_kind(self, obj: Any) -> str:
        return "Dry run (nothing changed)" if obj.dry_run else "Real run"


@admin.register(MemoryMaintenanceReport)
class MemoryMaintenanceReportAdmin(RunKindMixin, AccountScopedAdmin):
    view_roles = change_roles = MANAGE_MEMORY
    change_list_template = "admin/memory/memorymaintenancereport/change_list.html"
    list_display = [
        "__str__",
        "account",
        "status",
        "run_kind",
        "trigger",
        "cluster_count",
        "kept_count",
        "replaced_count",
        "skipped_count",
        "short_circuit",
        "undone_at",
        "created_at",
    ]
    list_filter = ["status", "dry_run", "trigger", "account"]
    list_select_related = ["account"]
    list_defer = ("clusters", "kept", "skipped", "contexts", "params")
    actions = ["undo"]
    _summary = (
        "account",
        "trigger",
        "actor",
        "run_kind",
        "status",
        "short_circuit",
        "short_circuit_detail",
        "checks",
        "context_ids",
        "embedding_model",
        "rewrite_model",
        "entries_seen",
        "reembedded",
        "cluster_count",
        "kept_count",
        "replaced_count",
        "skipped_count",
        "error",
        "undone_at",
        "undone_by",
        "created_at",
        "finished_at",
    )
    _details = (
        "facts",
        "timings",
        "parameters",
        "per_context",
        "clusters_found",
        "kept_groups",
        "skips",
    )
    fields = readonly_fields = (*_summary, *_details)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing to edit; the permission only guards the undo action.
        return obj is None and super().has_change_permission(request, obj)

    @admin.display(description="fact check (nothing lost)")
    def facts(self, obj: MemoryMaintenanceReport) -> str:
        """Per group: the statements carried into the kept memory; per refused group: the
        memories that stayed current and the statements the rewrite would have lost."""
        check = obj.fact_check
        carried = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>carried: {}</td></tr>",
            ((c["kept"], c["from_entry"], c["text"]) for c in check["carried"]),
        )
        refused = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>would be lost: {}</td></tr>",
            (
                (
                    ", ".join(map(str, r["entry_ids"])) + " (stayed current)",
                    ", ".join(str(s.get("entry_id")) for s in r["lost"]),
                    "; ".join(str(s.get("text")) for s in r["lost"]),
                )
                for r in check["refused"]
            ),
        )
        return format_html(
            "<p>{} statements of absorbed memories checked, {} carried into the kept memory, "
            "{} groups refused (would_lose_facts).</p>"
            "<table><tr><th>kept / group</th><th>from memory</th><th>statement</th></tr>"
            "{}{}</table>",
            check["statements_checked"],
            check["statements_carried"],
            check["groups_refused"],
            carried,
            refused,
        )

    @admin.display(description="timings (ms)")
    def timings(self, obj: MemoryMaintenanceReport) -> str:
        return _pretty(obj.timings_ms)

    @admin.display(description="parameters")
    def parameters(self, obj: MemoryMaintenanceReport) -> str:
        return _pretty(obj.params)

    @admin.display(description="contexts")
    def per_context(self, obj: MemoryMaintenanceReport) -> str:
        return _pretty(obj.contexts)

    @admin.display(description="clusters (sizes and members)")
    def clusters_found(self, obj: MemoryMaintenanceReport) -> str:
        return _pretty(obj.clusters)

    @admin.display(description="kept (with what each absorbed)")
    def kept_groups(self, obj: MemoryMaintenanceReport) -> str:
        return _pretty([{k: v for k, v in item.items() if k != "payload"} for item in obj.kept])

    @admin.display(description="skipped (with reasons)")
    def skips(self, obj: MemoryMaintenanceReport) -> str:
        return _pretty(obj.skipped)

    @admin.action(
        description="Undo the selected runs (absorbed memories come back)",
        permissions=["change"],
    )
    def undo(self, request: HttpRequest, queryset: QuerySet[MemoryMaintenanceReport]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            MemoryMaintenanceReport.objects.filter(pk__in=queryset.values("pk")),
            lambda report: cluster_rewrite.maintenance_report_undo(actor=actor, report=report),
            "Undid",
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        accounts = sorted(self.actor(request).accounts_with(self.view_roles))
        charts = {
            "growth": selectors.memory_growth(accounts, days=GROWTH_DAYS, now=timezone.now()),
            "clusters": selectors.last_cluster_sizes(accounts),
            "pending": selectors.pending_changes_by_age(accounts, now=timezone.now()),
        }
        return super().changelist_view(
            request, {**(extra_context or {}), "maintenance_charts": charts}
        )


@admin.register(MaintenanceJob)
class MaintenanceJobAdmin(RunKindMixin, AccountScopedAdmin):
    """Read-only: runs asked for through the API, MCP or the admin, queued for a worker
    (``memory.maintenance.services.jobs``)."""

    view_roles = MANAGE_MEMORY
    list_display = [
        "__str__",
        "account",
        "status",
        "run_kind",
        "trigger",
        "actor",
        "report_link",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "dry_run", "trigger", "account"]
    list_select_related = ["account"]
    fields = readonly_fields = (
        "account",
        "status",
        "report_link",
        "error_code",
        "error",
        "trigger",
        "actor",
        "agent",
        "run_kind",
        "context_ids",
        "attempts",
        "created_at",
        "started_at",
        "finished_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="report")
    def report_link(self, obj: MaintenanceJob) -> str:
        ended = obj.status in (MaintenanceJob.Status.COMPLETED, MaintenanceJob.Status.FAILED)
        if obj.report_id is None or not ended:
            return "-"
        url = reverse("admin:memory_memorymaintenancereport_change", args=[obj.report_id])
        return format_html('<a href="{}">report {}</a>', url, obj.report_id)
