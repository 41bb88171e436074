"""Fusion of a search's ranked stage lists into one ranking (``rag.search``)."""

from __future__ import annotations

from core.errors import ValidationFailed
from core.search import MAX_WEIGHT
from rag.tuning import TUNING

FUSIONS: tuple[str, ...] = ("rrf", "weighted", "simple")
# Measured on BEIR SciFact train (docs/benchmarks-log.md): min-max normalised scores weighted
# equally beat reciprocal rank fusion by 0.018 nDCG@10 with the local model.
DEFAULT_FUSION = "weighted"


def default_weights() -> dict[str, float]:
    """The stage weights of a fused search when the caller gives none (``rag.tuning``)."""
    return {"vector": TUNING.fusion.vector_weight, "keyword": TUNING.fusion.keyword_weight}


def fusion_weights(weights: dict[str, float] | None) -> dict[str, float]:
    """The stage weights of a hybrid search, normalised to sum to 1; a stage not given keeps its
    default. Scaling every weight alike never changes a ranking, so normalising is free and keeps
    fused scores comparable between requests."""
    merged = {**default_weights(), **(weights or {})}
    if any(not 0 <= value <= MAX_WEIGHT or value != value for value in merged.values()):
        raise ValidationFailed(
            f"Weights must be numbers from 0 to {MAX_WEIGHT:g}.", code="invalid_weights"
        )
    total = sum(merged.values())
    if total <= 0:
        raise ValidationFailed("At least one weight must be above 0.", code="invalid_weights")
    return {name: value / total for name, value in merged.items()}


def rank_fusion(
    ranked_lists: dict[str, list[tuple[int, float]]],
    *,
    method: str = "rrf",
    weights: dict[str, float] | None = None,
    rrf_k: int | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked (id, score) lists into one ranking of (id, fused score), best first.

    rrf: sum of weight / (rrf_k + rank); weighted: sum of weight x min-max normalised score;
    simple: the best normalised score any list gave the item.
    """
    weights = weights or {}
    rrf_k = TUNING.fusion.rrf_k if rrf_k is None else rrf_k
    fused: dict[int, float] = {}
    for name, ranked in ranked_lists.items():
        weight = weights.get(name, 1.0)
        if not ranked:
            continue
        scores = [score for _, score in ranked]
        low, high = min(scores), max(scores)
        span = high - low
        for rank, (item, score) in enumerate(ranked, start=1):
            if method == "rrf":
                contribution = weight / (rrf_k + rank)
                fused[item] = fused.get(item, 0.0) + contribution
            else:
                normalised = (score - low) / span if span > 0 else 1.0
                if method == "weighted":
                    fused[item] = fused.get(item, 0.0) + weight * normalised
                else:
                    fused[item] = max(fused.get(item, 0.0), normalised)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))
