"""The scheduled cluster maintenance's short-circuits (seed 004): a run stops before it starts
when a real report exists for today, or fewer than MEMORY_MAINTENANCE_MIN_NEW_MEMORIES memories
were written since the last one; both rules are settings. A short-circuited check updates the
previous skip report while the same reason holds, instead of adding a row every 30 minutes."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.utils import timezone

from memory.models import MemoryEntry, MemoryMaintenanceReport

Report = MemoryMaintenanceReport


def short_circuit_reason(account_id: int, context_ids: Sequence[int]) -> tuple[str, str] | None:
    """Why a scheduled run should stop before it starts, or None. Only real (not dry,
    completed) runs count as reports."""
    last = (
        Report.objects.filter(account_id=account_id, status=Report.Status.COMPLETED, dry_run=False)
        .order_by("-created_at", "-id")
        .first()
    )
    now = timezone.now()
    if (
        settings.MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY
        and last is not None
        and last.created_at.date() == now.date()
    ):
        return Report.ShortCircuit.REPORT_TODAY, f"report {last.pk} ran today"
    minimum = settings.MEMORY_MAINTENANCE_MIN_NEW_MEMORIES
    if minimum:
        written = MemoryEntry.objects.filter(
            account_id=account_id, context_id__in=list(context_ids), version=1, thread=""
        )
        if last is not None:
            written = written.filter(created_at__gt=last.created_at)
        count = written.count()
        if count < minimum:
            since = f"report {last.pk}" if last is not None else "the start"
            return (
                Report.ShortCircuit.TOO_FEW_NEW,
                f"{count} memories written since {since}, fewer than {minimum}",
            )
    return None


def short_circuited(
    account_id: int, reason: tuple[str, str], context_ids: list[int], trigger: str, actor: str
) -> Report:
    """The short-circuited report: the latest one updated while the same reason holds."""
    latest = Report.objects.filter(account_id=account_id).order_by("-created_at", "-id").first()
    now = timezone.now()
    if (
        latest is not None
        and latest.status == Report.Status.SHORT_CIRCUITED
        and latest.short_circuit == reason[0]
        and latest.context_ids == context_ids
    ):
        Report.objects.filter(pk=latest.pk).update(
            checks=latest.checks + 1, short_circuit_detail=reason[1], finished_at=now
        )
        latest.refresh_from_db()
        return latest
    return Report.objects.create(
        account_id=account_id,
        trigger=trigger,
        actor=actor[:200],
        status=Report.Status.SHORT_CIRCUITED,
        short_circuit=reason[0],
        short_circuit_detail=reason[1][:300],
        context_ids=context_ids,
        finished_at=now,
    )
