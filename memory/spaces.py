"""Long-term memory entries as a search space of the one engine (``rag.spaces``)."""

from __future__ import annotations

from collections.abc import Iterable

from rag.spaces import RebuildRow, SearchSpace


def _entry_rebuild_rows(context_id: int) -> Iterable[RebuildRow]:
    from memory.indexing import indexed_texts
    from memory.models import MemoryEntry

    entries = list(
        MemoryEntry.objects.filter(
            context_id=context_id, is_current=True, archived_at__isnull=True
        ).only("id", "content", "data", "occurred_at", "thread", "position", "context_id")
    )
    keyword_texts, _ = indexed_texts(entries)
    for entry, text in zip(entries, keyword_texts, strict=True):
        yield entry.pk, (), text


MEMORY_ENTRIES = SearchSpace(
    name="memory_entries",
    unit_table="memory_memoryentry",
    scope_column="context_id",
    scope_table="memory_memorycontext",
    scope_count_column="entry_count",
    scope_terms_column="total_terms",
    posting_table="memory_memoryentryposting",
    posting_unit_column="entry_id",
    posting_length_column="entry_length",
    term_table="memory_memoryentryterm",
    # Postings exist only for searchable entries; filters are conditions on the entry (u).
    posting_filter_join="JOIN memory_memoryentry u ON u.id = p.entry_id",
    vector_condition="u.is_current AND u.archived_at IS NULL",
    rebuild_rows=_entry_rebuild_rows,
)
