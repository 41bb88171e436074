"""Permission-scoped reads of knowledge bases, documents and analytics."""

from __future__ import annotations

from typing import Any

from django.db.models import Avg, Count, Q, QuerySet

from core.actors import Actor
from core.errors import NotFound
from rag.models import Document, KnowledgeBase, SearchQuery


def knowledge_base_list(*, actor: Actor) -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.for_actor(actor)


def knowledge_base_get(*, actor: Actor, kb_id: int) -> KnowledgeBase:
    kb = knowledge_base_list(actor=actor).filter(pk=kb_id).first()
    if kb is None:
        raise NotFound("No such knowledge base.", code="knowledge_base_not_found")
    return kb


def document_list(
    *, actor: Actor, kb_id: int | None = None, status: str | None = None
) -> QuerySet[Document]:
    documents = Document.objects.for_actor(actor).defer("original")
    if kb_id is not None:
        documents = documents.filter(knowledge_base_id=kb_id)
    if status:
        documents = documents.filter(status=status)
    return documents


def document_get(*, actor: Actor, document_id: int) -> Document:
    document = document_list(actor=actor).filter(pk=document_id).first()
    if document is None:
        raise NotFound("No such document.", code="document_not_found")
    return document


def search_query_list(*, actor: Actor) -> QuerySet[SearchQuery]:
    return SearchQuery.objects.for_actor(actor)


def _finite(field: str) -> Q:
    """Rows whose ``field`` is a finite number. PostgreSQL orders NaN above Infinity, so the two
    bounds exclude NaN and both infinities (rows written before the API refused them)."""
    return Q(**{f"{field}__lt": float("inf"), f"{field}__gt": float("-inf")})


def search_analytics(*, actor: Actor) -> dict[str, Any]:
    """Per mode: query count, average latency, average result score and quality, empty share.

    A value that is not a finite number is left out of its average instead of making it one.
    """
    rows = (
        search_query_list(actor=actor)
        .values("mode")
        .annotate(
            queries=Count("id"),
            avg_latency_ms=Avg("latency_ms", filter=_finite("latency_ms")),
            avg_score=Avg("avg_score", filter=_finite("avg_score")),
            avg_quality=Avg("quality_score", filter=_finite("quality_score")),
            empty=Count("id", filter=Q(status=SearchQuery.Status.EMPTY)),
            errors=Count("id", filter=Q(status=SearchQuery.Status.ERROR)),
        )
        .order_by("mode")
    )
    return {
        "modes": [
            {
                **row,
                "avg_latency_ms": round(row["avg_latency_ms"] or 0.0, 3),
                "avg_score": row["avg_score"],
                "avg_quality": row["avg_quality"],
            }
            for row in rows
        ]
    }
