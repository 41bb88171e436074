"""Knowledge graph reads one node or edge at a time: the nodes an actor may see, hybrid node
search, a node's edges, and the edges of one relation type by their ends (what another app reads
of the edges it owns, such as a skill's ``depends_on`` edges or a page's ``references``).
Walks over many edges are in ``rag.graph.walks``."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import QuerySet

from core.actors import Actor
from core.errors import NotFound
from core.search import TimedHits
from rag.models import GraphEdge, GraphNode, GraphScope
from rag.search import DEFAULT_FUSION, MIN_CANDIDATES, search_options_validate, space_rank
from rag.spaces import GRAPH_NODES

# Edges shown with a node, each way (the neighbours endpoint walks the rest).
MAX_NODE_EDGES = 500


def node_not_found() -> NotFound:
    return NotFound("No such graph node.", code="node_not_found")


def node_list(*, actor: Actor) -> QuerySet[GraphNode]:
    return GraphNode.objects.for_actor(actor).defer("embedding")


def node_get(*, actor: Actor, node_id: int) -> GraphNode:
    """A node of the actor's accounts; 404 ``node_not_found`` for a missing or foreign one."""
    node = node_list(actor=actor).filter(pk=node_id).first()
    if node is None:
        raise node_not_found()
    return node


def edge_get(*, actor: Actor, edge_id: int) -> GraphEdge:
    edge = GraphEdge.objects.for_actor(actor).filter(pk=edge_id).first()
    if edge is None:
        raise NotFound("No such graph edge.", code="edge_not_found")
    return edge


@dataclass(frozen=True)
class NodeEdges:
    outgoing: list[GraphEdge]
    incoming: list[GraphEdge]


def node_edges(*, node: GraphNode) -> NodeEdges:
    """The node's edges each way, heaviest first (at most ``MAX_NODE_EDGES`` each)."""
    order = ("-weight", "id")
    return NodeEdges(
        outgoing=list(GraphEdge.objects.filter(source=node).order_by(*order)[:MAX_NODE_EDGES]),
        incoming=list(GraphEdge.objects.filter(target=node).order_by(*order)[:MAX_NODE_EDGES]),
    )


def relation_edges(
    *,
    relation_type: str,
    account_id: int | None = None,
    source_ids: Iterable[int] | None = None,
    target_ids: Iterable[int] | None = None,
) -> QuerySet[GraphEdge]:
    """The edges of ``relation_type`` (one step each, as stored: source to target), narrowed to
    an account and to edges from ``source_ids`` or into ``target_ids`` when given; unordered
    (callers order, or use it as a subquery). The callers scoped the ids they pass."""
    edges = GraphEdge.objects.filter(relation_type=relation_type)
    if account_id is not None:
        edges = edges.filter(account_id=account_id)
    if source_ids is not None:
        edges = edges.filter(source_id__in=list(source_ids))
    if target_ids is not None:
        edges = edges.filter(target_id__in=list(target_ids))
    return edges.order_by()


def edge_sources_sql(*, relation_type: str, target_id: int) -> tuple[str, list[Any]]:
    """SQL and parameters of a subquery listing the nodes with a ``relation_type`` edge into
    ``target_id``, for another app's raw query to embed (``p.node_id IN (...)``, read once and
    hashed by PostgreSQL) instead of naming rag's tables itself."""
    return (
        "SELECT e.source_id FROM rag_graphedge e WHERE e.target_id = %s AND e.relation_type = %s",
        [target_id, relation_type],
    )


# --- search ----------------------------------------------------------------------------------


@dataclass
class NodeHit:
    node: GraphNode
    score: float
    retrieval: dict[str, Any] = field(default_factory=dict)


def node_search(
    *,
    actor: Actor,
    query: str,
    top_k: int = 10,
    mode: str = "hybrid",
    fusion: str = DEFAULT_FUSION,
    entity_type: str | None = None,
    entity_types: Sequence[str] = (),
    account_ids: Iterable[int] | None = None,
    query_vector: np.ndarray | None = None,
) -> TimedHits[NodeHit]:
    """The actor's nodes most relevant to ``query`` over their name, aliases and description
    (``rag.search.space_rank`` on ``GRAPH_NODES``), best first, each with its rank and score in
    each retrieval stage. ``entity_types`` keeps nodes of any of those types; ``account_ids``
    narrows the actor's accounts (another app searching for one account's objects), and
    ``query_vector`` is the query's embedding when the caller has it already."""
    search_options_validate(query=query, mode=mode, fusion=fusion, top_k=top_k)
    accounts = set(actor.account_ids)
    if account_ids is not None:
        accounts &= set(account_ids)
    scope_ids = list(
        GraphScope.objects.filter(account_id__in=accounts).values_list("pk", flat=True)
    )
    if not scope_ids:
        return TimedHits()
    condition, params = "", {}
    types = [entity_type] if entity_type else list(entity_types)
    if types:
        condition, params = "u.entity_type = ANY(%(f_entity_types)s)", {"f_entity_types": types}
    ranking = space_rank(
        space=GRAPH_NODES,
        scope_ids=scope_ids,
        query=query,
        mode=mode,
        depth=max(MIN_CANDIDATES, top_k * 5),
        fusion=fusion,
        filter_sql=condition,
        filter_params=params,
        query_vector=query_vector,
    )
    ranked = ranking.hits[:top_k]
    started = time.perf_counter()
    nodes = GraphNode.objects.defer("embedding").in_bulk([hit.unit_id for hit in ranked])
    hits = [
        NodeHit(
            node=nodes[hit.unit_id],
            score=hit.score,
            retrieval=hit.stages(),
        )
        for hit in ranked
        if hit.unit_id in nodes  # deleted meanwhile: gone
    ]
    timings = {**ranking.stage_ms, "hydrate": round((time.perf_counter() - started) * 1000, 3)}
    return TimedHits(hits, timings)
