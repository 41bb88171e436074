"""Long-term entries in the knowledge graph: the entities each entry mentions become nodes
linked to it (``rag.graph.services.index``), so that graph search (``mode: "graph"``) reaches
entries through the entities they share (docs/memory/long-term.md, "Graph search").

Entries are linked when a conversation's messages are extracted (``extractions``: the offline
extractor's entities of each message, plus those the model named for it), after every other
write of new entries or new versions commits (``entries_link_soon``: a worker links them, the
offline extractor reading the write's entries together; with the broker down, the writing
process or the ``memory.link_pending`` job, from ``PendingGraphLink``), by
``memory_graph_rebuild`` for whole contexts, and by ``memory_eval --mode graph``. Linking is
derived data: indexing an entry again replaces its links.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from django.utils import timezone

from core.actors import Actor
from memory.long_term.context_access import require_writable
from memory.models import MemoryContext, MemoryEntry, PendingGraphLink
from memory.spaces import MEMORY_ENTRIES
from rag.graph.entities import Entity, TextEntities, document_entities
from rag.graph.services import (
    IndexOutcome,
    UnitEntities,
    mentions_forget,
    mentions_forget_soon,
    mentions_replace,
    units_extract,
)

BATCH = 500
log = logging.getLogger("engram.memory")


def entries_graph_index(
    *,
    account_id: int,
    entries: Sequence[MemoryEntry],
    known_names: Iterable[str] = (),
    extra: Mapping[int, Sequence[Entity]] | None = None,
    use_model: bool = False,
) -> IndexOutcome:
    """Link each entry to the nodes of the entities its content mentions (offline; the model's
    when ``use_model`` and one is configured), plus ``extra`` entities by entry id."""
    total = IndexOutcome()
    names = list(known_names)
    for start in range(0, len(entries), BATCH):
        batch = entries[start : start + BATCH]
        if use_model:
            found, _ = units_extract(
                [(e.pk, e.content) for e in batch],
                known_names=names,
                groups=[[e.pk for e in batch]],
                pronouns_across_units=False,
            )
        else:
            # The batch read together: a surname joins the full name another entry wrote;
            # a pronoun stands for a name of its own entry only.
            extracted = document_entities(
                [e.content for e in batch], known_names=names, pronouns_across_units=False
            )
            found = {e.pk: one for e, one in zip(batch, extracted, strict=True)}
        units = []
        for entry in batch:
            text = found.get(entry.pk, TextEntities())
            entities = list(text.entities)
            seen = {e.name.lower() for e in entities}
            for more in (extra or {}).get(entry.pk, ()):
                if more.name.lower() not in seen:
                    seen.add(more.name.lower())
                    entities.append(more)
            units.append(UnitEntities(entry.pk, entry.context_id, entities, text.relations))
        outcome = mentions_replace(
            account_id=account_id, space=MEMORY_ENTRIES, units=units, origin="memory"
        )
        total.add(outcome)
    return total


def context_graph_index(
    *, actor: Actor, context: MemoryContext, use_model: bool = False
) -> IndexOutcome:
    """Link every current entry of a context to the graph (write access to the context)."""
    require_writable(actor, context.pk)
    entries = list(
        MemoryEntry.objects.filter(context_id=context.pk, is_current=True, archived_at__isnull=True)
        .only("id", "context_id", "content", "speaker")
        .order_by("id")
    )
    speakers = {e.speaker for e in entries if e.speaker}
    return entries_graph_index(
        account_id=context.account_id,
        entries=entries,
        known_names=speakers,
        use_model=use_model,
    )


def conversation_graph_link(
    *, messages: Sequence[MemoryEntry], extractions: Iterable[object]
) -> None:
    """After an extraction run: link its messages to the graph, with the entities the run
    found in each (the model's included). Never fails the run: an error is logged."""
    from memory.models import Extraction

    extra: dict[int, list[Entity]] = {}
    for row in extractions:
        if not isinstance(row, Extraction) or row.kind != Extraction.Kind.ENTITY:
            continue
        node = row.graph_node
        if node is None:
            continue
        for message_id in row.message_ids:
            extra.setdefault(message_id, []).append(
                Entity(name=node.name, entity_type=node.entity_type, salience=0.5)
            )
    if not messages:
        return
    try:
        entries_graph_index(
            account_id=messages[0].account_id,
            entries=messages,
            known_names={m.speaker for m in messages if m.speaker},
            extra=extra,
        )
    except Exception:
        log.exception("graph links of messages failed")


# With the broker down, a write of at most this many entries is linked by its own process
# after the commit (about 12 ms an entry, offline); a larger one waits in ``PendingGraphLink``
# for the ``memory.link_pending`` job.
INLINE_LINK_MAX = 100
# Entries the ``memory.link_pending`` job links in one run (about 12 ms each, offline).
LINK_PENDING_BATCH = 2_000


def entries_link_soon(entry_ids: Sequence[int], context_id: int) -> None:
    """Once the write commits: a worker brings these entries' links to the graph up to date
    (``entries_link``). With the broker down the writing process does it itself, for a write of
    up to ``INLINE_LINK_MAX`` entries; a larger write, or one whose linking fails there, waits
    for the ``memory.link_pending`` job (``entries_link_later``). Never the write's error."""
    from core.queue import task_send_on_commit
    from memory import tasks

    ids = list(entry_ids)

    def inline() -> None:
        try:
            if len(ids) <= INLINE_LINK_MAX:
                entries_link(entry_ids=ids, context_id=context_id)
                return
            log.warning(
                "broker down: the graph links of %d entries of context %d wait for the "
                "memory.link_pending job", len(ids), context_id,
            )  # fmt: skip
        except Exception:
            log.exception("graph links of entries failed; they wait for memory.link_pending")
        try:
            entries_link_later(ids, context_id)
        except Exception:
            log.exception("graph links of entries lost (memory_graph_rebuild repairs them)")

    if ids:
        task_send_on_commit(tasks.link_entries, ids, context_id, on_failure=inline)


def entries_link_later(entry_ids: Sequence[int], context_id: int) -> int:
    """Queue the entries for the ``memory.link_pending`` job (an entry queued already is
    queued again, as of now): how many."""
    now = timezone.now()
    rows = [
        PendingGraphLink(entry_id=pk, context_id=context_id, queued_at=now)
        for pk in dict.fromkeys(entry_ids)
    ]
    PendingGraphLink.objects.bulk_create(
        rows,
        batch_size=BATCH,
        update_conflicts=True,
        unique_fields=["entry_id"],
        update_fields=["context_id", "queued_at"],
    )
    return len(rows)


def pending_links_run(*, limit: int = LINK_PENDING_BATCH) -> dict[str, int]:
    """The ``memory.link_pending`` job: the ``limit`` entries queued longest ago linked
    (``entries_link``, a context's together), then their rows deleted, unless queued again
    meanwhile. ``linked``: entries done; ``left``: entries still waiting."""
    rows = list(
        PendingGraphLink.objects.order_by("queued_at", "entry_id").values_list(
            "entry_id", "context_id", "queued_at"
        )[:limit]
    )
    by_context: dict[int, list[tuple[int, datetime]]] = {}
    for entry_id, context_id, queued_at in rows:
        by_context.setdefault(context_id, []).append((entry_id, queued_at))
    for context_id, queued in by_context.items():
        ids = [pk for pk, _ in queued]
        entries_link(entry_ids=ids, context_id=context_id)
        # A row queued again meanwhile has a later time than any read here: it stays.
        latest = max(queued_at for _, queued_at in queued)
        PendingGraphLink.objects.filter(entry_id__in=ids, queued_at__lte=latest).delete()
    return {"linked": len(rows), "left": pending_links_count()}


def pending_links_count() -> int:
    """Entries waiting for the ``memory.link_pending`` job."""
    return PendingGraphLink.objects.count()


def entries_link(*, entry_ids: Sequence[int], context_id: int) -> IndexOutcome:
    """The links of the entries ``entry_ids`` of the context ``context_id``, as they are now:
    those still current and unarchived linked to the entities they mention (offline: no model
    is called; read together, as one write's batch); the others (an earlier version, archived,
    deleted) linked to nothing, so nothing derived from them stays in the graph."""
    entries = list(
        MemoryEntry.objects.filter(pk__in=list(entry_ids), context_id=context_id)
        .only("id", "account_id", "context_id", "content", "speaker", "is_current", "archived_at")
        .order_by("id")
    )
    live = [e for e in entries if e.is_current and e.archived_at is None]
    outcome = IndexOutcome()
    if live:
        outcome = entries_graph_index(
            account_id=live[0].account_id,
            entries=live,
            known_names={e.speaker for e in live if e.speaker},
        )
    kept = {e.pk for e in live}
    gone = [pk for pk in dict.fromkeys(entry_ids) if pk not in kept]
    if not gone:
        return outcome
    account_id = (
        MemoryContext.objects.filter(pk=context_id).values_list("account_id", flat=True).first()
    )
    if account_id is not None:
        outcome.add(
            mentions_replace(
                account_id=account_id,
                space=MEMORY_ENTRIES,
                units=[UnitEntities(pk, context_id, [], []) for pk in gone],
                origin="memory",
            )
        )
    return outcome


def contexts_unlink(context_ids: Sequence[int]) -> int:
    """The graph mentions of the entries gone from these (deleted) contexts dropped: how many
    nodes they named."""
    return mentions_forget(space=MEMORY_ENTRIES, scope_ids=context_ids)


def contexts_unlink_soon(context_ids: Sequence[int]) -> None:
    """Once a context's deletion commits: ``contexts_unlink`` by a worker (by this process with
    the broker down)."""
    from memory import tasks

    mentions_forget_soon(tasks.forget_context_links, MEMORY_ENTRIES, context_ids)
