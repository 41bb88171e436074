"""Long-term memory's upkeep, steps of consolidation (``memory.maintenance.services.consolidation``
runs them, docs/memory/maintenance.md "Consolidation"): deduplication, rot, importance decay."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core.actors import Actor, actor_for_account
from core.transactions import retry_on_conflict
from memory.long_term.services.access import accesses_applied
from memory.maintenance import fact_check
from memory.maintenance.services import changes
from memory.maintenance.services.change_kinds import entry_view
from memory.models import ChangePolicy, MemoryContext, MemoryEntry
from memory.tuning import TUNING

DEDUP_MERGE, ROT_ARCHIVE, IMPORTANCE_DECAY = "dedup_merge", "rot_archive", "importance_decay"
# A pending change lists at most this many of its entries in ``before`` (its payload has all).
REVIEW_SHOWN = 200
# Each entry is compared with its nearest neighbours in its context (the HNSW index), as many as
# ``TUNING.upkeep.dedup_neighbours`` (memory.tuning).
# A decay changes nothing for entries used (or decayed) in the last hour: repeated runs are
# no-ops, not compounding rounding.
DECAY_MIN_SECONDS = 3600
# SQL of an entry's days without use, and of its staleness (docs/memory/maintenance.md).
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
    ``threshold`` alike, each entry against its nearest ``dedup_neighbours``."""
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
                "neighbours": TUNING.upkeep.dedup_neighbours,
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
    and ``merged_similarity`` in their metadata; the survivor lists them in ``absorbed``. An
    entry with a statement the survivor does not cover (``memory.maintenance.fact_check``: a number,
    a name, a fact of its own) is not a duplicate: it stays current (``kept_distinct``)."""
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
    entries = MemoryEntry.objects.defer("embedding").in_bulk(
        [x for ids in groups.values() for x in ids]
    )
    counts = {"pairs": len(pairs), "merged": 0, "kept_distinct": 0}
    actor = actor_for_account(account_id)
    contexts = MemoryContext.objects.in_bulk({e.context_id for e in entries.values()})
    held = {
        int(i)
        for payload in changes.pending_ids(account_id=account_id, kind=DEDUP_MERGE)
        for i in [payload.get("survivor_id"), *(a["id"] for a in payload.get("absorbed", []))]
    }
    for ids in groups.values():
        members = sorted((entries[i] for i in ids if i in entries), key=_survivor_key)
        if len(members) < 2:
            continue
        survivor, absorbed = members[0], members[1:]
        context = contexts[survivor.context_id]
        absorbed, statements, distinct = _covered(survivor, absorbed)
        counts["kept_distinct"] += len(distinct)
        if not absorbed:
            continue
        if dry_run:
            counts["merged"] += len(absorbed)
            continue
        if context.change_policy == ChangePolicy.REVIEW and held & {m.pk for m in members}:
            continue  # a merge of these entries waits for review already (or was rejected)
        submitted = _merge_submit(actor, context, survivor, absorbed, best, statements, distinct)
        _count(counts, submitted, "merged")
    return counts


def _covered(
    survivor: MemoryEntry, absorbed: list[MemoryEntry]
) -> tuple[list[MemoryEntry], list[fact_check.Checked], list[int]]:
    """The entries whose every statement the survivor covers (with the check of their
    statements), and the ids of the others, which stay current: dedup never rewrites a
    survivor, so a fact of an absorbed entry lives on only where it is already said. Embeds
    (one batch per group): outside any transaction."""
    checked = fact_check.statements_check(
        [(e.pk, e.content) for e in absorbed], [(survivor.pk, survivor.content)]
    )
    distinct = {c.entry_id for c in fact_check.lost(checked)}
    merged = [e for e in absorbed if e.pk not in distinct]
    kept = [c for c in checked if c.entry_id not in distinct]
    return merged, kept, [e.pk for e in absorbed if e.pk in distinct]


def _count(counts: dict[str, int], submitted: changes.Submitted, applied_key: str) -> None:
    if submitted.applied:
        counts[applied_key] += int(submitted.result.get(applied_key, 0))
    elif submitted.change is not None and submitted.change.is_open:
        counts["pending"] = counts.get("pending", 0) + 1


def _merge_submit(
    actor: Actor,
    context: MemoryContext,
    survivor: MemoryEntry,
    absorbed: list[MemoryEntry],
    best: dict[int, float],
    statements: list[fact_check.Checked],
    distinct: list[int],
) -> changes.Submitted:
    """One group's merge, applied or held for review (``dedup_merge``); ``after`` shows each
    absorbed statement with the survivor's statement that covers it, and the near-duplicates
    that stay current because they say something the survivor does not."""
    similarity = float(settings.MEMORY_DEDUP_SIMILARITY)
    return changes.change_submit(
        actor=actor,
        account_id=context.account_id,
        kind=DEDUP_MERGE,
        context=context,
        payload={
            "context_id": context.pk,
            "survivor_id": survivor.pk,
            "absorbed": [
                {"id": e.pk, "similarity": round(best.get(e.pk, 0.0), 6)} for e in absorbed
            ],
        },
        fingerprint=changes.fingerprint_of(
            DEDUP_MERGE, {"ids": sorted(e.pk for e in [survivor, *absorbed])}
        ),
        before={"entries": [entry_view(e) for e in [survivor, *absorbed]]},
        after={
            "entries": [entry_view(survivor)],
            "archived": [e.pk for e in absorbed],
            "statements": fact_check.statements_json(statements),
            "stayed_current": distinct,
        },
        members=[{**entry_view(e, 300), "kept": e is survivor} for e in [survivor, *absorbed]],
        reason=f"{len(absorbed) + 1} memories of context {context.name!r} are near-duplicates "
        f"(cosine similarity >= {similarity}): the most important (then the oldest) is kept, "
        "the others are archived into it; it says every statement they make."
        + (f" {len(distinct)} near-duplicates stay current: they say more." if distinct else ""),
    )


# --- rot -------------------------------------------------------------------------------------


def staleness(entry: MemoryEntry, now: datetime) -> float:
    """1 - (recency + importance) / 2, recency halving every MEMORY_RECENCY_HALF_LIFE_DAYS
    without use: 0 for an important memory used just now, 1 for an unimportant one unused for
    long. The SQL of ``consolidation_rot`` computes the same."""
    last = max(filter(None, (entry.created_at, entry.last_accessed_at)))
    idle_days = max(0.0, (now - last).total_seconds() / 86400)
    recency = 0.5 ** (idle_days / settings.MEMORY_RECENCY_HALF_LIFE_DAYS)
    return 1 - 0.5 * recency - 0.5 * entry.importance


@retry_on_conflict
def consolidation_rot(
    *, account_id: int, context_id: int | None = None, dry_run: bool = False
) -> dict[str, int]:
    """Archive the account's current entries whose staleness is at least
    MEMORY_ROT_STALENESS (in contexts that are not archived). Buffered reads are applied
    first: an entry read since the last flush is not stale."""
    accesses_applied()
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
    for entry in MemoryEntry.objects.defer("embedding").filter(pk__in=ids).order_by("pk"):
        by_context.setdefault(entry.context_id, []).append(entry)
    counts = {"archived": 0}
    for context in MemoryContext.objects.filter(pk__in=list(by_context)):
        stale = by_context[context.pk]
        if context.change_policy == ChangePolicy.REVIEW:
            held = {
                int(i)
                for payload in changes.pending_ids(
                    account_id=account_id, kind=ROT_ARCHIVE, context_id=context.pk
                )
                for i in payload.get("entry_ids", [])
            }
            stale = [e for e in stale if e.pk not in held]
            if not stale:
                continue
        _count(counts, _rot_submit(actor, context, stale, params["now"]), "archived")
    return counts


def _rot_submit(
    actor: Actor, context: MemoryContext, stale: list[MemoryEntry], now: datetime
) -> changes.Submitted:
    """One context's rot archival, applied or held for review (``rot_archive``)."""
    shown = stale[:REVIEW_SHOWN]
    threshold = float(settings.MEMORY_ROT_STALENESS)
    return changes.change_submit(
        actor=actor,
        account_id=context.account_id,
        kind=ROT_ARCHIVE,
        context=context,
        payload={"context_id": context.pk, "entry_ids": [e.pk for e in stale]},
        before={
            "entries": [
                {**entry_view(e, 300), "staleness": round(staleness(e, now), 4)} for e in shown
            ],
            "more": len(stale) - len(shown),
        },
        after={"entries": [], "archived": [e.pk for e in stale]},
        reason=f"{len(stale)} memories of context {context.name!r} reached a staleness of "
        f"{threshold} (unused for long and unimportant): they are archived, kept with their "
        "history, out of searches.",
    )


