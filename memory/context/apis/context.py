"""Context assembly: ``POST /api/v1/memory/context`` (docs/memory/context.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.context import assembly, task_types
from memory.names import SESSION_ID

KINDS = ("turn", "summary", "memory", "knowledge", "chunk", "page", "skill", "pool", "working")


class ContextInput(strict.InputSerializer):
    query = strict.SearchQueryField(help_text="What the agent is about to answer or do.")
    conversation_id = strict.IdField(
        required=False,
        allow_null=True,
        default=None,
        help_text="A conversation: its last turns, summaries and relevant older turns.",
    )
    session_id = serializers.RegexField(
        rf"^{SESSION_ID}$",
        max_length=128,
        required=False,
        default="",
        allow_blank=True,
        help_text="A working-memory session of the calling agent (the task context).",
    )
    task_type = serializers.ChoiceField(
        choices=task_types.TASK_TYPES,
        required=False,
        allow_null=True,
        default=None,
        help_text="Classified from the query when absent.",
    )
    token_budget = serializers.IntegerField(
        required=False,
        default=assembly.DEFAULT_BUDGET,
        min_value=assembly.MIN_BUDGET,
        max_value=assembly.MAX_BUDGET,
        help_text="The hard limit of the context's tokens.",
    )
    sources = serializers.ListField(
        child=serializers.ChoiceField(choices=assembly.SOURCES),
        required=False,
        allow_null=True,
        default=None,
        max_length=len(assembly.SOURCES),
        help_text="Only these sources (default: all).",
    )
    knowledge_base_ids = strict.IdListField(
        required=False,
        default=list,
        help_text="Only these knowledge bases (documents and knowledge items).",
    )
    format = serializers.ChoiceField(choices=assembly.FORMATS, default="text")


class ContextItemOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=KINDS)
    id = serializers.JSONField(
        help_text="The item's id: an integer, or a string for pools and working memory."
    )
    score = strict.FiniteFloatField()
    tokens = serializers.IntegerField(help_text="Its line's tokens and its metadata echo's.")
    text = serializers.CharField(help_text="The item as the context shows it.")
    metadata = serializers.DictField(
        help_text="The item's metadata (a turn's: the message's, as stored), or its leading "
        "keys that fit in 256 bytes of compact JSON; its tokens are counted in `tokens`."
    )
    metadata_truncated = serializers.BooleanField(
        help_text="Whether `metadata` is cut to that excerpt (keys left out)."
    )
    source = serializers.DictField(help_text="Where the item came from.")  # type: ignore[assignment]  # a field named "source"


class ContextSectionOutput(serializers.Serializer):
    name = serializers.CharField()
    tokens = serializers.IntegerField()
    items = ContextItemOutput(many=True)


class DroppedOutput(serializers.Serializer):
    candidates = serializers.IntegerField()
    tokens = serializers.IntegerField()


class ContextOutput(serializers.Serializer):
    context = serializers.CharField()  # type: ignore[assignment]  # a field named "context"
    task_type = serializers.ChoiceField(choices=task_types.TASK_TYPES)
    task_type_source = serializers.CharField(help_text="given, or classified")
    tokens = serializers.IntegerField(
        help_text="Everything the answer shows: `context`'s tokens and every item's metadata "
        "echo's; never above `token_budget`."
    )
    token_budget = serializers.IntegerField()
    tokenizer = serializers.CharField()
    sections = ContextSectionOutput(many=True)
    dropped = DroppedOutput()
    timings_ms = strict.TimingsField()


class ContextApi(ApiView):
    """The agent's LLM context for ``query``: sections in seed 003's order (immediate turns,
    summaries, relevant history, knowledge, documents, pages, skills, task context, the
    query), within ``token_budget`` tokens, every item with its provenance."""

    required_scope = "read"

    @extend_schema(operation_id="memory_context", request=ContextInput, responses=ContextOutput)
    def post(self, request: Request) -> Response:
        data = validated(ContextInput, request)
        result = assembly.context_assemble(
            actor=request_actor(request), request=assembly.ContextRequest(**data)
        )
        return Response(ContextOutput(result).data)
