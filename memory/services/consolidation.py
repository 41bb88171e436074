"""Memory consolidation: the maintenance that moves memories between tiers and keeps long-term
memory lean (docs/memory.md, "Consolidation"). Each step takes ``dry_run`` (count, change
nothing) and ``account_id`` (one account; None: every account), and returns counts.

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
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.actors import Actor, actor_for_account, actor_for_agent
from core.errors import EngramError, ValidationFailed
from core.models import Account, Agent
from memory import names
from memory.agents import acting_agent
from memory.models import MemoryContext, MemoryEntry, ShortTermEntry
from memory.roles import MANAGE_MEMORY
from memory.services import long_term as ltm
from memory.services.short_term import short_term_prune_expired

logger = logging.getLogger("engram.memory")

PROMOTE, PRUNE, DEDUP, ROT, DECAY = "promote", "prune", "dedup", "rot", "decay"
JOBS = (PROMOTE, PRUNE, DEDUP, ROT, DECAY)
# Each entry is compared with this many nearest neighbours in its context (the HNSW index).
DEDUP_NEIGHBOURS = 8
# A decay changes nothing for entries used (or decayed) in the last hour: repeated runs are
# no-ops, not compounding rounding.
DECAY_MIN_SECONDS = 3600
_LOCK_NAMESPACE = 0x6D656D  # "mem": advisory locks of consolidation, keyed by account id

ENTRY_TYPE_OF: dict[str, str] = {
    ShortTermEntry.MemoryType.TASK_CONTEXT: MemoryEntry.EntryType.FACT,
    ShortTermEntry.MemoryType.CONVERSATION: MemoryEntry.EntryType.CONVERSATION_SUMMARY,
    ShortTermEntry.MemoryType.TOOL_RESULT: MemoryEntry.EntryType.TOOL_OUTPUT,
    ShortTermEntry.MemoryType.REFLECTION: MemoryEntry.EntryType.REFLECTION,
    ShortTermEntry.MemoryType.OBSERVATION: MemoryEntry.EntryType.OBSERVATION,
}

# SQL of an entry's days without use, and of its staleness (docs/memory.md).
_IDLE_DAYS = (
    "extract(epoch from (%(now)s - greatest(e.created_at, "
    "coalesce(e.last_accessed_at, e.created_at)))) / 86400.0"
)
_STALENESS = (
    f"(1 - 0.5 * power(0.5, ({_IDLE_DAYS}) / %(recency_half_life)s::float8) - 0.5 * e.importance)"
)


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
            counts["promoted"] += _promote_agent(agents[agent_id], entries)
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


def _promote_agent(agent: Agent, entries: Sequence[ShortTermEntry]) -> int:
    """Write one agent's promoted entries to its own memory; returns how many."""
    actor = actor_for_agent(agent)
    context = ltm.agent_memory_context(actor=actor)
    if context.is_archived:
        return 0
    promoted = 0
    for start in range(0, len(entries), ltm.MAX_BATCH):
        batch = entries[start : start + ltm.MAX_BATCH]
        ltm.entries_write(actor=actor, context=context, items=[_entry_input(e) for e in batch])
        promoted += len(batch)
    return promoted


# --- deduplication ---------------------------------------------------------------------------


