from django.urls import path

from rag import agentic_apis, apis, graph_rag_apis, search_apis

urlpatterns = [
    path("knowledge-bases", apis.KnowledgeBaseListCreateApi.as_view(), name="kb-list"),
    path("knowledge-bases/<id:kb_id>", apis.KnowledgeBaseDetailApi.as_view(), name="kb-detail"),
    path(
        "knowledge-bases/<id:kb_id>/status",
        apis.KnowledgeBaseStatusApi.as_view(),
        name="kb-status",
    ),
    path(
        "knowledge-bases/<id:kb_id>/documents",
        apis.DocumentListCreateApi.as_view(),
        name="document-list",
    ),
    path("documents/<id:document_id>", apis.DocumentDetailApi.as_view(), name="document-detail"),
    path(
        "documents/<id:document_id>/reprocess",
        apis.DocumentReprocessApi.as_view(),
        name="document-reprocess",
    ),
    path("search", search_apis.SearchApi.as_view(), name="search"),
    path("query", search_apis.QueryApi.as_view(), name="query"),
    path("agentic", agentic_apis.AgenticApi.as_view(), name="agentic"),
    path("analytics", search_apis.AnalyticsApi.as_view(), name="analytics"),
    path("queries", search_apis.QueryLogApi.as_view(), name="query-log"),
    path("graph/retrieve", graph_rag_apis.GraphRetrieveApi.as_view(), name="graph-retrieve"),
    path("graph/context", graph_rag_apis.GraphContextApi.as_view(), name="graph-context"),
    path("graph/communities", graph_rag_apis.CommunitiesApi.as_view(), name="graph-communities"),
]
