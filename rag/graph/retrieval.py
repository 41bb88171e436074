"""Graph retrieval over any search space whose units mention graph nodes (``GraphMention``):
document chunks, long-term memory entries (docs/rag.md, "Graph mode").

1. **Seed nodes** by embedding similarity: the query's nearest nodes of the searching accounts
   that some unit of the searched scopes mentions, at most ``MAX_SEED_NODES``, none farther
   than ``SEED_DISTANCE_THRESHOLD`` (cosine distance).
2. **The walk**: from the seeds, ``max_hops`` levels of breadth-first search over every edge
   (either way), following at most ``FANOUT`` heaviest edges of a node and reaching at most
   ``MAX_REACHED`` nodes; a node scores its seed's similarity times the space's ``hop_decay``
   per hop.
3. **Communities**: the Leiden communities (``rag.services.communities``; each node's finest
   level) of the nodes reached, best first by their best member, at most ``MAX_COMMUNITIES``;
   a reached node outside them is dropped (nodes in no community are kept: small components,
   or a graph not clustered yet).
4. **Units**: the units mentioning the nodes kept (the ``UNITS_PER_NODE`` most similar to the
   query per node), scored by ``SIMILARITY_WEIGHT`` x their cosine similarity to the query plus
   the rest x their graph evidence: the sum over the nodes they mention of node score x
   specificity (1 / log2(2 + the node's mentions)), relative to the best unit's.

Every hit names the seed, the path (node names and relation types) from it to the node that
contributed most, and that node's community. ``staged_rank`` adds the graph as a third stage of
a hybrid ranking (``stages``), fused like the other two.

Derived data keeps the visibility of its source (``rag.visibility``): given the searcher's
``Visibility``, the walk follows only the edges it may see into nodes it may see, so no path
names a node of a private conversation it may not read; a community counts only the members
it sees, and its stored title and summary name account-wide members only
(``rag.services.communities``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection

from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from rag.models import GraphScope
from rag.search import (
    RankedHit,
    Ranking,
)
from rag.spaces import GRAPH_NODES, SearchSpace
from rag.vector import vector_literal, vector_search
from rag.visibility import Visibility

MAX_SEED_NODES = 5
SEED_DISTANCE_THRESHOLD = 0.8
MAX_COMMUNITIES = 10
COMMUNITY_MIN_SIZE = 3
DEFAULT_MAX_HOPS = 2
MAX_GRAPH_HOPS = 5
FANOUT = 25
MAX_REACHED = 300
# Per node, the units most similar to the query (a speaker's node in a long conversation is
# mentioned by hundreds of turns; docs/benchmarks-log.md, "Units per node").
UNITS_PER_NODE = 100
SIMILARITY_WEIGHT = 0.5
GRAPH = "graph"
STAGES = ("vector", "keyword", GRAPH)
# Graph feedback in a fused search: the nodes of the other stages' best hits start the walk too.
FEEDBACK_UNITS = 3
FEEDBACK_NODES = 4
FEEDBACK_WEIGHT = 0.8


@dataclass(frozen=True)
class Seed:
    node_id: int
    name: str
    entity_type: str
    similarity: float


@dataclass
class Reach:
    """A node the walk kept: the seed it came from, its hops, score and path from the seed
    (``[(node name, relation type that reached it)]``, the seed first with relation "")."""

    node_id: int
    name: str
    entity_type: str
    seed_id: int
    hops: int
    score: float
    path: list[tuple[str, str]]
    mention_count: int = 0
    community_id: int | None = None


@dataclass(frozen=True)
class CommunityRef:
    id: int
    level: int
    title: str
    summary: str
    size: int
    score: float
    node_ids: tuple[int, ...]


@dataclass
class GraphHit(RankedHit):
    graph_rank: int | None = None
    graph_score: float | None = None
    graph: dict[str, Any] | None = None

    def stages(self) -> dict[str, Any]:
        return {
            **super().stages(),
            "graph_rank": self.graph_rank,
            "graph_score": self.graph_score,
            "graph": {"rank": self.graph_rank, "score": self.graph_score, **self.graph}
            if self.graph is not None
            else None,
        }


@dataclass
class GraphRanking(Ranking):
    seeds: list[Seed] = field(default_factory=list)
    communities: list[CommunityRef] = field(default_factory=list)
    nodes: dict[int, Reach] = field(default_factory=dict)


def max_hops_check(max_hops: int) -> None:
    if not 1 <= max_hops <= MAX_GRAPH_HOPS:
        raise ValidationFailed(
            f"max_hops must be from 1 to {MAX_GRAPH_HOPS}.", code="invalid_max_hops"
        )


def stages_check(mode: str, stages: Sequence[str]) -> tuple[str, ...]:
    """The stages of a search: a hybrid search's (``vector`` and ``keyword`` by default, any of
    ``STAGES``), or nothing for another mode (400 ``invalid_stages`` when given)."""
    if not stages:
        return ()
    unknown = [s for s in stages if s not in STAGES]
    if unknown or mode != "hybrid" or len(set(stages)) < 1:
        raise ValidationFailed(
            "stages apply to hybrid searches: any of vector, keyword, graph.",
            code="invalid_stages",
            details={"stages": list(stages)},
        )
    return tuple(dict.fromkeys(stages))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def seed_nodes(
    *, account_ids: Sequence[int], space: SearchSpace, scope_ids: Sequence[int], vector: Any
) -> list[Seed]:
    """The nodes nearest the query that a unit of the scopes mentions (step 1)."""
    graph_scopes = list(
        GraphScope.objects.filter(account_id__in=list(account_ids)).values_list("pk", flat=True)
    )
    if not graph_scopes or not scope_ids:
        return []
    nearest = vector_search(
        space=GRAPH_NODES,
        scope_ids=graph_scopes,
        query_vector=vector,
        limit=MAX_SEED_NODES,
        filter_sql="u.status = 'active' AND EXISTS (SELECT FROM rag_graphmention m "
        "WHERE m.node_id = u.id AND m.space = %(g_space)s AND m.scope_id = ANY(%(g_scopes)s))",
        filter_params={"g_space": space.name, "g_scopes": list(scope_ids)},
    )
    kept = [(i, s) for i, s in nearest if 1.0 - s <= SEED_DISTANCE_THRESHOLD][:MAX_SEED_NODES]
    if not kept:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, name, entity_type FROM rag_graphnode WHERE id = ANY(%s)",
            [[i for i, _ in kept]],
        )
        names = {row[0]: (row[1], row[2]) for row in cursor.fetchall()}
    return [Seed(i, *names[i], similarity=s) for i, s in kept if i in names]


def _feedback(
    space: SearchSpace, units: Sequence[tuple[int, float]], known: set[int]
) -> list[Seed]:
    """The most salient nodes of the given units (at most ``FEEDBACK_NODES`` each), as extra
    starts scored by the unit's score x salience x ``FEEDBACK_WEIGHT``."""
    score = dict(units)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT x.unit_id, n.id, n.name, n.entity_type, x.salience
            FROM unnest(%s::bigint[]) AS k(unit_id)
            CROSS JOIN LATERAL (
                SELECT m.unit_id, m.node_id, m.salience FROM rag_graphmention m
                WHERE m.space = %s AND m.unit_id = k.unit_id
                ORDER BY m.salience DESC, m.node_id LIMIT %s
            ) x JOIN rag_graphnode n ON n.id = x.node_id AND n.status = 'active'
            """,
            [list(score), space.name, FEEDBACK_NODES],
        )
        rows = cursor.fetchall()
    found: dict[int, Seed] = {}
    for unit_id, node_id, name, entity_type, salience in rows:
        weight = score[unit_id] * salience * FEEDBACK_WEIGHT
        if node_id not in known and weight > found.get(node_id, Seed(0, "", "", -1)).similarity:
            found[node_id] = Seed(node_id, name, entity_type, weight)
    return sorted(found.values(), key=lambda s: (-s.similarity, s.node_id))


def _walk(
    seeds: Sequence[Seed], max_hops: int, hop_decay: float, visible: Visibility | None = None
) -> dict[int, Reach]:
    """Breadth-first from the seeds, one query per level (step 2); a node reached keeps
    ``hop_decay`` of its parent's score. Only edges and nodes ``visible`` may see (None:
    every one)."""
    params: dict[str, Any] = {"fanout": FANOUT}
    edge_ok = node_ok = "TRUE"
    if visible is not None and not visible.everything:
        edge_ok, node_ok = visible.edge_sql("e", params), visible.node_sql("n", params)
    reached: dict[int, Reach] = {
        s.node_id: Reach(
            s.node_id, s.name, s.entity_type, s.node_id, 0, s.similarity, [(s.name, "")]
        )
        for s in seeds
    }
    frontier = sorted(reached, key=lambda n: -reached[n].score)
    for hops in range(1, max_hops + 1):
        if not frontier or len(reached) >= MAX_REACHED:
            break
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT k.id, x.other, x.relation_type, n.name, n.entity_type
                FROM unnest(%(frontier)s::bigint[]) WITH ORDINALITY AS k(id, o)
                CROSS JOIN LATERAL (
                    SELECT s.other, s.relation_type, s.weight FROM (
                        SELECT e.target_id AS other, e.relation_type, e.weight
                        FROM rag_graphedge e WHERE e.source_id = k.id AND {edge_ok}
                        UNION ALL
                        SELECT e.source_id, e.relation_type, e.weight
                        FROM rag_graphedge e WHERE e.target_id = k.id AND {edge_ok}
                    ) s ORDER BY s.weight DESC, s.other LIMIT %(fanout)s
                ) x
                JOIN rag_graphnode n ON n.id = x.other AND n.status = 'active' AND {node_ok}
                ORDER BY k.o, x.weight DESC, x.other
                """,  # noqa: S608 - the conditions are code, their values parameters
                {**params, "frontier": frontier},
            )
            rows = cursor.fetchall()
        following: list[int] = []
        for parent_id, other, relation, name, entity_type in rows:
            if other in reached or len(reached) >= MAX_REACHED:
                continue
            parent = reached[parent_id]
            reached[other] = Reach(
                other,
                name,
                entity_type,
                parent.seed_id,
                hops,
                parent.score * hop_decay,
                [*parent.path, (name, relation)],
            )
            following.append(other)
        frontier = following
    return reached


