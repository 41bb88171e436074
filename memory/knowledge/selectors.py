"""Reads of knowledge items (docs/memory/knowledge.md), scoped by the actor inside
every query. Knowledge bases are account-wide: every agent of the account reads every base.
A base or item of another account answers exactly like a missing one. An item extracted from
a conversation keeps the visibility of its source (``source_context``): only those who may read
that conversation see it (``memory.long_term.context_access.derived_visible``), in every read here.

``knowledge_search`` is the entry point for other code (context assembly): the best current,
valid items of the chosen bases (or knowledge types) for a query, through the one engine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db.models import Count, F, Prefetch, Q, QuerySet

from core.actors import Actor
from core.db_router import replica_reads
from core.errors import NotFound, ValidationFailed
from core.search import list_length_check, search_query_check, top_k_check
from memory.long_term.context_access import derived_visible, derived_visible_sql
from memory.models import KnowledgeItem, KnowledgeSource, KnowledgeStore
from memory.spaces import KNOWLEDGE_ITEMS
from rag.fusion import default_weights
from rag.graph import selectors as graph
from rag.search import DEFAULT_FUSION, RankedHit, space_rank, stage_depth

if TYPE_CHECKING:
    from rag.graph.models import GraphEdge


def base_not_found(names: Sequence[str] = ()) -> NotFound:
    details = {"names": sorted(set(names))} if names else None
    return NotFound("No such knowledge base.", code="knowledge_base_not_found", details=details)


def item_not_found() -> NotFound:
    return NotFound("No such knowledge item.", code="knowledge_item_not_found")


def stores_visible(actor: Actor) -> QuerySet[KnowledgeStore]:
    return KnowledgeStore.objects.for_actor(actor)


def store_list(actor: Actor) -> QuerySet[KnowledgeStore]:
    """The account's bases, with ``visible_items``: the current, valid items the actor may
    see (the stored ``item_count`` counts everyone's)."""
    searchable = Q(items__is_current=True, items__valid_to__isnull=True)
    return (
        stores_visible(actor)
        .annotate(
            visible_items=Count("items", filter=searchable & derived_visible(actor, "items__"))
        )
        .order_by("-created_at", "-id")
    )


def store_get(actor: Actor, name: str) -> KnowledgeStore:
    """The actor's base named ``name`` (404 ``knowledge_base_not_found``)."""
    found = stores_visible(actor).filter(name=name).first()
    if found is None:
        raise base_not_found()
    return found


def source_messages(item_ids: Sequence[int]) -> dict[int, list[int]]:
    """The conversation messages (long-term entry ids) each of these item versions was
    extracted from; an item with none is absent."""
    out: dict[int, list[int]] = {}
    rows = KnowledgeSource.objects.filter(
        item_id__in=item_ids, source_type=KnowledgeSource.SourceType.CONVERSATION_MESSAGE
    ).values_list("item_id", "source_id")
    for item_id, source_id in rows:
        if source_id.isdigit():
            out.setdefault(item_id, []).append(int(source_id))
    return out


def _with_store(items: QuerySet[KnowledgeItem]) -> QuerySet[KnowledgeItem]:
    return items.defer("embedding").select_related("store")


def _with_sources(items: QuerySet[KnowledgeItem]) -> QuerySet[KnowledgeItem]:
    return _with_store(items).prefetch_related(
        Prefetch("sources", queryset=KnowledgeSource.objects.order_by("id"))
    )


def item_current(
    store: KnowledgeStore, key: str, source_context_id: int | None = None
) -> KnowledgeItem | None:
    """The current version of ``key`` in ``store`` (a store the caller has already been given)
    among the items of one source: account-wide (None) or extracted from one context."""
    return _with_sources(
        KnowledgeItem.objects.filter(
            store=store, key=key, is_current=True, source_context_id=source_context_id
        )
    ).first()


def items_visible(actor: Actor) -> QuerySet[KnowledgeItem]:
    """Every version of every item the actor may read."""
    return KnowledgeItem.objects.for_actor(actor).filter(derived_visible(actor))


def item_get(actor: Actor, base: str, key: str) -> KnowledgeItem:
    """The current version of the item ``key`` of the base ``base`` that the actor may read:
    the account-wide one, else the newest extracted one it may read (one key may name an item
    of each source). 404 ``knowledge_base_not_found`` / ``knowledge_item_not_found``."""
    store = store_get(actor, base)
    item = (
        _with_sources(items_visible(actor).filter(store=store, key=key, is_current=True))
        .order_by(F("source_context").asc(nulls_first=True), "-created_at", "-id")
        .first()
    )
    if item is None:
        raise item_not_found()
    return item


def item_list(actor: Actor, base: str) -> QuerySet[KnowledgeItem]:
    """The current versions of the base's items the actor may read (invalidated ones
    included: they say so)."""
    store = store_get(actor, base)
    return _with_sources(items_visible(actor).filter(store=store, is_current=True))


def item_versions(actor: Actor, base: str, key: str) -> QuerySet[KnowledgeItem]:
    """Every version of the item the actor may read, newest first."""
    item = item_get(actor, base, key)
    return _with_sources(items_visible(actor).filter(lineage=item.lineage))


def knowledge_item_visible(*, actor: Actor, item_id: int) -> bool:
    """Is ``item_id`` a version of a knowledge item the actor may read? (the memory tools'
    related search links memories to items by id)."""
    return items_visible(actor).filter(pk=item_id).exists()


# --- relationships (edges of rag's knowledge graph) ------------------------------------------


@dataclass(frozen=True)
class Relationship:
    edge: GraphEdge
    direction: str  # "outgoing" or "incoming", seen from the item asked about
    source: KnowledgeItem
    target: KnowledgeItem

    @property
    def strength(self) -> float:
        return float(self.edge.weight)


def item_relationships(actor: Actor, base: str, key: str) -> list[Relationship]:
    """The item's relationships to other knowledge items the actor may read, each way,
    strongest first (edges of its graph node to nodes of other items; edges to other kinds of
    node are the graph's)."""
    return node_relationships(item_get(actor, base, key), actor)


def node_relationships(item: KnowledgeItem, actor: Actor) -> list[Relationship]:
    """The relationships of an item already read (``item_relationships``, the admin) to the
    items ``actor`` may read, along the edges it may see."""
    if item.graph_node_id is None:
        return []
    edges = graph.edges_seen(actor=actor, node=item.graph_node)  # type: ignore[arg-type]
    other_ids = {e.target_id for e in edges.outgoing} | {e.source_id for e in edges.incoming}
    others = {
        found.graph_node_id: found
        for found in items_visible(actor)
        .filter(account_id=item.account_id, graph_node_id__in=other_ids, is_current=True)
        .select_related("store")
        .defer("embedding")
    }
    found: list[Relationship] = []
    for edge in edges.outgoing:
        if edge.target_id in others:
            found.append(Relationship(edge, "outgoing", item, others[edge.target_id]))
    for edge in edges.incoming:
        if edge.source_id in others:
            found.append(Relationship(edge, "incoming", others[edge.source_id], item))
    found.sort(key=lambda r: (-r.strength, r.edge.pk))
    return found


# --- search ----------------------------------------------------------------------------------


@dataclass
class KnowledgeHit:
    item: KnowledgeItem
    score: float
    ranked: RankedHit

    @property
    def explanation(self) -> dict[str, Any]:
        return {
            **self.ranked.stages(),
            "fused_score": self.score,
            "fusion": DEFAULT_FUSION,
            "weights": default_weights(),
        }


@dataclass
class KnowledgeSearch:
    hits: list[KnowledgeHit]
    bases: list[str]
    timings_ms: dict[str, float] = field(default_factory=dict)


def _search_scope(
    actor: Actor,
    bases: Sequence[str] | None,
    base_ids: Sequence[int] | None,
    knowledge_types: Sequence[str],
) -> list[KnowledgeStore]:
    stores = stores_visible(actor)
    if bases:
        found = list(stores.filter(name__in=list(bases)))
        missing = set(bases) - {s.name for s in found}
        if missing:
            raise base_not_found(sorted(missing))
        stores = stores.filter(pk__in=[s.pk for s in found])
    if base_ids:
        found_ids = set(stores.filter(pk__in=list(base_ids)).values_list("pk", flat=True))
        if set(base_ids) - found_ids:
            raise base_not_found()
        stores = stores.filter(pk__in=found_ids)
    if knowledge_types:
        unknown = set(knowledge_types) - set(KnowledgeStore.KnowledgeType.values)
        if unknown:
            raise ValidationFailed(
                "Unknown knowledge type.",
                code="invalid_knowledge_type",
                details={"allowed": list(KnowledgeStore.KnowledgeType.values)},
            )
        stores = stores.filter(knowledge_type__in=list(knowledge_types))
    return list(stores.order_by("name"))


@replica_reads
def knowledge_search(
    *,
    actor: Actor,
    query: str,
    bases: Sequence[str] | None = None,
    base_ids: Sequence[int] | None = None,
    knowledge_types: Sequence[str] = (),
    top_k: int = 10,
    query_vector: np.ndarray | None = None,
    load_sources: bool = True,
    min_similarity: float | None = None,
    seen_from_context: int | None = None,
) -> KnowledgeSearch:
    """The ``top_k`` best current, valid knowledge items for ``query`` (hybrid: vector and
    BM25, weighted fusion), each with its score and an explanation of its stages.

    Where: the bases named in ``bases`` and/or with ids in ``base_ids`` (a base that is not the
    actor's: 404 ``knowledge_base_not_found``), narrowed to ``knowledge_types`` when given;
    every base of the account when neither names nor ids are given. ``query_vector``: the
    query's embedding when the caller has it already (one embedding serves several searches).
    ``load_sources`` False: the hits' items without their sources (a caller that shows none,
    as context assembly: a statement fewer on its hot path). ``min_similarity``: of the
    ``top_k`` best, only the hits whose embedding's cosine similarity to the query's reaches
    it (a hit found by its words alone has none measured, so none qualifies); when no item
    reaches it, nothing but the vector stage runs. ``seen_from_context``: only the items every
    reader of that context sees (account-wide ones and its own: extraction decides a
    conversation's facts against those alone). Bounds: ``query`` 1..4,000 characters,
    ``top_k`` 1..100, lists of at most 100.
    """
    search_query_check(query)
    if not query.strip():
        raise ValidationFailed("The query is empty.", code="empty_query")
    top_k_check(top_k)
    list_length_check("bases", list(bases or ()))
    list_length_check("base_ids", list(base_ids or ()))
    list_length_check("knowledge_types", list(knowledge_types))
    started = time.perf_counter()
    stores = _search_scope(actor, bases, base_ids, knowledge_types)
    timings = {"scope": round((time.perf_counter() - started) * 1000, 3)}
    if not stores:
        return KnowledgeSearch(hits=[], bases=[], timings_ms=timings)
    params: dict[str, Any] = {}
    conditions = [derived_visible_sql(actor, "u", params)]
    if seen_from_context is not None:
        params["k_context"] = seen_from_context
        conditions.append("(u.source_context_id IS NULL OR u.source_context_id = %(k_context)s)")
    visible = " AND ".join(c for c in conditions if c != "TRUE")
    ranking = space_rank(
        space=KNOWLEDGE_ITEMS,
        scope_ids=[s.pk for s in stores],
        query=query,
        mode="hybrid",
        depth=stage_depth(top_k),
        weights=default_weights(),
        query_vector=query_vector,
        vector_floor=min_similarity,
        filter_sql=visible,
        filter_params=params,
    )
    timings.update(ranking.stage_ms)
    started = time.perf_counter()
    ranked = ranking.hits[:top_k]
    if min_similarity is not None:
        ranked = [h for h in ranked if h.similar(min_similarity)]
    found = items_visible(actor).filter(
        pk__in=[h.unit_id for h in ranked], is_current=True, valid_to__isnull=True
    )
    if seen_from_context is not None:
        found = found.filter(
            Q(source_context__isnull=True) | Q(source_context_id=seen_from_context)
        )
    items = (_with_sources(found) if load_sources else _with_store(found)).in_bulk()
    hits = [
        KnowledgeHit(item=items[h.unit_id], score=round(h.score, 6), ranked=h)
        for h in ranked
        if h.unit_id in items
    ]
    timings["hydrate"] = round((time.perf_counter() - started) * 1000, 3)
    return KnowledgeSearch(hits=hits, bases=[s.name for s in stores], timings_ms=timings)
