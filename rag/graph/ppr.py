"""Personalized PageRank over a local graph of entities and passages (graph mode's ranking,
``rag.graph.retrieval``), in numpy: the subgraph is small (hundreds to a few thousand nodes),
read by a few SQL queries, and walked here in well under a millisecond per iteration.

The graph (HippoRAG 2, Gutiérrez et al. 2025, with Engram's entities):

- **nodes**: the entities the query's seeds and the dense / keyword candidates reach, and the
  passages (units: chunks, memory entries) that mention them;
- **passage - entity** edges, one per mention, weighted by the mention's salience times the
  entity's *specificity* (an IDF over the searched units: a node that every unit mentions has
  specificity 0 and carries nothing, a speaker who says every turn no more than a word they all
  share);
- **entity - entity** edges, the graph's own, weighted by log(1 + weight) times
  ``TYPED_EDGE_WEIGHT`` for a named relation (``co_occurs`` counts 1) times both ends'
  specificity (square root of their product).

The walk is undirected: from a node it follows its edges in proportion to their weight, and
with probability 1 - ``DAMPING`` jumps back to the reset vector (the query's seed entities and
the candidate passages). Mass that reaches a node with no edge goes back to the reset vector.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag.graph import seeds as seeding
from rag.graph.graph_types import GraphHit, Reach, Seed
from rag.graph.relations import COOCCURS

# The probability of following an edge rather than jumping back (HippoRAG 2 uses 0.5).
DAMPING = 0.5
ITERATIONS = 40
TOLERANCE = 1e-7
# A typed relation ("born_in", "leads") against a co-occurrence (1).
TYPED_EDGE_WEIGHT = 2.0
# The reset vector's candidates (the other stages' best hits): ``PASSAGE_SHARE`` of the
# restart, each by its score between the last's and the best's to the power ``PASSAGE_POWER``.
PASSAGE_SHARE = 0.15
PASSAGE_POWER = 2.0
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


def specificity(mentions: int, units: int) -> float:
    """An IDF of a node over ``units`` searched units, in 0..1: log((N + 1) / (df + 1)) /
    log(N + 1); 0 for a node that every unit mentions (hub damping), 1 for one no unit does."""
    n = max(units, 1)
    df = min(max(mentions, 0), n)
    return max(0.0, math.log((n + 1) / (df + 1)) / math.log(n + 1)) if n > 0 else 1.0


def edge_weight(
    relation_type: str, weight: float, typed_weight: float = TYPED_EDGE_WEIGHT
) -> float:
    """An entity - entity edge's weight before the ends' specificity."""
    base = math.log1p(max(weight, 0.0))
    return base * (1.0 if relation_type == COOCCURS else typed_weight)


def personalized_pagerank(
    size: int,
    sources: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    reset: np.ndarray,
    *,
    damping: float = DAMPING,
    iterations: int = ITERATIONS,
    tolerance: float = TOLERANCE,
) -> np.ndarray:
    """The stationary mass of each of ``size`` nodes under a random walk over the undirected,
    weighted edges (``sources[i]`` - ``targets[i]``, ``weights[i]``) restarting at ``reset``
    (non-negative, normalised here). Power iteration; dangling mass restarts."""
    total = float(reset.sum())
    if size == 0 or total <= 0:
        return np.zeros(size)
    r = reset / total
    keep = weights > 0
    src = np.concatenate([sources[keep], targets[keep]])
    dst = np.concatenate([targets[keep], sources[keep]])
    w = np.concatenate([weights[keep], weights[keep]]).astype(np.float64)
    degree = np.bincount(src, weights=w, minlength=size)
    transition = w / np.where(degree[src] > 0, degree[src], 1.0)
    dangling = degree == 0
    p = r.copy()
    for _ in range(iterations):
        spread = np.bincount(dst, weights=p[src] * transition, minlength=size)
        lost = float(p[dangling].sum())
        following = (1 - damping) * r + damping * (spread + lost * r)
        if float(np.abs(following - p).sum()) < tolerance:
            p = following
            break
        p = following
    return p


def reset_vector(
    size: int,
    seeds: Mapping[int, float],
    passages: Mapping[int, float],
    passage_share: float,
) -> np.ndarray:
    """The restart distribution: ``seeds`` (node index -> weight) share 1 - ``passage_share``,
    ``passages`` (index -> score) the rest; either side alone takes everything."""
    reset = np.zeros(size)
    seed_total = sum(seeds.values())
    passage_total = sum(passages.values())
    share = (
        passage_share if seed_total > 0 and passage_total > 0 else (1.0 if passage_total else 0.0)
    )
    if seed_total > 0:
        for index, weight in seeds.items():
            reset[index] += (1 - share) * weight / seed_total
    if passage_total > 0:
        for index, weight in passages.items():
            reset[index] += share * weight / passage_total
    return reset


def ranked(values: Sequence[float]) -> list[int]:
    """Indices by value, best first (ties by index)."""
    return sorted(range(len(values)), key=lambda i: (-values[i], i))


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


def rank_units(
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

    spec = {n: specificity(r.mention_count, units) for n, r in reached.items()}
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
    typed = TYPED_EDGE_WEIGHT
    for a, b, relation, w, *_ in edges:
        if a in reached and b in reached:
            match = RELATION_MATCH if relation in relations else 1.0
            src.append(at("n", a))
            dst.append(at("n", b))
            weight.append(match * edge_weight(relation, w, typed) * math.sqrt(spec[a] * spec[b]))
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
                    elif relation == COOCCURS:
                        match = CHAIN_EDGE_PRIOR
                    else:
                        match = CHAIN_TYPED_PRIOR
                    prior = match * edge_weight(relation, w, 1.0) * spec[other]
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
            strength = max(0.0, seed.similarity) * (seeding.EMBEDDING_SEED_WEIGHT if named else 1.0)
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
    reset = reset_vector(len(index), seed_weights, passages, share)
    mass = personalized_pagerank(
        len(index), np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
        np.asarray(weight, dtype=np.float64), reset, damping=DAMPING,
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
