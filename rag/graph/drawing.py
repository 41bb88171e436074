"""A node's neighbourhood as a drawing: the nodes within a few hops and the edges between them,
each node with the admin page a click opens (the admin's graph view, docs/admin.md).

Apps whose objects are graph nodes (content's pages and articles) register how to link a node
of their entity type to their own admin page (``admin_link_register``), so that rag never
imports the apps above it; other nodes open their graph node page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from rag.graph.relations import BOTH
from rag.graph.walks import neighbours
from rag.models import GraphEdge, GraphNode
from rag.tuning import TUNING
from rag.visibility import Visibility

# The drawing's hops (their one home is ``TUNING.hops``, read at import: the admin's form).
DEFAULT_DRAWING_HOPS = TUNING.hops.drawing_default
MAX_DRAWING_HOPS = TUNING.hops.drawing_max
# Bounds of a drawing: more nodes than this stop being readable, and cost the browser.
DEFAULT_DRAWING_NODES = 80
MAX_DRAWING_NODES = 300
MAX_DRAWING_EDGES = 1500

# entity type -> (node ids -> {node id: admin url}); registered by the apps above rag.
AdminLinker = Callable[[list[int]], dict[int, str]]
_ADMIN_LINKS: dict[str, AdminLinker] = {}


def admin_link_register(entity_type: str, linker: AdminLinker) -> None:
    """Open nodes of ``entity_type`` on the page ``linker`` names for each (ids it does not
    name open their graph node page)."""
    _ADMIN_LINKS[entity_type] = linker


@dataclass(frozen=True)
class Drawing:
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    truncated: bool

    def as_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "edges": self.edges, "truncated": self.truncated}


def node_drawing(
    *,
    node: GraphNode,
    hops: int = DEFAULT_DRAWING_HOPS,
    limit: int = DEFAULT_DRAWING_NODES,
    visible: Visibility | None = None,
) -> Drawing:
    """``node`` (scoped by the caller) and its neighbours within ``hops`` either way (at most
    ``limit`` of them, nearest first), with every edge among them, heaviest first; only what
    ``visible`` may see (``rag.visibility``; None: everything)."""
    hops = max(1, min(hops, MAX_DRAWING_HOPS))
    limit = max(1, min(limit, MAX_DRAWING_NODES))
    found = neighbours(node=node, hops=hops, direction=BOTH, limit=limit + 1, visible=visible)
    truncated = len(found) > limit
    reached = [(node, 0), *((n.node, n.hops) for n in found[:limit])]
    ids = [member.pk for member, _ in reached]
    among = GraphEdge.objects.filter(account_id=node.account_id)
    if visible is not None and not visible.everything:
        among = among.filter(visible.source_q())
    edges = list(
        among.filter(source_id__in=ids, target_id__in=ids).order_by("-weight", "id")[
            : MAX_DRAWING_EDGES + 1
        ]
    )
    truncated = truncated or len(edges) > MAX_DRAWING_EDGES
    links = _admin_links(member for member, _ in reached)
    return Drawing(
        nodes=[
            {
                "id": member.pk,
                "name": member.name,
                "entity_type": member.entity_type,
                "node_type": member.node_type,
                "hops": distance,
                "url": links[member.pk],
            }
            for member, distance in reached
        ],
        edges=[
            {
                "id": edge.pk,
                "source": edge.source_id,
                "target": edge.target_id,
                "relation_type": edge.relation_type,
                "weight": edge.weight,
                "bidirectional": edge.bidirectional,
            }
            for edge in edges[:MAX_DRAWING_EDGES]
        ],
        truncated=truncated,
    )


def _admin_links(nodes: Iterable[GraphNode]) -> dict[int, str]:
    by_type: dict[str, list[int]] = {}
    links: dict[int, str] = {}
    for node in nodes:
        links[node.pk] = reverse("admin:rag_graphnode_change", args=[node.pk])
        by_type.setdefault(node.entity_type, []).append(node.pk)
    for entity_type, ids in by_type.items():
        linker = _ADMIN_LINKS.get(entity_type)
        if linker is not None:
            links.update({pk: url for pk, url in linker(ids).items() if pk in links})
    return links
