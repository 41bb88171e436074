"""Long-term memory's upkeep, steps of consolidation (``memory.services.consolidation`` runs
them, docs/memory.md "Consolidation"): deduplication, rot, importance decay."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.actors import actor_for_account
from memory.models import MemoryContext, MemoryEntry
from memory.services import long_term as ltm

# Each entry is compared with this many nearest neighbours in its context (the HNSW index).
DEDUP_NEIGHBOURS = 8
# A decay changes nothing for entries used (or decayed) in the last hour: repeated runs are
# no-ops, not compounding rounding.
DECAY_MIN_SECONDS = 3600
# SQL of an entry's days without use, and of its staleness (docs/memory.md).
_IDLE_DAYS = (
    "extract(epoch from (%(now)s - greatest(e.created_at, "
    "coalesce(e.last_accessed_at, e.created_at)))) / 86400.0"
)
_STALENESS = (
    f"(1 - 0.5 * power(0.5, ({_IDLE_DAYS}) / %(recency_half_life)s::float8) - 0.5 * e.importance)"
)


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
