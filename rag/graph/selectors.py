"""The knowledge graph's public reads, for rag's own API and for every other app (apps read the
graph here and write it through ``rag.graph.services``, never through its models): nodes and
edges (``rag.graph.nodes``), walks (``rag.graph.walks``: neighbours by direction, directed walks,
reachability, shortest paths, cycles), the relation types apps give their edges
(``rag.graph.relations``), and the questions other apps ask of the nodes they own
(``rag.graph.owned``). Nobody outside rag writes SQL over the graph's tables: the walks another
app needs are functions here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.actors import Actor
from rag.graph.node_types import NodeStatus, NodeType
from rag.graph.nodes import (
    MAX_NODE_EDGES,
    NodeEdges,
    NodeHit,
    edge_get,
    edge_sources_sql,
    node_edges,
    node_get,
    node_list,
    node_not_found,
    node_search,
    relation_edges,
)
from rag.graph.owned import (
    edge_of_source,
    exported_node_ids,
    node_by_id,
    node_exists,
    node_ids_of_type,
    node_names,
    nodes_by_id,
    nodes_of_type,
)
from rag.graph.relations import (
    BOTH,
    DEPENDS_ON,
    DIRECTIONS,
    IN,
    OUT,
    REFERENCES,
    Direction,
    direction_check,
)
from rag.graph.walks import (
    DEFAULT_NEIGHBOURS,
    MAX_CYCLE_LENGTH,
    MAX_CYCLES,
    MAX_HOPS,
    MAX_NEIGHBOURS,
    MAX_PATH_HOPS,
    MAX_WALK_DEPTH,
    Neighbour,
    Path,
    Reached,
    cycles,
    neighbours,
    reaches,
    shortest_path,
    walk,
)
from rag.visibility import visibility_of

if TYPE_CHECKING:
    from rag.graph.models import GraphNode


def edges_seen(*, actor: Actor, node: GraphNode) -> NodeEdges:
    """The node's edges each way that ``actor`` may see, heaviest first (``node_edges``)."""
    return node_edges(node=node, visible=visibility_of(actor))


__all__ = [
    "BOTH",
    "DEFAULT_NEIGHBOURS",
    "DEPENDS_ON",
    "DIRECTIONS",
    "IN",
    "MAX_CYCLES",
    "MAX_CYCLE_LENGTH",
    "MAX_HOPS",
    "MAX_NEIGHBOURS",
    "MAX_NODE_EDGES",
    "MAX_PATH_HOPS",
    "MAX_WALK_DEPTH",
    "OUT",
    "REFERENCES",
    "Direction",
    "Neighbour",
    "NodeEdges",
    "NodeHit",
    "NodeStatus",
    "NodeType",
    "Path",
    "Reached",
    "cycles",
    "direction_check",
    "edge_get",
    "edge_of_source",
    "edge_sources_sql",
    "edges_seen",
    "exported_node_ids",
    "neighbours",
    "node_by_id",
    "node_edges",
    "node_exists",
    "node_get",
    "node_ids_of_type",
    "node_list",
    "node_names",
    "node_not_found",
    "node_search",
    "nodes_by_id",
    "nodes_of_type",
    "reaches",
    "relation_edges",
    "shortest_path",
    "walk",
]
