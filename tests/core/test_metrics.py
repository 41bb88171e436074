"""``/metrics``: what it shows after real calls, who may read it, several processes adding up."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from config.celery import app
from config.env import BASE_DIR
from core import metrics, tasks
from core.metrics_scrape import exposition

pytestmark = pytest.mark.django_db

KBS = "/api/v1/rag/knowledge-bases"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def scrape(client, **extra) -> str:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return response.content.decode()


def test_a_scrape_shows_the_route_and_the_search_stages_of_real_calls(client, agent_client):
    route = "api/v1/rag/search"
    before = samples(scrape(client))
    created = agent_client.client.post(KBS, {"name": "Docs"}, format="json")
    assert created.status_code == 201
    for _ in range(2):
        found = agent_client.client.post(
            "/api/v1/rag/search", {"query": "backups", "mode": "hybrid"}, format="json"
        )
        assert found.status_code == 200
    missing = agent_client.client.get(f"{KBS}/999999")
    assert missing.status_code == 404

    after = samples(scrape(client))
    count = "engram_http_request_duration_seconds_count"
    labels = {"route": route, "method": "POST", "status": "200"}
    assert (value(after, count, **labels) or 0) - (value(before, count, **labels) or 0) == 2
    # The pattern, never the path: the missing id is nowhere in the labels.
    detail = {"route": "api/v1/rag/knowledge-bases/<id:kb_id>", "method": "GET", "status": "404"}
    assert value(after, count, **detail)
    assert not any("999999" in str(key) for key in after)
    assert value(after, f"{count[: -len('_count')]}_bucket", le="+Inf", **labels)
    stages = {
        dict(labels_)["stage"]
        for (name, labels_) in after
        if name == "engram_search_stage_duration_seconds_count"
        and dict(labels_).get("source") == "chunks"
        and dict(labels_).get("mode") == "hybrid"
    }
    assert {"vector", "keyword", "fusion"} <= stages
    # Read at scrape time: the broker's queue and the database's connections.
    assert value(after, "engram_metrics_source_up", source="queues") == 1
    assert value(after, "engram_metrics_source_up", source="database") == 1
    for queue in ("interactive", "ingestion", "maintenance"):
        assert value(after, "engram_celery_queue_length", queue=queue) is not None
    assert (value(after, "engram_db_connections", state="active") or 0) >= 1
    assert (value(after, "engram_db_max_connections") or 0) > 0


def test_context_assembly_and_appended_turns_are_counted(client, agent_client):
    api = agent_client.client
    conversation = api.post("/api/v1/memory/conversations", {}, format="json")
    assert conversation.status_code == 201, conversation.content
    turns_before = REGISTRY.get_sample_value("engram_conversation_turns_added_total") or 0
    appended = api.post(
        f"/api/v1/memory/conversations/{conversation.json()['id']}/messages",
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        format="json",
    )
    assert appended.status_code == 201, appended.content
    assert REGISTRY.get_sample_value("engram_conversation_turns_added_total") == turns_before + 2

    context = api.post(
        "/api/v1/memory/context",
        {"query": "what did we say?", "conversation_id": conversation.json()["id"]},
        format="json",
    )
    assert context.status_code == 200, context.content
    task_type = context.json()["task_type"]
    found = samples(scrape(client))
    total = value(
        found, "engram_context_stage_duration_seconds_count", task_type=task_type, stage="total"
    )
    assert total and total >= 1
    assert value(
        found, "engram_context_stage_duration_seconds_count", task_type=task_type, stage="history"
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_celery_task_is_counted_by_name_and_outcome_with_its_duration(client):
    """Through a real worker consuming from the broker (tests/core/test_worker.py's way)."""
    name = tasks.prune_api_keys.name
    labels = {"task": name, "outcome": "success"}
    before = REGISTRY.get_sample_value("engram_celery_tasks_total", labels) or 0
    # A queue of its own: another test's worker (xdist) never takes the task.
    queue = f"metrics-test-{os.getpid()}-{time.monotonic_ns()}"
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
            sent = tasks.prune_api_keys.apply_async(queue=queue)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if REGISTRY.get_sample_value("engram_celery_tasks_total", labels) == before + 1:
                    break
                time.sleep(0.05)
    finally:
        app.conf.task_always_eager = True
    assert sent.id
    assert REGISTRY.get_sample_value("engram_celery_tasks_total", labels) == before + 1
    found = samples(scrape(client))
    assert (value(found, "engram_celery_task_duration_seconds_count", **labels) or 0) >= 1
    assert value(found, "engram_celery_tasks_in_progress", task=name) == 0


# --- who may scrape -----------------------------------------------------------------------------


def test_without_a_token_only_loopback_peers_may_scrape(client, settings):
    settings.METRICS_TOKEN = ""
    for address in ("127.0.0.1", "::1", "::ffff:127.0.0.1", ""):
        assert client.get("/metrics", REMOTE_ADDR=address).status_code == 200, address
    for address in ("10.0.0.5", "192.168.1.2", "2001:db8::1", "not-an-address"):
        refused = client.get("/metrics", REMOTE_ADDR=address)
        assert refused.status_code == 403, address
        assert refused.json()["error"]["code"] == "metrics_forbidden"


def test_with_a_token_a_scrape_needs_it_from_everywhere(client, settings):
    settings.METRICS_TOKEN = "s3cret-token"
    missing = client.get("/metrics")
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "not_authenticated"
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic czNjcmV0").status_code == 401
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-tokem")
    assert wrong.status_code == 403
    assert wrong.json()["error"]["code"] == "authentication_failed"
    for address in ("127.0.0.1", "10.0.0.5"):
        scrape(client, REMOTE_ADDR=address, HTTP_AUTHORIZATION="Bearer s3cret-token")


# --- several processes --------------------------------------------------------------------------

WRITER = """
import os, sys
from core import metrics
metrics.request_observed(route="api/v1/me", method="GET", status=200, seconds=0.02)
metrics.turns_added(3)
metrics.HTTP_IN_PROGRESS.inc()
print(metrics.process_identifier(), flush=True)
"""


def test_two_processes_writing_are_added_up_by_one_scrape(tmp_path: Path, monkeypatch):
    env = {**os.environ, metrics.MULTIPROC_ENV: str(tmp_path), "PYTHONPATH": str(BASE_DIR)}
    pids = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", WRITER],
            env=env,
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        pids.append(done.stdout.strip())
    assert len(set(pids)) == 2
    assert len(list(tmp_path.glob("*.db"))) >= 4  # each process its own files

    found = samples(exposition(tmp_path).decode())
    count = "engram_http_request_duration_seconds_count"
    assert value(found, count, route="api/v1/me", method="GET", status="200") == 2
    assert value(found, "engram_conversation_turns_added_total") == 6
    assert value(found, "engram_http_requests_in_progress") == 2

    # A process that ended (gunicorn's child_exit, Celery's worker_process_shutdown): its live
    # gauge no longer counts; what it did stays.
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path))
    metrics.process_exited(int(pids[0].rsplit("-", 1)[1]))
    found = samples(exposition(tmp_path).decode())
    assert value(found, "engram_http_requests_in_progress") == 1
    assert value(found, "engram_conversation_turns_added_total") == 6


def test_a_run_starts_from_an_empty_directory(tmp_path: Path):
    (tmp_path / "counter_host-1.db").write_bytes(b"old")
    (tmp_path / "keep.txt").write_text("not ours")
    metrics.multiprocess_dir_clean(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
