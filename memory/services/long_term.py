"""Long-term memory writes: contexts, grants, versioned entries, importance, snapshots.

Every entry write keeps the context's search index exact in the same transaction: the BM25
postings and statistics of the ``memory_entries`` space (``memory.spaces``) and the embeddings.
Embeddings are computed before the transaction opens (never call a provider inside one); the
context's row lock then serialises index changes within the context. An entry in a thread is
indexed with its neighbours (``memory.indexing``), so writing, updating or archiving it
re-indexes the neighbours whose indexed text includes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.embeddings import get_embedding_provider
from core.errors import Conflict, NotFound, PayloadTooLarge, ValidationFailed
from core.models import Agent, Team
from core.writes import changes_of, changes_validate, row_delete, row_update
from memory import indexing
from memory.models import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemorySnapshot,
)
from memory.roles import MANAGE_MEMORY
from memory.spaces import MEMORY_ENTRIES
from rag import keyword
from rag.search import vector_literal

# Entries written by one call (the batch endpoint, a restore, a promotion run).
MAX_BATCH = 500
MAX_CONTENT_CHARS = 100_000
CONTEXT_UPDATABLE = ("name", "context_type", "description", "metadata")
ENTRY_VERSIONED = ("content", "data", "entry_type", "memory_type", "source", "tags", "occurred_at")
ENTRY_IN_PLACE = ("importance", "confidence", "metadata")
SNAPSHOT_FIELDS = (
    "lineage",
    "version",
    "entry_type",
    "source",
    "memory_type",
    "content",
    "data",
    "tags",
    "metadata",
    "occurred_at",
    "thread",
    "position",
    "importance",
    "confidence",
)

_CONFLICTS = {
    "ltm_context_unique_name": lambda: Conflict(
        "A context with this name exists in the account.", code="context_name_taken"
    ),
}


# --- contexts --------------------------------------------------------------------------------


def _owner_and_account(actor: Actor, account_id: int | None) -> tuple[Agent | None, int]:
    if actor.agent is not None:
        return actor.agent, actor.agent.account_id
    account_id = actor.account_id if account_id is None else account_id
    actor.require(account_id, MANAGE_MEMORY)
    return None, account_id


def _team(account_id: int, scope: str, team_id: int | None) -> int | None:
    if scope != MemoryContext.Scope.TEAM:
        if team_id is not None:
            raise ValidationFailed(
                "team_id is only for contexts of scope team.", code="team_not_allowed"
            )
        return None
    if team_id is None:
        raise ValidationFailed("A team context needs team_id.", code="team_required")
    if not Team.objects.filter(account_id=account_id, pk=team_id).exists():
        raise NotFound("No such team.", code="team_not_found")
    return team_id


def context_create(
    *,
    actor: Actor,
    name: str,
    context_type: str = MemoryContext.ContextType.AGENT_MEMORY,
    scope: str = MemoryContext.Scope.AGENT,
    team_id: int | None = None,
    description: str = "",
    metadata: Mapping[str, Any] | None = None,
    account_id: int | None = None,
) -> MemoryContext:
    """A new context owned by the calling agent, in its account (people and tools: owned by
    nobody, in ``account_id``, which a person with several accounts must name)."""
    owner, account_id = _owner_and_account(actor, account_id)
    context = MemoryContext(
        account_id=account_id,
        name=name,
        context_type=context_type,
        scope=scope,
        team_id=_team(account_id, scope, team_id),
        owner=owner,
        description=description,
        metadata=dict(metadata or {}),
    )
    changes_validate(context, {"name": name, "context_type": context_type, "scope": scope})
    try:
        with transaction.atomic():
            context.save(force_insert=True)
            audit_record(
                actor=actor,
                action="memory.context.create",
                account_id=account_id,
                target=context,
                changes={"name": name, "scope": scope, "context_type": context_type},
            )
    except IntegrityError as exc:
        if "ltm_context_unique_name" in str(exc):
            raise _CONFLICTS["ltm_context_unique_name"]() from exc
        raise
    return context


def agent_memory_context(*, actor: Actor) -> MemoryContext:
    """The calling agent's own long-term memory (scope agent, type agent_memory), created on
    first use: where an entry goes when its writer names no context, and where promotions from
    short-term memory go. A context of that name owned by someone else (people may name
    contexts freely) is 409 ``context_name_taken``."""
    if actor.agent is None:
        raise ValidationFailed(
            "Name a context: only an agent has a memory of its own.", code="context_required"
        )
    agent = actor.agent
    name = f"agent:{agent.pk}"
    context = MemoryContext.objects.filter(account_id=agent.account_id, name=name).first()
    if context is None:
        try:
            context = context_create(
                actor=actor,
                name=name,
                description=f"The long-term memory of agent {agent.name}.",
            )
        except Conflict:  # created by a concurrent first write
            context = MemoryContext.objects.get(account_id=agent.account_id, name=name)
    if context.owner_id != agent.pk:
        raise Conflict(f"The context {name!r} belongs to someone else.", code="context_name_taken")
    return context


def context_update(
    *, actor: Actor, context: MemoryContext, fields: Mapping[str, Any]
) -> MemoryContext:
    changes = changes_of(context, fields, CONTEXT_UPDATABLE)
    changes_validate(context, changes)
    return row_update(
        actor=actor,
        instance=context,
        changes=changes,
        action="memory.context.update",
        account_id=context.account_id,
        conflicts=_CONFLICTS,
    )


def context_archive(*, actor: Actor, context: MemoryContext, archived: bool) -> MemoryContext:
    """Archive (or bring back) a context: an archived one keeps its entries, readable, but is
    left out of searches and refuses new entries."""
    if archived == context.is_archived:
        return context
    return row_update(
        actor=actor,
        instance=context,
        changes={"archived_at": timezone.now() if archived else None},
        action="memory.context.archive" if archived else "memory.context.unarchive",
        account_id=context.account_id,
        audit_changes={"archived": archived},
    )


def context_delete(*, actor: Actor, context: MemoryContext) -> None:
    row_delete(
        actor=actor,
        instance=context,
        action="memory.context.delete",
        account_id=context.account_id,
        changes={"name": context.name},
    )


def context_grant(
    *, actor: Actor, context: MemoryContext, agent_id: int, level: str
) -> MemoryContextGrant:
    """Let another agent of the account read (or write) the context."""
    if level not in MemoryContextGrant.Level.values:
        raise ValidationFailed(
            "level must be read or write.",
            code="invalid_level",
            details={"choices": list(MemoryContextGrant.Level.values)},
        )
    if not Agent.objects.filter(account_id=context.account_id, pk=agent_id).exists():
        raise NotFound("No such agent.", code="agent_not_found")
    with transaction.atomic():
        grant, _ = MemoryContextGrant.objects.update_or_create(
            context=context, agent_id=agent_id, defaults={"level": level}
        )
        audit_record(
            actor=actor,
            action="memory.context.grant",
            account_id=context.account_id,
            target=context,
            changes={"agent_id": agent_id, "level": level},
        )
    return grant


def context_revoke(*, actor: Actor, context: MemoryContext, agent_id: int) -> None:
    with transaction.atomic():
        deleted, _ = MemoryContextGrant.objects.filter(context=context, agent_id=agent_id).delete()
        if not deleted:
            raise NotFound("This agent has no grant on the context.", code="grant_not_found")
        audit_record(
            actor=actor,
            action="memory.context.revoke",
            account_id=context.account_id,
            target=context,
            changes={"agent_id": agent_id},
        )


# --- the index -------------------------------------------------------------------------------


@dataclass
class _IndexPlan:
    """What one write does to the context's index, computed before its transaction: the new
    entries (unsaved), the searchable neighbours whose indexed text changes, every one's
    keyword text, and the embeddings of the new entries and of neighbours within the
    embedding radius."""

    new: list[MemoryEntry]
    neighbours: list[MemoryEntry]
    keyword_texts: list[str]
    vectors: dict[int, np.ndarray] = field(default_factory=dict)  # index in new + neighbours

    @property
    def entries(self) -> list[MemoryEntry]:
        return [*self.new, *self.neighbours]


def _plan(
    new: Sequence[MemoryEntry], *, around: Sequence[MemoryEntry] = (), leaving: Sequence[int] = ()
) -> _IndexPlan:
    """Plan indexing ``new`` entries, and re-indexing the neighbours of ``new`` and of the
    entries ``around`` (those whose text changes or that leave the index), without the ids in
    ``leaving``."""
    neighbours = indexing.affected_neighbours([*new, *around], exclude=leaving)
    plan_entries = [*new, *neighbours]
    keyword_texts, embedding_texts = indexing.indexed_texts(plan_entries, exclude=leaving)
    positions = [
        (e.context_id, e.thread, e.position)
        for e in [*new, *around]
        if e.thread and e.position is not None
    ]
    wanted = list(range(len(new)))
    for index, entry in enumerate(neighbours, start=len(new)):
        assert entry.position is not None
        if any(
            (c, t) == (entry.context_id, entry.thread)
            and p is not None
            and abs(p - entry.position) <= indexing.EMBEDDING_RADIUS
            for c, t, p in positions
        ):
            wanted.append(index)
    plan = _IndexPlan(new=list(new), neighbours=neighbours, keyword_texts=keyword_texts)
    if wanted:
        matrix = get_embedding_provider().embed_documents([embedding_texts[i] for i in wanted])
        plan.vectors = {i: np.asarray(row) for i, row in zip(wanted, matrix, strict=True)}
    return plan


def _lock(context_id: int) -> MemoryContext:
    return MemoryContext.objects.select_for_update().get(pk=context_id)


def _apply(context: MemoryContext, plan: _IndexPlan, *, leaving: Sequence[int] = ()) -> None:
    """Inside the transaction holding the context's row lock, after the new entries are saved:
    take ``leaving`` and the re-indexed neighbours out of the index, put every planned entry
    in, store the new embeddings and the context's statistics."""
    model_id = get_embedding_provider().model_id
    old_ids = [*leaving, *(e.pk for e in plan.neighbours)]
    removed_units, removed_terms = keyword.postings_forget(
        space=MEMORY_ENTRIES, scope_id=context.pk, unit_ids=old_ids, delete=True
    )
    analysed = [keyword.chunk_terms(text) for text in plan.keyword_texts]
    entries = plan.entries
    units = [
        keyword.IndexedUnit(unit_id=entry.pk, terms=terms)
        for entry, terms in zip(entries, analysed, strict=True)
    ]
    count = context.entry_count - removed_units + len(units)
    total = context.total_terms - removed_terms + sum(t.length for t in analysed)
    keyword.postings_add(
        space=MEMORY_ENTRIES,
        scope_id=context.pk,
        units=units,
        avg_length=total / count if count else 0.0,
    )
    ids = [entry.pk for entry in entries]
    vectors = [
        vector_literal(plan.vectors[i]) if i in plan.vectors else None for i in range(len(entries))
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_memoryentry e SET keyword_length = v.length, "
            "embedding = coalesce(v.embedding::vector, e.embedding), "
            "embedding_model = CASE WHEN v.embedding IS NULL THEN e.embedding_model ELSE %s END "
            "FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS v(id, length, embedding) "
            "WHERE e.id = v.id",
            [model_id, ids, [t.length for t in analysed], vectors],
        )
        if leaving:
            cursor.execute(
                "UPDATE memory_memoryentry SET keyword_length = 0 WHERE id = ANY(%s)",
                [list(leaving)],
            )
    MemoryContext.objects.filter(pk=context.pk).update(entry_count=count, total_terms=total)


