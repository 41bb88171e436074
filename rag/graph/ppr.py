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
  ``TUNING.ppr.typed_edge_weight`` for a named relation (``co_occurs`` counts 1) times both ends'
  specificity (square root of their product).

The walk is undirected: from a node it follows its edges in proportion to their weight, and
with probability 1 - ``damping`` (``TUNING.ppr``) jumps back to the reset vector (the query's
seed entities and the candidate passages). Mass that reaches a node with no edge goes back to
the reset vector.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag.graph.graph_types import GraphHit, Reach, Seed
from rag.graph.relations import COOCCURS
from rag.tuning import TUNING

# The walk's weights and shares (damping, typed edges, the reset vector's passages, relation
# chains, named relations) are ``TUNING.ppr`` (rag.tuning), each with its meaning.


def specificity(mentions: int, units: int) -> float:
    """An IDF of a node over ``units`` searched units, in 0..1: log((N + 1) / (df + 1)) /
    log(N + 1); 0 for a node that every unit mentions (hub damping), 1 for one no unit does."""
    n = max(units, 1)
    df = min(max(mentions, 0), n)
    return max(0.0, math.log((n + 1) / (df + 1)) / math.log(n + 1)) if n > 0 else 1.0


def edge_weight(relation_type: str, weight: float, typed_weight: float | None = None) -> float:
    """An entity - entity edge's weight before the ends' specificity."""
    base = math.log1p(max(weight, 0.0))
    if typed_weight is None:
        typed_weight = TUNING.ppr.typed_edge_weight
    return base * (1.0 if relation_type == COOCCURS else typed_weight)


