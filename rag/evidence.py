"""Calibrated relevance: how likely a search hit answers a question, as a number in [0, 1].

The engine's fused scores rank well but mean nothing on their own: weighted fusion min-max
normalises each stage per query, so the best hit of any query scores near 1 whether it answers
or not. Agentic RAG needs a score that compares between queries (is this round good enough?)
and between rounds, so each hit gets its **evidence**:

- with a reranker (``RERANK_PROVIDER``), the reranker's own relevance: an ``http`` reranker's
  ``relevance_score`` as is when it is a probability in [0, 1] (Cohere, Jina, bge through
  vLLM), through the logistic function when it is a logit; the ``llm`` reranker's 0-10 grade
  divided by 10;
- without one, a logistic model of two absolute signals of the hit against the question:
  ``SIMILARITY`` x the cosine similarity of their embeddings plus ``COVERAGE`` x the share of
  the question's terms the hit contains, each term weighted by its idf in the searched
  knowledge bases (``term_coverage``), plus ``INTERCEPT``. The coefficients were fitted by
  logistic regression on BEIR SciFact *train* relevance judgements (the top 20 hybrid hits of
  each claim, relevant when their abstract is judged relevant; ``bench/rag/agentic_calibration.py``
  refits and prints them, docs/benchmarks-log.md records the fit), so the evidence reads as the
  probability that the hit is relevant. They belong to the default local embedding model: a
  different model spreads cosine similarities differently, and the fit should be rerun on
  judgements of one's own.

Along a ranking (a round's results, the fused sources), the evidence is made non-increasing by
isotonic regression (pool adjacent violators, ``non_increasing``): the closest sequence, in least
squares, that agrees with the ranking's order. It keeps the mean of the evidence, so a round's
mean calibrated score is its mean evidence, and the scores read best first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from rag.keyword import CorpusStats, analyze, corpus_stats, idf
from rag.search import SearchHit
from rag.spaces import CHUNKS
from rag.tuning import TUNING
from rag.vector import unit_similarities

# The coefficients, fitted on SciFact train, are ``TUNING.evidence`` (rag.tuning).
# The 0-10 scale the LLM reranker grades on (rag.rerank.LLMReranker).
LLM_RERANK_SCALE = 10.0


def logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def term_idf(term: str, stats: CorpusStats) -> float:
    """A term's idf in the corpus; a term the corpus lacks weighs as the rarest possible."""
    return stats.idf(term) or idf(0, max(stats.units, 1))


def term_coverage(
    terms: Sequence[str], present: Iterable[str] | set[str], stats: CorpusStats
) -> float:
    """The idf-weighted share of ``terms`` (analysed question terms) found in ``present``
    (a text's analysed terms): 0 when none, 1 when all."""
    distinct = set(terms)
    if not distinct:
        return 0.0
    found = present if isinstance(present, set) else set(present)
    total = sum(term_idf(t, stats) for t in distinct)
    return sum(term_idf(t, stats) for t in distinct if t in found) / total


def hit_terms(hit: SearchHit) -> set[str]:
    """A hit's analysed terms: its text with its document title and heading path, as the
    chunk is indexed (``rag.indexing``)."""
    return set(analyze(" ".join([hit.document_title, *hit.heading_path, hit.text])))


def hit_evidence(
    *, similarity: float, coverage: float, rerank_score: float | None, reranker: str | None
) -> float:
    """The probability-like evidence, 0 to 1, that a hit answers the question (see above)."""
    if rerank_score is not None and reranker is not None and math.isfinite(rerank_score):
        if reranker == "llm":
            return min(1.0, max(0.0, rerank_score / LLM_RERANK_SCALE))
        if 0.0 <= rerank_score <= 1.0:
            return rerank_score
        return logistic(rerank_score)
    fit = TUNING.evidence
    return logistic(fit.intercept + fit.similarity * similarity + fit.coverage * coverage)


def non_increasing(values: Sequence[float]) -> list[float]:
    """The least-squares non-increasing fit of ``values`` (pool adjacent violators): where a
    later value exceeds an earlier one, both become their mean, until the sequence descends."""
    blocks: list[list[float]] = []  # [mean, count]
    for value in values:
        blocks.append([float(value), 1.0])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            mean, count = blocks.pop()
            previous = blocks[-1]
            total = previous[1] + count
            previous[0] = (previous[0] * previous[1] + mean * count) / total
            previous[1] = total
    fitted: list[float] = []
    for mean, count in blocks:
        fitted.extend([mean] * int(count))
    return fitted


# A context (``memory.context.assembly``'s documents, ``rag.graph.graph_rag``) shows a chunk only
# when its evidence reaches this: chosen on SciFact train, LoCoMo dev as documents and a synthetic
# set by bench/memory/context_floors.py (docs/benchmarks-log.md, "Every source on topic").
# (``TUNING.evidence.context_min``, read at call time by both.)


def chunk_hits_evidence(
    query: str,
    hits: Sequence[SearchHit],
    knowledge_base_ids: Sequence[int],
    query_vector: np.ndarray | None = None,
) -> list[float]:
    """Each chunk hit's evidence against ``query`` without a reranker (``hit_evidence`` of its
    cosine similarity and its idf-weighted term coverage in the searched knowledge bases): what
    a context keeps a chunk on (``TUNING.evidence.context_min``). A hit no vector stage scored (a
    graph search's) has its similarity read, given ``query_vector``. One statement for the term
    statistics; none when there are no hits."""
    if not hits:
        return []
    terms = list(dict.fromkeys(analyze(query)))
    stats = corpus_stats(space=CHUNKS, scope_ids=knowledge_base_ids, terms=terms)
    missing = [hit.chunk_id for hit in hits if hit.vector_score is None]
    read = (
        unit_similarities(space=CHUNKS, unit_ids=missing, query_vector=query_vector)
        if missing and query_vector is not None
        else {}
    )
    return [
        hit_evidence(
            similarity=hit.vector_score
            if hit.vector_score is not None
            else read.get(hit.chunk_id, 0.0),
            coverage=term_coverage(terms, hit_terms(hit), stats),
            rerank_score=None,
            reranker=None,
        )
        for hit in hits
    ]
