"""The memory tools of seed 004 as MCP tools (docs/mcp.md): ``write_memory``,
``semantic_memory_search``, ``related_memory_search``, ``summarised_memory_search``; thin over
``memory.services.tools`` like their API views (``memory/apis/tools.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.mcp import Tool
from memory.apis.tools import (
    RUN_ID_HELP,
    ToolRelatedApi,
    ToolSearchApi,
    ToolSummarisedSearchApi,
    ToolWriteApi,
)
from memory.services import tools


def _found(out: Mapping[str, Any]) -> str:
    n = len(out["results"])
    return f"{n} memor{'y' if n == 1 else 'ies'}."


TOOLS = (
    Tool(
        name="write_memory",
        title="Write a durable memory",
        description=(
            "Save an insight worth keeping across runs (a fact, decision, lesson or plan) to "
            "your own long-term memory. The text is structured into a named memory; it is "
            "refused, with `reason`, when it is empty or trivial, holds personal data "
            "(emails, phone or card numbers), is only about the present moment, or repeats a "
            "memory you have (`duplicate`). `related` links up to 10 items it is about. When "
            "your memory holds agents' writes for review, it answers `pending_review` with "
            "`pending_change_id`: the memory is written once a person approves it."
        ),
        scope="write",
        input=ToolWriteApi.InputSerializer,
        output=ToolWriteApi.OutputSerializer,
        run=lambda call: dict(
            ToolWriteApi.OutputSerializer(
                tools.memory_tool_write(actor=call.actor, **call.data)
            ).data
        ),
        summary=lambda out: (
            f"Written as memory {out['memory']['id']}."
            if out["written"]
            else f"Waits for review as pending change {out['pending_change_id']}."
            if out["reason"] == tools.PENDING_REVIEW
            else f"Refused: {out['reason']}."
        ),
        hints={"run_id": RUN_ID_HELP, "text": "What to remember, in plain words."},
    ),
    Tool(
        name="semantic_memory_search",
        title="Search memories by meaning",
        description=(
            "Find up to 5 of the memories you may read that are closest in meaning to `query` "
            "(cosine similarity of at least 0.5; an empty list when none is). Each search of "
            "a run counts against its budget (search_budget_exhausted past it)."
        ),
        scope="read",
        input=ToolSearchApi.InputSerializer,
        output=ToolSearchApi.OutputSerializer,
        run=lambda call: dict(
            ToolSearchApi.OutputSerializer(
                {"results": tools.memory_tool_search(actor=call.actor, **call.data)}
            ).data
        ),
        summary=_found,
        hints={"run_id": RUN_ID_HELP},
        idempotent=True,
    ),
    Tool(
        name="related_memory_search",
        title="Memories about given items",
        description=(
            "The memories linked to any of the `related` items (memory entries, knowledge "
            "items, pages, skills, documents), newest first."
        ),
        scope="read",
        input=ToolRelatedApi.InputSerializer,
        output=ToolRelatedApi.OutputSerializer,
        run=lambda call: dict(
            ToolRelatedApi.OutputSerializer(
                {"results": tools.memory_tool_related(actor=call.actor, **call.data)}
            ).data
        ),
        summary=_found,
        hints={"run_id": RUN_ID_HELP},
        idempotent=True,
    ),
    Tool(
        name="summarised_memory_search",
        title="What do my memories say about this?",
        description=(
            "Search your memories for `query` (by meaning, then the memories about the same "
            "items) and answer a short summary grounded in them, citing each as [n], with the "
            "memories it used."
        ),
        scope="read",
        input=ToolSummarisedSearchApi.InputSerializer,
        output=ToolSummarisedSearchApi.OutputSerializer,
        run=lambda call: dict(
            ToolSummarisedSearchApi.OutputSerializer(
                tools.memory_tool_summarised_search(actor=call.actor, **call.data)
            ).data
        ),
        summary=lambda out: out["summary"] or "No memory answers this.",
        hints={"run_id": RUN_ID_HELP},
    ),
)
