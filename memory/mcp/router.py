"""Memory's tools across the tiers: ``memory_write``, ``memory_read``, ``memory_search``,
``memory_consolidate`` and ``memory_stats`` (docs/mcp.md; the API's router, docs/memory.md).

The adapter below (``_write``, ``_read``, ``_search``, ``_stats``, ``_consolidate``) is the one
place these tools reach memory's services and selectors, making the calls the API's router views
make (``memory/apis/router.py``), so that memory's layout can change under them in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from core import serializers as strict
from core.actors import Actor
from core.errors import ValidationFailed
from core.mcp import Call, Tool
from memory.apis.router import (
    MemoryConsolidateApi,
    MemoryReadApi,
    MemorySearchApi,
    MemoryStatsApi,
    MemoryWriteApi,
    RoutedOutput,
    router_filters,
)
from memory.selectors import router as router_selectors
from memory.selectors.working import working_retrieve
from memory.services import consolidation
from memory.services import long_term as long_term_services
from memory.services import router as router_services
from memory.services.search import memory_search_run
from memory.services.short_term import short_term_read

WORKING, SHORT_TERM = router_selectors.WORKING, router_selectors.SHORT_TERM
LONG_TERM = router_selectors.LONG_TERM

# --- the adapter -----------------------------------------------------------------------------


def _routed(value: router_services.RoutedValue) -> dict[str, Any]:
    return dict(RoutedOutput(value).data)


def _write(actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    """A key to the tier named (the router's write), or a text to long-term memory (a new
    entry, as ``POST /memory/entries`` writes it)."""
    if "key" in data:
        return _routed(
            router_services.memory_write(
                actor=actor,
                key=data["key"],
                value=data["value"],
                tier=data["tier"],
                session_id=data["session_id"],
                ttl=data.get("ttl"),
                memory_type=data.get("memory_type", ""),
                context_id=data.get("context"),
                entry_type=data["entry_type"],
                importance=data["importance"],
            )
        )
    metadata = {"session_id": data["session_id"]} if data["session_id"] else {}
    (entry,) = long_term_services.entries_create(
        actor=actor,
        context_id=data.get("context"),
        items=[
            long_term_services.EntryInput(
                content=data["content"],
                entry_type=data["entry_type"],
                importance=data["importance"],
                tags=data.get("tags", ()),
                metadata=metadata,
            )
        ],
    )
    written = router_services.RoutedValue(
        LONG_TERM,
        "",
        entry.content,
        session_id=data["session_id"],
        entry_id=entry.pk,
        context_id=entry.context_id,
        version=entry.version,
    )
    return _routed(written)


def _read(actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    """The key from the nearest tier holding it (the router's read), or from the tier named."""
    key, session_id, tier = data["key"], data["session_id"], data.get("tier")
    if tier in (WORKING, SHORT_TERM) and not session_id:
        raise ValidationFailed(f"Reading {tier} memory needs session_id.", code="session_required")
    if tier == WORKING:
        found = working_retrieve(actor=actor, session_id=session_id, key=key)
        value = router_services.RoutedValue(WORKING, key, found.value, session_id=session_id)
        return _routed(value)
    if tier == SHORT_TERM:
        entry = short_term_read(actor=actor, session_id=session_id, key=key)
        return _routed(
            router_services.RoutedValue(
                SHORT_TERM, key, entry.value, session_id=session_id, entry_id=entry.pk
            )
        )
    # Long-term memory only: the router reads it alone when no session is named.
    return _routed(
        router_services.memory_read(
            actor=actor, key=key, session_id="" if tier == LONG_TERM else session_id
        )
    )


def _search(actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    """The search across tiers, as ``POST /memory/search`` runs it (its long-term hits are
    recorded as reads)."""
    result = memory_search_run(
        actor=actor,
        query=data["query"],
        tiers=data.get("tiers"),
        top_k=data["top_k"],
        threshold=data.get("threshold"),
        filters=router_filters(data.get("filters")),
    )
    return dict(MemorySearchApi.OutputSerializer(result).data)


def _stats(actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    stats = router_selectors.memory_stats(actor=actor, session_id=data["session_id"])
    return dict(MemoryStatsApi.OutputSerializer(stats).data)


def _consolidate(call: Call) -> dict[str, Any]:
    """A session's promotion (write scope), or the whole account's steps (admin scope), as
    the API's consolidation decides."""
    data = call.data
    report = consolidation.memory_consolidate(
        actor=call.actor,
        session_id=data.get("session_id", ""),
        jobs=data.get("jobs"),
        dry_run=data["dry_run"],
    )
    body = {"dry_run": data["dry_run"], "report": report}
    return dict(MemoryConsolidateApi.OutputSerializer(body).data)


# --- inputs ----------------------------------------------------------------------------------


class MemoryWriteInput(MemoryWriteApi.InputSerializer):
    """The API's router write, plus a text for long-term memory (``content``, ``context``,
    ``tags``: the fields of ``POST /memory/entries``)."""

    tier = serializers.ChoiceField(choices=router_services.WRITABLE_TIERS, default=LONG_TERM)
    key = serializers.CharField(required=False)
    value = serializers.JSONField(required=False, allow_null=True)
    content = serializers.CharField(required=False, trim_whitespace=False)
    context_id = None  # type: ignore[assignment]  # named ``context``, as the entries API names it
    context = serializers.IntegerField(  # type: ignore[assignment]  # a field named "context"
        required=False, min_value=1
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=100
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("key" in attrs) == ("content" in attrs):
            raise serializers.ValidationError("Give exactly one of key or content.")
        if "key" in attrs:
            if "value" not in attrs:
                raise serializers.ValidationError({"value": ["Writing a key needs a value."]})
            if "tags" in attrs:
                raise serializers.ValidationError(
                    {"tags": ["Tags go with content (a long-term entry), not with a key."]}
                )
        else:
            if attrs["tier"] != LONG_TERM:
                raise serializers.ValidationError(
                    {"content": ["content is written to long_term memory; give a key instead."]}
                )
            if "value" in attrs:
                raise serializers.ValidationError({"value": ["Give content or value, not both."]})
        return attrs


class MemoryReadInput(MemoryReadApi.InputSerializer):
    tier = serializers.ChoiceField(choices=router_services.WRITABLE_TIERS, required=False)


class MemoryStatsInput(strict.InputSerializer):
    """``GET /memory/stats``'s query parameter, as an argument."""

    session_id = serializers.CharField(required=False, default="")


# --- the tools -------------------------------------------------------------------------------


def _count(out: Mapping[str, Any], noun: str) -> str:
    n = len(out["results"])
    return f"{n} {noun}{'' if n == 1 else 's'}."


TOOLS = (
    Tool(
        name="memory_write",
        title="Remember something",
        description=(
            "Store a memory. Either `content` (text, with optional `tags`) to add a permanent, "
            "searchable long-term memory; or `key` + `value` (any JSON) to store a value under "
            "a name in a `tier`: `working` (fast scratch state of one session, needs "
            "`session_id`, expires after `ttl` seconds), `short_term` (per session, expires, "
            "needs `session_id`) or `long_term` (the default: permanent; writing the same key "
            "again makes a new version). Long-term memories go to your own memory unless "
            "`context` names a memory context you may write."
        ),
        scope="write",
        input=MemoryWriteInput,
        output=RoutedOutput,
        run=lambda call: _write(call.actor, call.data),
        summary=lambda out: (
            f"Stored in {out['tier']} memory"
            + (f" (entry {out['entry_id']})." if out.get("entry_id") else ".")
        ),
        hints={
            "tier": "working, short_term or long_term (the default).",
            "key": "A name of your choosing (letters, digits, . _ : -). Not with content.",
            "value": "Any JSON value to store under key.",
            "content": "Text to remember in long-term memory (tier long_term). Not with key.",
            "session_id": "The session (conversation or task) the memory belongs to; "
            "needed for working and short_term.",
            "context": "Long-term memory only: the id of a memory context you may write "
            "(default: your own memory).",
            "tags": "Labels for a long-term memory written with content.",
            "importance": "0 to 1: how much this memory matters when recalled (default 0.5).",
        },
    ),
    Tool(
        name="memory_read",
        title="Read a memory by key",
        description=(
            "Read the value stored under `key`. Without `tier`, the nearest tier holding it "
            "answers: working memory, then short-term memory (both of `session_id`), then "
            "long-term memory. Name `tier` to read only that tier. A key no tier holds is the "
            "error memory_key_not_found (working: working_key_not_found)."
        ),
        scope="read",
        input=MemoryReadInput,
        output=RoutedOutput,
        run=lambda call: _read(call.actor, call.data),
        summary=lambda out: f"Found {out['key']} in {out['tier']} memory.",
        hints={
            "session_id": "The session whose working and short-term memory to look in.",
            "tier": "Read only this tier: working, short_term or long_term.",
        },
    ),
    Tool(
        name="memory_search",
        title="Search memories",
        description=(
            "Search every memory tier you may read for `query`, best first: long-term memory "
            "(hybrid semantic and keyword search), short-term memory, shared pools, and "
            "working memory of `filters.session_id`. Each hit names its tier, its score and "
            "its components; `tiers` limits the search, `top_k` (1 to 100) the hits, "
            "`threshold` (0 to 1) the lowest score."
        ),
        scope="read",
        input=MemorySearchApi.InputSerializer,
        output=MemorySearchApi.OutputSerializer,
        run=lambda call: _search(call.actor, call.data),
        summary=lambda out: _count(out, "memory"),
        hints={
            "query": "What to recall, in words.",
            "tiers": "Tiers to search (default all): working, short_term, long_term, shared.",
            "top_k": "How many hits, 1 to 100 (default 10).",
            "threshold": "Lowest score kept, 0 to 1.",
        },
    ),
    Tool(
        name="memory_consolidate",
        title="Consolidate memory",
        description=(
            "Consolidate memory now. With `session_id`: promote your short-term entries of "
            "that session that were read often enough to long-term memory. Without it (admin "
            "keys only): run the account's upkeep steps in `jobs` (default all). `dry_run` "
            "counts what would change without changing anything. Answers a report of counts."
        ),
        scope="write",
        input=MemoryConsolidateApi.InputSerializer,
        output=MemoryConsolidateApi.OutputSerializer,
        run=_consolidate,
        summary=lambda out: "Consolidation report" + (" (dry run)." if out["dry_run"] else "."),
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
        input=MemoryStatsInput,
        output=MemoryStatsApi.OutputSerializer,
        run=lambda call: _stats(call.actor, call.data),
        summary=lambda out: "Memory statistics.",
        hints={"session_id": "A session whose working memory to count."},
    ),
)
