"""One search across the memory tiers, every one through an index (docs/memory/router.md,
"Search").

- Long-term entries: the engine's vector stage (HNSW) and BM25 stage (``MEMORY_ENTRIES``).
- Short-term entries: BM25 over the agent's index (``SHORT_TERM_ENTRIES``), live entries only.
- Shared pools: BM25 over the leaves of the pools the agent may read (``POOL_LEAVES``): a hit is
  one value at its dot path, never a whole pool.
- Working memory: the session's keys, scanned (a session is small by construction) and scored
  by the same BM25 in memory (``rag.keyword.bm25_rank``).

**One ranking.** BM25 scores of different corpora do not compare, because idf depends on the
corpus. Here every keyword stage takes its idf from the *merged* statistics of every corpus
searched (``rag.keyword.CorpusStats.merged``), so all keyword hits form one list ordered by
comparable scores. Long-term memory's vector hits form a second list. The two lists are fused
by reciprocal rank fusion (long-term search's weights, ``TUNING.search``): a hit's fused score
depends on its ranks in those two lists only, whatever its tier. ``relevance`` (0 to 1) is what
``threshold`` filters on: the keyword score over its ceiling for the query (the fraction of the
query's weight matched), or a long-term entry's ``effective_relevance_score`` when higher.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from core.actors import Actor
from core.db_router import replica_reads
from core.embeddings import get_embedding_provider
from core.embeddings.generations import GenerationMoved
from core.errors import ValidationFailed
from core.search import list_length_check, search_query_check, threshold_check, top_k_check
from memory import names
from memory.agents import acting_agent, session_of
from memory.context.selectors.router import (
    LONG_TERM,
    OK,
    SHARED,
    SHORT_TERM,
    SKIPPED,
    TIERS,
    UNAVAILABLE,
    WORKING,
    RouterFilters,
    tiers_validate,
)
from memory.errors import MemoryUnavailable
from memory.long_term.relevance import effective_relevance_score, relevance_components, scoring_rows
from memory.long_term.selectors import LongTermFilters, fusion_defaults, searchable_contexts
from memory.models import MemoryEntry, MemoryPool, ShortTermEntry
from memory.pools.access import live, readable_by
from memory.redis_store import working_memory_available
from memory.spaces import MEMORY_ENTRIES, POOL_LEAVES, SHORT_TERM_ENTRIES, short_term_text
from memory.tuning import TUNING
from memory.working import store as wr
from memory.working.selectors import read_session
from rag import keyword
from rag.fusion import rank_fusion
from rag.keyword import CorpusStats, KeywordHit
from rag.tuning import TUNING as RAG_TUNING
from rag.vector import vector_search

# Candidates each list keeps per requested hit, and at least: ``TUNING.tiers`` (memory.tuning).


@dataclass
class MemoryHit:
    """One hit of a search across tiers, with what explains its place."""

    tier: str
    unit_id: int | str  # entry id (long- and short-term), leaf id (pools), key (working)
    keyword_score: float | None = None
    keyword_rank: int | None = None
    vector_score: float | None = None
    vector_rank: int | None = None
    score: float = 0.0  # fused
    relevance: float = 0.0
    tier_rank: int = 0
    components: dict[str, float] = field(default_factory=dict)
    content: Any = None
    key: str = ""
    path: str = ""
    session_id: str = ""
    context_id: int | None = None
    pool_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    entry: MemoryEntry | None = None  # long-term hits: the entry (no vector), for access logs

    @property
    def id(self) -> str:
        return str(self.unit_id) if self.tier != SHARED else self.pool_id

    @property
    def explanation(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "tier_rank": self.tier_rank,
            "keyword_rank": self.keyword_rank,
            "keyword_score": self.keyword_score,
            "vector_rank": self.vector_rank,
            "vector_score": self.vector_score,
            "relevance": self.relevance,
            "fused_score": self.score,
            "fusion": "rrf",
            "rrf_k": RAG_TUNING.fusion.rrf_k,
        }


@dataclass
class MemorySearch:
    results: list[MemoryHit]
    tiers: dict[str, str]
    timings_ms: dict[str, float]
    # The merged statistics of every corpus searched, for the query's terms (the shared idf).
    stats: CorpusStats = field(default_factory=CorpusStats)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


@dataclass
class _Tier:
    """One tier's corpus for this query: how to read its statistics and its keyword hits."""

    name: str
    stats: CorpusStats
    hits: list[KeywordHit] = field(default_factory=list)