def _similar_pairs(
    account_id: int, threshold: float, context_id: int | None = None
) -> list[tuple[int, int, float]]:
    """(entry, neighbour, similarity) of searchable entries of one context at least
    ``threshold`` alike, each entry against its nearest DEDUP_NEIGHBOURS."""
    sql = """
        SELECT a.id, n.id, n.similarity
        FROM memory_memoryentry a
        CROSS JOIN LATERAL (
            SELECT b.id, 1 - (b.embedding <=> a.embedding) AS similarity
            FROM memory_memoryentry b
            WHERE b.context_id = a.context_id AND b.id <> a.id
              AND b.is_current AND b.archived_at IS NULL AND b.embedding IS NOT NULL
              AND b.embedding_model = a.embedding_model
            ORDER BY b.embedding <=> a.embedding
            LIMIT %(neighbours)s
        ) n
        JOIN memory_memorycontext c ON c.id = a.context_id AND c.archived_at IS NULL
        WHERE a.account_id = %(account)s AND a.is_current AND a.archived_at IS NULL
          AND (%(context)s::bigint IS NULL OR a.context_id = %(context)s::bigint)
          AND a.embedding IS NOT NULL AND n.similarity >= %(threshold)s::float8
          AND a.id < n.id
        ORDER BY n.similarity DESC, a.id, n.id
    """
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "account": account_id,
                "context": context_id,
                "threshold": threshold,
                "neighbours": DEDUP_NEIGHBOURS,
            },
        )
        return [(int(a), int(b), float(s)) for a, b, s in cursor.fetchall()]


def _survivor_key(entry: MemoryEntry) -> tuple[float, datetime, int]:
    # The most important first; between equals the older (the first written) survives.
    return (-entry.importance, entry.created_at, entry.pk)


