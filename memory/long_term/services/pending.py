"""A conversation's messages, indexed after their write commits (docs/memory/conversations.md,
"When a message becomes searchable").

Indexing a message costs far more than storing it: its BM25 postings cover the lines around it
(``memory.long_term.indexing``: about 190 postings for a 500-character line), and the local
embedding model embeds about 25 texts a second on two cores. A batch of 1,000 messages took minutes
when its request did both. So ``messages_append`` stores the rows and queues each new message, and
each older one whose indexed text the new ones change, in ``PendingIndex``
(``pending_queue``, inside the write's transaction); a worker then indexes the context
(``pending_index_run``, the ``memory.index_pending`` task sent on commit, one at a time per
context: ``index_soon``; a run hands over to a new task after ``RUN_BUDGET_SECONDS``):

1. **Keyword pass**, up to ``KEYWORD_BATCH`` entries at a time: claim the rows (a conditional
   UPDATE, ``FOR UPDATE SKIP LOCKED``), compute their indexed texts outside any transaction,
   then, holding the context's lock, replace their postings and the context's statistics,
   only for the rows still holding the claim. The messages are found by keyword from here on.
2. **Embedding pass**, ``EMBED_BATCH`` at a time, the same way; the embedding provider is
   called outside any transaction. The messages are found by meaning from here on.

A row queued again while a worker computed (a newer message changed its neighbours) lost its
claim: that worker leaves it, the next run indexes it with the new text. A claim older than
the task's hard time limit (a worker that died) is taken over. An embedding failure releases
the claim with the error and the task retries; after ``MAX_ATTEMPTS`` the row is ``failed``,
shown on the conversation's admin page (``memory.conversations.selectors.index_waiting``),
until an operator retries it (``pending_retry_failed``, an admin action).
``memory.index_pending`` also runs every minute for contexts whose task was never sent (the
broker was down) or died.

The invariant the other writers rely on (``index.index_apply``): a current, unarchived entry
either has its postings or waits here with ``indexed`` false.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core.actors import Actor
from core.embeddings import generations, get_embedding_provider
from core.embeddings.base import EmbeddingError
from core.errors import NotFound
from core.queue import task_send, task_send_on_commit
from core.transactions import retry_on_conflict
from memory.long_term import indexing
from memory.long_term.services.index import context_lock
from memory.long_term.services.readings import Reading, readings_plan, readings_store
from memory.models import MemoryContext, MemoryEntry, PendingIndex
from memory.redis_store import UNAVAILABLE, memory_redis, redis_prefix
from memory.roles import MANAGE_MEMORY
from memory.spaces import MEMORY_ENTRIES
from memory.tuning import TUNING
from rag import keyword
from rag.vector import vector_literal

logger = logging.getLogger("engram.memory")

KEYWORD_BATCH = 200
EMBED_BATCH = 16
MAX_ATTEMPTS = 5
# memory.tasks.index_pending's limits; a claim older than the hard one belongs to a dead run.
TASK_TIME_LIMIT_SECONDS = 600
TASK_SOFT_TIME_LIMIT_SECONDS = 540
STALE_CLAIM = timedelta(seconds=TASK_TIME_LIMIT_SECONDS)
# A run takes new batches for this long, then hands over to a new task: the worker's other
# tasks (the read flush every 10 s) get their turn between runs.
RUN_BUDGET_SECONDS = 10
# While a run is queued for a context, appends send no other (``index_soon``).
QUEUED_TTL_SECONDS = 60
_TABLE = PendingIndex._meta.db_table


def pending_queue(*, context_id: int, entries: Sequence[MemoryEntry], thread: str) -> None:
    """Inside the write's transaction, holding the context's lock: queue ``entries`` (new,
    saved, consecutive in ``thread``) and the older entries of the thread whose indexed text
    includes one of them (within ``TUNING.indexing.keyword_radius``; re-embedded within
    ``TUNING.indexing.embedding_radius``)."""
    first = min(entry.position for entry in entries if entry.position is not None)
    older = MemoryEntry.objects.filter(
        context_id=context_id,
        thread=thread,
        position__gte=first - TUNING.indexing.keyword_radius,
        position__lt=first,
        is_current=True,
        archived_at__isnull=True,
    ).values_list("pk", "position")
    ids = [entry.pk for entry in entries]
    embed = [True] * len(ids)
    indexed = [False] * len(ids)
    for pk, position in older:
        ids.append(pk)
        embed.append(position is not None and position >= first - TUNING.indexing.embedding_radius)
        indexed.append(True)  # not waiting yet, so indexed (the invariant above)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {_TABLE} AS p (entry_id, context_id, keyword, embed, indexed, queued_at,
                                       claim, attempts, error)
            SELECT v.id, %s, true, v.embed, v.indexed, %s, '', 0, ''
            FROM unnest(%s::bigint[], %s::bool[], %s::bool[]) AS v(id, embed, indexed)
            ON CONFLICT (entry_id) DO UPDATE SET keyword = true, embed = p.embed OR EXCLUDED.embed,
                claim = '', claimed_at = NULL, queued_at = EXCLUDED.queued_at, attempts = 0,
                error = '', failed_at = NULL
            """,  # noqa: S608 - the table name is the model's
            [context_id, timezone.now(), ids, embed, indexed],
        )


