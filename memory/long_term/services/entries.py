"""Long-term memory entries: write, version, archive, delete, importance, reads that count.

Every service checks its actor itself (``memory.long_term.context_access.require_writable``):
writing to a context the actor may not read is 404 ``context_not_found``, to one it may only read
403 ``context_read_only``, whoever called. Every write keeps the context's search index exact in
its own transaction (``index``), and runs again when PostgreSQL ended that transaction for a
deadlock (``core.transactions.retry_on_conflict``). Reads are recorded by ``access``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound, PayloadTooLarge, ValidationFailed
from core.models import Agent
from core.transactions import retry_on_conflict
from core.writes import changes_of, changes_validate, row_update
from memory.long_term.context_access import require_writable
from memory.long_term.selectors import context_get, entry_get
from memory.long_term.services.access import entries_accessed
from memory.long_term.services.contexts import agent_memory_context
from memory.long_term.services.graph_links import entries_link_soon
from memory.long_term.services.index import context_lock, index_apply, index_plan
from memory.models import MemoryAccessLog, MemoryContext, MemoryEntry

# Entries written by one call (the batch endpoint, a restore, a promotion run).
MAX_BATCH = 500
MAX_CONTENT_CHARS = 100_000
ENTRY_VERSIONED = ("content", "data", "entry_type", "memory_type", "source", "tags", "occurred_at")
ENTRY_IN_PLACE = ("importance", "confidence", "metadata")


@dataclass(frozen=True)
class EntryInput:
    """One entry to write; ``content`` or ``data`` (or both) must be given."""

    content: str = ""
    data: Any = None
    entry_type: str = MemoryEntry.EntryType.FACT
    source: str = MemoryEntry.Source.AGENT
    memory_type: str = MemoryEntry.MemoryType.FACTUAL
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] | None = None
    occurred_at: datetime | None = None
    thread: str = ""
    position: int | None = None
    # Who said it, for a conversation's turn written as an entry (a search whose query names a
    # speaker lifts that speaker's entries: ``memory.search.speaker_lift``).
    speaker: str = ""
    importance: float = 0.5
    confidence: float = 1.0


def unarchived_check(context: MemoryContext) -> None:
    if context.is_archived:
        raise Conflict("The context is archived: unarchive it to write.", code="context_archived")


def entry_build(
    context: MemoryContext,
    item: EntryInput,
    author: Agent | None,
    index: int | None = None,
    *,
    role: str = "",
) -> MemoryEntry:
    """A new entry of ``context`` (unsaved), validated (``index``: its place in a batch, for
    the error message); ``role`` for a conversation's message."""
    where = f"entries[{index}]: " if index is not None else ""
    if not item.content.strip() and item.data is None:
        raise ValidationFailed(f"{where}content or data is required.", code="empty_entry")
    if len(item.content) > MAX_CONTENT_CHARS:
        raise PayloadTooLarge(
            f"{where}content is limited to {MAX_CONTENT_CHARS} characters.",
            code="content_too_large",
            details={"limit": MAX_CONTENT_CHARS},
        )
    if (item.thread == "") != (item.position is None):
        raise ValidationFailed(f"{where}thread and position go together.", code="invalid_thread")
    entry = MemoryEntry(
        account_id=context.account_id,
        context_id=context.pk,
        entry_type=item.entry_type,
        source=item.source,
        memory_type=item.memory_type,
        content=item.content,
        data=item.data,
        tags=list(item.tags),
        metadata=dict(item.metadata or {}),
        occurred_at=item.occurred_at,
        thread=item.thread,
        position=item.position,
        role=role,
        speaker=item.speaker,
        importance=item.importance,
        confidence=item.confidence,
        author=author,
    )
    changes_validate(
        entry,
        {
            name: getattr(entry, name)
            for name in ("entry_type", "source", "memory_type", "importance", "confidence")
        },
    )
    return entry


@retry_on_conflict
def entries_write(
    *,
    actor: Actor,
    context: MemoryContext,
    items: Sequence[EntryInput],
    then: Callable[[list[MemoryEntry]], None] | None = None,
    graph_link: bool = True,
) -> list[MemoryEntry]:
    """Write new entries (each its own lineage, version 1) and index them, in one transaction
    (write access to ``context``); ``then`` runs inside it with the saved entries (its error
    undoes the write). ``graph_link``: a worker links them to the knowledge graph once the
    write commits (``graph_links.entries_link_soon``); False for a caller that links them
    itself."""
    if not 1 <= len(items) <= MAX_BATCH:
        raise ValidationFailed(
            f"Write 1 to {MAX_BATCH} entries at a time.",
            code="invalid_batch_size",
            details={"max": MAX_BATCH},
        )
    require_writable(actor, context.pk)
    unarchived_check(context)
    batch = len(items) > 1
    new = [
        entry_build(context, item, actor.agent, index if batch else None)
        for index, item in enumerate(items)
    ]
    plan = index_plan(new)
    with transaction.atomic():
        locked = context_lock(context.pk)
        unarchived_check(locked)
        MemoryEntry.objects.bulk_create(new)
        index_apply(locked, plan)
        audit_record(
            actor=actor,
            action="memory.entry.create",
            account_id=context.account_id,
            target=context,
            changes={"entries": [entry.pk for entry in new]},
        )
        if then is not None:
            then(new)
        if graph_link:
            entries_link_soon([entry.pk for entry in new], context.pk)
    return new


