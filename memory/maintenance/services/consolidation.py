"""Memory consolidation: the maintenance that moves memories between tiers and keeps long-term
memory lean (docs/memory/maintenance.md, "Consolidation"). Each step takes ``dry_run`` (count,
change nothing) and ``account_id`` (one account; None: every account), and returns counts. The
long-term steps (dedup, rot, decay) are ``memory.maintenance.services.upkeep``.

- ``consolidation_promote``: short-term entries read at least MEMORY_PROMOTION_MIN_ACCESSES
  times become long-term entries of their agent's own context, with their provenance in the
  metadata. An entry is promoted once: its (row id, creation time) is recorded in the promoted
  entry's metadata and checked before promoting (a short-term key stored again after it expired
  is a new entry, with a new creation time, and may be promoted again).
- expired short-term entries are deleted (``short_term_prune_expired``).
- ``consolidation_dedup``: current entries of one context whose embeddings have a cosine
  similarity of at least MEMORY_DEDUP_SIMILARITY are merged: the more important (then the
  older) survives, the others are archived with ``merged_into`` in their metadata.
- ``consolidation_rot``: entries whose staleness reaches MEMORY_ROT_STALENESS are archived.
- ``consolidation_decay``: importance decays exponentially with the time an entry went unused,
  one set-based UPDATE.

Every step of one account runs under a PostgreSQL advisory lock of that account, so two runs
(the job and ``POST /memory/consolidate``) never promote or merge the same entries twice.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence

from django.conf import settings
from django.db import connection

from core.actors import Actor, actor_for_agent
from core.errors import EngramError, ValidationFailed
from core.models import Account, Agent
from memory import names
from memory.agents import acting_agent
from memory.long_term import services as ltm
from memory.maintenance.services import changes
from memory.maintenance.services.change_kinds import entry_input_json
from memory.maintenance.services.upkeep import (
    consolidation_decay,
    consolidation_dedup,
    consolidation_rot,
)
from memory.models import ChangePolicy, MemoryContext, MemoryEntry, ShortTermEntry
from memory.roles import MANAGE_MEMORY
from memory.short_term.services import short_term_prune_expired

logger = logging.getLogger("engram.memory")

PROMOTE, PRUNE, DEDUP, ROT, DECAY = "promote", "prune", "dedup", "rot", "decay"
JOBS = (PROMOTE, PRUNE, DEDUP, ROT, DECAY)
PROMOTION = "promotion"  # the kind of change (``memory.maintenance.services.changes``)
_LOCK_NAMESPACE = 0x6D656D  # "mem": advisory locks of consolidation, keyed by account id

ENTRY_TYPE_OF: dict[str, str] = {
    ShortTermEntry.MemoryType.TASK_CONTEXT: MemoryEntry.EntryType.FACT,
    ShortTermEntry.MemoryType.CONVERSATION: MemoryEntry.EntryType.CONVERSATION_SUMMARY,
    ShortTermEntry.MemoryType.TOOL_RESULT: MemoryEntry.EntryType.TOOL_OUTPUT,
    ShortTermEntry.MemoryType.REFLECTION: MemoryEntry.EntryType.REFLECTION,
    ShortTermEntry.MemoryType.OBSERVATION: MemoryEntry.EntryType.OBSERVATION,
}


def jobs_validate(jobs: Sequence[str] | None) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(jobs)) if jobs else JOBS
    unknown = sorted(set(chosen) - set(JOBS))
    if unknown:
        raise ValidationFailed(
            "Unknown consolidation job.",
            code="invalid_job",
            details={"choices": list(JOBS), "unknown": unknown},
        )
    return chosen


@contextlib.contextmanager
def account_lock(account_id: int) -> Iterator[None]:
    """Serialise consolidation runs of one account (a session-level advisory lock)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, account_id])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_NAMESPACE, account_id])


def _accounts(account_id: int | None) -> list[int]:
    if account_id is not None:
        return [account_id]
    return list(Account.objects.order_by("pk").values_list("pk", flat=True))


# --- promotion -------------------------------------------------------------------------------


def _provenance(entry: ShortTermEntry) -> tuple[int, str]:
    return entry.pk, entry.created_at.isoformat()


def _promoted_already(account_id: int) -> set[tuple[int, str]]:
    rows = MemoryEntry.objects.filter(
        account_id=account_id, metadata__source="short_term"
    ).values_list("metadata__short_term_id", "metadata__short_term_created_at")
    return {(int(i), str(c)) for i, c in rows if i is not None and c is not None}


