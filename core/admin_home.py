"""Core's panels of the admin home (``core.admin_base.home``): an owner's agents, keys about to
expire and usage; an installation operator's failed and late jobs, queue depth, readiness of
each component and storage."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.db.models import Count, Max
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from core import health
from core.actors import OWNER
from core.admin_base.home import INSTALLATION, PANEL_ITEMS, HomeItem, HomePanel, home_panel
from core.models import Agent, ApiKey, AuditEvent, JobRun
from core.queue import queue_lengths, queue_names

# Keys expiring within this many days are shown to owners.
KEY_EXPIRY_WARNING_DAYS = 14
# Usage is counted over the last week.
USAGE_DAYS = 7
# A job still running after this long is late (the longest task limits are an hour).
JOB_LATE_AFTER = timedelta(hours=2)
# A schedule is late when its next run was due more than this long ago.
SCHEDULE_GRACE = timedelta(minutes=15)


def _change_url(obj: object) -> str:
    meta = obj._meta  # type: ignore[attr-defined]
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])  # type: ignore[attr-defined]


def _list_url(app_label: str, model_name: str, query: str = "") -> str:
    url = reverse(f"admin:{app_label}_{model_name}_changelist")
    return f"{url}?{query}" if query else url


@home_panel(OWNER, order=10)
def agents_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    agents = Agent.objects.filter(account_id__in=accounts).annotate(
        last_used=Max("api_keys__last_used_at")
    )
    shown = agents.order_by("-last_used", "name")[:PANEL_ITEMS]
    return HomePanel(
        title="Agents",
        count=agents.count(),
        items=[
            HomeItem(
                label=agent.name,
                url=_change_url(agent),
                note=f"last call {timezone.localtime(agent.last_used):%Y-%m-%d %H:%M}"
                if agent.last_used
                else "no call yet",
            )
            for agent in shown
        ],
        more_url=_list_url("core", "agent"),
        empty="No agent yet: add one, then give it an API key.",
    )


@home_panel(OWNER, order=20)
def expiring_keys_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    now = timezone.now()
    keys = ApiKey.objects.filter(
        agent__account_id__in=accounts,
        revoked_at__isnull=True,
        expires_at__gt=now,
        expires_at__lte=now + timedelta(days=KEY_EXPIRY_WARNING_DAYS),
    ).select_related("agent")
    return HomePanel(
        title=f"Keys expiring within {KEY_EXPIRY_WARNING_DAYS} days",
        count=keys.count(),
        items=[
            HomeItem(
                label=f"{key.agent.name}: {key.name or key.prefix}",
                url=_change_url(key),
                note=f"expires {timezone.localtime(key.expires_at):%Y-%m-%d %H:%M}",
                status="warning",
            )
            for key in keys.order_by("expires_at", "pk")[:PANEL_ITEMS]
        ],
        more_url=_list_url("core", "apikey"),
        empty="No key expires soon.",
    )


@home_panel(OWNER, order=30)
def usage_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    since = timezone.now() - timedelta(days=USAGE_DAYS)
    events = AuditEvent.objects.filter(account_id__in=accounts, created_at__gte=since)
    by_action = events.values("action").annotate(n=Count("id")).order_by("-n", "action")
    active_keys = ApiKey.objects.filter(
        agent__account_id__in=accounts, last_used_at__gte=since
    ).count()
    items = [HomeItem(label=f"{active_keys} API keys called Engram")]
    items += [
        HomeItem(label=f"{row['action']}: {row['n']}") for row in by_action[: PANEL_ITEMS - 1]
    ]
    return HomePanel(
        title=f"Usage, last {USAGE_DAYS} days",
        count=events.count(),
        items=items,
        more_url=_list_url("core", "auditevent"),
    )


@home_panel(INSTALLATION, order=10)
def failed_jobs_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    since = timezone.now() - timedelta(days=USAGE_DAYS)
    failed = JobRun.objects.filter(status=JobRun.Status.FAILED, started_at__gte=since)
    return HomePanel(
        title=f"Failed jobs, last {USAGE_DAYS} days",
        count=failed.count(),
        items=[
            HomeItem(
                label=run.job,
                url=_change_url(run),
                note=run.error[:120],
                since=run.started_at,
                status="error",
            )
            for run in failed.order_by("-started_at")[:PANEL_ITEMS]
        ],
        more_url=_list_url("core", "jobrun", "status__exact=failed"),
        empty="No job failed.",
    )


def late_schedules() -> list[tuple[PeriodicTask, timedelta]]:
    """Enabled schedules whose next run was due more than ``SCHEDULE_GRACE`` ago (the beat
    is down, or busy), with how late; a schedule that never ran is not late yet."""
    late = []
    for task in PeriodicTask.objects.filter(enabled=True, last_run_at__isnull=False).select_related(
        "interval", "crontab", "solar", "clocked"
    ):
        if task.clocked_id:
            continue  # a one-off time: it ran, or it is still ahead
        remaining = task.schedule.remaining_estimate(task.last_run_at)
        if remaining < -SCHEDULE_GRACE:
            late.append((task, -remaining))
    return sorted(late, key=lambda pair: -pair[1])


@home_panel(INSTALLATION, order=20)
def late_jobs_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    now = timezone.now()
    stuck = JobRun.objects.filter(status=JobRun.Status.RUNNING, started_at__lt=now - JOB_LATE_AFTER)
    items = [
        HomeItem(
            label=run.job,
            url=_change_url(run),
            note="still running",
            since=run.started_at,
            status="warning",
        )
        for run in stuck.order_by("started_at")[:PANEL_ITEMS]
    ]
    late = late_schedules()
    items += [
        HomeItem(
            label=task.name,
            url=_change_url(task),
            note=f"due {int(delay.total_seconds() // 60)} minutes ago",
            since=task.last_run_at,
            status="warning",
        )
        for task, delay in late[: max(0, PANEL_ITEMS - len(items))]
    ]
    return HomePanel(
        title="Late jobs and schedules",
        count=stuck.count() + len(late),
        items=items,
        more_url=_list_url("django_celery_beat", "periodictask"),
        empty="Every schedule ran on time.",
    )


def queue_depths() -> dict[str, int | None]:
    """Messages waiting in each queue Celery sends to (None: the broker did not answer)."""
    try:
        return dict(queue_lengths())
    except Exception:  # a panel reports an unreachable broker, it never raises
        return dict.fromkeys(queue_names())


@home_panel(INSTALLATION, order=30)
def queues_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    depths = queue_depths()
    return HomePanel(
        title="Queues",
        items=[
            HomeItem(
                label=name,
                note="the broker did not answer" if depth is None else f"{depth} waiting",
                status="error" if depth is None else "ok",
            )
            for name, depth in depths.items()
        ],
    )


@home_panel(INSTALLATION, order=40)
def readiness_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    components = health.readiness()
    return HomePanel(
        title="Readiness (/readyz)",
        items=[
            HomeItem(
                label=name,
                note=str(result.get("error") or f"{result['ms']} ms"),
                status="ok" if result["ok"] else "error",
            )
            for name, result in components.items()
        ],
    )


@home_panel(INSTALLATION, order=50)
def storage_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        total = cursor.fetchone()[0]
        cursor.execute(
            """
            SELECT c.relname, pg_total_relation_size(c.oid)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND n.nspname = current_schema()
            ORDER BY 2 DESC LIMIT %s
            """,
            [PANEL_ITEMS - 1],
        )
        tables = cursor.fetchall()
    items = [HomeItem(label=f"Database: {_size(total)}")]
    items += [HomeItem(label=f"{name}: {_size(size)}") for name, size in tables]
    return HomePanel(title="Storage", items=items)


def _size(size: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} TB"  # pragma: no cover
