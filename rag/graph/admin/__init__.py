"""The knowledge graph in the admin (registered by ``rag.admin``): nodes and edges
(``nodes``), each node's neighbourhood drawn (``drawing``), and the communities
(``communities``)."""

from rag.graph.admin import communities, nodes

__all__ = ["communities", "nodes"]
