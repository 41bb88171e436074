"""The one search engine: vector (pgvector HNSW), keyword (BM25), hybrid fusion, filters.

Long-term memory, pages and skills reuse it through ``rank_fusion`` and the stage functions.
Every hit explains itself: its rank and score in each stage and the fused score.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any, Literal

import numpy as np
from django.db import connection, transaction

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import NotFound, ValidationFailed
from rag.keyword import keyword_search
from rag.models import KnowledgeBase

Mode = Literal["vector", "keyword", "hybrid"]
Fusion = Literal["rrf", "weighted", "simple"]
MODES: tuple[str, ...] = ("vector", "keyword", "hybrid")
FUSIONS: tuple[str, ...] = ("rrf", "weighted", "simple")
RRF_K = 60
# Measured on BEIR SciFact train (docs/benchmarks.md): min-max normalised scores weighted equally
# beat reciprocal rank fusion by 0.018 nDCG@10 with the local model.
DEFAULT_FUSION = "weighted"
DEFAULT_WEIGHTS = {"vector": 0.5, "keyword": 0.5}
# Weights are relative (normalised to sum to 1); the bound keeps every sum finite.
MAX_WEIGHT = 1000.0
MAX_TOP_K = 100
# Each stage of a hybrid search contributes this many candidates per requested result.
CANDIDATE_FACTOR = 5
MIN_CANDIDATES = 50


@dataclass(frozen=True)
class SearchFilters:
    knowledge_base_ids: tuple[int, ...] = ()
    doc_types: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: date | None = None
    date_to: date | None = None
    lifecycle_states: tuple[str, ...] = ()

    def document_condition(self) -> tuple[str, dict[str, Any]]:
        """SQL over ``d`` (rag_document) with named parameters; empty when nothing filters."""
        parts: list[str] = []
        params: dict[str, Any] = {}
        if self.doc_types:
            parts.append("d.doc_type = ANY(%(f_doc_types)s)")
            params["f_doc_types"] = list(self.doc_types)
        if self.tags_any:
            parts.append("d.tags && %(f_tags_any)s::varchar[]")
            params["f_tags_any"] = list(self.tags_any)
        if self.tags_all:
            parts.append("d.tags @> %(f_tags_all)s::varchar[]")
            params["f_tags_all"] = list(self.tags_all)
        if self.date_from:
            parts.append("d.document_date >= %(f_date_from)s")
            params["f_date_from"] = self.date_from
        if self.date_to:
            parts.append("d.document_date <= %(f_date_to)s")
            params["f_date_to"] = self.date_to
        if self.lifecycle_states:
            parts.append("d.lifecycle_state = ANY(%(f_lifecycle)s)")
            params["f_lifecycle"] = list(self.lifecycle_states)
        return " AND ".join(parts), params

    def as_json(self) -> dict[str, Any]:
        return {
            k: (v.isoformat() if isinstance(v, date) else list(v) if isinstance(v, tuple) else v)
            for k, v in asdict(self).items()
            if v
        }


@dataclass
class SearchHit:
    chunk_id: int
    score: float
    vector_rank: int | None = None
    vector_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None
    # Filled in by hydration.
    document_id: int = 0
    knowledge_base_id: int = 0
    document_title: str = ""
    text: str = ""
    heading_path: list[str] = field(default_factory=list)
    position: int = 0
    token_count: int = 0
    rerank_score: float | None = None


@dataclass
class SearchOutcome:
    hits: list[SearchHit]
    mode: str
    fusion: str
    knowledge_base_ids: list[int]
    stage_ms: dict[str, float]


def knowledge_bases_for_search(*, actor: Actor, requested: Sequence[int]) -> list[int]:
    """The caller's searchable knowledge bases: the requested ones (all must be visible)."""
    visible = KnowledgeBase.objects.for_actor(actor).exclude(status=KnowledgeBase.Status.ARCHIVED)
    if not requested:
        return list(visible.values_list("id", flat=True))
    found = set(visible.filter(id__in=requested).values_list("id", flat=True))
    missing = sorted(set(requested) - found)
    if missing:
        raise NotFound(
            "Unknown knowledge base.", code="knowledge_base_not_found", details={"ids": missing}
        )
    return sorted(found)