def _queued_key(context_id: int) -> str:
    return f"{redis_prefix()}:index-queued:{context_id}"


def index_soon(context_id: int) -> None:
    """After an append commits: a worker run for the context, unless one is queued and not
    started yet (a busy conversation sends one task, not one per append). With Redis
    unavailable, one is sent anyway."""
    from memory import tasks

    try:
        fresh = memory_redis().set(_queued_key(context_id), 1, nx=True, ex=QUEUED_TTL_SECONDS)
    except UNAVAILABLE:
        fresh = True
    if fresh:
        task_send(tasks.index_pending, context_id)


def index_started(context_id: int) -> None:
    """A run starts: appends from now on send a new one."""
    with contextlib.suppress(*UNAVAILABLE):
        memory_redis().delete(_queued_key(context_id))


def pending_index_run(
    *, context_id: int, budget_seconds: float = RUN_BUDGET_SECONDS
) -> dict[str, int]:
    """Index what waits in one context: the keyword pass, then the embedding pass, until
    nothing waits or ``budget_seconds`` have passed (``more`` says so). An unavailable
    embedding provider raises ``EmbeddingError`` after recording it on the rows."""
    deadline = time.monotonic() + budget_seconds
    counts = {"keyword": 0, "embedded": 0, "failed": _give_up(context_id), "more": 0}
    while True:
        if time.monotonic() >= deadline:
            counts["more"] = 1
            return counts
        done = _keyword_batch(context_id)
        if not done:
            break
        counts["keyword"] += done
    while True:
        if time.monotonic() >= deadline:
            counts["more"] = 1
            return counts
        done = _embed_batch(context_id)
        if not done:
            break
        counts["embedded"] += done
    return counts


def pending_index_all(*, context_id: int) -> dict[str, int]:
    """Everything waiting in a context indexed now, in the caller's process: what a worker does
    after an append, for callers that search right after writing and run no worker (the
    evaluation's conversation writer, benchmarks)."""
    total = {"keyword": 0, "embedded": 0, "failed": 0}
    while True:
        counts = pending_index_run(context_id=context_id)
        for name in total:
            total[name] += counts[name]
        if not counts["more"]:
            return total


@retry_on_conflict
def _give_up(context_id: int) -> int:
    """Rows that used up their attempts, unclaimed or abandoned, are failed."""
    return (
        PendingIndex.objects.filter(
            context_id=context_id, failed_at__isnull=True, attempts__gte=MAX_ATTEMPTS
        )
        .filter(_claim_free())
        .update(failed_at=timezone.now(), claim="", error=_gave_up_error())
    )


def _gave_up_error() -> str:
    return f"Gave up after {MAX_ATTEMPTS} attempts."