def consolidation_dedup(
    *, account_id: int, context_id: int | None = None, dry_run: bool = False
) -> dict[str, int]:
    """Merge near-duplicate current entries within each context: in each group of entries
    linked by a similarity of at least MEMORY_DEDUP_SIMILARITY, the most important (then the
    oldest) survives; the others are archived, ``merged_into`` (the survivor's id and lineage)
    and ``merged_similarity`` in their metadata; the survivor lists them in ``absorbed``."""
    pairs = _similar_pairs(account_id, float(settings.MEMORY_DEDUP_SIMILARITY), context_id)
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    best: dict[int, float] = {}
    for a, b, similarity in pairs:
        parent[find(a)] = find(b)
        best[a] = max(best.get(a, 0.0), similarity)
        best[b] = max(best.get(b, 0.0), similarity)
    groups: dict[int, list[int]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    entries = MemoryEntry.objects.in_bulk([x for ids in groups.values() for x in ids])
    absorbed_count = 0
    actor = actor_for_account(account_id)
    for ids in groups.values():
        members = sorted((entries[i] for i in ids if i in entries), key=_survivor_key)
        if len(members) < 2:
            continue
        survivor, absorbed = members[0], members[1:]
        absorbed_count += len(absorbed)
        if dry_run:
            continue
        for entry in absorbed:
            ltm.entry_update(
                actor=actor,
                entry=entry,
                fields={
                    "metadata": {
                        **entry.metadata,
                        "merged_into": survivor.pk,
                        "merged_into_lineage": str(survivor.lineage),
                        "merged_similarity": round(best.get(entry.pk, 0.0), 6),
                    }
                },
            )
        ltm.entry_update(
            actor=actor,
            entry=survivor,
            fields={
                "metadata": {
                    **survivor.metadata,
                    "absorbed": [
                        *survivor.metadata.get("absorbed", []),
                        *(e.pk for e in absorbed),
                    ],
                }
            },
        )
        context = MemoryContext.objects.get(pk=survivor.context_id)
        ltm.entries_archive(
            actor=actor, context=context, entries=absorbed, archived=True, reason="dedup"
        )
    return {"pairs": len(pairs), "merged": absorbed_count}


# --- rot -------------------------------------------------------------------------------------


def staleness(entry: MemoryEntry, now: datetime) -> float:
    """1 - (recency + importance) / 2, recency halving every MEMORY_RECENCY_HALF_LIFE_DAYS
    without use: 0 for an important memory used just now, 1 for an unimportant one unused for
    long. The SQL of ``consolidation_rot`` computes the same."""
    last = max(filter(None, (entry.created_at, entry.last_accessed_at)))
    idle_days = max(0.0, (now - last).total_seconds() / 86400)
    recency = 0.5 ** (idle_days / settings.MEMORY_RECENCY_HALF_LIFE_DAYS)
    return 1 - 0.5 * recency - 0.5 * entry.importance


def consolidation_rot(
    *, account_id: int, context_id: int | None = None, dry_run: bool = False
) -> dict[str, int]:
    """Archive the account's current entries whose staleness is at least
    MEMORY_ROT_STALENESS (in contexts that are not archived)."""
    params: dict[str, Any] = {
        "now": timezone.now(),
        "recency_half_life": float(settings.MEMORY_RECENCY_HALF_LIFE_DAYS),
        "threshold": float(settings.MEMORY_ROT_STALENESS),
        "account": account_id,
        "context": context_id,
    }
    sql = f"""
        SELECT e.id FROM memory_memoryentry e
        JOIN memory_memorycontext c ON c.id = e.context_id AND c.archived_at IS NULL
        WHERE e.account_id = %(account)s AND e.is_current AND e.archived_at IS NULL
          AND (%(context)s::bigint IS NULL OR e.context_id = %(context)s::bigint)
          AND {_STALENESS} >= %(threshold)s::float8
        ORDER BY e.id
    """  # noqa: S608  (fixed SQL; values are parameters)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    if dry_run or not ids:
        return {"archived": len(ids)}
    actor = actor_for_account(account_id)
    by_context: dict[int, list[MemoryEntry]] = {}
    for entry in MemoryEntry.objects.filter(pk__in=ids):
        by_context.setdefault(entry.context_id, []).append(entry)
    archived = 0
    for context in MemoryContext.objects.filter(pk__in=list(by_context)):
        archived += ltm.entries_archive(
            actor=actor,
            context=context,
            entries=by_context[context.pk],
            archived=True,
            reason="rot",
        )
    return {"archived": archived}


# --- importance decay ------------------------------------------------------------------------


def consolidation_decay(
    *, account_id: int | None = None, context_id: int | None = None, dry_run: bool = False
) -> dict[str, int]:
    """importance x 0.5 ^ (days unused / MEMORY_IMPORTANCE_HALF_LIFE_DAYS), where the days
    count from the latest of the entry's creation, its last read and its last decay
    (``metadata.importance_decayed_at``): however often it runs, an entry unused for one
    half-life has lost half its importance. One UPDATE over the current, unarchived entries."""
    params: dict[str, Any] = {
        "now": timezone.now(),
        "half_life": float(settings.MEMORY_IMPORTANCE_HALF_LIFE_DAYS),
        "account": account_id,
        "context": context_id,
        "min_seconds": DECAY_MIN_SECONDS,
    }
    since = (
        "greatest(e.created_at, coalesce(e.last_accessed_at, e.created_at), "
        "coalesce((e.metadata->>'importance_decayed_at')::timestamptz, e.created_at))"
    )
    where = f"""
        e.is_current AND e.archived_at IS NULL
        AND (%(account)s::bigint IS NULL OR e.account_id = %(account)s::bigint)
        AND (%(context)s::bigint IS NULL OR e.context_id = %(context)s::bigint)
        AND extract(epoch from (%(now)s - {since})) >= %(min_seconds)s
    """
    with connection.cursor() as cursor:
        if dry_run:
            cursor.execute(f"SELECT count(*) FROM memory_memoryentry e WHERE {where}", params)  # noqa: S608
            return {"decayed": int(cursor.fetchone()[0]), "dry_run": 1}
        cursor.execute(
            f"""
            UPDATE memory_memoryentry e SET
                importance = greatest(0.0, least(1.0, e.importance * power(0.5,
                    extract(epoch from (%(now)s - {since})) / 86400.0 / %(half_life)s::float8))),
                metadata = jsonb_set(coalesce(e.metadata, '{{}}'::jsonb),
                    '{{importance_decayed_at}}', to_jsonb(%(now)s::timestamptz))
            WHERE {where}
            """,  # noqa: S608
            params,
        )
        return {"decayed": cursor.rowcount}


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
