"""Knowledge graph reads: nodes an actor may see, hybrid node search, a node's edges, neighbours
within N hops and shortest paths.

Traversal runs in PostgreSQL as recursive CTEs over the account's edges, never node by node from
Python: a breadth-first search, a level per step, that enters each node once (at its distance from
the start), so cycles and nodes reached by many walks cost nothing more. A bidirectional edge is
followed from either end; a directed one from its source only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from core.actors import Actor
from core.errors import NotFound, ValidationFailed
from core.search import TimedHits
from rag.models import GraphEdge, GraphNode, GraphScope
from rag.search import DEFAULT_FUSION, MIN_CANDIDATES, search_options_validate, space_rank
from rag.spaces import GRAPH_NODES

MAX_HOPS = 5
# Neighbours one answer shows (the API's ``limit``): nearest first.
DEFAULT_NEIGHBOURS, MAX_NEIGHBOURS = 100, 1000
# A shortest path longer than this is reported as no path.
MAX_PATH_HOPS = 6
# Edges shown with a node, each way (the neighbours endpoint walks the rest).
MAX_NODE_EDGES = 500


def _node_not_found() -> NotFound:
    return NotFound("No such graph node.", code="node_not_found")


def node_list(*, actor: Actor) -> QuerySet[GraphNode]:
    return GraphNode.objects.for_actor(actor).defer("embedding")


def node_get(*, actor: Actor, node_id: int) -> GraphNode:
    """A node of the actor's accounts; 404 ``node_not_found`` for a missing or foreign one."""
    node = node_list(actor=actor).filter(pk=node_id).first()
    if node is None:
        raise _node_not_found()
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


# --- traversal -------------------------------------------------------------------------------

# Breadth-first search as a recursive CTE with one row per level: the level's new nodes (``ids``)
# and, for each, the step that first reached it (``edges``, ``prevs``, ``relations``: the one
# ordered first by {first_step}), and every node seen so far (``seen``), which a later level never
# enters again, so each node is expanded once however many walks reach it. A level's steps are
# the account's edges from a node of the previous level: every edge from its source,
# bidirectional ones from their target too, looked up by index for the whole level at once
# (``= ANY(array)``). %(relation)s NULL follows every relation type; the search stops after
# %(hops)s levels, at an empty level, or after the level holding %(goal)s (NULL: none).
_BFS = """
    bfs(depth, ids, edges, prevs, relations, seen) AS (
        SELECT 0, ARRAY[%(start)s::bigint], ARRAY[NULL::bigint], ARRAY[NULL::bigint],
               ARRAY[NULL::varchar], ARRAY[%(start)s::bigint]
        UNION ALL
        SELECT b.depth + 1, n.ids, n.edges, n.prevs, n.relations, b.seen || n.ids
        FROM bfs b CROSS JOIN LATERAL (
            SELECT array_agg(s.b) AS ids, array_agg(s.edge_id) AS edges,
                   array_agg(s.a) AS prevs, array_agg(s.relation_type) AS relations
            FROM (
                SELECT DISTINCT ON (s.b) s.a, s.b, s.edge_id, s.relation_type
                FROM (
                    SELECT e.source_id AS a, e.target_id AS b, e.id AS edge_id, e.relation_type
                    FROM rag_graphedge e
                    WHERE e.source_id = ANY(b.ids) AND e.account_id = %(account)s
                      AND (%(relation)s::varchar IS NULL
                           OR e.relation_type = %(relation)s::varchar)
                    UNION ALL
                    SELECT e.target_id, e.source_id, e.id, e.relation_type
                    FROM rag_graphedge e
                    WHERE e.target_id = ANY(b.ids) AND e.bidirectional
                      AND e.account_id = %(account)s
                      AND (%(relation)s::varchar IS NULL
                           OR e.relation_type = %(relation)s::varchar)
                ) s
                WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS v(id) WHERE v.id = s.b)
                ORDER BY s.b, {first_step}
            ) s
        ) n
        WHERE b.depth < %(hops)s AND n.ids IS NOT NULL
          AND (%(goal)s::bigint IS NULL OR NOT %(goal)s::bigint = ANY(b.ids))
    )
"""


@dataclass(frozen=True)
class Neighbour:
    node: GraphNode
    hops: int
    relation_type: str


