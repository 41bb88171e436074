"""Long-term memory reads: contexts an actor may see, entries, history, and hybrid search that
explains every hit (``effective_relevance_score`` and its components, docs/memory/long-term.md)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import QuerySet
from django.utils import timezone

from core.actors import Actor
from core.db_router import read_connection, read_rows_binary, replica_reads
from core.errors import NotFound, PermissionDenied, ValidationFailed
from memory.long_term.context_access import readable_contexts, visible_contexts
from memory.long_term.entry_loading import entries_by_id
from memory.long_term.indexing import entry_text, text_sha
from memory.long_term.relevance import (
    best_rows,
    effective_relevance_score,
    relevance_components,
    scoring_rows,
)
from memory.models import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemorySnapshot,
)
from memory.spaces import MEMORY_ENTRIES
from memory.tuning import TUNING
from rag import granularity, late_interaction
from rag.analysis import asks_for_several
from rag.graph.chunks import uses_graph
from rag.graph.retrieval import DEFAULT_MAX_HOPS, GRAPH, max_hops_check, stages_check
from rag.graph.staged import staged_rank
from rag.search import (
    DEFAULT_FUSION,
    FUSED_MODES,
    RankedHit,
    fusion_weights,
    search_options_validate,
)
from rag.spaces import space_weights
from rag.tuning import TUNING as RAG_TUNING
from rag.visibility import visibility_of

# The modes whose scores the session and speaker lifts adjust (fused scores, 0 to 1).
LIFTED_MODES = frozenset({*FUSED_MODES, GRAPH})
# Search's ranking weights, lifts and depths are tunables (``memory.tuning``, ``TUNING.search``):
# fusion weights, candidates, the speaker lift and the session diversity, each with its evidence.
# The bounds of one search: hits ranked, candidates per stage.
MAX_RANKED = 500
MAX_DEPTH = 1000


def fusion_defaults() -> dict[str, float]:
    """Hybrid fusion's stage weights for memory entries when the caller gives none, as tuned now
    (``TUNING.search``)."""
    return {"vector": TUNING.search.vector_weight, "keyword": TUNING.search.keyword_weight}


def contexts_for(actor: Actor) -> QuerySet[MemoryContext]:
    return visible_contexts(actor).order_by("name", "id")


def context_get(actor: Actor, context_id: int, *, write: bool = False) -> MemoryContext:
    """A context the actor may read (404 otherwise, foreign or missing alike); ``write``: 403
    ``context_read_only`` when it may only read."""
    context = visible_contexts(actor).filter(pk=context_id).first()
    if context is None:
        raise NotFound("No such memory context.", code="context_not_found")
    if write and not getattr(context, "can_write", False):
        raise PermissionDenied("This context is read-only for you.", code="context_read_only")
    return context


def entries_of(
    context: MemoryContext, *, include_archived: bool = False, entry_type: str = ""
) -> QuerySet[MemoryEntry]:
    """The current entries of a context the caller may read."""
    entries = MemoryEntry.objects.filter(context=context, is_current=True)
    if not include_archived:
        entries = entries.filter(archived_at__isnull=True)
    if entry_type:
        entries = entries.filter(entry_type=entry_type)
    return entries.order_by("-created_at", "-id")


def entry_get(actor: Actor, entry_id: int, *, write: bool = False) -> MemoryEntry:
    """Any version of an entry in a context the actor may read (``write``: may write)."""
    entry = (
        MemoryEntry.objects.filter(pk=entry_id, context__in=visible_contexts(actor).values("pk"))
        .select_related("context")
        .first()
    )
    if entry is None:
        raise NotFound("No such memory entry.", code="entry_not_found")
    if write:
        context_get(actor, entry.context_id, write=True)
    return entry


def entry_history(entry: MemoryEntry) -> QuerySet[MemoryEntry]:
    """Every version of the entry's memory, newest first."""
    return MemoryEntry.objects.filter(lineage=entry.lineage).order_by("-version")


