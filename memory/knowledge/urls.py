"""Knowledge items' routes, mounted at /api/v1/knowledge/ (docs/memory/knowledge.md).

``{base}`` and ``{key}`` are one path segment each (anything but ``/``); the services check
them (a letter or digit, then letters, digits and ``. _ : @ -``; keys up to 200 characters,
else 400 ``key_too_long``), so a bad name is a 400 that says why, not an unknown URL. The
schema states the lengths the services check. The fixed paths (``bases``, ``query``,
``relationships``) have one segment, a base's have more.
"""

from django.urls import path, register_converter

from core.converters import NameConverter
from memory.knowledge import apis as knowledge
from memory.knowledge.models import MAX_BASE_NAME_LENGTH, MAX_KEY_LENGTH
from memory.knowledge.services import NAME_CHARS


class BaseNameConverter(NameConverter):
    pattern = NAME_CHARS
    max_length = MAX_BASE_NAME_LENGTH


class KeyConverter(NameConverter):
    pattern = NAME_CHARS
    max_length = MAX_KEY_LENGTH


register_converter(BaseNameConverter, "knowledge_base")
register_converter(KeyConverter, "knowledge_key")

urlpatterns = [
    path("bases", knowledge.KnowledgeStoreListCreateApi.as_view(), name="knowledge-bases"),
    path("query", knowledge.KnowledgeQueryApi.as_view(), name="knowledge-query"),
    path(
        "relationships",
        knowledge.KnowledgeRelationshipCreateApi.as_view(),
        name="knowledge-relationships",
    ),
    path(
        "<knowledge_base:base>/items",
        knowledge.KnowledgeItemListApi.as_view(),
        name="knowledge-items",
    ),
    path(
        "<knowledge_base:base>/items/<knowledge_key:key>",
        knowledge.KnowledgeItemApi.as_view(),
        name="knowledge-item",
    ),
    path(
        "<knowledge_base:base>/items/<knowledge_key:key>/versions",
        knowledge.KnowledgeItemVersionsApi.as_view(),
        name="knowledge-item-versions",
    ),
    path(
        "<knowledge_base:base>/items/<knowledge_key:key>/relationships",
        knowledge.KnowledgeItemRelationshipsApi.as_view(),
        name="knowledge-item-relationships",
    ),
]
