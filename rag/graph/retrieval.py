"""Graph retrieval over any search space whose units mention graph nodes (``GraphMention``):
document chunks, long-term memory entries (docs/rag.md, "Graph mode").

1. **Seeds, names first**: the query's spans (``query_names``) matched against the nodes'
   name and alias keys (``rag.graph.names.name_key``), longest first; when the query names
   no node, the nodes nearest its embedding (never an n-gram that starts or ends with a
   function word, nor one that only adds words to a named node); only nodes some unit of the
   searched scopes mentions, at most ``TUNING.seeds.max_nodes``.
2. **The local graph**: ``max_hops`` levels of breadth-first search from the seeds over every
   edge either way (``TUNING.walk.fanout`` heaviest edges a node, ``TUNING.walk.max_reached``
   nodes, one statement a level), never out of a hub; the candidate passages' (the other stages'
   best hits) most salient entities join it (``TUNING.walk.passage_nodes`` each, walked
   ``TUNING.hops.passage``).
3. **Communities**: the Leiden communities (``rag.graph.services.communities``; each node's finest
   level) of the nodes reached, best first by their best member, at most
   ``TUNING.walk.max_communities`` (kept for the explanations; the walk's nodes are not dropped).
4. **Units**: the units mentioning the reached nodes that are no hubs (the
   ``TUNING.walk.units_per_node`` most similar to the query per node), the candidates, and on a
   question naming relations (``rag.graph.gate.query_relations``) the units stating those
   relations (``GraphRelationMention``).
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
(``rag.graph.services.communities``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.db_router import read_connection
from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from rag.graph import ppr
from rag.graph.gate import chain_relations, needs_hop, query_relations
from rag.graph.graph_types import CommunityRef as CommunityRef
from rag.graph.graph_types import GraphHit as GraphHit
from rag.graph.graph_types import GraphRanking as GraphRanking
from rag.graph.graph_types import Reach as Reach
from rag.graph.graph_types import Seed as Seed
from rag.graph.seeds import query_names as query_names
from rag.graph.seeds import seed_nodes as seed_nodes
from rag.spaces import SearchSpace, space_weights
from rag.tuning import TUNING
from rag.vector import vector_literal
from rag.visibility import Visibility

# The API's default and bound of max_hops, read at import by serializers and signatures (the
# hop counts' one home is ``TUNING.hops``).
DEFAULT_MAX_HOPS = TUNING.hops.search_default
MAX_GRAPH_HOPS = TUNING.hops.walk_max
GRAPH = "graph"
STAGES = ("vector", "keyword", GRAPH)


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
    walk_on: bool = False,
) -> dict[int, Reach]:
    """Breadth-first from the seeds, one query per level (step 2); a node reached keeps
    ``hop_decay`` of its parent's score. Only edges and nodes ``visible`` may see (None:
    every one). ``edges``: filled with every edge the walk read between nodes it kept
    (source, target, relation type, weight, edge id), for the PageRank. ``expand_below``: nodes
    mentioned that often or more (hubs) are reached but not walked from. ``walk_on``: a
    candidate passage's entity that a query seed reaches is walked on from (the space's
    ``passage_nodes_walked``)."""
    params: dict[str, Any] = {"fanout": TUNING.walk.fanout}
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
        if node.seed_id in by_passage and node.hops >= TUNING.hops.passage:
            return False  # a candidate passage's entity: its units are read, its edges not
        return expand_below is None or node.mention_count < expand_below

    frontier = sorted((n for n in reached if walkable(reached[n])), key=lambda n: -reached[n].score)
    for hops in range(1, max_hops + 1):
        if not frontier or len(reached) >= TUNING.walk.max_reached:
            break
        with read_connection().cursor() as cursor:
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
                # A candidate passage's entity that a query seed reaches: explained from it,
                # and walked on from as that seed's own (a longer chain goes on through it).
                known.seed_id, known.hops = parent.seed_id, hops
                known.path = [*parent.path, (known.name, relation)]
                if walk_on and walkable(known):
                    following.append(other)
            if other not in reached:
                if len(reached) >= TUNING.walk.max_reached:
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
    """The reached nodes' communities, best first, at most ``TUNING.walk.max_communities`` (step
    3); drops the reached nodes of the communities left out (``drop``). A community's size counts
    the members ``visible`` may see (None: all)."""
    if not reached:
        return []
    with read_connection().cursor() as cursor:
        cursor.execute(
            """
            SELECT DISTINCT ON (m.node_id) m.node_id, c.id, c.level, c.title, c.summary, c.size
            FROM rag_graphcommunitymember m JOIN rag_graphcommunity c ON c.id = m.community_id
            WHERE m.node_id = ANY(%s)
            ORDER BY m.node_id, m.level DESC
            """,
            [list(reached)],
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
    kept = ranked[: TUNING.walk.max_communities]
    dropped = set(ranked[TUNING.walk.max_communities :]) if drop else set()
    for node_id in [n for n, r in reached.items() if r.community_id in dropped]:
        if reached[node_id].hops > 0:  # seeds stay
            del reached[node_id]
    if kept and visible is not None and not visible.everything:
        # The sizes of the kept communities only, counted once each: per membership row, the
        # count cost a search 20 ms in an account with large communities.
        params: dict[str, Any] = {"kept": kept}
        seen = visible.node_sql("n", params)
        with read_connection().cursor() as cursor:
            cursor.execute(
                "SELECT m.community_id, count(*) FROM rag_graphcommunitymember m "  # noqa: S608
                f"JOIN rag_graphnode n ON n.id = m.node_id WHERE m.community_id = ANY(%(kept)s) "
                f"AND {seen} GROUP BY m.community_id",
                params,
            )
            sizes = dict(cursor.fetchall())
        for c in kept:
            level, title, summary, _ = info[c]
            info[c] = (level, title, summary, sizes.get(c, 0))
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
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT coalesce(sum({space.scope_count_column}), 0) FROM {space.scope_table} "  # noqa: S608
            f"WHERE {space.scope_key_column} = ANY(%s)",
            [list(scope_ids)],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def hub_limit(units: int) -> int:
    """Mentions from which a node is a hub: not walked from, its units not read."""
    return max(TUNING.walk.hub_min_mentions, math.ceil(TUNING.walk.hub_share * units))


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
    candidates = dict(feedback_units[: TUNING.walk.passage_candidates])
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
    weights = space_weights(space)
    reached = _walk(
        starts, max_hops, weights.hop_decay, visible, edges=edges, expand_below=limit,
        walk_on=weights.passage_nodes_walked,
    )  # fmt: skip
    communities = _communities(reached, visible, drop=False)
    stage_ms["graph_walk"] = _ms(started)
    started = time.perf_counter()
    mention_rows, similarity = _unit_rows(
        space, scope_ids, reached, limit, list(candidates), query_vector, filter_sql,
        filter_params, weights.units_read_per_node, weights.units_read_per_search,
    )  # fmt: skip
    mention_rows += [(node, unit, salience) for unit, node, salience, *_ in passage_rows]
    if chain is None:
        chain = needs_hop(query)
    relations = query_relations(query)
    hops = chain_relations(query) if chain and TUNING.ppr.first_hop_bridge else None
    first_relations, next_relations = (hops[0], hops[1:]) if hops else (None, [])
    facts = _facts(space, scope_ids, [e for e in edges if e[2] in relations]) if relations else []
    # In a small corpus no node is a hub: N counts at least TUNING.walk.hub_min_mentions units.
    corpus = max(units, TUNING.walk.hub_min_mentions)
    hits = ppr.rank_units(
        seeds, reached, edges, mention_rows, similarity, candidates, corpus, depth, chain=chain,
        relations=relations, first_relations=first_relations, next_relations=next_relations,
        facts=facts,
        similarity_weight=weights.graph_similarity,
    )  # fmt: skip
    stage_ms["graph_units"] = _ms(started)
    return GraphRanking(
        hits=list(hits),
        query_vector=query_vector,
        stage_ms=stage_ms,
        seeds=seeds,
        communities=communities,
        nodes=reached,
        hub_limit=limit,
    )


def _passage_nodes(
    space: SearchSpace, unit_ids: Sequence[int]
) -> list[tuple[int, int, float, str, str, int]]:
    """The entities the candidate passages mention: (unit, node, salience, name, entity type,
    mentions), at most ``TUNING.walk.passage_nodes`` per passage, the most salient."""
    with read_connection().cursor() as cursor:
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
            [list(unit_ids), space.name, TUNING.walk.passage_nodes],
        )
        return [(u, n, float(s), name, t, c or 0) for u, n, s, name, t, c in cursor.fetchall()]


# Step 4's mentions of the reached nodes; ``_MENTIONS_READ``: each node's ``%(read)s`` most
# salient, the newest first among equals (a space's ``units_read_per_node``).
_MENTIONS = """
    SELECT m.node_id, m.unit_id, m.salience FROM rag_graphmention m
    WHERE m.node_id = ANY(%(nodes)s) AND m.space = %(space)s AND m.scope_id = ANY(%(scopes)s)
