"""Context assembly as the MCP tool ``get_context`` (docs/mcp.md), thin over the same service
as ``POST /api/v1/memory/context``."""

from __future__ import annotations

from core.mcp import Tool
from memory.context import assembly
from memory.context.apis.context import ContextInput, ContextOutput

TOOLS = (
    Tool(
        name="get_context",
        rest="POST /api/v1/memory/context",
        title="What should I know right now?",
        description=(
            "Call before answering: the context for `query` within `token_budget` tokens "
            "(default 2,000), from every store you may read: a conversation's last turns, its "
            "summaries and relevant older turns (`conversation_id`), your memories, knowledge "
            "items, documents, pages, skills, working memory (`session_id`) and pools. `context` "
            "is the text to put in your prompt; `sections` list every item with where it came "
            "from."
        ),
        scope="read",
        input=ContextInput,
        output=ContextOutput,
        run=lambda call: dict(
            ContextOutput(
                assembly.context_assemble(
                    actor=call.actor, request=assembly.ContextRequest(**call.data)
                )
            ).data
        ),
        hints={
            "format": "How context is rendered: text (default) or another format the API offers.",
        },
        summary=lambda out: out["context"],
        idempotent=True,
    ),
)
