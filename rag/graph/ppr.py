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

import numpy as np

# The probability of following an edge rather than jumping back (HippoRAG 2 uses 0.5).
DAMPING = 0.5
ITERATIONS = 40
TOLERANCE = 1e-7
# A typed relation ("born_in", "leads") against a co-occurrence (1).
TYPED_EDGE_WEIGHT = 2.0
COOCCURS = "co_occurs"


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