"""
_MENTIONS_READ = """
    SELECT node_id, unit_id, salience FROM (
        SELECT m.node_id, m.unit_id, m.salience, row_number() OVER (
            PARTITION BY m.node_id ORDER BY m.salience DESC, m.unit_id DESC
        ) AS nth
        FROM rag_graphmention m
        WHERE m.node_id = ANY(%(nodes)s) AND m.space = %(space)s AND m.scope_id = ANY(%(scopes)s)
    ) x WHERE nth <= %(read)s
"""


def nodes_read(
    reached: Mapping[int, Reach], limit: int, read_per_node: int = 0, read_per_search: int = 0
) -> list[int]:
    """The reached nodes whose units step 4 reads: those that are no hubs (mentioned fewer
    than ``limit`` times) and, when ``read_per_search``, from the least mentioned up while the
    mentions they bring (each node's up to ``read_per_node``, when set) stay within it (the
    least mentioned node always). The nodes left out are the most mentioned: the least
    specific, whose units carry the least of the PageRank's mass."""
    nodes = [n for n, r in reached.items() if r.mention_count < limit]
    if not read_per_search:
        return nodes
    kept: list[int] = []
    total = 0
    for node in sorted(nodes, key=lambda n: (reached[n].mention_count, n)):
        count = reached[node].mention_count
        cost = min(count, read_per_node) if read_per_node else count
        if kept and total + cost > read_per_search:
            break
        kept.append(node)
        total += cost
    return kept