def neighbours(
    *,
    node: GraphNode,
    hops: int = 1,
    relation_type: str | None = None,
    limit: int | None = None,
) -> list[Neighbour]:
    """The nodes within ``hops`` (1..5) of ``node``, nearest first (then by name, then id),
    each with its distance and the relation type of the edge that reached it on a shortest walk
    (of several, the first in the database's sort order); ``relation_type`` follows only edges
    of that type. ``limit`` keeps the nearest ``limit`` (ordered and cut in the database, so a
    large neighbourhood costs its walk, not its rows)."""
    if not 1 <= hops <= MAX_HOPS:
        raise ValidationFailed(f"hops must be from 1 to {MAX_HOPS}.", code="invalid_hops")
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE {_BFS.format(first_step="s.relation_type")}
            SELECT r.node_id, b.depth, r.relation_type
            FROM bfs b CROSS JOIN LATERAL unnest(b.ids, b.relations) AS r(node_id, relation_type)
            JOIN rag_graphnode n ON n.id = r.node_id
            WHERE b.depth > 0
            ORDER BY b.depth, lower(n.name) COLLATE "C", n.id
            LIMIT %(limit)s
            """,  # noqa: S608 - _BFS is code
            {
                "account": node.account_id,
                "relation": relation_type or None,
                "start": node.pk,
                "hops": hops,
                "goal": None,
                "limit": limit,
            },
        )
        rows = cursor.fetchall()
    # The ids as one array parameter: an IN list of thousands of placeholders costs more to
    # send (psycopg rewrites the query per placeholder) than loading the rows.
    nodes = (
        GraphNode.objects.defer("embedding")
        .filter(pk__in=RawSQL("SELECT unnest(%s::bigint[])", [[row[0] for row in rows]]))
        .in_bulk()
    )
    return [
        Neighbour(node=nodes[node_id], hops=distance, relation_type=relation)
        for node_id, distance, relation in rows
        if node_id in nodes
    ]


@dataclass(frozen=True)
class Path:
    nodes: list[GraphNode]
    edges: list[GraphEdge]


def shortest_path(*, source: GraphNode, target: GraphNode) -> Path:
    """The nodes and edges of a shortest path from ``source`` to ``target`` (at most
    ``MAX_PATH_HOPS`` hops); 404 ``no_path`` when there is none. Of several shortest paths the
    one through the lowest edge ids is taken, so the answer is stable: its last edge is the
    lowest-id edge into ``target`` from a node one hop nearer ``source``, and so on back."""
    if source.pk == target.pk:
        return Path(nodes=[source], edges=[])
    if source.account_id != target.account_id:
        raise _no_path()
    with connection.cursor() as cursor:
        # The search stops at the target's level; the path is read back from it, each node's
        # first step (the lowest edge id from the level before) naming the node before it.
        cursor.execute(
            f"""
            WITH RECURSIVE {_BFS.format(first_step="s.edge_id")},
            back(node_id, depth, edge_id, prev_id) AS (
                SELECT %(goal)s::bigint, b.depth, b.edges[i], b.prevs[i]
                FROM bfs b CROSS JOIN LATERAL array_position(b.ids, %(goal)s::bigint) AS i
                WHERE i IS NOT NULL
                UNION ALL
                SELECT k.prev_id, b.depth, b.edges[i], b.prevs[i]
                FROM back k JOIN bfs b ON b.depth = k.depth - 1
                CROSS JOIN LATERAL array_position(b.ids, k.prev_id) AS i
            )
            SELECT node_id, edge_id FROM back ORDER BY depth
            """,  # noqa: S608 - _BFS is code
            {
                "account": source.account_id,
                "relation": None,
                "start": source.pk,
                "hops": MAX_PATH_HOPS,
                "goal": target.pk,
            },
        )
        rows = cursor.fetchall()
    if not rows:
        raise _no_path()
    node_ids = [row[0] for row in rows]
    edge_ids = [row[1] for row in rows if row[1] is not None]
    nodes = GraphNode.objects.defer("embedding").in_bulk(node_ids)
    edges = GraphEdge.objects.in_bulk(edge_ids)
    if len(nodes) != len(node_ids) or len(edges) != len(edge_ids):
        raise _no_path()  # changed meanwhile
    return Path(nodes=[nodes[i] for i in node_ids], edges=[edges[i] for i in edge_ids])


def _no_path() -> NotFound:
    return NotFound("No path joins these nodes.", code="no_path")
