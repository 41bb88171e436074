"""Long-term memory search as the MCP tool ``long_term_memory_search`` (docs/mcp.md), the same
call as ``POST /api/v1/memory/long-term/search``: every search mode, the graph mode and stage
included, each hit explained."""

from __future__ import annotations

from core.mcp import Tool
from memory.apis.long_term.search import (
    LongTermSearchApi,
    LongTermSearchInput,
    run_long_term_search,
)

TOOLS = (
    Tool(
        name="long_term_memory_search",
        title="Search long-term memory",
        description=(
            "Search your long-term memory entries for `query`, best first, each hit explained "
            "(`retrieval`: its ranks and scores per stage). `mode`: hybrid (default), vector, "
            "keyword, or graph: the entries linked to the knowledge-graph nodes nearest the "
            "query, reached within `max_hops`, the path named in `retrieval.graph` and the "
            "best candidates re-read token by token (`retrieval.late_score`). A hybrid "
            'search\'s `stages` (default ["vector", "keyword"]) may add "graph". `filters` '
            "narrow by context, type, tags, time or thread; `top_k` is 1 to 100."
        ),
        scope="read",
        input=LongTermSearchInput,
        output=LongTermSearchApi.OutputSerializer,
        run=lambda call: dict(
            LongTermSearchApi.OutputSerializer(run_long_term_search(call.actor, call.data)).data
        ),
        summary=lambda out: f"{len(out['results'])} long-term memories found.",
        hints={
            "query": "What to recall, in words.",
            "mode": "hybrid, vector, keyword or graph.",
            "stages": 'A hybrid search\'s stages, e.g. ["vector", "keyword", "graph"].',
            "max_hops": "Graph searches: how far from the seed nodes to walk (1 to 5, default 2).",
            "top_k": "How many hits, 1 to 100 (default 10).",
        },
    ),
)
