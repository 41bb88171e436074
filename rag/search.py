"""The one search engine: vector (pgvector HNSW), keyword (BM25), hybrid fusion, filters.

Every search space (``rag.spaces``: chunks, long-term memory entries, ...) is ranked by
``space_rank``; ``chunk_search`` adds knowledge-base scoping, chunk fields and reranking. Every hit
explains itself: its rank and score in each stage and the fused score.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core import metrics
from core.actors import Actor
from core.db_router import read_connection, replica_reads
from core.embeddings import get_embedding_provider
from core.embeddings.generations import GenerationMoved
from core.errors import NotFound, ValidationFailed

# Every search's bounds (core.search), named here too for the engine's callers.
from core.search import MAX_TOP_K as MAX_TOP_K
from core.search import MAX_WEIGHT as MAX_WEIGHT
from core.search import search_query_check, threshold_check, top_k_check
from rag import granularity
from rag.fusion import DEFAULT_FUSION as DEFAULT_FUSION
from rag.fusion import FUSIONS as FUSIONS
from rag.fusion import fusion_weights as fusion_weights
from rag.fusion import rank_fusion as rank_fusion
from rag.keyword import keyword_search
from rag.models import KnowledgeBase
from rag.spaces import CHUNKS, SearchSpace
from rag.tuning import TUNING
from rag.vector import vector_literal, vector_search

if TYPE_CHECKING:
    from rag.rerank import Reranker

Mode = Literal["vector", "keyword", "hybrid", "prf"]
Fusion = Literal["rrf", "weighted", "simple"]
# Every search mode of every space, in one place (API enums, MCP schemas and the evaluation
# commands read it). prf: hybrid, then BM25 again with the query expanded by pseudo-relevance
# feedback from the best hits (``rag.feedback``), fused with the vector stage.
MODES: tuple[str, ...] = ("vector", "keyword", "hybrid", "prf")
# Modes that run each stage.
VECTOR_MODES = frozenset({"vector", "hybrid", "prf"})
KEYWORD_MODES = frozenset({"keyword", "hybrid", "prf"})
FUSED_MODES = frozenset({"hybrid", "prf"})
# Chunk and long-term memory searches also rank by the graph (rag.graph.retrieval).
SEARCH_MODES: tuple[str, ...] = (*MODES, "graph")


def stage_depth(top_k: int) -> int:
    """How many candidates each stage of a fused search reads for ``top_k`` results."""
    return max(TUNING.search.min_candidates, top_k * TUNING.search.candidate_factor)


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
    # prf: the terms feedback added to the query, with their weights, best first.
    expansion: tuple[tuple[str, float], ...] = ()


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


@dataclass
class RankedHit:
    """A unit of a space in a search's ranking, with its rank and score in each stage."""

    unit_id: int
    score: float
    vector_rank: int | None = None
    vector_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None
    # Set where late interaction re-scored the hit (``rag.late_interaction``).
    late_score: float | None = None

    def similar(self, floor: float) -> bool:
        """Whether the hit's cosine similarity to the query reaches ``floor`` (a hit found by
        its words alone has none measured: 0)."""
        return (self.vector_score or 0.0) >= floor

    def stages(self) -> dict[str, Any]:
        """The hit's rank and score in each stage (None where a stage did not find it)."""
        return {
            "vector_rank": self.vector_rank,
            "vector_score": self.vector_score,
            "keyword_rank": self.keyword_rank,
            "keyword_score": self.keyword_score,
        }


@dataclass
class Ranking:
    hits: list[RankedHit]
    query_vector: np.ndarray | None
    stage_ms: dict[str, float]
    # prf: the terms feedback added to the query, with their weights, best first.
    expansion: tuple[tuple[str, float], ...] = ()


def search_options_validate(*, query: str, mode: str, fusion: str, top_k: int) -> None:
    """The options every search shares, refused with a clear code when out of range: the
    query (empty: ``empty_query``; over ``core.search.MAX_QUERY_CHARS``: ``query_too_long``),
    the mode, the fusion and ``top_k`` (1 to ``MAX_TOP_K``: ``invalid_top_k``)."""
    search_query_check(query)
    if mode not in MODES:
        raise ValidationFailed(f"mode must be one of {', '.join(MODES)}.", code="invalid_mode")
    if fusion not in FUSIONS:
        raise ValidationFailed(
            f"fusion must be one of {', '.join(FUSIONS)}.", code="invalid_fusion"
        )
    if not query.strip():
        raise ValidationFailed("The query is empty.", code="empty_query")
    top_k_check(top_k)