def personalized_pagerank(
    size: int,
    sources: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    reset: np.ndarray,
    *,
    damping: float | None = None,
    iterations: int | None = None,
    tolerance: float | None = None,
) -> np.ndarray:
    """The stationary mass of each of ``size`` nodes under a random walk over the undirected,
    weighted edges (``sources[i]`` - ``targets[i]``, ``weights[i]``) restarting at ``reset``
    (non-negative, normalised here). Power iteration; dangling mass restarts."""
    tuned = TUNING.ppr
    damping = tuned.damping if damping is None else damping
    iterations = tuned.iterations if iterations is None else iterations
    tolerance = tuned.tolerance if tolerance is None else tolerance
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
    best's (min-max), to the power ``TUNING.ppr.passage_power`` (a flat list of fused scores would
    spread the restart over every candidate alike)."""
    if not candidates:
        return {}
    high, low = max(candidates.values()), min(candidates.values())
    if high <= low:
        return dict.fromkeys(candidates, 1.0)
    return {
        u: ((s - low) / (high - low)) ** TUNING.ppr.passage_power for u, s in candidates.items()
    }


def _first_hop_slot(
    scored: list[tuple[float, int]], first_hop: Mapping[int, float]
) -> list[tuple[float, int]]:
    """The first hop's best passage (the seed's passage that gave the walk most, lifted by its
    hybrid rank) moved up to ``chain_first_hop_rank`` (``TUNING.ppr``) when it ranks below: it
    names the bridge, evidence the answer needs."""
    if not first_hop or not scored:
        return scored
    best = max(first_hop, key=lambda u: (first_hop[u], -u))
    order = [u for _, u in scored]
    if best not in order or order.index(best) < TUNING.ppr.chain_first_hop_rank:
        return scored
    item = scored[order.index(best)]
    rest = [pair for pair in scored if pair[1] != best]
    slot = TUNING.ppr.chain_first_hop_rank - 1
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
    first_relations: frozenset[str] | None = None,
    next_relations: Sequence[frozenset[str]] = (),
    facts: Sequence[tuple[int, int, int]] = (),
    similarity_weight: float = 0.2,
) -> list[GraphHit]:
    """Step 5: personalized PageRank over the reached entities and the units (``rag.graph.ppr``),
    the units best first by their mass (mixed with their similarity by ``similarity_weight``,
    the space's ``graph_similarity``),
    each explained by the entity that gave it most."""
    tuned = TUNING.ppr
    # Each node and unit's index in the walk's arrays, in the order first met.
    node_at: dict[int, int] = {}
    unit_at: dict[int, int] = {}

    def at_node(key: int) -> int:
        found = node_at.get(key)
        if found is None:
            found = node_at[key] = len(node_at) + len(unit_at)
        return found

    def at_unit(key: int) -> int:
        found = unit_at.get(key)
        if found is None:
            found = unit_at[key] = len(node_at) + len(unit_at)
        return found

    spec = {n: specificity(r.mention_count, units) for n, r in reached.items()}
    src: list[int] = []
    dst: list[int] = []
    weight: list[float] = []
    mentions: dict[int, list[tuple[int, float]]] = {}
    for node_id, unit_id, salience in mention_rows:
        if node_id not in spec or unit_id not in similarity:
            continue  # a unit the filters leave out, a node the walk did not keep
        w = salience * spec[node_id]
        src.append(at_node(node_id))
        dst.append(at_unit(unit_id))
        weight.append(w)
        mentions.setdefault(unit_id, []).append((node_id, w))
    typed = tuned.typed_edge_weight
    for a, b, relation, w, *_ in edges:
        if a in reached and b in reached:
            match = tuned.relation_match if relation in relations else 1.0
            src.append(at_node(a))
            dst.append(at_node(b))
            weight.append(match * edge_weight(relation, w, typed) * math.sqrt(spec[a] * spec[b]))
    # A unit stating a relation the query names (a fact) is joined to both its ends.
    for unit_id, a, b in facts:
        if unit_id in similarity:
            for end in (a, b):
                if end in reached:
                    src.append(at_node(end))
                    dst.append(at_unit(unit_id))
                    weight.append(tuned.fact_weight * spec[end])
    for unit_id in candidates:
        if unit_id in similarity:
            at_unit(unit_id)
    if not node_at and not unit_at:
        return []
    named = {s.node_id for s in seeds if s.match in ("name", "alias")}
    passage_weight = _passage_weights(candidates)
    # On a chain question, the bridge: the named seed's neighbours, each by the candidate
    # passages that name both (their weight x the neighbour's salience there), plus a little
    # by the edge joining them: most by an edge of the first hop's relations
    # (``first_relations``: the description around the named entity, "works_at" in "who runs
    # the employer of X?", none when it names no known relation), or of any relation the
    # question names when the question has no such description (None).
    neighbours: dict[int, dict[int, float]] = {}
    bridging = relations if first_relations is None else first_relations
    if chain and named:
        for a, b, relation, w, *_ in edges:
            for one, other in ((a, b), (b, a)):
                if one in named and other in reached and other not in named:
                    if relation in bridging:
                        match = tuned.relation_match
                    elif relation == COOCCURS:
                        match = tuned.chain_edge_prior
                    else:
                        match = tuned.chain_typed_prior
                    prior = match * edge_weight(relation, w, 1.0) * spec[other]
                    found = neighbours.setdefault(one, {})
                    found[other] = max(found.get(other, 0.0), prior)
        for unit_id, weight_p in passage_weight.items():
            nodes = mentions.get(unit_id, [])
            for seed_id in {n for n, _ in nodes} & named:
                for other, w in nodes:
                    if other not in named:
                        found = neighbours.setdefault(seed_id, {})
                        found[other] = found.get(other, 0.0) + tuned.chain_passages * weight_p * w
    seed_weights: dict[int, float] = {}
    # A longer chain ("the alma mater of the person the mentor of X married"): each next
    # bridge's relations (``next_relations``) carry ``chain_next_shift`` of a bridge's restart
    # on, over typed edges of those relations only, to the node the next hop names.
    typed_from: dict[int, list[tuple[int, str, float]]] = {}
    if chain and named and next_relations:
        wanted = set().union(*next_relations)
        for a, b, relation, w, *_ in edges:
            if relation in wanted and a in reached and b in reached:
                typed_from.setdefault(a, []).append((b, relation, w))
                typed_from.setdefault(b, []).append((a, relation, w))

    def restart_at(node: int, amount: float, level: int = 0) -> None:
        onward: dict[int, float] = {}
        if level < len(next_relations):
            for other, relation, w in typed_from.get(node, ()):
                if relation in next_relations[level] and other != node and other not in named:
                    weight_on = edge_weight(relation, w, 1.0) * spec[other]
                    onward[other] = max(onward.get(other, 0.0), weight_on)
        total_on = sum(onward.values())
        if total_on > 0:
            moved = tuned.chain_next_shift * amount
            for other, w in onward.items():
                restart_at(other, moved * w / total_on, level + 1)
            amount -= moved
        i = at_node(node)
        seed_weights[i] = seed_weights.get(i, 0.0) + amount

    for seed in seeds:
        if seed.node_id in named:
            strength = 1.0
        else:
            strength = max(0.0, seed.similarity) * (TUNING.seeds.embedding_weight if named else 1.0)
        weight_of = strength * max(spec.get(seed.node_id, 0.0), 1e-3)
        bridge = neighbours.get(seed.node_id, {})
        total = sum(bridge.values())
        if total > 0:
            for other, w in bridge.items():
                restart_at(other, tuned.chain_shift * weight_of * w / total)
            weight_of *= 1 - tuned.chain_shift
        i = at_node(seed.node_id)
        seed_weights[i] = seed_weights.get(i, 0.0) + weight_of
    passages = {at_unit(u): w for u, w in passage_weight.items() if u in similarity and w > 0}
    share = tuned.chain_passage_share if chain and named else tuned.passage_share
    size = len(node_at) + len(unit_at)
    reset = reset_vector(size, seed_weights, passages, share)
    mass = personalized_pagerank(
        size, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
        np.asarray(weight, dtype=np.float64), reset, damping=tuned.damping,
    )  # fmt: skip
    unit_mass = dict(zip(unit_at, mass[list(unit_at.values())].tolist(), strict=True))
    first_hop: dict[int, float] = {}
    if chain and named:
        for unit_id, nodes in mentions.items():
            if unit_id in unit_mass and any(n in named for n, _ in nodes):
                first_hop[unit_id] = unit_mass[unit_id] * (1 + passage_weight.get(unit_id, 0.0))
                unit_mass[unit_id] *= tuned.chain_first_hop
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
    if chain and named and tuned.chain_first_hop_rank:
        scored = _first_hop_slot(scored, first_hop)
    hits = []
    for rank, (score, unit_id) in enumerate(scored, start=1):
        contributions = [(mass[node_at[n]] * w, n) for n, w in mentions.get(unit_id, [])]
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