def grants_of(context: MemoryContext) -> QuerySet[MemoryContextGrant]:
    """The explicit grants on a context the caller may read, newest first."""
    return MemoryContextGrant.objects.filter(context=context).order_by("-created_at", "-id")


def snapshots_of(context: MemoryContext) -> QuerySet[MemorySnapshot]:
    """A context's snapshots without their entries (they can be large), newest first."""
    return MemorySnapshot.objects.filter(context=context).defer("entries")


def snapshot_get(actor: Actor, snapshot_id: int, *, write: bool = False) -> MemorySnapshot:
    """A snapshot of a context the actor may read (404 ``snapshot_not_found`` otherwise, foreign
    or missing alike); ``write``: 403 ``context_read_only`` when it may only read."""
    snapshot = MemorySnapshot.objects.filter(
        pk=snapshot_id, context__in=visible_contexts(actor).values("pk")
    ).first()
    if snapshot is None:
        raise NotFound("No such memory snapshot.", code="snapshot_not_found")
    if write:
        context_get(actor, snapshot.context_id, write=True)
    return snapshot


def access_log_of(context: MemoryContext) -> QuerySet[MemoryAccessLog]:
    """Reads and search hits of a context's entries, newest first."""
    return MemoryAccessLog.objects.filter(context=context)


# --- search ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LongTermFilters:
    context_ids: tuple[int, ...] = ()
    entry_types: tuple[str, ...] = ()
    memory_types: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    occurred_from: datetime | None = None
    occurred_to: datetime | None = None
    thread: str = ""

    def condition(self) -> tuple[str, dict[str, Any]]:
        """SQL over ``u`` (the entry) with named parameters; empty when nothing filters."""
        parts: list[str] = []
        params: dict[str, Any] = {}
        for name, column in (
            ("entry_types", "entry_type"),
            ("memory_types", "memory_type"),
            ("sources", "source"),
        ):
            values = getattr(self, name)
            if values:
                parts.append(f"u.{column} = ANY(%(f_{name})s)")
                params[f"f_{name}"] = list(values)
        if self.tags_any:
            parts.append("u.tags && %(f_tags_any)s::varchar[]")
            params["f_tags_any"] = list(self.tags_any)
        if self.occurred_from:
            parts.append("u.occurred_at >= %(f_occurred_from)s")
            params["f_occurred_from"] = self.occurred_from
        if self.occurred_to:
            parts.append("u.occurred_at <= %(f_occurred_to)s")
            params["f_occurred_to"] = self.occurred_to
        if self.thread:
            parts.append("u.thread = %(f_thread)s")
            params["f_thread"] = self.thread
        return " AND ".join(parts), params


@dataclass
class LongTermHit:
    entry: MemoryEntry
    score: float  # effective_relevance_score
    components: dict[str, float]
    retrieval: dict[str, Any] = field(default_factory=dict)


class LongTermSearch(NamedTuple):
    """A long-term search's hits, best first, and the time each stage took."""

    hits: list[LongTermHit]
    timings_ms: dict[str, float]


def searchable_contexts(actor: Actor, requested: Sequence[int]) -> list[int]:
    """The unarchived contexts the actor may read: the requested ones (all must be visible).

    One context of the agent's own (its memory, one of its conversations: what context
    assembly's history asks for on every call) is found without the sharing rules, which only
    widen what an owner reads."""
    if not requested:
        visible = readable_contexts(actor).filter(archived_at__isnull=True)
        return sorted(set(visible.values_list("id", flat=True)))
    agent = actor.agent
    if agent is not None and len(set(requested)) == 1:
        # Written out: the ORM's compilation of this one-row lookup cost more than the row.
        with read_connection().cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {MemoryContext._meta.db_table} WHERE id = %s "  # noqa: S608
                "AND owner_id = %s AND account_id = %s AND archived_at IS NULL",
                [requested[0], agent.pk, agent.account_id],
            )
            own = [row[0] for row in cursor.fetchall()]
        if own:
            return own
    visible = readable_contexts(actor).filter(archived_at__isnull=True)
    found = set(visible.filter(pk__in=requested).values_list("id", flat=True))
    missing = sorted(set(requested) - found)
    if missing:
        raise NotFound(
            "Unknown memory context.", code="context_not_found", details={"ids": missing}
        )
    return sorted(found)


