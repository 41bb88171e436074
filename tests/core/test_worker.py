"""One task through a real Celery worker consuming from the real Redis-protocol broker."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import transaction
from django.utils import timezone

from config.celery import app
from core import services, tasks
from core.actors import actor_for_account
from core.models import ApiKey, JobRun
from tests.factories import AgentFactory


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_task_enqueued_on_commit_runs_on_a_real_worker(settings) -> None:
    agent = AgentFactory.create()
    key, _ = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now() - timedelta(days=400))

    # A queue of its own, as the other real-worker tests have: xdist's workers share the broker,
    # and a worker of another test must never take this task (nor this worker another's).
    queue = f"worker-test-{uuid.uuid4().hex}"
    app.conf.task_always_eager = False
    try:
        with start_worker(
            app,
            pool="solo",
            concurrency=1,
            perform_ping_check=False,
            shutdown_timeout=20,
            queues=[queue],
        ):
            with transaction.atomic():
                holder: list[object] = []
                transaction.on_commit(
                    lambda: holder.append(tasks.prune_api_keys.apply_async(queue=queue))
                )
            assert holder, "task must be sent once the transaction commits"
            deadline = timezone.now() + timedelta(seconds=30)
            while timezone.now() < deadline:
                run = JobRun.objects.filter(job="core.prune_api_keys").first()
                if run is not None and run.status != JobRun.Status.RUNNING:
                    break
                time.sleep(0.1)
            run = JobRun.objects.get(job="core.prune_api_keys")
    finally:
        app.conf.task_always_eager = True
    assert run.status == JobRun.Status.SUCCEEDED
    assert run.counts == {"deleted": 1}
    assert run.task_id == holder[0].id  # type: ignore[attr-defined]  # the run is the task we sent
    assert not ApiKey.objects.filter(pk=key.pk).exists()
