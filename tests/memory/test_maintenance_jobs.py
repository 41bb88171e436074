"""Cluster maintenance asked for now is a Celery job, never run in the web process: 202 with the
job's id and status URL; the status goes queued -> running -> completed (with the report) or
failed (with the error); a job runs once however often its message arrives; another account's
job answers exactly like a missing one; the MCP tools and the admin queue jobs too; numba's
compilation is cached in the data directory."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from core import services as core_services
from core.actors import actor_for_agent
from memory.maintenance.services import cluster_maintenance
from memory.maintenance.services import jobs as maintenance_jobs
from memory.models import MaintenanceJob, MemoryEntry, MemoryMaintenanceReport
from tests.conftest import AuthedAgent
from tests.factories import UserFactory
from tests.memory.conftest import code
from tests.memory.test_cluster_maintenance_api import GROUPS, post, written
from tests.support.mcp import error_code, tool_call

pytestmark = pytest.mark.django_db

BASE = "/api/v1/memory"


@pytest.fixture
def admin_client(make_agent_client: Callable[..., AuthedAgent]) -> AuthedAgent:
    return make_agent_client(scopes=("read", "write", "admin"))


def status(authed: AuthedAgent, job_id: int) -> Any:
    return authed.client.get(f"{BASE}/maintenance/jobs/{job_id}")


@pytest.mark.real_embeddings  # similarity by meaning (failed on the stand-in)
def test_the_request_only_queues_the_run(
    admin_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    context, _, _ = written(admin_client)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        queued = post(admin_client, "maintenance", {"context_ids": [context]})
    assert queued.status_code == 202, queued.json()
    job_id = queued.json()["job_id"]
    assert queued.json()["status_url"] == f"http://testserver{BASE}/maintenance/jobs/{job_id}"
    # Nothing ran in the request: no report, nothing archived; the task waits for the commit.
    assert len(sent) == 1
    assert not MemoryMaintenanceReport.objects.exists()
    assert not MemoryEntry.objects.filter(archived_at__isnull=False).exists()
    job = status(admin_client, job_id).json()
    assert (job["status"], job["report_id"], job["report_url"], job["error"]) == (
        "queued",
        None,
        None,
        None,
    )
    assert (job["dry_run"], job["context_ids"], job["trigger"]) == (False, [context], "api")
    # The same request while it waits answers the same job.
    with django_capture_on_commit_callbacks(execute=False) as again:
        same = post(admin_client, "maintenance", {"context_ids": [context]})
    assert same.status_code == 202 and same.json()["job_id"] == job_id and not again
    # The worker runs it.
    sent[0]()
    job = status(admin_client, job_id).json()
    assert job["status"] == "completed" and job["attempts"] == 1
    report = MemoryMaintenanceReport.objects.get(pk=job["report_id"])
    assert report.replaced_count == sum(len(g) - 1 for g in GROUPS)
    assert job["started_at"] and job["finished_at"]


def test_a_job_runs_once_however_often_its_message_arrives(admin_client: AuthedAgent) -> None:
    written(admin_client)
    job = maintenance_jobs.maintenance_job_enqueue(
        actor=actor_for_agent(admin_client.agent, admin_client.key), trigger="api"
    )
    assert maintenance_jobs.maintenance_job_run(job_id=job.pk, claim="t1", retries_left=True) == (
        "completed"
    )
    for claim in ("t1", "t2"):  # redelivered, or sent again by the recovery job
        assert (
            maintenance_jobs.maintenance_job_run(job_id=job.pk, claim=claim, retries_left=True)
            == "skipped"
        )
    assert MemoryMaintenanceReport.objects.count() == 1
    # A live run holds its claim; a claim older than the task's time limit is taken over.
    other = MaintenanceJob.objects.create(
        account=admin_client.agent.account,
        trigger="api",
        status=MaintenanceJob.Status.RUNNING,
        claim="live",
        started_at=timezone.now(),
    )
    assert maintenance_jobs.maintenance_job_run(job_id=other.pk, claim="t3", retries_left=True) == (
        "skipped"
    )
    MaintenanceJob.objects.filter(pk=other.pk).update(
        started_at=timezone.now() - maintenance_jobs.STALE_AFTER - timedelta(seconds=1)
    )
    assert maintenance_jobs.maintenance_job_run(job_id=other.pk, claim="t3", retries_left=True) == (
        "completed"
    )


def test_a_provider_down_puts_the_job_back_then_fails_it_visibly(
    admin_client: AuthedAgent,
    embeddings_down: Callable[[], None],
    django_capture_on_commit_callbacks: Any,
) -> None:
    written(admin_client)
    embeddings_down()  # every entry now lacks a vector of the configured model
    job = maintenance_jobs.maintenance_job_enqueue(
        actor=actor_for_agent(admin_client.agent, admin_client.key), trigger="api"
    )
    # While the task has retries left, the job goes back to the queue, saying why.
    assert maintenance_jobs.maintenance_job_run(job_id=job.pk, claim="t", retries_left=True) == (
        "retry"
    )
    answer = status(admin_client, job.pk).json()
    assert answer["status"] == "queued" and answer["error"] is None
    assert MaintenanceJob.objects.get(pk=job.pk).error_code == "provider_unavailable"
    assert maintenance_jobs.maintenance_job_run(job_id=job.pk, claim="t", retries_left=False) == (
        "failed"
    )
    answer = status(admin_client, job.pk).json()
    assert answer["status"] == "failed" and answer["attempts"] == 2
    assert answer["error"]["code"] == "provider_unavailable"
    # The report of the last attempt says so too.
    report = admin_client.client.get(f"{BASE}/maintenance/reports/{answer['report_id']}").json()
    assert report["status"] == "failed" and report["error"]
    assert not MemoryEntry.objects.filter(archived_at__isnull=False).exists()
    # Through the API and the task (eager here: no queue to go back to), it fails at once.
    with django_capture_on_commit_callbacks(execute=True):
        queued = post(admin_client, "maintenance", {"dry_run": True})
    answer = status(admin_client, queued.json()["job_id"]).json()
    assert answer["status"] == "failed" and answer["error"]["code"] == "provider_unavailable"


def test_an_unexpected_error_fails_the_job_with_internal_error(
    admin_client: AuthedAgent,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    written(admin_client)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cluster_maintenance.clustering, "cluster", boom)
    with django_capture_on_commit_callbacks(execute=True):
        queued = post(admin_client, "maintenance", {})
    job = status(admin_client, queued.json()["job_id"]).json()
    assert job["status"] == "failed" and job["attempts"] == 1  # not retried: a bug stays a bug
    assert job["error"] == {"code": "internal_error", "message": "RuntimeError: a bug"}


def test_jobs_answer_their_own_callers_only(
    admin_client: AuthedAgent,
    agent_client: AuthedAgent,
    make_agent_client: Callable[..., AuthedAgent],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Another account's job answers exactly like a missing one; a write key reads the jobs
    it asked for; an admin key of the account reads them all."""
    written(agent_client)
    with django_capture_on_commit_callbacks(execute=True):
        mine = post(agent_client, "maintenance", {"dry_run": True}).json()["job_id"]
        theirs = post(admin_client, "maintenance", {"dry_run": True}).json()["job_id"]
    foreign, missing = status(agent_client, theirs), status(agent_client, 987_654_321)
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert code(foreign) == "maintenance_job_not_found"
    teammate = make_agent_client(account=agent_client.agent.account)
    assert status(teammate, mine).status_code == 404
    admin = make_agent_client(scopes=("read", "write", "admin"), account=agent_client.agent.account)
    assert status(admin, mine).json()["status"] == "completed"
    # A read key may follow its own jobs (a GET), not queue one.
    reader = make_agent_client(scopes=("read",), account=agent_client.agent.account)
    refused = post(reader, "maintenance", {})
    assert refused.status_code == 403 and code(refused) == "insufficient_scope"


