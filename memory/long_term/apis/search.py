"""Long-term memory search: ``/api/v1/memory/long-term/search`` (docs/memory/long-term.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.actors import Actor
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.long_term import selectors, services
from memory.models import (
    MemoryEntry,
)
from rag.search import DEFAULT_FUSION, FUSIONS, SEARCH_MODES
from rag.search_apis import GraphHitExplanation, SearchInput

# --- search ------------------------------------------------------------------------------------


class LongTermFiltersInput(strict.InputSerializer):
    context_ids = strict.IdListField(required=False, default=list)
    entry_types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.EntryType.choices),
        required=False,
        default=list,
        max_length=20,
    )
    memory_types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.MemoryType.choices),
        required=False,
        default=list,
        max_length=20,
    )
    sources = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.Source.choices),
        required=False,
        default=list,
        max_length=20,
    )
    tags_any = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, default=list, max_length=100
    )
    occurred_from = serializers.DateTimeField(required=False, allow_null=True, default=None)
    occurred_to = serializers.DateTimeField(required=False, allow_null=True, default=None)
    thread = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class LongTermSearchInput(strict.InputSerializer):
    query = strict.SearchQueryField()
    top_k = strict.TopKField()
    threshold = strict.ThresholdField(
        min_value=0, max_value=1, help_text="The lowest effective_relevance_score returned."
    )
    mode = serializers.ChoiceField(
        choices=SEARCH_MODES,
        required=False,
        help_text="Default graph (hybrid when stages are given): the hybrid ranking with a"
        " personalized PageRank over the knowledge-graph nodes the entries mention, and late"
        " interaction over the best candidates (docs/memory/long-term.md).",
    )
    fusion = serializers.ChoiceField(choices=FUSIONS, default=DEFAULT_FUSION)
    weights = strict.WeightsInput(required=False)
    stages = SearchInput._declared_fields["stages"]
    max_hops = SearchInput._declared_fields["max_hops"]
    filters = LongTermFiltersInput(required=False)


class ComponentsOutput(serializers.Serializer):
    similarity = strict.FiniteFloatField()
    importance = strict.FiniteFloatField()
    confidence = strict.FiniteFloatField()
    recency = strict.FiniteFloatField()


class RetrievalOutput(serializers.Serializer):
    score = strict.FiniteFloatField(allow_null=True, help_text="The fused (or stage) score.")
    vector_rank = serializers.IntegerField(allow_null=True)
    vector_score = strict.FiniteFloatField(allow_null=True)
    keyword_rank = serializers.IntegerField(allow_null=True)
    keyword_score = strict.FiniteFloatField(allow_null=True)
    graph_rank = serializers.IntegerField(allow_null=True, required=False)
    graph_score = strict.FiniteFloatField(allow_null=True, required=False)
    graph = GraphHitExplanation(
        allow_null=True, required=False, help_text="Graph searches: how the entry was reached."
    )
    late_score = strict.FiniteFloatField(
        allow_null=True,
        required=False,
        help_text="Graph searches: the entry's late-interaction score (its tokens against the"
        " query's, each query word weighted by its rarity among the best 30 candidates, -1 to"
        " 1), for those 30; null elsewhere. It compares the hits of one search.",
    )


class LongTermHitOutput(serializers.Serializer):
    id = serializers.IntegerField(source="entry.pk")
    context_id = serializers.IntegerField(source="entry.context_id")
    content = serializers.CharField(source="entry.content")
    data = serializers.JSONField(source="entry.data", allow_null=True)  # type: ignore[assignment]  # a field named "data"
    entry_type = serializers.CharField(source="entry.entry_type")
    version = serializers.IntegerField(source="entry.version")
    occurred_at = serializers.DateTimeField(source="entry.occurred_at", allow_null=True)
    score = strict.FiniteFloatField(
        help_text="effective_relevance_score (docs/memory/long-term.md)."
    )
    components = ComponentsOutput()
    retrieval = RetrievalOutput()


class LongTermSearchApi(ApiView):
    """The current, unarchived entries most relevant to ``query`` in the contexts the caller
    may read (or the ``context_ids`` given, each of which must be), best
    ``effective_relevance_score`` first, each explained by its components. A search is a
    read (the ``read`` scope); its hits count as accesses."""

    required_scope = "read"

    class OutputSerializer(serializers.Serializer):
        results = LongTermHitOutput(many=True, source="hits")
        timings_ms = strict.TimingsField()

    @extend_schema(
        operation_id="memory_long_term_search",
        request=LongTermSearchInput,
        responses=OutputSerializer,
    )
    def post(self, request: Request) -> Response:
        actor = request_actor(request)
        found = run_long_term_search(actor, validated(LongTermSearchInput, request))
        return Response(self.OutputSerializer(found).data)


def run_long_term_search(actor: Actor, data: dict[str, Any]) -> selectors.LongTermSearch:
    """The search a validated ``LongTermSearchInput`` asks for: the API's and the MCP tool
    ``long_term_memory_search``'s one call."""
    raw = data.get("filters") or LongTermFiltersInput().run_validation({})
    filters = selectors.LongTermFilters(
        context_ids=tuple(raw["context_ids"]),
        entry_types=tuple(raw["entry_types"]),
        memory_types=tuple(raw["memory_types"]),
        sources=tuple(raw["sources"]),
        tags_any=tuple(raw["tags_any"]),
        occurred_from=raw["occurred_from"],
        occurred_to=raw["occurred_to"],
        thread=raw["thread"],
    )
    return services.long_term_search_run(
        actor=actor,
        query=data["query"],
        top_k=data["top_k"],
        filters=filters,
        mode=data.get("mode"),
        fusion=data["fusion"],
        weights=data.get("weights"),
        threshold=data["threshold"],
        stages=data.get("stages") or (),
        max_hops=data["max_hops"],
    )