# Expired short-term entries keep their postings until the clean-up job deletes them; up to this
# many are left out by id, without joining every posting read to its entry.
EXPIRED_BY_ID = 1000


def _short_term_filter(
    agent_id: int, filters: RouterFilters, now: datetime
) -> tuple[str, dict[str, Any]]:
    """Postings of the agent's live entries (in the session, of the types, when given). Without
    those filters, the few expired entries not yet deleted are named by id: the postings are then
    read in impact order without a join (docs/benchmarks-log.md, "Search across tiers")."""
    if not filters.session_id and not filters.memory_types:
        expired = list(
            ShortTermEntry.objects.filter(agent_id=agent_id, expires_at__lte=now)
            .order_by()
            .values_list("pk", flat=True)[: EXPIRED_BY_ID + 1]
        )
        if not expired:
            return "", {}
        if len(expired) <= EXPIRED_BY_ID:
            return "p.entry_id <> ALL(%(st_expired)s::bigint[])", {"st_expired": expired}
    parts = ["u.expires_at > %(st_now)s"]
    params: dict[str, Any] = {"st_now": now}
    if filters.session_id:
        parts.append("u.session_id = %(st_session)s")
        params["st_session"] = filters.session_id
    if filters.memory_types:
        parts.append("u.memory_type = ANY(%(st_types)s)")
        params["st_types"] = list(filters.memory_types)
    return " AND ".join(parts), params


def _pool_filter(actor: Actor, filters: RouterFilters) -> tuple[str, dict[str, Any]]:
    """Postings of the live pools the actor may read (the access rules of
    ``memory.pools.access``), and among ``pool_ids`` when given.

    The account's pools are counted first, readable or not, and the filter names the shorter
    list as a constant array: the readable pools, or the others (none hidden: no filter, and no
    list read). PostgreSQL hashes a constant array and still walks each term's postings in impact
    order down to the per-term cut; as a subquery the filter became a semi join that read every
    posting of every query term (docs/benchmarks-log.md, "Search across tiers")."""
    agent = acting_agent(actor)
    readable = live() if actor.agent is None else live() & readable_by(actor.agent.pk)
    if filters.pool_ids:
        readable &= Q(pool_id__in=filters.pool_ids)
    pools = MemoryPool.objects.filter(account_id=agent.account_id).order_by()
    counts = pools.aggregate(
        shown=Count("pk", filter=readable), hidden=Count("pk", filter=~readable)
    )
    if not counts["hidden"]:
        return "", {}
    if counts["hidden"] < counts["shown"]:
        hidden = list(pools.exclude(readable).values_list("pk", flat=True))
        return "p.pool_id <> ALL(%(hidden_pools)s::bigint[])", {"hidden_pools": hidden}
    shown = list(pools.filter(readable).values_list("pk", flat=True))
    return "p.pool_id = ANY(%(shown_pools)s::bigint[])", {"shown_pools": shown}


def _long_term_types(filters: RouterFilters) -> tuple[str, ...] | None:
    """Long-term memory types asked for; None when only short-term ones are."""
    kept = tuple(t for t in filters.memory_types if t in MemoryEntry.MemoryType.values)
    return None if filters.memory_types and not kept else kept


def _active_tiers(chosen: Sequence[str], filters: RouterFilters) -> dict[str, str]:
    """Each tier's status before searching: ``ok`` to search, or ``skipped``."""
    status: dict[str, str] = {}
    for tier in TIERS:
        if tier not in chosen:
            continue
        if (
            (filters.long_term_only and tier != LONG_TERM)
            or (filters.pool_ids and tier != SHARED)
            or (filters.memory_types and tier not in (SHORT_TERM, LONG_TERM))
            or (tier == WORKING and not filters.session_id)
            or (tier == LONG_TERM and _long_term_types(filters) is None)
        ):
            status[tier] = SKIPPED
        else:
            status[tier] = OK
    return status