def vector_literal(vector: np.ndarray) -> str:
    """A vector as a pgvector literal, for raw SQL (cast it: ``%s::vector``)."""
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def vector_search(
    *,
    knowledge_base_ids: Sequence[int],
    query_vector: np.ndarray,
    limit: int,
    filters: SearchFilters | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the nearest chunks, through the HNSW index.

    Only chunks embedded by the current model are compared: after a model change, vectors of the
    old model are meaningless to the new one until ``rag_reindex`` re-embeds them.
    """
    if not knowledge_base_ids:
        return []
    condition, params = (filters or SearchFilters()).document_condition()
    join = "JOIN rag_document d ON d.id = c.document_id" if condition else ""
    where = f"AND {condition}" if condition else ""
    params.update(
        kbs=list(knowledge_base_ids),
        q=vector_literal(query_vector),
        limit=limit,
        model=get_embedding_provider().model_id,
    )
    with transaction.atomic(), connection.cursor() as cursor:
        # Enough candidates for the limit, and iterative scans so filters cannot starve results.
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(40, limit))])
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        cursor.execute(
            f"""
            SELECT c.id, c.embedding <=> %(q)s::vector AS distance
            FROM rag_chunk c {join}
            WHERE c.knowledge_base_id = ANY(%(kbs)s) AND c.embedding_model = %(model)s {where}
            ORDER BY distance
            LIMIT %(limit)s
            """,  # noqa: S608 - condition is built from validated, parameterised filters
            params,
        )
        rows = cursor.fetchall()
    rows.sort(key=lambda row: (row[1], row[0]))  # relaxed_order may return near-sorted rows
    return [(int(chunk_id), 1.0 - float(distance)) for chunk_id, distance in rows]


def fusion_weights(weights: dict[str, float] | None) -> dict[str, float]:
    """The stage weights of a hybrid search, normalised to sum to 1; a stage not given keeps its
    default. Scaling every weight alike never changes a ranking, so normalising is free and keeps
    fused scores comparable between requests."""
    merged = {**DEFAULT_WEIGHTS, **(weights or {})}
    if any(not 0 <= value <= MAX_WEIGHT or value != value for value in merged.values()):
        raise ValidationFailed(
            f"Weights must be numbers from 0 to {MAX_WEIGHT:g}.", code="invalid_weights"
        )
    total = sum(merged.values())
    if total <= 0:
        raise ValidationFailed("At least one weight must be above 0.", code="invalid_weights")
    return {name: value / total for name, value in merged.items()}


def rank_fusion(
    ranked_lists: dict[str, list[tuple[int, float]]],
    *,
    method: str = "rrf",
    weights: dict[str, float] | None = None,
    rrf_k: int = RRF_K,
) -> list[tuple[int, float]]:
    """Fuse ranked (id, score) lists into one ranking of (id, fused score), best first.

    rrf: sum of weight / (rrf_k + rank); weighted: sum of weight x min-max normalised score;
    simple: the best normalised score any list gave the item.
    """
    weights = weights or {}
    fused: dict[int, float] = {}
    for name, ranked in ranked_lists.items():
        weight = weights.get(name, 1.0)
        if not ranked:
            continue
        scores = [score for _, score in ranked]
        low, high = min(scores), max(scores)
        span = high - low
        for rank, (item, score) in enumerate(ranked, start=1):
            if method == "rrf":
                contribution = weight / (rrf_k + rank)
                fused[item] = fused.get(item, 0.0) + contribution
            else:
                normalised = (score - low) / span if span > 0 else 1.0
                if method == "weighted":
                    fused[item] = fused.get(item, 0.0) + weight * normalised
                else:
                    fused[item] = max(fused.get(item, 0.0), normalised)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def _hydrate(hits: list[SearchHit], query_vector: np.ndarray | None) -> None:
    """Fill chunk text and document fields; give keyword-only hits their vector similarity."""
    if not hits:
        return
    ids = [hit.chunk_id for hit in hits]
    q = vector_literal(query_vector) if query_vector is not None else None
    similarity = "1 - (c.embedding <=> %(q)s::vector)" if q else "NULL"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, c.knowledge_base_id, d.title, c.text, c.heading_path,
                   c.position, c.token_count, {similarity}
            FROM rag_chunk c JOIN rag_document d ON d.id = c.document_id
            WHERE c.id = ANY(%(ids)s)
            """,  # noqa: S608 - no user text in the SQL
            {"ids": ids, "q": q},
        )
        rows = {row[0]: row for row in cursor.fetchall()}
    for hit in hits:
        row = rows.get(hit.chunk_id)
        if row is None:
            continue
        (
            _,
            hit.document_id,
            hit.knowledge_base_id,
            hit.document_title,
            hit.text,
            hit.heading_path,
            hit.position,
            hit.token_count,
            similarity,
        ) = row
        if hit.vector_score is None and similarity is not None:
            hit.vector_score = float(similarity)


