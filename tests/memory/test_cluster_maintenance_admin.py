"""Cluster maintenance in the admin: an operator previews (dry run) and runs it from the
contexts' actions, reads the reports with their charts, and undoes a run; people of another
account see none of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from core import services as core_services
from core.actors import actor_for_agent
from memory.long_term import services as ltm
from memory.models import MaintenanceJob, MemoryEntry, MemoryMaintenanceReport
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory, UserFactory

pytestmark = pytest.mark.django_db

TEXTS = [
    "The billing service deploys every Friday afternoon.",
    "Billing deploys happen on Friday afternoons.",
    "Alice prefers Python for data pipelines.",
]


def person(account: Any, role: str) -> Client:
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=account, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
def test_operators_preview_run_read_and_undo(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = ltm.context_create(actor=actor, name="ops")
    ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput(content=t) for t in TEXTS]
    )
    operator = person(agent_client.agent.account, "operator")
    contexts = reverse("admin:memory_memorycontext_changelist")

    # The action queues a job (a worker runs it; eager here, once the request commits) and
    # links it; the job's page links its report once the run has ended.
    with django_capture_on_commit_callbacks(execute=True):
        preview = operator.post(
            contexts,
            {"action": "preview_cluster_maintenance", "_selected_action": [context.pk]},
            follow=True,
        )
    job = MaintenanceJob.objects.get()
    assert "Cluster maintenance (dry run) of 1 context(s) queued as" in preview.content.decode()
    assert reverse("admin:memory_maintenancejob_change", args=[job.pk]) in preview.content.decode()
    dry = MemoryMaintenanceReport.objects.get()
    assert (dry.dry_run, dry.trigger, dry.kept_count, dry.replaced_count) == (True, "admin", 1, 1)
    assert job.report_id == dry.pk and job.status == "completed"
    job_page = operator.get(reverse("admin:memory_maintenancejob_change", args=[job.pk]))
    assert reverse("admin:memory_memorymaintenancereport_change", args=[dry.pk]) in (
        job_page.content.decode()
    )
    assert MemoryEntry.objects.filter(archived_at__isnull=False).count() == 0

    with django_capture_on_commit_callbacks(execute=True):
        operator.post(
            contexts, {"action": "run_cluster_maintenance", "_selected_action": [context.pk]}
        )
    real = MemoryMaintenanceReport.objects.get(dry_run=False)
    assert real.replaced_count == 1
    assert MemoryEntry.objects.filter(archived_at__isnull=False).count() == 1

    page = operator.get(reverse("admin:memory_memorymaintenancereport_changelist"))
    body = page.content.decode()
    assert page.status_code == 200
    assert "vendor/chart.js/chart.umd.js" in body and 'id="memory-growth-chart"' in body
    assert 'id="cluster-sizes-chart"' in body
    charts = page.context["maintenance_charts"]
    assert charts["growth"]["series"]["long_term"][-1] == 3
    assert charts["clusters"]["report_id"] == real.pk and charts["clusters"]["sizes"] == [2]
    assert 'id="pending-changes-chart"' in body
    assert charts["pending"]["labels"][0] == "< 1 day" and sum(charts["pending"]["counts"]) == 0
    assert finders.find("vendor/chart.js/chart.umd.js") and finders.find(
        "memory/maintenance_charts.js"
    )

    detail = operator.get(reverse("admin:memory_memorymaintenancereport_change", args=[real.pk]))
    assert (
        detail.status_code == 200
        and "clusters (sizes and members)" in detail.content.decode().lower()
    )
    assert 'name="_save"' not in detail.content.decode()
    # The fact check, readable: what was carried into the kept memory (the two deploy texts use
    # other words, so the absorbed one is carried, not dropped).
    text = detail.content.decode()
    assert "fact check (nothing lost)" in text.lower() and "1 carried into the kept memory" in text
    (carried,) = real.fact_check["carried"]
    assert f"carried: {carried['text']}" in text

    operator.post(
        reverse("admin:memory_memorymaintenancereport_changelist"),
        {"action": "undo", "_selected_action": [real.pk]},
    )
    assert MemoryEntry.objects.filter(archived_at__isnull=False).count() == 0
    assert MemoryMaintenanceReport.objects.get(pk=real.pk).undone_at is not None


def test_other_accounts_and_other_roles_see_nothing(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    actor = actor_for_agent(agent_client.agent)
    context = ltm.context_create(actor=actor, name="ops")
    ltm.entries_write(
        actor=actor, context=context, items=[ltm.EntryInput(content=t) for t in TEXTS]
    )
    owner = person(agent_client.agent.account, "owner")
    with django_capture_on_commit_callbacks(execute=True):
        owner.post(
            reverse("admin:memory_memorycontext_changelist"),
            {"action": "run_cluster_maintenance", "_selected_action": [context.pk]},
        )
    report = MemoryMaintenanceReport.objects.get()
    job = MaintenanceJob.objects.get()
    stranger = person(AgentFactory.create().account, "operator")
    assert stranger.get(
        reverse("admin:memory_maintenancejob_change", args=[job.pk])
    ).status_code in (302, 404)
    jobs = stranger.get(reverse("admin:memory_maintenancejob_changelist"))
    assert jobs.status_code == 200 and f"job {job.pk} " not in jobs.content.decode()
    listed = stranger.get(reverse("admin:memory_memorymaintenancereport_changelist"))
    assert (
        listed.status_code == 200 and f"maintenance run {report.pk}" not in listed.content.decode()
    )
    assert json.dumps(listed.context["maintenance_charts"]["clusters"]["sizes"]) == "[]"
    assert stranger.get(
        reverse("admin:memory_memorymaintenancereport_change", args=[report.pk])
    ).status_code in (302, 404)
    reviewer = person(agent_client.agent.account, "reviewer")
    assert (
        reviewer.get(reverse("admin:memory_memorymaintenancereport_changelist")).status_code == 403
    )


def test_pending_changes_are_counted_by_age_in_their_accounts(agent_client: AuthedAgent) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memory.maintenance.selectors.reports import pending_changes_by_age
    from memory.models import PendingChange
    from tests.factories import AgentFactory

    now = timezone.now()
    mine = agent_client.agent.account_id
    theirs = AgentFactory.create().account_id
    for n, (account, days, status) in enumerate(
        [
            (mine, 0.5, "pending"),
            (mine, 2, "pending"),
            (mine, 2.5, "pending"),
            (mine, 20, "pending"),
            (mine, 2, "approved"),  # decided: not waiting
            (theirs, 2, "pending"),  # another account's
        ]
    ):
        change = PendingChange.objects.create(
            account_id=account,
            kind="rot_archive",
            fingerprint=f"f{n}",
            proposed_by="test",
            expires_at=now + timedelta(days=30),
        )
        PendingChange.objects.filter(pk=change.pk).update(
            status=status, created_at=now - timedelta(days=days)
        )
    ages = pending_changes_by_age([mine], now=now)
    assert dict(zip(ages["labels"], ages["counts"], strict=True)) == {
        "< 1 day": 1,
        "1-3 days": 2,
        "3-7 days": 0,
        "7-14 days": 0,
        ">= 14 days": 1,
    }
