"""Compare fusion methods and weights on SciFact train from one pass of stage results.

Fetches each query's vector and keyword candidates once (depth 200, as rag_eval does), then scores
every fusion variant offline. Needs the knowledge base `manage.py rag_eval --dataset DIR
--split train` loads (SciFact: docs/rag.md, "Evaluating retrieval").

    uv run python bench/rag/fusion_sweep.py --dataset ~/beir/scifact [--chunking 256/32]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, beir_train_base, chunk_stages, django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--chunking", default="256/32")
    parser.add_argument("--depth", type=int, default=200)
    args = parser.parse_args()
    with django_session():
        run(args)


def run(args: argparse.Namespace) -> None:
    from django.db import connection

    from rag.evaluation import evaluate
    from rag.keyword import keyword_search
    from rag.search import rank_fusion
    from rag.spaces import CHUNKS
    from rag.vector import vector_literal

    dataset, kb, doc_of = beir_train_base(args.dataset, args.chunking)
    stages = chunk_stages(kb, dataset.queries, args.depth)
    for qid, text in dataset.queries.items():
        vector, keyword = stages[qid]["vector"], stages[qid]["keyword"]
        # For "fill-in" fusion: both scores for every candidate either stage returned.
        union = {chunk_id for chunk_id, _ in vector + keyword}
        bm25 = {
            h.unit_id: h.score
            for h in keyword_search(
                space=CHUNKS, scope_ids=[kb.pk], query=text, limit=10**6, postings_per_term=10**9
            )
        }
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, 1 - (embedding <=> %s::vector) FROM rag_chunk WHERE id = ANY(%s)",
                [vector_literal(stages[qid]["query_vector"]), list(union)],
            )
            cosine = dict(cursor.fetchall())
        stages[qid]["filled"] = {c: (float(cosine[c]), bm25.get(c, 0.0)) for c in union}

    def score(fuse) -> float:  # type: ignore[no-untyped-def]
        run = {}
        for qid, lists in stages.items():
            ranking: dict[str, float] = {}
            for rank, (chunk_id, _) in enumerate(fuse(lists), start=1):
                ranking.setdefault(doc_of[chunk_id], 1.0 / rank)
            run[qid] = ranking
        return round(evaluate(run, dataset.qrels)["ndcg@10"], 4)

    def ranked(lists):  # type: ignore[no-untyped-def]
        return {"vector": lists["vector"], "keyword": lists["keyword"]}

    def max_normalised(lists, wv):  # type: ignore[no-untyped-def]
        """Scores divided by the list's best (zero stays zero), weighted sum."""
        fused: dict[int, float] = {}
        for name, weight in (("vector", wv), ("keyword", 1 - wv)):
            items = lists[name]
            if not items:
                continue
            top = max(s for _, s in items) or 1.0
            for item, s in items:
                fused[item] = fused.get(item, 0.0) + weight * s / top
        return sorted(fused.items(), key=lambda p: (-p[1], p[0]))

    def filled(lists, wv, z=False):  # type: ignore[no-untyped-def]
        """Both scores for every candidate, min-max (or z-score) normalised over the union."""
        pairs = lists["filled"]
        fused: dict[int, float] = {}
        for index, weight in ((0, wv), (1, 1 - wv)):
            values = [p[index] for p in pairs.values()]
            if z:
                mean = sum(values) / len(values)
                spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
                norm = {c: (p[index] - mean) / spread for c, p in pairs.items()}
            else:
                low, high = min(values), max(values)
                norm = {c: (p[index] - low) / ((high - low) or 1.0) for c, p in pairs.items()}
            for c, v in norm.items():
                fused[c] = fused.get(c, 0.0) + weight * v
        return sorted(fused.items(), key=lambda p: (-p[1], p[0]))

    results = {
        "vector only": score(lambda s: s["vector"]),
        "keyword only": score(lambda s: s["keyword"]),
    }
    for k in (10, 20, 60):
        for wv in (0.5, 0.4):
            results[f"rrf k={k} vector={wv}"] = score(
                lambda s, k=k, wv=wv: rank_fusion(
                    ranked(s), method="rrf", rrf_k=k, weights={"vector": wv, "keyword": 1 - wv}
                )
            )
    for wv in (0.3, 0.4, 0.5, 0.6, 0.7):
        results[f"weighted min-max vector={wv}"] = score(
            lambda s, wv=wv: rank_fusion(
                ranked(s), method="weighted", weights={"vector": wv, "keyword": 1 - wv}
            )
        )
        results[f"weighted max-only vector={wv}"] = score(lambda s, wv=wv: max_normalised(s, wv))
        results[f"filled min-max vector={wv}"] = score(lambda s, wv=wv: filled(s, wv))
        results[f"filled z-score vector={wv}"] = score(lambda s, wv=wv: filled(s, wv, z=True))
    for name, value in results.items():
        print(json.dumps({"fusion": name, "ndcg@10": value}))


if __name__ == "__main__":
    main()
