"""The knowledge graph's nodes and edges in the admin, scoped by account and role
(``core.admin_base``; docs/admin.md): every write goes through ``rag.graph.services``."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import READ, WRITE_GRAPH, Actor
from core.admin_base import AccountScopedAdmin
from rag.graph.admin.drawing import NodeDrawingAdmin
from rag.graph.models import GraphEdge, GraphNode
from rag.graph.nodes import visible_edges
from rag.graph.services import nodes as graph_services
from rag.visibility import visibility_of


@admin.register(GraphNode)
class GraphNodeAdmin(NodeDrawingAdmin):
    """Nodes of the account's knowledge graph; every write goes through the graph services,
    which keep the node's search index and embedding current. Each node's neighbourhood is drawn
    at ``<id>/graph/`` (``rag.graph.admin.drawing``)."""

    view_roles = READ
    add_roles = change_roles = delete_roles = WRITE_GRAPH
    large_table = True
    list_defer = ("embedding",)
    list_display = ["name", "entity_type", "node_type", "status", "mention_count", "updated_at"]
    list_filter = ["node_type", "status", "account"]
    list_select_related = ["account"]
    search_fields = ["name", "entity_type"]
    editable = [
        "name",
        "entity_type",
        "node_type",
        "aliases",
        "description",
        "metadata",
        "mention_count",
        "status",
        "confidence",
    ]
    readonly_fields = ["embedding_model", "created_at", "updated_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[GraphNode]:
        """The nodes the person may see: derived data keeps the visibility of its source
        (``rag.visibility``: what a private conversation taught is its readers')."""
        visible = visibility_of(self.actor(request))
        queryset = super().get_queryset(request)
        return queryset if visible.everything else queryset.filter(visible.node_q())

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["account", *self.editable]
        return ["account", *self.editable, *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "account"] if obj is not None else fields

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> GraphNode:
        data = form.cleaned_data
        return graph_services.node_create(
            actor=actor,
            account_id=data["account"].pk,
            **{name: data[name] for name in self.editable if name in data},
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: GraphNode, form: Any
    ) -> None:
        changes = self.changed(form, graph_services.NODE_UPDATABLE_FIELDS)
        if changes:
            graph_services.node_update(actor=actor, node=original, fields=changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: GraphNode) -> None:
        graph_services.node_delete(actor=actor, node=obj)


@admin.register(GraphEdge)
class GraphEdgeAdmin(AccountScopedAdmin):
    """Typed edges between two nodes of one account (the services refuse any other pair)."""

    view_roles = READ
    add_roles = delete_roles = WRITE_GRAPH
    large_table = True
    list_display = ["source", "relation_type", "target", "bidirectional", "weight", "created_at"]
    list_filter = ["relation_type", "bidirectional", "account"]
    list_select_related = ["source", "target"]
    search_fields = ["relation_type"]
    raw_id_fields = ["source", "target"]
    fields = [
        "account",
        "source",
        "target",
        "relation_type",
        "weight",
        "confidence",
        "bidirectional",
        "metadata",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[GraphEdge]:
        """The edges the person may see (``rag.visibility``)."""
        visible = visibility_of(self.actor(request))
        queryset = super().get_queryset(request)
        if visible.everything:
            return queryset
        return queryset.filter(pk__in=visible_edges(visible).values("pk"))

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> GraphEdge:
        data = form.cleaned_data
        return graph_services.edge_create(
            actor=actor,
            account_id=data["account"].pk,
            source_id=data["source"].pk,
            target_id=data["target"].pk,
            relation_type=data["relation_type"],
            weight=data["weight"],
            confidence=data["confidence"],
            bidirectional=data["bidirectional"],
            metadata=data["metadata"],
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: GraphEdge) -> None:
        graph_services.edge_delete(actor=actor, edge=obj)
