"""Search as a recorded operation: run it, then keep it for analytics."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.actors import Actor
from core.search import list_length_check
from rag.graph.chunks import chunk_search_staged
from rag.graph.retrieval import DEFAULT_MAX_HOPS
from rag.models import SearchQuery, SearchResult
from rag.search import DEFAULT_FUSION, SearchFilters


def search_query_record(
    *,
    actor: Actor,
    query: str,
    mode: str,
    top_k: int,
    threshold: float | None,
    filters: dict[str, Any],
    outcome: Any | None,
    latency_ms: float,
    error: str = "",
) -> SearchQuery:
    """Record one search with its results (two INSERTs)."""
    hits = outcome.hits if outcome is not None else []
    similarities = [h.vector_score for h in hits if _finite(h.vector_score)]
    scores = [h.score for h in hits if _finite(h.score)]
    status = (
        SearchQuery.Status.ERROR
        if error
        else (SearchQuery.Status.OK if hits else SearchQuery.Status.EMPTY)
    )
    record = SearchQuery.objects.create(
        account_id=actor.account_id,
        agent=actor.agent,
        query_text=query[:10000],
        mode=mode,
        fusion=outcome.fusion if outcome is not None else "",
        top_k=top_k,
        threshold=threshold,
        knowledge_base_ids=outcome.knowledge_base_ids if outcome is not None else [],
        filters=filters,
        result_count=len(hits),
        avg_score=_finite_or_none(sum(scores) / len(scores)) if scores else None,
        # Quality: how close, semantically, the returned passages are to the query (mean cosine
        # similarity), discounted when fewer results came back than were asked for.
        quality_score=_finite_or_none(
            (sum(similarities) / len(similarities)) * min(1.0, len(hits) / top_k)
            if similarities
            else None
        ),
        latency_ms=round(latency_ms, 3),
        stage_ms=outcome.stage_ms if outcome is not None else {},
        status=status,
        error=error[:5000],
    )
    SearchResult.objects.bulk_create(
        SearchResult(
            query=record,
            chunk_id=hit.chunk_id,
            document_id=hit.document_id or None,
            rank=rank,
            mode=mode,
            fusion=record.fusion,
            score=hit.score if _finite(hit.score) else 0.0,
            vector_rank=hit.vector_rank,
            vector_score=_finite_or_none(hit.vector_score),
            keyword_rank=hit.keyword_rank,
            keyword_score=_finite_or_none(hit.keyword_score),
        )
        for rank, hit in enumerate(hits, start=1)
    )
    return record


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _finite_or_none(value: float | None) -> float | None:
    """Analytics never store NaN or infinities: one such row would poison every average."""
    return value if _finite(value) else None


def search_run(
    *,
    actor: Actor,
    query: str,
    mode: str = "hybrid",
    top_k: int = 10,
    filters: Any = None,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    threshold: float | None = None,
    rerank: bool = False,
    stages: Sequence[str] = (),
    max_hops: int = DEFAULT_MAX_HOPS,
) -> Any:
    """Search and record the query for analytics (an invalid request is not recorded). The
    caller's knowledge bases are at most ``core.search.MAX_LIST_ITEMS`` (400
    ``too_many_items``), as the API says."""
    filters = filters or SearchFilters()
    list_length_check("knowledge_base_ids", filters.knowledge_base_ids)
    started = time.perf_counter()
    outcome = chunk_search_staged(
        actor=actor,
        query=query,
        mode=mode,
        top_k=top_k,
        filters=filters,
        fusion=fusion,
        weights=weights,
        threshold=threshold,
        rerank=rerank,
        stages=stages,
        max_hops=max_hops,
    )
    search_query_record(
        actor=actor,
        query=query,
        mode=mode,
        top_k=top_k,
        threshold=threshold,
        filters=filters.as_json(),
        outcome=outcome,
        latency_ms=(time.perf_counter() - started) * 1000,
    )
    return outcome


# Rows deleted per transaction by the retention job: bounded locks and WAL bursts, and a run cut
# short (time limit, restart) keeps what it already deleted.
PRUNE_BATCH = 2000


def search_queries_prune(
    *, older_than: timedelta, dry_run: bool = False, batch_size: int | None = None
) -> dict[str, int]:
    """Delete recorded searches older than ``older_than`` with their results, ``batch_size``
    queries per transaction. Returns {"queries", "results"} deleted; a dry run deletes nothing
    and reports what a run would delete.
    """
    old = SearchQuery.objects.filter(created_at__lt=timezone.now() - older_than)
    if dry_run:
        return {
            "queries": old.count(),
            "results": SearchResult.objects.filter(query__in=old.values("pk")).count(),
            "dry_run": 1,
        }
    batch_size = batch_size or PRUNE_BATCH
    deleted = {"queries": 0, "results": 0}
    while True:
        with transaction.atomic():
            # Oldest first, along the created_at index.
            ids = list(old.order_by("created_at").values_list("pk", flat=True)[:batch_size])
            if not ids:
                break
            _, results = SearchResult.objects.filter(query_id__in=ids).delete()
            _, queries = SearchQuery.objects.filter(pk__in=ids).delete()
        deleted["results"] += results.get(SearchResult._meta.label, 0)
        deleted["queries"] += queries.get(SearchQuery._meta.label, 0)
    return deleted
