"""A document-level key next to the chunks, on SciFact train (issue 16, "multi-granularity
indexing"; docs/benchmarks-log.md, "What was tried, SciFact train"): each document's title, or its
title and abstract (the model reads the first 256 tokens), embedded by the local model, its
similarity to the claim fused with the chunks' hybrid ranking (weighted 0.5 / 0.5, a document
ranked by its best chunk) in two ways:

- ``cand``: the candidates' documents re-scored, the key's similarity min-max normalised over
  them, times the weight;
- ``stage``: a third stage, the 200 documents nearest by the key, min-max normalised, weighted.

The weight is chosen by 2-fold cross-validation over the train claims (seeded split) and read on
the other fold. Needs the knowledge base ``manage.py rag_eval --dataset DIR --split train``
loads; reads the data from ../shared/data (the product never does). Stage results and the keys'
vectors are cached under ``--cache`` (the system's temporary directory).

    uv run python bench/rag/document_keys.py [--dataset ../shared/data/scifact] [--cache /tmp/keys]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, beir_train_base, chunk_stages, django_session

GRID = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--chunking", default="256/32")
    parser.add_argument(
        "--cache", default=str(Path(tempfile.gettempdir()) / "engram-document-keys")
    )
    args = parser.parse_args()
    with django_session():
        run(args)


def run(args: argparse.Namespace) -> None:
    import numpy as np

    from core.embeddings import get_embedding_provider
    from rag.evaluation import evaluate
    from rag.search import rank_fusion

    dataset, kb, doc_of = beir_train_base(args.dataset, args.chunking)
    provider = get_embedding_provider()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    stages_file = cache / "stages.json"
    if stages_file.exists():
        cached = json.loads(stages_file.read_text())
        stages = cached["stages"]
        vectors = {q: np.asarray(v, dtype=np.float32) for q, v in cached["vectors"].items()}
    else:
        judged = {q: t for q, t in dataset.queries.items() if q in dataset.qrels}
        stages = chunk_stages(kb, judged, 200)
        vectors = {q: stage.pop("query_vector") for q, stage in stages.items()}
        stages_file.write_text(
            json.dumps({"stages": stages, "vectors": {q: v.tolist() for q, v in vectors.items()}})
        )
    ids = sorted(dataset.corpus)
    texts = {
        "title": lambda d: d.title,
        "title_and_abstract": lambda d: f"{d.title}. {d.text}",
    }
    keys = {}
    for name, text_of in texts.items():
        path = cache / f"{name}.npy"
        if not path.exists():
            matrix = provider.embed_documents([text_of(dataset.corpus[i]) for i in ids])
            np.save(path, np.asarray(matrix, dtype=np.float32))
        keys[name] = np.load(path)
    position = {doc: i for i, doc in enumerate(ids)}
    qids = sorted(stages)
    similarities = {
        name: np.stack([vectors[q] for q in qids]) @ matrix.T for name, matrix in keys.items()
    }
    row_of = {q: i for i, q in enumerate(qids)}

    def ndcg(weight: float, key: str, how: str, queries: list[str]) -> float:
        run: dict[str, dict[str, float]] = {}
        for q in queries:
            fused = rank_fusion(
                {"vector": stages[q]["vector"], "keyword": stages[q]["keyword"]},
                method="weighted",
                weights={"vector": 0.5, "keyword": 0.5},
            )
            scores: dict[str, float] = {}
            for chunk_id, score in fused:
                scores.setdefault(doc_of[chunk_id], score)
            if weight:
                sims: Any = similarities[key][row_of[q]]
                if how == "cand":
                    values = np.array([sims[position[d]] for d in scores])
                    low, span = values.min(), (values.max() - values.min()) or 1.0
                    for d in scores:
                        scores[d] += weight * (sims[position[d]] - low) / span
                else:
                    top = np.argsort(-sims)[:200]
                    low, span = sims[top].min(), (sims[top].max() - sims[top].min()) or 1.0
                    for j in top:
                        scores[ids[j]] = scores.get(ids[j], 0.0) + weight * (sims[j] - low) / span
            ranking = sorted(scores.items(), key=lambda p: -p[1])
            run[q] = {d: 1.0 / rank for rank, (d, _) in enumerate(ranking, start=1)}
        return round(evaluate(run, {q: dataset.qrels[q] for q in queries})["ndcg@10"], 4)

    shuffled = list(qids)
    random.Random(16).shuffle(shuffled)
    folds = [shuffled[::2], shuffled[1::2]]
    print(json.dumps({"hybrid": ndcg(0.0, "title", "cand", qids)}))
    for key in keys:
        for how in ("cand", "stage"):
            whole = {w: ndcg(w, key, how, qids) for w in GRID}
            folds_read = []
            for i in (0, 1):
                on_fold = {w: ndcg(w, key, how, folds[i]) for w in GRID}
                chosen = max(GRID, key=on_fold.__getitem__)
                folds_read.append(
                    {
                        "chosen_on_fold": i,
                        "weight": chosen,
                        "other_fold": ndcg(chosen, key, how, folds[1 - i]),
                        "hybrid_on_other_fold": ndcg(0.0, key, how, folds[1 - i]),
                    }
                )
            print(json.dumps({"key": key, "how": how, "ndcg@10": whole, "cv": folds_read}))


if __name__ == "__main__":
    main()
