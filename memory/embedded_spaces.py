"""memory's embedded tables for index generations (``core.embeddings.generations``): long-term
entries (embedded with their thread's neighbours, as ``memory.long_term.indexing`` does) and
knowledge items."""

from __future__ import annotations

from collections.abc import Sequence

from core.embeddings.generations import EmbeddedTable, register


def entry_texts(ids: Sequence[int]) -> dict[int, str]:
    from memory.long_term import indexing
    from memory.models import MemoryEntry

    entries = list(MemoryEntry.objects.filter(pk__in=list(ids)))
    _, texts = indexing.indexed_texts(entries)
    return {entry.pk: text for entry, text in zip(entries, texts, strict=True)}


def knowledge_item_texts(ids: Sequence[int]) -> dict[int, str]:
    from memory.models import KnowledgeItem
    from memory.spaces import knowledge_item_text

    rows = KnowledgeItem.objects.filter(pk__in=list(ids)).values_list("pk", "key", "content")
    return {pk: knowledge_item_text(key, content) for pk, key, content in rows}


def register_tables() -> None:
    register(
        EmbeddedTable(
            "memory_entries",
            "memory_memoryentry",
            "long-term memory entries",
            entry_texts,
            index_where="is_current AND archived_at IS NULL",
        )
    )
    register(
        EmbeddedTable(
            "knowledge_items",
            "memory_knowledgeitem",
            "knowledge items",
            knowledge_item_texts,
            index_where="is_current AND valid_to IS NULL",
        )
    )
