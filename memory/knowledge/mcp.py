"""Knowledge items as jobs of the memory tools (docs/mcp.md): ``memory_write`` with
``kind: knowledge_item`` (``PUT /knowledge/{base}/items/{key}``) and ``knowledge_relationship``
(``POST /knowledge/relationships``), ``memory_read`` with ``kind: knowledge_item`` (``GET
/knowledge/{base}/items/{key}``), ``memory_search`` with ``kind: knowledge_item`` (``POST
/knowledge/query``). Each calls the function the API view calls and answers what it answers."""

from __future__ import annotations

from rest_framework import serializers

from core import serializers as strict
from core.mcp.registry import Job
from memory.knowledge.apis import (
    NAME_HELP,
    KnowledgeItemInput,
    KnowledgeItemOutput,
    KnowledgeQueryApi,
    KnowledgeRelationshipCreateApi,
    KnowledgeRelationshipOutput,
    knowledge_item_get_answer,
    knowledge_item_put_answer,
    knowledge_query_answer,
    knowledge_relate_answer,
)
from memory.knowledge.models import MAX_BASE_NAME_LENGTH, MAX_KEY_LENGTH

BASE_HELP = f"The knowledge base's name, e.g. harbour-facts. {NAME_HELP}"
KEY_HELP = f"The item's key in its base, e.g. tide.noon. {NAME_HELP}"


class ItemRefInput(strict.InputSerializer):
    base = serializers.CharField(max_length=MAX_BASE_NAME_LENGTH, help_text=BASE_HELP)
    key = serializers.CharField(max_length=MAX_KEY_LENGTH, help_text=KEY_HELP)


class PutInput(KnowledgeItemInput, ItemRefInput):
    """``PUT /knowledge/{base}/items/{key}``: the path's base and key, then its body."""

    # A write's key is the service's to check (400 key_too_long), as in the REST path.
    key = strict.ServiceBoundedCharField(max_length=MAX_KEY_LENGTH, help_text=KEY_HELP)


def _put(actor: object, data: dict[str, object]) -> dict[str, object]:
    data = dict(data)
    base, key = str(data.pop("base")), str(data.pop("key"))
    body, _ = knowledge_item_put_answer(actor, base, key, data)
    return body


PUT = Job(
    value="knowledge_item",
    description="write the item key of the knowledge base base (created when missing); "
    "writing it again makes a new version (PUT /knowledge/{base}/items/{key})",
    scope="write",
    rest="PUT /api/v1/knowledge/{base}/items/{key}",
    input=PutInput,
    output=KnowledgeItemOutput,
    run=lambda call: _put(call.actor, call.data),
    summary=lambda out: f"{out['base']}/{out['key']} at version {out['version']}.",
    hints={
        "content": "The item's text, e.g. The tide turns at noon.",
        "content_type": "Its media type (default text/plain).",
        "metadata": "Any JSON object kept with it.",
        "confidence": "0 to 1 (default 1).",
        "sources": "Its provenance: [{source_type (conversation_message, document_chunk, "
        "page, user or agent), source_id, reliability 0 to 1}].",
    },
)

RELATE = Job(
    value="knowledge_relationship",
    description="relate the knowledge item source to target (each {base, key}) with "
    "relationship_type and strength: an edge of the knowledge graph "
    "(POST /knowledge/relationships)",
    scope="write",
    rest="POST /api/v1/knowledge/relationships",
    input=KnowledgeRelationshipCreateApi.InputSerializer,
    output=KnowledgeRelationshipOutput,
    run=lambda call: knowledge_relate_answer(call.actor, call.data),
    summary=lambda out: (
        f"{out['source']['base']}/{out['source']['key']} {out['relationship_type']} "
        f"{out['target']['base']}/{out['target']['key']}."
    ),
    hints={
        "source": 'The item it starts from, e.g. {"base": "harbour-facts", "key": "tide"}.',
        "target": 'The item it points to, e.g. {"base": "harbour-facts", "key": "moon"}.',
        "relationship_type": "What links them, e.g. depends_on, contradicts, part_of.",
        "strength": "0 to 1 (default 1).",
    },
)

GET = Job(
    value="knowledge_item",
    description="the current version of the knowledge item key of the base base "
    "(GET /knowledge/{base}/items/{key})",
    scope="read",
    rest="GET /api/v1/knowledge/{base}/items/{key}",
    input=ItemRefInput,
    output=KnowledgeItemOutput,
    run=lambda call: knowledge_item_get_answer(call.actor, call.data["base"], call.data["key"]),
    summary=lambda out: str(out["content"])[:500],
)

QUERY = Job(
    value="knowledge_item",
    description="the current knowledge items best matching query (by meaning and keywords) "
    "in the bases named (default every base), each explained (POST /knowledge/query)",
    scope="read",
    rest="POST /api/v1/knowledge/query",
    input=KnowledgeQueryApi.InputSerializer,
    output=KnowledgeQueryApi.OutputSerializer,
    run=lambda call: knowledge_query_answer(call.actor, call.data),
    summary=lambda out: f"{len(out['results'])} knowledge item(s).",
    hints={
        "bases": 'Names of knowledge bases to search (default all), e.g. ["harbour-facts"].',
        "knowledge_types": "Only bases of these types (factual, procedural, ...).",
        "max_results": "How many items, 1 to 100 (default 10).",
    },
)
