"""Agentic RAG: search in rounds until the results suffice, then answer with citations.

Each round (docs/rag.md, "Agentic RAG"):

1. **search**: a search of the caller's knowledge bases through the one engine
   (``rag.graph.chunks.chunk_search_staged``: hybrid, or graph mode per
   ``TUNING.agentic.chain_mode`` / ``TUNING.agentic.bridge_mode``), **reranked** by ``rag.rerank``
   when a reranker is configured;
2. **calibration**: every hit gets a score in [0, 1] that estimates how likely it answers the
   round's *target* (``rag.evidence``): the original question, or the question with an earlier
   round's bridge entity in place of its description; comparable between rounds and queries;
3. **bridge**: when the target describes an entity ("the person who runs the Harbor Library"),
   the entity the round's best hits name for it (``rag.agentic.bridge``);
4. **sufficiency**: the round suffices when it found at least
   ``TUNING.agentic.min_relevant_results`` results, their mean calibrated score is at least
   ``TUNING.agentic.min_avg_score`` and no hop is left to make;
5. **gaps**: the target's words that none of the round's best results contains;
6. **reformulation** (unless the round sufficed or was the last): the configured LLM writes
   the next query (and names the bridge, checked against the passages it read); offline, the
   bridge put in place of the description ("Where was Jonas Lind born?"), else
   pseudo-relevance feedback adds the most telling words of the round's best results.

Then **synthesis** over the sources (every round's results fused, best first: by reciprocal
rank, round 1 first, for a question without a bridge; by evidence against each round's target
after one, so the chunk that fills the hop enters): the LLM answers citing sources by number,
or offline the best sentences of the sources, each cited.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import ValidationFailed
from core.llm import get_llm_provider
from core.search import top_k_check
from rag import evidence
from rag.agentic.bridge import Bridge, BridgeHit, find_bridge
from rag.agentic.steps import (
    ScoredHit,
    _distinct,
    _reformulate,
    _surface_forms,
    _synthesize,
    calibrate_along,
    round_scored,
)
from rag.graph.bridges import unit_entities
from rag.graph.chunks import chunk_search_staged
from rag.graph.questions import (
    Description,
    asks_only_for,
    question_description,
    substitute,
)
from rag.keyword import CorpusStats, analyze, corpus_stats
from rag.rerank import get_reranker
from rag.search import (
    SearchFilters,
    knowledge_bases_for_search,
    rank_fusion,
    search_options_validate,
)
from rag.spaces import CHUNKS
from rag.tuning import TUNING
from rag.visibility import Visibility, visibility_of

logger = logging.getLogger("engram.rag")

# What tests and the API read from here (the steps' tunables are ``TUNING.agentic``).
__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "MAX_ROUNDS_LIMIT",
    "AgenticAnswer",
    "AgenticRound",
    "ScoredHit",
    "agentic_options_validate",
    "agentic_query",
]

# The API's default and bound of rounds (issue 19); the rounds' weights and depths are
# ``TUNING.agentic`` (rag.tuning), each with its meaning.
DEFAULT_MAX_ROUNDS = 3
MAX_ROUNDS_LIMIT = 5


@dataclass
class AgenticRound:
    query: str
    results: list[ScoredHit]
    sufficient: bool
    avg_score: float
    gaps: list[str]
    reformulated_query: str | None = None
    reformulated_by: str = ""
    # The question the round's evidence is measured against: the original, or the original
    # with an earlier round's bridge entity in place of its description.
    target: str = ""
    mode: str = "hybrid"
    # The bridge entity this round's hits name for the target's description (the next round
    # asks with it), if any.
    bridge: Bridge | None = None


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
    visible = visibility_of(actor)
    question_terms = _distinct(analyze(query))
    stats = corpus_stats(space=CHUNKS, scope_ids=kb_ids, terms=question_terms)
    question_vector = get_embedding_provider().embed_query(query)

    rounds: list[AgenticRound] = []
    seen: dict[int, ScoredHit] = {}
    ranked_lists: dict[str, list[tuple[int, float]]] = {}
    # The question the rounds answer: the original until a bridge entity stands in for its
    # description; its terms, their statistics and its embedding measure the evidence.
    target, target_terms, target_stats, target_vector = (
        query,
        question_terms,
        stats,
        question_vector,
    )
    current = query
    graph_led: list[int] = []
    for number in range(1, max_rounds + 1):
        description = question_description(target)
        mode = _round_mode(description, bridged=target != query)
        outcome = chunk_search_staged(
            actor=actor,
            query=current,
            mode=mode,
            top_k=top_k,
            filters=filters,
            rerank=reranker is not None,
            query_vector=target_vector if current == target else None,
        )
        results = round_scored(
            outcome.hits,
            question_terms=target_terms,
            stats=target_stats,
            question_vector=target_vector if current != target else None,
            reranker=reranker.name if reranker is not None else None,
            round_number=number,
        )
        # The mean calibrated score (isotonic calibration keeps the mean of the evidence).
        avg = round(sum(r.score for r in results) / len(results), 4) if results else 0.0
        this = AgenticRound(
            query=current,
            results=results,
            sufficient=False,
            avg_score=avg,
            gaps=_gaps(target, target_terms, results, target_stats),
            target=target,
            mode=mode,
        )
        rounds.append(this)
        ranked_lists[f"round{number}"] = [(r.hit.chunk_id, r.score) for r in results]
        if number == 1 and getattr(outcome, "graph_led", False):
            graph_led = [r.hit.chunk_id for r in results]
        for result in results:
            best = seen.get(result.hit.chunk_id)
            if best is None or result.evidence > best.evidence:
                seen[result.hit.chunk_id] = result
        last = number == max_rounds
        if description is not None and not last:
            this.bridge = _offline_bridge(
                description, target, results, visible, earlier=_bridges(rounds)
            )
            if this.bridge is not None and asks_only_for(
                substitute(target, description, this.bridge.name), this.bridge.name
            ):
                this.bridge = None  # the bridge is the answer: no hop to make
        # Sufficient: enough results, good enough on average, and no hop left to make (a
        # description whose bridge the round found, or an LLM that may find it).
        hop = description is not None and (this.bridge is not None or use_llm)
        this.sufficient = (
            len(results) >= TUNING.agentic.min_relevant_results
            and avg >= TUNING.agentic.min_avg_score
            and not hop
        )
        if this.sufficient or last:
            break
        next_query, this.reformulated_by, bridge = _reformulate(
            question=query,
            target=target,
            description=description,
            offline_bridge=this.bridge,
            current=current,
            earlier=[r.query for r in rounds],
            gaps=this.gaps,
            results=results,
            use_llm=use_llm,
            kb_ids=kb_ids,
        )
        this.bridge = bridge
        this.reformulated_query = current = next_query
        if bridge is not None:  # an equivalent question: the next rounds answer it
            target = next_query
            target_terms = _distinct(analyze(target))
            target_stats = corpus_stats(space=CHUNKS, scope_ids=kb_ids, terms=target_terms)
            target_vector = get_embedding_provider().embed_query(target)

    bridged = any(r.bridge is not None for r in rounds)
    sources = _fused_sources(
        ranked_lists,
        seen,
        top_k=top_k,
        fusion=TUNING.agentic.bridge_fusion if bridged else "rrf",
        chain=_chain(rounds),
        resolved=_resolved(rounds, query),
        lead=graph_led[: TUNING.agentic.graph_led_first],
    )
    # The offline answer's sentences cover the question, or the question as a bridge resolved
    # it ("Jonas Lind was born in Kiruna" answers "Where was Jonas Lind born?").
    questions = [(question_terms, stats)] + [
        (_distinct(analyze(t)), corpus_stats(space=CHUNKS, scope_ids=kb_ids, terms=analyze(t)))
        for t in dict.fromkeys(r.target for r in rounds)
        if t != query
    ]
    answer, by = _synthesize(query, sources, questions, use_llm=use_llm)
    return AgenticAnswer(
        answer=answer, sources=sources, rounds=rounds, total_results=len(seen), synthesized_by=by
    )


def _round_mode(description: Description | None, *, bridged: bool) -> str:
    """A round's search mode: ``TUNING.agentic.bridge_mode`` after a bridge,
    ``TUNING.agentic.chain_mode`` when its question describes an entity, hybrid otherwise."""
    if bridged:
        return TUNING.agentic.bridge_mode
    return TUNING.agentic.chain_mode if description is not None else "hybrid"


def _resolved(rounds: list[AgenticRound], query: str) -> list[int]:
    """The results, in the engine's order, of the first round that asked the question as the
    bridges resolved it last (none without a bridge)."""
    last = rounds[-1].target
    if last == query:
        return []
    first = next(r for r in rounds if r.target == last)
    return [r.hit.chunk_id for r in first.results]


def _chain(rounds: list[AgenticRound]) -> dict[int, float]:
    """The chunks that named a bridge, each with the best evidence of the round that followed
    it: the chain that leads to the answer ranks right after the answer it led to."""
    chain: dict[int, float] = {}
    for this, following in itertools.pairwise(rounds):
        if this.bridge is not None and this.bridge.chunk_id is not None and following.results:
            value = max(r.evidence for r in following.results)
            chain[this.bridge.chunk_id] = max(chain.get(this.bridge.chunk_id, 0.0), value)
    return chain


def _bridges(rounds: list[AgenticRound]) -> list[str]:
    return [r.bridge.name for r in rounds if r.bridge is not None]


def _offline_bridge(
    description: Description,
    target: str,
    results: list[ScoredHit],
    visible: Visibility,
    *,
    earlier: list[str],
) -> Bridge | None:
    """The bridge entity the round's best results name (``rag.agentic.bridge``), from
    their text and the graph's mentions of them (the nodes the searcher may see)."""
    best = results[: TUNING.agentic.bridge_results]
    mentions = unit_entities(space=CHUNKS, unit_ids=[r.hit.chunk_id for r in best], visible=visible)
    hits = [BridgeHit(r.hit.chunk_id, r.hit.text, mentions.get(r.hit.chunk_id, ())) for r in best]
    similarity = None
    if TUNING.agentic.bridge_weight == "sentence":
        described = get_embedding_provider().embed_query(description.text)

        def similarity(texts: list[str]) -> list[float]:
            vectors = get_embedding_provider().embed_documents(texts)
            norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(described) or 1.0)
            return [float(x) for x in vectors @ described / np.where(norms > 0, norms, 1.0)]

    context = [
        r.hit.text for r in results[TUNING.agentic.bridge_results : TUNING.agentic.context_results]
    ]
    return find_bridge(
        description, target, hits, earlier=earlier, similarity=similarity, context=context
    )


