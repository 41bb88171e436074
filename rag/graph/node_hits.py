"""Node search with its explanations, for both doors (``GET /api/v1/graph/nodes?query=`` and
MCP ``search_knowledge_graph``): hybrid, vector, keyword or prf over names, aliases and
descriptions (``rag.graph.nodes.node_search``), or the graph mode (``rag.graph.staged.node_walk``:
the nodes nearest the query and those within ``max_hops``). Tenancy is the actor's, decided
here once: the nodes the actor may see (``node_list``), walked and counted within its
visibility."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from core.actors import Actor
from rag.graph.graph_types import CommunityRef
from rag.graph.nodes import node_list, node_search
from rag.graph.retrieval import DEFAULT_MAX_HOPS
from rag.graph.staged import node_communities, node_walk
from rag.search import DEFAULT_FUSION
from rag.visibility import visibility_of


@dataclass
class NodeSearch:
    mode: str
    results: list[dict[str, Any]]
    communities: list[CommunityRef]
    timings_ms: dict[str, float] = field(default_factory=dict)


def node_search_explained(
    *,
    actor: Actor,
    query: str,
    top_k: int = 10,
    mode: str = "hybrid",
    fusion: str = DEFAULT_FUSION,
    entity_type: str | None = None,
    max_hops: int = DEFAULT_MAX_HOPS,
) -> NodeSearch:
    """The best ``top_k`` nodes for ``query``, each with its score, its community and why it
    ranked (graph mode: its hops and path from the seed), and those communities."""
    visible = visibility_of(actor)
    results: list[dict[str, Any]] = []
    if mode == "graph":
        started = time.perf_counter()
        found, communities = node_walk(visible=visible, query=query, top_k=top_k, max_hops=max_hops)
        nodes = node_list(actor=actor).in_bulk([r.node_id for r, _ in found])
        for reach, similarity in found:
            if reach.node_id not in nodes:
                continue
            results.append(
                {
                    "node": nodes[reach.node_id],
                    "score": reach.score,
                    "community_id": reach.community_id,
                    "explanation": {
                        "vector": {"rank": None, "score": similarity},
                        "keyword": {"rank": None, "score": None},
                        "fused_score": reach.score,
                        "hops": reach.hops,
                        "path": [{"name": n, "relation_type": r} for n, r in reach.path],
                    },
                }
            )
        timings = {"graph": round((time.perf_counter() - started) * 1000, 3)}
        return NodeSearch(mode, results, communities, timings)
    hits = node_search(
        actor=actor,
        query=query,
        top_k=top_k,
        mode=mode,
        fusion=fusion,
        entity_type=entity_type,
    )
    communities = node_communities([hit.node.pk for hit in hits], visible)
    community_of = {n: c.id for c in communities for n in c.node_ids}
    for hit in hits:
        r = hit.retrieval
        results.append(
            {
                "node": hit.node,
                "score": hit.score,
                "community_id": community_of.get(hit.node.pk),
                "explanation": {
                    "vector": {"rank": r["vector_rank"], "score": r["vector_score"]},
                    "keyword": {"rank": r["keyword_rank"], "score": r["keyword_score"]},
                    "fused_score": hit.score,
                    "hops": None,
                    "path": [],
                },
            }
        )
    return NodeSearch(mode, results, communities, dict(getattr(hits, "timings_ms", {})))