def entries_create(
    *, actor: Actor, context_id: int | None, items: Sequence[EntryInput]
) -> list[MemoryEntry]:
    """Write entries to the context ``context_id`` (write access), or to the calling agent's
    own memory when it is None (created on first use), and answer them as stored."""
    if context_id is None:
        context = agent_memory_context(actor=actor)
    else:
        context = context_get(actor, context_id)
    written = entries_write(actor=actor, context=context, items=items)
    return _stored([entry.pk for entry in written])


def _stored(ids: Sequence[int]) -> list[MemoryEntry]:
    """Entries as stored (columns the index wrote included), without their vectors."""
    return list(MemoryEntry.objects.defer("embedding").filter(pk__in=ids).order_by("pk"))


@retry_on_conflict
def entry_update(
    *,
    actor: Actor,
    entry: MemoryEntry,
    fields: Mapping[str, Any],
    expected_version: int | None = None,
) -> MemoryEntry:
    """Change an entry. Content changes (content, data, types, tags, occurred_at) write a new
    version linked to the previous one, which stays readable as history; importance,
    confidence and metadata change in place. ``expected_version``: 409 ``version_conflict``
    unless the current version is that one."""
    require_writable(actor, entry.context_id)
    changes = changes_of(entry, fields, (*ENTRY_VERSIONED, *ENTRY_IN_PLACE))
    changes_validate(entry, changes)
    _current_only(entry)
    if expected_version is not None and expected_version != entry.version:
        raise _version_conflict(entry.version)
    versioned = {k: v for k, v in changes.items() if k in ENTRY_VERSIONED}
    in_place = {k: v for k, v in changes.items() if k in ENTRY_IN_PLACE}
    if not versioned:
        if in_place:
            row_update(
                actor=actor,
                instance=entry,
                changes=in_place,
                action="memory.entry.update",
                account_id=entry.account_id,
            )
        return _stored([entry.pk])[0]
    context = MemoryContext.objects.get(pk=entry.context_id)
    unarchived_check(context)
    successor = _successor(entry, {**versioned, **in_place}, actor.agent)
    if not successor.content.strip() and successor.data is None:
        raise ValidationFailed("content or data is required.", code="empty_entry")
    if len(successor.content) > MAX_CONTENT_CHARS:
        raise PayloadTooLarge(
            f"content is limited to {MAX_CONTENT_CHARS} characters.",
            code="content_too_large",
            details={"limit": MAX_CONTENT_CHARS},
        )
    # An archived entry is out of the index: its new version stays out too.
    searchable = entry.archived_at is None
    plan = index_plan([successor], around=[entry], leaving=[entry.pk]) if searchable else None
    with transaction.atomic():
        locked = context_lock(context.pk)
        updated = MemoryEntry.objects.filter(
            pk=entry.pk, is_current=True, version=entry.version
        ).update(is_current=False)
        if not updated:
            current = MemoryEntry.objects.filter(lineage=entry.lineage, is_current=True).first()
            raise _version_conflict(current.version if current else None)
        # Reads as applied so far (a flush holds this lock too; the rest go to the successor).
        successor.access_count, successor.last_accessed_at = (
            MemoryEntry.objects.filter(pk=entry.pk)
            .values_list("access_count", "last_accessed_at")
            .get()
        )
        successor.save(force_insert=True)
        if plan is not None:
            index_apply(locked, plan, leaving=[entry.pk])
        entries_link_soon([successor.pk, entry.pk], context.pk)
        audit_record(
            actor=actor,
            action="memory.entry.update",
            account_id=entry.account_id,
            target=successor,
            changes={"version": successor.version, **_jsonable(changes)},
        )
    return _stored([successor.pk])[0]


def _successor(entry: MemoryEntry, changes: Mapping[str, Any], author: Agent | None) -> MemoryEntry:
    successor = MemoryEntry(
        account_id=entry.account_id,
        context_id=entry.context_id,
        lineage=entry.lineage,
        version=entry.version + 1,
        previous_id=entry.pk,
        entry_type=entry.entry_type,
        source=entry.source,
        memory_type=entry.memory_type,
        content=entry.content,
        data=entry.data,
        tags=list(entry.tags),
        metadata=dict(entry.metadata),
        occurred_at=entry.occurred_at,
        thread=entry.thread,
        position=entry.position,
        importance=entry.importance,
        confidence=entry.confidence,
        access_count=entry.access_count,
        last_accessed_at=entry.last_accessed_at,
        archived_at=entry.archived_at,
        author=author,
    )
    for name, value in changes.items():
        setattr(successor, name, value)
    return successor


