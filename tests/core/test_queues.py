"""Celery queues by role: every task is routed to interactive, ingestion or maintenance, and a
task sent through the real broker lands on its queue, where only that queue's worker takes it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings

from config.celery import app
from config.launcher import Launcher
from core import queue
from core.jobs import ENGRAM_APPS, periodic_jobs
from core.models import JobRun
from core.queue import INGESTION, INTERACTIVE, MAINTENANCE, QUEUES, queue_names, task_queues


def _project_tasks() -> list[str]:
    app.loader.import_default_modules()
    return sorted(name for name in app.tasks if name.split(".")[0] in ENGRAM_APPS)


def _routed(celery_app: Celery, name: str) -> str:
    return str(celery_app.amqp.router.route({}, name)["queue"].name)


def test_every_task_of_the_project_has_one_of_the_three_queues() -> None:
    names = _project_tasks()
    assert len(names) >= 30  # the apps' tasks modules were imported
    declared = task_queues()
    assert set(declared) == set(names)  # each declared once, none left undeclared
    for name in names:
        assert _routed(app, name) == declared[name] and declared[name] in QUEUES, name
    assert {declared[name] for name in names} == set(QUEUES)  # all three are in use


def test_periodic_jobs_are_maintenance_and_request_work_is_not() -> None:
    declared = task_queues()
    jobs = periodic_jobs()
    assert jobs and all(declared[job.task] == job.queue == MAINTENANCE for job in jobs)
    # What a request waits for, or a user expects soon.
    for name in (
        "memory.tasks.index_pending",
        "memory.tasks.conversation_follow_up",
        "content.tasks.page_sync",
    ):
        assert declared[name] == INTERACTIVE, name
    # Bulk work: documents and their graph links, exports and imports.
    for name in (
        "rag.tasks.process_document",
        "rag.tasks.process_documents",
        "rag.tasks.graph_index_documents",
        "core.tasks.portability_job",
        "memory.tasks.link_entries",
        "memory.tasks.forget_context_links",
        "rag.tasks.graph_forget_chunks",
    ):
        assert declared[name] == INGESTION, name
    assert declared["memory.tasks.maintenance_job"] == MAINTENANCE  # clustering on demand


def test_unrouted_tasks_go_to_the_default_queue_and_an_explicit_queue_wins() -> None:
    assert settings.CELERY_TASK_DEFAULT_QUEUE == INTERACTIVE
    assert _routed(app, "celery.backend_cleanup") == INTERACTIVE
    assert _routed(app, "somewhere.else.entirely") == INTERACTIVE
    chosen = app.amqp.router.route({"queue": "a-test-queue"}, "rag.tasks.process_document")
    assert chosen["queue"].name == "a-test-queue"


def test_a_queue_is_declared_once_and_only_among_the_three(monkeypatch) -> None:
    monkeypatch.setattr(queue, "_ROUTES", dict(queue._ROUTES))
    queue.task_queue_declare("tests.tasks.example", INGESTION)
    queue.task_queue_declare("tests.tasks.example", INGESTION)  # the same again: fine
    with pytest.raises(ValueError, match="routed to 'ingestion' already"):
        queue.task_queue_declare("tests.tasks.example", MAINTENANCE)
    with pytest.raises(ValueError, match="unknown queue 'celery'"):
        queue.task_queue_declare("tests.tasks.other", "celery")


def test_the_queue_depth_metric_reports_the_three_queues() -> None:
    # The project's app is the current one in every Engram process; a test elsewhere in this
    # worker may have made another Celery app current (each new app sets itself current).
    app.set_current()
    assert queue_names() == sorted(QUEUES)


def test_the_launcher_runs_one_worker_on_all_queues_or_one_per_queue(monkeypatch) -> None:
    monkeypatch.delenv("CELERY_WORKER_PER_QUEUE", raising=False)
    launcher = Launcher.__new__(Launcher)
    from config.env import load_env

    launcher.env_settings = load_env()
    (single,) = launcher._workers("python").items()
    assert single[0] == "worker"
    assert single[1][single[1].index("--queues") + 1] == "interactive,ingestion,maintenance"

    monkeypatch.setenv("CELERY_WORKER_PER_QUEUE", "true")
    launcher.env_settings = load_env()
    workers = launcher._workers("python")
    assert sorted(workers) == [f"worker-{name}" for name in sorted(QUEUES)]
    for name, argv in workers.items():
        assert argv[argv.index("--queues") + 1] == name.removeprefix("worker-")
        assert argv[argv.index("--hostname") + 1] == f"{name.removeprefix('worker-')}@%h"


# --- through the real broker and a real worker ---------------------------------------------------


@pytest.fixture
def isolated_app() -> Iterator[tuple[Celery, Any]]:
    """A Celery app configured exactly as the project's (the same Django settings, so the same
    queues and router) whose broker keys carry a prefix of their own: another test's worker
    (xdist shares the broker) never takes its messages. Yields the app and its broker client."""
    task_queues()  # every task module imported: the app's tasks are registered when it finalizes
    isolated = Celery("engram-queue-test", set_as_current=False)
    isolated.config_from_object("django.conf:settings", namespace="CELERY")
    prefix = f"queue-test-{uuid.uuid4().hex}:"
    isolated.conf.broker_transport_options = {
        **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        "global_keyprefix": prefix,
    }
    isolated.conf.task_always_eager = False
    isolated.finalize()
    with isolated.connection_for_write() as conn:
        client = getattr(conn.default_channel, "client")  # noqa: B009 - prefixes the keys
        try:
            yield isolated, client
        finally:
            app.set_current()
            app.set_default()
            for key in client.scan_iter(match=f"{prefix}*"):
                client.execute_command("UNLINK", key)  # unprefixed command: the full key
            isolated.close()


def _lengths(client: Any) -> dict[str, int]:
    return {name: int(client.llen(name)) for name in (*QUEUES, "celery")}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_task_lands_on_its_queue_and_only_that_queues_worker_runs_it(isolated_app) -> None:
    isolated, client = isolated_app
    # By name, as beat sends; and through the task, as a service's task_send does.
    job = isolated.send_task("core.tasks.prune_api_keys", kwargs={"dry_run": True})
    isolated.tasks["rag.tasks.process_document"].apply_async((0,))
    isolated.tasks["memory.tasks.index_pending"].apply_async((0,))
    assert _lengths(client) == {INTERACTIVE: 1, INGESTION: 1, MAINTENANCE: 1, "celery": 0}

    done = threading.Event()

    def finished(sender: Any = None, task_id: str | None = None, **_: Any) -> None:
        if task_id == job.id:
            done.set()

    task_postrun.connect(finished, weak=False)
    try:
        # A worker of the maintenance queue only, as docker-compose's worker-maintenance runs.
        with start_worker(
            isolated,
            pool="solo",
            concurrency=1,
            perform_ping_check=False,
            shutdown_timeout=20,
            queues=[MAINTENANCE],
        ):
            assert done.wait(timeout=30), "the maintenance worker never ran its task"
    finally:
        task_postrun.disconnect(finished)
    run = JobRun.objects.get(job="core.prune_api_keys", task_id=job.id)
    assert run.status == JobRun.Status.SUCCEEDED and run.counts == {"would_delete": 0}
    # The ingestion and interactive tasks are still waiting for their own workers.
    assert _lengths(client) == {INTERACTIVE: 1, INGESTION: 1, MAINTENANCE: 0, "celery": 0}
