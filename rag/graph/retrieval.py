"""Graph retrieval over any search space whose units mention graph nodes (``GraphMention``):
document chunks, long-term memory entries (docs/rag.md, "Graph mode").

1. **Seeds, names first**: the query's spans (``query_names``) matched against the nodes'
   name and alias keys (``rag.graph.entities.name_key``), longest first; when the query names
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
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection

from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from rag.analysis import FUNCTION_WORDS, STOP_WORDS
from rag.graph import ppr
from rag.graph.entities import name_key
from rag.graph.gate import needs_hop, query_relations
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
GRAPH = "graph"
STAGES = ("vector", "keyword", GRAPH)
# The PageRank's passages (step 5): the other stages' best candidates (their fused scores in
# the reset vector, ``PASSAGE_SHARE`` of it; the seeds the rest), and the most salient
# entities of each, where the walk starts too.
PASSAGE_CANDIDATES = 20
PASSAGE_NODES = 6
PASSAGE_SHARE = 0.15
PASSAGE_POWER = 2.0
# How far the walk goes from a candidate passage's entities (their units are read whatever it
# is: passage -> entity -> passage is the hop a dense first hop needs).
PASSAGE_HOPS = 0
# Hubs: a node mentioned by more than this share of the searched units (and at least
# HUB_MIN_MENTIONS times) is reached but not walked from, and its units are not read; below it,
# hubs are damped by their specificity (``rag.graph.ppr``).
HUB_SHARE = 0.05
HUB_MIN_MENTIONS = 50
# Seeds in the reset vector: a node the query names weighs 1, a node found by embedding its
# similarity, times this when the query named some node (names first: the embedding's
# neighbours are often other documents' phrases).
EMBEDDING_SEED_WEIGHT = 0.0
# Whether key phrases (concept nodes) found by embedding seed a query that named a node.
EMBEDDING_CONCEPTS_WITH_NAMES = True
# A relation-chain question (``rag.graph.gate.needs_hop``): the node it names is where the
# chain starts. This share of a named seed's restart moves to its neighbours (the bridge), and
# the passages that mention a named seed (the first hop) count this much of their score.
CHAIN_SHIFT = 1.0
# The candidate passages' share of the restart on a chain question that named a node (they
# share its words, the answer does not).
CHAIN_PASSAGE_SHARE = 0.0
# Where the first hop's best passage ranks at the worst on a chain question (0: anywhere).
CHAIN_FIRST_HOP_RANK = 0
CHAIN_FIRST_HOP = 0.1
# The bridge's weight from the edge alone, next to the candidate passages naming both.
CHAIN_EDGE_PRIOR = 0.03
CHAIN_TYPED_PRIOR = 0.1
CHAIN_PASSAGES = 0.3
# Relations the query names (``rag.graph.gate.query_relations``): typed edges of those types
# weigh this much more in the walk and in choosing the bridge, and a unit stating one (a fact)
# is joined to both its ends with this weight.
RELATION_MATCH = 10.0
FACT_WEIGHT = 1.0


@dataclass(frozen=True)
class Seed:
    node_id: int
    name: str
    entity_type: str
    similarity: float
    # How the query found it: "name" / "alias" (a span of the query is its name or an alias),
    # "embedding" (nearest the query's vector), "passage" (mentioned by a candidate passage).
    match: str = "embedding"
    mention_count: int = 0


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


# Words that end no entity's name in a question: stop and question words, auxiliaries, and the
# verbs a relation chain is made of ("jonas lind was", "runs the harbor library": no seed slot).
_EDGE_WORDS_TEXT = """
    about after also an any before born by can could from has he her his i its me my our she so
    some their them they us we who whom whose would you your person people one"""
_EDGE_WORDS = STOP_WORDS | FUNCTION_WORDS | frozenset(_EDGE_WORDS_TEXT.split())
MAX_QUERY_NGRAM = 5
_POSSESSIVE = re.compile(r"['\u2019]s\b")


def query_names(query: str) -> list[tuple[str, int, int]]:
    """The spans of the query that may name a node: (name key, first word, word count), every
    run of up to ``MAX_QUERY_NGRAM`` words that neither starts nor ends with a function word,
    longest first ("the founder of Harbor Library's cafe" -> "founder of harbor library cafe",
    ..., "harbor library", "harbor", ...)."""
    words = [w.casefold() for w in re.findall(r"[^\W_]+", _POSSESSIVE.sub("", query))]
    spans = [
        (" ".join(words[i : i + n]), i, n)
        for n in range(min(MAX_QUERY_NGRAM, len(words)), 0, -1)
        for i in range(len(words) - n + 1)
        if words[i] not in _EDGE_WORDS and words[i + n - 1] not in _EDGE_WORDS
    ]
    return [(name_key(key), i, n) for key, i, n in spans if name_key(key)]


def _junk(key: str) -> bool:
    """An n-gram node that adds a function word or a verb to a name ("jonas lind was")."""
    words = key.split()
    return not words or words[0] in _EDGE_WORDS or words[-1] in _EDGE_WORDS


def seed_nodes(
    *,
    account_ids: Sequence[int],
    space: SearchSpace,
    scope_ids: Sequence[int],
    vector: Any,
    query: str = "",
) -> list[Seed]:
    """The query's seed nodes among those a unit of the scopes mentions (step 1), at most
    ``MAX_SEED_NODES``: first the nodes the query names (a span's ``name_key`` equal to a
    node's name key or one of its alias keys; the longest spans first, a span inside a longer
    one that matched left out), then the nodes nearest the query's embedding, none farther
    than ``SEED_DISTANCE_THRESHOLD`` and none whose name starts or ends with a function word
    (an n-gram that adds "was" to a name)."""
    graph_scopes = list(
        GraphScope.objects.filter(account_id__in=list(account_ids)).values_list("pk", flat=True)
    )
    if not graph_scopes or not scope_ids:
        return []
    mentioned = (
        "EXISTS (SELECT FROM rag_graphmention m WHERE m.node_id = {n}.id "
        "AND m.space = %(g_space)s AND m.scope_id = ANY(%(g_scopes)s))"
    )
    params: dict[str, Any] = {"g_space": space.name, "g_scopes": list(scope_ids)}
    seeds: list[Seed] = []
    spans = query_names(query) if query else []
    if spans:
        keys = sorted({key for key, _, _ in spans})
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT n.id, n.name, n.entity_type, n.mention_count, n.name_key, n.alias_keys,
                       1 - (n.embedding <=> %(q)s::vector) AS similarity
                FROM rag_graphnode n
                WHERE n.account_id = ANY(%(accounts)s) AND n.status = 'active'
                  AND (n.name_key = ANY(%(keys)s::varchar[]) OR n.alias_keys && %(keys)s::varchar[])
                  AND {mentioned.format(n="n")}
                """,  # noqa: S608 - the condition is code, its values parameters
                {**params, "q": vector_literal(vector), "accounts": list(account_ids),
                 "keys": keys},
            )  # fmt: skip
            rows = cursor.fetchall()
        by_key: dict[str, list[tuple[Any, ...]]] = {}
        for row in rows:
            for key in {row[4], *(row[5] or [])} & set(keys):
                by_key.setdefault(key, []).append(row)
        covered: set[int] = set()
        for key, first, count in spans:  # longest first
            span = set(range(first, first + count))
            if key not in by_key or span & covered:
                continue
            covered |= span
            for node_id, name, entity_type, mentions, node_key, _, similarity in sorted(
                by_key[key],
                key=lambda r: (r[3] or 0, r[0]),  # the rarer node first
            ):
                if all(s.node_id != node_id for s in seeds):
                    match = "name" if node_key == key else "alias"
                    seeds.append(
                        Seed(node_id, name, entity_type, float(similarity or 0.0), match,
                             mentions or 0)
                    )  # fmt: skip
        seeds = seeds[:MAX_SEED_NODES]
    room = MAX_SEED_NODES - len(seeds)
    if room <= 0 or (seeds and EMBEDDING_SEED_WEIGHT <= 0):
        return seeds  # the embedding's seeds would weigh nothing next to the names
    nearest = vector_search(
        space=GRAPH_NODES,
        scope_ids=graph_scopes,
        query_vector=vector,
        limit=MAX_SEED_NODES + room + len(seeds),
        filter_sql="u.status = 'active' AND " + mentioned.format(n="u"),
        filter_params=params,
    )
    known = {s.node_id for s in seeds}
    kept = [(i, s) for i, s in nearest if 1.0 - s <= SEED_DISTANCE_THRESHOLD and i not in known]
    if not kept:
        return seeds
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, name, entity_type, name_key, mention_count FROM rag_graphnode "
            "WHERE id = ANY(%s)",
            [[i for i, _ in kept]],
        )
        names = {row[0]: row[1:] for row in cursor.fetchall()}
    named = [f" {name_key(s.name)} " for s in seeds]
    for node_id, similarity in kept:
        if len(seeds) >= MAX_SEED_NODES:
            break
        if node_id not in names or _junk(names[node_id][2]):
            continue
        if any(key in f" {names[node_id][2]} " for key in named):
            continue  # a named node's n-gram ("selma jessley lives"): the name seeds already
        if named and not EMBEDDING_CONCEPTS_WITH_NAMES and names[node_id][1] == "concept":
            continue
        name, entity_type, _, mentions = names[node_id]
        seeds.append(Seed(node_id, name, entity_type, similarity, "embedding", mentions or 0))
    return seeds


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
    hits = _ppr_hits(
        seeds, reached, edges, mention_rows, similarity, candidates, units, depth, chain=chain,
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


def _passage_weights(candidates: Mapping[int, float]) -> dict[int, float]:
    """The candidates' weights in the reset vector: their scores between the last's and the
    best's (min-max), to the power ``PASSAGE_POWER`` (a flat list of fused scores would
    spread the restart over every candidate alike)."""
    if not candidates:
        return {}
    high, low = max(candidates.values()), min(candidates.values())
    if high <= low:
        return dict.fromkeys(candidates, 1.0)
    return {u: ((s - low) / (high - low)) ** PASSAGE_POWER for u, s in candidates.items()}


def _first_hop_slot(
    scored: list[tuple[float, int]], first_hop: Mapping[int, float]
) -> list[tuple[float, int]]:
    """The first hop's best passage (the seed's passage that gave the walk most, lifted by its
    hybrid rank) moved up to ``CHAIN_FIRST_HOP_RANK`` when it ranks below: it names the bridge,
    evidence the answer needs."""
    if not first_hop or not scored:
        return scored
    best = max(first_hop, key=lambda u: (first_hop[u], -u))
    order = [u for _, u in scored]
    if best not in order or order.index(best) < CHAIN_FIRST_HOP_RANK:
        return scored
    item = scored[order.index(best)]
    rest = [pair for pair in scored if pair[1] != best]
    slot = CHAIN_FIRST_HOP_RANK - 1
    above = rest[slot - 1][0] if slot >= 1 else item[0]
    return [*rest[:slot], (min(above, max(item[0], rest[slot][0])), best), *rest[slot:]]


def _ppr_hits(
    seeds: Sequence[Seed],
    reached: dict[int, Reach],
    edges: Sequence[tuple[Any, ...]],
    mention_rows: Sequence[tuple[int, int, float]],
    similarity: dict[int, float],
    candidates: Mapping[int, float],
    units: int,
    depth: int,
    *,
    chain: bool = False,
    relations: frozenset[str] = frozenset(),
    facts: Sequence[tuple[int, int, int]] = (),
    similarity_weight: float = 0.2,
) -> list[GraphHit]:
    """Step 5: personalized PageRank over the reached entities and the units (``rag.graph.ppr``),
    the units best first by their mass (mixed with their similarity by ``similarity_weight``,
    the space's ``graph_similarity``),
    each explained by the entity that gave it most."""
    index: dict[tuple[str, int], int] = {}

    def at(kind: str, key: int) -> int:
        return index.setdefault((kind, key), len(index))

    # In a small corpus no node is a hub: N counts at least HUB_MIN_MENTIONS units.
    corpus = max(units, HUB_MIN_MENTIONS)
    spec = {n: ppr.specificity(r.mention_count, corpus) for n, r in reached.items()}
    src: list[int] = []
    dst: list[int] = []
    weight: list[float] = []
    mentions: dict[int, list[tuple[int, float]]] = {}
    for node_id, unit_id, salience in mention_rows:
        if node_id not in reached or unit_id not in similarity:
            continue  # a unit the filters leave out, a node the walk did not keep
        w = salience * spec[node_id]
        src.append(at("n", node_id))
        dst.append(at("u", unit_id))
        weight.append(w)
        mentions.setdefault(unit_id, []).append((node_id, w))
    typed = ppr.TYPED_EDGE_WEIGHT
    for a, b, relation, w, *_ in edges:
        if a in reached and b in reached:
            match = RELATION_MATCH if relation in relations else 1.0
            src.append(at("n", a))
            dst.append(at("n", b))
            weight.append(
                match * ppr.edge_weight(relation, w, typed) * math.sqrt(spec[a] * spec[b])
            )
    # A unit stating a relation the query names (a fact) is joined to both its ends.
    for unit_id, a, b in facts:
        if unit_id in similarity:
            for end in (a, b):
                if end in reached:
                    src.append(at("n", end))
                    dst.append(at("u", unit_id))
                    weight.append(FACT_WEIGHT * spec[end])
    for unit_id in candidates:
        if unit_id in similarity:
            at("u", unit_id)
    size = len(index)
    if size == 0:
        return []
    named = {s.node_id for s in seeds if s.match in ("name", "alias")}
    passage_weight = _passage_weights(candidates)
    # On a chain question, the bridge: the named seed's neighbours, each by the candidate
    # passages that name both (their weight x the neighbour's salience there), plus a little
    # by the edge joining them.
    neighbours: dict[int, dict[int, float]] = {}
    if chain and named:
        for a, b, relation, w, *_ in edges:
            for one, other in ((a, b), (b, a)):
                if one in named and other in reached and other not in named:
                    if relation in relations:
                        match = RELATION_MATCH
                    elif relation == ppr.COOCCURS:
                        match = CHAIN_EDGE_PRIOR
                    else:
                        match = CHAIN_TYPED_PRIOR
                    prior = match * ppr.edge_weight(relation, w, 1.0) * spec[other]
                    found = neighbours.setdefault(one, {})
                    found[other] = max(found.get(other, 0.0), prior)
        for unit_id, weight_p in passage_weight.items():
            nodes = mentions.get(unit_id, [])
            for seed_id in {n for n, _ in nodes} & named:
                for other, w in nodes:
                    if other not in named:
                        found = neighbours.setdefault(seed_id, {})
                        found[other] = found.get(other, 0.0) + CHAIN_PASSAGES * weight_p * w
    seed_weights: dict[int, float] = {}
    for seed in seeds:
        if seed.node_id in named:
            strength = 1.0
        else:
            strength = max(0.0, seed.similarity) * (EMBEDDING_SEED_WEIGHT if named else 1.0)
        weight_of = strength * max(spec.get(seed.node_id, 0.0), 1e-3)
        bridge = neighbours.get(seed.node_id, {})
        total = sum(bridge.values())
        if total > 0:
            for other, w in bridge.items():
                i = at("n", other)
                seed_weights[i] = seed_weights.get(i, 0.0) + CHAIN_SHIFT * weight_of * w / total
            weight_of *= 1 - CHAIN_SHIFT
        i = at("n", seed.node_id)
        seed_weights[i] = seed_weights.get(i, 0.0) + weight_of
    passages = {at("u", u): w for u, w in passage_weight.items() if u in similarity and w > 0}
    share = CHAIN_PASSAGE_SHARE if chain and named else PASSAGE_SHARE
    reset = ppr.reset_vector(len(index), seed_weights, passages, share)
    mass = ppr.personalized_pagerank(
        len(index), np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
        np.asarray(weight, dtype=np.float64), reset, damping=ppr.DAMPING,
    )  # fmt: skip
    unit_mass = {u: float(mass[i]) for (kind, u), i in index.items() if kind == "u"}
    first_hop: dict[int, float] = {}
    if chain and named:
        for unit_id, nodes in mentions.items():
            if unit_id in unit_mass and any(n in named for n, _ in nodes):
                first_hop[unit_id] = unit_mass[unit_id] * (1 + passage_weight.get(unit_id, 0.0))
                unit_mass[unit_id] *= CHAIN_FIRST_HOP
    top = max(unit_mass.values(), default=0.0) or 1.0
    scored = sorted(
        (
            (
                (1 - similarity_weight) * unit_mass[u] / top
                + similarity_weight * similarity.get(u, 0.0),
                u,
            )
            for u in unit_mass
            if unit_mass[u] > 0
        ),
        key=lambda pair: (-pair[0], pair[1]),
    )[:depth]
    if chain and named and CHAIN_FIRST_HOP_RANK:
        scored = _first_hop_slot(scored, first_hop)
    hits = []
    for rank, (score, unit_id) in enumerate(scored, start=1):
        contributions = [(mass[index[("n", n)]] * w, n) for n, w in mentions.get(unit_id, [])]
        explanation = None
        if contributions:
            node = reached[max(contributions)[1]]
            origin = reached.get(node.seed_id)
            explanation = {
                "seed": {
                    "node_id": node.seed_id, "name": origin.name if origin else node.path[0][0]
                },
                "node": {
                    "node_id": node.node_id, "name": node.name, "entity_type": node.entity_type
                },
                "hops": node.hops,
                "path": [{"name": name, "relation_type": rel} for name, rel in node.path],
                "community_id": node.community_id,
                "similarity": round(similarity.get(unit_id, 0.0), 6),
                "evidence": round(unit_mass[unit_id] / top, 6),
            }  # fmt: skip
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