@replica_reads
def default_mode(stages: Sequence[str] = ()) -> str:
    """The mode of a long-term search that names none: ``graph``, or ``hybrid`` when it names
    its stages (which only a hybrid search takes). Graph mode became the default once it was
    as fast as the goal (p95 <= 40 ms on a 5,000-turn account) and no worse than hybrid in any
    LoCoMo category (docs/benchmarks.md); on entries no graph links reach it ranks as the
    hybrid stages and late interaction do."""
    return "hybrid" if stages else GRAPH


def long_term_search(
    *,
    actor: Actor,
    query: str,
    top_k: int = 10,
    filters: LongTermFilters | None = None,
    mode: str | None = None,
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    threshold: float | None = None,
    query_vector: Any = None,
    stages: Sequence[str] = (),
    max_hops: int = DEFAULT_MAX_HOPS,
) -> LongTermSearch:
    """The current, unarchived entries most relevant to ``query`` in the contexts the actor may
    read, best ``effective_relevance_score`` first, each with its components and its ranks in
    the retrieval stages. ``threshold``: a minimum effective score. Mode ``graph`` (or a hybrid
    search whose ``stages`` name ``graph``) ranks the entries linked to the knowledge-graph
    nodes nearest the query (``rag.graph.retrieval``); no mode: ``default_mode``."""
    mode = mode or default_mode(stages)
    search_options_validate(
        query=query, mode="hybrid" if mode == GRAPH else mode, fusion=fusion, top_k=top_k
    )
    stages_check(mode, stages)
    max_hops_check(max_hops)
    return long_term_ranked(
        actor=actor,
        query=query,
        limit=top_k,
        filters=filters,
        mode=mode,
        fusion=fusion,
        weights=weights,
        threshold=threshold,
        query_vector=query_vector,
        stages=stages,
        max_hops=max_hops,
    )


