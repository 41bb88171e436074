from django.urls import path

from rag import graph_apis

urlpatterns = [
    path("nodes", graph_apis.NodeListCreateApi.as_view(), name="node-list"),
    path("nodes/<id:node_id>", graph_apis.NodeDetailApi.as_view(), name="node-detail"),
    path(
        "nodes/<id:node_id>/neighbors",
        graph_apis.NodeNeighboursApi.as_view(),
        name="node-neighbors",
    ),
    path("path", graph_apis.PathApi.as_view(), name="path"),
    path("edges", graph_apis.EdgeCreateApi.as_view(), name="edge-create"),
    path("edges/<id:edge_id>", graph_apis.EdgeDetailApi.as_view(), name="edge-detail"),
]
