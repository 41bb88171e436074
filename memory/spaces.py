"""Long-term memory entries as a search space of the one engine (``rag.spaces``)."""

from __future__ import annotations

from collections.abc import Iterable

from rag.spaces import RebuildRow, SearchSpace


def _entry_rebuild_rows(context_id: int) -> Iterable[RebuildRow]:
    from memory.long_term.indexing import indexed_texts
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
    # A conversation session in which several turns match lifts them (rag.granularity). The
    # space's ranking weights (session lift, graph weight, hop decay, graph similarity, late
    # interaction) are memory's tunables, ``memory.spaces.entries`` (memory.tuning).
    group_column="thread",
    weights="memory.spaces.entries",
)


def short_term_text(key: str, value: object) -> str:
    """What a short-term entry is found by: its key's words, then its value (a string as it
    is, anything else as compact JSON)."""
    from memory.pools.leaves import leaf_text

    return leaf_text(key, value)


def _short_term_rebuild_rows(agent_id: int) -> Iterable[RebuildRow]:
    from memory.models import ShortTermEntry

    rows = ShortTermEntry.objects.filter(agent_id=agent_id).values_list("id", "key", "value")
    for entry_id, key, value in rows.iterator(chunk_size=2000):
        yield entry_id, (), short_term_text(key, value)


SHORT_TERM_ENTRIES = SearchSpace(
    name="short_term_entries",
    unit_table="memory_shorttermentry",
    scope_column="agent_id",
    scope_table="memory_shorttermscope",
    scope_key_column="agent_id",
    scope_count_column="entry_count",
    scope_terms_column="total_terms",
    posting_table="memory_shorttermposting",
    posting_unit_column="entry_id",
    posting_length_column="entry_length",
    term_table="memory_shorttermterm",
    # Expired entries keep their postings until the clean-up deletes them: searches filter on
    # the entry (u), before each term's cut.
    posting_filter_join="JOIN memory_shorttermentry u ON u.id = p.entry_id",
    rebuild_rows=_short_term_rebuild_rows,
)


def _pool_leaf_rebuild_rows(account_id: int) -> Iterable[RebuildRow]:
    from memory.models import MemoryPool, PoolLeaf
    from memory.pools.leaves import all_leaves

    texts: dict[tuple[int, str], str] = {}
    for pool_id, data in (
        MemoryPool.objects.filter(account_id=account_id).values_list("pk", "data").iterator()
    ):
        for path, text in all_leaves(data).items():
            texts[(pool_id, path)] = text
    for leaf_id, pool_id, path in PoolLeaf.objects.filter(account_id=account_id).values_list(
        "pk", "pool_id", "path"
    ):
        if (pool_id, path) in texts:
            yield leaf_id, (pool_id,), texts[(pool_id, path)]


POOL_LEAVES = SearchSpace(
    name="pool_leaves",
    unit_table="memory_poolleaf",
    scope_column="account_id",
    scope_table="memory_poolscope",
    scope_key_column="account_id",
    scope_count_column="leaf_count",
    scope_terms_column="total_terms",
    posting_table="memory_poolleafposting",
    posting_unit_column="leaf_id",
    posting_length_column="leaf_length",
    term_table="memory_poolleafterm",
    # The pool is on the posting: access rules filter postings without a join.
    posting_extra_columns=("pool_id",),
    rebuild_rows=_pool_leaf_rebuild_rows,
)


def knowledge_item_text(key: str, content: str) -> str:
    """What a knowledge item is found by: its key's words, then its content."""
    from memory.pools.leaves import leaf_text

    return leaf_text(key, content)


def _knowledge_item_rebuild_rows(store_id: int) -> Iterable[RebuildRow]:
    from memory.models import KnowledgeItem

    rows = KnowledgeItem.objects.filter(
        store_id=store_id, is_current=True, valid_to__isnull=True
    ).values_list("id", "key", "content")
    for item_id, key, content in rows.iterator(chunk_size=2000):
        yield item_id, (), knowledge_item_text(key, content)


KNOWLEDGE_ITEMS = SearchSpace(
    name="knowledge_items",
    unit_table="memory_knowledgeitem",
    scope_column="store_id",
    scope_table="memory_knowledgestore",
    scope_count_column="item_count",
    scope_terms_column="total_terms",
    posting_table="memory_knowledgeitemposting",
    posting_unit_column="item_id",
    posting_length_column="item_length",
    term_table="memory_knowledgeitemterm",
    # Postings exist only for searchable items; filters are conditions on the item (u).
    posting_filter_join="JOIN memory_knowledgeitem u ON u.id = p.item_id",
    vector_condition="u.is_current AND u.valid_to IS NULL",
    rebuild_rows=_knowledge_item_rebuild_rows,
)
