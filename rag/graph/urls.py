from django.urls import path

from rag.graph.apis import nodes, retrieval

# ``/api/v1/graph/`` (namespace ``graph``): nodes, edges, neighbours and paths.
urlpatterns = [
    path("nodes", nodes.NodeListCreateApi.as_view(), name="node-list"),
    path("nodes/<id:node_id>", nodes.NodeDetailApi.as_view(), name="node-detail"),
    path(
        "nodes/<id:node_id>/neighbors",
        nodes.NodeNeighboursApi.as_view(),
        name="node-neighbors",
    ),
    path("path", nodes.PathApi.as_view(), name="path"),
    path("edges", nodes.EdgeCreateApi.as_view(), name="edge-create"),
    path("edges/<id:edge_id>", nodes.EdgeDetailApi.as_view(), name="edge-detail"),
]

# ``/api/v1/rag/graph/`` (namespace ``rag``, included by ``rag.urls``): graph RAG.
rag_urlpatterns = [
    path("retrieve", retrieval.GraphRetrieveApi.as_view(), name="graph-retrieve"),
    path("context", retrieval.GraphContextApi.as_view(), name="graph-context"),
    path("communities", retrieval.CommunitiesApi.as_view(), name="graph-communities"),
]
