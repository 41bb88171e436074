"""Memory tools for agents in a run: ``/api/v1/memory/tools/...`` and ``/api/v1/memory/runs/...``
(docs/memory/tools.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory import names
from memory.context import structuring
from memory.context.selectors.runs import memory_run_get
from memory.context.services import tools
from memory.long_term.apis.entries import MemoryEntryOutput

RUN_ID_HELP = (
    "The agent run these calls belong to: its searches are counted against "
    "MEMORY_RUN_MAX_SEARCHES and its counters read at GET /memory/runs/{run_id}. Optional."
)


class ReferenceInput(strict.InputSerializer):
    kind = serializers.ChoiceField(choices=tools.RELATED_KINDS, help_text="The item's type.")
    id = strict.IdField(help_text="The item's id.")


def _related_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=ReferenceInput(),
        max_length=tools.MAX_RELATED,
        help_text=f"Up to {tools.MAX_RELATED} items: entry, knowledge_item, page, skill, document.",
        **kwargs,
    )


def _run_id() -> serializers.CharField:
    return serializers.RegexField(
        names.RUN_ID,
        max_length=names.MAX_RUN_ID_CHARS,
        required=False,
        default="",
        allow_blank=True,
        help_text=RUN_ID_HELP,
    )


class ToolMemoryOutput(serializers.Serializer):
    id = serializers.IntegerField(source="entry.pk")
    context_id = serializers.IntegerField(source="entry.context_id")
    name = serializers.SerializerMethodField()
    content = serializers.CharField(source="entry.content")
    entry_type = serializers.CharField(source="entry.entry_type")
    tags = serializers.ListField(child=serializers.CharField(), source="entry.tags")
    related = serializers.SerializerMethodField()
    score = strict.FiniteFloatField(
        allow_null=True, help_text="Cosine similarity to the query (semantic search)."
    )
    matched = serializers.ListField(
        child=serializers.DictField(), help_text="Related search: the items that linked it."
    )

    def get_name(self, hit: tools.ToolHit) -> str:
        return str(hit.entry.metadata.get("name", ""))

    def get_related(self, hit: tools.ToolHit) -> list[dict[str, Any]]:
        related = hit.entry.metadata.get("related")
        return related if isinstance(related, list) else []


class ToolWriteApi(ApiView):
    """Turn a note into a memory of the caller's own memory, or refuse it with a reason:
    ``empty``, ``trivial``, ``personal_data``, ``not_general``, ``duplicate``."""

    class InputSerializer(strict.InputSerializer):
        text = serializers.CharField(
            allow_blank=True, trim_whitespace=False, max_length=structuring.MAX_TEXT_CHARS
        )
        related = _related_field(required=False, default=list)
        run_id = _run_id()

    class OutputSerializer(serializers.Serializer):
        written = serializers.BooleanField()
        reason = serializers.ChoiceField(
            choices=["", *structuring.REASONS, tools.PENDING_REVIEW],
            help_text="Why it was refused (pending_review: it waits for a person's approval).",
        )
        detail = serializers.CharField()
        method = serializers.CharField(help_text="offline, or llm model id.")
        memory = MemoryEntryOutput(source="entry", allow_null=True)
        duplicate_of = serializers.IntegerField(allow_null=True)
        similarity = strict.FiniteFloatField(allow_null=True)
        pending_change_id = serializers.IntegerField(
            allow_null=True,
            help_text="With pending_review: the pending change (GET /memory/pending-changes/{id}).",
        )

    @extend_schema(
        operation_id="memory_tools_write", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        outcome = tools.memory_tool_write(actor=request_actor(request), **data)
        return Response(self.OutputSerializer(outcome).data)


class ToolSearchApi(ApiView):
    """Semantic search of the memories the caller may read: at most 5, each with a cosine
    similarity of at least 0.5 (an empty list when none qualifies)."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        query = strict.SearchQueryField()
        run_id = _run_id()

    class OutputSerializer(serializers.Serializer):
        results = ToolMemoryOutput(many=True)

    @extend_schema(
        operation_id="memory_tools_search", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        hits = tools.memory_tool_search(actor=request_actor(request), **data)
        return Response(self.OutputSerializer({"results": hits}).data)


class ToolRelatedApi(ApiView):
    """The current memories linked to any of the items, newest first (at most 20)."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        related = _related_field(min_length=1)
        run_id = _run_id()

    class OutputSerializer(serializers.Serializer):
        results = ToolMemoryOutput(many=True)

    @extend_schema(
        operation_id="memory_tools_related", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        hits = tools.memory_tool_related(actor=request_actor(request), **data)
        return Response(self.OutputSerializer({"results": hits}).data)


class ToolSummarisedSearchApi(ApiView):
    """The semantic search (and the memories linked to the same items), summarised with
    citations ``[n]`` of the memories it used: by the LLM, or extractive offline."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        query = strict.SearchQueryField()
        run_id = _run_id()

    class OutputSerializer(serializers.Serializer):
        summary = serializers.CharField()
        method = serializers.CharField()
        searches = serializers.ListField(child=serializers.CharField())
        memories = ToolMemoryOutput(many=True)

    @extend_schema(
        operation_id="memory_tools_summarised_search",
        request=InputSerializer,
        responses=OutputSerializer,
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        found = tools.memory_tool_summarised_search(actor=request_actor(request), **data)
        return Response(self.OutputSerializer(found).data)


class RunApi(ApiView):
    """An agent run's counters: memories written and checked, searches and the budget."""

    class OutputSerializer(serializers.Serializer):
        run_id = serializers.CharField()
        memories_written = serializers.IntegerField()
        memories_checked = serializers.IntegerField()
        searches = serializers.IntegerField()
        max_searches = serializers.IntegerField()
        started_at = serializers.CharField()
        expires_in = serializers.IntegerField(help_text="Seconds until the counters expire.")

    @extend_schema(operation_id="memory_run_retrieve", responses=OutputSerializer)
    def get(self, request: Request, run_id: str) -> Response:
        report = memory_run_get(actor=request_actor(request), run_id=run_id)
        return Response(self.OutputSerializer(report).data)
