"""Chunk search latency on an existing knowledge base, to compare two versions of the code back
to back on one database (run this file from each checkout, with ``ENGRAM_DATA_DIR`` naming the
same data directory). Times are the engine's stages without the query embedding, which is
computed once per query before timing.

    uv run python bench/rag/chunk_latency_ab.py --kb "beir:scifact:256/32" --modes hybrid,prf
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", default="beir:scifact:256/32")
    parser.add_argument("--dataset", default="/work/shared/data/scifact")
    parser.add_argument("--modes", default="hybrid")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    with django_session():
        from pathlib import Path

        from core.embeddings import get_embedding_provider
        from rag.evaluation import load_beir, percentiles
        from rag.management.commands.rag_eval import _eval_actor
        from rag.models import KnowledgeBase
        from rag.search import SearchFilters, chunk_search

        actor = _eval_actor()
        kb = KnowledgeBase.objects.get(account_id=actor.account_id, name=args.kb)
        texts = list(load_beir(Path(args.dataset), "train").queries.values())
        texts = texts[: args.queries + args.warmup]
        provider = get_embedding_provider()
        vectors = [provider.embed_query(text) for text in texts]
        report: dict[str, object] = {"chunks": kb.chunk_count, "queries": args.queries}
        for mode in args.modes.split(","):
            times = []
            stages: dict[str, list[float]] = {}
            for number, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                started = time.perf_counter()
                outcome = chunk_search(
                    actor=actor,
                    query=text,
                    mode=mode,
                    top_k=10,
                    filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
                    query_vector=vector,
                )
                if number >= args.warmup:
                    times.append((time.perf_counter() - started) * 1000)
                    for stage, ms in outcome.stage_ms.items():
                        stages.setdefault(stage, []).append(ms)
            report[mode] = {k: round(v, 2) for k, v in percentiles(times, (50, 95, 99)).items()}
            report[f"{mode}_stages"] = {
                stage: {k: round(v, 2) for k, v in percentiles(values, (50, 95)).items()}
                for stage, values in stages.items()
            }
        print(json.dumps(report))


if __name__ == "__main__":
    main()