# --- scoring --------------------------------------------------------------------------------


def _fused_sources(
    ranked_lists: dict[str, list[tuple[int, float]]],
    seen: dict[int, ScoredHit],
    *,
    top_k: int,
    fusion: str = "rrf",
    chain: dict[int, float] | None = None,
    resolved: Sequence[int] = (),
    lead: Sequence[int] = (),
) -> list[ScoredHit]:
    """Every round's results in one ranking, cut to ``top_k``, numbered from 1, each calibrated
    along that order. ``rrf``: weighted reciprocal rank fusion (a chunk several queries found
    rises; the question's own round weighs most: reformulated queries drift). After a bridge
    (``TUNING.agentic.bridge_fusion``): ``evidence``, each chunk's best evidence against the
    question its round answered, so the chunk that answers the question with the bridge's name in it
    enters the sources beside round 1's best, and the chunks that named the bridges
    (``chain``) right after the answer they led to; ``interleave``: the rounds' results in
    turn. ``lead``: chunks that lead whatever the fusion (after a resolved bridge's best), the
    first results of a round the graph led (``TUNING.agentic.graph_led_first``)."""
    if fusion in ("evidence", "resolved"):
        chain = chain or {}

        def key(chunk_id: int) -> tuple[float, int, int, int]:
            value = seen[chunk_id].evidence
            if chunk_id in chain and chain[chunk_id] > value:
                return (-chain[chunk_id], 1, seen[chunk_id].round, chunk_id)
            return (-value, 0, seen[chunk_id].round, chunk_id)

        order = sorted(seen, key=key)
        if fusion == "resolved" and resolved:
            # The best results of the question the bridges resolved last lead.
            first = list(dict.fromkeys(resolved))[: TUNING.agentic.resolved_first]
            order = first + [c for c in order if c not in first]
        order = order[:top_k]
    elif fusion == "interleave":
        order = []
        lists = list(ranked_lists.values())
        for rank in range(max((len(one) for one in lists), default=0)):
            for one in lists:
                if rank < len(one) and one[rank][0] not in order:
                    order.append(one[rank][0])
        order = order[:top_k]
    else:
        weights = {
            name: 1.0 if number == 0 else TUNING.agentic.reformulated_weight / number
            for number, name in enumerate(ranked_lists)
        }
        fused = rank_fusion(ranked_lists, method="rrf", weights=weights)
        order = [chunk_id for chunk_id, _ in fused[:top_k]]
    if lead:
        head = order[: TUNING.agentic.resolved_first] if fusion == "resolved" and resolved else []
        head += [c for c in lead if c not in head]
        order = (head + [c for c in order if c not in head])[:top_k]
    sources = []
    for ref, chunk_id in enumerate(order, start=1):
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
    calibrate_along(sources)
    return sources


def _gaps(
    question: str, terms: list[str], results: list[ScoredHit], stats: CorpusStats
) -> list[str]:
    """The question's words (as written) that none of the round's best results contains,
    rarest first: the aspects the results leave uncovered."""
    covered: set[str] = set()
    for result in results[: TUNING.agentic.covering_results]:
        covered |= evidence.hit_terms(result.hit)
    missing = [t for t in terms if t not in covered]
    surface = _surface_forms(question)
    missing.sort(key=lambda t: -evidence.term_idf(t, stats))
    return [surface.get(t, t) for t in missing]