def test_recovery_resends_lost_messages_and_fails_lost_workers(
    admin_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    written(admin_client)
    account = admin_client.agent.account
    old = timezone.now() - timedelta(hours=1)
    lost_message = MaintenanceJob.objects.create(account=account, trigger="api", dry_run=True)
    lost_worker = MaintenanceJob.objects.create(
        account=account, trigger="api", status="running", claim="gone", started_at=old
    )
    fresh = MaintenanceJob.objects.create(account=account, trigger="api", dry_run=True)
    MaintenanceJob.objects.filter(pk__in=[lost_message.pk, lost_worker.pk]).update(created_at=old)
    MaintenanceJob.objects.filter(pk=lost_worker.pk).update(
        started_at=timezone.now() - maintenance_jobs.STALE_AFTER - timedelta(minutes=1)
    )
    assert maintenance_jobs.maintenance_jobs_recover(dry_run=True) == {"resent": 1, "failed": 1}
    with django_capture_on_commit_callbacks(execute=True):
        assert maintenance_jobs.maintenance_jobs_recover() == {"resent": 1, "failed": 1}
    states = dict(MaintenanceJob.objects.values_list("pk", "status"))
    assert states == {lost_message.pk: "completed", lost_worker.pk: "failed", fresh.pk: "queued"}
    assert MaintenanceJob.objects.get(pk=lost_worker.pk).error_code == "worker_lost"


def test_the_mcp_tools_queue_and_follow_a_job(
    admin_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    written(admin_client)
    with django_capture_on_commit_callbacks(execute=True):
        queued = tool_call(
            admin_client.secret, "memory_consolidate", {"action": "maintenance", "dry_run": True}
        )
    assert not queued["isError"], queued
    out = queued["structuredContent"]
    assert set(out) == {"job_id", "status_url"}  # what POST /memory/maintenance answers
    assert out["status_url"].endswith(f"/jobs/{out['job_id']}")
    followed = tool_call(
        admin_client.secret,
        "memory_consolidate",
        {"action": "maintenance_status", "job_id": out["job_id"]},
    )
    result = followed["structuredContent"]
    assert result["status"] == "completed" and result["report_id"] is not None
    assert result["report_url"].endswith(f"/reports/{result['report_id']}")
    assert result["context_ids"] is None and result["dry_run"]  # every context, as asked
    assert followed["content"][0]["text"].startswith(f"Job {out['job_id']} completed")
    missing = tool_call(
        admin_client.secret,
        "memory_consolidate",
        {"action": "maintenance_status", "job_id": 987654321},
    )
    assert error_code(missing) == "maintenance_job_not_found"


def test_the_admin_queues_a_job_and_links_it(
    admin_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    context, _, _ = written(admin_client)
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=admin_client.agent.account, user=user, role="operator")
    client = Client()
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            reverse("admin:memory_memorycontext_changelist"),
            {"action": "preview_cluster_maintenance", "_selected_action": [context]},
            follow=True,
        )
    job = MaintenanceJob.objects.get()
    assert (job.status, job.trigger, job.dry_run) == ("completed", "admin", True)
    page = answer.content.decode()
    assert reverse("admin:memory_maintenancejob_change", args=[job.pk]) in page
    detail = client.get(reverse("admin:memory_maintenancejob_change", args=[job.pk]))
    assert detail.status_code == 200
    report_url = reverse("admin:memory_memorymaintenancereport_change", args=[job.report_id])
    assert report_url in detail.content.decode()


def test_numba_caches_its_compilation_in_the_data_directory() -> None:
    import numba

    assert (
        django_settings.ENGRAM_DATA_DIR / "cache" / "numba"
    ).resolve() == django_settings.NUMBA_CACHE_DIR
    assert str(django_settings.NUMBA_CACHE_DIR) == getattr(numba.config, "CACHE_DIR", None)
