"""Graph retrieval over any search space whose units mention graph nodes (``GraphMention``):
document chunks, long-term memory entries (docs/rag.md, "Graph mode").

1. **Seeds, names first**: the query's spans (``query_names``) matched against the nodes'
   name and alias keys (``rag.graph.names.name_key``), longest first; when the query names
   no node, the nodes nearest its embedding (never an n-gram that starts or ends with a
   function word, nor one that only adds words to a named node); only nodes some unit of the
   searched scopes mentions, at most ``MAX_SEED_NODES``.
2. **The local graph**: ``max_hops`` levels of breadth-first search from the seeds over every
   edge either way (``FANOUT`` heaviest edges a node, ``MAX_REACHED`` nodes, one statement a
   level), never out of a hub; the candidate passages' (the other stages' best hits) most
   salient entities join it (``PASSAGE_NODES`` each, walked ``PASSAGE_HOPS``).
3. **Communities**: the Leiden communities (``rag.services.communities``; each node's finest
   level) of the nodes reached, best first by their best member, at most ``MAX_COMMUNITIES``
   (kept for the explanations; the walk's nodes are not dropped).
4. **Units**: the units mentioning the reached nodes that are no hubs (the ``UNITS_PER_NODE``
   most similar to the query per node), the candidates, and on a question naming relations
   (``rag.graph.gate.query_relations``) the units stating those relations
   (``GraphRelationMention``).
5. **Personalized PageRank** over entities and units (``rag.graph.ppr``): passage - entity
   edges weigh salience x specificity (hubs carry nothing), entity - entity edges their weight,
   more for a typed relation and most for one the question names; the reset vector holds the
   seeds and the candidates; on a relation-chain question (``rag.graph.gate.needs_hop``) the
   named seed's restart moves to the bridge (its neighbours, by the candidate passages naming
   both and by the relations the question names) and the first hop's passages are damped. A
   unit's score: its mass relative to the best unit's, mixed with its cosine similarity by the
   space's ``graph_similarity``.

Every hit names the seed, the path (node names and relation types) from it to the entity that
gave the unit most mass, and that entity's community. ``rag.graph.staged`` decides whether the
graph leads a search or is fused with the vector and keyword stages.

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
from typing import Any

import numpy as np
from django.db import connection

from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from rag.graph import ppr
from rag.graph.gate import needs_hop, query_relations
from rag.graph.graph_types import CommunityRef as CommunityRef
from rag.graph.graph_types import GraphHit as GraphHit
from rag.graph.graph_types import GraphRanking as GraphRanking
from rag.graph.graph_types import Reach as Reach
from rag.graph.graph_types import Seed as Seed
from rag.graph.seeds import MAX_SEED_NODES as MAX_SEED_NODES
from rag.graph.seeds import SEED_DISTANCE_THRESHOLD as SEED_DISTANCE_THRESHOLD
from rag.graph.seeds import query_names as query_names
from rag.graph.seeds import seed_nodes as seed_nodes
from rag.spaces import SearchSpace
from rag.vector import vector_literal
from rag.visibility import Visibility

MAX_COMMUNITIES = 10
COMMUNITY_MIN_SIZE = 3
DEFAULT_MAX_HOPS = 2
MAX_GRAPH_HOPS = 5
FANOUT = 25
MAX_REACHED = 300
# Per node, the units most similar to the query (a speaker's node in a long conversation is
# mentioned by hundreds of turns; docs/benchmarks-log.md, "Units per node").
UNITS_PER_NODE = 100
GRAPH = "graph"
STAGES = ("vector", "keyword", GRAPH)
# The PageRank's passages (step 5): the other stages' best candidates (their fused scores in
# the reset vector, ``PASSAGE_SHARE`` of it; the seeds the rest), and the most salient
# entities of each, where the walk starts too.
PASSAGE_CANDIDATES = 20
PASSAGE_NODES = 6
# How far the walk goes from a candidate passage's entities (their units are read whatever it
# is: passage -> entity -> passage is the hop a dense first hop needs).
PASSAGE_HOPS = 0
# Hubs: a node mentioned by more than this share of the searched units (and at least
# HUB_MIN_MENTIONS times) is reached but not walked from, and its units are not read; below it,
# hubs are damped by their specificity (``rag.graph.ppr``).
HUB_SHARE = 0.05
HUB_MIN_MENTIONS = 50


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


def _walk(
    seeds: Sequence[Seed],
    max_hops: int,
    hop_decay: float,
    visible: Visibility | None = None,
    *,
    edges: list[tuple[int, int, str, float, int]] | None = None,
    expand_below: int | None = None,
) -> dict[int, Reach]:
    """Breadth-first from the seeds, one query per level (step 2); a node reached keeps
    ``hop_decay`` of its parent's score. Only edges and nodes ``visible`` may see (None:
    every one). ``edges``: filled with every edge the walk read between nodes it kept
    (source, target, relation type, weight, edge id), for the PageRank. ``expand_below``: nodes
    mentioned that often or more (hubs) are reached but not walked from."""
    params: dict[str, Any] = {"fanout": FANOUT}
    edge_ok = node_ok = "TRUE"
    if visible is not None and not visible.everything:
        edge_ok, node_ok = visible.edge_sql("e", params), visible.node_sql("n", params)
    reached: dict[int, Reach] = {
        s.node_id: Reach(
            s.node_id, s.name, s.entity_type, s.node_id, 0, s.similarity, [(s.name, "")],
            mention_count=s.mention_count,
        )
        for s in seeds
    }  # fmt: skip

    by_passage = {s.node_id for s in seeds if s.match == "passage"}

    def walkable(node: Reach) -> bool:
        if node.seed_id in by_passage and node.hops >= PASSAGE_HOPS:
            return False  # a candidate passage's entity: its units are read, its edges not
        return expand_below is None or node.mention_count < expand_below

    frontier = sorted((n for n in reached if walkable(reached[n])), key=lambda n: -reached[n].score)
    for hops in range(1, max_hops + 1):
        if not frontier or len(reached) >= MAX_REACHED:
            break
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT k.id, x.other, x.relation_type, n.name, n.entity_type, x.weight,
                       n.mention_count, x.edge_id
                FROM unnest(%(frontier)s::bigint[]) WITH ORDINALITY AS k(id, o)
                CROSS JOIN LATERAL (
                    SELECT s.other, s.relation_type, s.weight, s.edge_id FROM (
                        SELECT e.target_id AS other, e.relation_type, e.weight, e.id AS edge_id
                        FROM rag_graphedge e WHERE e.source_id = k.id AND {edge_ok}
                        UNION ALL
                        SELECT e.source_id, e.relation_type, e.weight, e.id
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
        for parent_id, other, relation, name, entity_type, weight, mentions, edge_id in rows:
            known = reached.get(other)
            parent = reached[parent_id]
            if (
                known is not None
                and known.seed_id in by_passage
                and parent.seed_id not in by_passage
                and known.hops == 0
            ):
                # A candidate passage's entity that a query seed reaches: explained from it.
                known.seed_id, known.hops = parent.seed_id, hops
                known.path = [*parent.path, (known.name, relation)]
            if other not in reached:
                if len(reached) >= MAX_REACHED:
                    continue
                reached[other] = Reach(
                    other,
                    name,
                    entity_type,
                    parent.seed_id,
                    hops,
                    parent.score * hop_decay,
                    [*parent.path, (name, relation)],
                    mention_count=mentions or 0,
                )
                if walkable(reached[other]):
                    following.append(other)
            if edges is not None:
                edges.append((parent_id, other, relation, float(weight), edge_id))
        frontier = following
    return reached


def _communities(
    reached: dict[int, Reach], visible: Visibility | None = None, *, drop: bool = True
) -> list[CommunityRef]:
    """The reached nodes' communities, best first, at most ``MAX_COMMUNITIES`` (step 3); drops
    the reached nodes of the communities left out (``drop``). A community's size counts the
    members ``visible`` may see (None: all)."""
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
    dropped = set(ranked[MAX_COMMUNITIES:]) if drop else set()
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


def scope_units(space: SearchSpace, scope_ids: Sequence[int]) -> int:
    """How many units the searched scopes hold (the specificity's N)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coalesce(sum({space.scope_count_column}), 0) FROM {space.scope_table} "  # noqa: S608
            f"WHERE {space.scope_key_column} = ANY(%s)",
            [list(scope_ids)],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def hub_limit(units: int) -> int:
    """Mentions from which a node is a hub: not walked from, its units not read."""
    return max(HUB_MIN_MENTIONS, math.ceil(HUB_SHARE * units))


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
    chain: bool | None = None,
) -> GraphRanking:
    """The space's units of ``scope_ids`` ranked by the graph (steps 1-5), at most ``depth``.
    ``chain``: whether the query asks along a relation chain (None: ``gate.needs_hop``).
    ``feedback_units``: (unit id, score 0..1) of the other stages' best candidates: they are
    passages of the reset vector, and their entities start the walk too. ``visible``: the
    searcher's visibility (the walk and the communities see what it may; None: everything, for
    system work and benchmarks). Seeds and the candidates' entities are mentioned by units of
    the searched scopes, which the caller has checked the searcher may read."""
    max_hops_check(max_hops)
    stage_ms: dict[str, float] = {}
    if query_vector is None:
        started = time.perf_counter()
        query_vector = get_embedding_provider().embed_query(query)
        stage_ms["embed"] = _ms(started)
    started = time.perf_counter()
    seeds = seed_nodes(
        account_ids=account_ids, space=space, scope_ids=scope_ids, vector=query_vector,
        query=query,
    )  # fmt: skip
    units = scope_units(space, scope_ids)
    limit = hub_limit(units)
    candidates = dict(feedback_units[:PASSAGE_CANDIDATES])
    passage_rows = _passage_nodes(space, list(candidates)) if candidates else []
    starts = list(seeds)
    known = {s.node_id for s in seeds}
    for _, node_id, _, name, entity_type, mentions in passage_rows:
        if node_id not in known:
            known.add(node_id)
            starts.append(Seed(node_id, name, entity_type, 0.0, "passage", mentions))
    stage_ms["graph_seeds"] = _ms(started)
    started = time.perf_counter()
    edges: list[tuple[int, int, str, float, int]] = []
    reached = _walk(starts, max_hops, space.hop_decay, visible, edges=edges, expand_below=limit)
    communities = _communities(reached, visible, drop=False)
    stage_ms["graph_walk"] = _ms(started)
    started = time.perf_counter()
    mention_rows, similarity = _unit_rows(
        space, scope_ids, reached, limit, list(candidates), query_vector, filter_sql,
        filter_params,
    )  # fmt: skip
    mention_rows += [(node, unit, salience) for unit, node, salience, *_ in passage_rows]
    if chain is None:
        chain = needs_hop(query)
    relations = query_relations(query)
    facts = _facts(space, scope_ids, [e for e in edges if e[2] in relations]) if relations else []
    # In a small corpus no node is a hub: N counts at least HUB_MIN_MENTIONS units.
    corpus = max(units, HUB_MIN_MENTIONS)
    hits = ppr.rank_units(
        seeds, reached, edges, mention_rows, similarity, candidates, corpus, depth, chain=chain,
        relations=relations, facts=facts, similarity_weight=space.graph_similarity,
    )  # fmt: skip
    stage_ms["graph_units"] = _ms(started)
    return GraphRanking(
        hits=list(hits),
        query_vector=query_vector,
        stage_ms=stage_ms,
        seeds=seeds,
        communities=communities,
        nodes=reached,
    )


