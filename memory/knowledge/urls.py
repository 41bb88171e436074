"""Knowledge items' routes, mounted at /api/v1/knowledge/ (docs/memory/knowledge.md).

``{base}`` and ``{key}`` are one path segment each (anything but ``/``); the services check
them (a letter or digit, then letters, digits and ``. _ : @ -``; keys up to 200 characters,
else 400 ``key_too_long``), so a bad name is a 400 that says why, not an unknown URL. The
fixed paths (``bases``, ``query``, ``relationships``) have one segment, a base's have more.
"""

from django.urls import path, register_converter

from memory.knowledge import apis as knowledge


class SegmentConverter:
    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(SegmentConverter, "knowledge_name")

urlpatterns = [
    path("bases", knowledge.KnowledgeStoreListCreateApi.as_view(), name="knowledge-bases"),
    path("query", knowledge.KnowledgeQueryApi.as_view(), name="knowledge-query"),
    path(
        "relationships",
        knowledge.KnowledgeRelationshipCreateApi.as_view(),
        name="knowledge-relationships",
    ),
    path(
        "<knowledge_name:base>/items",
        knowledge.KnowledgeItemListApi.as_view(),
        name="knowledge-items",
    ),
    path(
        "<knowledge_name:base>/items/<knowledge_name:key>",
        knowledge.KnowledgeItemApi.as_view(),
        name="knowledge-item",
    ),
    path(
        "<knowledge_name:base>/items/<knowledge_name:key>/versions",
        knowledge.KnowledgeItemVersionsApi.as_view(),
        name="knowledge-item-versions",
    ),
    path(
        "<knowledge_name:base>/items/<knowledge_name:key>/relationships",
        knowledge.KnowledgeItemRelationshipsApi.as_view(),
        name="knowledge-item-relationships",
    ),
]