@metrics.ranking_observed  # each stage's time for /metrics, by space and mode
def space_rank(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    query: str,
    mode: str,
    depth: int,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
    query_vector: np.ndarray | None = None,
    embed_query: bool = False,
    group_lift: bool = True,
    vector_floor: float | None = None,
) -> Ranking:
    """Rank a space's units of the given scopes for ``query``: the vector stage, the BM25 stage
    and their fusion (hybrid), every hit keeping its rank and score in each stage.

    The query is embedded when a vector stage runs or ``embed_query`` asks for it (thresholds),
    unless the caller passes ``query_vector`` (one embedding serves several spaces).
    ``weights`` are normalised by ``fusion_weights``. ``group_lift=False``: the caller applies
    the space's group lift itself (it reads the groups in a statement of its own anyway).
    ``vector_floor``: the caller keeps only hits whose vector similarity reaches it; when no
    unit of the vector stage does, the ranking is empty and no other stage runs (context
    assembly's knowledge on topic: most queries have none, and the BM25 stage is the cost).
    """
    stage_ms: dict[str, float] = {}
    if query_vector is None and (mode in VECTOR_MODES or embed_query):
        started = time.perf_counter()
        query_vector = get_embedding_provider().embed_query(query)
        stage_ms["embed"] = _ms(started)

    search_vectors = functools.partial(
        vector_search,
        space=space,
        scope_ids=scope_ids,
        limit=depth,
        filter_sql=filter_sql,
        filter_params=filter_params,
    )

    def nearest(vector: np.ndarray) -> list[tuple[int, float]]:
        nonlocal query_vector
        try:
            return search_vectors(query_vector=vector, raise_moved=True)
        except GenerationMoved:
            # A cut-over came between embedding the query and searching: embed it with the
            # model that is current now, once.
            query_vector = vector = get_embedding_provider().embed_query(query)
            return search_vectors(query_vector=vector)

    def bm25(term_weights: Mapping[str, float] | None = None) -> list[tuple[int, float]]:
        found = keyword_search(
            space=space,
            scope_ids=scope_ids,
            query=query,
            limit=depth,
            filter_sql=filter_sql,
            filter_params=filter_params,
            term_weights=term_weights,
        )
        return [(hit.unit_id, hit.score) for hit in found]

    ranked: dict[str, list[tuple[int, float]]] = {}
    if mode in VECTOR_MODES:
        assert query_vector is not None
        started = time.perf_counter()
        ranked["vector"] = nearest(query_vector)
        stage_ms["vector"] = _ms(started)
        if vector_floor is not None and not any(s >= vector_floor for _, s in ranked["vector"]):
            return Ranking(hits=[], query_vector=query_vector, stage_ms=stage_ms)
    if mode in KEYWORD_MODES:
        started = time.perf_counter()
        ranked["keyword"] = bm25()
        stage_ms["keyword"] = _ms(started)

    started = time.perf_counter()
    expansion: tuple[tuple[str, float], ...] = ()
    if mode in FUSED_MODES:
        order = rank_fusion(ranked, method=fusion, weights=weights)
    else:
        order = ranked[mode]
    if mode == "prf" and order:
        from rag import feedback as prf

        if TUNING.feedback.vector_feedback > 0 and query_vector is not None:
            ranked["vector"] = nearest(
                prf.feedback_vector(space=space, query_vector=query_vector, ranked=order)
            )
        feedback = prf.expand(space=space, scope_ids=scope_ids, query=query, ranked=order)
        expansion = feedback.added
        ranked["keyword"] = bm25(feedback.weights)
        order = rank_fusion(ranked, method=fusion, weights=weights)
        stage_ms["prf"] = _ms(started)
        started = time.perf_counter()
    lift = granularity.group_weight(space) if mode in FUSED_MODES and group_lift else 0.0
    if lift > 0:
        groups = granularity.unit_groups(space=space, unit_ids=[u for u, _ in order])
        order = granularity.group_lift(order, groups, weight=lift)
    ranks = {
        name: {item: (rank, score) for rank, (item, score) in enumerate(items, start=1)}
        for name, items in ranked.items()
    }
    hits = []
    for unit_id, score in order:
        hit = RankedHit(unit_id=unit_id, score=score)
        if unit_id in ranks.get("vector", {}):
            hit.vector_rank, hit.vector_score = ranks["vector"][unit_id]
        if unit_id in ranks.get("keyword", {}):
            hit.keyword_rank, hit.keyword_score = ranks["keyword"][unit_id]
        hits.append(hit)
    stage_ms["fusion"] = _ms(started)
    return Ranking(hits=hits, query_vector=query_vector, stage_ms=stage_ms, expansion=expansion)