# --- entries ---------------------------------------------------------------------------------


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
    importance: float = 0.5
    confidence: float = 1.0


def _writable(context: MemoryContext) -> None:
    if context.is_archived:
        raise Conflict("The context is archived: unarchive it to write.", code="context_archived")


def _entry_from(
    context: MemoryContext, item: EntryInput, author: Agent | None, index: int | None = None
) -> MemoryEntry:
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


def entries_write(
    *, actor: Actor, context: MemoryContext, items: Sequence[EntryInput]
) -> list[MemoryEntry]:
    """Write new entries (each its own lineage, version 1) and index them, in one transaction.

    The caller checked that ``actor`` may write ``context`` (``selectors.context_get``)."""
    if not 1 <= len(items) <= MAX_BATCH:
        raise ValidationFailed(
            f"Write 1 to {MAX_BATCH} entries at a time.",
            code="invalid_batch_size",
            details={"max": MAX_BATCH},
        )
    _writable(context)
    batch = len(items) > 1
    new = [
        _entry_from(context, item, actor.agent, index if batch else None)
        for index, item in enumerate(items)
    ]
    plan = _plan(new)
    with transaction.atomic():
        locked = _lock(context.pk)
        _writable(locked)
        MemoryEntry.objects.bulk_create(new)
        _apply(locked, plan)
        audit_record(
            actor=actor,
            action="memory.entry.create",
            account_id=context.account_id,
            target=context,
            changes={"entries": [entry.pk for entry in new]},
        )
    return new


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
        return entry
    context = MemoryContext.objects.get(pk=entry.context_id)
    _writable(context)
    successor = _successor(entry, {**versioned, **in_place}, actor.agent)
    if not successor.content.strip() and successor.data is None:
        raise ValidationFailed("content or data is required.", code="empty_entry")
    # An archived entry is out of the index: its new version stays out too.
    searchable = entry.archived_at is None
    plan = _plan([successor], around=[entry], leaving=[entry.pk]) if searchable else None
    with transaction.atomic():
        locked = _lock(context.pk)
        updated = MemoryEntry.objects.filter(
            pk=entry.pk, is_current=True, version=entry.version
        ).update(is_current=False)
        if not updated:
            current = MemoryEntry.objects.filter(lineage=entry.lineage, is_current=True).first()
            raise _version_conflict(current.version if current else None)
        successor.save(force_insert=True)
        if plan is not None:
            _apply(locked, plan, leaving=[entry.pk])
        audit_record(
            actor=actor,
            action="memory.entry.update",
            account_id=entry.account_id,
            target=successor,
            changes={"version": successor.version, **_jsonable(changes)},
        )
    return successor


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


