"""Hybrid search latency at 100k chunks, and ingestion throughput vs the raw embedder.

Data: BEIR SciFact abstracts, read in place from --dataset (download: docs/rag.md, "Evaluating
retrieval"; the default, ../shared/data/scifact beside the project, is the developers' copy).
Every chunk goes through the real ingestion pipeline (extraction, chunking, embedding with the
local model, BM25 postings, HNSW index). Small chunks (--chunk-size tokens) and repeated passes
over the corpus (each pass a separate set of documents) reach the target chunk count.

    uv run python bench/rag/rag_search.py --dataset ~/beir/scifact [--chunks 100000] [--queries 300]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session

# What a search reads: the HNSW graph, the chunk rows it scores, the postings index and the term
# statistics, document rows for filters and hydration.
SEARCH_RELATIONS = (
    "rag_chunk_vec_g1",  # the first embedding generation's index (current_index)
    "rag_chunk",
    "rag_posting_impact",
    "rag_keywordterm",
    "rag_keywordterm_pkey",
    "rag_document",
    "rag_knowledgebase",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--chunk-size", type=int, default=48)
    parser.add_argument("--chunk-overlap", type=int, default=16)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured queries run first")
    parser.add_argument("--throughput-docs", type=int, default=400, help="0 skips this part")
    parser.add_argument("--throughput-rounds", type=int, default=5)
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def run(args: argparse.Namespace) -> dict[str, object]:
    from pathlib import Path

    import numpy as np
    from django.db import connection
    from tqdm import tqdm

    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent
    from core.embeddings import get_embedding_provider
    from core.models import Account, Agent
    from rag import services
    from rag.evaluation import load_beir, percentiles
    from rag.indexing import indexed_text
    from rag.models import Chunk, Document, KnowledgeBase
    from rag.search import SearchFilters, chunk_search

    dataset = load_beir(Path(args.dataset), "train")
    account = Account.objects.filter(slug="engram-bench").first() or core_services.account_create(
        name="Engram benchmarks", slug="engram-bench"
    )
    agent = Agent.objects.filter(
        account=account, name="bench"
    ).first() or core_services.agent_create(
        actor=actor_for_account(account.pk), account=account, name="bench"
    )
    actor = actor_for_agent(agent)
    provider = get_embedding_provider()
    provider.embed_query("warm up")
    docs = list(dataset.corpus.items())

    def load(kb: KnowledgeBase, items: list, prefix: str) -> float:
        """Upload as one batch, then process it as a batch upload's task does."""
        started = time.perf_counter()
        documents = services.documents_create_batch(
            actor=actor,
            kb=kb,
            uploads=[
                {
                    "data": f"{d.title}\n\n{d.text}".encode(),
                    "content_type": "text/plain",
                    "title": d.title[:500],
                    "source": f"{prefix}/{doc_id}",
                }
                for doc_id, d in items
            ],
            enqueue=False,
        )
        services.documents_process_batch(document_ids=[d.pk for d in documents])
        return time.perf_counter() - started

    # 1. The 100k-chunk knowledge base (built once, reused by later runs).
    name = f"bench-{args.chunks}"
    kb = KnowledgeBase.objects.filter(
        account=account, name=name
    ).first() or services.knowledge_base_create(
        actor=actor, name=name, chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap
    )
    passes = 0
    with tqdm(total=args.chunks, desc="chunks") as progress:
        progress.update(kb.chunk_count)
        while kb.chunk_count < args.chunks:
            done = set(Document.objects.filter(knowledge_base=kb).values_list("source", flat=True))
            prefix = f"pass{passes}"
            todo = [(i, d) for i, d in docs if f"{prefix}/{i}" not in done]
            for start in range(0, len(todo), 256):
                before = kb.chunk_count
                load(kb, todo[start : start + 256], prefix)
                kb.refresh_from_db()
                progress.update(kb.chunk_count - before)
                if kb.chunk_count >= args.chunks:
                    break
            passes += 1
    kb.refresh_from_db()

    # 2. Search latency per mode, the query embedding reported separately.
    all_queries = list(dataset.queries.values())
    queries = all_queries[: args.queries]
    # A server in steady state has what search reads in shared buffers (the embedded server sizes
    # them for it): load those relations (pg_prewarm, a contrib extension PostgreSQL ships), then
    # warm up on queries that are not measured.
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for relation in SEARCH_RELATIONS:
            cursor.execute("SELECT pg_prewarm(%s)", [relation])
    for text in all_queries[args.queries : args.queries + args.warmup]:
        for mode in ("vector", "keyword", "hybrid"):
            chunk_search(
                actor=actor,
                query=text,
                mode=mode,
                top_k=10,
                filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
            )
    latency: dict[str, object] = {}
    for mode in ("hybrid", "vector", "keyword"):
        totals, embeds = [], []
        for text in queries:
            outcome = chunk_search(
                actor=actor,
                query=text,
                mode=mode,
                top_k=10,
                filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
            )
            stages = outcome.stage_ms
            embeds.append(stages.get("embed", 0.0))
            totals.append(sum(v for k, v in stages.items() if k != "embed"))
        latency[mode] = {
            "excluding_embedding_ms": {
                k: round(v, 2) for k, v in percentiles(totals, (50, 95, 99)).items()
            },
            "query_embedding_ms": {
                k: round(v, 2) for k, v in percentiles(embeds, (50, 95, 99)).items()
            }
            if any(embeds)
            else None,
        }
    # 3. Ingestion throughput: the pipeline against the raw embedder on the same chunk texts,
    # alternating, several rounds (this machine's speed drifts by several percent between runs).
    # It runs last: its inserts and deletes would disturb the latency run.
    throughput: dict[str, object] = {}
    if args.throughput_docs and args.throughput_rounds:
        sample = docs[: args.throughput_docs]
        rounds = []
        for _ in range(args.throughput_rounds):
            KnowledgeBase.objects.filter(account=account, name="bench-throughput").delete()
            kb_t = services.knowledge_base_create(
                actor=actor, name="bench-throughput", chunk_size=256, chunk_overlap=32
            )
            pipeline_seconds = load(kb_t, sample, "throughput")
            # The raw embedder gets exactly what the pipeline embedded: each chunk in context.
            texts = [
                indexed_text(title=title, heading_path=path, text=text)
                for text, path, title in Chunk.objects.filter(knowledge_base=kb_t)
                .order_by("id")
                .values_list("text", "heading_path", "document__title")
            ]
            started = time.perf_counter()
            provider.embed_documents(texts)
            raw_seconds = time.perf_counter() - started
            rounds.append(
                {
                    "pipeline_chunks_per_s": round(len(texts) / pipeline_seconds, 1),
                    "raw_embedder_chunks_per_s": round(len(texts) / raw_seconds, 1),
                    "ratio": round(raw_seconds / pipeline_seconds, 3),
                }
            )
        throughput = {
            "documents": len(sample),
            "chunks": len(texts),
            "rounds": rounds,
            "median_ratio": statistics.median(r["ratio"] for r in rounds),
        }

    return {
        "chunks": kb.chunk_count,
        "documents": Document.objects.filter(knowledge_base=kb).count(),
        "queries": len(queries),
        "search_latency": latency,
        "ingestion_throughput": throughput,
        "cpu": f"{__import__('os').cpu_count()} cores",
        "numpy": np.__version__,
    }


if __name__ == "__main__":
    main()
