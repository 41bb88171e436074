"""Cluster maintenance reports (docs/memory/maintenance.md, "Cluster maintenance"): the actor's
account's, newest first. Reports name entry ids of every context they maintained, so the account's
reports are for memory managers and agents whose key has the ``admin`` scope; another agent reads
the reports of the runs it asked for (over contexts it may write)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDay

from core.actors import Actor
from core.errors import NotFound
from memory.models import (
    KnowledgeItem,
    MemoryContext,
    MemoryEntry,
    MemoryMaintenanceReport,
    PendingChange,
    ShortTermEntry,
)
from memory.roles import MANAGE_MEMORY


def reports_for(actor: Actor) -> QuerySet[MemoryMaintenanceReport]:
    """The reports of the accounts where ``actor`` manages memory; an agent whose key lacks
    the ``admin`` scope reads only the reports of the runs it asked for."""
    accounts = actor.accounts_with(MANAGE_MEMORY)
    reports = MemoryMaintenanceReport.objects.filter(account_id__in=list(accounts))
    key = actor.api_key
    if actor.agent is not None and key is not None and not key.has_scope("admin"):
        reports = reports.filter(agent_id=actor.agent.pk)
    return reports.order_by("-created_at", "-id")


def report_get(actor: Actor, report_id: int) -> MemoryMaintenanceReport:
    """One report of the actor's (404 ``report_not_found`` otherwise, foreign or missing
    alike)."""
    report = reports_for(actor).filter(pk=report_id).first()
    if report is None:
        raise NotFound("No such maintenance report.", code="report_not_found")
    return report


def _tiers(account_ids: list[int]) -> dict[str, QuerySet[Any]]:
    """Each tier's rows, for counting what was written when."""
    return {
        "long_term": MemoryEntry.objects.filter(account_id__in=account_ids, version=1, thread=""),
        "conversations": MemoryEntry.objects.filter(account_id__in=account_ids, version=1).exclude(
            thread=""
        ),
        "short_term": ShortTermEntry.objects.filter(account_id__in=account_ids),
        "knowledge": KnowledgeItem.objects.filter(account_id__in=account_ids, version=1),
    }


def memory_growth(account_ids: list[int], *, days: int, now: datetime) -> dict[str, Any]:
    """Memory stored per tier at the end of each of the last ``days`` days (the reports
    page's chart): long-term memories, conversation messages (long-term entries of a
    thread), short-term entries and knowledge items, counted by when their first version was
    written. Rows deleted since (expired short-term entries, deleted memories) are not
    counted: the chart shows how what is stored now accumulated."""
    start = (now - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    labels = [(start + timedelta(days=i)).date().isoformat() for i in range(days)]
    series: dict[str, list[int]] = {}
    for tier, rows in _tiers(account_ids).items():
        total = rows.filter(created_at__lt=start).count()
        per_day = dict.fromkeys(labels, 0)
        counted = (
            rows.filter(created_at__gte=start)
            .annotate(day=TruncDay("created_at"))
            .values("day")
            .annotate(n=Count("id"))
        )
        for row in counted:
            day = row["day"].date().isoformat()
            if day in per_day:
                per_day[day] += row["n"]
        running = []
        for day in labels:
            total += per_day[day]
            running.append(total)
        series[tier] = running
    return {"labels": labels, "series": series}


def last_cluster_sizes(account_ids: list[int]) -> dict[str, object]:
    """The cluster sizes of the latest completed run (dry or real), largest first."""
    report = (
        MemoryMaintenanceReport.objects.filter(
            account_id__in=account_ids, status=MemoryMaintenanceReport.Status.COMPLETED
        )
        .order_by("-created_at", "-id")
        .only("id", "clusters", "dry_run", "created_at")
        .first()
    )
    if report is None:
        return {"report_id": None, "labels": [], "sizes": []}
    clusters = sorted(report.clusters, key=lambda c: -int(c.get("size", 0)))
    names = dict(
        MemoryContext.objects.filter(
            pk__in={c.get("context_id") for c in clusters}, account_id__in=account_ids
        ).values_list("pk", "name")
    )
    return {
        "report_id": report.pk,
        "dry_run": report.dry_run,
        # "Group 3 of Project notes": the group's number in the run, and its context's name.
        "labels": [
            f"Group {number} of {names.get(c.get('context_id'), 'a deleted context')}"
            for number, c in enumerate(clusters, start=1)
        ],
        "sizes": [int(c.get("size", 0)) for c in clusters],
    }


# Age buckets of the pending-changes chart: (label, upper bound in days; None: no bound).
PENDING_AGE_BUCKETS: tuple[tuple[str, int | None], ...] = (
    ("< 1 day", 1),
    ("1-3 days", 3),
    ("3-7 days", 7),
    ("7-14 days", 14),
    (">= 14 days", None),
)


def pending_changes_by_age(account_ids: list[int], *, now: datetime) -> dict[str, Any]:
    """How many changes wait for review in the accounts, by how long they have waited."""
    created = PendingChange.objects.filter(
        account_id__in=account_ids, status=PendingChange.Status.PENDING
    ).values_list("created_at", flat=True)
    counts = [0] * len(PENDING_AGE_BUCKETS)
    for when in created:
        age = now - when
        for index, (_, bound) in enumerate(PENDING_AGE_BUCKETS):
            if bound is None or age < timedelta(days=bound):
                counts[index] += 1
                break
    return {"labels": [label for label, _ in PENDING_AGE_BUCKETS], "counts": counts}
