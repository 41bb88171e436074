from django.urls import include, path

from rag import apis, search_apis
from rag.agentic import urls as agentic_urls
from rag.graph import urls as graph_urls

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
    path("", include(agentic_urls)),
    path("analytics", search_apis.AnalyticsApi.as_view(), name="analytics"),
    path("queries", search_apis.QueryLogApi.as_view(), name="query-log"),
    path("graph/", include(graph_urls.rag_urlpatterns)),
]
