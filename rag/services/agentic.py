"""Agentic RAG: search in rounds until the results suffice, then answer with citations.

Each round (docs/rag.md, "Agentic RAG"):

1. **search**: a hybrid search of the caller's knowledge bases through the one engine
   (``rag.search.chunk_search``), **reranked** by ``rag.rerank`` when a reranker is configured;
2. **calibration**: every hit gets a score in [0, 1] that estimates how likely it answers the
   *original* question (``rag.evidence``), comparable between rounds and queries;
3. **sufficiency**: the round suffices when it found at least ``MIN_RELEVANT_RESULTS`` results
   and their mean calibrated score is at least ``MIN_AVG_SCORE``;
4. **gaps**: the question's words that none of the round's best results contains;
5. **reformulation** (unless the round sufficed or was the last): the configured LLM rewrites
   the query to cover the gaps; offline, pseudo-relevance feedback adds the most telling words
   of the round's best results to the query.

Then **synthesis** over the sources (every round's results fused, best first): the LLM answers
citing sources by number, or offline the best sentences of the sources, each cited.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from core.llm import get_llm_provider
from core.llm.base import InvalidJSONError
from core.search import MAX_QUERY_CHARS, top_k_check
from rag import evidence
from rag.keyword import CorpusStats, analyze, corpus_stats
from rag.rerank import get_reranker
from rag.search import (
    RRF_K,
    SearchFilters,
    SearchHit,
    chunk_search,
    knowledge_bases_for_search,
    rank_fusion,
    search_options_validate,
)
from rag.spaces import CHUNKS
from rag.vector import unit_similarities

logger = logging.getLogger("engram.rag")

# The seed's constants (issue 19).
DEFAULT_MAX_ROUNDS = 3
MAX_ROUNDS_LIMIT = 5
MIN_RELEVANT_RESULTS = 3
MIN_AVG_SCORE = 0.5
# Pseudo-relevance feedback: words taken from the round's best results.
FEEDBACK_RESULTS = 3
EXPANSION_TERMS = 5
# Sources: every round's results fused by reciprocal rank, the question's own round weighing 1
# and the n-th reformulation this over n (measured on SciFact train, docs/benchmarks-log.md:
# reformulated queries drift, and weighing them equally cost 0.011 nDCG@10).
REFORMULATED_WEIGHT = 0.2
# The results whose words count as covering the question (gap identification).
COVERING_RESULTS = 5
# Offline synthesis: at most this many sentences, from at most this many sources.
ANSWER_SENTENCES = 3
ANSWER_SOURCES = 5
# The LLM sees at most this many sources, each cut to this many characters.
LLM_SOURCES = 8
LLM_SOURCE_CHARS = 1500
ANSWER_MAX_TOKENS = 600

_CITATION = re.compile(r"\[(\d{1,3})\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


@dataclass
class ScoredHit:
    """A search hit with its calibrated score (``score``) and the evidence behind it."""

    hit: SearchHit
    score: float
    evidence: float
    similarity: float
    coverage: float
    round: int
    ref: int = 0
    cited: bool = False


@dataclass
class AgenticRound:
    query: str
    results: list[ScoredHit]
    sufficient: bool
    avg_score: float
    gaps: list[str]
    reformulated_query: str | None = None
    reformulated_by: str = ""


@dataclass
class AgenticAnswer:
    answer: str
    sources: list[ScoredHit]
    rounds: list[AgenticRound]
    total_results: int
    synthesized_by: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)


def agentic_options_validate(*, query: str, max_rounds: int, top_k: int) -> None:
    """The bounds of an agentic query (400 with a code): those of every search, and
    ``max_rounds`` from 1 to ``MAX_ROUNDS_LIMIT`` (``invalid_max_rounds``)."""
    search_options_validate(query=query, mode="hybrid", fusion="rrf", top_k=top_k)
    top_k_check(top_k)
    if isinstance(max_rounds, bool) or not 1 <= max_rounds <= MAX_ROUNDS_LIMIT:
        raise ValidationFailed(
            f"max_rounds must be from 1 to {MAX_ROUNDS_LIMIT}.",
            code="invalid_max_rounds",
            details={"max": MAX_ROUNDS_LIMIT},
        )


def agentic_query(
    *,
    actor: Actor,
    query: str,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    knowledge_base_ids: Sequence[int] = (),
    top_k: int = 10,
) -> AgenticAnswer:
    """Answer ``query`` from the caller's knowledge bases (all of them, or the given ones: a
    foreign or unknown id is 404 ``knowledge_base_not_found``) in at most ``max_rounds``
    rounds of search; see the module's docstring. Reads only: nothing is recorded."""
    agentic_options_validate(query=query, max_rounds=max_rounds, top_k=top_k)
    kb_ids = knowledge_bases_for_search(actor=actor, requested=knowledge_base_ids)
    filters = SearchFilters(knowledge_base_ids=tuple(kb_ids))
    reranker = get_reranker()
    llm = get_llm_provider()
    use_llm = not llm.model_id.startswith("offline:")
    question_terms = _distinct(analyze(query))
    stats = corpus_stats(space=CHUNKS, scope_ids=kb_ids, terms=question_terms)
    question_vector = get_embedding_provider().embed_query(query)

    rounds: list[AgenticRound] = []
    seen: dict[int, ScoredHit] = {}
    ranked_lists: dict[str, list[tuple[int, float]]] = {}
    current = query
    for number in range(1, max_rounds + 1):
        outcome = chunk_search(
            actor=actor,
            query=current,
            mode="hybrid",
            top_k=top_k,
            filters=filters,
            rerank=reranker is not None,
            query_vector=question_vector if current == query else None,
        )
        results = _scored(
            outcome.hits,
            question_terms=question_terms,
            stats=stats,
            question_vector=question_vector if current != query else None,
            reranker=reranker.name if reranker is not None else None,
            round_number=number,
        )
        # The mean calibrated score (isotonic calibration keeps the mean of the evidence).
        avg = round(sum(r.score for r in results) / len(results), 4) if results else 0.0
        sufficient = len(results) >= MIN_RELEVANT_RESULTS and avg >= MIN_AVG_SCORE
        this = AgenticRound(
            query=current,
            results=results,
            sufficient=sufficient,
            avg_score=avg,
            gaps=_gaps(query, question_terms, results, stats),
        )
        rounds.append(this)
        ranked_lists[f"round{number}"] = [(r.hit.chunk_id, r.score) for r in results]
        for result in results:
            best = seen.get(result.hit.chunk_id)
            if best is None or result.evidence > best.evidence:
                seen[result.hit.chunk_id] = result
        if sufficient or number == max_rounds:
            break
        this.reformulated_query, this.reformulated_by = _reformulate(
            question=query,
            current=current,
            earlier=[r.query for r in rounds],
            gaps=this.gaps,
            results=results,
            use_llm=use_llm,
            kb_ids=kb_ids,
        )
        current = this.reformulated_query

    sources = _fused_sources(ranked_lists, seen, top_k=top_k)
    answer, by = _synthesize(query, sources, question_terms, stats, use_llm=use_llm)
    return AgenticAnswer(
        answer=answer, sources=sources, rounds=rounds, total_results=len(seen), synthesized_by=by
    )


