"""Clustering of memory embeddings for cluster maintenance (docs/memory/maintenance.md, "Cluster
maintenance"): UMAP reduces the vectors, HDBSCAN clusters the reduced points, and each cluster
is split into groups whose members are all close to the group's most central member in the
original embedding space. Pure numpy, no database:
``memory.maintenance.services.cluster_maintenance`` feeds it and writes what it finds.

Reproducible: UMAP runs with a fixed ``random_state`` (which also makes it single-threaded),
HDBSCAN is deterministic for a given input, and grouping breaks ties by position.

At scale, UMAP is fitted on a seeded sample of ``umap_sample`` points and the rest are
transformed into the fitted space (docs/benchmarks-log.md, "Cluster maintenance"); small sets
(fewer than ``umap_min_entries``) are clustered on the unit vectors themselves, where UMAP's
neighbour graph would be too thin to mean anything.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory.tuning import TUNING

# UMAP's target dimension (enough for HDBSCAN's density estimate, small enough for its trees)
# and neighbours: ``TUNING.upkeep`` (memory.tuning).
# A cluster split into more groups than this keeps the rest for the next run.
MAX_GROUPS_PER_CLUSTER = 100
# Stragglers compared with the groups' central members this many at a time.
ATTACH_BATCH = 4096
# Whether UMAP's layout step has been given numba's cache in this process (_cache_layout_step).
_layout_cached = False


@dataclass(frozen=True)
class ClusterParams:
    min_cluster_size: int
    min_similarity: float
    seed: int
    umap_min_entries: int
    umap_sample: int

    def as_json(self) -> dict[str, Any]:
        return {
            "min_cluster_size": self.min_cluster_size,
            "min_similarity": self.min_similarity,
            "seed": self.seed,
            "umap_min_entries": self.umap_min_entries,
            "umap_sample": self.umap_sample,
            "umap_components": TUNING.upkeep.umap_components,
            "umap_neighbours": TUNING.upkeep.umap_neighbours,
        }


@dataclass
class Group:
    """Members (positions in the input) close enough to merge: ``central`` first."""

    central: int
    members: list[int]
    similarities: list[float]  # each member's cosine similarity to the central one


@dataclass
class Cluster:
    label: int
    members: list[int]  # positions in the input
    groups: list[Group] = field(default_factory=list)
    # (positions, reason) of members no group took
    left_out: list[tuple[list[int], str]] = field(default_factory=list)


@dataclass
class Clustering:
    clusters: list[Cluster]
    noise: int
    reduction: str  # "umap", "umap (fit on a sample of N)" or "none"
    timings_ms: dict[str, float]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


def reduce(unit: np.ndarray, params: ClusterParams) -> tuple[np.ndarray, str]:
    """The points HDBSCAN clusters: UMAP's embedding of ``unit``, or ``unit`` for small sets."""
    n = len(unit)
    if n < params.umap_min_entries:
        return unit, "none"
    import umap  # imported on use: numba compiles on first import

    _cache_layout_step()
    components = min(TUNING.upkeep.umap_components, n - 2)
    reducer = umap.UMAP(
        n_neighbors=min(TUNING.upkeep.umap_neighbours, n - 1),
        n_components=components,
        min_dist=0.0,
        metric="cosine",
        random_state=params.seed,
        transform_seed=params.seed,
    )
    with warnings.catch_warnings():
        # "n_jobs overridden to 1 by setting random_state": reproducibility is the point.
        warnings.simplefilter("ignore", UserWarning)
        if n <= params.umap_sample:
            return np.asarray(reducer.fit_transform(unit), dtype=np.float32), "umap"
        rng = np.random.default_rng(params.seed)
        sample = np.sort(rng.choice(n, size=params.umap_sample, replace=False))
        reducer.fit(unit[sample])
        points = np.empty((n, components), dtype=np.float32)
        points[sample] = reducer.embedding_
        rest = np.setdiff1d(np.arange(n), sample)
        points[rest] = reducer.transform(unit[rest])
    return points, f"umap (fit on a sample of {params.umap_sample}, the rest transformed)"


def _cache_layout_step() -> None:
    """Let numba cache UMAP's layout step too (NUMBA_CACHE_DIR, config/settings.py).

    umap-learn compiles the step that optimises the embedding, epoch by epoch, without
    numba's cache, so every new process (each worker, each test process) compiled it again:
    most of a warm process's first clustering. The same Python function compiled with the same
    options plus ``cache=True`` is the same machine code, loaded from the cache after the first
    process. Only the serial variant is replaced: a fixed ``random_state`` (``reduce``) keeps
    UMAP single-threaded."""
    global _layout_cached
    if _layout_cached:
        return
    import numba
    from umap import layouts

    layouts._nb_optimize_layout_euclidean_single_epoch = numba.njit(
        layouts._optimize_layout_euclidean_single_epoch,
        fastmath=True,
        parallel=False,
        cache=True,
    )
    _layout_cached = True


