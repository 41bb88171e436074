"""Knowledge graph HTTP API (``/api/v1/graph/``): one view per operation, thin over
``rag.graph.services.nodes`` and the selectors of ``rag.graph``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import (
    MAX_CURSOR_CHARS,
    CreatedCursorPagination,
    page_parameters_check,
    paginated_response,
)
from core.permissions import request_actor
from core.views import ApiView
from rag.graph import selectors as graph
from rag.graph.node_hits import node_search_explained
from rag.graph.retrieval import DEFAULT_MAX_HOPS, MAX_GRAPH_HOPS
from rag.graph.services import nodes as graph_services
from rag.models import GraphEdge, GraphNode
from rag.search import DEFAULT_FUSION, FUSIONS, SEARCH_MODES
from rag.search_apis import CommunityRefOutput, GraphPathStep, StageExplanation
from rag.visibility import visibility_of


class GraphNodeOutput(serializers.ModelSerializer[GraphNode]):
    """A node; one the reader sees only through another source's mention (its own source is
    private: ``rag.visibility``) shows no aliases, description or metadata."""

    confidence = strict.FiniteFloatField()

    def to_representation(self, instance: GraphNode) -> Any:
        data = super().to_representation(instance)
        if getattr(instance, "own_source_shown", True) is False:
            data.update(aliases=[], description="", metadata={})
        return data

    class Meta:
        model = GraphNode
        fields = [
            "id",
            "node_type",
            "entity_type",
            "name",
            "aliases",
            "description",
            "metadata",
            "mention_count",
            "status",
            "confidence",
            "embedding_model",
            "created_at",
            "updated_at",
        ]


class GraphEdgeOutput(serializers.ModelSerializer[GraphEdge]):
    source_id = serializers.IntegerField()
    target_id = serializers.IntegerField()
    weight = strict.FiniteFloatField()
    confidence = strict.FiniteFloatField()

    class Meta:
        model = GraphEdge
        fields = [
            "id",
            "source_id",
            "target_id",
            "relation_type",
            "weight",
            "confidence",
            "bidirectional",
            "metadata",
            "created_at",
        ]


class NodeExplanation(serializers.Serializer):
    vector = StageExplanation()
    keyword = StageExplanation()
    fused_score = strict.FiniteFloatField(allow_null=True)
    hops = serializers.IntegerField(
        allow_null=True, help_text="Graph mode: hops from the seed node; null otherwise."
    )
    path = GraphPathStep(many=True, help_text="Graph mode: from the seed to the node.")


class NodeHitOutput(serializers.Serializer):
    node = GraphNodeOutput()
    score = strict.FiniteFloatField(allow_null=True)
    community_id = serializers.IntegerField(
        allow_null=True, help_text="The node's community (finest level), listed in communities."
    )
    explanation = NodeExplanation()


class NodeSearchOutput(serializers.Serializer):
    # Tells a search answer from a page of the list (an empty page would fit both shapes).
    mode = serializers.ChoiceField(choices=SEARCH_MODES, help_text="The search mode that ran.")
    results = NodeHitOutput(many=True)
    communities = CommunityRefOutput(many=True, help_text="The communities of the nodes found.")
    timings_ms = strict.TimingsField()


def node_search_answer(actor: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``GET /graph/nodes?query=``'s answer (and MCP ``search_knowledge_graph``'s)."""
    found = node_search_explained(
        actor=actor,
        query=data["query"],
        top_k=data["top_k"],
        mode=data["mode"],
        fusion=data["fusion"],
        entity_type=data.get("entity_type"),
        max_hops=data["max_hops"],
    )
    return dict(NodeSearchOutput(found).data)


