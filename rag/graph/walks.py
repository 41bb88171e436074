"""Walks over the knowledge graph: the nodes reachable from some nodes (by direction, relation
types and depth), a node's neighbours within N hops, "does A reach B", shortest paths, and the
cycles of one relation type. Other apps walk the graph through these functions, never through
SQL of their own over rag's tables.

Every walk but the cycle search is one breadth-first search (``_BFS``), run in PostgreSQL as a
recursive CTE over the account's edges, never node by node from Python: a level per step, each
node entered once (at its distance from the start), so cycles and nodes reached by many walks
cost nothing more. A walk follows edges by ``direction`` (``out``: from source to target;
``in``: from target to source; ``both``: either way) and a bidirectional edge either way in every
direction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models.expressions import RawSQL

from core.db_router import read_connection
from core.errors import NotFound, ValidationFailed
from rag.graph.nodes import nodes_shown
from rag.graph.relations import BOTH, OUT, Direction, direction_check
from rag.models import GraphEdge, GraphNode
from rag.tuning import TUNING
from rag.visibility import Visibility

# The hop counts' one home is ``TUNING.hops`` (rag.tuning); these names are the API's bounds,
# read at import: a neighbourhood walk's hops (the same bound as a graph search's max_hops) and
# the longest shortest path reported.
MAX_HOPS = TUNING.hops.walk_max
# Neighbours one answer shows (the API's ``limit``): nearest first.
DEFAULT_NEIGHBOURS, MAX_NEIGHBOURS = 100, 1000
MAX_PATH_HOPS = TUNING.hops.path_max
# How deep a walk may go (a skill's dependency chain goes this deep).
MAX_WALK_DEPTH = 20
# The cycle search: cycles of at most this many nodes, at most this many cycles.
MAX_CYCLE_LENGTH = 20
MAX_CYCLES = 1000

# Breadth-first search as a recursive CTE with one row per level: the level's new nodes (``ids``)
# and, for each, the step that first reached it (``edges``, ``prevs``, ``relations``: the one
# ordered first by {first_step}), and every node seen so far (``seen``), which a later level never
# enters again, so each node is expanded once however many walks reach it. Level 0 is the start
# nodes %(starts)s. A level's steps are the account's edges from a node of the previous level
# (when %(forward)s, or the edge is bidirectional) and into one (when %(backward)s, or the edge
# is bidirectional), looked up by index for the whole level at once (``= ANY(array)``; the flags
# are bound as literals, so the planner drops the branch a direction does not take).
# %(relations)s NULL follows every relation type; the search stops after %(hops)s levels (NULL:
# no limit), at an empty level, after the level holding %(goal)s (NULL: none), or once it has
# seen %(enough)s nodes, start nodes included (NULL: no limit): a walk answering its nearest
# ``limit`` nodes needs no level beyond the one that completes them. {edge_visible} and
# {node_visible} keep a walk to what its reader may see (``_bfs``; TRUE for every edge).
_BFS = """
    bfs(depth, ids, edges, prevs, relations, seen) AS (
        SELECT 0, %(starts)s::bigint[], ARRAY[]::bigint[], ARRAY[]::bigint[],
               ARRAY[]::varchar[], %(starts)s::bigint[]
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
                      AND (%(forward)s::boolean OR e.bidirectional)
                      AND (%(relations)s::varchar[] IS NULL
                           OR e.relation_type = ANY(%(relations)s::varchar[]))
                      AND {edge_visible}
                    UNION ALL
                    SELECT e.target_id, e.source_id, e.id, e.relation_type
                    FROM rag_graphedge e
                    WHERE e.target_id = ANY(b.ids) AND e.account_id = %(account)s
                      AND (%(backward)s::boolean OR e.bidirectional)
                      AND (%(relations)s::varchar[] IS NULL
                           OR e.relation_type = ANY(%(relations)s::varchar[]))
                      AND {edge_visible}
                ) s
                WHERE NOT EXISTS (SELECT FROM unnest(b.seen) AS v(id) WHERE v.id = s.b)
                ORDER BY s.b, {first_step}
            ) s
            WHERE {node_visible}
        ) n
        WHERE (%(hops)s::int IS NULL OR b.depth < %(hops)s::int) AND n.ids IS NOT NULL
          AND (%(goal)s::bigint IS NULL OR NOT %(goal)s::bigint = ANY(b.ids))
          AND (%(enough)s::int IS NULL OR cardinality(b.seen) < %(enough)s::int)
    )
