"""Retrieval metrics computed the way trec_eval computes them, plus latency percentiles.

The reference is trec_eval as wrapped by ``pytrec_eval`` (package ``pytrec-eval-terrier``); the
tests compare every per-query value with it to 1e-9. Published BEIR/MTEB figures come from that
tool, so matching it to the last tie is what makes our numbers comparable with theirs.

Inputs:

- a *run* ``{query_id: {doc_id: score}}``: higher score = better; a query's documents need not be
  sorted, and any number of them may be given (the metrics only look at the top k).
- *qrels* ``{query_id: {doc_id: relevance}}``: integer graded judgments; a document counts as
  relevant when its relevance is at least 1 (trec_eval's default ``relevance_level``). Unjudged
  documents count as not relevant.

Semantics, each checked against pytrec_eval:

- **Ranking and ties.** trec_eval keeps scores as single-precision floats and orders a query's
  documents by score descending, then by document id descending (byte-wise string comparison).
  :func:`trec_ranking` does the same, including the float32 rounding, so two scores that differ
  only beyond float32 precision are a tie here exactly as they are there.
- **nDCG@k** (``ndcg_cut_k``): gain = the relevance value itself (linear, not ``2**rel - 1``);
  judgments <= 0 give gain 0; the discount of rank r (1-based) is ``log2(r + 1)``; the ideal DCG
  uses every positively judged document of the qrels (retrieved or not) sorted by relevance,
  truncated at k. A query with no positive judgment scores 0.
- **Recall@k** (``recall_k``): relevant documents in the top k / all relevant documents judged for
  the query; 0 when the query has none.
- **MRR@k**: 1 / rank of the first relevant document within the top k, else 0. This is trec_eval's
  ``recip_rank`` computed on the run truncated to its top k.
- **Averaging (our rule, stricter than pytrec_eval's default).** pytrec_eval only scores queries
  present in the run. :func:`evaluate` averages over *every* query in the qrels: a judged query
  that the run omits (or answers with nothing) scores 0 on every metric, which is what
  ``trec_eval -c`` does. Otherwise a system that fails on its hardest queries would look better
  for it. Queries the run answers but the qrels do not judge are ignored, as trec_eval ignores
  them. Judged queries without any relevant document stay in the mean (at 0), also as trec_eval.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

import numpy as np

Run: TypeAlias = Mapping[str, Mapping[str, float]]
Qrels: TypeAlias = Mapping[str, Mapping[str, int]]

# trec_eval's default: a judgment of at least this much makes a document relevant.
RELEVANCE_LEVEL = 1

DEFAULT_RECALL_KS: tuple[int, ...] = (10, 100)
DEFAULT_PERCENTILES: tuple[float, ...] = (50, 95, 99)


def trec_ranking(scores: Mapping[str, float], *, depth: int | None = None) -> list[str]:
    """Return a query's document ids in the order trec_eval ranks them, best first.

    Order: score descending after rounding to float32 (trec_eval stores scores as C ``float``,
    so e.g. ``1.0`` and ``1.0 + 1e-8`` tie), then document id descending. ``depth`` keeps only
    the top ``depth`` ids, selected without sorting the whole run.

    Preconditions: scores are real numbers, not NaN (NaN has no place in an order and trec_eval's
    handling of it is an accident of its sort); ``depth``, if given, is >= 0. Infinite scores and
    scores beyond the float32 range are fine: they round to +-inf, as in trec_eval.
    """
    if depth is not None and depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    if not scores:
        return []
    doc_ids = list(scores)
    sims = np.fromiter(scores.values(), dtype=np.float64, count=len(doc_ids))
    nan_positions = np.flatnonzero(np.isnan(sims))
    if nan_positions.size:
        raise ValueError(f"score of document {doc_ids[int(nan_positions[0])]!r} is NaN")
    # Overflow to +-inf and underflow to 0 are exactly what a C float cast does in trec_eval.
    with np.errstate(over="ignore", under="ignore"):
        sims32: list[float] = sims.astype(np.float32).tolist()
    # Doc ids are unique (mapping keys), so (score, id) tuples never tie: descending tuple order
    # is trec_eval's "score desc, then docno desc".
    pairs = zip(sims32, doc_ids, strict=True)
    if depth is None or depth >= len(doc_ids):
        ordered = sorted(pairs, reverse=True)
    else:
        ordered = heapq.nlargest(depth, pairs)
    return [doc_id for _, doc_id in ordered]


def _dcg(gains: Iterable[float]) -> float:
    # Summed in rank order, like trec_eval, so the floating-point result agrees with it.
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def _ndcg_of_ranking(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    ideal = sorted((rel for rel in judgments.values() if rel > 0), reverse=True)[:k]
    ideal_dcg = _dcg(ideal)
    if ideal_dcg == 0:
        return 0.0
    dcg = _dcg(max(judgments.get(doc_id, 0), 0) for doc_id in ranking[:k])
    return dcg / ideal_dcg


def _recall_of_ranking(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    relevant = {doc_id for doc_id, rel in judgments.items() if rel >= RELEVANCE_LEVEL}
    if not relevant:
        return 0.0
    found = sum(1 for doc_id in ranking[:k] if doc_id in relevant)
    return found / len(relevant)


def _reciprocal_rank_of_ranking(
    ranking: Sequence[str], judgments: Mapping[str, int], k: int
) -> float:
    for rank, doc_id in enumerate(ranking[:k], start=1):
        if judgments.get(doc_id, 0) >= RELEVANCE_LEVEL:
            return 1.0 / rank
    return 0.0


def _require_cutoff(name: str, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{name} must be a positive int, got {k!r}")


def ndcg_cut(scores: Mapping[str, float], judgments: Mapping[str, int], k: int = 10) -> float:
    """trec_eval's ``ndcg_cut_k`` for one query (see the module docstring for the definition).

    Preconditions: ``k`` >= 1; scores are not NaN; ``judgments`` are the query's integer qrels.
    """
    _require_cutoff("k", k)
    return _ndcg_of_ranking(trec_ranking(scores, depth=k), judgments, k)


def recall_cut(scores: Mapping[str, float], judgments: Mapping[str, int], k: int) -> float:
    """trec_eval's ``recall_k`` for one query: relevant retrieved in the top k / relevant.

    Preconditions: ``k`` >= 1; scores are not NaN; ``judgments`` are the query's integer qrels.
    """
    _require_cutoff("k", k)
    return _recall_of_ranking(trec_ranking(scores, depth=k), judgments, k)


def reciprocal_rank_cut(
    scores: Mapping[str, float], judgments: Mapping[str, int], k: int = 10
) -> float:
    """MRR@k for one query: 1 / rank of the first relevant document in the top k, else 0.

    Preconditions: ``k`` >= 1; scores are not NaN; ``judgments`` are the query's integer qrels.
    """
    _require_cutoff("k", k)
    return _reciprocal_rank_of_ranking(trec_ranking(scores, depth=k), judgments, k)


def evaluate_per_query(
    run: Run,
    qrels: Qrels,
    *,
    ks: Sequence[int] = DEFAULT_RECALL_KS,
    ndcg_k: int = 10,
    mrr_k: int = 10,
) -> dict[str, dict[str, float]]:
    """Score every judged query: ``{query_id: {"ndcg@10": .., "recall@10": .., ...}}``.

    Keys per query are ``ndcg@{ndcg_k}``, ``recall@{k}`` for each k in ``ks`` and
    ``mrr@{mrr_k}``. Every query of ``qrels`` is present, in qrels order; one the run lacks
    scores 0 everywhere. Run queries absent from ``qrels`` are ignored.

    Preconditions: ``ks`` is non-empty and every cutoff is a positive int; no score is NaN.
    """
    if not ks:
        raise ValueError("ks must name at least one recall cutoff")
    for k in ks:
        _require_cutoff("each of ks", k)
    _require_cutoff("ndcg_k", ndcg_k)
    _require_cutoff("mrr_k", mrr_k)
    # One partial sort per query to the deepest cutoff serves every metric.
    depth = max(*ks, ndcg_k, mrr_k)
    empty: Mapping[str, float] = {}
    results: dict[str, dict[str, float]] = {}
    for query_id, judgments in qrels.items():
        ranking = trec_ranking(run.get(query_id, empty), depth=depth)
        values = {f"ndcg@{ndcg_k}": _ndcg_of_ranking(ranking, judgments, ndcg_k)}
        for k in ks:
            values[f"recall@{k}"] = _recall_of_ranking(ranking, judgments, k)
        values[f"mrr@{mrr_k}"] = _reciprocal_rank_of_ranking(ranking, judgments, mrr_k)
        results[query_id] = values
    return results


def mean_of_per_query(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Average per-query metrics over all queries, metric by metric.

    Preconditions: at least one query, and every query carries the same metric keys (as
    :func:`evaluate_per_query` guarantees).
    """
    if not per_query:
        raise ValueError("cannot average metrics over zero queries")
    rows = list(per_query.values())
    names = list(rows[0])
    # fsum: the mean does not depend on query order, so reruns compare bit for bit.
    return {name: math.fsum(row[name] for row in rows) / len(rows) for name in names}