def entry_importance_adjust(*, actor: Actor, entry: MemoryEntry, delta: float) -> MemoryEntry:
    """Boost (delta > 0) or reduce (delta < 0) importance, clamped to 0..1, in one UPDATE."""
    if not -1 <= delta <= 1 or delta != delta:
        raise ValidationFailed("delta must be from -1 to 1.", code="invalid_delta")
    _current_only(entry)
    from django.db.models.functions import Greatest, Least

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
    entry.refresh_from_db()
    return entry


def entries_archive(
    *,
    actor: Actor,
    context: MemoryContext,
    entries: Sequence[MemoryEntry],
    archived: bool,
    reason: str = "",
) -> int:
    """Archive current entries (out of searches, kept with their history), or bring them back.
    Returns how many changed."""
    targets = [e for e in entries if e.is_current and (e.archived_at is None) == archived]
    if not targets:
        return 0
    ids = [e.pk for e in targets]
    if archived:
        plan = _plan([], around=targets, leaving=ids)
    else:
        for entry in targets:
            entry.archived_at = None
        # Coming back: indexed (and embedded) again like new entries.
        plan = _plan(targets)
    with transaction.atomic():
        locked = _lock(context.pk)
        now = timezone.now()
        MemoryEntry.objects.filter(pk__in=ids, is_current=True).update(
            archived_at=now if archived else None
        )
        _apply(locked, plan, leaving=ids if archived else [])
        audit_record(
            actor=actor,
            action="memory.entry.archive" if archived else "memory.entry.unarchive",
            account_id=context.account_id,
            target=context,
            changes={"entries": ids, "reason": reason},
        )
    return len(targets)


