"""The memory router's reads: one search over every tier an agent may read, and the counts of
each tier (docs/memory.md, "Router").

Long-term memory is ranked by the search engine (``long_term_search``: its
``effective_relevance_score`` and components). The other tiers hold small, key-addressed JSON,
so they are matched by keyword in Python: the query and each entry's text (its key and its
value's JSON) go through the engine's analyser (``rag.keyword.analyze``) and the score is the
fraction of the query's distinct terms the entry contains. A tier whose store is down (working
memory's Redis) is skipped and reported ``unavailable``; the others still answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from core.actors import Actor
from core.errors import ValidationFailed
from memory import names
from memory import working_redis as wr
from memory.agents import acting_agent, session_of
from memory.context_access import visible_contexts
from memory.errors import MemoryUnavailable
from memory.models import MemoryEntry, ShortTermEntry
from memory.pool_access import visible_pools
from memory.redis_store import working_memory_available
from memory.selectors.long_term import LongTermFilters, long_term_search
from memory.selectors.working import read_session
from rag import keyword

WORKING, SHORT_TERM, LONG_TERM, SHARED = "working", "short_term", "long_term", "shared"
TIERS = (WORKING, SHORT_TERM, LONG_TERM, SHARED)
MAX_TOP_K = 100
# Keyword matching in Python reads at most this many short-term entries and pools (newest
# first): the router is a convenience over the tiers, not a scan of an account's history.
MAX_SCANNED = 2000

# Statuses of a tier in an answer.
OK, UNAVAILABLE, SKIPPED = "ok", "unavailable", "skipped"


@dataclass(frozen=True)
class RouterFilters:
    session_id: str = ""  # working memory (required for it) and short-term memory
    context_ids: tuple[int, ...] = ()
    entry_types: tuple[str, ...] = ()
    memory_types: tuple[str, ...] = ()  # long-term memory types and short-term memory types
    tags_any: tuple[str, ...] = ()
    pool_ids: tuple[str, ...] = ()
    occurred_from: datetime | None = None
    occurred_to: datetime | None = None

    @property
    def long_term_only(self) -> bool:
        """Filters only long-term entries have fields for: the other tiers cannot match them."""
        return bool(
            self.context_ids
            or self.entry_types
            or self.tags_any
            or self.occurred_from
            or self.occurred_to
        )


@dataclass
class RouterHit:
    tier: str
    id: str
    score: float
    components: dict[str, float]
    content: Any
    key: str = ""
    session_id: str = ""
    context_id: int | None = None
    pool_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RouterResult:
    results: list[RouterHit]
    tiers: dict[str, str]


def text_of(value: Any) -> str:
    """The text keyword matching sees in a JSON value: strings as they are, anything else as
    its JSON (keys included: an object's field names are words too)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def keyword_score(query_terms: set[str], *texts: str) -> float:
    """The fraction of the query's distinct terms found in ``texts`` (0 to 1)."""
    if not query_terms:
        return 0.0
    found = set()
    for text in texts:
        found.update(keyword.analyze(text))
    return round(len(query_terms & found) / len(query_terms), 6)


def tiers_validate(tiers: Iterable[str] | None) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(tiers)) if tiers else TIERS
    unknown = sorted(set(chosen) - set(TIERS))
    if unknown or not chosen:
        raise ValidationFailed(
            "Unknown memory tier.",
            code="invalid_tier",
            details={"choices": list(TIERS), "unknown": unknown},
        )
    return chosen


def _working_hits(actor: Actor, session_id: str, terms: set[str]) -> list[RouterHit]:
    namespace = session_of(actor, session_id)
    with working_memory_available():
        entries = read_session(namespace)
    hits = []
    for entry in entries:
        kind, name = wr.entry_kind(entry["name"])
        score = keyword_score(terms, name, text_of(entry["value"]))
        if score > 0:
            hits.append(
                RouterHit(
                    tier=WORKING,
                    id=entry["name"],
                    score=score,
                    components={"keyword": score},
                    content=entry["value"],
                    key=name,
                    session_id=session_id,
                    extra={"kind": kind},
                )
            )
    return hits


def _short_term_hits(actor: Actor, filters: RouterFilters, terms: set[str]) -> list[RouterHit]:
    agent = acting_agent(actor)
    entries = ShortTermEntry.objects.filter(agent=agent, expires_at__gt=timezone.now())
    if filters.session_id:
        entries = entries.filter(session_id=filters.session_id)
    if filters.memory_types:
        entries = entries.filter(memory_type__in=filters.memory_types)
    hits = []
    for entry in entries.order_by("-updated_at", "-id")[:MAX_SCANNED]:
        score = keyword_score(terms, entry.key, text_of(entry.value))
        if score > 0:
            hits.append(
                RouterHit(
                    tier=SHORT_TERM,
                    id=str(entry.pk),
                    score=score,
                    components={"keyword": score},
                    content=entry.value,
                    key=entry.key,
                    session_id=entry.session_id,
                    extra={"memory_type": entry.memory_type, "access_count": entry.access_count},
                )
            )
    return hits