def evaluate(
    run: Run,
    qrels: Qrels,
    *,
    ks: Sequence[int] = DEFAULT_RECALL_KS,
    ndcg_k: int = 10,
    mrr_k: int = 10,
) -> dict[str, float]:
    """Mean metrics over ALL queries of ``qrels`` (missing runs count 0), e.g. with the defaults
    ``{"ndcg@10", "recall@10", "recall@100", "mrr@10"}``.

    Preconditions: ``qrels`` judges at least one query; the rest as :func:`evaluate_per_query`.
    """
    if not qrels:
        raise ValueError("qrels judges no query; there is nothing to average")
    return mean_of_per_query(evaluate_per_query(run, qrels, ks=ks, ndcg_k=ndcg_k, mrr_k=mrr_k))


def percentiles(
    values_ms: Iterable[float], qs: Sequence[float] = DEFAULT_PERCENTILES
) -> dict[str, float]:
    """Latency percentiles keyed ``"p50"``, ``"p95"``, ``"p99.9"`` ... (``f"p{q:g}"``).

    Uses ``numpy.percentile`` with linear interpolation between the two nearest samples (numpy's
    default, the same as Excel's PERCENTILE.INC), so p50 of an even count is the midpoint.

    Preconditions: at least one value, none NaN (a NaN would silently poison every percentile);
    every q in [0, 100].
    """
    samples = np.fromiter(values_ms, dtype=np.float64)
    if samples.size == 0:
        raise ValueError("percentiles of an empty sample are undefined")
    if np.isnan(samples).any():
        raise ValueError("latency samples contain NaN")
    if not qs:
        return {}
    points = np.percentile(samples, list(qs), method="linear")
    return {f"p{q:g}": float(point) for q, point in zip(qs, points, strict=True)}
