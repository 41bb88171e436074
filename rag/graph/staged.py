"""The graph as a stage of a search (``staged_rank``: mode ``graph``, or a hybrid search's
``stages``), and the graph mode of node search (``node_walk``), over ``rag.graph.retrieval``."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.db_router import read_connection
from core.embeddings import get_embedding_provider
from rag.graph.gate import needs_hop
from rag.graph.retrieval import (
    DEFAULT_MAX_HOPS,
    GRAPH,
    STAGES,
    CommunityRef,
    GraphHit,
    GraphRanking,
    Reach,
    Seed,
    _communities,
    _ms,
    _walk,
    graph_rank,
    max_hops_check,
    stages_check,
)
from rag.models import GraphScope
from rag.search import (
    DEFAULT_FUSION,
    RankedHit,
    Ranking,
    fusion_weights,
    rank_fusion,
    space_rank,
)
from rag.spaces import GRAPH_NODES, SearchSpace, space_weights
from rag.tuning import TUNING
from rag.vector import vector_search
from rag.visibility import Visibility

# The spaces whose graph mode the graph leads (``_graph_led``) on a relation-chain question that
# names a node (``rag.graph.gate.needs_hop``), and whether it leads every graph-mode search of
# theirs, are ``TUNING.staged``; otherwise the graph is fused with the vector and keyword stages
# at the space's ``graph_weight``.


def _normalised(hits: Sequence[RankedHit]) -> list[tuple[int, float]]:
    """The best hits' (unit id, score relative to the best), as many as the graph's reset
    vector takes (``TUNING.walk.passage_candidates``)."""
    top = hits[0].score if hits and hits[0].score > 0 else 1.0
    return [(h.unit_id, max(0.0, h.score / top)) for h in hits[: TUNING.walk.passage_candidates]]


def _plain(weights: dict[str, float] | None) -> dict[str, float]:
    """The vector and keyword weights, normalised (the graph's left out)."""
    return fusion_weights({k: v for k, v in (weights or {}).items() if k != GRAPH})


def staged_rank(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    account_ids: Sequence[int],
    query: str,
    mode: str,
    depth: int,
    stages: Sequence[str] = (),
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
    query_vector: np.ndarray | None = None,
    embed_query: bool = False,
    max_hops: int = DEFAULT_MAX_HOPS,
    group_lift: bool = True,
    vector_floor: float | None = None,
    visible: Visibility | None = None,
    hop_gate: bool = False,
) -> Ranking:
    """``rag.search.space_rank`` with the graph. Mode ``graph`` runs the hybrid search and the
    graph stage (``graph_rank``: personalized PageRank whose reset vector holds the query's
    seed entities and the hybrid ranking's best candidates); on a relation-chain question that
    names a node the graph leads (``_graph_led``), otherwise the three stages are fused.
    ``hop_gate``: a hybrid search lets the graph lead in that case too (the hybrid gate), and
    is its plain self otherwise. ``stages: ["graph"]`` on a hybrid search ranks by the
    seeds alone; a hybrid search
    whose ``stages`` name ``graph`` fuses it with the stages it names (weight
    the space's ``graph_weight`` unless ``weights`` gives one). Other searches are
    ``space_rank``'s (``vector_floor`` with them: the graph stage, when it runs, finds by
    entities, not by similarity, and ignores it). ``visible``: the searcher's visibility over
    the graph (``graph_rank``)."""
    stages = stages_check(mode, stages)
    graph_mode = mode == GRAPH
    gated = hop_gate and mode == "hybrid" and not stages and needs_hop(query)
    if graph_mode or gated:
        mode, stages = "hybrid", STAGES
    if GRAPH not in stages:
        if stages and set(stages) != {"vector", "keyword"}:
            mode = stages[0]  # one stage of a hybrid: that stage alone
        return space_rank(
            space=space, scope_ids=scope_ids, query=query, mode=mode, depth=depth,
            fusion=fusion, weights=_plain(weights), filter_sql=filter_sql,
            filter_params=filter_params,
            query_vector=query_vector, embed_query=embed_query, group_lift=group_lift,
            vector_floor=vector_floor,
        )  # fmt: skip
    others = [s for s in stages if s != GRAPH]
    base = None
    if others:
        base = space_rank(
            space=space, scope_ids=scope_ids, query=query,
            mode="hybrid" if len(others) == 2 else others[0], depth=depth, fusion=fusion,
            weights=_plain(weights), filter_sql=filter_sql, filter_params=filter_params,
            query_vector=query_vector, embed_query=True, group_lift=group_lift,
        )  # fmt: skip
        query_vector = base.query_vector
    graph = graph_rank(
        space=space, scope_ids=scope_ids, account_ids=account_ids, query=query, depth=depth,
        max_hops=max_hops, filter_sql=filter_sql, filter_params=filter_params,
        query_vector=query_vector, feedback_units=_normalised(base.hits if base else []),
        visible=visible,
    )  # fmt: skip
    if (graph_mode or gated) and base is not None:
        named = [seed for seed in graph.seeds if seed.match in ("name", "alias")]
        tuned = TUNING.staged
        if space.name in tuned.graph_led_spaces:
            leads = tuned.graph_leads_always or (bool(named) and needs_hop(query))
        else:  # a specific node named: no hub, such as a speaker who says most turns
            leads = (
                space.name in tuned.specific_led_spaces
                and any(seed.mention_count < graph.hub_limit for seed in named)
                and needs_hop(query)
            )
        if leads:
            return _graph_led(base, graph, depth)
        if gated:  # no chain the graph can start: the hybrid search's own ranking
            base.stage_ms.update(graph.stage_ms)
            return base
    started = time.perf_counter()
    lists: dict[str, list[tuple[int, float]]] = {}
    found: dict[int, GraphHit] = {}
    if base is not None:
        for name in others:
            ranked = sorted(
                (
                    (getattr(h, f"{name}_rank"), h.unit_id, getattr(h, f"{name}_score"))
                    for h in base.hits
                    if getattr(h, f"{name}_rank") is not None
                ),
            )
            lists[name] = [(unit_id, score) for _, unit_id, score in ranked]
        for h in base.hits:
            found[h.unit_id] = GraphHit(**vars(h))
    lists[GRAPH] = [(h.unit_id, h.score) for h in graph.hits]
    for h in graph.hits:
        assert isinstance(h, GraphHit)
        hit = found.setdefault(h.unit_id, GraphHit(unit_id=h.unit_id, score=0.0))
        hit.graph_rank, hit.graph_score, hit.graph = h.graph_rank, h.graph_score, h.graph
    stage_weights = fusion_weights(
        {
            **{name: 0.0 for name in ("vector", "keyword") if name not in stages},
            GRAPH: space_weights(space).graph_weight,
            **(weights or {}),
        }
    )
    order = rank_fusion(lists, method=fusion, weights=stage_weights)
    hits: list[RankedHit] = []
    for unit_id, score in order:
        hit = found[unit_id]
        hit.score = score
        hits.append(hit)
    stage_ms = {**(base.stage_ms if base else {}), **graph.stage_ms, "fusion": _ms(started)}
    return GraphRanking(
        hits=hits,
        query_vector=graph.query_vector,
        stage_ms=stage_ms,
        seeds=graph.seeds,
        communities=graph.communities,
        nodes=graph.nodes,
    )


def _graph_led(base: Ranking, graph: GraphRanking, depth: int) -> GraphRanking:
    """The graph leads: the order of the personalized PageRank (``graph_rank``: the query's
    seeds and the hybrid ranking's best candidates restart it), in which a unit only the walk
    found can come first; the hybrid candidates the walk did not score follow, in their order,
    below the last of its units."""
    started = time.perf_counter()
    stages = {h.unit_id: h for h in base.hits}
    hits: list[RankedHit] = []
    for h in graph.hits:
        assert isinstance(h, GraphHit)
        hit = (
            GraphHit(**vars(stages[h.unit_id]))
            if h.unit_id in stages
            else GraphHit(unit_id=h.unit_id, score=0.0)
        )
        hit.score = h.score
        hit.graph_rank, hit.graph_score, hit.graph = h.graph_rank, h.graph_score, h.graph
        hits.append(hit)
    found = {h.unit_id for h in hits}
    floor = min((h.score for h in hits), default=1.0)
    rest = [h for h in base.hits if h.unit_id not in found]
    best = max((h.score for h in rest), default=1.0) or 1.0
    for h in rest[: max(0, depth - len(hits))]:
        hit = GraphHit(**vars(h))
        hit.score = round(floor * 0.99 * max(0.0, h.score) / best, 6)
        hits.append(hit)
    stage_ms = {**base.stage_ms, **graph.stage_ms, "fusion": _ms(started)}
    return GraphRanking(
        hits=hits,
        query_vector=graph.query_vector,
        stage_ms=stage_ms,
        seeds=graph.seeds,
        communities=graph.communities,
        nodes=graph.nodes,
        led=True,
    )


def node_walk(
    *, visible: Visibility, query: str, top_k: int, max_hops: int = DEFAULT_MAX_HOPS
) -> tuple[list[tuple[Reach, float | None]], list[CommunityRef]]:
    """The graph mode of node search (MCP ``search_knowledge_graph``): the seed nodes nearest
    the query (as in graph search, any node of the accounts that ``visible`` may see), the
    nodes the walk reaches within ``max_hops`` and their communities; (node, its similarity
    when a seed) best first, at most ``top_k``, and the communities."""
    max_hops_check(max_hops)
    vector = get_embedding_provider().embed_query(query)
    graph_scopes = list(
        GraphScope.objects.filter(account_id__in=list(visible.account_ids)).values_list(
            "pk", flat=True
        )
    )
    params: dict[str, Any] = {}
    condition = "u.status = 'active'"
    if not visible.everything:
        condition += " AND " + visible.node_sql("u", params)
    nearest = vector_search(
        space=GRAPH_NODES,
        scope_ids=graph_scopes,
        query_vector=vector,
        limit=TUNING.seeds.max_nodes,
        filter_sql=condition,
        filter_params=params,
    )
    kept = [(i, s) for i, s in nearest if 1.0 - s <= TUNING.seeds.distance_threshold]
    names: dict[int, tuple[str, str]] = {}
    if kept:
        with read_connection().cursor() as cursor:
            cursor.execute(
                "SELECT id, name, entity_type FROM rag_graphnode WHERE id = ANY(%s)",
                [[i for i, _ in kept]],
            )
            names = {row[0]: (row[1], row[2]) for row in cursor.fetchall()}
    seeds = [Seed(i, *names[i], similarity=s) for i, s in kept if i in names]
    reached = _walk(seeds, max_hops, space_weights(GRAPH_NODES).hop_decay, visible)
    communities = _communities(reached, visible)
    similarity = {s.node_id: s.similarity for s in seeds}
    ranked = sorted(reached.values(), key=lambda r: (-r.score, r.hops, r.node_id))[:top_k]
    return [(r, similarity.get(r.node_id)) for r in ranked], communities


def node_communities(
    node_ids: Sequence[int], visible: Visibility | None = None
) -> list[CommunityRef]:
    """The communities (finest level) of these nodes, in the order of their first member,
    at most ``TUNING.walk.max_communities`` (their sizes: the members ``visible`` may see)."""
    reached = {n: Reach(n, "", "", n, 0, 1.0 / (rank + 1), []) for rank, n in enumerate(node_ids)}
    return _communities(reached, visible)
