"""The steps of an agentic round that read and write text (``rag.agentic.services``): the
scored hit (a round's evidence against its question, calibrated along the engine's order),
reformulation (the LLM's, with its bridge checked; the bridge put in place of the
description; pseudo-relevance feedback) and synthesis (the LLM's answer citing its sources, or
the extractive one)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np

from core.llm import get_llm_provider
from core.llm.base import InvalidJSONError
from core.search import MAX_QUERY_CHARS
from rag import evidence
from rag.agentic.bridge import Bridge, grounded
from rag.graph.questions import Description, substitute
from rag.keyword import CorpusStats, analyze, corpus_stats
from rag.search import SearchHit
from rag.spaces import CHUNKS
from rag.tuning import TUNING
from rag.vector import unit_similarities

logger = logging.getLogger("engram.rag")


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


# --- scoring --------------------------------------------------------------------------------


def round_scored(
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
    calibrate_along(scored)
    return scored


def calibrate_along(items: list[ScoredHit]) -> None:
    """Each item's score: its evidence made non-increasing along the items' order."""
    for item, score in zip(
        items, evidence.non_increasing([i.evidence for i in items]), strict=True
    ):
        item.score = round(score, 4)


# --- reformulation --------------------------------------------------------------------------

REFORMULATION_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "maxLength": MAX_QUERY_CHARS},
        "bridge": {"type": ["string", "null"], "maxLength": 200},
    },
    "required": ["query"],
}


def _reformulate(
    *,
    question: str,
    target: str,
    description: Description | None,
    offline_bridge: Bridge | None,
    current: str,
    earlier: list[str],
    gaps: list[str],
    results: list[ScoredHit],
    use_llm: bool,
    kb_ids: list[int],
) -> tuple[str, str, Bridge | None]:
    """The next round's query, what made it (``llm``, ``bridge`` or ``feedback``) and the
    bridge entity it follows, if any: the LLM's (validated), else the offline bridge put in
    place of the description, else pseudo-relevance feedback."""
    if use_llm:
        rewritten, bridge = _llm_reformulation(
            question, target, description, earlier, gaps, results
        )
        if rewritten and rewritten not in earlier:
            return rewritten, "llm", bridge
    if offline_bridge is not None and description is not None:
        rewritten = substitute(target, description, offline_bridge.name)
        if rewritten not in earlier:
            return rewritten, "bridge", offline_bridge
    return _feedback_reformulation(current, earlier, results, kb_ids), "feedback", None


def _llm_reformulation(
    question: str,
    target: str,
    description: Description | None,
    earlier: list[str],
    gaps: list[str],
    results: list[ScoredHit],
) -> tuple[str, Bridge | None]:
    """The model's next query and, when it names one that the passages it was shown name and
    the question does not, its bridge entity; ("", None) when the reply is not usable."""
    shown = results[: TUNING.agentic.llm_reformulation_results]
    found = "\n".join(f"- {r.hit.document_title}: {r.hit.text[:300].strip()}" for r in shown)
    prompt = (
        f"Question: {question}\n"
        + (
            f"The question as the searches resolved it so far: {target}\n"
            if target != question
            else ""
        )
        + f"Searches tried so far: {'; '.join(earlier)}\n"
        f"Words of the question no result covers: {', '.join(gaps) or 'none'}\n"
        f"Best results so far:\n{found or '(none)'}\n\n"
        "Write one new search query (keywords or a short sentence) that finds passages "
        "answering the question, covering what the results miss. Do not repeat a search.\n"
        'If the question describes an entity instead of naming it (such as "the person who '
        'runs X") and a result names that entity, give its name as "bridge" and write the '
        "query as the question with the name in place of the description; otherwise give "
        '"bridge": null.'
    )
    try:
        reply = get_llm_provider().complete_json(
            prompt, schema=REFORMULATION_SCHEMA, max_tokens=200
        )
    except InvalidJSONError:
        logger.warning("the LLM's reformulation is not usable JSON; using the offline path")
        return "", None
    query = reply.get("query")
    if not isinstance(query, str):
        return "", None
    query = " ".join(query.split())[:MAX_QUERY_CHARS]
    name = reply.get("bridge")
    if not isinstance(name, str) or not name.strip() or not query:
        return query, None
    name = " ".join(name.split())
    texts = [f"{r.hit.document_title}. {r.hit.text}" for r in shown]
    if not grounded(name, texts, target):
        logger.info("the LLM's bridge %r is not named by the results shown; ignored", name)
        return query, None
    source = next((r for r, t in zip(shown, texts, strict=True) if grounded(name, [t], target)))
    return query, Bridge(
        name=name,
        entity_type=description.wanted if description is not None else "",
        replaces=description.text if description is not None else "",
        chunk_id=source.hit.chunk_id,
        found_by="llm",
    )


def _feedback_reformulation(
    current: str, earlier: list[str], results: list[ScoredHit], kb_ids: list[int]
) -> str:
    """Pseudo-relevance feedback (RM3-like): the words that weigh most in the round's best
    results (frequency in each result, weighted by its evidence, times the word's idf in the
    searched knowledge bases), not in any earlier query, added to the current query."""
    used = {t for q in earlier for t in analyze(q)}
    weights: dict[str, float] = {}
    surface: dict[str, dict[str, int]] = {}
    for result in results[: TUNING.agentic.feedback_results]:
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
    chosen = [
        max(surface[t], key=lambda w: (surface[t][w], w))
        for t in ranked[: TUNING.agentic.expansion_terms]
    ]
    return f"{current} {' '.join(chosen)}"[:MAX_QUERY_CHARS]


# --- synthesis ------------------------------------------------------------------------------


def _synthesize(
    question: str,
    sources: list[ScoredHit],
    questions: list[tuple[list[str], CorpusStats]],
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
        answer = _extractive_answer(sources, questions)
        by = "extractive"
    cited = {int(n) for n in _CITATION.findall(answer)}
    for source in sources:
        source.cited = source.ref in cited
    return answer, by


def _llm_answer(question: str, sources: list[ScoredHit]) -> str:
    passages = "\n\n".join(
        f"[{s.ref}] {s.hit.document_title}\n{s.hit.text[: TUNING.agentic.llm_source_chars].strip()}"
        for s in sources[: TUNING.agentic.llm_sources]
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
            max_tokens=TUNING.agentic.answer_max_tokens,
        )
        .strip()
    )


def _extractive_answer(
    sources: list[ScoredHit], questions: list[tuple[list[str], CorpusStats]]
) -> str:
    """The best sentences of the best sources, each followed by its source's number: a
    sentence's worth is the share of the question, or of a round's target, it covers
    (idf-weighted) times its source's calibrated score; sentences covering nothing of them
    are never chosen."""
    candidates: list[tuple[float, int, int, str]] = []
    seen_text: set[str] = set()
    for order, source in enumerate(sources[: TUNING.agentic.answer_sources]):
        for position, sentence in enumerate(_sentences(source.hit.text)):
            key = " ".join(analyze(sentence))
            if not key or key in seen_text:
                continue  # overlapping chunks repeat sentences
            seen_text.add(key)
            words = set(key.split())
            coverage = max(evidence.term_coverage(t, words, st) for t, st in questions)
            if coverage <= 0:
                continue
            worth = coverage * (0.5 + 0.5 * source.score)
            candidates.append((-worth, order, position, f"{sentence} [{source.ref}]"))
    if not candidates:
        best = sources[0]
        first = next(iter(_sentences(best.hit.text)), best.hit.text.strip()[:300])
        return f"{first} [{best.ref}]"
    chosen = sorted(candidates)[: TUNING.agentic.answer_sentences]
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