def _claim_free() -> Q:
    return Q(claim="") | Q(claimed_at__lt=timezone.now() - STALE_CLAIM)


def _claim(context_id: int, *, keyword_pass: bool, limit: int) -> tuple[str, list[int]]:
    token = uuid.uuid4().hex
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {_TABLE} p SET claim = %s, claimed_at = %s, attempts = p.attempts + 1
            WHERE p.entry_id IN (
                SELECT entry_id FROM {_TABLE}
                WHERE context_id = %s AND failed_at IS NULL AND attempts < %s
                  AND (claim = '' OR claimed_at < %s)
                  AND (CASE WHEN %s THEN keyword ELSE embed AND NOT keyword END)
                ORDER BY entry_id LIMIT %s FOR UPDATE SKIP LOCKED)
            RETURNING p.entry_id
            """,  # noqa: S608 - the table name is the model's
            [token, now, context_id, MAX_ATTEMPTS, now - STALE_CLAIM, keyword_pass, limit],
        )
        return token, sorted(row[0] for row in cursor.fetchall())


def _live(ids: Sequence[int]) -> list[MemoryEntry]:
    return list(
        MemoryEntry.objects.filter(pk__in=list(ids), is_current=True, archived_at__isnull=True)
        .defer("embedding")
        .order_by("pk")
    )


def _still_claimed(token: str, ids: Sequence[int]) -> dict[int, bool]:
    """Inside the swap: the rows still holding ``token`` (locked), with their ``indexed``."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT entry_id, indexed FROM {_TABLE} WHERE entry_id = ANY(%s) AND claim = %s "  # noqa: S608
            "ORDER BY entry_id FOR UPDATE",
            [list(ids), token],
        )
        return {row[0]: row[1] for row in cursor.fetchall()}


def _live_ids(ids: Sequence[int]) -> set[int]:
    """Inside the swap, under the context's lock: which are still current and unarchived."""
    return set(
        MemoryEntry.objects.filter(
            pk__in=list(ids), is_current=True, archived_at__isnull=True
        ).values_list("pk", flat=True)
    )


def _keyword_batch(context_id: int) -> int:
    token, claimed = _claim(context_id, keyword_pass=True, limit=KEYWORD_BATCH)
    if not claimed:
        return 0
    entries = _live(claimed)
    texts, _ = indexing.indexed_texts(entries)
    analysed = {
        entry.pk: keyword.chunk_terms(text) for entry, text in zip(entries, texts, strict=True)
    }
    _keyword_swap(context_id, token, claimed, analysed)
    return len(claimed)


@retry_on_conflict
def _keyword_swap(
    context_id: int, token: str, claimed: list[int], analysed: dict[int, keyword.ChunkTerms]
) -> None:
    with transaction.atomic():
        try:
            context = context_lock(context_id)
        except NotFound:
            return  # deleted: its rows went with it
        mine = _still_claimed(token, claimed)
        live = _live_ids(list(mine))
        todo = sorted(pk for pk in mine if pk in live and pk in analysed)
        removed_units, removed_terms = keyword.postings_forget(
            space=MEMORY_ENTRIES,
            scope_id=context_id,
            unit_ids=[pk for pk in todo if mine[pk]],
            delete=True,
        )
        terms = [analysed[pk] for pk in todo]
        count = context.entry_count - removed_units + len(todo)
        total = context.total_terms - removed_terms + sum(t.length for t in terms)
        keyword.postings_add(
            space=MEMORY_ENTRIES,
            scope_id=context_id,
            units=[
                keyword.IndexedUnit(unit_id=pk, terms=t) for pk, t in zip(todo, terms, strict=True)
            ],
            avg_length=total / count if count else 0.0,
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_memoryentry e SET keyword_length = v.length "
                "FROM unnest(%s::bigint[], %s::int[]) AS v(id, length) WHERE e.id = v.id",
                [todo, [t.length for t in terms]],
            )
            cursor.execute(
                "UPDATE memory_memorycontext SET entry_count = %s, total_terms = %s WHERE id = %s",
                [count, total, context_id],
            )
            cursor.execute(
                f"UPDATE {_TABLE} SET keyword = false, indexed = true, claim = '', "  # noqa: S608
                "claimed_at = NULL, attempts = 0 WHERE entry_id = ANY(%s)",
                [todo],
            )
        _settle(mine, live, todo, done_when="NOT embed")


