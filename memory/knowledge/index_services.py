"""The knowledge items' search index (``memory.spaces.KNOWLEDGE_ITEMS``): BM25 postings, the
store's corpus statistics and the embeddings, changed inside the writer's transaction while it
holds the store's row lock. Embeddings are computed by the caller before that transaction."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db.models import F

from core.embeddings import generations, get_embedding_provider
from memory.models import KnowledgeItem, KnowledgeStore
from memory.spaces import KNOWLEDGE_ITEMS, knowledge_item_text
from rag import keyword


def index_put(store: KnowledgeStore, item: KnowledgeItem, text: str, vector: np.ndarray) -> None:
    """Index a saved item (new to the index) with its text and embedding."""
    terms = keyword.chunk_terms(text)
    count = store.item_count + 1
    total = store.total_terms + terms.length
    keyword.postings_add(
        space=KNOWLEDGE_ITEMS,
        scope_id=store.pk,
        units=[keyword.IndexedUnit(unit_id=item.pk, terms=terms)],
        avg_length=total / count,
    )
    KnowledgeItem.objects.filter(pk=item.pk).update(
        keyword_length=terms.length,
        embedding=vector,
        embedding_model=get_embedding_provider().model_id,
    )
    generations.written("knowledge_items", [item.pk])
    KnowledgeStore.objects.filter(pk=store.pk).update(item_count=count, total_terms=total)
    store.item_count, store.total_terms = count, total


def index_forget(store: KnowledgeStore, item_ids: Sequence[int]) -> None:
    """Take items out of the index (a superseded or invalidated version)."""
    removed_units, removed_terms = keyword.postings_forget(
        space=KNOWLEDGE_ITEMS, scope_id=store.pk, unit_ids=list(item_ids), delete=True
    )
    KnowledgeItem.objects.filter(pk__in=list(item_ids)).update(keyword_length=0)
    KnowledgeStore.objects.filter(pk=store.pk).update(
        item_count=F("item_count") - removed_units, total_terms=F("total_terms") - removed_terms
    )
    store.item_count = max(0, store.item_count - removed_units)
    store.total_terms = max(0, store.total_terms - removed_terms)


def index_rebuild(store_id: int) -> None:
    """Rebuild a store's BM25 index from its items (``keyword.index_rebuild``) and embed the
    searchable items the current model has not embedded. Outside any transaction."""
    keyword.index_rebuild(space=KNOWLEDGE_ITEMS, scope_id=store_id)
    provider = get_embedding_provider()
    stale = list(
        KnowledgeItem.objects.filter(store_id=store_id, is_current=True, valid_to__isnull=True)
        .exclude(embedding_model=provider.model_id)
        .values_list("pk", "key", "content")
    )
    if not stale:
        return
    vectors = provider.embed_documents([knowledge_item_text(k, c) for _, k, c in stale])
    for (pk, _, _), vector in zip(stale, vectors, strict=True):
        KnowledgeItem.objects.filter(pk=pk).update(
            embedding=np.asarray(vector), embedding_model=provider.model_id
        )
    generations.written("knowledge_items", [pk for pk, _, _ in stale])