def _long_term_hits(
    actor: Actor, query: str, top_k: int, filters: RouterFilters, threshold: float | None
) -> list[RouterHit]:
    long_term_types = tuple(t for t in filters.memory_types if t in MemoryEntry.MemoryType.values)
    if filters.memory_types and not long_term_types:
        return []  # only short-term memory types asked for
    found, _ = long_term_search(
        actor=actor,
        query=query,
        top_k=top_k,
        threshold=threshold,
        filters=LongTermFilters(
            context_ids=filters.context_ids,
            entry_types=filters.entry_types,
            memory_types=long_term_types,
            tags_any=filters.tags_any,
            occurred_from=filters.occurred_from,
            occurred_to=filters.occurred_to,
        ),
    )
    return [
        RouterHit(
            tier=LONG_TERM,
            id=str(hit.entry.pk),
            score=hit.score,
            components=hit.components,
            content=hit.entry.content if hit.entry.content else hit.entry.data,
            key=str(hit.entry.metadata.get("key", "")),
            context_id=hit.entry.context_id,
            extra={"entry_type": hit.entry.entry_type, "version": hit.entry.version},
        )
        for hit in found
    ]


def _shared_hits(actor: Actor, filters: RouterFilters, terms: set[str]) -> list[RouterHit]:
    pools = visible_pools(actor)
    if filters.pool_ids:
        pools = pools.filter(pool_id__in=filters.pool_ids)
    hits = []
    for pool in pools.order_by("-updated_at", "-id")[:MAX_SCANNED]:
        score = keyword_score(terms, pool.pool_id, pool.name, text_of(pool.data))
        if score > 0:
            hits.append(
                RouterHit(
                    tier=SHARED,
                    id=pool.pool_id,
                    score=score,
                    components={"keyword": score},
                    content=pool.data,
                    pool_id=pool.pool_id,
                    extra={"version": pool.version, "pool_type": pool.pool_type},
                )
            )
    return hits


def memory_search(
    *,
    actor: Actor,
    query: str,
    tiers: Sequence[str] | None = None,
    top_k: int = 10,
    threshold: float | None = None,
    filters: RouterFilters | None = None,
) -> RouterResult:
    """The best ``top_k`` memories for ``query`` across the chosen tiers, best score first.

    Working memory is searched only in ``filters.session_id`` (Redis has no cross-session
    index); a tier that cannot answer is reported ``unavailable`` (Redis down) or ``skipped``
    (working memory without a session) in ``tiers``."""
    acting_agent(actor)
    chosen = tiers_validate(tiers)
    if not query.strip():
        raise ValidationFailed("The query is empty.", code="empty_query")
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValidationFailed(f"top_k must be from 1 to {MAX_TOP_K}.", code="invalid_top_k")
    if threshold is not None and not 0 <= threshold <= 1:
        raise ValidationFailed("threshold must be from 0 to 1.", code="invalid_threshold")
    filters = filters or RouterFilters()
    if filters.session_id:
        names.check_session_id(filters.session_id)
    terms = set(keyword.analyze(query))
    status: dict[str, str] = {}
    hits: list[RouterHit] = []
    for tier in TIERS:
        if tier not in chosen:
            continue
        if (
            (filters.long_term_only and tier != LONG_TERM)
            or (filters.pool_ids and tier != SHARED)
            or (filters.memory_types and tier not in (SHORT_TERM, LONG_TERM))
        ):
            status[tier] = SKIPPED  # filtered on fields this tier does not have
            continue
        if tier == WORKING:
            if not filters.session_id:
                status[tier] = SKIPPED
                continue
            try:
                hits.extend(_working_hits(actor, filters.session_id, terms))
            except MemoryUnavailable:
                status[tier] = UNAVAILABLE
                continue
        elif tier == SHORT_TERM:
            hits.extend(_short_term_hits(actor, filters, terms))
        elif tier == LONG_TERM:
            hits.extend(_long_term_hits(actor, query, top_k, filters, threshold))
        else:
            hits.extend(_shared_hits(actor, filters, terms))
        status[tier] = OK
    if threshold is not None:
        hits = [hit for hit in hits if hit.score >= threshold]
    order = {tier: n for n, tier in enumerate(TIERS)}
    hits.sort(key=lambda h: (-h.score, order[h.tier], h.id))
    return RouterResult(results=hits[:top_k], tiers=status)


# --- stats -----------------------------------------------------------------------------------


def memory_stats(*, actor: Actor, session_id: str = "") -> dict[str, Any]:
    """Counts of every tier for the calling agent: its working memory in ``session_id`` (when
    given), its live short-term entries, the long-term contexts it may read, the pools it may
    read."""
    agent = acting_agent(actor)
    stats: dict[str, Any] = {}
    if session_id:
        namespace = session_of(actor, session_id)
        try:
            with working_memory_available():
                entries = read_session(namespace)
            stats[WORKING] = {"status": OK, "session_id": session_id, "keys": len(entries)}
        except MemoryUnavailable:
            stats[WORKING] = {"status": UNAVAILABLE, "session_id": session_id, "keys": None}
    else:
        stats[WORKING] = {"status": SKIPPED, "session_id": "", "keys": None}
    short = ShortTermEntry.objects.filter(agent=agent, expires_at__gt=timezone.now()).aggregate(
        entries=Count("id"),
        sessions=Count("session_id", distinct=True),
        accesses=Sum("access_count", default=0),
    )
    stats[SHORT_TERM] = {"status": OK, **short}
    contexts = visible_contexts(actor)
    counts = MemoryEntry.objects.filter(context__in=contexts.values("pk")).aggregate(
        current=Count("id", filter=Q(is_current=True, archived_at__isnull=True)),
        archived=Count("id", filter=Q(is_current=True, archived_at__isnull=False)),
        versions=Count("id"),
    )
    stats[LONG_TERM] = {"status": OK, "contexts": contexts.count(), **counts}
    pools = visible_pools(actor).aggregate(
        pools=Count("id"), bytes=Sum("data_size_bytes", default=0)
    )
    stats[SHARED] = {"status": OK, **pools}
    return stats