def _settle(mine: dict[int, bool], live: set[int], todo: list[int], *, done_when: str) -> None:
    """After a swap: rows of entries out of the index since they were queued, and rows of
    ``todo`` whose work is done (``done_when``), are deleted; the rest of the claim is
    released for the next run."""
    dead = [pk for pk in mine if pk not in live]
    rest = [pk for pk in mine if pk in live and pk not in set(todo)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {_TABLE} WHERE entry_id = ANY(%s) "  # noqa: S608
            f"OR (entry_id = ANY(%s) AND {done_when})",
            [dead, todo],
        )
        if rest:
            cursor.execute(
                f"UPDATE {_TABLE} SET claim = '', claimed_at = NULL WHERE entry_id = ANY(%s)",  # noqa: S608
                [rest],
            )


def _embed_batch(context_id: int) -> int:
    token, claimed = _claim(context_id, keyword_pass=False, limit=EMBED_BATCH)
    if not claimed:
        return 0
    entries = _live(claimed)
    _, texts = indexing.indexed_texts(entries)
    provider = get_embedding_provider()
    try:
        matrix: Any = provider.embed_documents(texts) if texts else []
    except EmbeddingError as exc:
        PendingIndex.objects.filter(entry_id__in=claimed, claim=token).update(
            claim="", claimed_at=None, error=str(exc)[:2000]
        )
        raise
    vectors = {entry.pk: np.asarray(row) for entry, row in zip(entries, matrix, strict=True)}
    readings = dict(zip([entry.pk for entry in entries], readings_plan(entries), strict=True))
    _embed_swap(context_id, token, claimed, vectors, provider.model_id, readings)
    return len(claimed)


@retry_on_conflict
def _embed_swap(
    context_id: int,
    token: str,
    claimed: list[int],
    vectors: dict[int, np.ndarray],
    model: str,
    readings: dict[int, Reading | None],
) -> None:
    with transaction.atomic():
        try:
            context_lock(context_id)
        except NotFound:
            return
        mine = _still_claimed(token, claimed)
        live = _live_ids(list(mine))
        todo = sorted(pk for pk in mine if pk in live and pk in vectors)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_memoryentry e SET embedding = v.embedding::vector, "
                "embedding_model = %s "
                "FROM unnest(%s::bigint[], %s::text[]) AS v(id, embedding) WHERE e.id = v.id",
                [model, todo, [vector_literal(vectors[pk]) for pk in todo]],
            )
        generations.written("memory_entries", todo)
        readings_store((pk, readings.get(pk)) for pk in todo)
        _settle(mine, live, todo, done_when="true")


def pending_contexts(*, limit: int = 100) -> list[int]:
    """Contexts with rows a worker may take now (unclaimed, or claimed by a dead run)."""
    return list(
        PendingIndex.objects.filter(failed_at__isnull=True)
        .filter(_claim_free())
        .order_by("context_id")
        .values_list("context_id", flat=True)
        .distinct()[:limit]
    )


def pending_retry_failed(*, actor: Actor, context_id: int) -> int:
    """Failed rows of a context waiting again, their attempts reset, and a worker sent (an
    operator's action, once the provider is back): how many."""
    context = MemoryContext.objects.filter(pk=context_id).first()
    if context is None:
        raise NotFound("No such memory context.", code="context_not_found")
    actor.require(context.account_id, MANAGE_MEMORY)
    retried = PendingIndex.objects.filter(context_id=context_id, failed_at__isnull=False).update(
        failed_at=None, attempts=0, claim="", claimed_at=None, error=""
    )
    if retried:
        from memory import tasks

        task_send_on_commit(tasks.index_pending, context_id)
    return retried
