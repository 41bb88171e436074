"""Long-term memory search as ``memory_search`` with ``kind: long_term`` (docs/mcp.md): the same
call and answer as ``POST /api/v1/memory/long-term/search``, every mode (the graph mode and
stage included), each hit explained."""

from __future__ import annotations

from core.mcp.registry import Job
from memory.long_term.apis.search import (
    LongTermSearchApi,
    LongTermSearchInput,
    run_long_term_search,
)

LONG_TERM_SEARCH = Job(
    value="long_term",
    description="your long-term entries only, in any mode (hybrid, vector, keyword, prf, or "
    "graph: entries linked to the knowledge-graph nodes nearest the query within max_hops), "
    "each hit explained (POST /memory/long-term/search)",
    scope="read",
    rest="POST /api/v1/memory/long-term/search",
    input=LongTermSearchInput,
    output=LongTermSearchApi.OutputSerializer,
    run=lambda call: dict(
        LongTermSearchApi.OutputSerializer(run_long_term_search(call.actor, call.data)).data
    ),
    summary=lambda out: f"{len(out['results'])} long-term memories found.",
    hints={
        "mode": "kind long_term: graph (the default; hybrid when stages are given), hybrid, "
        "vector, keyword or prf.",
        "stages": 'kind long_term, hybrid mode: its stages, e.g. ["vector", "keyword", "graph"].',
        "max_hops": "kind long_term, graph searches: how far from the seed nodes to walk "
        "(1 to 5, default 2).",
    },
)
