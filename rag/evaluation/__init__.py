"""Retrieval evaluation: trec_eval-exact metrics and the BEIR dataset loader.

Pure Python + numpy, no Django models, so benchmarks and tests can use it without a database.
"""

from rag.evaluation.beir import BeirDataset, BeirDoc, BeirFormatError, load_beir
from rag.evaluation.metrics import (
    Qrels,
    Run,
    evaluate,
    evaluate_per_query,
    mean_of_per_query,
    ndcg_cut,
    percentiles,
    recall_cut,
    reciprocal_rank_cut,
    trec_ranking,
)

__all__ = [
    "BeirDataset",
    "BeirDoc",
    "BeirFormatError",
    "Qrels",
    "Run",
    "evaluate",
    "evaluate_per_query",
    "load_beir",
    "mean_of_per_query",
    "ndcg_cut",
    "percentiles",
    "recall_cut",
    "reciprocal_rank_cut",
    "trec_ranking",
]