# --- scoring --------------------------------------------------------------------------------


def _scored(
    hits: list[SearchHit],
    *,
    question_terms: list[str],
    stats: CorpusStats,
    question_vector: np.ndarray | None,
    reranker: str | None,
    round_number: int,
) -> list[ScoredHit]:
    """The round's hits in the engine's order, each with its evidence against the question
    and its calibrated score (the evidence made non-increasing along that order)."""
    similarities: dict[int, float] = {}
    if question_vector is not None:  # a reformulated round: measure against the question
        similarities = unit_similarities(
            space=CHUNKS, unit_ids=[h.chunk_id for h in hits], query_vector=question_vector
        )
    scored = []
    for hit in hits:
        similarity = similarities.get(hit.chunk_id, hit.vector_score or 0.0)
        coverage = evidence.term_coverage(question_terms, evidence.hit_terms(hit), stats)
        value = evidence.hit_evidence(
            similarity=similarity,
            coverage=coverage,
            rerank_score=hit.rerank_score,
            reranker=reranker,
        )
        scored.append(
            ScoredHit(
                hit=hit,
                score=value,
                evidence=value,
                similarity=similarity,
                coverage=coverage,
                round=round_number,
            )
        )
    _calibrate_along(scored)
    return scored


def _calibrate_along(items: list[ScoredHit]) -> None:
    for item, score in zip(
        items, evidence.non_increasing([i.evidence for i in items]), strict=True
    ):
        item.score = round(score, 4)


