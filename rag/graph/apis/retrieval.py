"""Graph RAG HTTP API (``/api/v1/rag/graph/``): retrieval through the graph's communities, the
token-budgeted context, and the communities themselves (list, compute on demand). One view per
operation, thin over ``rag.graph.graph_rag``, ``rag.graph.communities`` and
``rag.graph.services.communities``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from rag.graph import graph_rag
from rag.graph.communities import community_list, members_of
from rag.graph.retrieval import DEFAULT_MAX_HOPS, MAX_GRAPH_HOPS
from rag.graph.services import communities as community_services
from rag.models import GraphCommunity
from rag.search_apis import CommunityRefOutput, HitOutput, SeedOutput


class GraphHitOutput(HitOutput):
    community_id = serializers.SerializerMethodField()

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_community_id(self, hit: Any) -> int | None:
        graph = getattr(hit, "graph", None) or {}
        return graph.get("community_id")


class RetrieveCommunityOutput(CommunityRefOutput):
    summary = serializers.SerializerMethodField()  # type: ignore[assignment]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_summary(self, community: Any) -> str | None:
        return community.summary if self.context.get("include_summaries", True) else None


class GraphRetrieveApi(ApiView):
    """The chunks the knowledge graph reaches for ``query``: seed nodes by embedding similarity
    (at most 5, cosine distance <= 0.8), the communities within ``max_hops`` (at most 10), the
    chunks linked to their nodes, scored; each result names its community and the path that
    reached it."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        query = strict.SearchQueryField()
        top_k = strict.TopKField()
        max_hops = serializers.IntegerField(
            min_value=1, max_value=MAX_GRAPH_HOPS, default=DEFAULT_MAX_HOPS
        )
        include_summaries = serializers.BooleanField(default=True)
        knowledge_base_ids = strict.IdListField(required=False, default=list)

    class OutputSerializer(serializers.Serializer):
        results = GraphHitOutput(many=True)
        communities = RetrieveCommunityOutput(many=True)
        seeds = SeedOutput(many=True)
        timings_ms = strict.TimingsField()

    @extend_schema(
        request=InputSerializer, responses=OutputSerializer, operation_id="rag_graph_retrieve"
    )
    def post(self, request: Request) -> Response:
        data = strict.validated(self.InputSerializer, request)
        found = graph_rag.graph_retrieve(actor=request_actor(request), **data)
        return Response(
            self.OutputSerializer(
                found, context={"include_summaries": found.include_summaries}
            ).data
        )


class GraphContextItemOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["community", "chunk"])
    id = serializers.IntegerField()
    score = strict.FiniteFloatField()
    tokens = serializers.IntegerField(help_text="Its text's tokens and its metadata echo's.")
    text = serializers.CharField()
    metadata = serializers.DictField(
        help_text="Its metadata, or its leading keys that fit in 256 bytes of compact JSON."
    )
    metadata_truncated = serializers.BooleanField()
    source = serializers.DictField(help_text="Where the item came from.")  # type: ignore[assignment]  # a field named "source"


class GraphContextSectionOutput(serializers.Serializer):
    name = serializers.ChoiceField(choices=["communities", "documents"])
    tokens = serializers.IntegerField()
    items = GraphContextItemOutput(many=True)


class GraphContextDroppedOutput(serializers.Serializer):
    candidates = serializers.IntegerField()
    tokens = serializers.IntegerField()