"""


def _bfs(first_step: str, visible: Visibility | None, parameters: dict[str, Any]) -> str:
    """The search's CTE, following only edges ``visible`` may see into nodes it may see (None:
    every edge; ``rag.visibility``), their conditions' values added to ``parameters``."""
    if visible is None or visible.everything:
        return _BFS.format(first_step=first_step, edge_visible="TRUE", node_visible="TRUE")
    # The edge's source per edge (a column); the node once per node a level enters, after the
    # level's first step to it is chosen (whether a node may be seen does not depend on the
    # step): on a 100k-edge graph a check per edge tripled a shortest path's time.
    edge = visible.edge_sql("e", parameters)
    node = (
        f"EXISTS (SELECT FROM rag_graphnode vn WHERE vn.id = s.b AND "
        f"{visible.node_sql('vn', parameters)})"
    )
    return _BFS.format(first_step=first_step, edge_visible=edge, node_visible=node)


def _bfs_parameters(
    *,
    account_id: int,
    starts: Iterable[int],
    relation_types: Sequence[str],
    direction: Direction,
    hops: int | None,
    goal: int | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    starts = list(dict.fromkeys(starts))
    return {
        "account": account_id,
        "starts": starts,
        "relations": list(dict.fromkeys(relation_types)) or None,
        "forward": direction != "in",
        "backward": direction != "out",
        "hops": hops,
        "goal": goal,
        "enough": None if limit is None else len(starts) + limit,
        "limit": limit,
    }


def _hops_check(hops: int, most: int) -> None:
    if not 1 <= hops <= most:
        raise ValidationFailed(f"hops must be from 1 to {most}.", code="invalid_hops")


@dataclass(frozen=True)
class Reached:
    """A node a walk reached: its distance from the nearest start node, and the relation type of
    the edge that reached it on a shortest walk (of several, the first in the database's sort
    order)."""

    node_id: int
    name: str
    depth: int
    relation_type: str


def walk(
    *,
    account_id: int,
    sources: Iterable[int],
    relation_types: Sequence[str] = (),
    direction: str = OUT,
    max_depth: int = MAX_WALK_DEPTH,
    limit: int | None = None,
    visible: Visibility | None = None,
) -> list[Reached]:
    """The nodes of the account's graph reachable from the ``sources`` (node ids) within
    ``max_depth`` (1..20) steps in ``direction`` (``out`` by default: from an edge's source to
    its target) along edges of ``relation_types`` (empty: every type), each once at its shortest
    depth, nearest first (then by name, then id); the sources themselves are not listed.
    ``limit`` keeps the nearest ``limit``: the search stops after the level that completes
    them, and they are ordered and cut in the database, so a large neighbourhood costs the
    levels the answer needs, not its rows. ``visible``: only the edges and nodes it may see
    (``rag.visibility``; None: every one, for the apps' own edges)."""
    _hops_check(max_depth, MAX_WALK_DEPTH)
    parameters = _bfs_parameters(
        account_id=account_id,
        starts=sources,
        relation_types=relation_types,
        direction=direction_check(direction),
        hops=max_depth,
        limit=limit,
    )
    if not parameters["starts"]:
        return []
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE {_bfs("s.relation_type", visible, parameters)}
            SELECT r.node_id, n.name, b.depth, r.relation_type
            FROM bfs b CROSS JOIN LATERAL unnest(b.ids, b.relations) AS r(node_id, relation_type)
            JOIN rag_graphnode n ON n.id = r.node_id
            WHERE b.depth > 0
            ORDER BY b.depth, lower(n.name) COLLATE "C", n.id
            LIMIT %(limit)s
            """,  # noqa: S608 - _BFS is code
            parameters,
        )
        return [Reached(*row) for row in cursor.fetchall()]


@dataclass(frozen=True)
class Neighbour:
    node: GraphNode
    hops: int
    relation_type: str


def neighbours(
    *,
    node: GraphNode,
    hops: int = 1,
    relation_types: Sequence[str] = (),
    direction: str = BOTH,
    limit: int | None = None,
    visible: Visibility | None = None,
) -> list[Neighbour]:
    """The nodes within ``hops`` (1..5) of ``node`` in ``direction`` (``both`` by default: the
    nodes it links to and those linking to it), nearest first (then by name, then id), each
    with its distance and the relation type of the edge that reached it (``walk``);
    ``relation_types`` follows only edges of those types. ``limit`` keeps the nearest
    ``limit``; ``visible``: only what it may see (``walk``)."""
    _hops_check(hops, MAX_HOPS)
    reached = walk(
        account_id=node.account_id,
        sources=[node.pk],
        relation_types=relation_types,
        direction=direction,
        max_depth=hops,
        limit=limit,
        visible=visible,
    )
    # The ids as one array parameter: an IN list of thousands of placeholders costs more to
    # send (psycopg rewrites the query per placeholder) than loading the rows.
    nodes = (
        GraphNode.objects.defer("embedding")
        .filter(pk__in=RawSQL("SELECT unnest(%s::bigint[])", [[r.node_id for r in reached]]))
        .in_bulk()
    )
    if visible is not None:
        nodes_shown(nodes.values(), visible)
    return [
        Neighbour(node=nodes[r.node_id], hops=r.depth, relation_type=r.relation_type)
        for r in reached
        if r.node_id in nodes
    ]


def reaches(
    *,
    account_id: int,
    sources: Iterable[int],
    target: int,
    relation_types: Sequence[str] = (),
    direction: str = OUT,
) -> bool:
    """Does a walk from any of ``sources`` in ``direction`` along edges of ``relation_types``
    reach ``target`` (node ids), however far? True when ``target`` is a source. The search
    stops at the target's level (a cycle check: would an edge into a source close one?)."""
    parameters = _bfs_parameters(
        account_id=account_id,
        starts=sources,
        relation_types=relation_types,
        direction=direction_check(direction),
        hops=None,
        goal=target,
    )
    if not parameters["starts"]:
        return False
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE {_bfs("s.edge_id", None, parameters)}
            SELECT EXISTS (SELECT FROM bfs b WHERE %(goal)s::bigint = ANY(b.ids))
            """,  # noqa: S608 - _BFS is code
            parameters,
        )
        return bool(cursor.fetchone()[0])


@dataclass(frozen=True)
class Path:
    nodes: list[GraphNode]
    edges: list[GraphEdge]


def shortest_path(
    *,
    source: GraphNode,
    target: GraphNode,
    direction: str = BOTH,
    visible: Visibility | None = None,
) -> Path:
    """The nodes and edges of a shortest path from ``source`` to ``target`` (at most
    ``MAX_PATH_HOPS`` hops) following edges in ``direction`` (``both`` by default); 404
    ``no_path`` when there is none. Of several shortest paths the one through the lowest edge
    ids is taken, so the answer is stable: its last edge is the lowest-id edge joining
    ``target`` to a node one hop nearer ``source``, and so on back. ``visible``: only through
    what it may see (``walk``)."""
    parameters = _bfs_parameters(
        account_id=source.account_id,
        starts=[source.pk],
        relation_types=(),
        direction=direction_check(direction),
        hops=MAX_PATH_HOPS,
        goal=target.pk,
    )
    if source.pk == target.pk:
        return Path(nodes=[source], edges=[])
    if source.account_id != target.account_id:
        raise _no_path()
    with read_connection().cursor() as cursor:
        # The search stops at the target's level; the path is read back from it, each node's
        # first step (the lowest edge id from the level before) naming the node before it.
        cursor.execute(
            f"""
            WITH RECURSIVE {_bfs("s.edge_id", visible, parameters)},
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
            parameters,
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
    if visible is not None:
        nodes_shown(nodes.values(), visible)
    return Path(nodes=[nodes[i] for i in node_ids], edges=[edges[i] for i in edge_ids])


def _no_path() -> NotFound:
    return NotFound("No path joins these nodes.", code="no_path")


def cycles(
    *,
    account_id: int,
    relation_type: str,
    max_length: int = MAX_CYCLE_LENGTH,
    limit: int = MAX_CYCLES,
) -> list[list[int]]:
    """The cycles of the account's ``relation_type`` edges (followed from source to target, a
    bidirectional edge either way), each as its node ids starting from the lowest, each once, at
    most ``limit`` of at most ``max_length`` nodes.

    Not the breadth-first search: a cycle is a path, and the search keeps each walk's path (one
    row per simple walk from every edge, ended where it meets a node of its own path), so it
    suits sparse relations such as dependencies, not a whole graph."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE steps(a, b) AS (
                SELECT source_id, target_id FROM rag_graphedge
                WHERE account_id = %(account)s AND relation_type = %(relation)s
                UNION
                SELECT target_id, source_id FROM rag_graphedge
                WHERE account_id = %(account)s AND relation_type = %(relation)s AND bidirectional
            ),
            walk(start, node, path, closed) AS (
                SELECT a, b, ARRAY[a, b], a = b FROM steps
                UNION ALL
                SELECT w.start, s.b, w.path || s.b, s.b = ANY(w.path)
                FROM walk w JOIN steps s ON s.a = w.node
                WHERE NOT w.closed AND cardinality(w.path) <= %(max)s
            )
            SELECT path FROM walk
            WHERE closed AND node = start AND start = (SELECT min(x) FROM unnest(path) AS x)
            LIMIT %(limit)s
            """,
            {"account": account_id, "relation": relation_type, "max": max_length, "limit": limit},
        )
        paths = [list(row[0])[:-1] for row in cursor.fetchall()]
    return [list(path) for path in dict.fromkeys(tuple(path) for path in paths)]