def chunk_search(
    *,
    actor: Actor,
    query: str,
    mode: str = "hybrid",
    top_k: int = 10,
    filters: SearchFilters | None = None,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    threshold: float | None = None,
    candidates: int | None = None,
    rerank: bool = False,
) -> SearchOutcome:
    """Search the caller's knowledge bases. Scoping happens inside every query.

    ``threshold`` is a minimum cosine similarity between query and chunk, applied in every mode.
    ``rerank`` re-scores the best candidates (twice ``top_k``) with the configured reranker; it is
    refused when none is configured.
    """
    if mode not in MODES:
        raise ValidationFailed(f"mode must be one of {', '.join(MODES)}.", code="invalid_mode")
    if fusion not in FUSIONS:
        raise ValidationFailed(
            f"fusion must be one of {', '.join(FUSIONS)}.", code="invalid_fusion"
        )
    if not query.strip():
        raise ValidationFailed("The query is empty.", code="empty_query")
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValidationFailed(f"top_k must be between 1 and {MAX_TOP_K}.", code="invalid_top_k")
    stage_weights = fusion_weights(weights)
    reranker = None
    if rerank:
        from rag.rerank import get_reranker

        reranker = get_reranker()
        if reranker is None:
            raise ValidationFailed(
                "Reranking is not configured (RERANK_PROVIDER).", code="rerank_not_configured"
            )
    filters = filters or SearchFilters()
    kb_ids = knowledge_bases_for_search(actor=actor, requested=filters.knowledge_base_ids)
    depth = candidates or max(MIN_CANDIDATES, top_k * CANDIDATE_FACTOR)
    stage_ms: dict[str, float] = {}
    condition, params = filters.document_condition()

    query_vector: np.ndarray | None = None
    if mode in ("vector", "hybrid") or threshold is not None:
        started = time.perf_counter()
        query_vector = get_embedding_provider().embed_query(query)
        stage_ms["embed"] = _ms(started)

    ranked: dict[str, list[tuple[int, float]]] = {}
    if mode in ("vector", "hybrid"):
        assert query_vector is not None
        started = time.perf_counter()
        ranked["vector"] = vector_search(
            knowledge_base_ids=kb_ids, query_vector=query_vector, limit=depth, filters=filters
        )
        stage_ms["vector"] = _ms(started)
    if mode in ("keyword", "hybrid"):
        started = time.perf_counter()
        ranked["keyword"] = [
            (hit.chunk_id, hit.score)
            for hit in keyword_search(
                knowledge_base_ids=kb_ids,
                query=query,
                limit=depth,
                filter_sql=condition,
                filter_params=params,
            )
        ]
        stage_ms["keyword"] = _ms(started)

    started = time.perf_counter()
    ranks = {
        name: {item: (rank, score) for rank, (item, score) in enumerate(items, start=1)}
        for name, items in ranked.items()
    }
    if mode == "hybrid":
        order = rank_fusion(ranked, method=fusion, weights=stage_weights)
    else:
        order = ranked[mode]
    hits = []
    for chunk_id, score in order:
        hit = SearchHit(chunk_id=chunk_id, score=score)
        if chunk_id in ranks.get("vector", {}):
            hit.vector_rank, hit.vector_score = ranks["vector"][chunk_id]
        if chunk_id in ranks.get("keyword", {}):
            hit.keyword_rank, hit.keyword_score = ranks["keyword"][chunk_id]
        hits.append(hit)
    stage_ms["fusion"] = _ms(started)

    started = time.perf_counter()
    keep = top_k * 2 if reranker is not None else top_k
    if threshold is not None:
        _hydrate(hits, query_vector)
        hits = [h for h in hits if h.vector_score is not None and h.vector_score >= threshold]
        hits = hits[:keep]
    else:
        hits = hits[:keep]
        _hydrate(hits, query_vector)
    stage_ms["hydrate"] = _ms(started)
    if reranker is not None:
        started = time.perf_counter()
        hits = reranker.rerank(query, hits)[:top_k]
        stage_ms["rerank"] = _ms(started)
    return SearchOutcome(
        hits=hits,
        mode=mode,
        fusion=fusion if mode == "hybrid" else "",
        knowledge_base_ids=kb_ids,
        stage_ms=stage_ms,
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