class GraphContextApi(ApiView):
    """A context for an LLM prompt from the graph, within ``token_budget`` tokens (hard):
    the summaries of the communities reached, then the best chunks, each with its provenance;
    the shape of POST /api/v1/memory/context."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        query = strict.SearchQueryField()
        token_budget = serializers.IntegerField(
            min_value=graph_rag.MIN_TOKEN_BUDGET,
            max_value=graph_rag.MAX_TOKEN_BUDGET,
            default=graph_rag.DEFAULT_TOKEN_BUDGET,
        )
        max_hops = serializers.IntegerField(
            min_value=1, max_value=MAX_GRAPH_HOPS, default=graph_rag.CONTEXT_MAX_HOPS
        )

    class OutputSerializer(serializers.Serializer):
        context = serializers.CharField()  # type: ignore[assignment]  # a field named "context"
        tokens = serializers.IntegerField()
        token_budget = serializers.IntegerField()
        tokenizer = serializers.CharField()
        sections = GraphContextSectionOutput(many=True)
        dropped = GraphContextDroppedOutput()
        seeds = SeedOutput(many=True)
        timings_ms = strict.TimingsField()

    @extend_schema(
        request=InputSerializer, responses=OutputSerializer, operation_id="rag_graph_context"
    )
    def post(self, request: Request) -> Response:
        data = strict.validated(self.InputSerializer, request)
        built = graph_rag.graph_context(actor=request_actor(request), **data)
        return Response(self.OutputSerializer(built).data)


class CommunityMemberOutput(serializers.Serializer):
    node_id = serializers.IntegerField()
    name = serializers.CharField(source="node.name")
    entity_type = serializers.CharField(source="node.entity_type")
    centrality = strict.FiniteFloatField()


class CommunityOutput(serializers.ModelSerializer[GraphCommunity]):
    """A community as its reader sees it: ``size`` and ``members`` count and list only the
    members the reader may see (``rag.graph.communities``)."""

    parent_id = serializers.IntegerField(allow_null=True)
    modularity = strict.FiniteFloatField(allow_null=True)
    size = serializers.IntegerField(source="visible_size", help_text="Members you may see.")
    members = serializers.SerializerMethodField()

    class Meta:
        model = GraphCommunity
        fields = [
            "id",
            "level",
            "number",
            "parent_id",
            "size",
            "title",
            "summary",
            "summary_method",
            "seed",
            "modularity",
            "created_at",
            "members",
        ]

    @extend_schema_field(CommunityMemberOutput(many=True))
    def get_members(self, community: GraphCommunity) -> Any:
        shown = getattr(community, "shown_members", None)
        return CommunityMemberOutput(
            members_of(community) if shown is None else shown, many=True
        ).data


class CommunitiesApi(ApiView):
    """GET: the account's communities (Leiden, by level then size), each with its most central
    members (at most 50) and summary. POST: compute them now (operators), replacing the last
    run's; the periodic job ``rag.graph_communities`` does it every ten minutes for changed
    graphs."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        level = serializers.IntegerField(min_value=0, max_value=10, required=False)

    class InputSerializer(strict.InputSerializer):
        seed = serializers.IntegerField(
            min_value=0, max_value=2_147_483_647, required=False, allow_null=True, default=None
        )
        levels = serializers.IntegerField(
            min_value=1, max_value=community_services.MAX_LEVELS, default=2
        )
        dry_run = serializers.BooleanField(default=False)

    class RunOutput(serializers.Serializer):
        nodes = serializers.IntegerField()
        edges = serializers.IntegerField()
        seed = serializers.IntegerField()
        communities = serializers.IntegerField()
        levels = serializers.DictField(child=serializers.IntegerField())
        modularity = strict.FiniteFloatField(allow_null=True)
        summaries = serializers.CharField()

    @extend_schema(
        parameters=[FilterSerializer],
        responses=CommunityOutput(many=True),
        operation_id="rag_graph_communities_list",
    )
    def get(self, request: Request) -> Response:
        communities = community_list(actor=request_actor(request), level=self.filters.get("level"))
        return paginated_response(self, request, communities, CommunityOutput)

    @extend_schema(
        request=InputSerializer, responses=RunOutput, operation_id="rag_graph_communities_compute"
    )
    def post(self, request: Request) -> Response:
        actor = request_actor(request)
        data = strict.validated(self.InputSerializer, request)
        run = community_services.communities_compute(
            account_id=actor.account_id, actor=actor, **data
        )
        return Response(self.RunOutput(run.as_counts()).data)
