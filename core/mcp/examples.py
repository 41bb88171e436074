"""An example value for every tool parameter (the input schema's ``examples``).

A model reads an example faster than a rule. Most parameters' examples follow from their schema:
a constant, the first choice of an enum, the default, a date for a date. The others are written
here once, by parameter name, since one name means one thing across the tools (``query`` is
always words to look for); a tool's own ``examples`` (``Tool.examples`` / ``Job.examples``) win
where its parameter differs. ``tests/mcp/test_registry.py`` checks that every parameter has one
and that each is valid against its parameter's schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# By parameter name: what an agent would pass.
EXAMPLES: Mapping[str, Any] = {
    "agent_id": 7,
    "aliases": ["Frost calendar"],
    "base": "garden",
    "bases": ["garden"],
    "content": "The office moved to Lisbon in May.",
    "content_base64": "VG9tYXRvZXMgZ28gb3V0IGFmdGVyIHRoZSBsYXN0IGZyb3N0Lg==",
    "content_type": "text/markdown",
    "context": 3,
    "context_id": 3,
    "context_ids": [3],
    "conversation_id": 12,
    "cursor": "eyJhZnRlciI6IDI1fQ:1vX2bQ:signature",
    "data": {"agent_bulletin": {"market_regime": "calm"}},
    "dependencies": ["pdf-reader"],
    "description": "Summarise a long PDF report into five bullet points.",
    "document_date": "2026-05-01",
    "doc_type": "manual",
    "document_id": 31,
    "end_turn": 40,
    "entity_type": "person",
    "execution_context": {"tool": "python", "timeout_seconds": 30},
    "expected_version": 4,
    "expires_at": "2026-06-01T00:00:00Z",
    "filename": "garden-handbook.md",
    "filters": {"tags_any": ["travel"]},
    "job_id": 55,
    "jobs": ["dedup", "decay"],
    "key": "user.timezone",
    "knowledge_base_id": 2,
    "knowledge_base_ids": [2],
    "knowledge_types": ["factual"],
    "lifecycle_state": "current",
    "messages": [
        {"role": "user", "name": "Ana", "content": "I moved to Lisbon in May."},
        {"role": "assistant", "content": "Noted: Lisbon since May."},
    ],
    "metadata": {"channel": "chat"},
    "name": "pdf-summary",
    "node_id": 18,
    "occurred_at": "2026-05-01T09:30:00Z",
    "page_id": 9,
    "page_size": 25,
    "path": "agent_bulletin.market_regime",
    "pool_id": "trip-planning",
    "query": "Where did Ana move in May?",
    "related": [{"kind": "entry", "id": 42}],
    "relation_type": "works_at",
    "relationship_type": "supports",
    "retention_policy": {"ttl_seconds": 86400},
    "routing_key": "summarise-pdf",
    "run_id": "run-2026-05-01",
    "session_id": "chat-42",
    "skill_id": 5,
    "slug": "frost-dates",
    "source": {"base": "garden", "key": "tomato.planting"},
    "sources": [{"source_type": "conversation_message", "source_id": "42"}],
    "stages": ["vector", "keyword", "graph"],
    "source_path": "handbooks/garden.md",
    "start_turn": 1,
    "statuses": ["active"],
    "success": True,
    "tags": ["travel"],
    "target": {"base": "garden", "key": "tomato.planting"},
    "task_type": "summarise",
    "text": "The tide turns at noon.",
    "threshold": 0.3,
    "tiers": ["working", "long_term"],
    "title": "Frost dates",
    "token_budget": 2000,
    "ttl": 3600,
    "value": "Europe/Lisbon",
    "version_id": 3,
    "weights": {"vector": 0.5, "keyword": 0.5},
    "workflow_run_id": "wf-2026-05-01",
}

_BY_FORMAT = {"date": "2026-05-01", "date-time": "2026-05-01T09:30:00Z"}
_MISSING = object()


def derived(schema: Mapping[str, Any], *, strong: bool) -> Any:
    """An example that follows from the schema alone, or ``_MISSING``. Strong: the constant,
    the default (a non-blank one), the first choice of an enum. Otherwise also a date for a
    date. Arrays take their items' example; a union its first branch's."""
    if "const" in schema:
        return schema["const"]
    if schema.get("default") not in (None, "", [], {}):
        return schema["default"]
    choices = [c for c in schema.get("enum", ()) if c is not None]
    if choices:
        return choices[0]
    if not strong and schema.get("format") in _BY_FORMAT:
        return _BY_FORMAT[schema["format"]]
    items = schema.get("items")
    if isinstance(items, Mapping):
        item = derived(items, strong=strong)
        if item is not _MISSING:
            return [item]
    for branches in ("anyOf", "oneOf"):
        for branch in schema.get(branches, ()):
            found = derived(branch, strong=strong) if isinstance(branch, Mapping) else _MISSING
            if found is not _MISSING:
                return found
    return _MISSING


def example_of(name: str, schema: Mapping[str, Any], own: Mapping[str, Any]) -> Any:
    """The example of parameter ``name``: the tool's own; else the schema's constant, choice or
    default (in a union too); else the one written here for the name; else a value of the
    schema's format (``_MISSING`` when none is known)."""
    if name in own:
        return own[name]
    for found in (derived(schema, strong=True), EXAMPLES.get(name, _MISSING)):
        if found is not _MISSING:
            return found
    return derived(schema, strong=False)


def exemplify(properties: dict[str, Any], own: Mapping[str, Any]) -> None:
    """Give each property its example (``examples``, JSON Schema's keyword), in place."""
    for name, schema in properties.items():
        if "examples" in schema:
            continue
        example = example_of(name, schema, own)
        if example is not _MISSING:
            schema["examples"] = [example]
