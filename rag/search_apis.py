"""RAG search HTTP API: search, query (search with a context block), analytics and the query log;
one view per operation, thin over services and selectors."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.actors import Actor
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from rag import selectors, services
from rag.context import context_block_build
from rag.graph.graph_types import SEED_MATCHES
from rag.graph.retrieval import DEFAULT_MAX_HOPS, MAX_GRAPH_HOPS, STAGES
from rag.search import DEFAULT_FUSION, FUSIONS, SEARCH_MODES, SearchFilters, SearchHit

# --- search --------------------------------------------------------------------------------------


class FiltersInput(strict.InputSerializer):
    knowledge_base_ids = strict.IdListField(
        required=False, default=list, help_text="Only these knowledge bases, e.g. [3]."
    )
    doc_types = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=list,
        max_length=100,
        help_text='Only documents of these doc_type labels, e.g. ["manual"].',
    )
    tags_any = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=list,
        max_length=100,
        help_text='Documents with any of these tags, e.g. ["garden"].',
    )
    tags_all = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=list,
        max_length=100,
        help_text="Documents with all of these tags.",
    )
    date_from = serializers.DateField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Documents dated on or after this day, YYYY-MM-DD.",
    )
    date_to = serializers.DateField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Documents dated on or before this day, YYYY-MM-DD.",
    )
    lifecycle_states = serializers.ListField(
        child=serializers.CharField(max_length=50),
        required=False,
        default=list,
        max_length=100,
        help_text='Only documents in these lifecycle states, e.g. ["published"].',
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["date_from"] and attrs["date_to"] and attrs["date_from"] > attrs["date_to"]:
            raise serializers.ValidationError("date_from is after date_to.")
        return attrs


class SearchInput(strict.InputSerializer):
    query = strict.SearchQueryField()
    mode = serializers.ChoiceField(
        choices=SEARCH_MODES,
        default="hybrid",
        help_text="graph: chunks linked to the knowledge-graph nodes nearest the query and "
        "their communities (docs/rag.md).",
    )
    top_k = strict.TopKField()
    fusion = serializers.ChoiceField(choices=FUSIONS, default=DEFAULT_FUSION)
    weights = strict.WeightsInput(required=False)
    stages = serializers.ListField(
        child=serializers.ChoiceField(choices=STAGES),
        required=False,
        default=list,
        min_length=0,
        max_length=len(STAGES),
        help_text="A hybrid search's stages (default vector and keyword); add graph for a "
        "third stage.",
    )
    max_hops = serializers.IntegerField(
        min_value=1,
        max_value=MAX_GRAPH_HOPS,
        default=DEFAULT_MAX_HOPS,
        help_text="How far the graph stage walks from its seed nodes.",
    )
    threshold = strict.ThresholdField(help_text="The lowest cosine similarity kept, -1 to 1.")
    knowledge_base_ids = strict.IdListField(
        required=False,
        default=list,
        help_text="The knowledge bases searched, as in graph retrieval and agentic queries: the "
        "same as filters.knowledge_base_ids (give either, or both alike).",
    )
    filters = FiltersInput(required=False)
    rerank = serializers.BooleanField(default=False, help_text="Needs RERANK_PROVIDER.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """``filters`` always complete (their defaults when not given), with one list of
        knowledge bases: the top-level one moves into them; both given and different is
        ambiguous (400)."""
        top = attrs.pop("knowledge_base_ids", [])
        filters = attrs.get("filters") or FiltersInput().run_validation({})
        if top and filters["knowledge_base_ids"] and set(top) != set(filters["knowledge_base_ids"]):
            raise serializers.ValidationError(
                {"knowledge_base_ids": "Differs from filters.knowledge_base_ids: give one."}
            )
        attrs["filters"] = {**filters, "knowledge_base_ids": top} if top else filters
        return attrs


class StageExplanation(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    score = strict.FiniteFloatField(allow_null=True)


class GraphPathStep(serializers.Serializer):
    name = serializers.CharField()
    relation_type = serializers.CharField(help_text="The edge that reached it; empty: the seed.")


class GraphNodeRef(serializers.Serializer):
    node_id = serializers.IntegerField()
    name = serializers.CharField()
    entity_type = serializers.CharField(required=False)


class GraphHitExplanation(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    score = strict.FiniteFloatField(allow_null=True)
    seed = GraphNodeRef(help_text="The seed node the walk started from.")
    node = GraphNodeRef(help_text="The node mentioning the hit that contributed most.")
    hops = serializers.IntegerField()
    path = GraphPathStep(many=True, help_text="From the seed to the node.")
    community_id = serializers.IntegerField(allow_null=True)
    similarity = strict.FiniteFloatField()
    evidence = strict.FiniteFloatField(help_text="The graph's evidence, relative to the best.")


class HitExplanation(serializers.Serializer):
    vector = StageExplanation()
    keyword = StageExplanation()
    graph = GraphHitExplanation(allow_null=True, help_text="Graph searches: how it was reached.")
    fused_score = strict.FiniteFloatField(allow_null=True)
    rerank_score = strict.FiniteFloatField(allow_null=True)


class ExpansionTermOutput(serializers.Serializer):
    term = serializers.CharField(help_text="An analysed (stemmed) index term.")
    weight = strict.FiniteFloatField()


def expansion_output(expansion: Any) -> list[dict[str, Any]]:
    """A prf search's added terms as the API shows them (empty in the other modes)."""
    return [{"term": term, "weight": weight} for term, weight in expansion]