def _hydrate(hits: list[SearchHit], query_vector: np.ndarray | None) -> None:
    """Fill chunk text and document fields; give keyword-only hits their vector similarity."""
    if not hits:
        return
    ids = [hit.chunk_id for hit in hits]
    q = vector_literal(query_vector) if query_vector is not None else None
    # Only vectors of the query's model are compared (a cut-over may have come in between).
    similarity = (
        "CASE WHEN c.embedding_model = %(model)s THEN 1 - (c.embedding <=> %(q)s::vector) END"
        if q
        else "NULL"
    )
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, c.knowledge_base_id, d.title, c.text, c.heading_path,
                   c.position, c.token_count, {similarity}
            FROM rag_chunk c JOIN rag_document d ON d.id = c.document_id
            WHERE c.id = ANY(%(ids)s)
            """,  # noqa: S608 - no user text in the SQL
            {"ids": ids, "q": q, "model": get_embedding_provider().model_id},
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


@dataclass
class ChunkQuery:
    """A chunk search's options once validated and scoped (``chunk_query_prepare``)."""

    knowledge_base_ids: list[int]
    depth: int
    weights: dict[str, float]
    condition: str
    params: dict[str, Any]
    reranker: Reranker | None


def chunk_query_prepare(
    *,
    actor: Actor,
    query: str,
    mode: str,
    top_k: int,
    filters: SearchFilters | None,
    fusion: str,
    weights: dict[str, float] | None,
    threshold: float | None,
    candidates: int | None,
    rerank: bool,
) -> ChunkQuery:
    """Validate a chunk search's options (400 before anything runs) and scope it to the
    caller's knowledge bases: what every ranking of chunks starts from (``chunk_search``, and
    ``rag.graph.chunks.chunk_search_staged`` with the graph)."""
    search_options_validate(query=query, mode=mode, fusion=fusion, top_k=top_k)
    threshold_check(threshold)
    stage_weights = fusion_weights(weights)
    reranker = None
    if rerank:
        from rag.rerank import reranker_required

        reranker = reranker_required()
    filters = filters or SearchFilters()
    condition, params = filters.document_condition()
    return ChunkQuery(
        knowledge_base_ids=knowledge_bases_for_search(
            actor=actor, requested=filters.knowledge_base_ids
        ),
        depth=candidates or stage_depth(top_k),
        weights=stage_weights,
        condition=condition,
        params=params,
        reranker=reranker,
    )


def chunk_hits_finish(
    hits: list[SearchHit],
    *,
    query: str,
    top_k: int,
    threshold: float | None,
    reranker: Reranker | None,
    query_vector: np.ndarray | None,
    stage_ms: dict[str, float],
) -> list[SearchHit]:
    """The ranked hits, best first, made into results: loaded (``hydrate``), kept above
    ``threshold`` (a cosine similarity), cut to ``top_k`` (twice that for the reranker, which
    then re-scores them); each step's time in ``stage_ms``."""
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
    return hits


@replica_reads
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
    query_vector: np.ndarray | None = None,
) -> SearchOutcome:
    """Search the caller's knowledge bases. Scoping happens inside every query.
    ``query_vector``: the query's embedding, when the caller has it (one serves several
    searches).

    ``threshold`` is a minimum cosine similarity between query and chunk, applied in every mode.
    ``rerank`` re-scores the best candidates (twice ``top_k``) with the configured reranker; it is
    refused when none is configured.
    """
    prepared = chunk_query_prepare(
        actor=actor, query=query, mode=mode, top_k=top_k, filters=filters, fusion=fusion,
        weights=weights, threshold=threshold, candidates=candidates, rerank=rerank,
    )  # fmt: skip
    ranking = space_rank(
        space=CHUNKS,
        scope_ids=prepared.knowledge_base_ids,
        query=query,
        mode=mode,
        depth=prepared.depth,
        fusion=fusion,
        weights=prepared.weights,
        filter_sql=prepared.condition,
        filter_params=prepared.params,
        embed_query=threshold is not None,
        query_vector=query_vector,
    )
    stage_ms = ranking.stage_ms
    hits = [
        SearchHit(
            chunk_id=hit.unit_id,
            score=hit.score,
            vector_rank=hit.vector_rank,
            vector_score=hit.vector_score,
            keyword_rank=hit.keyword_rank,
            keyword_score=hit.keyword_score,
        )
        for hit in ranking.hits
    ]
    hits = chunk_hits_finish(
        hits, query=query, top_k=top_k, threshold=threshold, reranker=prepared.reranker,
        query_vector=ranking.query_vector, stage_ms=stage_ms,
    )  # fmt: skip
    return SearchOutcome(
        hits=hits,
        mode=mode,
        fusion=fusion if mode in FUSED_MODES else "",
        knowledge_base_ids=prepared.knowledge_base_ids,
        stage_ms=stage_ms,
        expansion=ranking.expansion,
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