def _communities(
    reached: dict[int, Reach], visible: Visibility | None = None
) -> list[CommunityRef]:
    """The reached nodes' communities, best first, at most ``MAX_COMMUNITIES`` (step 3); drops
    the reached nodes of the communities left out. A community's size counts the members
    ``visible`` may see (None: all)."""
    if not reached:
        return []
    params: dict[str, Any] = {"nodes": list(reached)}
    size = "c.size"
    if visible is not None and not visible.everything:
        seen = visible.node_sql("n", params)
        size = (
            "(SELECT count(*) FROM rag_graphcommunitymember vm JOIN rag_graphnode n "  # noqa: S608
            f"ON n.id = vm.node_id WHERE vm.community_id = c.id AND {seen})"
        )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (m.node_id) m.node_id, c.id, c.level, c.title, c.summary, {size}
            FROM rag_graphcommunitymember m JOIN rag_graphcommunity c ON c.id = m.community_id
            WHERE m.node_id = ANY(%(nodes)s)
            ORDER BY m.node_id, m.level DESC
            """,  # noqa: S608 - the condition is code, its values parameters
            params,
        )
        rows = cursor.fetchall()
    members: dict[int, list[int]] = {}
    info: dict[int, tuple[int, str, str, int]] = {}
    for node_id, community_id, level, title, summary, size in rows:
        reached[node_id].community_id = community_id
        members.setdefault(community_id, []).append(node_id)
        info[community_id] = (level, title, summary, size)
    ranked = sorted(
        members,
        key=lambda c: (-max(reached[n].score for n in members[c]), -len(members[c]), c),
    )
    kept = ranked[:MAX_COMMUNITIES]
    dropped = set(ranked[MAX_COMMUNITIES:])
    for node_id in [n for n, r in reached.items() if r.community_id in dropped]:
        if reached[node_id].hops > 0:  # seeds stay
            del reached[node_id]
    return [
        CommunityRef(
            id=c,
            level=info[c][0],
            title=info[c][1],
            summary=info[c][2],
            size=info[c][3],
            score=round(max(reached[n].score for n in members[c] if n in reached), 6),
            node_ids=tuple(n for n in members[c] if n in reached),
        )
        for c in kept
    ]


def graph_rank(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    account_ids: Sequence[int],
    query: str,
    depth: int,
    max_hops: int = DEFAULT_MAX_HOPS,
    filter_sql: str = "",
    filter_params: Mapping[str, Any] | None = None,
    query_vector: np.ndarray | None = None,
    feedback_units: Sequence[tuple[int, float]] = (),
    visible: Visibility | None = None,
) -> GraphRanking:
    """The space's units of ``scope_ids`` ranked by the graph (steps 1-4), at most ``depth``.
    ``feedback_units``: (unit id, score 0..1) of another stage's best hits, whose most salient
    nodes start the walk too (graph feedback), beside the seeds. ``visible``: the searcher's
    visibility (the walk and the communities see what it may; None: everything, for system
    work and benchmarks). Seeds and feedback nodes are mentioned by units of the searched
    scopes, which the caller has checked the searcher may read."""
    max_hops_check(max_hops)
    stage_ms: dict[str, float] = {}
    if query_vector is None:
        started = time.perf_counter()
        query_vector = get_embedding_provider().embed_query(query)
        stage_ms["embed"] = _ms(started)
    started = time.perf_counter()
    seeds = seed_nodes(
        account_ids=account_ids, space=space, scope_ids=scope_ids, vector=query_vector
    )
    starts = list(seeds)
    if FEEDBACK_UNITS and feedback_units:
        starts += _feedback(space, feedback_units[:FEEDBACK_UNITS], {s.node_id for s in seeds})
    stage_ms["graph_seeds"] = _ms(started)
    started = time.perf_counter()
    reached = _walk(starts, max_hops, space.hop_decay, visible)
    communities = _communities(reached, visible)
    stage_ms["graph_walk"] = _ms(started)
    started = time.perf_counter()
    hits = _units(space, scope_ids, reached, query_vector, depth, filter_sql, filter_params)
    stage_ms["graph_units"] = _ms(started)
    return GraphRanking(
        hits=list(hits),
        query_vector=query_vector,
        stage_ms=stage_ms,
        seeds=seeds,
        communities=communities,
        nodes=reached,
    )


def _units(
    space: SearchSpace,
    scope_ids: Sequence[int],
    reached: dict[int, Reach],
    vector: Any,
    depth: int,
    filter_sql: str,
    filter_params: Mapping[str, Any] | None,
) -> list[GraphHit]:
    """Step 4: the units mentioning the kept nodes, scored and explained."""
    if not reached:
        return []
    conditions = [c for c in (space.vector_condition, filter_sql) if c]
    where = "".join(f" AND {c}" for c in conditions)
    join = space.unit_filter_join if filter_sql else ""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, mention_count FROM rag_graphnode WHERE id = ANY(%s)", [list(reached)]
        )
        for node_id, count in cursor.fetchall():
            reached[node_id].mention_count = count
        cursor.execute(
            f"""
            SELECT k.id, x.unit_id, x.similarity
            FROM unnest(%(nodes)s::bigint[]) AS k(id)
            CROSS JOIN LATERAL (
                SELECT m.unit_id, 1 - (u.{space.embedding_column} <=> %(q)s::vector) AS similarity
                FROM rag_graphmention m
                JOIN {space.unit_table} u ON u.id = m.unit_id {join}
                WHERE m.node_id = k.id AND m.space = %(space)s AND m.scope_id = ANY(%(scopes)s)
                  AND u.{space.scope_column} = ANY(%(scopes)s)
                  AND u.{space.model_column} = %(model)s {where}
                ORDER BY similarity DESC, m.unit_id
                LIMIT %(per_node)s
            ) x
            """,  # noqa: S608 - names are code; filter_sql is built from validated filters
            {
                **(filter_params or {}),
                "nodes": list(reached),
                "q": vector_literal(vector),
                "space": space.name,
                "scopes": list(scope_ids),
                "model": get_embedding_provider().model_id,
                "per_node": UNITS_PER_NODE,
            },
        )
        rows = cursor.fetchall()
    similarity: dict[int, float] = {}
    evidence: dict[int, float] = {}
    best: dict[int, tuple[float, int]] = {}
    for node_id, unit_id, sim in rows:
        node = reached[node_id]
        contribution = node.score / math.log2(2 + node.mention_count)
        similarity[unit_id] = float(sim)
        evidence[unit_id] = evidence.get(unit_id, 0.0) + contribution
        if contribution > best.get(unit_id, (-1.0, 0))[0]:
            best[unit_id] = (contribution, node_id)
    if not evidence:
        return []
    top = max(evidence.values()) or 1.0
    scored = sorted(
        (
            (
                SIMILARITY_WEIGHT * similarity[u] + (1 - SIMILARITY_WEIGHT) * evidence[u] / top,
                u,
            )
            for u in evidence
        ),
        key=lambda pair: (-pair[0], pair[1]),
    )[:depth]
    hits = []
    for rank, (score, unit_id) in enumerate(scored, start=1):
        node = reached[best[unit_id][1]]
        seed = reached.get(node.seed_id)
        explanation = {
            "seed": {"node_id": node.seed_id, "name": seed.name if seed else node.path[0][0]},
            "node": {"node_id": node.node_id, "name": node.name, "entity_type": node.entity_type},
            "hops": node.hops,
            "path": [{"name": name, "relation_type": rel} for name, rel in node.path],
            "community_id": node.community_id,
            "similarity": round(similarity[unit_id], 6),
            "evidence": round(evidence[unit_id] / top, 6),
        }
        hits.append(
            GraphHit(
                unit_id=unit_id,
                score=round(score, 6),
                graph_rank=rank,
                graph_score=round(score, 6),
                graph=explanation,
            )
        )
    return hits