def _fused_sources(
    ranked_lists: dict[str, list[tuple[int, float]]], seen: dict[int, ScoredHit], *, top_k: int
) -> list[ScoredHit]:
    """Every round's results in one ranking (weighted reciprocal rank fusion: a chunk several
    queries found rises; the question's own round weighs most), cut to ``top_k``, numbered from
    1, each calibrated along that order."""
    weights = {
        name: 1.0 if number == 0 else REFORMULATED_WEIGHT / number
        for number, name in enumerate(ranked_lists)
    }
    order = rank_fusion(ranked_lists, method="rrf", weights=weights, rrf_k=RRF_K)[:top_k]
    sources = []
    for ref, (chunk_id, _) in enumerate(order, start=1):
        best = seen[chunk_id]
        sources.append(
            ScoredHit(
                hit=best.hit,
                score=best.evidence,
                evidence=best.evidence,
                similarity=best.similarity,
                coverage=best.coverage,
                round=best.round,
                ref=ref,
            )
        )
    _calibrate_along(sources)
    return sources


def _gaps(
    question: str, terms: list[str], results: list[ScoredHit], stats: CorpusStats
) -> list[str]:
    """The question's words (as written) that none of the round's best results contains,
    rarest first: the aspects the results leave uncovered."""
    covered: set[str] = set()
    for result in results[:COVERING_RESULTS]:
        covered |= evidence.hit_terms(result.hit)
    missing = [t for t in terms if t not in covered]
    surface = _surface_forms(question)
    missing.sort(key=lambda t: -evidence.term_idf(t, stats))
    return [surface.get(t, t) for t in missing]


# --- reformulation --------------------------------------------------------------------------

REFORMULATION_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": MAX_QUERY_CHARS}},
    "required": ["query"],
}


def _reformulate(
    *,
    question: str,
    current: str,
    earlier: list[str],
    gaps: list[str],
    results: list[ScoredHit],
    use_llm: bool,
    kb_ids: list[int],
) -> tuple[str, str]:
    """The next round's query and what made it (``llm`` or ``feedback``)."""
    if use_llm:
        rewritten = _llm_reformulation(question, earlier, gaps, results)
        if rewritten and rewritten not in earlier:
            return rewritten, "llm"
    return _feedback_reformulation(current, earlier, results, kb_ids), "feedback"


def _llm_reformulation(
    question: str, earlier: list[str], gaps: list[str], results: list[ScoredHit]
) -> str:
    found = "\n".join(
        f"- {r.hit.document_title}: {r.hit.text[:300].strip()}" for r in results[:FEEDBACK_RESULTS]
    )
    prompt = (
        f"Question: {question}\n"
        f"Searches tried so far: {'; '.join(earlier)}\n"
        f"Words of the question no result covers: {', '.join(gaps) or 'none'}\n"
        f"Best results so far:\n{found or '(none)'}\n\n"
        "Write one new search query (keywords or a short sentence) that finds passages "
        "answering the question, covering what the results miss. Do not repeat a search."
    )
    try:
        reply = get_llm_provider().complete_json(
            prompt, schema=REFORMULATION_SCHEMA, max_tokens=200
        )
    except InvalidJSONError:
        logger.warning("the LLM's reformulation is not usable JSON; using feedback terms")
        return ""
    query = reply.get("query")
    if not isinstance(query, str):
        return ""
    return " ".join(query.split())[:MAX_QUERY_CHARS]