def entry_delete(*, actor: Actor, entry: MemoryEntry) -> None:
    """Delete a memory: every version of it, out of the index."""
    context = MemoryContext.objects.get(pk=entry.context_id)
    versions = list(MemoryEntry.objects.filter(lineage=entry.lineage).values_list("pk", flat=True))
    current = MemoryEntry.objects.filter(lineage=entry.lineage, is_current=True).first()
    searchable = current is not None and current.archived_at is None
    plan = None
    if searchable and current is not None:
        plan = _plan([], around=[current], leaving=[current.pk])
    with transaction.atomic():
        locked = _lock(context.pk)
        if plan is not None and current is not None:
            _apply(locked, plan, leaving=[current.pk])
        audit_record(
            actor=actor,
            action="memory.entry.delete",
            account_id=entry.account_id,
            target=entry,
            changes={"lineage": str(entry.lineage), "versions": len(versions)},
        )
        MemoryEntry.objects.filter(pk__in=versions).update(previous=None)
        MemoryEntry.objects.filter(pk__in=versions).delete()


def entries_accessed(
    *, actor: Actor, entries: Sequence[MemoryEntry], action: str, query: str = ""
) -> None:
    """Record that ``actor`` read ``entries`` (one read, or the hits of one search): an access
    log row per entry, and each entry's ``access_count`` and ``last_accessed_at`` (which keep
    a used memory recent) in one UPDATE. The instances are updated to match."""
    if not entries:
        return
    now = timezone.now()
    with transaction.atomic():
        MemoryEntry.objects.filter(pk__in=[e.pk for e in entries]).update(
            access_count=F("access_count") + 1, last_accessed_at=now
        )
        MemoryAccessLog.objects.bulk_create(
            MemoryAccessLog(
                account_id=entry.account_id,
                context_id=entry.context_id,
                entry_id=entry.pk,
                agent=actor.agent,
                actor=str(actor)[:200],
                action=action,
                query=query,
                result_count=len(entries),
            )
            for entry in entries
        )
    for entry in entries:
        entry.access_count += 1
        entry.last_accessed_at = now


