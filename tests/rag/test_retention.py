"""The query analytics retention job (rag.prune_search_queries)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.actors import actor_for_agent
from core.models import JobRun
from rag import services, tasks
from rag.models import SearchQuery, SearchResult

pytestmark = pytest.mark.django_db


@pytest.fixture
def searches(agent_client, settings, django_capture_on_commit_callbacks):
    """Recorded searches with results, some older than the retention, some not."""
    settings.SEARCH_QUERY_RETENTION = timedelta(days=30)
    actor = actor_for_agent(agent_client.agent)
    kb = services.knowledge_base_create(actor=actor, name="Retention")
    with django_capture_on_commit_callbacks(execute=True):
        services.documents_create_batch(
            actor=actor,
            kb=kb,
            uploads=[
                {"data": f"Backup note {n} about pg_dump.".encode(), "content_type": "text/plain"}
                for n in range(3)
            ],
        )
    records = [services.search_run(actor=actor, query=f"backup {n}") for n in range(7)]
    ids = list(SearchQuery.objects.order_by("pk").values_list("pk", flat=True))
    assert len(ids) == len(records) and SearchResult.objects.filter(query_id=ids[0]).count() == 3
    old, recent = ids[:5], ids[5:]
    SearchQuery.objects.filter(pk__in=old).update(created_at=timezone.now() - timedelta(days=31))
    SearchQuery.objects.filter(pk=recent[0]).update(created_at=timezone.now() - timedelta(days=29))
    return old, recent


def test_a_dry_run_counts_and_deletes_nothing(searches) -> None:
    before = (SearchQuery.objects.count(), SearchResult.objects.count())
    counts = tasks.prune_search_queries.apply(kwargs={"dry_run": True}).get()
    assert counts == {"queries": 5, "results": 15, "dry_run": 1}
    assert (SearchQuery.objects.count(), SearchResult.objects.count()) == before
    assert JobRun.objects.get(job="rag.prune_search_queries").counts == counts


def test_old_queries_are_deleted_with_their_results_in_bounded_batches(
    searches, monkeypatch
) -> None:
    old, recent = searches
    monkeypatch.setattr(services.analytics, "PRUNE_BATCH", 2)
    with CaptureQueriesContext(connection) as captured:
        counts = tasks.prune_search_queries.apply().get()
    assert counts == {"queries": 5, "results": 15}
    deletes = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith('DELETE FROM "rag_searchq')
    ]
    assert len(deletes) == 3  # 2 + 2 + 1 queries, one transaction each
    assert list(SearchQuery.objects.order_by("pk").values_list("pk", flat=True)) == recent
    assert not SearchResult.objects.filter(query_id__in=old).exists()
    assert SearchResult.objects.filter(query_id__in=recent).count() == 6
    run = JobRun.objects.get(job="rag.prune_search_queries")
    assert run.status == JobRun.Status.SUCCEEDED and run.counts == counts
    # Nothing left to do: a second run deletes nothing.
    assert tasks.prune_search_queries.apply().get() == {"queries": 0, "results": 0}


def test_the_job_is_scheduled_with_an_expiry() -> None:
    from core.jobs import periodic_jobs

    job = next(job for job in periodic_jobs() if job.name == "rag.prune_search_queries")
    assert job.task == "rag.tasks.prune_search_queries"
    assert job.crontab is not None and 0 < job.expires_seconds <= 24 * 3600
