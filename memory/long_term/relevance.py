"""Long-term memory's effective relevance (docs/memory/long-term.md): each entry's similarity to a
query weighed with its importance, confidence and recency, read for a search's candidates in
one statement and scored without model instances."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db import connection

from memory.tuning import TUNING
from rag.search import RankedHit

# effective_relevance_score = sum of weight x component (docs/memory/long-term.md), the weights
# ``TUNING.relevance``. Similarity leads: importance, confidence and recency order memories that
# are about equally relevant.
COMPONENTS = ("similarity", "importance", "confidence", "recency")


def relevance_weights() -> dict[str, float]:
    """Each component's weight, as tuned now."""
    weights = TUNING.relevance
    return {name: getattr(weights, name) for name in COMPONENTS}


def recency(idle_days: float) -> float:
    """1 for a memory written or used just now, halving every MEMORY_RECENCY_HALF_LIFE_DAYS."""
    return float(0.5 ** (max(0.0, idle_days) / settings.MEMORY_RECENCY_HALF_LIFE_DAYS))


def relevance_components(
    *, similarity: float, importance: float, confidence: float, idle_days: float
) -> dict[str, float]:
    return {
        "similarity": round(similarity, 6),
        "importance": importance,
        "confidence": confidence,
        "recency": round(recency(idle_days), 6),
    }


def scoring_rows(
    entry_ids: Sequence[int],
    now: datetime,
    *,
    threads: dict[int, str] | None = None,
    speakers: dict[int, str] | None = None,
) -> dict[int, tuple[float, float, float]]:
    """(importance, confidence, days since written or last read) of each entry: one statement,
    no model instances (every search scores up to two hundred candidates). ``threads`` and
    ``speakers``, when given, receive each threaded entry's thread and each spoken entry's
    speaker from the same statement."""
    if not entry_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, importance, confidence, extract(epoch from (%s::timestamptz - "
            "greatest(created_at, coalesce(last_accessed_at, created_at)))) / 86400.0, thread, "
            "speaker FROM memory_memoryentry WHERE id = ANY(%s)",
            [now, list(entry_ids)],
        )
        rows = cursor.fetchall()
    if threads is not None:
        threads.update((row[0], row[4]) for row in rows if row[4])
    if speakers is not None:
        speakers.update((row[0], row[5]) for row in rows if row[5])
    return {row[0]: (row[1], row[2], float(row[3])) for row in rows}


def effective_relevance_score(components: dict[str, float]) -> float:
    weights = relevance_weights()
    return round(sum(weights[name] * components[name] for name in weights), 6)


def best_rows(
    ranked: list[RankedHit],
    similarity: dict[int, float],
    scoring: dict[int, tuple[float, float, float]],
    top_k: int,
) -> list[tuple[RankedHit, tuple[float, float, float]]]:
    """The candidates that can make the page, with their scoring rows: the ``top_k`` best by
    effective relevance computed plainly (no rounding, no components), and any within
    rounding of the last of them. Only these are then scored exactly (a context's history
    scores 450 candidates for its 100)."""
    weights = TUNING.relevance
    w_sim, w_imp, w_conf, w_rec = (
        weights.similarity,
        weights.importance,
        weights.confidence,
        weights.recency,
    )
    rough = []
    for hit in ranked:
        row = scoring.get(hit.unit_id)
        if row is not None:
            importance, confidence, idle = row
            value = w_sim * similarity[hit.unit_id] + w_imp * importance + w_conf * confidence
            rough.append((value + w_rec * recency(idle), hit, row))
    if len(rough) <= top_k:
        return [(hit, row) for _, hit, row in rough]
    rough.sort(key=lambda item: -item[0])
    floor = rough[top_k - 1][0] - 1e-5  # rounding moves a score by about 1e-6 at most
    return [(hit, row) for value, hit, row in rough if value >= floor]
