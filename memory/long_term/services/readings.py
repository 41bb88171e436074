"""Entries' readings: each entry's own text as the local model reads it, token by token
(``MemoryEntryReading``), which late interaction scores a graph search's candidates by.

Read when an entry is indexed (``readings_plan`` before the write's transaction, as its
embedding; ``readings_store`` after its rows are saved), so a graph search reads its candidates'
states instead of running the model over them: the model's pass over 30 candidates was most of
a graph-mode search's time (docs/benchmarks-log.md, "Entry readings"). The reading is keyed by
the SHA-1 of the text it read: one of another text (an entry edited in place) is not used, and
the search reads that entry's text itself. ``readings_fill`` reads the current entries that
have none (written before readings existed, or while the local model could not load), a batch
at a time, as the periodic job ``memory.fill_readings`` runs it.

``MEMORY_ENTRY_READINGS`` turns them off (the searches then read every candidate themselves:
slower, and the same scores): about 400 bytes a token are stored, 14 KB for a 35-token turn.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from core.embeddings.base import EmbeddingError
from memory.long_term.indexing import entry_text, text_sha
from memory.models import MemoryEntry, MemoryEntryReading
from memory.spaces import MEMORY_ENTRIES
from rag import late_interaction
from rag.spaces import space_weights

logger = logging.getLogger(__name__)

# Entries read by one ``readings_fill`` run: about 20 s of the model on two cores.
FILL_BATCH = 2_000
# Entries read, and rows inserted, at a time by ``readings_fill``.
READ_BATCH = 64

Reading = tuple[bytes, late_interaction.Read]  # the text's SHA-1, its tokens and states


def readings_wanted() -> bool:
    """Whether entries are read when indexed: graph search scores by late interaction and
    ``MEMORY_ENTRY_READINGS`` is on."""
    return space_weights(MEMORY_ENTRIES).late_weight > 0 and bool(
        getattr(settings, "MEMORY_ENTRY_READINGS", True)
    )


def readings_plan(entries: Sequence[MemoryEntry]) -> list[Reading | None]:
    """Each entry's reading, read now (outside any transaction: a model pass), in order; all
    None when readings are off or the local model cannot run (the write goes on without them,
    and ``readings_fill`` reads the entries later)."""
    if not entries or not readings_wanted():
        return [None] * len(entries)
    texts = [entry_text(entry.content, entry.data, entry.speaker) for entry in entries]
    try:
        reads = late_interaction.read_texts(texts)  # batched by the model within its token cap
    except EmbeddingError:
        logger.warning("entry readings skipped: the local model cannot run", exc_info=True)
        return [None] * len(entries)
    return [(text_sha(text), read) for text, read in zip(texts, reads, strict=True)]


def readings_store(pairs: Iterable[tuple[int, Reading | None]]) -> int:
    """Save the readings of saved entries (entry id, reading), replacing older ones: how many."""
    rows = []
    for entry_id, reading in pairs:
        if reading is None:
            continue
        sha, (tokens, states) = reading
        values, scales = late_interaction.quantise(states)
        rows.append(
            MemoryEntryReading(
                entry_id=entry_id,
                text_sha=sha,
                tokens=list(tokens),
                states=values.tobytes(),
                scales=scales.tobytes(),
            )
        )
    MemoryEntryReading.objects.bulk_create(
        rows,
        batch_size=READ_BATCH,
        update_conflicts=True,
        unique_fields=["entry"],
        update_fields=["text_sha", "tokens", "states", "scales"],
    )
    return len(rows)


def _missing() -> QuerySet[MemoryEntry]:
    """The current entries that have no reading, oldest first."""
    return (
        MemoryEntry.objects.filter(is_current=True, archived_at__isnull=True)
        .filter(~Exists(MemoryEntryReading.objects.filter(entry_id=OuterRef("pk"))))
        .order_by("pk")
    )


def readings_missing() -> int:
    """How many current entries have no reading (0 when readings are off)."""
    return _missing().count() if readings_wanted() else 0


def readings_fill(*, limit: int = FILL_BATCH) -> dict[str, int]:
    """Read up to ``limit`` current entries that have no reading: how many were read, and how
    many are left. (Every write that changes an entry's text indexes a new version, read with
    it; a reading of another text is only possible for a row changed outside the services, and
    the search then reads the text itself.)"""
    if not readings_wanted():
        return {"read": 0, "left": 0}
    missing = _missing()
    entries = list(missing.only("pk", "content", "data", "speaker")[:limit])
    read = 0
    for start in range(0, len(entries), READ_BATCH):
        part = entries[start : start + READ_BATCH]
        read += readings_store(zip([e.pk for e in part], readings_plan(part), strict=True))
    return {"read": read, "left": missing.count()}
