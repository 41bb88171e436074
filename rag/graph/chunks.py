"""Chunk search with the graph (``mode: "graph"``, or a hybrid search whose ``stages`` name
``graph``): ``rag.search.chunk_search`` with ``rag.graph.staged.staged_rank`` as its
ranking, every hit keeping the graph's explanation (``graph``: the seed node, the path that
reached the node mentioning the chunk, its community). Other searches are ``chunk_search``'s."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.actors import Actor
from core.db_router import replica_reads
from rag.graph.gate import needs_hop
from rag.graph.retrieval import (
    DEFAULT_MAX_HOPS,
    GRAPH,
    CommunityRef,
    GraphRanking,
    Seed,
    max_hops_check,
    stages_check,
)
from rag.graph.staged import staged_rank
from rag.search import (
    DEFAULT_FUSION,
    SearchFilters,
    SearchHit,
    SearchOutcome,
    chunk_hits_finish,
    chunk_query_prepare,
    chunk_search,
)
from rag.spaces import CHUNKS
from rag.tuning import TUNING
from rag.visibility import visibility_of

# Hybrid chunk search lets the graph lead a relation-chain question that names a node of the
# graph (``rag.graph.gate.needs_hop``, ``staged_rank(hop_gate=True)``) when
# ``TUNING.staged.hybrid_hop_gate``.


@dataclass
class GraphSearchHit(SearchHit):
    graph_rank: int | None = None
    graph_score: float | None = None
    graph: dict[str, Any] | None = None


@dataclass
class GraphSearchOutcome(SearchOutcome):
    seeds: list[Seed] | None = None
    communities: list[CommunityRef] | None = None
    # The graph led the ranking (``GraphRanking.led``).
    graph_led: bool = False


def uses_graph(mode: str, stages: Sequence[str]) -> bool:
    return mode == GRAPH or GRAPH in stages


@replica_reads
def chunk_search_staged(
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
    stages: Sequence[str] = (),
    max_hops: int = DEFAULT_MAX_HOPS,
) -> SearchOutcome:
    """``chunk_search`` in every mode, ``graph`` included, and with hybrid ``stages``."""
    stages = stages_check(mode, stages)
    max_hops_check(max_hops)
    gated = TUNING.staged.hybrid_hop_gate and mode == "hybrid" and not stages and needs_hop(query)
    if not uses_graph(mode, stages) and not stages and not gated:
        return chunk_search(
            actor=actor, query=query, mode=mode, top_k=top_k, filters=filters, fusion=fusion,
            weights=weights, threshold=threshold, candidates=candidates, rerank=rerank,
            query_vector=query_vector,
        )  # fmt: skip
    prepared = chunk_query_prepare(
        actor=actor, query=query, mode="hybrid" if mode == GRAPH else mode, top_k=top_k,
        filters=filters, fusion=fusion, weights=weights, threshold=threshold,
        candidates=candidates, rerank=rerank,
    )  # fmt: skip
    ranking = staged_rank(
        space=CHUNKS, scope_ids=prepared.knowledge_base_ids, account_ids=list(actor.account_ids),
        query=query, mode=mode, depth=prepared.depth, stages=stages, fusion=fusion,
        weights=weights, filter_sql=prepared.condition, filter_params=prepared.params,
        query_vector=query_vector, embed_query=threshold is not None, max_hops=max_hops,
        visible=visibility_of(actor), hop_gate=gated,
    )  # fmt: skip
    stage_ms = dict(ranking.stage_ms)
    hits: list[SearchHit] = [
        GraphSearchHit(
            chunk_id=hit.unit_id,
            score=hit.score,
            vector_rank=hit.vector_rank,
            vector_score=hit.vector_score,
            keyword_rank=hit.keyword_rank,
            keyword_score=hit.keyword_score,
            graph_rank=getattr(hit, "graph_rank", None),
            graph_score=getattr(hit, "graph_score", None),
            graph=getattr(hit, "graph", None),
        )
        for hit in ranking.hits
    ]
    hits = chunk_hits_finish(
        hits, query=query, top_k=top_k, threshold=threshold, reranker=prepared.reranker,
        query_vector=ranking.query_vector, stage_ms=stage_ms,
    )  # fmt: skip
    graph = ranking if isinstance(ranking, GraphRanking) else None
    return GraphSearchOutcome(
        hits=hits,
        mode=mode,
        fusion=fusion if mode in ("hybrid", GRAPH) else "",
        knowledge_base_ids=prepared.knowledge_base_ids,
        stage_ms=stage_ms,
        seeds=graph.seeds if graph else None,
        communities=graph.communities if graph else None,
        graph_led=graph.led if graph else False,
    )
