"""What ingestion did in an account's day, for its daily summary (``core.digests``): the
documents indexed (first indexed, or indexed again after a change or a reprocess)."""

from __future__ import annotations

import datetime as dt

from core.digests import MAX_ITEMS_PER_SECTION, DigestItem, capped, day_bounds
from rag.models import Document

DOCUMENTS_INDEXED = "Documents indexed"


def daily_digest(*, account_id: int, day: dt.date) -> list[DigestItem]:
    start, end = day_bounds(day)
    indexed = Document.objects.filter(
        account_id=account_id,
        status=Document.Status.INDEXED,
        indexed_at__gte=start,
        indexed_at__lt=end,
    )
    total = indexed.count()
    if not total:
        return []
    rows = indexed.order_by("indexed_at", "id").values_list(
        "id", "title", "source", "knowledge_base__name", "chunks_total"
    )[:MAX_ITEMS_PER_SECTION]
    items = [
        DigestItem(
            section=DOCUMENTS_INDEXED,
            text=f"{title or source or f'document {doc_id}'} (knowledge base {kb}, "
            f"{chunks} chunk{'' if chunks == 1 else 's'})",
        )
        for doc_id, title, source, kb, chunks in rows
    ]
    return capped(DOCUMENTS_INDEXED, items, total)