@replica_reads
def memory_search(
    *,
    actor: Actor,
    query: str,
    tiers: Sequence[str] | None = None,
    top_k: int = 10,
    threshold: float | None = None,
    filters: RouterFilters | None = None,
    query_vector: np.ndarray | None = None,
) -> MemorySearch:
    """The best ``top_k`` memories for ``query`` across the chosen tiers (module docstring).

    Working memory is searched only in ``filters.session_id`` (Redis has no cross-session
    index); a tier that cannot answer is reported ``unavailable`` (Redis down) or ``skipped``
    (working memory without a session, a filter on fields the tier does not have)."""
    agent = acting_agent(actor)
    chosen = tiers_validate(tiers)
    search_query_check(query)
    if not query.strip():
        raise ValidationFailed("The query is empty.", code="empty_query")
    top_k_check(top_k)
    threshold_check(threshold, minimum=0.0, maximum=1.0)
    filters = filters or RouterFilters()
    for name in ("context_ids", "entry_types", "memory_types", "tags_any", "pool_ids"):
        list_length_check(name, getattr(filters, name))
    if filters.session_id:
        names.check_session_id(filters.session_id)
    status = _active_tiers(chosen, filters)
    timings: dict[str, float] = {}
    depth = max(TUNING.tiers.min_candidates, top_k * TUNING.tiers.candidate_factor)
    terms = keyword.analyze(query)
    now = timezone.now()

    # Statistics of every corpus searched, merged: one idf for every keyword stage.
    started = time.perf_counter()
    lt_types = _long_term_types(filters) or ()
    lt_filters = LongTermFilters(
        context_ids=filters.context_ids,
        entry_types=filters.entry_types,
        memory_types=lt_types,
        tags_any=filters.tags_any,
        occurred_from=filters.occurred_from,
        occurred_to=filters.occurred_to,
    )
    scopes: dict[str, list[int]] = {}
    corpora: dict[str, _Tier] = {}
    session: list[dict[str, Any]] = []
    if status.get(WORKING) == OK:
        try:
            with working_memory_available():
                session = read_session(session_of(actor, filters.session_id))
        except MemoryUnavailable:
            status[WORKING] = UNAVAILABLE
    working_texts = [
        short_term_text(wr.entry_kind(e["name"])[1] or e["name"], e["value"]) for e in session
    ]
    if status.get(WORKING) == OK:
        analysed = [keyword.chunk_terms(text) for text in working_texts]
        corpora[WORKING] = _Tier(WORKING, keyword.texts_stats(analysed, terms))
    if status.get(SHORT_TERM) == OK:
        scopes[SHORT_TERM] = [agent.pk]
        corpora[SHORT_TERM] = _Tier(
            SHORT_TERM,
            keyword.corpus_stats(space=SHORT_TERM_ENTRIES, scope_ids=[agent.pk], terms=terms),
        )
    if status.get(LONG_TERM) == OK:
        scopes[LONG_TERM] = searchable_contexts(actor, filters.context_ids)
        corpora[LONG_TERM] = _Tier(
            LONG_TERM,
            keyword.corpus_stats(space=MEMORY_ENTRIES, scope_ids=scopes[LONG_TERM], terms=terms),
        )
    if status.get(SHARED) == OK:
        scopes[SHARED] = [agent.account_id]
        corpora[SHARED] = _Tier(
            SHARED,
            keyword.corpus_stats(space=POOL_LEAVES, scope_ids=[agent.account_id], terms=terms),
        )
    merged = CorpusStats.merged(*(tier.stats for tier in corpora.values()))
    ceiling = merged.upper_bound(terms)
    timings["statistics"] = _ms(started)

    # The keyword stage of every tier, on the shared idf.
    started = time.perf_counter()
    if WORKING in corpora:
        corpora[WORKING].hits = keyword.bm25_rank(
            query=query, texts=working_texts, idf_stats=merged
        )[:depth]
    conditions: dict[str, Callable[[], tuple[str, dict[str, Any]]]] = {
        SHORT_TERM: lambda: _short_term_filter(agent.pk, filters, now),
        LONG_TERM: lt_filters.condition,
        SHARED: lambda: _pool_filter(actor, filters),
    }
    for tier, space in (
        (SHORT_TERM, SHORT_TERM_ENTRIES),
        (LONG_TERM, MEMORY_ENTRIES),
        (SHARED, POOL_LEAVES),
    ):
        # No query term in the tier's corpus (no pool at all, say): BM25 has nothing to find.
        if tier not in corpora or not corpora[tier].stats.df:
            continue
        condition, params = conditions[tier]()
        corpora[tier].hits = keyword.keyword_search(
            space=space,
            scope_ids=scopes[tier],
            query=query,
            limit=depth,
            filter_sql=condition,
            filter_params=params,
            stats=corpora[tier].stats,
            idf_stats=merged,
        )
    timings["keyword"] = _ms(started)

    # Long-term memory's vector stage.
    vector: list[tuple[int, float]] = []
    if LONG_TERM in corpora and scopes[LONG_TERM]:
        if query_vector is None:
            started = time.perf_counter()
            query_vector = get_embedding_provider().embed_query(query)
            timings["embed"] = _ms(started)
        started = time.perf_counter()
        condition, params = lt_filters.condition()
        search_vectors = functools.partial(
            vector_search,
            space=MEMORY_ENTRIES,
            scope_ids=scopes[LONG_TERM],
            limit=depth,
            filter_sql=condition,
            filter_params=params,
        )
        try:
            vector = search_vectors(query_vector=query_vector, raise_moved=True)
        except GenerationMoved:
            # A cut-over came between embedding the query and searching: once more, with the
            # model that is current now.
            vector = search_vectors(query_vector=get_embedding_provider().embed_query(query))
        timings["vector"] = _ms(started)

    started = time.perf_counter()
    hits = _fuse(corpora, vector, ceiling)
    timings["fusion"] = _ms(started)

    started = time.perf_counter()
    _score_long_term(hits, now)
    if threshold is not None:
        hits = [hit for hit in hits if hit.relevance >= threshold]
    hits = hits[:top_k]
    _hydrate(hits, session, filters.session_id)
    timings["hydrate"] = _ms(started)
    return MemorySearch(results=hits, tiers=status, timings_ms=timings, stats=merged)


