"""The kinds of change review before change knows (``memory.maintenance.services.changes``): each an
applier ``apply(*, account, actor, payload) -> dict`` over a JSON payload, registered in one line at
the bottom. An applier re-reads what it changes and refuses (409 ``change_outdated``) when the data
moved since the change was proposed, so an old approval never overwrites newer data.

- ``dedup_merge``: ``{"context_id", "survivor_id", "absorbed": [{"id", "similarity"}]}``
- ``promotion``: ``{"agent_id", "items": [entry input]}`` (short-term entries to long-term)
- ``rot_archive``: ``{"context_id", "entry_ids"}``
- ``importance_decay``: ``{"context_id", "computed_at", "entries": [{"id", "from", "to"}]}``
- ``agent_write``: ``{"agent_id", "context_id", "item": entry input, "run_id"}``
- ``cluster_rewrite``: ``memory.maintenance.services.cluster_rewrite.rewrite_payload`` (cluster
  maintenance; registered by that module)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction
from django.utils.dateparse import parse_datetime

from core.actors import Actor, actor_for_agent
from core.audit import audit_record
from core.errors import Conflict, NotFound
from core.models import Account, Agent
from memory.long_term import services as ltm
from memory.long_term.services.index import context_lock
from memory.maintenance import fact_check
from memory.maintenance.services.changes import change_kind_register
from memory.models import MemoryContext, MemoryEntry

# --- helpers -------------------------------------------------------------------------------


def entry_input_json(item: ltm.EntryInput) -> dict[str, Any]:
    data = dataclasses.asdict(item)
    data["tags"] = list(item.tags)
    data["metadata"] = dict(item.metadata or {})
    data["occurred_at"] = item.occurred_at.isoformat() if item.occurred_at else None
    return data


def entry_input_from(data: Mapping[str, Any]) -> ltm.EntryInput:
    fields = {f.name for f in dataclasses.fields(ltm.EntryInput)}
    values = {k: v for k, v in data.items() if k in fields}
    if values.get("occurred_at"):
        values["occurred_at"] = parse_datetime(str(values["occurred_at"]))
    values["tags"] = tuple(values.get("tags") or ())
    return ltm.EntryInput(**values)


def entry_view(entry: MemoryEntry, limit: int = 1000) -> dict[str, Any]:
    """What a reviewer reads of an entry (``before`` and ``after`` of a change)."""
    text = entry.content if len(entry.content) <= limit else entry.content[: limit - 1] + "…"
    return {
        "id": entry.pk,
        "content": text,
        "tags": list(entry.tags),
        "importance": round(entry.importance, 6),
        "entry_type": entry.entry_type,
    }


def _outdated(what: str) -> Conflict:
    return Conflict(
        f"The data changed since this change was proposed: {what}.", code="change_outdated"
    )


def _context(account: Account, context_id: Any) -> MemoryContext:
    context = MemoryContext.objects.filter(account_id=account.pk, pk=context_id).first()
    if context is None:
        raise NotFound("The change's context no longer exists.", code="context_not_found")
    return context


def _agent(account: Account, agent_id: Any) -> Agent:
    agent = Agent.objects.filter(account_id=account.pk, pk=agent_id).first()
    if agent is None:
        raise NotFound("The change's agent no longer exists.", code="agent_not_found")
    return agent


def _live(context: MemoryContext, ids: list[int]) -> dict[int, MemoryEntry]:
    return MemoryEntry.objects.defer("embedding").in_bulk(
        list(
            MemoryEntry.objects.filter(
                context=context, pk__in=ids, is_current=True, archived_at__isnull=True
            ).values_list("pk", flat=True)
        )
    )


# --- appliers ------------------------------------------------------------------------------


def dedup_merge_apply(*, account: Account, actor: Actor, payload: dict[str, Any]) -> dict[str, Any]:
    """Archive the absorbed entries into the survivor: ``merged_into`` (id and lineage) and
    ``merged_similarity`` in theirs, the absorbed ids listed in the survivor's ``absorbed``.
    409 ``would_lose_facts`` (nothing changed) when the survivor does not cover a statement of
    an absorbed entry (``memory.maintenance.fact_check``; checked again here: a change may have
    waited)."""
    context = _context(account, payload["context_id"])
    survivor_id = int(payload["survivor_id"])
    similarity = {int(a["id"]): float(a.get("similarity") or 0.0) for a in payload["absorbed"]}
    live = _live(context, [survivor_id, *similarity])
    if survivor_id not in live or any(i not in live for i in similarity):
        raise _outdated("an entry of the merge was changed, archived or deleted")
    survivor, absorbed = live[survivor_id], [live[i] for i in similarity]
    lost = fact_check.lost(
        fact_check.statements_check(
            [(e.pk, e.content) for e in absorbed], [(survivor.pk, survivor.content)]
        )
    )
    if lost:
        raise fact_check.refusal(lost)
    for entry in absorbed:
        ltm.entry_update(
            actor=actor,
            entry=entry,
            fields={
                "metadata": {
                    **entry.metadata,
                    "merged_into": survivor.pk,
                    "merged_into_lineage": str(survivor.lineage),
                    "merged_similarity": round(similarity[entry.pk], 6),
                }
            },
        )
    ltm.entry_update(
        actor=actor,
        entry=survivor,
        fields={
            "metadata": {
                **survivor.metadata,
                "absorbed": [*survivor.metadata.get("absorbed", []), *(e.pk for e in absorbed)],
            }
        },
    )
    # The archival reads the entries again: their metadata changed above.
    fresh = list(MemoryEntry.objects.defer("embedding").filter(pk__in=list(similarity)))
    ltm.entries_archive(actor=actor, context=context, entries=fresh, archived=True, reason="dedup")
    return {"merged": len(absorbed), "survivor_id": survivor.pk}


def rot_archive_apply(*, account: Account, actor: Actor, payload: dict[str, Any]) -> dict[str, Any]:
    """Archive the stale entries that are still current and not archived (the others were
    changed or archived meanwhile, and are skipped)."""
    context = _context(account, payload["context_id"])
    ids = [int(i) for i in payload["entry_ids"]]
    live = _live(context, ids)
    archived = ltm.entries_archive(
        actor=actor, context=context, entries=list(live.values()), archived=True, reason="rot"
    )
    return {"archived": archived, "skipped": len(ids) - len(live)}


def importance_decay_apply(
    *, account: Account, actor: Actor, payload: dict[str, Any]
) -> dict[str, Any]:
    """Set the decayed importances of the entries whose importance is still what it was when
    the decay was computed (one set-based UPDATE); the decay counts from ``computed_at``."""
    context = _context(account, payload["context_id"])
    rows = payload["entries"]
    ids = [int(r["id"]) for r in rows]
    sql = """
        UPDATE memory_memoryentry e SET importance = v.target,
            metadata = jsonb_set(coalesce(e.metadata, '{}'::jsonb), '{importance_decayed_at}',
                                 to_jsonb(%s::timestamptz))
        FROM unnest(%s::bigint[], %s::float8[], %s::float8[]) AS v(id, source, target)
        WHERE e.id = v.id AND e.context_id = %s AND e.is_current AND e.archived_at IS NULL
          AND abs(e.importance - v.source) < 1e-9
        RETURNING e.id
    """
    with transaction.atomic(), connection.cursor() as cursor:
        context_lock(context.pk)  # the writers' lock order: the context before its entries
        cursor.execute(
            sql,
            [
                payload["computed_at"],
                ids,
                [float(r["from"]) for r in rows],
                [float(r["to"]) for r in rows],
                context.pk,
            ],
        )
        done = [row[0] for row in cursor.fetchall()]
        audit_record(
            actor=actor,
            action="memory.entry.importance_decay",
            account_id=account.pk,
            target=context,
            changes={"entries": done},
        )
    return {"decayed": len(done), "skipped": len(ids) - len(done)}


def promotion_apply(*, account: Account, actor: Actor, payload: dict[str, Any]) -> dict[str, Any]:
    """Write the promoted short-term entries to their agent's own memory, each once (one
    promoted already, by an earlier approval or run, is skipped)."""
    agent = _agent(account, payload["agent_id"])
    done = {
        (str(i), str(c))
        for i, c in MemoryEntry.objects.filter(
            account_id=account.pk, metadata__source="short_term"
        ).values_list("metadata__short_term_id", "metadata__short_term_created_at")
    }
    items = [
        entry_input_from(item)
        for item in payload["items"]
        if (
            str(item["metadata"].get("short_term_id")),
            str(item["metadata"].get("short_term_created_at")),
        )
        not in done
    ]
    agent_actor = actor_for_agent(agent)
    context = ltm.agent_memory_context(actor=agent_actor)
    if context.is_archived:
        raise Conflict("The agent's own memory is archived.", code="context_archived")
    for start in range(0, len(items), ltm.MAX_BATCH):
        ltm.entries_write(
            actor=agent_actor, context=context, items=items[start : start + ltm.MAX_BATCH]
        )
    return {"promoted": len(items), "skipped": len(payload["items"]) - len(items)}


def agent_write_apply(*, account: Account, actor: Actor, payload: dict[str, Any]) -> dict[str, Any]:
    """Write the agent's memory as it asked (its own write, authored by it)."""
    agent = _agent(account, payload["agent_id"])
    context = _context(account, payload["context_id"])
    (entry,) = ltm.entries_write(
        actor=actor_for_agent(agent), context=context, items=[entry_input_from(payload["item"])]
    )
    return {"entry_id": entry.pk}


change_kind_register("dedup_merge", dedup_merge_apply, "Merge near-duplicate memories")
change_kind_register("promotion", promotion_apply, "Promote short-term memories")
change_kind_register("rot_archive", rot_archive_apply, "Archive stale memories")
change_kind_register("importance_decay", importance_decay_apply, "Decay importance")
change_kind_register("agent_write", agent_write_apply, "An agent's memory write")