def graph_explanation(hit: Any) -> dict[str, Any] | None:
    graph = getattr(hit, "graph", None)
    if graph is None:
        return None
    return {"rank": getattr(hit, "graph_rank", None), "score": hit.graph_score, **graph}


class HitOutput(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    knowledge_base_id = serializers.IntegerField()
    document_title = serializers.CharField()
    text = serializers.CharField()
    heading_path = serializers.ListField(child=serializers.CharField())
    position = serializers.IntegerField()
    score = strict.FiniteFloatField(allow_null=True)
    explanation = serializers.SerializerMethodField()

    @extend_schema_field(HitExplanation)
    def get_explanation(self, hit: SearchHit) -> dict[str, Any]:
        return HitExplanation(
            {
                "vector": {"rank": hit.vector_rank, "score": hit.vector_score},
                "keyword": {"rank": hit.keyword_rank, "score": hit.keyword_score},
                "graph": graph_explanation(hit),
                "fused_score": hit.score,
                "rerank_score": hit.rerank_score,
            }
        ).data


def run_search(actor: Actor, data: dict[str, Any]) -> Any:
    """The search ``data`` (a validated ``SearchInput``) asks for: the API's and the MCP
    tools' one way to run it."""
    filters = data["filters"]
    return services.search_run(
        actor=actor,
        query=data["query"],
        mode=data["mode"],
        top_k=data["top_k"],
        fusion=data["fusion"],
        weights=data.get("weights"),
        threshold=data["threshold"],
        rerank=data["rerank"],
        stages=data.get("stages") or (),
        max_hops=data.get("max_hops", DEFAULT_MAX_HOPS),
        filters=SearchFilters(
            knowledge_base_ids=tuple(filters["knowledge_base_ids"]),
            doc_types=tuple(filters["doc_types"]),
            tags_any=tuple(filters["tags_any"]),
            tags_all=tuple(filters["tags_all"]),
            date_from=filters["date_from"],
            date_to=filters["date_to"],
            lifecycle_states=tuple(filters["lifecycle_states"]),
        ),
    )


class SeedOutput(serializers.Serializer):
    node_id = serializers.IntegerField()
    name = serializers.CharField()
    entity_type = serializers.CharField()
    similarity = strict.FiniteFloatField()
    match = serializers.ChoiceField(
        choices=list(SEED_MATCHES),
        help_text="How the query found the seed: a span of it is the node's name or an alias, "
        "the node is nearest the query's embedding, or a candidate passage mentions it.",
    )


class CommunityRefOutput(serializers.Serializer):
    id = serializers.IntegerField()
    level = serializers.IntegerField()
    title = serializers.CharField()
    summary = serializers.CharField()
    size = serializers.IntegerField()
    score = strict.FiniteFloatField()
    node_ids = serializers.ListField(child=serializers.IntegerField())


class GraphStageOutput(serializers.Serializer):
    seeds = SeedOutput(many=True)
    communities = CommunityRefOutput(many=True)


class SearchApi(ApiView):
    """Search chunks: ``vector``, ``keyword`` (BM25), ``hybrid`` (fused; ``stages`` may add
    the graph), ``prf`` (hybrid with the query expanded by pseudo-relevance feedback) or
    ``graph`` (chunks linked to the knowledge-graph nodes nearest the query); every hit explains
    its ranks and scores, and a graph hit the seed node and path that reached it. A search is a
    read: it needs only the ``read`` scope."""

    required_scope = "read"

    class OutputSerializer(serializers.Serializer):
        mode = serializers.CharField()
        fusion = serializers.CharField()
        results = HitOutput(many=True, source="hits")
        graph = serializers.SerializerMethodField()
        timings_ms = strict.TimingsField(source="stage_ms")
        expansion = serializers.SerializerMethodField(
            help_text="prf: the terms pseudo-relevance feedback added to the query, with their "
            "weights (the query's own terms share the rest); empty in the other modes."
        )

        @extend_schema_field(ExpansionTermOutput(many=True))
        def get_expansion(self, outcome: Any) -> list[dict[str, Any]]:
            return expansion_output(outcome.expansion)

        @extend_schema_field(GraphStageOutput(allow_null=True))
        def get_graph(self, outcome: Any) -> Any:
            seeds = getattr(outcome, "seeds", None)
            if seeds is None:
                return None
            return GraphStageOutput({"seeds": seeds, "communities": outcome.communities}).data

    @extend_schema(request=SearchInput, responses=OutputSerializer, operation_id="rag_search")
    def post(self, request: Request) -> Response:
        data = SearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        outcome = run_search(request_actor(request), data.validated_data)
        return Response(self.OutputSerializer(outcome).data)


class QuerySourceOutput(serializers.Serializer):
    ref = serializers.IntegerField()
    document_id = serializers.IntegerField()
    chunk_id = serializers.IntegerField()
    title = serializers.CharField()
    heading_path = serializers.ListField(child=serializers.CharField())
    score = strict.FiniteFloatField(allow_null=True)


class QueryApi(ApiView):
    """Search, then a token-budgeted context block with numbered sources, for an LLM prompt."""

    required_scope = "read"

    class InputSerializer(SearchInput):
        token_budget = serializers.IntegerField(min_value=50, max_value=100_000, default=2000)

    class OutputSerializer(serializers.Serializer):
        context = serializers.CharField()  # type: ignore[assignment]  # a field named "context"
        sources = QuerySourceOutput(many=True)
        token_count = serializers.IntegerField()
        truncated = serializers.BooleanField()
        results = HitOutput(many=True)
        timings_ms = strict.TimingsField()

    @extend_schema(request=InputSerializer, responses=OutputSerializer, operation_id="rag_query")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(query_run(request_actor(request), data.validated_data))


def query_run(actor: Actor, data: dict[str, Any]) -> dict[str, Any]:
    """A search, then the context block of its hits (``QueryApi``'s answer)."""
    outcome = run_search(actor, data)
    block = context_block_build(outcome.hits, token_budget=data["token_budget"])
    return {
        "context": block.text,
        "sources": QuerySourceOutput(block.sources, many=True).data,
        "token_count": block.token_count,
        "truncated": block.truncated,
        "results": HitOutput(outcome.hits, many=True).data,
        "timings_ms": outcome.stage_ms,
    }


class AnalyticsModeOutput(serializers.Serializer):
    mode = serializers.CharField()
    queries = serializers.IntegerField()
    avg_latency_ms = strict.FiniteFloatField(allow_null=True)
    avg_score = strict.FiniteFloatField(allow_null=True)
    avg_quality = strict.FiniteFloatField(allow_null=True)
    empty = serializers.IntegerField()
    errors = serializers.IntegerField()  # type: ignore[assignment]  # a field named "errors"


class AnalyticsApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        modes = AnalyticsModeOutput(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="rag_analytics")
    def get(self, request: Request) -> Response:
        analytics = selectors.search_analytics(actor=request_actor(request))
        return Response(self.OutputSerializer(analytics).data)


class QueryLogApi(ApiView):
    pagination_class = CreatedCursorPagination

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        query_text = serializers.CharField()
        mode = serializers.CharField()
        fusion = serializers.CharField()
        top_k = serializers.IntegerField()
        result_count = serializers.IntegerField()
        avg_score = strict.FiniteFloatField(allow_null=True)
        quality_score = strict.FiniteFloatField(allow_null=True)
        latency_ms = strict.FiniteFloatField(allow_null=True)
        timings_ms = strict.TimingsField(source="stage_ms")
        status = serializers.CharField()

    @extend_schema(responses=OutputSerializer(many=True), operation_id="rag_queries_list")
    def get(self, request: Request) -> Response:
        queries = selectors.search_query_list(actor=request_actor(request))
        return paginated_response(self, request, queries, self.OutputSerializer)
