"""Permission-scoped reads of knowledge bases, documents and analytics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Avg, Count, Q, QuerySet

from core.actors import Actor
from core.errors import NotFound
from rag.models import Document, KnowledgeBase, SearchQuery


def knowledge_base_list(*, actor: Actor) -> QuerySet[KnowledgeBase]:
    return KnowledgeBase.objects.for_actor(actor)


def knowledge_base_ids_unarchived(*, account_id: int) -> list[int]:
    """The ids of the account's knowledge bases that are not archived (what another app
    searches on the account's behalf)."""
    return list(
        KnowledgeBase.objects.filter(account_id=account_id)
        .exclude(status=KnowledgeBase.Status.ARCHIVED)
        .values_list("pk", flat=True)
    )


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
    """The recorded searches the actor may read: an agent its own (a query's words may carry
    what a private conversation taught it), a person those of their accounts."""
    queries = SearchQuery.objects.for_actor(actor)
    if actor.agent is not None:
        queries = queries.filter(agent_id=actor.agent.pk)
    return queries


def _finite(field: str) -> Q:
    """Rows whose ``field`` is a finite number. PostgreSQL orders NaN above Infinity, so the two
    bounds exclude NaN and both infinities (rows written before the API refused them)."""
    return Q(**{f"{field}__lt": float("inf"), f"{field}__gt": float("-inf")})


def search_analytics(*, actor: Actor) -> dict[str, Any]:
    """Per mode: query count, average latency, average result score and quality, empty share.

    A value that is not a finite number is left out of its average instead of making it one.
    """
    rows = (
        SearchQuery.objects.for_actor(actor)  # counts and averages: the account's
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


# --- rot (docs/memory/rot.md) ---------------------------------------------------------------------


@dataclass(frozen=True)
class OutdatedDocument:
    """An indexed document whose chunks another embedding model or chunking built."""

    id: int
    title: str
    knowledge_base_id: int
    knowledge_base: str
    chunk_models: list[str]
    indexed_chunker: str
    current_chunker: str

    @property
    def other_model(self) -> bool:
        return bool(self.chunk_models)

    @property
    def other_chunker(self) -> bool:
        return bool(self.indexed_chunker) and self.indexed_chunker != self.current_chunker


_OUTDATED_WHERE = """
    d.account_id = %(account)s AND d.status = 'indexed'
    AND (EXISTS (SELECT 1 FROM rag_chunk c WHERE c.document_id = d.id
                 AND c.embedding_model <> %(model)s)
         OR (d.indexed_chunker <> '' AND d.indexed_chunker <> concat(
             %(version)s::text, ':', kb.chunking_strategy, ':', kb.chunk_size, ':',
             kb.chunk_overlap)))
"""


def documents_outdated(
    *, account_id: int, model_id: str, limit: int
) -> tuple[list[OutdatedDocument], int]:
    """The account's indexed documents with a chunk embedded by a model other than
    ``model_id`` (the one queries are embedded with), or chunked by another chunker version or
    other settings than their knowledge base's now; at most ``limit`` (oldest first), and how
    many there are."""
    from rag.chunking import CHUNKER_VERSION

    params: dict[str, Any] = {
        "account": account_id,
        "model": model_id,
        "version": f"v{CHUNKER_VERSION}",
    }
    sql = f"""
        SELECT d.id, coalesce(nullif(d.title, ''), nullif(d.source, ''), 'document ' || d.id),
               kb.id, kb.name,
               ARRAY(SELECT DISTINCT c.embedding_model FROM rag_chunk c
                     WHERE c.document_id = d.id AND c.embedding_model <> %(model)s),
               d.indexed_chunker,
               concat(%(version)s::text, ':', kb.chunking_strategy, ':', kb.chunk_size, ':',
                      kb.chunk_overlap)
        FROM rag_document d JOIN rag_knowledgebase kb ON kb.id = d.knowledge_base_id
        WHERE {_OUTDATED_WHERE}
        ORDER BY d.id LIMIT %(limit)s
    """  # noqa: S608  (fixed SQL; values are parameters)
    count = f"""
        SELECT count(*) FROM rag_document d
        JOIN rag_knowledgebase kb ON kb.id = d.knowledge_base_id WHERE {_OUTDATED_WHERE}
    """  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, {**params, "limit": limit})
        rows = [OutdatedDocument(*row) for row in cursor.fetchall()]
        cursor.execute(count, params)
        total = int(cursor.fetchone()[0])
    return rows, total


def chunk_ids_existing(*, account_id: int, ids: Iterable[int]) -> set[int]:
    """Which of ``ids`` are chunks of the account (the others were deleted or re-chunked)."""
    from rag.models import Chunk

    found = Chunk.objects.filter(account_id=account_id, pk__in=list(ids))
    return set(found.values_list("pk", flat=True))
