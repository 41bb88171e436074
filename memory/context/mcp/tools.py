"""The memory tools of agent runs (seed 004) as jobs of the memory tools (docs/mcp.md):
``memory_write`` with ``kind: structured`` (``POST /memory/tools/write``), ``memory_search``
with ``kind: similar``, ``related`` and ``summary`` (``POST /memory/tools/search``, ``related``,
``summarised-search``); the same service calls and answers as their API views
(``memory/context/apis/tools.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.mcp.registry import Job
from memory.context.apis.tools import (
    RUN_ID_HELP,
    ToolRelatedApi,
    ToolSearchApi,
    ToolSummarisedSearchApi,
    ToolWriteApi,
)
from memory.context.services import tools

RELATED_HELP = (
    f"Up to {tools.MAX_RELATED} items the memory is about, each {{kind, id}} with kind entry, "
    'knowledge_item, page, skill or document, e.g. [{"kind": "page", "id": 7}].'
)


def _found(out: Mapping[str, Any]) -> str:
    n = len(out["results"])
    return f"{n} memor{'y' if n == 1 else 'ies'}."


STRUCTURED_WRITE = Job(
    value="structured",
    description="an insight worth keeping across runs (text), structured into a named "
    "long-term memory, or refused with reason (empty, trivial, personal_data, not_general, "
    "duplicate) or held for review (pending_review) (POST /memory/tools/write)",
    scope="write",
    rest="POST /api/v1/memory/tools/write",
    input=ToolWriteApi.InputSerializer,
    output=ToolWriteApi.OutputSerializer,
    run=lambda call: dict(
        ToolWriteApi.OutputSerializer(tools.memory_tool_write(actor=call.actor, **call.data)).data
    ),
    summary=lambda out: (
        f"Written as memory {out['memory']['id']}."
        if out["written"]
        else f"Waits for review as pending change {out['pending_change_id']}."
        if out["reason"] == tools.PENDING_REVIEW
        else f"Refused: {out['reason']}."
    ),
    hints={
        "run_id": RUN_ID_HELP,
        "text": "What to remember, in plain words, e.g. Deploys to production happen on "
        "Fridays after the 10:00 stand-up.",
        "related": RELATED_HELP,
    },
)

SIMILAR = Job(
    value="similar",
    description="up to 5 memories closest in meaning to query (cosine similarity at least "
    "0.5), counted against run_id's search budget (POST /memory/tools/search)",
    scope="read",
    rest="POST /api/v1/memory/tools/search",
    input=ToolSearchApi.InputSerializer,
    output=ToolSearchApi.OutputSerializer,
    run=lambda call: dict(
        ToolSearchApi.OutputSerializer(
            {"results": tools.memory_tool_search(actor=call.actor, **call.data)}
        ).data
    ),
    summary=_found,
    hints={"run_id": RUN_ID_HELP},
)

RELATED = Job(
    value="related",
    description="the memories linked to any of the related items, newest first "
    "(POST /memory/tools/related)",
    scope="read",
    rest="POST /api/v1/memory/tools/related",
    input=ToolRelatedApi.InputSerializer,
    output=ToolRelatedApi.OutputSerializer,
    run=lambda call: dict(
        ToolRelatedApi.OutputSerializer(
            {"results": tools.memory_tool_related(actor=call.actor, **call.data)}
        ).data
    ),
    summary=_found,
    hints={"run_id": RUN_ID_HELP, "related": RELATED_HELP},
)

SUMMARY = Job(
    value="summary",
    description="a short summary of what your memories say about query, citing each memory "
    "used as [n] (POST /memory/tools/summarised-search)",
    scope="read",
    rest="POST /api/v1/memory/tools/summarised-search",
    input=ToolSummarisedSearchApi.InputSerializer,
    output=ToolSummarisedSearchApi.OutputSerializer,
    run=lambda call: dict(
        ToolSummarisedSearchApi.OutputSerializer(
            tools.memory_tool_summarised_search(actor=call.actor, **call.data)
        ).data
    ),
    summary=lambda out: out["summary"] or "No memory answers this.",
    hints={"run_id": RUN_ID_HELP},
)