class NodePageOutput(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = GraphNodeOutput(many=True)


_PAGE_PARAMETERS = [
    OpenApiParameter(
        "cursor",
        {"type": "string", "maxLength": MAX_CURSOR_CHARS},
        description="Lists only: the page to read.",
    ),
    OpenApiParameter(
        "page_size",
        {"type": "integer", "minimum": 1, "maximum": CreatedCursorPagination.max_page_size},
        description="Lists only: 1 to 500 nodes a page (a search checks it and ignores it).",
    ),
]


class NodeInput(strict.InputSerializer):
    name = serializers.CharField(max_length=500)
    entity_type = serializers.CharField(max_length=100)
    node_type = serializers.ChoiceField(
        choices=GraphNode.NodeType.choices, default=GraphNode.NodeType.ENTITY
    )
    aliases = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, default=list, max_length=100
    )
    description = serializers.CharField(
        max_length=20_000, required=False, default="", allow_blank=True
    )
    metadata = strict.MetadataField(required=False, default=dict)
    mention_count = serializers.IntegerField(min_value=0, max_value=2_147_483_647, default=0)
    status = serializers.ChoiceField(
        choices=GraphNode.Status.choices, default=GraphNode.Status.ACTIVE
    )
    confidence = strict.FiniteFloatField(min_value=0, max_value=1, default=1.0)


class NodeUpdateInput(strict.InputSerializer):
    name = serializers.CharField(max_length=500, required=False)
    entity_type = serializers.CharField(max_length=100, required=False)
    node_type = serializers.ChoiceField(choices=GraphNode.NodeType.choices, required=False)
    aliases = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=100
    )
    description = serializers.CharField(max_length=20_000, required=False, allow_blank=True)
    metadata = strict.MetadataField(required=False)
    mention_count = serializers.IntegerField(min_value=0, max_value=2_147_483_647, required=False)
    status = serializers.ChoiceField(choices=GraphNode.Status.choices, required=False)
    confidence = strict.FiniteFloatField(min_value=0, max_value=1, required=False)