def _feedback_reformulation(
    current: str, earlier: list[str], results: list[ScoredHit], kb_ids: list[int]
) -> str:
    """Pseudo-relevance feedback (RM3-like): the words that weigh most in the round's best
    results (frequency in each result, weighted by its evidence, times the word's idf in the
    searched knowledge bases), not in any earlier query, added to the current query."""
    used = {t for q in earlier for t in analyze(q)}
    weights: dict[str, float] = {}
    surface: dict[str, dict[str, int]] = {}
    for result in results[:FEEDBACK_RESULTS]:
        words = [w.lower() for w in _WORD.findall(f"{result.hit.document_title} {result.hit.text}")]
        stems = [analyze(w) for w in words]
        length = sum(1 for s in stems if s) or 1
        for word, stem in zip(words, stems, strict=True):
            if not stem or stem[0] in used:
                continue
            term = stem[0]
            weights[term] = weights.get(term, 0.0) + (0.1 + result.evidence) / length
            forms = surface.setdefault(term, {})
            forms[word] = forms.get(word, 0) + 1
    if not weights:
        return current
    stats = corpus_stats(space=CHUNKS, scope_ids=kb_ids, terms=sorted(weights))
    ranked = sorted(weights, key=lambda t: (-weights[t] * evidence.term_idf(t, stats), t))
    chosen = [max(surface[t], key=lambda w: (surface[t][w], w)) for t in ranked[:EXPANSION_TERMS]]
    return f"{current} {' '.join(chosen)}"[:MAX_QUERY_CHARS]


# --- synthesis ------------------------------------------------------------------------------


def _synthesize(
    question: str,
    sources: list[ScoredHit],
    terms: list[str],
    stats: CorpusStats,
    *,
    use_llm: bool,
) -> tuple[str, str]:
    """The answer and what wrote it (``llm`` or ``extractive``); marks the cited sources."""
    if not sources:
        return "", ""
    if use_llm:
        answer = _llm_answer(question, sources)
        by = "llm"
    else:
        answer = _extractive_answer(sources, terms, stats)
        by = "extractive"
    cited = {int(n) for n in _CITATION.findall(answer)}
    for source in sources:
        source.cited = source.ref in cited
    return answer, by


def _llm_answer(question: str, sources: list[ScoredHit]) -> str:
    passages = "\n\n".join(
        f"[{s.ref}] {s.hit.document_title}\n{s.hit.text[:LLM_SOURCE_CHARS].strip()}"
        for s in sources[:LLM_SOURCES]
    )
    system = (
        "You answer questions from numbered sources only. After every claim, cite the sources "
        "that support it by number in square brackets, e.g. [1] or [2][3]. If the sources do "
        "not answer the question, say so briefly."
    )
    return (
        get_llm_provider()
        .complete(
            f"Sources:\n{passages}\n\nQuestion: {question}",
            system=system,
            max_tokens=ANSWER_MAX_TOKENS,
        )
        .strip()
    )


def _extractive_answer(sources: list[ScoredHit], terms: list[str], stats: CorpusStats) -> str:
    """The best sentences of the best sources, each followed by its source's number: a
    sentence's worth is the share of the question it covers (idf-weighted) times its source's
    calibrated score; sentences covering nothing of the question are never chosen."""
    candidates: list[tuple[float, int, int, str]] = []
    seen_text: set[str] = set()
    for order, source in enumerate(sources[:ANSWER_SOURCES]):
        for position, sentence in enumerate(_sentences(source.hit.text)):
            key = " ".join(analyze(sentence))
            if not key or key in seen_text:
                continue  # overlapping chunks repeat sentences
            seen_text.add(key)
            coverage = evidence.term_coverage(terms, set(key.split()), stats)
            if coverage <= 0:
                continue
            worth = coverage * (0.5 + 0.5 * source.score)
            candidates.append((-worth, order, position, f"{sentence} [{source.ref}]"))
    if not candidates:
        best = sources[0]
        first = next(iter(_sentences(best.hit.text)), best.hit.text.strip()[:300])
        return f"{first} [{best.ref}]"
    chosen = sorted(candidates)[:ANSWER_SENTENCES]
    return " ".join(text for *_, text in chosen)


def _sentences(text: str) -> list[str]:
    parts = (" ".join(p.split()) for p in _SENTENCE_END.split(text))
    return [p.lstrip("#>-* ").strip() for p in parts if len(p.split()) >= 3]


# --- helpers --------------------------------------------------------------------------------


def _distinct(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _surface_forms(text: str) -> dict[str, str]:
    """Each stem of ``text``'s words and the word it came from (its first occurrence)."""
    forms: dict[str, str] = {}
    for word in re.findall(r"\w+", text):
        for stem in analyze(word):
            forms.setdefault(stem, word)
    return forms
