"""Fit the agentic RAG's calibration (rag/evidence.py) on BEIR SciFact train judgements.

For every train claim whose judged abstracts are in the knowledge base ``rag_eval`` loaded, the
top ``--depth`` hits of a hybrid search each give two features against the claim (cosine
similarity; idf-weighted share of the claim's terms) and a label (its abstract is judged
relevant). A logistic regression (Newton's method) fits P(relevant | features); the script prints
the coefficients to put in rag/tuning.py (``rag.evidence.*``), the fit's log loss, and a
reliability table (mean predicted probability against the observed rate, by bins) for the fitted
and the current coefficients.

    uv run python bench/rag/agentic_calibration.py [--dataset ../shared/data/scifact] \\
        [--queries 400]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import SHARED_DATA, django_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--knowledge-base", default="beir:scifact:256/32")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--depth", type=int, default=20)
    args = parser.parse_args()
    with django_session():
        print(json.dumps(run(args), indent=2))


def run(args: argparse.Namespace) -> dict[str, object]:
    from pathlib import Path

    import numpy as np

    from core.actors import actor_for_agent
    from core.models import Agent
    from rag import evidence
    from rag.evaluation import load_beir
    from rag.keyword import analyze, corpus_stats
    from rag.models import Document, KnowledgeBase
    from rag.search import SearchFilters, chunk_search
    from rag.spaces import CHUNKS
    from rag.tuning import TUNING

    dataset = load_beir(Path(args.dataset), "train")
    kb = KnowledgeBase.objects.get(name=args.knowledge_base)
    actor = actor_for_agent(Agent.objects.filter(account_id=kb.account_id).get(name="evaluator"))
    loaded = dict(Document.objects.filter(knowledge_base=kb).values_list("id", "source_path"))
    present = set(loaded.values())
    usable = [
        (qid, text)
        for qid, text in dataset.queries.items()
        if any(doc in present for doc in dataset.qrels.get(qid, {}))
    ][: args.queries]
    rows: list[tuple[float, float, int]] = []
    for qid, text in usable:
        outcome = chunk_search(
            actor=actor,
            query=text,
            top_k=args.depth,
            filters=SearchFilters(knowledge_base_ids=(kb.pk,)),
        )
        terms = list(dict.fromkeys(analyze(text)))
        stats = corpus_stats(space=CHUNKS, scope_ids=[kb.pk], terms=terms)
        relevant = {d for d, grade in dataset.qrels[qid].items() if grade > 0}
        for hit in outcome.hits:
            coverage = evidence.term_coverage(terms, evidence.hit_terms(hit), stats)
            label = int(loaded.get(hit.document_id) in relevant)
            rows.append((hit.vector_score or 0.0, coverage, label))
    data = np.array(rows, dtype=float)
    features = np.column_stack([np.ones(len(data)), data[:, 0], data[:, 1]])
    labels = data[:, 2]
    weights = np.zeros(3)
    for _ in range(50):  # Newton's method on the log likelihood (with a tiny ridge)
        p = 1 / (1 + np.exp(-features @ weights))
        gradient = features.T @ (labels - p) - 1e-3 * weights
        hessian = (features.T * (p * (1 - p))) @ features + 1e-3 * np.eye(3)
        step = np.linalg.solve(hessian, gradient)
        weights += step
        if np.abs(step).max() < 1e-8:
            break
    fit = TUNING.evidence
    current = np.array([fit.intercept, fit.similarity, fit.coverage])
    return {
        "knowledge_base": kb.name,
        "documents": len(present),
        "queries": len(usable),
        "hits": len(data),
        "relevant_share": round(float(labels.mean()), 4),
        "fitted": {
            "rag.evidence.intercept": round(float(weights[0]), 2),
            "rag.evidence.similarity": round(float(weights[1]), 2),
            "rag.evidence.coverage": round(float(weights[2]), 2),
        },
        "log_loss": {
            "fitted": _log_loss(features, labels, weights),
            "current": _log_loss(features, labels, current),
            "constant": _log_loss(
                features, labels, np.array([math.log(labels.mean() / (1 - labels.mean())), 0, 0])
            ),
        },
        "reliability_fitted": _reliability(features, labels, weights),
        "reliability_current": _reliability(features, labels, current),
    }


def _log_loss(features, labels, weights) -> float:  # type: ignore[no-untyped-def]
    import numpy as np

    p = np.clip(1 / (1 + np.exp(-features @ weights)), 1e-9, 1 - 1e-9)
    return round(float(-(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean()), 4)


def _reliability(features, labels, weights) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    import numpy as np

    p = 1 / (1 + np.exp(-features @ weights))
    table: list[dict[str, object]] = []
    for low in np.arange(0, 1, 0.1):
        inside = (p >= low) & (p < low + 0.1)
        if inside.sum():
            table.append(
                {
                    "bin": f"{low:.1f}-{low + 0.1:.1f}",
                    "hits": int(inside.sum()),
                    "predicted": round(float(p[inside].mean()), 3),
                    "observed": round(float(labels[inside].mean()), 3),
                }
            )
    return table


if __name__ == "__main__":
    main()