def _fuse(
    corpora: dict[str, _Tier], vector: list[tuple[int, float]], ceiling: float
) -> list[MemoryHit]:
    """One keyword list of every tier's hits (comparable scores), long-term's vector list,
    fused by weighted reciprocal rank fusion (rag's); best first."""
    order = {tier: n for n, tier in enumerate(TIERS)}
    found: dict[tuple[str, int | str], MemoryHit] = {}
    for tier in corpora.values():
        for tier_rank, kw in enumerate(tier.hits, start=1):
            hit = MemoryHit(tier=tier.name, unit_id=kw.unit_id, tier_rank=tier_rank)
            hit.keyword_score = round(kw.score, 6)
            hit.relevance = round(min(1.0, kw.score / ceiling), 6) if ceiling > 0 else 0.0
            found[(tier.name, kw.unit_id)] = hit
    ranked = sorted(
        found.values(), key=lambda h: (-(h.keyword_score or 0.0), order[h.tier], str(h.unit_id))
    )
    for rank, hit in enumerate(ranked, start=1):
        hit.keyword_rank = rank
    for rank, (entry_id, similarity) in enumerate(vector, start=1):
        known = found.get((LONG_TERM, entry_id))
        if known is None:
            known = found[(LONG_TERM, entry_id)] = MemoryHit(tier=LONG_TERM, unit_id=entry_id)
        known.vector_rank, known.vector_score = rank, round(similarity, 6)
    # rag's fusion (``rag.fusion.rank_fusion``) over the two lists, each hit by its position in
    # ``found``: the keyword list in keyword rank order, the vector list in its own.
    index = {key: n for n, key in enumerate(found)}
    keys = list(found)
    defaults = fusion_defaults()
    total = sum(defaults.values())
    fused = rank_fusion(
        {
            "keyword": [(index[(h.tier, h.unit_id)], 0.0) for h in ranked],
            "vector": [(index[(LONG_TERM, entry_id)], 0.0) for entry_id, _ in vector],
        },
        method="rrf",
        weights={name: value / total for name, value in defaults.items()},
        rrf_k=RAG_TUNING.fusion.rrf_k,
    )
    for n, score in fused:
        found[keys[n]].score = round(score, 8)
    return sorted(
        found.values(),
        key=lambda h: (-h.score, -h.relevance, order[h.tier], str(h.unit_id)),
    )