def _current_only(entry: MemoryEntry) -> None:
    """History is read-only: only the current version of a memory changes."""
    if not entry.is_current:
        current = MemoryEntry.objects.filter(lineage=entry.lineage, is_current=True).first()
        raise _version_conflict(current.version if current else None)


def _version_conflict(current: int | None) -> Conflict:
    return Conflict(
        "The entry has changed since you read it.",
        code="version_conflict",
        details={"current_version": current},
    )


def _jsonable(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in changes.items()}


@retry_on_conflict
def entry_importance_adjust(*, actor: Actor, entry: MemoryEntry, delta: float) -> MemoryEntry:
    """Boost (delta > 0) or reduce (delta < 0) importance, clamped to 0..1, in one UPDATE."""
    if not -1 <= delta <= 1 or delta != delta:
        raise ValidationFailed("delta must be from -1 to 1.", code="invalid_delta")
    require_writable(actor, entry.context_id)
    _current_only(entry)
    with transaction.atomic():
        if not MemoryEntry.objects.filter(pk=entry.pk).update(
            importance=Least(1.0, Greatest(0.0, F("importance") + delta))
        ):
            raise NotFound("No such entry.", code="entry_not_found")
        audit_record(
            actor=actor,
            action="memory.entry.importance",
            account_id=entry.account_id,
            target=entry,
            changes={"delta": delta},
        )
    return _stored([entry.pk])[0]


@retry_on_conflict
def entries_archive(
    *,
    actor: Actor,
    context: MemoryContext,
    entries: Sequence[MemoryEntry],
    archived: bool,
    reason: str = "",
) -> int:
    """Archive current entries (out of searches, kept with their history), or bring them back.
    Returns how many changed. Every entry must be of ``context`` (write access)."""
    require_writable(actor, context.pk)
    if any(e.context_id != context.pk for e in entries):
        raise ValidationFailed(
            "Every entry archived must be of the context named.", code="entry_not_in_context"
        )
    targets = [e for e in entries if e.is_current and (e.archived_at is None) == archived]
    if not targets:
        return 0
    ids = [e.pk for e in targets]
    if archived:
        plan = index_plan([], around=targets, leaving=ids)
    else:
        for entry in targets:
            entry.archived_at = None
        # Coming back: indexed (and embedded) again like new entries.
        plan = index_plan(targets)
    with transaction.atomic():
        locked = context_lock(context.pk)
        now = timezone.now()
        MemoryEntry.objects.filter(pk__in=ids, is_current=True).update(
            archived_at=now if archived else None
        )
        index_apply(locked, plan, leaving=ids if archived else [])
        entries_link_soon(ids, context.pk)
        audit_record(
            actor=actor,
            action="memory.entry.archive" if archived else "memory.entry.unarchive",
            account_id=context.account_id,
            target=context,
            changes={"entries": ids, "reason": reason},
        )
    return len(targets)


def entry_archive_set(
    *, actor: Actor, entry: MemoryEntry, archived: bool, reason: str = ""
) -> MemoryEntry:
    """Archive one current entry (or bring it back) and answer it as stored."""
    entries_archive(
        actor=actor,
        context=MemoryContext.objects.get(pk=entry.context_id),
        entries=[entry],
        archived=archived,
        reason=reason,
    )
    return _stored([entry.pk])[0]


@retry_on_conflict
def entry_delete(*, actor: Actor, entry: MemoryEntry) -> None:
    """Delete a memory: every version of it, out of the index (write access)."""
    require_writable(actor, entry.context_id)
    context = MemoryContext.objects.get(pk=entry.context_id)
    versions = list(MemoryEntry.objects.filter(lineage=entry.lineage).values_list("pk", flat=True))
    current = MemoryEntry.objects.filter(lineage=entry.lineage, is_current=True).first()
    searchable = current is not None and current.archived_at is None
    plan = None
    if searchable and current is not None:
        plan = index_plan([], around=[current], leaving=[current.pk])
    with transaction.atomic():
        locked = context_lock(context.pk)
        if plan is not None and current is not None:
            index_apply(locked, plan, leaving=[current.pk])
        audit_record(
            actor=actor,
            action="memory.entry.delete",
            account_id=entry.account_id,
            target=entry,
            changes={"lineage": str(entry.lineage), "versions": len(versions)},
        )
        MemoryEntry.objects.filter(pk__in=versions).update(previous=None)
        MemoryEntry.objects.filter(pk__in=versions).delete()
        entries_link_soon(versions, context.pk)  # what was derived from it goes too


def entry_read(*, actor: Actor, entry_id: int) -> MemoryEntry:
    """One version of an entry in a context the actor may read (404 ``entry_not_found``
    otherwise), its read recorded as an access (``entries_accessed``: applied by the next
    flush; the answer counts it already)."""
    entry = entry_get(actor, entry_id)
    entries_accessed(actor=actor, entries=[entry], action=MemoryAccessLog.Action.READ)
    return entry