def _unit_rows(
    space: SearchSpace,
    scope_ids: Sequence[int],
    reached: dict[int, Reach],
    limit: int,
    candidates: Sequence[int],
    vector: Any,
    filter_sql: str,
    filter_params: Mapping[str, Any] | None,
    read_per_node: int = 0,
    read_per_search: int = 0,
) -> tuple[list[tuple[int, int, float]], dict[int, float]]:
    """Step 4: the units mentioning the reached nodes that are no hubs (of each node's
    ``read_per_node`` most salient, all when 0, the ``TUNING.walk.units_per_node`` most similar
    to the query; of the nodes ``nodes_read`` keeps) as (node, unit, salience),
    and every unit's cosine similarity to the query, the candidates' included (one statement).
    A unit several nodes mention is read and compared once (``s``), then ranked per node."""
    conditions = [c for c in (space.vector_condition, filter_sql) if c]
    where = "".join(f" AND {c}" for c in conditions)
    join = space.unit_filter_join if filter_sql else ""
    nodes = nodes_read(reached, limit, read_per_node, read_per_search)
    mentions = _MENTIONS_READ if read_per_node else _MENTIONS
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            WITH m AS MATERIALIZED ({mentions}), s AS MATERIALIZED (
                SELECT u.id, 1 - (u.{space.embedding_column} <=> %(q)s::vector) AS similarity
                FROM {space.unit_table} u {join}
                WHERE u.id = ANY(ARRAY(SELECT DISTINCT unit_id FROM m) || %(candidates)s::bigint[])
                  AND u.{space.scope_column} = ANY(%(scopes)s)
                  AND u.{space.model_column} = %(model)s {where}
            ), r AS (
                SELECT m.node_id, m.unit_id, m.salience, s.similarity, row_number() OVER (
                    PARTITION BY m.node_id ORDER BY s.similarity DESC, m.unit_id
                ) AS place
                FROM m JOIN s ON s.id = m.unit_id
            )
            SELECT node_id, unit_id, salience, similarity FROM r WHERE place <= %(per_node)s
            UNION ALL
            SELECT NULL, s.id, NULL, s.similarity FROM s WHERE s.id = ANY(%(candidates)s)
            """,  # noqa: S608 - names are code; filter_sql is built from validated filters
            {
                **(filter_params or {}),
                "nodes": nodes,
                "candidates": list(candidates),
                "q": vector_literal(vector),
                "space": space.name,
                "scopes": list(scope_ids),
                "model": get_embedding_provider().model_id,
                "per_node": TUNING.walk.units_per_node,
                "read": read_per_node,
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
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT edge_id, unit_id FROM rag_graphrelationmention WHERE edge_id = ANY(%s) "
            "AND space = %s AND scope_id = ANY(%s)",
            [list(ends), space.name, list(scope_ids)],
        )
        return [(unit, *ends[edge]) for edge, unit in cursor.fetchall()]