def _score_long_term(hits: list[MemoryHit], now: datetime) -> None:
    """Long-term hits' relevance components (docs/memory/router.md: similarity, importance,
    confidence, recency) and their effective score as relevance when it is higher."""
    long_term = [hit for hit in hits if hit.tier == LONG_TERM]
    rows = scoring_rows([int(hit.unit_id) for hit in long_term], now)
    tier_ranks = sorted(long_term, key=lambda h: -h.score)
    for tier_rank, hit in enumerate(tier_ranks, start=1):
        hit.tier_rank = tier_rank
        row = rows.get(int(hit.unit_id))
        if row is None:
            continue
        importance, confidence, idle_days = row
        similarity = max(hit.vector_score or 0.0, hit.relevance)
        hit.components = relevance_components(
            similarity=max(0.0, min(1.0, similarity)),
            importance=importance,
            confidence=confidence,
            idle_days=idle_days,
        )
        hit.relevance = max(hit.relevance, effective_relevance_score(hit.components))


def _hydrate(hits: list[MemoryHit], session: list[dict[str, Any]], session_id: str) -> None:
    """Each hit's content and identity, read for the hits kept only (no vectors)."""
    by_tier: dict[str, list[MemoryHit]] = {}
    for hit in hits:
        by_tier.setdefault(hit.tier, []).append(hit)
    for hit in by_tier.get(WORKING, []):
        held = session[int(hit.unit_id)]
        kind, name = wr.entry_kind(held["name"])
        hit.unit_id, hit.key, hit.content = held["name"], name, held["value"]
        hit.session_id, hit.extra = session_id, {"kind": kind}
        hit.components = {"keyword": hit.relevance}
    if SHORT_TERM in by_tier:
        rows = ShortTermEntry.objects.in_bulk([int(h.unit_id) for h in by_tier[SHORT_TERM]])
        for hit in by_tier[SHORT_TERM]:
            entry = rows.get(int(hit.unit_id))
            if entry is None:
                continue
            hit.key, hit.content, hit.session_id = entry.key, entry.value, entry.session_id
            hit.extra = {"memory_type": entry.memory_type, "access_count": entry.access_count}
            hit.components = {"keyword": hit.relevance}
    if LONG_TERM in by_tier:
        entries = MemoryEntry.objects.defer("embedding").in_bulk(
            [int(h.unit_id) for h in by_tier[LONG_TERM]]
        )
        for hit in by_tier[LONG_TERM]:
            found = entries.get(int(hit.unit_id))
            if found is None:
                continue
            hit.entry = found
            hit.content = found.content if found.content else found.data
            hit.key = str(found.metadata.get("key", ""))
            hit.context_id = found.context_id
            hit.extra = {"entry_type": found.entry_type, "version": found.version}
    if SHARED in by_tier:
        _hydrate_leaves(by_tier[SHARED])
    hits[:] = [
        hit
        for hit in hits
        if hit.tier == WORKING
        or (hit.tier == LONG_TERM and hit.entry is not None)
        or (hit.tier == SHORT_TERM and hit.key)
        or (hit.tier == SHARED and hit.pool_id)
    ]


def _hydrate_leaves(hits: list[MemoryHit]) -> None:
    """Pool hits: the pool's id, the leaf's path and its value read from the pool's data at
    that path (``data #> path``: the value is never copied into the index)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.id, p.pool_id, l.path, (p.data #> string_to_array(l.path, '.'))::text, "
            "p.version, p.pool_type FROM memory_poolleaf l "
            "JOIN memory_memorypool p ON p.id = l.pool_id WHERE l.id = ANY(%s)",
            [[int(h.unit_id) for h in hits]],
        )
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    for hit in hits:
        row = rows.get(int(hit.unit_id))
        if row is None:
            continue
        pool_id, path, text, version, pool_type = row
        value = json.loads(text) if text is not None else None
        hit.pool_id, hit.path, hit.key, hit.content = pool_id, path, path, value
        hit.extra = {"version": version, "pool_type": pool_type, "leaf_id": int(hit.unit_id)}
        hit.components = {"keyword": hit.relevance}
