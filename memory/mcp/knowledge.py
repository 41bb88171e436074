"""Knowledge items as MCP tools (docs/mcp.md): ``knowledge_put``, ``knowledge_get``,
``knowledge_query``, ``knowledge_relate``; thin over the services and selectors like their API
views (``memory/apis/knowledge.py``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core import serializers as strict
from core.mcp import Call, Tool
from memory.apis.knowledge import (
    NAME_HELP,
    KnowledgeItemInput,
    KnowledgeItemOutput,
    KnowledgeQueryApi,
    KnowledgeRelationshipCreateApi,
    KnowledgeRelationshipOutput,
)
from memory.models.knowledge import MAX_BASE_NAME_LENGTH
from memory.selectors import knowledge as selectors
from memory.services import knowledge as services


class PutInput(KnowledgeItemInput):
    base = serializers.CharField(max_length=MAX_BASE_NAME_LENGTH, help_text=NAME_HELP)
    key = serializers.CharField(max_length=1000, help_text=NAME_HELP)


class PutOutput(serializers.Serializer):
    item = KnowledgeItemOutput()
    created = serializers.BooleanField()
    changed = serializers.BooleanField(help_text="Whether a new version was written.")


class GetInput(strict.InputSerializer):
    base = serializers.CharField(max_length=MAX_BASE_NAME_LENGTH)
    key = serializers.CharField(max_length=1000)


class GetOutput(serializers.Serializer):
    item = KnowledgeItemOutput()


def _put(call: Call) -> dict[str, Any]:
    data = dict(call.data)
    raw = data.pop("sources")
    sources = None if raw is None else [services.SourceInput(**dict(s)) for s in raw]
    outcome = services.knowledge_item_put(actor=call.actor, sources=sources, **data)
    return dict(
        PutOutput(
            {"item": outcome.item, "created": outcome.created, "changed": outcome.changed}
        ).data
    )


def _query(call: Call) -> dict[str, Any]:
    data = call.data
    found = selectors.knowledge_search(
        actor=call.actor,
        query=data["query"],
        bases=data["bases"],
        knowledge_types=data["knowledge_types"],
        top_k=data["max_results"],
    )
    body = {
        "results": [
            {"item": hit.item, "score": hit.score, "explanation": hit.explanation}
            for hit in found.hits
        ],
        "bases": found.bases,
        "timings_ms": found.timings_ms,
    }
    return dict(KnowledgeQueryApi.OutputSerializer(body).data)


def _relate(call: Call) -> dict[str, Any]:
    data = call.data
    source, target = dict(data["source"]), dict(data["target"])
    edge = services.knowledge_relate(
        actor=call.actor,
        source=(source["base"], source["key"]),
        target=(target["base"], target["key"]),
        relationship_type=data["relationship_type"],
        strength=data["strength"],
    )
    body = {
        "id": edge.pk,
        "relationship_type": edge.relation_type,
        "strength": edge.weight,
        "direction": "outgoing",
        "source": source,
        "target": target,
        "graph_edge_id": edge.pk,
        "created_at": edge.created_at,
    }
    return dict(KnowledgeRelationshipOutput(body).data)


TOOLS = (
    Tool(
        name="knowledge_put",
        title="Write a knowledge item",
        description=(
            "Write the item `key` of the knowledge base `base` (the base is created, factual, "
            "when it does not exist). Writing a key again makes a new version and keeps the "
            "previous one; the same content, metadata, confidence and sources write nothing. "
            "`sources` give its provenance (source_type: conversation_message, document_chunk, "
            "page, user or agent; source_id; reliability 0 to 1)."
        ),
        scope="write",
        input=PutInput,
        output=PutOutput,
        run=_put,
        summary=lambda out: (
            f"{out['item']['base']}/{out['item']['key']} "
            + (
                "created."
                if out["created"]
                else f"version {out['item']['version']}."
                if out["changed"]
                else "unchanged."
            )
        ),
        idempotent=True,
    ),
    Tool(
        name="knowledge_get",
        title="Read a knowledge item",
        description="The current version of the item `key` of the knowledge base `base`.",
        scope="read",
        input=GetInput,
        output=GetOutput,
        run=lambda call: dict(
            GetOutput({"item": selectors.item_get(call.actor, **call.data)}).data
        ),
        summary=lambda out: out["item"]["content"][:500],
        idempotent=True,
    ),
    Tool(
        name="knowledge_query",
        title="Search knowledge items",
        description=(
            "Find the current, valid knowledge items best matching `query` (by meaning and by "
            "keywords), in the bases named in `bases` (default: every base) and of the given "
            "`knowledge_types`; each hit explains its score."
        ),
        scope="read",
        input=KnowledgeQueryApi.InputSerializer,
        output=KnowledgeQueryApi.OutputSerializer,
        run=_query,
        summary=lambda out: f"{len(out['results'])} knowledge item(s).",
        idempotent=True,
    ),
    Tool(
        name="knowledge_relate",
        title="Relate two knowledge items",
        description=(
            "Record that the item `source` relates to the item `target` (each {base, key}) "
            "with `relationship_type` (e.g. depends_on, contradicts, part_of) and `strength` "
            "0 to 1: an edge of the knowledge graph between their nodes."
        ),
        scope="write",
        input=KnowledgeRelationshipCreateApi.InputSerializer,
        output=KnowledgeRelationshipOutput,
        run=_relate,
        summary=lambda out: (
            f"{out['source']['base']}/{out['source']['key']} {out['relationship_type']} "
            f"{out['target']['base']}/{out['target']['key']}."
        ),
    ),
)
