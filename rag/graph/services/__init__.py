"""Every write to the knowledge graph: nodes and edges (``nodes``), ``node_ensure`` (``ensure``:
find, adopt or create the node another app's item stands for), the graph built from text
(``index``, ``relations``, ``build``) and its communities (``communities``). Other apps write the
graph only through the names exported here; the roles each write needs are registered per node
kind (``rag.graph.node_types``, re-exported here for the apps' ``AppConfig.ready``)."""

from rag.graph.node_types import NodeStatus, NodeType, node_source_register, node_type_register
from rag.graph.services.build import units_extract
from rag.graph.services.ensure import EnsuredNode, node_ensure
from rag.graph.services.index import (
    IndexOutcome,
    UnitEntities,
    mentions_forget,
    mentions_forget_soon,
    mentions_replace,
)
from rag.graph.services.nodes import (
    NODE_UPDATABLE_FIELDS,
    EdgeSync,
    edge_create,
    edge_delete,
    edges_sync,
    node_create,
    node_delete,
    node_update,
)

__all__ = [
    "NODE_UPDATABLE_FIELDS",
    "EdgeSync",
    "EnsuredNode",
    "IndexOutcome",
    "NodeStatus",
    "NodeType",
    "UnitEntities",
    "edge_create",
    "edge_delete",
    "edges_sync",
    "mentions_forget",
    "mentions_forget_soon",
    "mentions_replace",
    "node_create",
    "node_delete",
    "node_ensure",
    "node_source_register",
    "node_type_register",
    "node_update",
    "units_extract",
]
