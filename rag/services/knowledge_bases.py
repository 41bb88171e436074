"""Knowledge bases: creation, settings and their guarded lifecycle."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from core.actors import Actor
from core.embeddings import get_embedding_provider
from core.errors import Conflict, ValidationFailed
from rag.models import KnowledgeBase

_TRANSITIONS: dict[str, set[str]] = {
    KnowledgeBase.Status.ACTIVE: {"indexing", "paused", "error", "archived"},
    KnowledgeBase.Status.INDEXING: {"active", "paused", "error"},
    KnowledgeBase.Status.PAUSED: {"active", "archived"},
    KnowledgeBase.Status.ERROR: {"active", "indexing", "archived"},
    KnowledgeBase.Status.ARCHIVED: {"active"},
}


def knowledge_base_create(
    *,
    actor: Actor,
    name: str,
    description: str = "",
    chunking_strategy: str = KnowledgeBase.Chunking.MARKDOWN,
    chunk_size: int = 256,
    chunk_overlap: int = 32,
) -> KnowledgeBase:
    provider = get_embedding_provider()
    kb = KnowledgeBase(
        account_id=actor.account_id,
        name=name,
        description=description,
        embedding_provider=settings.EMBEDDING_PROVIDER,
        embedding_model=provider.model_id,
        chunking_strategy=chunking_strategy,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    _validate_chunking(chunk_size, chunk_overlap)
    if KnowledgeBase.objects.filter(account_id=actor.account_id, name=name).exists():
        raise Conflict("A knowledge base with this name exists.", code="knowledge_base_exists")
    kb.full_clean()
    kb.save()
    return kb


def _validate_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if not 32 <= chunk_size <= 8192:
        raise ValidationFailed("chunk_size must be 32-8192 tokens.", code="invalid_chunking")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValidationFailed(
            "chunk_overlap must be at least 0 and below chunk_size.", code="invalid_chunking"
        )


def knowledge_base_update(*, kb: KnowledgeBase, **fields: Any) -> KnowledgeBase:
    """Change name, description or chunking settings (new settings apply on reprocessing)."""
    allowed = {"name", "description", "chunking_strategy", "chunk_size", "chunk_overlap"}
    unknown = set(fields) - allowed
    if unknown:
        raise ValidationFailed(
            "Unknown fields.", code="unknown_fields", details={"fields": sorted(unknown)}
        )
    for name, value in fields.items():
        setattr(kb, name, value)
    _validate_chunking(kb.chunk_size, kb.chunk_overlap)
    if (
        "name" in fields
        and KnowledgeBase.objects.filter(account_id=kb.account_id, name=kb.name)
        .exclude(pk=kb.pk)
        .exists()
    ):
        raise Conflict("A knowledge base with this name exists.", code="knowledge_base_exists")
    kb.full_clean()
    kb.save()
    return kb


def knowledge_base_transition(*, kb: KnowledgeBase, to: str, message: str = "") -> KnowledgeBase:
    """Move a knowledge base along its lifecycle; refuses transitions that make no sense."""
    if to not in KnowledgeBase.Status.values:
        raise ValidationFailed("Unknown status.", code="invalid_status")
    if to not in _TRANSITIONS[kb.status]:
        raise Conflict(
            f"A knowledge base cannot go from {kb.status} to {to}.",
            code="invalid_transition",
            details={"from": kb.status, "to": to},
        )
    updated = KnowledgeBase.objects.filter(pk=kb.pk, status=kb.status).update(
        status=to, status_message=message, updated_at=timezone.now()
    )
    if not updated:
        raise Conflict("The knowledge base changed meanwhile; retry.", code="concurrent_update")
    kb.refresh_from_db()
    return kb


def knowledge_base_delete(*, kb: KnowledgeBase) -> None:
    """Delete a knowledge base with its documents; chunks and postings cascade in the database."""
    kb.delete()
