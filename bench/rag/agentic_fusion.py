"""How agentic RAG should order its sources: each claim's rounds run once (offline, ``top_k``
100), then every way of fusing them scored like ``rag_eval`` (a document ranks where its best
chunk does) on BEIR SciFact train, on the knowledge base ``rag_eval`` loaded.

    uv run python bench/rag/agentic_fusion.py [--dataset ../shared/data/scifact] [--queries 200]

Prints one line per variant; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--knowledge-base", default="beir:scifact:256/32")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with django_session():
        for name, metrics in run(args).items():
            print(name, json.dumps(metrics))


def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    from pathlib import Path

    from core.actors import actor_for_agent
    from core.models import Agent
    from rag.agentic.services import agentic_query
    from rag.evaluation import evaluate, load_beir
    from rag.models import Document, KnowledgeBase
    from rag.search import rank_fusion

    dataset = load_beir(Path(args.dataset), "train")
    kb = KnowledgeBase.objects.get(name=args.knowledge_base)
    actor = actor_for_agent(Agent.objects.get(account_id=kb.account_id, name="evaluator"))
    loaded = dict(Document.objects.filter(knowledge_base=kb).values_list("id", "source_path"))
    present = set(loaded.values())
    queries = [
        (qid, text)
        for qid, text in dataset.queries.items()
        if any(doc in present for doc in dataset.qrels.get(qid, {}))
    ][: args.queries]
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for qid, text in queries:
        answer = agentic_query(actor=actor, query=text, knowledge_base_ids=[kb.pk], top_k=100)
        rounds = [[(r.hit.chunk_id, r.evidence) for r in one.results] for one in answer.rounds]
        document_of = {
            r.hit.chunk_id: r.hit.document_id for one in answer.rounds for r in one.results
        }
        best: dict[int, float] = {}
        for one in rounds:
            for chunk, value in one:
                best[chunk] = max(best.get(chunk, 0.0), value)
        lists = {f"round{i}": one for i, one in enumerate(rounds)}

        def rrf(*weights: float, lists: dict[str, list[tuple[int, float]]] = lists) -> list[int]:
            named = {f"round{i}": w for i, w in enumerate(weights)}
            return [c for c, _ in rank_fusion(lists, method="rrf", weights=named)]

        variants = {
            "round 1 alone": [c for c, _ in rounds[0]],
            "rrf 1/1/1": rrf(1, 1, 1),
            "rrf 1/0.5/0.25": rrf(1, 0.5, 0.25),
            "rrf 1/0.3/0.3": rrf(1, 0.3, 0.3),
            "rrf 1/0.2/0.1": rrf(1, 0.2, 0.1),
            "best evidence": sorted(best, key=lambda c: -best[c]),
            "as served (sources)": [s.hit.chunk_id for s in answer.sources],
        }
        for number, one in enumerate(rounds[1:], start=2):
            variants[f"round {number} alone"] = [c for c, _ in one]
        for name, order in variants.items():
            scores: dict[str, float] = {}
            for rank, chunk in enumerate(order[:100], start=1):
                doc = loaded.get(document_of[chunk])
                if doc is not None and doc not in scores:
                    scores[doc] = 1.0 / rank
            runs.setdefault(name, {})[qid] = scores
    qrels = {qid: dataset.qrels[qid] for qid, _ in queries}
    return {
        name: {k: round(v, 4) for k, v in evaluate(run, qrels).items()}
        for name, run in runs.items()
    }


if __name__ == "__main__":
    main()
