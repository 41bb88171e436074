"""Long-term memory snapshots: a context's current entries at one moment, and a restore that
brings the context back to them without losing anything (write access to the context)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from core.actors import Actor
from core.audit import audit_record
from core.writes import changes_of
from memory.long_term.context_access import require_writable
from memory.long_term.services.entries import (
    ENTRY_VERSIONED,
    MAX_BATCH,
    EntryInput,
    entries_archive,
    entries_write,
    entry_update,
    unarchived_check,
)
from memory.models import MemoryContext, MemoryEntry, MemorySnapshot

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


def snapshot_create(*, actor: Actor, context: MemoryContext, name: str = "") -> MemorySnapshot:
    """Record the context's current entries (archived ones included, marked)."""
    require_writable(actor, context.pk)
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
    require_writable(actor, snapshot.context_id)
    context = MemoryContext.objects.get(pk=snapshot.context_id)
    unarchived_check(context)
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
