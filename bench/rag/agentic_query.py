"""Agentic RAG latency offline (no LLM, no reranker): p50 / p95 of ``agentic_query`` next to the
plain hybrid search it runs each round, on the knowledge base ``rag_eval`` loaded from BEIR
SciFact, with SciFact train claims as questions.

    uv run python bench/rag/agentic_query.py [--dataset ../shared/data/scifact] [--queries 200]

Prints one JSON object; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--knowledge-base", default="beir:scifact:256/32")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--max-rounds", type=int, default=3)
    args = parser.parse_args()
    with django_session():
        print(json.dumps(run(args), indent=2))


def run(args: argparse.Namespace) -> dict[str, object]:
    from pathlib import Path

    from django.conf import settings

    from core.actors import actor_for_agent
    from core.models import Agent
    from rag.agentic.services import agentic_query
    from rag.evaluation import load_beir
    from rag.models import KnowledgeBase
    from rag.search import SearchFilters, chunk_search

    assert settings.LLM_PROVIDER == "offline" and settings.RERANK_PROVIDER == "none"
    dataset = load_beir(Path(args.dataset), "train")
    kb = KnowledgeBase.objects.get(name=args.knowledge_base)
    actor = actor_for_agent(Agent.objects.get(account_id=kb.account_id, name="evaluator"))
    texts = list(dataset.queries.values())[: args.warmup + args.queries]
    agentic_ms: list[float] = []
    hybrid_ms: list[float] = []
    rounds: Counter[int] = Counter()
    for index, text in enumerate(texts):
        started = time.perf_counter()
        chunk_search(
            actor=actor,
            query=text,
            top_k=args.top_k,
            filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
        )
        hybrid = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        answer = agentic_query(
            actor=actor,
            query=text,
            max_rounds=args.max_rounds,
            knowledge_base_ids=[kb.pk],
            top_k=args.top_k,
        )
        agentic = (time.perf_counter() - started) * 1000
        if index >= args.warmup:
            hybrid_ms.append(hybrid)
            agentic_ms.append(agentic)
            rounds[len(answer.rounds)] += 1
    return {
        "knowledge_base": kb.name,
        "chunks": kb.chunk_count,
        "queries": len(agentic_ms),
        "top_k": args.top_k,
        "max_rounds": args.max_rounds,
        "rounds": dict(sorted(rounds.items())),
        "agentic_ms": _summary(agentic_ms),
        "hybrid_search_ms": _summary(hybrid_ms),
    }


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "mean": round(statistics.fmean(ordered), 1),
    }


if __name__ == "__main__":
    main()
