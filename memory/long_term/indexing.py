"""What a long-term entry is indexed as.

An entry's own text is its content, followed by its JSON content in compact form. An entry in a
thread (``thread`` and ``position``: a conversation session, a task run) is indexed together with
its neighbours in that thread, because a line of dialogue ("Yes, last Tuesday!") means little
without the lines around it: BM25 sees the entries within ``keyword_radius`` positions and the
date the entry happened, the embedding the entries within ``embedding_radius`` (a small model
dilutes a wider window; both ``TUNING.indexing``, memory.tuning). Measured on LoCoMo in
docs/benchmarks-log.md. The stored entry is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from django.db.models import Q

from memory.tuning import TUNING

if TYPE_CHECKING:
    from memory.models import MemoryEntry


def entry_text(content: str, data: object, speaker: str = "") -> str:
    """The entry's own text: content (after its speaker's name, for a conversation message),
    then JSON content in compact form."""
    if speaker:
        content = f"{speaker}: {content}"
    if data is None:
        return content
    encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"{content}\n{encoded}" if content else encoded


def text_sha(text: str) -> bytes:
    """The SHA-1 of an entry's text, which its stored reading is keyed by
    (``MemoryEntryReading``)."""
    return hashlib.sha1(text.encode(), usedforsecurity=False).digest()


def _threaded(entry: MemoryEntry) -> bool:
    return bool(entry.thread) and entry.position is not None


def _neighbours(
    entries: Sequence[MemoryEntry], exclude: Collection[int]
) -> dict[tuple[int, str], dict[int, str]]:
    """Text by position of the searchable entries around the given ones, per (context, thread),
    leaving out the ids in ``exclude`` (entries leaving the index)."""
    from memory.models import MemoryEntry

    spans: dict[tuple[int, str], tuple[int, int]] = {}
    for entry in entries:
        if not _threaded(entry):
            continue
        assert entry.position is not None
        key = (entry.context_id, entry.thread)
        low, high = spans.get(key, (entry.position, entry.position))
        spans[key] = (min(low, entry.position), max(high, entry.position))
    if not spans:
        return {}
    condition = Q()
    for (context_id, thread), (low, high) in spans.items():
        condition |= Q(
            context_id=context_id,
            thread=thread,
            position__gte=low - TUNING.indexing.keyword_radius,
            position__lte=high + TUNING.indexing.keyword_radius,
        )
    found: dict[tuple[int, str], dict[int, str]] = defaultdict(dict)
    rows = (
        MemoryEntry.objects.filter(condition, is_current=True, archived_at__isnull=True)
        .exclude(pk__in=list(exclude))
        .values_list("context_id", "thread", "position", "content", "data", "speaker")
    )
    for context_id, thread, position, content, data, speaker in rows:
        if position is not None:
            found[(context_id, thread)][position] = entry_text(content, data, speaker)
    # Entries not saved yet (or saved with other text in this transaction) speak for themselves.
    for entry in entries:
        if _threaded(entry):
            assert entry.position is not None
            found[(entry.context_id, entry.thread)][entry.position] = entry_text(
                entry.content, entry.data, entry.speaker
            )
    return found


def _window(texts: dict[int, str], position: int, radius: int) -> str:
    return "\n".join(
        texts[p] for p in range(position - radius, position + radius + 1) if p in texts
    )


def indexed_texts(
    entries: Sequence[MemoryEntry], *, exclude: Collection[int] = ()
) -> tuple[list[str], list[str]]:
    """(keyword texts, embedding texts) of the entries, in their order. Entries not saved yet
    count as neighbours of each other; ids in ``exclude`` do not count at all."""
    threads = _neighbours(entries, exclude)
    keyword: list[str] = []
    embedding: list[str] = []
    for entry in entries:
        own = entry_text(entry.content, entry.data, entry.speaker)
        if _threaded(entry):
            assert entry.position is not None
            texts = threads[(entry.context_id, entry.thread)]
            keyword_text = _window(texts, entry.position, TUNING.indexing.keyword_radius)
            embedding.append(_window(texts, entry.position, TUNING.indexing.embedding_radius))
        else:
            keyword_text = own
            embedding.append(own)
        if entry.occurred_at is not None:
            day = entry.occurred_at
            keyword_text = f"{keyword_text}\n{day.day} {day:%B %Y}"
        keyword.append(keyword_text)
    return keyword, embedding


def affected_neighbours(
    entries: Iterable[MemoryEntry], *, exclude: Collection[int] = ()
) -> list[MemoryEntry]:
    """Searchable entries whose indexed text includes one of these entries' text (their
    neighbours within ``TUNING.indexing.keyword_radius`` in a thread), the entries themselves
    and the ids in ``exclude`` left out."""
    from memory.models import MemoryEntry

    condition = Q()
    own: set[int] = set(exclude)
    for entry in entries:
        if entry.pk is not None:
            own.add(entry.pk)
        if not _threaded(entry):
            continue
        assert entry.position is not None
        condition |= Q(
            context_id=entry.context_id,
            thread=entry.thread,
            position__gte=entry.position - TUNING.indexing.keyword_radius,
            position__lte=entry.position + TUNING.indexing.keyword_radius,
        )
    if condition == Q():
        return []
    return list(
        MemoryEntry.objects.filter(condition, is_current=True, archived_at__isnull=True)
        .exclude(pk__in=own)
        .order_by("pk")
    )