def _entry_input(entry: ShortTermEntry) -> ltm.EntryInput:
    value = entry.value
    if isinstance(value, str) and value.strip():
        content, data = f"{entry.key}: {value}", None
    else:
        content = f"{entry.key}: {json.dumps(value, ensure_ascii=False)}"
        data = value
    return ltm.EntryInput(
        content=content[: ltm.MAX_CONTENT_CHARS],
        data=data,
        entry_type=ENTRY_TYPE_OF.get(entry.memory_type, MemoryEntry.EntryType.FACT),
        source=MemoryEntry.Source.SYSTEM,
        metadata={
            "source": "short_term",
            "key": entry.key,
            "session_id": entry.session_id,
            "access_count": entry.access_count,
            "memory_type": entry.memory_type,
            "short_term_id": entry.pk,
            "short_term_created_at": entry.created_at.isoformat(),
        },
    )


def consolidation_promote(
    *, account_id: int, dry_run: bool = False, agent_id: int | None = None, session_id: str = ""
) -> dict[str, int]:
    """Promote the account's short-term entries (live or expired but not yet deleted) read at
    least MEMORY_PROMOTION_MIN_ACCESSES times, each once, into their agent's own context; only
    one agent's, or one session's of that agent, when given."""
    often_read = ShortTermEntry.objects.filter(
        account_id=account_id, access_count__gte=settings.MEMORY_PROMOTION_MIN_ACCESSES
    )
    if agent_id is not None:
        often_read = often_read.filter(agent_id=agent_id)
    if session_id:
        often_read = often_read.filter(session_id=session_id)
    candidates = list(often_read.order_by("agent_id", "pk"))
    done = _promoted_already(account_id)
    todo = [e for e in candidates if _provenance(e) not in done]
    counts = {"candidates": len(candidates), "promoted": len(todo) if dry_run else 0}
    if dry_run or not todo:
        return counts
    by_agent: dict[int, list[ShortTermEntry]] = {}
    for entry in todo:
        by_agent.setdefault(entry.agent_id, []).append(entry)
    agents = Agent.objects.in_bulk(list(by_agent))
    failed = 0
    for agent_id, entries in by_agent.items():
        # One agent's refusal (its own memory archived, its batch invalid) is its own: it is
        # counted and the others' promotions go on. Each batch is written all or none.
        try:
            promoted, pending = _promote_agent(agents[agent_id], entries)
            counts["promoted"] += promoted
            if pending:
                counts["pending"] = counts.get("pending", 0) + pending
        except EngramError as exc:
            if exc.status_code >= 500:
                raise  # a provider or store down: the whole run answers 503 and is retried
            failed += 1
            logger.warning(
                "promotion of agent %s's short-term entries refused: %s (%s)",
                agent_id,
                exc.message,
                exc.code,
            )
    if failed:
        counts["agents_failed"] = failed
    return counts


def _promote_agent(agent: Agent, entries: Sequence[ShortTermEntry]) -> tuple[int, int]:
    """Write one agent's promoted entries to its own memory; returns how many were written and
    how many changes wait for review (its memory's ``change_policy`` is ``review``)."""
    actor = actor_for_agent(agent)
    context = ltm.agent_memory_context(actor=actor)
    if context.is_archived:
        return 0, 0
    if context.change_policy == ChangePolicy.REVIEW:
        held = {
            (
                str(item["metadata"].get("short_term_id")),
                str(item["metadata"].get("short_term_created_at")),
            )
            for payload in changes.pending_ids(account_id=agent.account_id, kind=PROMOTION)
            if payload.get("agent_id") == agent.pk
            for item in payload.get("items", [])
        }
        entries = [e for e in entries if (str(e.pk), e.created_at.isoformat()) not in held]
        if not entries:
            return 0, 0
        submitted = _promotion_submit(actor, context, agent, entries)
        return 0, int(submitted.change is not None and submitted.change.is_open)
    promoted = 0
    for start in range(0, len(entries), ltm.MAX_BATCH):
        batch = entries[start : start + ltm.MAX_BATCH]
        ltm.entries_write(actor=actor, context=context, items=[_entry_input(e) for e in batch])
        promoted += len(batch)
    return promoted, 0


