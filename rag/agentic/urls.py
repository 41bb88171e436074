from django.urls import path

from rag.agentic import apis

# Included by ``rag.urls`` (namespace ``rag``): ``/api/v1/rag/agentic``.
urlpatterns = [
    path("agentic", apis.AgenticApi.as_view(), name="agentic"),
]
