"""Knowledge graph reads one node or edge at a time: the nodes an actor may see, hybrid node
search, a node's edges, and the edges of one relation type by their ends (what another app reads
of the edges it owns, such as a skill's ``depends_on`` edges or a page's ``references``).
Walks over many edges are in ``rag.graph.walks``.

What an actor may see of the graph is decided inside each query by ``rag.visibility``: nodes,
edges and mentions derived from a private source (a conversation) are the readers' of that
source. A node visible only through another source's mention shows its name and type but not
the aliases, description and metadata its own private source gave it (``own_source_shown``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, QuerySet

from core.actors import Actor
from core.db_router import replica_reads
from core.errors import NotFound
from core.search import TimedHits
from rag.models import GraphEdge, GraphNode, GraphScope
from rag.search import DEFAULT_FUSION, search_options_validate, space_rank, stage_depth
from rag.spaces import GRAPH_NODES
from rag.visibility import Visibility, visibility_of

# Edges shown with a node, each way (the neighbours endpoint walks the rest).
MAX_NODE_EDGES = 500


def node_not_found() -> NotFound:
    return NotFound("No such graph node.", code="node_not_found")


def visible_nodes(visible: Visibility) -> QuerySet[GraphNode]:
    """The nodes of ``visible``'s accounts it may see, each annotated with
    ``own_source_shown`` (may it read the source that made the node?)."""
    nodes = GraphNode.objects.filter(account_id__in=list(visible.account_ids)).defer("embedding")
    if visible.everything:
        return nodes
    return nodes.filter(visible.node_q()).annotate(
        own_source_shown=ExpressionWrapper(visible.source_q(), output_field=BooleanField())
    )


def node_list(*, actor: Actor) -> QuerySet[GraphNode]:
    return visible_nodes(visibility_of(actor))


def node_get(*, actor: Actor, node_id: int) -> GraphNode:
    """A node the actor may see; 404 ``node_not_found`` for a missing, foreign or private one."""
    node = node_list(actor=actor).filter(pk=node_id).first()
    if node is None:
        raise node_not_found()
    return node


def visible_edges(visible: Visibility) -> QuerySet[GraphEdge]:
    """The edges of ``visible``'s accounts whose source it may read, between nodes it sees."""
    edges = GraphEdge.objects.filter(account_id__in=list(visible.account_ids))
    if visible.everything:
        return edges
    nodes = GraphNode.objects.filter(visible.node_q())
    return edges.filter(visible.source_q()).filter(
        Exists(nodes.filter(pk=OuterRef("source_id"))),
        Exists(nodes.filter(pk=OuterRef("target_id"))),
    )


def edge_get(*, actor: Actor, edge_id: int) -> GraphEdge:
    edge = visible_edges(visibility_of(actor)).filter(pk=edge_id).first()
    if edge is None:
        raise NotFound("No such graph edge.", code="edge_not_found")
    return edge


@dataclass(frozen=True)
class NodeEdges:
    outgoing: list[GraphEdge]
    incoming: list[GraphEdge]


def node_edges(*, node: GraphNode, visible: Visibility | None = None) -> NodeEdges:
    """The node's edges each way that ``visible`` may see (None: every edge), heaviest first
    (at most ``MAX_NODE_EDGES`` each)."""
    order = ("-weight", "id")
    edges = GraphEdge.objects.all() if visible is None else visible_edges(visible)
    return NodeEdges(
        outgoing=list(edges.filter(source=node).order_by(*order)[:MAX_NODE_EDGES]),
        incoming=list(edges.filter(target=node).order_by(*order)[:MAX_NODE_EDGES]),
    )


def nodes_shown(nodes: Iterable[GraphNode], visible: Visibility) -> None:
    """Mark on loaded nodes whether ``visible`` reads their own source (``own_source_shown``,
    as ``visible_nodes`` annotates it)."""
    for node in nodes:
        node.own_source_shown = visible.reads_source(  # type: ignore[attr-defined]
            node.derived_space, node.derived_scope_id, node.account_id
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


@replica_reads
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
    visible = visibility_of(actor)
    conditions: list[str] = []
    params: dict[str, Any] = {}
    types = [entity_type] if entity_type else list(entity_types)
    if types:
        conditions.append("u.entity_type = ANY(%(f_entity_types)s)")
        params["f_entity_types"] = types
    if not visible.everything:
        conditions.append(visible.node_sql("u", params))
    condition = " AND ".join(conditions)
    ranking = space_rank(
        space=GRAPH_NODES,
        scope_ids=scope_ids,
        query=query,
        mode=mode,
        depth=stage_depth(top_k),
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
    nodes_shown([hit.node for hit in hits], visible)
    timings = {**ranking.stage_ms, "hydrate": round((time.perf_counter() - started) * 1000, 3)}
    return TimedHits(hits, timings)
