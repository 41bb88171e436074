"""Graph RAG (docs/rag.md, "Graph RAG"): retrieval through the knowledge graph's communities,
and a token-budgeted context built from it.

``graph_retrieve`` is a graph search of the chunks (``rag.graph.chunks``) answered with the
communities it went through: each hit names its community, and the answer lists them (with
their summaries when asked). ``graph_context`` packs, within ``token_budget`` tokens counted by
the embedding model's tokenizer (``rag.tokens``), the summaries of the communities reached
(section ``communities``, at most a third of the budget) and then the best chunks (section
``documents``), every item with its provenance, in context assembly's shape (POST
/api/v1/memory/context). The budget is hard: the final text is counted once more and the last
items are dropped should it exceed it.

A context holds only what is on topic and its budget covers everything it answers, as context
assembly's (docs/rag.md, "Graph RAG"): a chunk is a candidate only when its calibrated evidence
reaches ``TUNING.evidence.context_min`` (the graph reaches chunks far from the question),
and a community only when one of those chunks was reached through it; an item costs its text's
tokens and its metadata echo's (``core.metadata.echo``), and its bytes come out of
``BODY_BYTES_PER_TOKEN`` x the budget, so the answer's body is bounded by a function of the
budget. A community's ``node_ids`` lists at most ``MAX_NODE_IDS`` of its nodes (``node_count``
says how many it has).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.metadata import BODY_BYTES_PER_TOKEN, echo, echo_text, json_bytes
from core.search import list_length_check
from rag import evidence
from rag.graph.chunks import GraphSearchOutcome, chunk_search_staged
from rag.graph.retrieval import GRAPH, CommunityRef
from rag.search import MAX_TOP_K, SearchFilters, SearchHit
from rag.tokens import count_tokens
from rag.tuning import TUNING

TOKENIZER = "sentence-transformers/all-MiniLM-L6-v2 (WordPiece, no special tokens)"
DEFAULT_TOKEN_BUDGET = 4000
MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET = 50, 100_000
# The API's default max_hops, read at import (its one home is ``TUNING.hops``).
CONTEXT_MAX_HOPS = TUNING.hops.graph_rag_default
MAX_NODE_IDS = 20


@dataclass
class GraphRetrieval:
    results: list[SearchHit]
    communities: list[CommunityRef]
    seeds: list[Any]
    timings_ms: dict[str, float]
    include_summaries: bool = True


def graph_retrieve(
    *,
    actor: Actor,
    query: str,
    top_k: int = 10,
    max_hops: int = 2,
    include_summaries: bool = True,
    knowledge_base_ids: Sequence[int] = (),
) -> GraphRetrieval:
    """The chunks the graph reaches for ``query`` (best first), with their communities."""
    list_length_check("knowledge_base_ids", knowledge_base_ids)
    started = time.perf_counter()
    outcome = chunk_search_staged(
        actor=actor,
        query=query,
        mode=GRAPH,
        top_k=top_k,
        filters=SearchFilters(knowledge_base_ids=tuple(knowledge_base_ids)),
        max_hops=max_hops,
    )
    assert isinstance(outcome, GraphSearchOutcome)
    timings = {**outcome.stage_ms, "total": round((time.perf_counter() - started) * 1000, 3)}
    return GraphRetrieval(
        results=outcome.hits,
        communities=list(outcome.communities or []),
        seeds=list(outcome.seeds or []),
        timings_ms=timings,
        include_summaries=include_summaries,
    )


@dataclass
class ContextItem:
    kind: str
    id: int
    score: float
    tokens: int
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    metadata_truncated: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "score": round(float(self.score), 6),
            "tokens": self.tokens,
            "text": self.text,
            "metadata": self.metadata,
            "metadata_truncated": self.metadata_truncated,
            "source": self.source,
        }


@dataclass
class ContextSection:
    name: str
    tokens: int = 0
    items: list[ContextItem] = field(default_factory=list)


@dataclass
class GraphContext:
    context: str
    tokens: int
    token_budget: int
    tokenizer: str
    sections: list[ContextSection]
    dropped: dict[str, int]
    seeds: list[Any]
    timings_ms: dict[str, float]


def _community_text(community: CommunityRef) -> str:
    title = community.title or f"community {community.level}.{community.id}"
    return f"- {title}: {community.summary}".strip()


def _chunk_text(number: int, hit: SearchHit) -> str:
    heading = " › ".join(hit.heading_path)
    header = f"[{number}] {hit.document_title}" + (f" › {heading}" if heading else "")
    return f"{header}\n{hit.text.strip()}"


def graph_context(
    *, actor: Actor, query: str, token_budget: int = DEFAULT_TOKEN_BUDGET, max_hops: int = 3
) -> GraphContext:
    """The context for ``query`` within ``token_budget`` tokens (see the module's docstring)."""
    started = time.perf_counter()
    found = graph_retrieve(
        actor=actor, query=query, top_k=MAX_TOP_K, max_hops=max_hops, include_summaries=True
    )
    found.results, found.communities = _on_topic(query, found)
    headers = {"communities": "## Communities", "documents": "## Documents"}
    header_tokens = dict(zip(headers, count_tokens(list(headers.values())), strict=True))
    sections: list[ContextSection] = []
    used = 0
    dropped_items = dropped_tokens = 0
    candidates: list[tuple[str, ContextItem]] = []
    for community in found.communities[: TUNING.walk.max_communities]:
        if community.summary:
            candidates.append(
                (
                    "communities",
                    ContextItem(
                        kind="community",
                        id=community.id,
                        score=community.score,
                        tokens=0,
                        text=_community_text(community),
                        metadata={"level": community.level, "size": community.size},
                        source={"type": "graph_community", "community_id": community.id,
                                "node_ids": list(community.node_ids)[:MAX_NODE_IDS],
                                "node_count": len(community.node_ids)},
                    ),
                )
            )  # fmt: skip
    for number, hit in enumerate(found.results, start=1):
        graph = getattr(hit, "graph", None) or {}
        candidates.append(
            (
                "documents",
                ContextItem(
                    kind="chunk",
                    id=hit.chunk_id,
                    score=hit.score,
                    tokens=0,
                    text=_chunk_text(number, hit),
                    metadata={"heading_path": hit.heading_path, "position": hit.position},
                    source={"type": "chunk", "chunk_id": hit.chunk_id,
                            "document_id": hit.document_id,
                            "knowledge_base_id": hit.knowledge_base_id,
                            "document_title": hit.document_title,
                            "seed": graph.get("seed"), "path": graph.get("path", []),
                            "community_id": graph.get("community_id")},
                ),
            )
        )  # fmt: skip
    for _, item in candidates:
        item.metadata, item.metadata_truncated = echo(item.metadata)
    texts = [echo_text(item.metadata) for _, item in candidates]
    counts = count_tokens([item.text for _, item in candidates] + [t for t in texts if t])
    echo_counts = iter(counts[len(candidates) :])
    summary_limit = token_budget // TUNING.graph_rag.summary_share
    bytes_left = BODY_BYTES_PER_TOKEN * token_budget
    by_name: dict[str, ContextSection] = {}
    for (name, item), count, shown in zip(candidates, counts, texts, strict=False):
        count += next(echo_counts) if shown else 0
        item.tokens = count
        section = by_name.get(name)
        extra = count + (0 if section else header_tokens[name])
        over_share = (
            name == "communities" and (section.tokens if section else 0) + extra > summary_limit
        )
        weight = json_bytes(item.as_json()) + json_bytes(item.text) + 2
        if used + extra > token_budget or over_share or weight > bytes_left:
            dropped_items += 1
            dropped_tokens += count
            continue
        bytes_left -= weight
        if section is None:
            section = by_name[name] = ContextSection(name=name, tokens=header_tokens[name])
            sections.append(section)
        section.items.append(item)
        section.tokens += count
        used += extra
    text, total = _counted(sections, headers)
    while total > token_budget and sections:  # never past the budget
        section = sections[-1]
        gone = section.items.pop()
        dropped_items += 1
        dropped_tokens += gone.tokens
        section.tokens -= gone.tokens
        if not section.items:
            sections.pop()
        text, total = _counted(sections, headers)
    timings = {**found.timings_ms, "assemble": round((time.perf_counter() - started) * 1000, 3)}
    return GraphContext(
        context=text,
        tokens=total,
        token_budget=token_budget,
        tokenizer=TOKENIZER,
        sections=sections,
        dropped={"candidates": dropped_items, "tokens": dropped_tokens},
        seeds=found.seeds,
        timings_ms=timings,
    )


def _on_topic(query: str, found: GraphRetrieval) -> tuple[list[SearchHit], list[CommunityRef]]:
    """The chunks whose evidence reaches ``TUNING.evidence.context_min``, and the communities one of
    them was reached through."""
    floor = TUNING.evidence.context_min
    if floor is None:
        return found.results, found.communities
    if not found.results:
        return [], []
    vector = np.asarray(get_embedding_provider().embed_query(query), dtype=np.float32)
    values = evidence.chunk_hits_evidence(
        query,
        found.results,
        sorted({hit.knowledge_base_id for hit in found.results}),
        query_vector=vector,
    )
    kept = [hit for hit, value in zip(found.results, values, strict=True) if value >= floor]
    through = {(getattr(hit, "graph", None) or {}).get("community_id") for hit in kept}
    return kept, [c for c in found.communities if c.id in through]


def _counted(sections: list[ContextSection], headers: dict[str, str]) -> tuple[str, int]:
    """The context's text, and the tokens of everything the answer shows: the text and every
    item's metadata echo."""
    text = _render(sections, headers)
    echoes = [echo_text(item.metadata) for s in sections for item in s.items]
    return text, sum(count_tokens([text, *[e for e in echoes if e]])) if text else 0


def _render(sections: list[ContextSection], headers: dict[str, str]) -> str:
    return "\n\n".join(
        headers[s.name] + "\n" + "\n\n".join(item.text for item in s.items) for s in sections
    )
