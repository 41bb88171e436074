"""Memory's panels of the admin home (``core.admin_base.home``): the memory changes waiting
for a decision (reviewers see them, operators decide them), the last maintenance report and how
memory grew this week."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from core.actors import OPERATOR, REVIEWER
from core.admin_base import request_actor
from core.admin_base.home import PANEL_ITEMS, HomeItem, HomePanel, home_panel
from memory.maintenance.selectors.reports import memory_growth
from memory.models import MemoryMaintenanceReport, PendingChange
from memory.roles import MANAGE_MEMORY

GROWTH_DAYS = 7
TIER_NAMES = {
    "long_term": "Long-term memories",
    "conversations": "Conversation messages",
    "short_term": "Short-term memories",
    "knowledge": "Knowledge items",
}


@home_panel(REVIEWER, order=20)
@home_panel(OPERATOR, order=10)
def changes_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    actor = request_actor(request)
    deciding = {a for a in accounts if actor.is_superuser or actor.has_role(a, MANAGE_MEMORY)}
    waiting = PendingChange.objects.filter(
        account_id__in=accounts, status=PendingChange.Status.PENDING
    ).select_related("context", "pool")
    listing = reverse("admin:memory_pendingchange_changelist") + "?status__exact=pending"
    items = []
    for change in waiting.order_by("created_at", "id")[:PANEL_ITEMS]:
        place = change.context or change.pool
        may_decide = change.account_id in deciding
        items.append(
            HomeItem(
                label=f"{change.kind}" + (f" in {place}" if place else ""),
                url=reverse("admin:memory_pendingchange_change", args=[change.pk])
                if may_decide
                else "",
                note=(change.reason[:120] or "")
                + ("" if may_decide else " (decided by the account's operators)"),
                since=change.created_at,
            )
        )
    return HomePanel(
        title="Memory changes waiting",
        count=waiting.count(),
        items=items,
        more_url=listing if deciding else "",
        empty="No memory change waits for a decision.",
    )


@home_panel(OPERATOR, order=30)
def maintenance_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    reports = MemoryMaintenanceReport.objects.filter(account_id__in=accounts)
    latest = reports.order_by("-created_at", "-id").first()
    items = []
    if latest is not None:
        status = {"completed": "ok", "short_circuited": "ok", "failed": "error"}.get(
            latest.status, ""
        )
        what = latest.get_status_display()
        if latest.status == MemoryMaintenanceReport.Status.COMPLETED:
            what += (
                f": {latest.cluster_count} groups, {latest.replaced_count} memories merged into "
                f"{latest.kept_count}" + (" (dry run: nothing changed)" if latest.dry_run else "")
            )
        elif latest.short_circuit:
            what += f": {latest.get_short_circuit_display()}"
        items.append(
            HomeItem(
                label=what,
                url=reverse("admin:memory_memorymaintenancereport_change", args=[latest.pk]),
                note=f"run by {latest.get_trigger_display().lower()}",
                since=latest.created_at,
                status=status,
            )
        )
    return HomePanel(
        title="Last memory maintenance",
        count=None,
        items=items,
        more_url=reverse("admin:memory_memorymaintenancereport_changelist"),
        empty="No maintenance has run yet.",
    )


@home_panel(OPERATOR, order=40)
def growth_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    growth = memory_growth(sorted(accounts), days=GROWTH_DAYS, now=timezone.now())
    first = growth["labels"][0]
    items = []
    for tier, running in growth["series"].items():
        added = running[-1] - running[0]
        items.append(
            HomeItem(
                label=f"{TIER_NAMES.get(tier, tier)}: {running[-1]}",
                note=f"+{added} since {first}",
            )
        )
    return HomePanel(title=f"Memory stored, last {GROWTH_DAYS} days", items=items)
