"""Knowledge graph traversal latency on a 100k-edge graph: 3-hop neighbours and shortest paths.

The graph: one account's (``engram-bench-graph``) nodes of nine entity types and 100,000 typed
edges of twelve relation types, each type joining the entity types it would join in a real graph
(people work at organisations, pages mention people and concepts, articles cite articles...).
Degrees follow a power law: every node has a fitness drawn from a Pareto distribution, an
edge's target is drawn in proportion to it (the biggest hub gathers over a thousand in-edges) and
its source in proportion to its square root (out-degrees are skewed less). Most edges
(--locality) stay within one of 200 communities, the rest join any two nodes, so walks are local
first and then reach the hubs. ``knows`` and ``related_to`` edges are bidirectional (18% of the
edges). The seed is fixed: the same arguments build the same graph.

Nodes are inserted with ``bulk_create``, edges with one COPY (the services add one edge per
transaction, which would take minutes and measures nothing here); the nodes' BM25 index is then
rebuilt by ``rag.keyword.index_rebuild`` so the account's graph stays consistent (nodes have no
embeddings: traversal never reads them). The graph is reused by later runs if it has the asked
number of nodes and edges; --rebuild deletes and rebuilds it.

Measured: ``rag.graph.neighbours`` (--hops 3), the whole call as the API makes it (the recursive
CTE ordering the nodes found nearest first and keeping the API's --limit, default 100, then
loading them), from --starts random nodes with every relation type,
then only ``links_to`` and only ``related_to`` from random nodes that have such a step; and
``rag.graph.shortest_path`` between random pairs of nodes (a path found and a 404 ``no_path`` both
count). Before measuring, ``pg_prewarm`` loads what traversal reads and --warmup other calls of
each kind run unmeasured. The CTE's own time is reported too (timed around the statement with
``connection.execute_wrapper``); --explain prints EXPLAIN ANALYZE of the slowest CTE of each kind
to stderr. --direction picks the edges followed, as the API's ``?direction=`` does (``both`` by
default, as the API; ``out`` is what every walk followed before directions existed).

--as-agent measures the walks as an agent of the account sees the graph (derived data keeps
the visibility of its source: ``rag.visibility``): every edge step and node entered is checked
against what the agent may read. --private-share S first marks a share S of the nodes and of
the edges as derived from a private memory context the agent may not read (every 1/S-th id;
inside a transaction rolled back at the end, so the stored graph stays as built): the walks
then skip them, as an agent's do a private conversation's.

    uv run python bench/rag/graph_traversal.py [--nodes 25000] [--edges 100000] [--direction both]
        [--explain] [--as-agent [--private-share 0.2]]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

ACCOUNT_SLUG = "engram-bench-graph"
SEED = 20261123
COMMUNITIES = 200

# (entity type, node type, share of the nodes)
ENTITY_TYPES: tuple[tuple[str, str, float], ...] = (
    ("person", "entity", 0.24),
    ("organization", "entity", 0.06),
    ("place", "entity", 0.03),
    ("concept", "concept", 0.20),
    ("page", "document", 0.16),
    ("article", "document", 0.12),
    ("skill", "skill", 0.05),
    ("event", "event", 0.06),
    ("memory", "memory", 0.08),
)


@dataclass(frozen=True)
class Relation:
    name: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    share: float
    bidirectional: bool = False


RELATIONS: tuple[Relation, ...] = (
    Relation(
        "mentions",
        ("page", "article", "memory"),
        ("person", "organization", "place", "concept", "skill", "event"),
        0.25,
    ),
    Relation("links_to", ("page", "article"), ("page", "article"), 0.15),
    Relation("about", ("page", "article", "memory"), ("concept",), 0.10),
    Relation("related_to", ("concept",), ("concept",), 0.10, bidirectional=True),
    Relation("knows", ("person",), ("person",), 0.08, bidirectional=True),
    Relation("has_skill", ("person",), ("skill",), 0.06),
    Relation("works_at", ("person",), ("organization",), 0.05),
    Relation("part_of", ("concept", "organization", "skill"), ("concept", "organization"), 0.05),
    Relation("cites", ("article",), ("article",), 0.05),
    Relation("located_in", ("organization", "event", "person"), ("place",), 0.04),
    Relation("attended", ("person",), ("event",), 0.04),
    Relation("authored", ("person",), ("page", "article"), 0.03),
)
# Filtered walks: a directed relation that chains (pages link to pages) and a bidirectional one.
# Their start nodes are drawn among the nodes with a step of that relation (from elsewhere the
# walk is empty).
FILTERED_RELATIONS = ("links_to", "related_to")
# Whole-call times by the number of neighbours found (loading them is most of a large answer).
SIZE_BUCKETS = ((0, 100), (101, 1000), (1001, 10**9))

# What traversal reads.
TRAVERSAL_RELATIONS = (
    "rag_graphedge",
    "graph_edge_unique",
    "graph_edge_bidirectional",
    "rag_graphedge_pkey",
    "rag_graphnode",
    "rag_graphnode_pkey",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=25_000)
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--locality", type=float, default=0.75, help="edges within a community")
    parser.add_argument("--starts", type=int, default=300, help="measured start nodes / pairs")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls of each kind")
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="neighbours kept per call, as the API's ?limit= (default: the API's default, "
        "100; 0 keeps every neighbour)",
    )
    parser.add_argument(
        "--direction",
        choices=("out", "in", "both"),
        default="both",
        help="edges followed, as the API's ?direction= (default: the API's default, both)",
    )
    parser.add_argument("--as-agent", action="store_true", help="walk as an agent sees it")
    parser.add_argument(
        "--private-share",
        type=float,
        default=0.0,
        help="with --as-agent: this share of nodes and edges private to a context it cannot read",
    )
    parser.add_argument("--rebuild", action="store_true", help="delete the graph and build it")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of the CTEs")
    args = parser.parse_args()
    with django_session():
        report = run_as(args)
    print(json.dumps(report, indent=2))


class _RolledBack(Exception):
    pass


def run_as(args: argparse.Namespace) -> dict[str, Any]:
    """``run``, inside a transaction rolled back when some of the graph is made private."""
    from django.db import transaction

    if not (args.as_agent and args.private_share > 0):
        return run(args)
    report: dict[str, Any] = {}
    try:
        with transaction.atomic():
            report = run(args)
            raise _RolledBack
    except _RolledBack:
        pass
    return report


def _privatise(account_id: int, share: float) -> dict[str, int]:
    """Mark every ``1 / share``-th node and edge as derived from memory context 0 (which no
    agent reads)."""
    from django.db import connection

    every = max(1, round(1 / share))
    counts = {}
    with connection.cursor() as cursor:
        for table in ("rag_graphnode", "rag_graphedge"):
            cursor.execute(
                f"UPDATE {table} SET derived_space = 'memory_entries', derived_scope_id = 0 "  # noqa: S608
                "WHERE account_id = %s AND id %% %s = 0",
                [account_id, every],
            )
            counts[table] = cursor.rowcount
    return counts


# --- the graph -------------------------------------------------------------------------------


def generate(
    nodes: int, edges: int, locality: float
) -> tuple[list[tuple[str, str, int]], dict[str, np.ndarray], list[tuple[int, int, int, float]]]:
    """The graph's shape, deterministic: nodes as (entity type, node type, community) and
    edges as (source index, target index, relation index, weight)."""
    rng = np.random.default_rng(SEED)
    counts = [round(nodes * share) for _, _, share in ENTITY_TYPES]
    counts[0] += nodes - sum(counts)
    node_rows: list[tuple[str, str, int]] = []
    by_type: dict[str, np.ndarray] = {}
    for (entity_type, node_type, _), count in zip(ENTITY_TYPES, counts, strict=True):
        start = len(node_rows)
        by_type[entity_type] = np.arange(start, start + count)
        node_rows.extend((entity_type, node_type, 0) for _ in range(count))
    community = rng.integers(0, COMMUNITIES, size=nodes)
    node_rows = [(t, nt, int(c)) for (t, nt, _), c in zip(node_rows, community, strict=True)]
    fitness = rng.pareto(1.2, size=nodes) + 1.0  # a power-law tail: a few hubs

    def pick(pool: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
        return pool[rng.choice(len(pool), size=size, p=weights / weights.sum())]

    chosen: set[tuple[int, int, int]] = set()
    edge_rows: list[tuple[int, int, int, float]] = []
    quotas = [round(edges * r.share) for r in RELATIONS]
    quotas[0] += edges - sum(quotas)
    for index, (relation, quota) in enumerate(zip(RELATIONS, quotas, strict=True)):
        sources = np.concatenate([by_type[t] for t in relation.sources])
        targets = np.concatenate([by_type[t] for t in relation.targets])
        target_community = community[targets]
        made = 0
        while made < quota:
            want = int((quota - made) * 1.2) + 16
            src = pick(sources, np.sqrt(fitness[sources]), want)
            dst = pick(targets, fitness[targets], want)
            # Most edges stay in the source's community: redraw their targets there.
            local = rng.random(want) < locality
            for c in np.unique(community[src[local]]):
                rows = np.flatnonzero(local & (community[src] == c))
                pool = targets[target_community == c]
                if len(pool):
                    dst[rows] = pick(pool, fitness[pool], len(rows))
            for s, t in zip(src.tolist(), dst.tolist(), strict=True):
                key = (s, t, index)
                if s == t or key in chosen:
                    continue
                if relation.bidirectional and (t, s, index) in chosen:
                    continue  # one bidirectional edge per pair
                chosen.add(key)
                edge_rows.append((s, t, index, round(float(rng.uniform(0.1, 1.0)), 3)))
                made += 1
                if made == quota:
                    break
    return node_rows, by_type, edge_rows


def build(account: Any, args: argparse.Namespace) -> float:
    from django.db import connection, transaction
    from django.utils import timezone

    from rag import keyword
    from rag.models import GraphEdge, GraphNode, GraphScope
    from rag.spaces import GRAPH_NODES

    started = time.perf_counter()
    node_rows, _, edge_rows = generate(args.nodes, args.edges, args.locality)
    now = timezone.now()
    with transaction.atomic():
        GraphNode.objects.filter(account=account).delete()  # edges cascade in the database
        scope, _ = GraphScope.objects.get_or_create(account=account)
        made = GraphNode.objects.bulk_create(
            [
                GraphNode(
                    account=account,
                    scope=scope,
                    node_type=node_type,
                    entity_type=entity_type,
                    name=f"{entity_type.title()} {number:05d}",
                    description=f"A {entity_type} of community {c}.",
                    metadata={"community": c},
                    created_at=now,
                )
                for number, (entity_type, node_type, c) in enumerate(node_rows)
            ],
            batch_size=5000,
        )
        ids = [n.pk for n in made]
        buffer = io.StringIO()
        for s, t, r, weight in edge_rows:
            relation = RELATIONS[r]
            bidirectional = "t" if relation.bidirectional else "f"
            buffer.write(
                f"{account.pk}\t{ids[s]}\t{ids[t]}\t{relation.name}\t{weight}\t1.0\t"
                f"{bidirectional}\t{{}}\t{now.isoformat()}\t{now.isoformat()}\n"
            )
        with connection.cursor() as cursor:
            copy_sql = (
                f"COPY {GraphEdge._meta.db_table} (account_id, source_id, target_id, "
                "relation_type, weight, confidence, bidirectional, metadata, created_at, "
                "updated_at) FROM STDIN"
            )
            with cursor.copy(copy_sql) as copy:
                copy.write(buffer.getvalue())
    keyword.index_rebuild(space=GRAPH_NODES, scope_id=scope.pk)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE rag_graphnode")
        cursor.execute("VACUUM ANALYZE rag_graphedge")
    return time.perf_counter() - started


def shape(account: Any) -> dict[str, Any]:
    """What the built graph looks like, from the database."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH steps AS (
                SELECT source_id AS a FROM rag_graphedge WHERE account_id = %(a)s
                UNION ALL
                SELECT target_id FROM rag_graphedge WHERE account_id = %(a)s AND bidirectional
            ), degree AS (
                SELECT n.id, count(s.a) AS out_steps,
                       (SELECT count(*) FROM rag_graphedge e WHERE e.target_id = n.id) AS in_edges
                FROM rag_graphnode n LEFT JOIN steps s ON s.a = n.id
                WHERE n.account_id = %(a)s GROUP BY n.id
            )
            SELECT count(*),
                   percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY out_steps),
                   max(out_steps),
                   percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY in_edges),
                   max(in_edges),
                   count(*) FILTER (WHERE out_steps = 0)
            FROM degree
            """,
            {"a": account.pk},
        )
        nodes, out_p, out_max, in_p, in_max, sinks = cursor.fetchone()
        cursor.execute(
            "SELECT relation_type, bidirectional, count(*) FROM rag_graphedge "
            "WHERE account_id = %s GROUP BY 1, 2 ORDER BY 3 DESC",
            [account.pk],
        )
        relations = {name: count for name, _, count in cursor.fetchall()}
        cursor.execute(
            "SELECT count(*) FILTER (WHERE bidirectional), count(*) FROM rag_graphedge "
            "WHERE account_id = %s",
            [account.pk],
        )
        bidirectional, edges = cursor.fetchone()
    return {
        "nodes": nodes,
        "edges": edges,
        "bidirectional_edges": bidirectional,
        "relation_types": relations,
        "steps_out_per_node_p50_p90_p99_max": [*out_p, out_max],
        "in_edges_per_node_p50_p90_p99_max": [*in_p, in_max],
        "nodes_without_steps_out": sinks,
    }


# --- measuring -------------------------------------------------------------------------------


class StatementTimer:
    """``connection.execute_wrapper``: the time of each statement whose SQL starts with WITH
    RECURSIVE (the traversal's CTE), and the slowest one's SQL and parameters."""

    def __init__(self) -> None:
        self.times_ms: list[float] = []
        self.slowest: tuple[float, str, Any] = (-1.0, "", None)

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, ctx)
        finally:
            if sql.lstrip().upper().startswith("WITH RECURSIVE"):
                ms = (time.perf_counter() - started) * 1000
                self.times_ms.append(ms)
                if ms > self.slowest[0]:
                    self.slowest = (ms, sql, params)


def rounded(values: list[float]) -> dict[str, float]:
    from rag.evaluation import percentiles

    return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}


def sizes(values: list[int]) -> dict[str, float]:
    array = np.asarray(values)
    return {
        "p50": float(np.percentile(array, 50)),
        "p95": float(np.percentile(array, 95)),
        "max": int(array.max()),
        "mean": round(float(array.mean()), 1),
    }


def by_size(totals: list[float], found: list[int]) -> dict[str, Any]:
    buckets: dict[str, Any] = {}
    for low, high in SIZE_BUCKETS:
        times = [t for t, n in zip(totals, found, strict=True) if low <= n <= high]
        label = f"{low}-{high}" if high < 10**9 else f">={low}"
        buckets[label] = {"calls": len(times), **(rounded(times) if times else {})}
    return buckets


def explain(timer: StatementTimer, label: str) -> None:
    """EXPLAIN ANALYZE of the slowest measured CTE, to stderr."""
    import sys

    from django.db import connection

    ms, sql, params = timer.slowest
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    print(
        f"--- {label}: slowest CTE ({ms:.1f} ms measured), params {params}\n{plan}", file=sys.stderr
    )


def measure(
    calls: list[Callable[[], int]], warmup: list[Callable[[], int]]
) -> tuple[list[float], StatementTimer, list[int]]:
    """Whole-call times, the CTEs' timer and result sizes of ``calls`` (after ``warmup``)."""
    from django.db import connection

    for call in warmup:
        call()
    timer = StatementTimer()
    totals: list[float] = []
    found: list[int] = []
    with connection.execute_wrapper(timer):
        for call in calls:
            started = time.perf_counter()
            found.append(call())
            totals.append((time.perf_counter() - started) * 1000)
    return totals, timer, found


def run(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from core import services as core_services
    from core.errors import NotFound
    from core.models import Account
    from rag.graph import selectors as graph
    from rag.models import GraphEdge, GraphNode

    account = Account.objects.filter(slug=ACCOUNT_SLUG).first() or core_services.account_create(
        name="Engram benchmarks: knowledge graph", slug=ACCOUNT_SLUG
    )
    have_nodes = GraphNode.objects.filter(account=account).count()
    have_edges = GraphEdge.objects.filter(account=account).count()
    build_seconds = None
    if args.rebuild or (have_nodes, have_edges) != (args.nodes, args.edges):
        build_seconds = round(build(account, args), 1)

    ids = list(
        GraphNode.objects.filter(account=account).order_by("pk").values_list("pk", flat=True)
    )
    n, w = args.starts, args.warmup
    rng = np.random.default_rng(SEED + 1)
    picked = [ids[i] for i in rng.choice(len(ids), size=(n + w) * 2, replace=True)]
    with_steps: dict[str, list[int]] = {}
    for name in FILTERED_RELATIONS:
        pool = sorted(
            set(
                GraphEdge.objects.filter(account=account, relation_type=name).values_list(
                    "source_id", flat=True
                )
            )
            | set(
                GraphEdge.objects.filter(
                    account=account, relation_type=name, bidirectional=True
                ).values_list("target_id", flat=True)
            )
        )
        with_steps[name] = [pool[i] for i in rng.choice(len(pool), size=n + w)]
    nodes = GraphNode.objects.defer("embedding").in_bulk(
        picked + [i for pool in with_steps.values() for i in pool]
    )

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for table in TRAVERSAL_RELATIONS:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
            if cursor.fetchone()[0]:
                cursor.execute("SELECT pg_prewarm(%s)", [table])
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('rag_graphedge'))")
        edge_table_size = cursor.fetchone()[0]

    visible = None
    private: dict[str, int] = {}
    if args.as_agent:
        from rag.visibility import Readable, Visibility

        if args.private_share > 0:
            private = _privatise(account.pk, args.private_share)
        # An agent reading one context, none of the graph's: every check runs.
        visible = Visibility((account.pk,), {"memory_entries": Readable(scope_ids=(-1,))})
    # The API asks for one more than it shows (to tell a truncated answer).
    kept = graph.DEFAULT_NEIGHBOURS if args.limit is None else args.limit
    limit = kept + 1 if kept else None

    def neighbours(node_id: int, relation: str | None) -> Callable[[], int]:
        node = nodes[node_id]
        return lambda: len(
            graph.neighbours(
                node=node,
                hops=args.hops,
                relation_types=[relation] if relation else [],
                direction=args.direction,
                limit=limit,
                visible=visible,
            )
        )

    def path(source_id: int, target_id: int) -> Callable[[], int]:
        source, target = nodes[source_id], nodes[target_id]

        def call() -> int:
            try:
                path = graph.shortest_path(
                    source=source, target=target, direction=args.direction, visible=visible
                )
                return len(path.edges)
            except NotFound:
                return -1

        return call

    report: dict[str, Any] = {}
    walks: list[tuple[str, str | None, list[int]]] = [("all_relations", None, picked)]
    walks += [(f"relation_{r}", r, with_steps[r]) for r in FILTERED_RELATIONS]
    for label, relation, starts in walks:
        totals, timer, found = measure(
            [neighbours(node, relation) for node in starts[:n]],
            [neighbours(node, relation) for node in starts[n : n + w]],
        )
        name = f"neighbours_hops{args.hops}_{label}"
        report[name] = {
            "calls": len(totals),
            "ms": rounded(totals),
            "cte_ms": rounded(timer.times_ms),
            "neighbours_found": sizes(found),
            "ms_by_neighbours_found": by_size(totals, found),
        }
        if args.explain:
            explain(timer, name)
    pairs = list(zip(picked[: n + w], picked[n + w :], strict=True))
    totals, timer, found = measure(
        [path(a, b) for a, b in pairs[:n]], [path(a, b) for a, b in pairs[n:]]
    )
    hops = [h for h in found if h >= 0]
    found_ms = [t for t, h in zip(totals, found, strict=True) if h >= 0]
    missing_ms = [t for t, h in zip(totals, found, strict=True) if h < 0]
    report["shortest_path"] = {
        "calls": len(totals),
        "ms": rounded(totals),
        "cte_ms": rounded(timer.times_ms),
        "found": len(hops),
        "no_path": len(found) - len(hops),
        "hops_of_found": sizes(hops) if hops else None,
        "ms_found": rounded(found_ms) if found_ms else None,
        "ms_no_path": rounded(missing_ms) if missing_ms else None,
    }
    if args.explain:
        explain(timer, "shortest_path")
    return {
        "graph": {
            **shape(account),
            "edge_table_with_indexes": edge_table_size,
            "build_seconds_this_run": build_seconds,
        },
        "direction": args.direction,
        "as_agent": args.as_agent,
        "private_rows": private,
        **report,
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "cpu": f"{os.cpu_count()} cores",
    }


if __name__ == "__main__":
    main()