def _promotion_submit(
    actor: Actor, context: MemoryContext, agent: Agent, entries: Sequence[ShortTermEntry]
) -> changes.Submitted:
    """An agent's promotion held for review (``promotion``): the payload carries the entries
    themselves, so approving it works after the short-term entries expired."""
    items = [_entry_input(e) for e in entries]
    return changes.change_submit(
        actor=actor,
        account_id=agent.account_id,
        kind=PROMOTION,
        context=context,
        payload={"agent_id": agent.pk, "items": [entry_input_json(i) for i in items]},
        fingerprint=changes.fingerprint_of(
            PROMOTION, {"agent": agent.pk, "from": sorted(_provenance(e) for e in entries)}
        ),
        before={"entries": []},
        after={
            "entries": [
                {"content": i.content, "tags": list(i.tags), "entry_type": i.entry_type}
                for i in items
            ]
        },
        reason=f"{len(items)} short-term memories of agent {agent.name} were read at least "
        f"{settings.MEMORY_PROMOTION_MIN_ACCESSES} times: they become long-term memories of "
        "its own memory.",
    )


# --- one account, several steps --------------------------------------------------------------


CONTEXT_JOBS = (DEDUP, ROT, DECAY)


def consolidate(
    *,
    account_id: int,
    jobs: Sequence[str] | None = None,
    dry_run: bool = False,
    context_id: int | None = None,
) -> dict[str, dict[str, int]]:
    """Run the chosen steps (default all, in the order promote, prune, dedup, rot, decay) for
    one account, under its lock; returns each step's counts. With ``context_id``, only the
    steps on long-term entries (dedup, rot, decay), on that context's entries."""
    chosen = jobs_validate(jobs)
    if context_id is not None:
        chosen = tuple(job for job in chosen if job in CONTEXT_JOBS)
    scope = {"context_id": context_id}
    report: dict[str, dict[str, int]] = {}
    with account_lock(account_id):
        for job in JOBS:
            if job not in chosen:
                continue
            if job == PROMOTE:
                report[job] = consolidation_promote(account_id=account_id, dry_run=dry_run)
            elif job == PRUNE:
                report[job] = short_term_prune_expired(account_id=account_id, dry_run=dry_run)
            elif job == DEDUP:
                report[job] = consolidation_dedup(account_id=account_id, dry_run=dry_run, **scope)
            elif job == ROT:
                report[job] = consolidation_rot(account_id=account_id, dry_run=dry_run, **scope)
            else:
                report[job] = consolidation_decay(account_id=account_id, dry_run=dry_run, **scope)
    return report


def consolidate_for(
    *, actor: Actor, jobs: Sequence[str] | None = None, dry_run: bool = False
) -> dict[str, dict[str, int]]:
    """``consolidate`` for the actor's account: an agent whose key has the ``admin`` scope (403
    ``insufficient_scope`` otherwise), or a memory manager."""
    account_id = actor.account_id
    if actor.agent is None:
        actor.require(account_id, MANAGE_MEMORY)
    actor.require_scope("admin")
    return consolidate(account_id=account_id, jobs=jobs, dry_run=dry_run)


def consolidate_session(
    *, actor: Actor, session_id: str, dry_run: bool = False
) -> dict[str, dict[str, int]]:
    """The router's "consolidate a session": promote the calling agent's entries of one
    short-term session that were read often enough (under the account's lock)."""
    agent = acting_agent(actor)
    actor.require_scope("write")
    names.check_session_id(session_id)
    with account_lock(agent.account_id):
        return {
            PROMOTE: consolidation_promote(
                account_id=agent.account_id,
                dry_run=dry_run,
                agent_id=agent.pk,
                session_id=session_id,
            )
        }


def memory_consolidate(
    *,
    actor: Actor,
    session_id: str = "",
    jobs: Sequence[str] | None = None,
    dry_run: bool = False,
) -> dict[str, dict[str, int]]:
    """Consolidation on request (``POST /memory/consolidate``, the MCP tool): with
    ``session_id``, promote the calling agent's often-read entries of that session (the
    ``write`` scope); without, the chosen steps for the whole account (the ``admin`` scope)."""
    if session_id:
        if jobs:
            raise ValidationFailed(
                "A session's consolidation is its promotion: give jobs or session_id.",
                code="jobs_with_session",
            )
        return consolidate_session(actor=actor, session_id=session_id, dry_run=dry_run)
    return consolidate_for(actor=actor, jobs=jobs, dry_run=dry_run)


def consolidate_all(*, jobs: Sequence[str], dry_run: bool = False) -> dict[str, int]:
    """The periodic jobs: ``jobs`` for every account, counts summed."""
    totals: dict[str, int] = {}
    for account_id in _accounts(None):
        report = consolidate(account_id=account_id, jobs=jobs, dry_run=dry_run)
        for job, counts in report.items():
            for name, n in counts.items():
                if name == "dry_run":
                    totals["dry_run"] = 1
                    continue
                totals[f"{job}_{name}"] = totals.get(f"{job}_{name}", 0) + n
    return totals