def long_term_ranked(
    *,
    actor: Actor,
    query: str,
    limit: int,
    filters: LongTermFilters | None = None,
    mode: str = "hybrid",
    fusion: str = DEFAULT_FUSION,
    weights: dict[str, float] | None = None,
    threshold: float | None = None,
    query_vector: Any = None,
    depth: int | None = None,
    stages: Sequence[str] = (),
    max_hops: int = DEFAULT_MAX_HOPS,
    speaker_lift: bool = True,
    fields: Sequence[str] = (),
    scope_ids: Sequence[int] | None = None,
    min_similarity: float | None = None,
) -> LongTermSearch:
    """``long_term_search`` for callers inside Engram that need more than a page of hits (up to
    ``MAX_RANKED``; context assembly packs a budget with them): the same ranking, the options
    already validated. ``depth``: candidates per stage (default: ten per hit, 100 to
    ``MAX_DEPTH``). ``speaker_lift`` False: no lift for named speakers (a caller that weighs
    speakers its own way). ``fields``: the only fields of the hits' entries the caller reads
    (loading a hundred entries whole was a tenth of a context's history search); every field
    but the embedding when empty. ``scope_ids``: the contexts to search, which the caller has
    already checked the actor may read and none archived (the conversation context assembly has
    read); ``filters.context_ids`` and the access rules are then not read again.
    ``min_similarity``: only the hits whose embedding's cosine similarity to the query's reaches
    it (a hit found by its words alone has none measured). In a search without the graph, when
    no entry's does, nothing but the vector stage runs; a graph search runs every stage and
    filters its hits alike."""
    top_k = max(1, min(limit, MAX_RANKED))
    if depth is None:
        depth = max(
            TUNING.search.min_candidates,
            min(top_k * TUNING.search.candidate_factor, MAX_DEPTH),
        )
    if threshold is not None and not 0 <= threshold <= 1:
        raise ValidationFailed("threshold must be from 0 to 1.", code="invalid_threshold")
    filters = filters or LongTermFilters()
    if scope_ids is None:
        scope_ids = searchable_contexts(actor, filters.context_ids)
    if not scope_ids:
        return LongTermSearch([], {})
    condition, params = filters.condition()
    ranking = staged_rank(
        space=MEMORY_ENTRIES,
        scope_ids=scope_ids,
        account_ids=list(actor.account_ids),
        stages=stages,
        max_hops=max_hops,
        query=query,
        mode=mode,
        depth=max(top_k, min(depth, MAX_DEPTH)),
        fusion=fusion,
        weights=fusion_weights({**fusion_defaults(), **(weights or {})}),
        filter_sql=condition,
        filter_params=params,
        query_vector=query_vector,
        group_lift=False,  # applied below, from the scoring statement's threads
        vector_floor=min_similarity,
        visible=visibility_of(actor) if uses_graph(mode, stages) else None,
    )
    ranked = ranking.hits
    now = timezone.now()
    threads: dict[int, str] = {}
    speakers: dict[int, str] = {}
    scoring = scoring_rows([hit.unit_id for hit in ranked], now, threads=threads, speakers=speakers)
    if mode in LIFTED_MODES:
        ranked = _session_lift(ranked, threads)
        if speaker_lift:
            ranked = _speaker_lift(ranked, speakers, query)
    graph_search = mode == GRAPH or GRAPH in stages
    late_weight = space_weights(MEMORY_ENTRIES).late_weight if graph_search else 0.0
    if late_weight > 0 and ranked:
        started = time.perf_counter()
        late_depth = RAG_TUNING.late.depth
        texts, reads = _late_texts([hit.unit_id for hit in ranked[:late_depth]])
        ranked = late_interaction.late_rerank(
            ranked,
            texts,
            query=query,
            weight=late_weight,
            depth=late_depth,
            reads=reads,
        )
        ranking.stage_ms["late"] = round((time.perf_counter() - started) * 1000, 2)
    if graph_search and TUNING.search.session_diversity > 0 and asks_for_several(query):
        ranked = _session_diversity(ranked, threads)
    if mode == "keyword" and ranked:
        # BM25 scores are unbounded: relative to the best hit, like the fused scores.
        best = ranked[0].score or 1.0
        similarity = {hit.unit_id: max(0.0, hit.score / best) for hit in ranked}
    else:
        similarity = {hit.unit_id: max(0.0, min(1.0, hit.score)) for hit in ranked}
    # Every candidate is scored on the few fields relevance needs, read as values; only the
    # results are loaded, without their vector. Loading every candidate whole (embedding
    # included) was most of a search's time at 100k entries (docs/benchmarks-log.md).
    kept = best_rows(ranked, similarity, scoring, top_k)
    scored: list[tuple[float, int, dict[str, float], RankedHit]] = []
    for hit, (importance, confidence, idle_days) in kept:
        components = relevance_components(
            similarity=similarity[hit.unit_id],
            importance=importance,
            confidence=confidence,
            idle_days=idle_days,
        )
        scored.append((effective_relevance_score(components), hit.unit_id, components, hit))
    scored.sort(key=lambda item: (-item[0], item[1]))
    if threshold is not None:
        scored = [item for item in scored if item[0] >= threshold]
    scored = scored[:top_k]
    if min_similarity is not None:
        scored = [item for item in scored if item[3].similar(min_similarity)]
    whole = entries_by_id([item[1] for item in scored], fields)
    hits = [
        LongTermHit(
            entry=whole[unit_id],
            score=score,
            components=components,
            retrieval={"score": hit.score, **hit.stages(), "late_score": hit.late_score},
        )
        for score, unit_id, components, hit in scored
        if unit_id in whole  # deleted meanwhile: gone
    ]
    return LongTermSearch(hits, ranking.stage_ms)


