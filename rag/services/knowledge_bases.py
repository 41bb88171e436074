"""Knowledge bases: creation, settings and their guarded lifecycle.

Ingestion maintains ``chunk_count`` and ``total_terms`` (the BM25 corpus statistics) under the
knowledge base's row lock, and lifecycle changes are compare-and-set on ``status``: nothing here
ever saves a whole row read earlier, so a settings change can never write stale statistics or
undo a pause that happened meanwhile.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.actors import MANAGE_KNOWLEDGE_BASES, Actor
from core.audit import audit_record
from core.embeddings import get_embedding_provider
from core.errors import Conflict, NotFound, ValidationFailed
from core.writes import changes_of, changes_validate, row_delete, row_update
from rag.models import KnowledgeBase
from rag.services.documents import chunks_unlink_soon

_TRANSITIONS: dict[str, set[str]] = {
    KnowledgeBase.Status.ACTIVE: {"indexing", "paused", "error", "archived"},
    KnowledgeBase.Status.INDEXING: {"active", "paused", "error"},
    KnowledgeBase.Status.PAUSED: {"active", "archived"},
    KnowledgeBase.Status.ERROR: {"active", "indexing", "archived"},
    KnowledgeBase.Status.ARCHIVED: {"active"},
}
# What callers may change; everything else is derived or has its own operation.
UPDATABLE_FIELDS = ("name", "description", "chunking_strategy", "chunk_size", "chunk_overlap")


def _name_taken() -> Conflict:
    return Conflict("A knowledge base with this name exists.", code="name_taken")


def knowledge_base_create(
    *,
    actor: Actor,
    name: str,
    description: str = "",
    chunking_strategy: str = KnowledgeBase.Chunking.MARKDOWN,
    chunk_size: int = 256,
    chunk_overlap: int = 32,
    account_id: int | None = None,
) -> KnowledgeBase:
    """``account_id`` defaults to the actor's own account (people with several accounts name it)."""
    account_id = account_id if account_id is not None else actor.account_id
    actor.require(account_id, MANAGE_KNOWLEDGE_BASES)
    _validate_chunking(chunk_size, chunk_overlap)
    provider = get_embedding_provider()
    kb = KnowledgeBase(
        account_id=account_id,
        name=name,
        description=description,
        embedding_provider=settings.EMBEDDING_PROVIDER,
        embedding_model=provider.model_id,
        chunking_strategy=chunking_strategy,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    kb.full_clean(exclude=["account"], validate_unique=False)
    try:
        # The unique constraint decides, not a check-then-insert that races.
        with transaction.atomic():
            kb.save()
            audit_record(
                actor=actor,
                action="rag.knowledge_base.create",
                account_id=account_id,
                target=kb,
                changes={f: getattr(kb, f) for f in UPDATABLE_FIELDS},
            )
    except IntegrityError as exc:
        if "kb_unique_name_per_account" in str(exc):
            raise _name_taken() from exc
        raise
    return kb


def _validate_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if not 32 <= chunk_size <= 8192:
        raise ValidationFailed("chunk_size must be 32-8192 tokens.", code="invalid_chunking")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValidationFailed(
            "chunk_overlap must be at least 0 and below chunk_size.", code="invalid_chunking"
        )


def knowledge_base_update(*, actor: Actor, kb: KnowledgeBase, **fields: Any) -> KnowledgeBase:
    """Change name, description or chunking settings (new settings apply on reprocessing).

    Writes only the fields given (one UPDATE); statistics and status are never touched.
    """
    actor.require(kb.account_id, MANAGE_KNOWLEDGE_BASES)
    changes = changes_of(kb, fields, UPDATABLE_FIELDS)
    if not changes:
        return kb
    _validate_chunking(
        changes.get("chunk_size", kb.chunk_size), changes.get("chunk_overlap", kb.chunk_overlap)
    )
    changes_validate(kb, changes)
    # The CHECK constraints guard the size/overlap pair against a concurrent change of the
    # other field.
    chunking = lambda: ValidationFailed(  # noqa: E731
        "chunk_overlap must be below chunk_size.", code="invalid_chunking"
    )
    return row_update(
        actor=actor,
        instance=kb,
        changes=changes,
        action="rag.knowledge_base.update",
        account_id=kb.account_id,
        conflicts={
            "kb_unique_name_per_account": _name_taken,
            "kb_overlap_lt_size": chunking,
            "kb_chunk_size_range": chunking,
        },
        missing=lambda: NotFound("No such knowledge base.", code="knowledge_base_not_found"),
    )


def knowledge_base_transition(
    *, actor: Actor, kb: KnowledgeBase, to: str, message: str = ""
) -> KnowledgeBase:
    """Move a knowledge base along its lifecycle; refuses transitions that make no sense."""
    actor.require(kb.account_id, MANAGE_KNOWLEDGE_BASES)
    if to not in KnowledgeBase.Status.values:
        raise ValidationFailed("Unknown status.", code="invalid_status")
    if to not in _TRANSITIONS[kb.status]:
        raise Conflict(
            f"A knowledge base cannot go from {kb.status} to {to}.",
            code="invalid_transition",
            details={"from": kb.status, "to": to},
        )
    with transaction.atomic():
        updated = KnowledgeBase.objects.filter(pk=kb.pk, status=kb.status).update(
            status=to, status_message=message, updated_at=timezone.now()
        )
        if not updated:
            raise Conflict("The knowledge base changed meanwhile; retry.", code="concurrent_update")
        audit_record(
            actor=actor,
            action="rag.knowledge_base.transition",
            account_id=kb.account_id,
            target=kb,
            changes={"from": kb.status, "to": to, "message": message},
        )
    kb.refresh_from_db()
    return kb


def knowledge_base_delete(*, actor: Actor, kb: KnowledgeBase) -> None:
    """Delete a knowledge base with its documents; chunks and postings cascade in the database,
    and their graph mentions are dropped once it commits (``chunks_unlink_soon``).

    The knowledge base's row is locked first, as every ingestion swap and document deletion
    locks it before touching documents and chunks: taking the documents first deadlocked with an
    ingestion writing the same documents (PostgreSQL aborted one of them)."""
    actor.require(kb.account_id, MANAGE_KNOWLEDGE_BASES)
    with transaction.atomic():
        if not KnowledgeBase.objects.select_for_update().filter(pk=kb.pk).exists():
            raise NotFound("No such knowledge base.", code="knowledge_base_not_found")
        chunks_unlink_soon([kb.pk])
        row_delete(
            actor=actor,
            instance=kb,
            action="rag.knowledge_base.delete",
            account_id=kb.account_id,
            changes={"name": kb.name},
        )