class NodeListCreateApi(ApiView):
    """Without ``query``: the account's nodes, newest first, paged. With ``query``: the best
    ``top_k`` nodes by name, aliases and description (hybrid by default), each explained."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        query = strict.SearchQueryField(
            required=False,
            help_text="Search: names or words to look for, e.g. harbour crane. Without it: "
            "the list of nodes.",
        )
        top_k = strict.TopKField()
        mode = serializers.ChoiceField(
            choices=SEARCH_MODES,
            default="hybrid",
            help_text="Search: hybrid (default), vector, keyword or prf over name, aliases "
            "and description; graph: the nodes nearest the query by embedding (at most 5) "
            "and those within max_hops of them.",
        )
        max_hops = serializers.IntegerField(
            min_value=1,
            max_value=MAX_GRAPH_HOPS,
            default=DEFAULT_MAX_HOPS,
            help_text=f"Graph mode: how far to walk from the seed nodes (1 to {MAX_GRAPH_HOPS},"
            f" default {DEFAULT_MAX_HOPS}).",
        )
        fusion = serializers.ChoiceField(
            choices=FUSIONS,
            default=DEFAULT_FUSION,
            help_text="How the hybrid stages' rankings are fused (default rrf).",
        )
        entity_type = serializers.CharField(
            max_length=100,
            required=False,
            help_text="Only nodes of this type, e.g. page, person or skill.",
        )

    @extend_schema(
        parameters=[FilterSerializer, *_PAGE_PARAMETERS],
        responses=PolymorphicProxySerializer(
            component_name="GraphNodesOrHits",
            serializers=[NodePageOutput, NodeSearchOutput],
            resource_type_field_name=None,
        ),
        operation_id="graph_nodes_list",
    )
    def get(self, request: Request) -> Response:
        actor = request_actor(request)
        query = self.filters.get("query")
        if query is not None:
            # The page parameters are declared for both answers, so both check them.
            page_parameters_check(self.pagination_class, request)
            return Response(node_search_answer(actor, self.filters))
        nodes = graph.node_list(actor=actor)
        if self.filters.get("entity_type"):
            nodes = nodes.filter(entity_type=self.filters["entity_type"])
        return paginated_response(self, request, nodes, GraphNodeOutput)

    @extend_schema(
        request=NodeInput, responses={201: GraphNodeOutput}, operation_id="graph_node_create"
    )
    def post(self, request: Request) -> Response:
        data = NodeInput(data=request.data)
        data.is_valid(raise_exception=True)
        node = graph_services.node_create(actor=request_actor(request), **data.validated_data)
        return Response(GraphNodeOutput(node).data, status=status.HTTP_201_CREATED)


class NodeDetailOutput(GraphNodeOutput):
    edges_out = serializers.SerializerMethodField()
    edges_in = serializers.SerializerMethodField()

    class Meta(GraphNodeOutput.Meta):
        fields = [*GraphNodeOutput.Meta.fields, "edges_out", "edges_in"]

    @extend_schema_field(GraphEdgeOutput(many=True))
    def get_edges_out(self, node: GraphNode) -> Any:
        return GraphEdgeOutput(self.context["edges"].outgoing, many=True).data

    @extend_schema_field(GraphEdgeOutput(many=True))
    def get_edges_in(self, node: GraphNode) -> Any:
        return GraphEdgeOutput(self.context["edges"].incoming, many=True).data


def _detail(node: GraphNode, actor: Any) -> Any:
    edges = graph.node_edges(node=node, visible=visibility_of(actor))
    return NodeDetailOutput(node, context={"edges": edges}).data


class NodeDetailApi(ApiView):
    @extend_schema(responses=NodeDetailOutput, operation_id="graph_node_retrieve")
    def get(self, request: Request, node_id: int) -> Response:
        actor = request_actor(request)
        node = graph.node_get(actor=actor, node_id=node_id)
        return Response(_detail(node, actor))

    @extend_schema(
        request=NodeUpdateInput, responses=NodeDetailOutput, operation_id="graph_node_update"
    )
    def patch(self, request: Request, node_id: int) -> Response:
        actor = request_actor(request)
        node = graph.node_get(actor=actor, node_id=node_id)
        data = NodeUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        node = graph_services.node_update(actor=actor, node=node, fields=data.validated_data)
        return Response(_detail(graph.node_get(actor=actor, node_id=node.pk), actor))

    @extend_schema(responses={204: None}, operation_id="graph_node_delete")
    def delete(self, request: Request, node_id: int) -> Response:
        actor = request_actor(request)
        node = graph.node_get(actor=actor, node_id=node_id)
        graph_services.node_delete(actor=actor, node=node)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _direction_field() -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=graph.DIRECTIONS,
        default=graph.BOTH,
        help_text="Edges followed: out (source to target), in (target to source) or both "
        "(the default); bidirectional edges both ways in every direction.",
    )


class NeighbourOutput(serializers.Serializer):
    node = GraphNodeOutput()
    hops = serializers.IntegerField()
    relation_type = serializers.CharField()


class NeighboursOutput(serializers.Serializer):
    results = NeighbourOutput(many=True)
    truncated = serializers.BooleanField(
        help_text="More nodes lie within the hops than ``limit`` allowed (the farthest left out)."
    )


class NodeNeighboursApi(ApiView):
    """The nodes within ``hops`` (1 to 5) of a node, nearest first (then by name), at most
    ``limit`` (default 100, at most 1,000); ``relation_type`` follows only edges of that type.
    ``direction`` picks the edges followed: ``out`` (from the node to what it links to), ``in``
    (from what links to it) or ``both`` (the default). Bidirectional edges are followed both
    ways in every direction."""

    class FilterSerializer(strict.FilterSerializer):
        hops = serializers.IntegerField(
            min_value=1,
            max_value=graph.MAX_HOPS,
            default=1,
            help_text=f"How far to walk, 1 to {graph.MAX_HOPS} (default 1).",
        )
        relation_type = serializers.CharField(
            max_length=100,
            required=False,
            help_text="Follow only edges of this type, e.g. references (wikilinks).",
        )
        direction = _direction_field()
        limit = serializers.IntegerField(
            min_value=1,
            max_value=graph.MAX_NEIGHBOURS,
            default=graph.DEFAULT_NEIGHBOURS,
            help_text=f"At most this many nodes, 1 to {graph.MAX_NEIGHBOURS} (default "
            f"{graph.DEFAULT_NEIGHBOURS}).",
        )

    @extend_schema(
        parameters=[FilterSerializer],
        responses=NeighboursOutput,
        operation_id="graph_node_neighbors",
    )
    def get(self, request: Request, node_id: int) -> Response:
        return Response(neighbours_answer(request_actor(request), node_id, self.filters))


def neighbours_answer(actor: Any, node_id: int, data: dict[str, Any]) -> dict[str, Any]:
    """``GET /graph/nodes/{id}/neighbors``'s answer (and MCP ``get_graph_neighbors``')."""
    node = graph.node_get(actor=actor, node_id=node_id)
    limit = data["limit"]
    relation_type = data.get("relation_type")
    found = graph.neighbours(
        node=node,
        hops=data["hops"],
        relation_types=[relation_type] if relation_type else [],
        direction=data["direction"],
        limit=limit + 1,
        visible=visibility_of(actor),
    )
    return dict(NeighboursOutput({"results": found[:limit], "truncated": len(found) > limit}).data)


class PathOutput(serializers.Serializer):
    hops = serializers.IntegerField()
    nodes = GraphNodeOutput(many=True)
    edges = GraphEdgeOutput(many=True)


class PathApi(ApiView):
    """A shortest path between two nodes (at most 6 hops): its nodes and edges in order; 404
    ``no_path`` if none. ``direction`` picks the edges followed as for neighbours: ``out`` (each
    edge from its source to its target), ``in`` (against them) or ``both`` (the default: a
    path's edges may point either way); bidirectional edges both ways in every direction."""

    ids_in_query = True  # from / to: 404 node_not_found for unknown (or foreign) nodes

    class FilterSerializer(strict.FilterSerializer):
        from_ = strict.IdField()
        to = strict.IdField()
        direction = _direction_field()

        def get_fields(self) -> dict[str, Any]:
            fields = super().get_fields()
            fields["from"] = fields.pop("from_")  # a Python keyword
            return fields

    @extend_schema(parameters=[FilterSerializer], responses=PathOutput, operation_id="graph_path")
    def get(self, request: Request) -> Response:
        actor = request_actor(request)
        source = graph.node_get(actor=actor, node_id=self.filters["from"])
        target = graph.node_get(actor=actor, node_id=self.filters["to"])
        path = graph.shortest_path(
            source=source,
            target=target,
            direction=self.filters["direction"],
            visible=visibility_of(actor),
        )
        return Response(
            PathOutput({"hops": len(path.edges), "nodes": path.nodes, "edges": path.edges}).data
        )


class EdgeInput(strict.InputSerializer):
    source_id = strict.IdField()
    target_id = strict.IdField()
    relation_type = serializers.CharField(max_length=100)
    weight = strict.FiniteFloatField(min_value=-1e9, max_value=1e9, default=1.0)
    confidence = strict.FiniteFloatField(min_value=0, max_value=1, default=1.0)
    bidirectional = serializers.BooleanField(default=False)
    metadata = strict.MetadataField(required=False, default=dict)


class EdgeCreateApi(ApiView):
    @extend_schema(
        request=EdgeInput, responses={201: GraphEdgeOutput}, operation_id="graph_edge_create"
    )
    def post(self, request: Request) -> Response:
        data = EdgeInput(data=request.data)
        data.is_valid(raise_exception=True)
        edge = graph_services.edge_create(actor=request_actor(request), **data.validated_data)
        return Response(GraphEdgeOutput(edge).data, status=status.HTTP_201_CREATED)


class EdgeDetailApi(ApiView):
    @extend_schema(responses={204: None}, operation_id="graph_edge_delete")
    def delete(self, request: Request, edge_id: int) -> Response:
        actor = request_actor(request)
        edge = graph.edge_get(actor=actor, edge_id=edge_id)
        graph_services.edge_delete(actor=actor, edge=edge)
        return Response(status=status.HTTP_204_NO_CONTENT)