def _late_texts(
    entry_ids: Sequence[int],
) -> tuple[dict[int, str], dict[str, late_interaction.Read]]:
    """What late interaction reads of each entry: its own text, as the index reads it; and
    the stored readings (``MemoryEntryReading``) of those texts, a reading of another text
    left out. One statement: the entries and their readings side by side."""
    texts: dict[int, str] = {}
    reads: dict[str, late_interaction.Read] = {}
    rows = read_rows_binary(
        "SELECT e.id, e.content, e.data::text, e.speaker, "
        "r.text_sha, r.tokens, r.states, r.scales FROM memory_memoryentry e "
        "LEFT JOIN memory_memoryentryreading r ON r.entry_id = e.id WHERE e.id = ANY(%s)",
        [list(entry_ids)],
    )
    for entry_id, content, data, speaker, sha, tokens, states, scales in rows:
        structured = None if data is None else json.loads(data)
        text = texts[entry_id] = entry_text(content, structured, speaker)
        if sha is not None and bytes(sha) == text_sha(text):
            reads[text] = late_interaction.stored_read(tokens, bytes(states), bytes(scales))
    return texts, reads


def speakers_named(query: str, speakers: Iterable[str]) -> set[str]:
    """The speakers the query names: each word of the name a word of the query (any case,
    punctuation aside: "Dr. Ana Lima" is named by "What did Dr Ana Lima say?")."""

    def words(text: str) -> set[str]:
        return set(re.findall(r"[\w'-]+", text.lower()))

    asked = words(query)
    return {speaker for speaker in set(speakers) if (name := words(speaker)) and name <= asked}


def _speaker_lift(ranked: list[RankedHit], speakers: dict[int, str], query: str) -> list[RankedHit]:
    """Query analysis of named speakers: when the query names a speaker of the candidates
    (every word of the name in the query), that speaker's entries gain ``speaker_lift`` of
    their score; the scores are then divided by the best when it passes 1."""
    lift = TUNING.search.speaker_lift
    if lift <= 0 or not speakers:
        return ranked
    named = speakers_named(query, speakers.values())
    if not named:
        return ranked
    for hit in ranked:
        if speakers.get(hit.unit_id) in named:
            hit.score *= 1 + lift
    # Back to the fused scale (the best 1 at most), so relevance still tells the lifted apart.
    best = max(hit.score for hit in ranked)
    if best > 1:
        for hit in ranked:
            hit.score /= best
    return sorted(ranked, key=lambda hit: -hit.score)


def _session_lift(ranked: list[RankedHit], threads: dict[int, str]) -> list[RankedHit]:
    """The engine's group lift (``rag.granularity``) for entries, their threads read with the
    scoring fields (one statement fewer than the engine's own read at 100k entries)."""
    weight = granularity.group_weight(MEMORY_ENTRIES)
    if weight <= 0 or not ranked:
        return ranked
    return _in_order(
        ranked,
        granularity.group_lift(
            _pairs(ranked), threads, weight=weight, top=RAG_TUNING.granularity.group_top
        ),
    )


def _session_diversity(ranked: list[RankedHit], threads: dict[int, str]) -> list[RankedHit]:
    """The engine's group diversity (``rag.granularity``) over the entries' threads."""
    return _in_order(
        ranked,
        granularity.group_diversify(
            _pairs(ranked), threads, weight=TUNING.search.session_diversity
        ),
    )


def _pairs(ranked: list[RankedHit]) -> list[tuple[int, float]]:
    return [(hit.unit_id, hit.score) for hit in ranked]


def _in_order(ranked: list[RankedHit], order: list[tuple[int, float]]) -> list[RankedHit]:
    """The hits re-scored and re-ordered as the engine's (unit, score) ``order`` says."""
    by_id = {hit.unit_id: hit for hit in ranked}
    for unit_id, score in order:
        by_id[unit_id].score = score
    return [by_id[unit_id] for unit_id, _ in order]
