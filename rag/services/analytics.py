"""Search as a recorded operation: run it, then keep it for analytics."""

from __future__ import annotations

import time
from typing import Any

from core.actors import Actor
from rag.models import SearchQuery, SearchResult
from rag.search import DEFAULT_FUSION, SearchFilters, chunk_search


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
    similarities = [h.vector_score for h in hits if h.vector_score is not None]
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
        avg_score=sum(h.score for h in hits) / len(hits) if hits else None,
        # Quality: how close, semantically, the returned passages are to the query (mean cosine
        # similarity), discounted when fewer results came back than were asked for.
        quality_score=(
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
            score=hit.score,
            vector_rank=hit.vector_rank,
            vector_score=hit.vector_score,
            keyword_rank=hit.keyword_rank,
            keyword_score=hit.keyword_score,
        )
        for rank, hit in enumerate(hits, start=1)
    )
    return record


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
) -> Any:
    """Search and record the query for analytics (an invalid request is not recorded)."""
    filters = filters or SearchFilters()
    started = time.perf_counter()
    outcome = chunk_search(
        actor=actor,
        query=query,
        mode=mode,
        top_k=top_k,
        filters=filters,
        fusion=fusion,
        weights=weights,
        threshold=threshold,
        rerank=rerank,
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
