"""The knowledge graph drawn for people: a node's neighbourhood as an interactive graph in the
admin (docs/admin.md, "The graph"). A page draws it with the vendored Cytoscape.js from the JSON
view next to it; both are scoped like the node's change page (``core.admin_base``: a node of an
account the person has no role in is missing)."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse

from core.admin_base import AccountScopedAdmin
from rag.graph.drawing import (
    DEFAULT_DRAWING_HOPS,
    DEFAULT_DRAWING_NODES,
    MAX_DRAWING_HOPS,
    MAX_DRAWING_NODES,
    node_drawing,
)
from rag.models import GraphNode
from rag.visibility import visibility_of


def _bounded(raw: str | None, default: int, maximum: int) -> int:
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        return default
    return max(1, min(value, maximum))


class NodeDrawingAdmin(AccountScopedAdmin):
    """The graph node admin's base (``rag.admin.GraphNodeAdmin``): ``<id>/graph/`` (the
    drawing), ``<id>/graph/data/`` (its JSON) and a "Graph" link on the node's page."""

    change_form_template = "admin/rag/graphnode/change_form.html"

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/graph/", view(self.graph_view), name="rag_graphnode_graph"),
            path(
                "<path:object_id>/graph/data/",
                view(self.graph_data_view),
                name="rag_graphnode_graph_data",
            ),
            *super().get_urls(),
        ]

    def _visible(self, request: HttpRequest, object_id: str) -> GraphNode | None:
        node = self.get_object(request, unquote(object_id))
        if node is None or not self.has_view_permission(request, node):
            return None
        return node

    def graph_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        node = self._visible(request, object_id)
        if node is None:
            return self._get_obj_does_not_exist_redirect(
                request,
                self.opts,
                object_id,
            )
        hops = _bounded(request.GET.get("hops"), DEFAULT_DRAWING_HOPS, MAX_DRAWING_HOPS)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Graph of “{node.name}”",
            "opts": self.opts,
            "original": node,
            "hops": hops,
            "hop_choices": range(1, MAX_DRAWING_HOPS + 1),
            "data_url": reverse("admin:rag_graphnode_graph_data", args=[node.pk]) + f"?hops={hops}",
            "node_url": reverse("admin:rag_graphnode_change", args=[node.pk]),
        }
        return TemplateResponse(request, "admin/rag/graphnode/graph.html", context)

    def graph_data_view(self, request: HttpRequest, object_id: str) -> JsonResponse:
        node = self._visible(request, object_id)
        if node is None:
            return JsonResponse(
                {"error": {"code": "node_not_found", "message": "Unknown node.", "details": {}}},
                status=404,
            )
        drawing = node_drawing(
            node=node,
            hops=_bounded(request.GET.get("hops"), DEFAULT_DRAWING_HOPS, MAX_DRAWING_HOPS),
            limit=_bounded(request.GET.get("limit"), DEFAULT_DRAWING_NODES, MAX_DRAWING_NODES),
            visible=visibility_of(self.actor(request)),
        )
        return JsonResponse({"center": node.pk, **drawing.as_json()})
