"""Sweep BM25's k1 and b and the postings read per query term, on the SciFact train split.

Needs the evaluation knowledge base that `manage.py rag_eval --dataset DIR --split train` loads
(the same one is reused; SciFact: docs/rag.md, "Evaluating retrieval"). Prints nDCG@10 and
keyword-stage latency for each setting, so the constants in rag/keyword.py are chosen by
measurement.

    uv run python bench/rag/bm25_params.py --dataset ~/beir/scifact
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, beir_train_base, django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--k1", default="0.6,0.9,1.2,1.5")
    parser.add_argument("--b", default="0.3,0.4,0.6,0.75")
    parser.add_argument("--postings", default="250,500,1000,2000,100000")
    args = parser.parse_args()
    with django_session():
        run(args)


def run(args: argparse.Namespace) -> None:
    from core import tuning
    from rag import keyword
    from rag.evaluation import evaluate, percentiles
    from rag.spaces import CHUNKS

    dataset, kb, doc_of = beir_train_base(args.dataset, None)

    def score(postings: int) -> tuple[float, dict[str, float]]:
        run: dict[str, dict[str, float]] = {}
        latencies = []
        for qid, text in dataset.queries.items():
            started = time.perf_counter()
            hits = keyword.keyword_search(
                space=CHUNKS, scope_ids=[kb.pk], query=text, limit=200, postings_per_term=postings
            )
            latencies.append((time.perf_counter() - started) * 1000)
            ranking: dict[str, float] = {}
            for rank, hit in enumerate(hits, start=1):
                ranking.setdefault(doc_of[hit.unit_id], 1.0 / rank)
            run[qid] = ranking
        return evaluate(run, dataset.qrels)["ndcg@10"], percentiles(latencies, (50, 95))

    results = []
    for k1, b in itertools.product(map(float, args.k1.split(",")), map(float, args.b.split(","))):
        with tuning.override({"rag.keyword.k1": k1, "rag.keyword.b": b}):
            ndcg, _ = score(tuning.get("rag.keyword.postings_per_term"))
        results.append({"k1": k1, "b": b, "ndcg@10": round(ndcg, 4)})
        print(json.dumps(results[-1]), flush=True)
    for postings in map(int, args.postings.split(",")):
        ndcg, latency = score(postings)
        print(
            json.dumps(
                {
                    "postings_per_term": postings,
                    "ndcg@10": round(ndcg, 4),
                    "keyword_ms": {k: round(v, 2) for k, v in latency.items()},
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