# --- importance decay ------------------------------------------------------------------------


@retry_on_conflict
def consolidation_decay(
    *, account_id: int | None = None, context_id: int | None = None, dry_run: bool = False
) -> dict[str, int]:
    """importance x 0.5 ^ (days unused / MEMORY_IMPORTANCE_HALF_LIFE_DAYS), where the days
    count from the latest of the entry's creation, its last read and its last decay
    (``metadata.importance_decayed_at``): however often it runs, an entry unused for one
    half-life has lost half its importance. One UPDATE over the current, unarchived entries;
    in contexts under review, a decay lowering an importance by more than
    MEMORY_REVIEW_DECAY_THRESHOLD is held as a pending change (``importance_decay``) instead.
    Buffered reads are applied first. Its UPDATE meets writers' row locks in another order:
    a deadlock runs it again, which decays nothing twice (the days count from the last decay)."""
    accesses_applied()
    review = MemoryContext.objects.filter(change_policy=ChangePolicy.REVIEW)
    if account_id is not None:
        review = review.filter(account_id=account_id)
    if context_id is not None:
        review = review.filter(pk=context_id)
    params: dict[str, Any] = {
        "now": timezone.now(),
        "half_life": float(settings.MEMORY_IMPORTANCE_HALF_LIFE_DAYS),
        "account": account_id,
        "context": context_id,
        "min_seconds": DECAY_MIN_SECONDS,
        "review": list(review.values_list("pk", flat=True)),
        "threshold": float(settings.MEMORY_REVIEW_DECAY_THRESHOLD),
    }
    since = (
        "greatest(e.created_at, coalesce(e.last_accessed_at, e.created_at), "
        "coalesce((e.metadata->>'importance_decayed_at')::timestamptz, e.created_at))"
    )
    target = f"""greatest(0.0, least(1.0, e.importance * power(0.5,
        extract(epoch from (%(now)s - {since})) / 86400.0 / %(half_life)s::float8)))"""
    held = (
        f"(e.context_id = ANY(%(review)s::bigint[]) AND e.importance - {target} "
        "> %(threshold)s::float8)"
    )
    where = f"""
        e.is_current AND e.archived_at IS NULL
        AND (%(account)s::bigint IS NULL OR e.account_id = %(account)s::bigint)
        AND (%(context)s::bigint IS NULL OR e.context_id = %(context)s::bigint)
        AND extract(epoch from (%(now)s - {since})) >= %(min_seconds)s
    """
    with connection.cursor() as cursor:
        if dry_run:
            cursor.execute(
                f"SELECT count(*) FILTER (WHERE NOT {held}), count(*) FILTER (WHERE {held}) "  # noqa: S608
                f"FROM memory_memoryentry e WHERE {where}",
                params,
            )
            decayed, pending = cursor.fetchone()
            return {"decayed": int(decayed), "dry_run": 1} | (
                {"pending": int(pending)} if pending else {}
            )
        cursor.execute(
            f"""
            UPDATE memory_memoryentry e SET
                importance = {target},
                metadata = jsonb_set(coalesce(e.metadata, '{{}}'::jsonb),
                    '{{importance_decayed_at}}', to_jsonb(%(now)s::timestamptz))
            WHERE {where} AND NOT {held}
            """,  # noqa: S608
            params,
        )
        counts = {"decayed": cursor.rowcount}
        if not params["review"]:
            return counts
        cursor.execute(
            f"SELECT e.id, e.context_id, e.importance, {target} FROM memory_memoryentry e "  # noqa: S608
            f"WHERE {where} AND {held} ORDER BY e.context_id, e.id",
            params,
        )
        by_context: dict[int, list[tuple[int, float, float]]] = {}
        for entry_id, entry_context, source, goal in cursor.fetchall():
            by_context.setdefault(entry_context, []).append((entry_id, source, goal))
    for context in MemoryContext.objects.filter(pk__in=list(by_context)):
        waiting = {
            int(row["id"])
            for payload in changes.pending_ids(
                account_id=context.account_id, kind=IMPORTANCE_DECAY, context_id=context.pk
            )
            for row in payload.get("entries", [])
        }
        rows = [row for row in by_context[context.pk] if row[0] not in waiting]
        if rows:
            _count(counts, _decay_submit(context, rows, params["now"]), "decayed")
    return counts


