"""The search across memory tiers as an agent runs it (``POST /memory/search``, the MCP tool
``memory_search``): the ranking (``memory.context.selectors.search``) and the reads it records."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.actors import Actor
from memory.context.selectors.router import RouterFilters
from memory.context.selectors.search import MemorySearch, memory_search
from memory.long_term.services.entries import entries_accessed
from memory.models import MemoryAccessLog


def memory_search_run(
    *,
    actor: Actor,
    query: str,
    tiers: Sequence[str] | None = None,
    top_k: int = 10,
    threshold: float | None = None,
    filters: RouterFilters | None = None,
    query_vector: np.ndarray | None = None,
) -> MemorySearch:
    """Search every tier the actor may read, and record its long-term hits as reads (their
    ``access_count`` and ``last_accessed_at``, and the access log): used memories stay
    recent."""
    found = memory_search(
        actor=actor,
        query=query,
        tiers=tiers,
        top_k=top_k,
        threshold=threshold,
        filters=filters,
        query_vector=query_vector,
    )
    entries_accessed(
        actor=actor,
        entries=[hit.entry for hit in found.results if hit.entry is not None],
        action=MemoryAccessLog.Action.SEARCH,
        query=query,
    )
    return found
