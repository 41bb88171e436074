"""Memory's five contract tools (docs/mcp.md): ``memory_write``, ``memory_read``,
``memory_search``, ``memory_consolidate`` and ``memory_stats``, each a door to the router's REST
operation (``memory/context/apis/router.py``: the same input serializer, the same function, the same
answer). ``kind`` (or, for ``memory_consolidate``, ``action``) picks one of the related jobs
memory offers besides: knowledge items, the structured writes and searches of agent runs,
long-term search in every mode, cluster maintenance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core import serializers as strict
from core.mcp import Tool
from memory.apis.common import session_id_field
from memory.context.apis.router import (
    MemoryConsolidateApi,
    MemoryReadApi,
    MemorySearchApi,
    MemoryStatsApi,
    MemoryWriteInput,
    RoutedOutput,
    memory_consolidate_answer,
    memory_read_answer,
    memory_search_answer,
    memory_stats_answer,
    memory_write_answer,
)
from memory.context.mcp import tools
from memory.knowledge import mcp as knowledge
from memory.long_term import mcp as long_term
from memory.maintenance import mcp as maintenance


class MemoryStatsInput(strict.InputSerializer):
    """``GET /memory/stats``'s query parameter, as an argument."""

    session_id = session_id_field(
        required=False,
        default="",
        help_text="A session whose working memory to count too, e.g. chat-42.",
    )


def _count(out: Mapping[str, Any], noun: str) -> str:
    n = len(out["results"])
    return f"{n} {noun}{'' if n == 1 else 's'}."


TOOLS = (
    Tool(
        name="memory_write",
        title="Remember something",
        description=(
            "Store a memory. kind memory (default) has two modes: `content` (a text, "
            "optional `tags`) adds a permanent, searchable long-term entry; or `key` + "
            "`value` (any JSON) stores a value under a name in `tier`: working (a session's "
            "scratch state, needs `session_id`, expires after `ttl`), short_term (a "
            "session's, needs `session_id`, expires) or long_term (the default; writing the "
            "key again makes a new version). Other kinds: structured (an insight `text`, "
            "checked and structured, may be refused with a reason), knowledge_item (`base`, "
            "`key`, `content`: a versioned item of a knowledge base), knowledge_relationship "
            "(`source`, `target`, `relationship_type`: relate two knowledge items)."
        ),
        scope="write",
        rest="POST /api/v1/memory/write",
        input=MemoryWriteInput,
        output=RoutedOutput,
        run=lambda call: memory_write_answer(call.actor, call.data),
        summary=lambda out: (
            f"Stored in {out['tier']} memory"
            + (f" (entry {out['entry_id']})." if out.get("entry_id") else ".")
        ),
        selector="kind",
        default="memory",
        more=(tools.STRUCTURED_WRITE, knowledge.PUT, knowledge.RELATE),
        schema_extra={
            "oneOf": [
                {"required": ["key", "value"], "not": {"required": ["content"]}},
                {"required": ["content"], "not": {"required": ["key"]}},
            ]
        },
    ),
    Tool(
        name="memory_read",
        title="Read a memory by key",
        description=(
            "Read the value stored under `key`. Without `tier`, the nearest tier holding it "
            "answers: working memory, then short-term memory (both of `session_id`), then "
            "long-term memory; name `tier` to read only that tier. A key no tier holds is the "
            "error memory_key_not_found. kind knowledge_item: the current version of the "
            "item `key` of the knowledge base `base`."
        ),
        scope="read",
        rest="POST /api/v1/memory/read",
        input=MemoryReadApi.InputSerializer,
        output=RoutedOutput,
        run=lambda call: memory_read_answer(call.actor, call.data),
        summary=lambda out: f"Found {out['key']} in {out['tier']} memory.",
        selector="kind",
        default="memory",
        more=(knowledge.GET,),
    ),
    Tool(
        name="memory_search",
        title="Search memories",
        description=(
            "Search memories for `query`, best first. kind memory (default): every tier you "
            "may read (long-term memory by meaning and keywords, short-term memory, shared "
            "pools, and working memory of `filters.session_id`), each hit with its tier, "
            "score and components; `tiers` limits the tiers, `top_k` (1 to 100) the hits, "
            "`threshold` (0 to 1) the lowest relevance. Other kinds: long_term (long-term "
            "entries only, any `mode`, graph included, explained), similar (at most 5 "
            "closest in meaning), related (linked to `related` items), summary (a cited "
            "summary of what your memories say), knowledge_item (knowledge items)."
        ),
        scope="read",
        rest="POST /api/v1/memory/search",
        input=MemorySearchApi.InputSerializer,
        output=MemorySearchApi.OutputSerializer,
        run=lambda call: memory_search_answer(call.actor, call.data),
        summary=lambda out: _count(out, "memory"),
        hints={
            "query": "What to recall, in words, e.g. where is the office?",
            "tiers": 'kind memory: tiers to search (default all), e.g. ["long_term", "shared"].',
            "top_k": "How many hits, 1 to 100 (default 10).",
            "threshold": "The lowest relevance kept, 0 to 1, e.g. 0.3.",
            "filters": 'Narrow the search, e.g. {"session_id": "chat-42", "tags_any": ["x"]}.',
        },
        selector="kind",
        default="memory",
        more=(
            long_term.LONG_TERM_SEARCH,
            tools.SIMILAR,
            tools.RELATED,
            tools.SUMMARY,
            knowledge.QUERY,
        ),
    ),
    Tool(
        name="memory_consolidate",
        title="Consolidate and maintain memory",
        description=(
            "Memory upkeep. action consolidate (default): with `session_id`, promote that "
            "session's short-term entries read often enough to long-term memory; without it "
            "(admin keys only), run the account's upkeep steps in `jobs` (default all); "
            "`dry_run` counts without changing anything. action maintenance: queue cluster "
            "maintenance (near-duplicates merged), answers a job_id at once. action "
            "maintenance_status: that job's status."
        ),
        scope="write",
        rest="POST /api/v1/memory/consolidate",
        input=MemoryConsolidateApi.InputSerializer,
        output=MemoryConsolidateApi.OutputSerializer,
        run=lambda call: memory_consolidate_answer(call.actor, call.data),
        summary=lambda out: "Consolidation report" + (" (dry run)." if out["dry_run"] else "."),
        hints={"dry_run": "Count what would change without changing anything (default false)."},
        selector="action",
        default="consolidate",
        more=(maintenance.MAINTENANCE, maintenance.MAINTENANCE_STATUS),
    ),
    Tool(
        name="memory_stats",
        title="Memory statistics",
        description=(
            "Counts of your memory in every tier: working memory of `session_id` (when "
            "given), live short-term entries, the long-term contexts you may read and the "
            "shared pools you may read."
        ),
        scope="read",
        rest="GET /api/v1/memory/stats",
        input=MemoryStatsInput,
        output=MemoryStatsApi.OutputSerializer,
        run=lambda call: memory_stats_answer(call.actor, call.data),
        summary=lambda out: "Memory statistics.",
    ),
)