# --- snapshots -------------------------------------------------------------------------------


def snapshot_create(*, actor: Actor, context: MemoryContext, name: str = "") -> MemorySnapshot:
    """Record the context's current entries (archived ones included, marked)."""
    entries = [
        {
            **{k: _snapshot_value(getattr(e, k)) for k in SNAPSHOT_FIELDS},
            "archived": e.archived_at is not None,
        }
        for e in MemoryEntry.objects.filter(context=context, is_current=True).order_by("pk")
    ]
    with transaction.atomic():
        snapshot = MemorySnapshot.objects.create(
            account_id=context.account_id,
            context=context,
            name=name,
            entries=entries,
            entry_count=len(entries),
            created_by=str(actor)[:200],
        )
        audit_record(
            actor=actor,
            action="memory.snapshot.create",
            account_id=context.account_id,
            target=snapshot,
            changes={"entries": len(entries)},
        )
    return snapshot


def _snapshot_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


@dataclass(frozen=True)
class RestoreReport:
    restored: int  # entries given a new version with the snapshot's content
    recreated: int  # memories deleted since, written again as new entries
    archived: int  # entries written after the snapshot, archived (not deleted)
    unchanged: int


def snapshot_restore(*, actor: Actor, snapshot: MemorySnapshot) -> RestoreReport:
    """Bring the context back to the snapshot without losing anything: an entry that changed
    since gets a new version with the snapshot's content (its later versions stay history);
    a memory deleted since is written again; one written after the snapshot is archived."""
    context = MemoryContext.objects.get(pk=snapshot.context_id)
    _writable(context)
    current = {
        str(e.lineage): e for e in MemoryEntry.objects.filter(context=context, is_current=True)
    }
    restored = recreated = unchanged = 0
    recreate: list[EntryInput] = []
    in_snapshot: set[str] = set()
    for saved in snapshot.entries:
        lineage = saved["lineage"]
        in_snapshot.add(lineage)
        fields = {k: saved[k] for k in ENTRY_VERSIONED if k in saved}
        if fields.get("occurred_at"):
            fields["occurred_at"] = datetime.fromisoformat(fields["occurred_at"])
        entry = current.get(lineage)
        if entry is None:
            recreate.append(
                EntryInput(
                    **fields,
                    metadata={**saved.get("metadata", {}), "restored_from": lineage},
                    thread=saved.get("thread", ""),
                    position=saved.get("position"),
                    importance=saved.get("importance", 0.5),
                    confidence=saved.get("confidence", 1.0),
                )
            )
            continue
        if entry.archived_at is not None and not saved.get("archived"):
            entries_archive(actor=actor, context=context, entries=[entry], archived=False)
            entry.refresh_from_db()
        in_place = {
            k: saved[k] for k in ("importance", "confidence") if saved.get(k) != getattr(entry, k)
        }
        if changes_of(entry, fields, ENTRY_VERSIONED):
            entry_update(actor=actor, entry=entry, fields={**fields, **in_place})
            restored += 1
        elif in_place:
            entry_update(actor=actor, entry=entry, fields=in_place)
            restored += 1
        else:
            unchanged += 1
    if recreate:
        for start in range(0, len(recreate), MAX_BATCH):
            recreated += len(
                entries_write(
                    actor=actor, context=context, items=recreate[start : start + MAX_BATCH]
                )
            )
    later = [e for lineage, e in current.items() if lineage not in in_snapshot]
    archived = entries_archive(
        actor=actor, context=context, entries=later, archived=True, reason="snapshot restore"
    )
    audit_record(
        actor=actor,
        action="memory.snapshot.restore",
        account_id=context.account_id,
        target=snapshot,
        changes={"restored": restored, "recreated": recreated, "archived": archived},
    )
    return RestoreReport(
        restored=restored, recreated=recreated, archived=archived, unchanged=unchanged
    )
