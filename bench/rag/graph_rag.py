"""Graph retrieval latency on a 100k-edge graph, and community detection time.

The graph is ``bench/rag/graph_traversal.py``'s (25,000 nodes of nine entity types, 100,000 typed
edges with power-law degrees, most edges within one of 200 communities; fixed seed), built in
its own account (``engram-bench-graphrag``) with what graph retrieval reads besides: every node
an embedding (its community's random centroid plus noise, unit length, under the configured
model's id, so the HNSW index has the communities' structure) and a knowledge base of --chunks
chunks (embedded likewise), each mentioning three nodes of its community (``GraphMention``).
Embeddings are synthetic: the measured searches pass the query's vector (a centroid plus
noise), so the figures exclude the query embedding, as the goal states.

Measured:
- ``communities``: ``rag.graph.services.communities.communities_compute`` over the account
  (Leiden at two levels, seeded, extractive summaries, the swap), and Leiden alone (``detect``);
- ``graph_rank``: the graph stage of a search (seeds by HNSW, the walk, communities, the chunks
  of their nodes, scored), --queries queries after --warmup, for max_hops 1, 2 and 3;
- ``search``: ``chunk_search_staged`` in mode ``graph`` (vector + keyword + graph, fused,
  hydrated), the whole search as the API runs it but the query embedding.

    uv run python bench/rag/graph_rag.py [--chunks 20000] [--queries 200] [--rebuild]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

ACCOUNT_SLUG = "engram-bench-graphrag"
SEED = 20261127


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=25_000)
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--noise",
        type=float,
        default=0.6,
        help="norm of the random noise around a vector's unit community centroid (nodes, chunks"
        " and queries; a build keeps the noise it was made with: --rebuild after changing it)",
    )
    args = parser.parse_args()
    with django_session():
        print(json.dumps(run(args), indent=2))


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def build(account: Any, args: argparse.Namespace) -> tuple[Any, np.ndarray]:
    import io

    from django.db import connection, transaction
    from django.utils import timezone

    from bench.rag.graph_traversal import RELATIONS, generate
    from core.embeddings import get_embedding_provider
    from rag import keyword
    from rag.models import Chunk, Document, GraphEdge, GraphNode, GraphScope, KnowledgeBase
    from rag.spaces import GRAPH_NODES

    provider = get_embedding_provider()
    rng = np.random.default_rng(SEED)
    node_rows, _, edge_rows = generate(args.nodes, args.edges, 0.85)
    dims = provider.dimensions
    centroids = _unit(rng.normal(size=(200, dims)))
    now = timezone.now()
    with transaction.atomic():
        GraphNode.objects.filter(account=account).delete()
        KnowledgeBase.objects.filter(account=account).delete()
        scope, _ = GraphScope.objects.get_or_create(account=account)
        vectors = _unit(
            centroids[[c for _, _, c in node_rows]]
            + args.noise * rng.normal(size=(len(node_rows), dims)) / np.sqrt(dims)
        )
        made = GraphNode.objects.bulk_create(
            [
                GraphNode(
                    account=account, scope=scope, node_type=node_type, entity_type=entity_type,
                    name=f"{entity_type.title()} {number:05d}",
                    name_key=f"{entity_type} {number:05d}",
                    description=f"A {entity_type} of community {c}.", created_at=now,
                    embedding=vectors[number], embedding_model=provider.model_id,
                )
                for number, (entity_type, node_type, c) in enumerate(node_rows)
            ],
            batch_size=2000,
        )  # fmt: skip
        ids = [n.pk for n in made]
        buffer = io.StringIO()
        for s, t, r, weight in edge_rows:
            bidirectional = "t" if RELATIONS[r].bidirectional else "f"
            buffer.write(
                f"{account.pk}\t{ids[s]}\t{ids[t]}\t{RELATIONS[r].name}\t{weight}\t1.0\t"
                f"{bidirectional}\t{{}}\t{now.isoformat()}\t{now.isoformat()}\n"
            )
        with (
            connection.cursor() as cursor,
            cursor.copy(
                f"COPY {GraphEdge._meta.db_table} (account_id, source_id, target_id, "
                "relation_type, weight, confidence, bidirectional, metadata, created_at, "
                "updated_at) FROM STDIN"
            ) as copy,
        ):
            copy.write(buffer.getvalue())
        kb = KnowledgeBase.objects.create(
            account=account, name="bench", embedding_model=provider.model_id
        )
        by_community: dict[int, list[int]] = {}
        for index, (_, _, c) in enumerate(node_rows):
            by_community.setdefault(c, []).append(index)
        per_document = 100
        documents = Document.objects.bulk_create(
            [
                Document(account=account, knowledge_base=kb, title=f"doc {d}",
                         content_type="text/plain", original=b"", checksum=f"{d:064d}",
                         status=Document.Status.INDEXED)
                for d in range(args.chunks // per_document)
            ]
        )  # fmt: skip
        chunk_community = rng.integers(0, 200, size=args.chunks)
        chunk_vectors = _unit(
            centroids[chunk_community]
            + args.noise * rng.normal(size=(args.chunks, dims)) / np.sqrt(dims)
        )
        chunks = Chunk.objects.bulk_create(
            [
                Chunk(account=account, knowledge_base=kb, document=documents[i // per_document],
                      position=i % per_document, text=f"chunk {i} of community {c}",
                      token_count=8, embedding=chunk_vectors[i], embedding_model=provider.model_id)
                for i, c in enumerate(chunk_community.tolist())
            ],
            batch_size=2000,
        )  # fmt: skip
        mention = io.StringIO()
        for chunk, c in zip(chunks, chunk_community.tolist(), strict=True):
            pool = by_community.get(c) or [0]
            for rank, node in enumerate(dict.fromkeys(rng.choice(pool, size=3).tolist())):
                mention.write(
                    f"{account.pk}\t{ids[node]}\tchunks\t{kb.pk}\t{chunk.pk}\t"
                    f"{1.0 / (1 + 0.25 * rank)}\t1\n"
                )
        with connection.cursor() as cursor:
            with cursor.copy(
                "COPY rag_graphmention (account_id, node_id, space, scope_id, unit_id, salience, "
                "occurrences) FROM STDIN"
            ) as copy:
                copy.write(mention.getvalue())
            cursor.execute(
                "UPDATE rag_graphnode n SET mention_count = c.n FROM (SELECT node_id, count(*) n "
                "FROM rag_graphmention WHERE account_id = %s GROUP BY node_id) c "
                "WHERE n.id = c.node_id",
                [account.pk],
            )
    keyword.index_rebuild(space=GRAPH_NODES, scope_id=scope.pk)
    with connection.cursor() as cursor:
        for table in ("rag_graphnode", "rag_graphedge", "rag_graphmention", "rag_chunk"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    return kb, centroids


def percentiles(values: list[float]) -> dict[str, float]:
    return {f"p{p}": round(float(np.percentile(values, p)), 2) for p in (50, 95, 99)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from core import services as core_services
    from core.actors import actor_for_account
    from core.embeddings import get_embedding_provider
    from core.models import Account
    from rag.graph.chunks import chunk_search_staged
    from rag.graph.retrieval import graph_rank
    from rag.graph.services import communities
    from rag.models import GraphEdge, KnowledgeBase
    from rag.search import SearchFilters
    from rag.spaces import CHUNKS

    account = Account.objects.filter(slug=ACCOUNT_SLUG).first() or core_services.account_create(
        name="graph RAG bench", slug=ACCOUNT_SLUG
    )
    kb = KnowledgeBase.objects.filter(account=account, name="bench").first()
    rng = np.random.default_rng(SEED + 1)
    build_seconds = None
    if (
        args.rebuild
        or kb is None
        or GraphEdge.objects.filter(account=account).count() != args.edges
    ):
        started = time.perf_counter()
        kb, _ = build(account, args)
        build_seconds = round(time.perf_counter() - started, 1)
    dims = get_embedding_provider().dimensions
    centroids = _unit(np.random.default_rng(SEED).normal(size=(200, dims)))
    report: dict[str, Any] = {"nodes": args.nodes, "edges": args.edges, "chunks": args.chunks,
                              "noise": args.noise, "build_seconds": build_seconds}  # fmt: skip

    graph, ids = communities._graph(account.pk)
    started = time.perf_counter()
    communities.detect(graph, ids, seed=42, levels=2)
    leiden_seconds = time.perf_counter() - started
    started = time.perf_counter()
    outcome = communities.communities_compute(account_id=account.pk, seed=42)
    report["communities"] = {
        "leiden_seconds": round(leiden_seconds, 2),
        "compute_seconds": round(time.perf_counter() - started, 2),
        **outcome.as_counts(),
    }
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE rag_graphcommunitymember")

    def vectors(n: int) -> list[np.ndarray]:
        picks = rng.integers(0, 200, size=n)
        noise = args.noise * rng.normal(size=(n, dims)) / np.sqrt(dims)
        return list(_unit(centroids[picks] + noise))

    for hops in (1, 2, 3):
        times: list[float] = []
        sizes: list[int] = []
        for number, vector in enumerate(vectors(args.warmup + args.queries)):
            started = time.perf_counter()
            ranking = graph_rank(
                space=CHUNKS, scope_ids=[kb.pk], account_ids=[account.pk], query="bench",
                depth=50, max_hops=hops, query_vector=vector,
            )  # fmt: skip
            if number >= args.warmup:
                times.append((time.perf_counter() - started) * 1000)
                sizes.append(len(ranking.nodes))
        report[f"graph_rank_hops_{hops}_ms"] = percentiles(times)
        report[f"graph_rank_hops_{hops}_nodes_kept"] = percentiles([float(s) for s in sizes])
    actor = actor_for_account(account.pk)
    times = []
    for number, vector in enumerate(vectors(args.warmup + args.queries)):
        started = time.perf_counter()
        chunk_search_staged(
            actor=actor, query="community chunk", mode="graph", top_k=10,
            filters=SearchFilters(knowledge_base_ids=(kb.pk,)), query_vector=vector,
        )  # fmt: skip
        if number >= args.warmup:
            times.append((time.perf_counter() - started) * 1000)
    report["search_graph_mode_ms"] = percentiles(times)
    return report


if __name__ == "__main__":
    main()
