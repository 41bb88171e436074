"""Pseudo-relevance feedback for the one search engine: the ``prf`` mode (``rag.search``).

RM3 (Lavrenko and Croft's relevance model, interpolated with the query as Anserini does): the
first pass ranks a space's units as ``hybrid`` does; the best ``units`` of that ranking
are taken as relevant; each of their indexed terms gets the relevance model's weight
``sum over those units of P(unit) x tf(term, unit) / length(unit)`` with ``P(unit)`` the unit's
share of their fused scores; the ``terms`` best terms, normalised, are mixed with the
query's own terms (``original_weight`` to the query). BM25 then runs again with that weighted
query; the vector stage runs again too, its query moved ``vector_feedback`` of the way towards
the feedback units' mean embedding (Rocchio); the two are fused as in ``hybrid``. It works for
every space: the terms come from the space's own postings (``tf`` and the unit's length are on
each posting), the embeddings from its units.

Why: a question names a thing in its own words; the passages that answer it use others. The
first pass finds some of them by the words they share; their other words ("adoption",
"agencies" for "What did she research?") find the rest. Measured in docs/benchmarks-log.md.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core.db_router import read_connection
from rag.keyword import analyze_query, corpus_stats
from rag.spaces import SearchSpace
from rag.tuning import TUNING

# The constants (units, terms, original weight, ...) are ``TUNING.feedback`` (rag.tuning).


@dataclass(frozen=True)
class Expansion:
    """A query after feedback: every term's weight (the query's own and the added ones, summing
    to 1) and the added terms, best first."""

    weights: dict[str, float]
    added: tuple[tuple[str, float], ...]


def unit_terms(
    *, space: SearchSpace, scope_ids: Sequence[int], unit_ids: Sequence[int]
) -> dict[int, Counter[str]]:
    """The indexed terms of some units of a space with their frequencies, from its postings
    (one indexed read: postings are indexed by unit)."""
    if not unit_ids or not scope_ids:
        return {}
    unit = space.posting_unit_column
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT {unit}, term, tf FROM {space.posting_table} "  # noqa: S608 - names are code
            f"WHERE {unit} = ANY(%s) AND {space.scope_column} = ANY(%s)",
            [list(unit_ids), list(scope_ids)],
        )
        found: dict[int, Counter[str]] = {}
        for unit_id, term, tf in cursor.fetchall():
            found.setdefault(int(unit_id), Counter())[term] = int(tf)
    return found


def rm3(
    query_terms: Sequence[str],
    feedback: Sequence[tuple[Mapping[str, int], float]],
    *,
    terms: int | None = None,
    original_weight: float | None = None,
    idfs: Mapping[str, float] | None = None,
) -> Expansion:
    """The RM3 query from the query's analysed terms and the feedback units (each its term
    frequencies and its first-pass score, higher is better). ``idfs``: each term's idf, to
    weigh the relevance model by (a term without one keeps its weight)."""
    tuned = TUNING.feedback
    terms = tuned.terms if terms is None else terms
    original_weight = tuned.original_weight if original_weight is None else original_weight
    own = sorted(set(query_terms))
    model: defaultdict[str, float] = defaultdict(float)
    positive = [(counts, max(score, 0.0)) for counts, score in feedback if counts]
    total_score = math.fsum(score for _, score in positive)
    for counts, score in positive:
        length = sum(counts.values())
        share = score / total_score if total_score > 0 else 1.0 / len(positive)
        for term, tf in counts.items():
            if len(term) >= tuned.min_term_chars:
                model[term] += share * tf / length
    if idfs is not None:
        for term in model:
            model[term] *= idfs.get(term, 1.0)
    best = sorted(model.items(), key=lambda item: (-item[1], item[0]))[:terms]
    mass = math.fsum(weight for _, weight in best)
    if not best or mass <= 0:
        return Expansion({t: 1.0 / len(own) for t in own} if own else {}, ())
    weights: defaultdict[str, float] = defaultdict(float)
    for term in own:
        weights[term] += original_weight / len(own) if own else 0.0
    scale = (1.0 - original_weight) if own else 1.0
    for term, weight in best:
        weights[term] += scale * weight / mass
    added = tuple((t, round(w, 6)) for t, w in best if t not in own)
    return Expansion(dict(weights), added)


def expand(
    *,
    space: SearchSpace,
    scope_ids: Sequence[int],
    query: str,
    ranked: Sequence[tuple[int, float]],
) -> Expansion:
    """The RM3 expansion of ``query`` from the best units of a first-pass ranking."""
    top = list(ranked[: TUNING.feedback.units])
    counts = unit_terms(space=space, scope_ids=scope_ids, unit_ids=[u for u, _ in top])
    idfs = None
    if TUNING.feedback.idf_weighted:
        vocabulary = sorted({term for found in counts.values() for term in found})
        stats = corpus_stats(space=space, scope_ids=scope_ids, terms=vocabulary)
        idfs = {term: stats.idf(term) or 0.0 for term in vocabulary}
    return rm3(
        analyze_query(query),
        [(counts.get(unit_id, Counter()), score) for unit_id, score in top],
        idfs=idfs,
    )


def feedback_vector(
    *, space: SearchSpace, query_vector: np.ndarray, ranked: Sequence[tuple[int, float]]
) -> np.ndarray:
    """Rocchio for the vector stage: the query's embedding moved ``vector_feedback`` of the way
    towards the mean embedding of the best ``units`` units, unit length again."""
    ids = [unit_id for unit_id, _ in ranked[: TUNING.feedback.units]]
    if not ids:
        return query_vector
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT avg({space.embedding_column})::text FROM {space.unit_table} "  # noqa: S608
            f"WHERE id = ANY(%s) AND {space.embedding_column} IS NOT NULL",
            [ids],
        )
        row = cursor.fetchone()
    if not row or row[0] is None:
        return query_vector
    centroid = np.array([float(x) for x in row[0].strip("[]").split(",")], dtype=np.float32)
    share = TUNING.feedback.vector_feedback
    moved = (1 - share) * query_vector + share * centroid
    norm = float(np.linalg.norm(moved))
    return moved / norm if norm > 0 else query_vector
