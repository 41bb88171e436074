"""The long-term entries' search index, kept exact by every write in the write's own
transaction: the BM25 postings and statistics of the ``memory_entries`` space
(``memory.spaces``) and the embeddings.

A write plans its index changes before its transaction opens (``index_plan``: indexed texts and
embeddings, never a provider call inside a transaction), then, holding the context's row lock
(``context_lock``), saves its rows and applies the plan (``index_apply``). An entry in a thread
is indexed with its neighbours (``memory.long_term.indexing``), so writing, updating or archiving it
re-indexes the neighbours whose indexed text includes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from core.embeddings import generations, get_embedding_provider
from core.errors import NotFound
from core.writes import row_locked
from memory.long_term import indexing
from memory.long_term.services.readings import Reading, readings_plan, readings_store
from memory.models import MemoryContext, MemoryEntry, PendingIndex
from memory.spaces import MEMORY_ENTRIES
from memory.tuning import TUNING
from rag import keyword
from rag.vector import vector_literal


@dataclass
class IndexPlan:
    """What one write does to the context's index, computed before its transaction: the new
    entries (unsaved), the searchable neighbours whose indexed text changes, every one's
    keyword text, and the embeddings of the new entries and of neighbours within the
    embedding radius."""

    new: list[MemoryEntry]
    neighbours: list[MemoryEntry]
    keyword_texts: list[str]
    vectors: dict[int, np.ndarray] = field(default_factory=dict)  # index in new + neighbours
    readings: list[Reading | None] = field(default_factory=list)  # the new entries' own texts

    @property
    def entries(self) -> list[MemoryEntry]:
        return [*self.new, *self.neighbours]


def index_plan(
    new: Sequence[MemoryEntry], *, around: Sequence[MemoryEntry] = (), leaving: Sequence[int] = ()
) -> IndexPlan:
    """Plan indexing ``new`` entries, and re-indexing the neighbours of ``new`` and of the
    entries ``around`` (those whose text changes or that leave the index), without the ids in
    ``leaving``."""
    neighbours = indexing.affected_neighbours([*new, *around], exclude=leaving)
    plan_entries = [*new, *neighbours]
    keyword_texts, embedding_texts = indexing.indexed_texts(plan_entries, exclude=leaving)
    positions = [
        (e.context_id, e.thread, e.position)
        for e in [*new, *around]
        if e.thread and e.position is not None
    ]
    wanted = list(range(len(new)))
    for index, entry in enumerate(neighbours, start=len(new)):
        assert entry.position is not None
        if any(
            (c, t) == (entry.context_id, entry.thread)
            and p is not None
            and abs(p - entry.position) <= TUNING.indexing.embedding_radius
            for c, t, p in positions
        ):
            wanted.append(index)
    plan = IndexPlan(
        new=list(new),
        neighbours=neighbours,
        keyword_texts=keyword_texts,
        readings=readings_plan(new),
    )
    if wanted:
        matrix = get_embedding_provider().embed_documents([embedding_texts[i] for i in wanted])
        plan.vectors = {i: np.asarray(row) for i, row in zip(wanted, matrix, strict=True)}
    return plan


def context_lock(context_id: int) -> MemoryContext:
    """The context's row, locked; one deleted since the caller read it (a request racing its
    deletion) is 404 ``context_not_found``, as a missing one.

    The lock order of everything that writes a context's entries: this row first, then its
    entries. ``FOR NO KEY UPDATE``: writers wait for each other, but rows that only reference
    the context (an access log row, a grant) are inserted without waiting for them."""
    return row_locked(
        MemoryContext.objects.all(),
        context_id,
        missing=lambda: NotFound("No such memory context.", code="context_not_found"),
        no_key=True,
    )


def index_apply(context: MemoryContext, plan: IndexPlan, *, leaving: Sequence[int] = ()) -> None:
    """Inside the transaction holding the context's row lock, after the new entries are saved:
    take ``leaving`` and the re-indexed neighbours out of the index, put every planned entry
    in, store the new embeddings and the context's statistics."""
    model_id = get_embedding_provider().model_id
    neighbour_ids = [e.pk for e in plan.neighbours]
    # A message still waiting for its first index (``pending``) has no postings to take out.
    waiting = _waiting_unindexed([*leaving, *neighbour_ids])
    old_ids = [pk for pk in [*leaving, *neighbour_ids] if pk not in waiting]
    removed_units, removed_terms = keyword.postings_forget(
        space=MEMORY_ENTRIES, scope_id=context.pk, unit_ids=old_ids, delete=True
    )
    analysed = [keyword.chunk_terms(text) for text in plan.keyword_texts]
    entries = plan.entries
    units = [
        keyword.IndexedUnit(unit_id=entry.pk, terms=terms)
        for entry, terms in zip(entries, analysed, strict=True)
    ]
    count = context.entry_count - removed_units + len(units)
    total = context.total_terms - removed_terms + sum(t.length for t in analysed)
    keyword.postings_add(
        space=MEMORY_ENTRIES,
        scope_id=context.pk,
        units=units,
        avg_length=total / count if count else 0.0,
    )
    ids = [entry.pk for entry in entries]
    vectors = [
        vector_literal(plan.vectors[i]) if i in plan.vectors else None for i in range(len(entries))
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_memoryentry e SET keyword_length = v.length, "
            "embedding = coalesce(v.embedding::vector, e.embedding), "
            "embedding_model = CASE WHEN v.embedding IS NULL THEN e.embedding_model ELSE %s END "
            "FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS v(id, length, embedding) "
            "WHERE e.id = v.id",
            [model_id, ids, [t.length for t in analysed], vectors],
        )
        generations.written("memory_entries", [pk for i, pk in enumerate(ids) if i in plan.vectors])
        if leaving:
            cursor.execute(
                "UPDATE memory_memoryentry SET keyword_length = 0 WHERE id = ANY(%s)",
                [list(leaving)],
            )
    MemoryContext.objects.filter(pk=context.pk).update(entry_count=count, total_terms=total)
    readings_store(zip([entry.pk for entry in plan.new], plan.readings, strict=True))
    if neighbour_ids or leaving:
        # Waiting rows: a neighbour indexed here has postings now (a worker computing it
        # from older text loses its claim); an entry that left the index waits for nothing.
        PendingIndex.objects.filter(entry_id__in=neighbour_ids).update(
            indexed=True, claim="", claimed_at=None
        )
        PendingIndex.objects.filter(entry_id__in=list(leaving)).delete()


def _waiting_unindexed(ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    return set(
        PendingIndex.objects.filter(entry_id__in=list(ids), indexed=False).values_list(
            "entry_id", flat=True
        )
    )