def _decay_submit(
    context: MemoryContext, rows: list[tuple[int, float, float]], now: datetime
) -> changes.Submitted:
    """One context's decays beyond the threshold, held for review (``importance_decay``)."""
    shown = {
        e.pk: e
        for e in MemoryEntry.objects.defer("embedding").filter(
            pk__in=[r[0] for r in rows[:REVIEW_SHOWN]]
        )
    }
    threshold = float(settings.MEMORY_REVIEW_DECAY_THRESHOLD)
    return changes.change_submit(
        actor=actor_for_account(context.account_id),
        account_id=context.account_id,
        kind=IMPORTANCE_DECAY,
        context=context,
        payload={
            "context_id": context.pk,
            "computed_at": now.isoformat(),
            "entries": [{"id": i, "from": a, "to": round(b, 6)} for i, a, b in rows],
        },
        fingerprint=changes.fingerprint_of(
            IMPORTANCE_DECAY, {"context": context.pk, "ids": [r[0] for r in rows]}
        ),
        before={"entries": [entry_view(shown[i]) for i, _, _ in rows if i in shown]},
        after={
            "entries": [
                {**entry_view(shown[i]), "importance": round(b, 6)}
                for i, _, b in rows
                if i in shown
            ]
        },
        reason=f"{len(rows)} memories of context {context.name!r} went unused long enough for "
        f"their importance to drop by more than {threshold} (half-life "
        f"{settings.MEMORY_IMPORTANCE_HALF_LIFE_DAYS} days).",
    )
