"""Long-term search as an agent runs it: the engine's ranking (``selectors.long_term_search``)
and the access it records, in one call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.actors import Actor
from memory.long_term.selectors import LongTermFilters, LongTermSearch, long_term_search
from memory.long_term.services.entries import entries_accessed
from memory.models import MemoryAccessLog
from rag.graph.retrieval import DEFAULT_MAX_HOPS
from rag.search import DEFAULT_FUSION


def long_term_search_run(
    *,
    actor: Actor,
    query: str,
    top_k: int = 10,
    filters: LongTermFilters | None = None,
    mode: str | None = None,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    threshold: float | None = None,
    query_vector: Any = None,
    stages: Sequence[str] = (),
    max_hops: int = DEFAULT_MAX_HOPS,
) -> LongTermSearch:
    """Search the long-term entries the actor may read and record the hits as accesses (each
    hit's ``access_count`` and ``last_accessed_at``, and the access log). No ``mode``: the
    selectors' ``default_mode`` (graph, or hybrid when ``stages`` are given)."""
    found = long_term_search(
        actor=actor,
        query=query,
        top_k=top_k,
        filters=filters,
        mode=mode,
        fusion=fusion,
        weights=weights,
        threshold=threshold,
        query_vector=query_vector,
        stages=stages,
        max_hops=max_hops,
    )
    entries_accessed(
        actor=actor,
        entries=[hit.entry for hit in found.hits],
        action=MemoryAccessLog.Action.SEARCH,
        query=query,
    )
    return found