def labels_of(points: np.ndarray, params: ClusterParams) -> np.ndarray:
    """HDBSCAN's labels (-1: noise)."""
    import hdbscan

    if len(points) < params.min_cluster_size:
        return np.full(len(points), -1, dtype=int)
    # A small set may be one cluster (then the grouping splits it); a large one never is.
    clusterer = hdbscan.HDBSCAN(
        min_cluster_size=params.min_cluster_size,
        min_samples=1,
        metric="euclidean",
        allow_single_cluster=len(points) < params.umap_min_entries,
    )
    return np.asarray(clusterer.fit_predict(points), dtype=int)


def groups_of(unit: np.ndarray, members: list[int], params: ClusterParams) -> Cluster:
    """Split one cluster into groups: the member nearest the (remaining) members' mean is
    central; every member at cosine >= ``min_similarity`` to it joins its group; repeat on the
    rest. HDBSCAN's clusters in a reduced space can join neighbours that are related but not
    the same memory; this keeps merges to near-duplicates."""
    cluster = Cluster(label=-1, members=list(members))
    remaining = list(members)
    while len(remaining) >= params.min_cluster_size:
        if len(cluster.groups) >= MAX_GROUPS_PER_CLUSTER:
            cluster.left_out.append((remaining, "cluster_group_limit"))
            return cluster
        vectors = unit[remaining]
        centre = vectors.mean(axis=0)
        central_at = int(np.argmax(vectors @ centre))
        similarity = vectors @ vectors[central_at]
        close = [i for i, s in enumerate(similarity) if s >= params.min_similarity]
        if len(close) < params.min_cluster_size:
            # The most central member has no close neighbour: nothing else here will have
            # more. Each remaining member is left as it is.
            cluster.left_out.append((remaining, "below_similarity"))
            return cluster
        central = remaining[central_at]
        ordered = [central_at, *(i for i in close if i != central_at)]
        cluster.groups.append(
            Group(
                central=central,
                members=[remaining[i] for i in ordered],
                similarities=[round(float(similarity[i]), 6) for i in ordered],
            )
        )
        taken = set(close)
        remaining = [m for i, m in enumerate(remaining) if i not in taken]
    if remaining:
        cluster.left_out.append((remaining, "below_similarity"))
    return cluster


def cluster(vectors: np.ndarray, params: ClusterParams) -> Clustering:
    """Reduce, cluster and group ``vectors`` (one row per entry)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    unit = unit_rows(np.asarray(vectors, dtype=np.float32))
    points, reduction = reduce(unit, params)
    timings["reduce"] = _ms(started)
    started = time.perf_counter()
    labels = labels_of(points, params)
    timings["cluster"] = _ms(started)
    started = time.perf_counter()
    clusters: list[Cluster] = []
    for label in sorted(set(labels.tolist()) - {-1}):
        members = [int(i) for i in np.flatnonzero(labels == label)]
        found = groups_of(unit, members, params)
        found.label = int(label)
        clusters.append(found)
    noise = [int(i) for i in np.flatnonzero(labels == -1)]
    attached = _attach(unit, clusters, noise, params)
    timings["group"] = _ms(started)
    return Clustering(
        clusters=clusters,
        noise=len(noise) - attached,
        reduction=reduction,
        timings_ms=timings,
    )


def _attach(
    unit: np.ndarray, clusters: list[Cluster], noise: list[int], params: ClusterParams
) -> int:
    """Stragglers join the group whose central member they are closest to, when at least
    ``min_similarity`` close: HDBSCAN calls a near-duplicate noise when it lies at the edge of
    a dense region (often in small sets), and a cluster's grouping may leave a member out that
    another cluster's group would take. Returns how many noise points joined a group."""
    groups = [(c, g) for c in clusters for g in c.groups]
    left = [(c, i) for c in clusters for positions, _ in c.left_out for i in positions]
    stragglers = [*((None, i) for i in noise), *left]
    if not groups or not stragglers:
        return 0
    centrals = unit[[g.central for _, g in groups]]
    joined: set[int] = set()
    from_noise = 0
    for start in range(0, len(stragglers), ATTACH_BATCH):
        batch = stragglers[start : start + ATTACH_BATCH]
        similarity = unit[[i for _, i in batch]] @ centrals.T
        best = similarity.argmax(axis=1)
        for row, (source, position) in enumerate(batch):
            value = float(similarity[row, best[row]])
            if value < params.min_similarity:
                continue
            cluster, group = groups[int(best[row])]
            group.members.append(position)
            group.similarities.append(round(value, 6))
            if source is None:
                cluster.members.append(position)
                from_noise += 1
            elif source is not cluster:
                source.members.remove(position)
                cluster.members.append(position)
            joined.add(position)
    for cluster in clusters:
        cluster.left_out = [
            (kept, reason)
            for kept, reason in (
                ([i for i in positions if i not in joined], reason)
                for positions, reason in cluster.left_out
            )
            if kept
        ]
    return from_noise


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