def _passage_nodes(
    space: SearchSpace, unit_ids: Sequence[int]
) -> list[tuple[int, int, float, str, str, int]]:
    """The entities the candidate passages mention: (unit, node, salience, name, entity type,
    mentions), at most ``PASSAGE_NODES`` per passage, the most salient."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT x.unit_id, n.id, x.salience, n.name, n.entity_type, n.mention_count
            FROM unnest(%s::bigint[]) AS k(unit_id)
            CROSS JOIN LATERAL (
                SELECT m.unit_id, m.node_id, m.salience FROM rag_graphmention m
                WHERE m.space = %s AND m.unit_id = k.unit_id
                ORDER BY m.salience DESC, m.node_id LIMIT %s
            ) x JOIN rag_graphnode n ON n.id = x.node_id AND n.status = 'active'
            """,
            [list(unit_ids), space.name, PASSAGE_NODES],
        )
        return [(u, n, float(s), name, t, c or 0) for u, n, s, name, t, c in cursor.fetchall()]


def _unit_rows(
    space: SearchSpace,
    scope_ids: Sequence[int],
    reached: dict[int, Reach],
    limit: int,
    candidates: Sequence[int],
    vector: Any,
    filter_sql: str,
    filter_params: Mapping[str, Any] | None,
) -> tuple[list[tuple[int, int, float]], dict[int, float]]:
    """Step 4: the units mentioning the reached nodes that are no hubs (the ``UNITS_PER_NODE``
    most similar to the query per node) as (node, unit, salience), and every unit's cosine
    similarity to the query, the candidates' included (one statement)."""
    conditions = [c for c in (space.vector_condition, filter_sql) if c]
    where = "".join(f" AND {c}" for c in conditions)
    join = space.unit_filter_join if filter_sql else ""
    nodes = [n for n, r in reached.items() if r.mention_count < limit]
    similarity_sql = f"1 - (u.{space.embedding_column} <=> %(q)s::vector)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT k.id, x.unit_id, x.salience, x.similarity
            FROM unnest(%(nodes)s::bigint[]) AS k(id)
            CROSS JOIN LATERAL (
                SELECT m.unit_id, m.salience, {similarity_sql} AS similarity
                FROM rag_graphmention m
                JOIN {space.unit_table} u ON u.id = m.unit_id {join}
                WHERE m.node_id = k.id AND m.space = %(space)s AND m.scope_id = ANY(%(scopes)s)
                  AND u.{space.scope_column} = ANY(%(scopes)s)
                  AND u.{space.model_column} = %(model)s {where}
                ORDER BY similarity DESC, m.unit_id
                LIMIT %(per_node)s
            ) x
            UNION ALL
            SELECT NULL, u.id, NULL, {similarity_sql}
            FROM {space.unit_table} u WHERE u.id = ANY(%(candidates)s)
              AND u.{space.model_column} = %(model)s
            """,  # noqa: S608 - names are code; filter_sql is built from validated filters
            {
                **(filter_params or {}),
                "nodes": nodes,
                "candidates": list(candidates),
                "q": vector_literal(vector),
                "space": space.name,
                "scopes": list(scope_ids),
                "model": get_embedding_provider().model_id,
                "per_node": UNITS_PER_NODE,
            },
        )
        rows = cursor.fetchall()
    similarity = {unit_id: float(sim or 0.0) for _, unit_id, _, sim in rows}
    return [(n, u, float(s)) for n, u, s, _ in rows if n is not None], similarity


def _facts(
    space: SearchSpace, scope_ids: Sequence[int], edges: Sequence[tuple[int, int, str, float, int]]
) -> list[tuple[int, int, int]]:
    """The units of the searched scopes that state these edges (``GraphRelationMention``):
    (unit, source node, target node)."""
    ends = {e[4]: (e[0], e[1]) for e in edges}
    if not ends:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT edge_id, unit_id FROM rag_graphrelationmention WHERE edge_id = ANY(%s) "
            "AND space = %s AND scope_id = ANY(%s)",
            [list(ends), space.name, list(scope_ids)],
        )
        return [(unit, *ends[edge]) for edge, unit in cursor.fetchall()]
