"""Reads recorded without locking what writers need (docs/memory/long-term.md, "Reads and writes at
the same time").

A read (a search's hits, an entry read by id, a router read, a memory tool's search) counts on
each entry it returned (``access_count``, ``last_accessed_at``: a used memory stays recent) and
leaves a row in the access log. Written by the reading request itself, that took row locks on
the entries and, through the log row's foreign key, a share lock on their context, while a
writer of the same context held the context's lock and updated the same entries: PostgreSQL
broke the cycle by killing one of them (a deadlock).

So a read only appends one record to a Redis list (``entries_accessed``: one round trip, no
database write) and a job applies the records (``access_flush``):

1. **Claim** atomically: the buffer is renamed to a claim of its own (a Lua script, which also
   notes the claim's time in a sorted set); reads go on into a new buffer.
2. **Apply**, one context at a time in ascending id, each in one transaction that takes the
   locks in the writers' order (the context's row, then its entries in ascending id): the
   counts go to the current version of each entry read (an update since the read made a new
   version: the read counts on what the memory is now), the log rows to the versions read.
   The transaction also marks (claim, context) as applied (``AccessFlush``).
3. **Delete** the claim. A flush that died before this leaves the claim behind; the next flush
   takes over claims older than the job's time limit and skips the contexts already marked, so
   nothing is applied twice and nothing is lost.

The flush runs every ``FLUSH_EVERY_SECONDS`` (``memory.flush_accesses``) and as soon as the
buffer holds ``MEMORY_ACCESS_BUFFER_MAX`` records. When Redis is unavailable, a read still
answers and its access is dropped, with a warning: counts and the log are statistics; a read
must not fail, nor wait on a writer, for them. Beyond ``HARD_LIMIT_FACTOR`` times the bound
(no worker has flushed for a long while) new records are dropped too, with a warning.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.actors import Actor
from core.models import Agent
from core.transactions import retry_on_conflict
from memory.long_term.context_access import readable_contexts
from memory.models import AccessFlush, MemoryAccessLog, MemoryEntry
from memory.redis_store import UNAVAILABLE, memory_redis, redis_prefix

logger = logging.getLogger("engram.memory")

FLUSH_EVERY_SECONDS = 10
# The flush task's hard time limit; a claim older than twice that is abandoned.
FLUSH_TIME_LIMIT_SECONDS = 120
STALE_CLAIM_SECONDS = 2 * FLUSH_TIME_LIMIT_SECONDS
HARD_LIMIT_FACTOR = 20
# Records read from a claim per round trip.
READ_PAGE = 5000
MARK_RETENTION = timedelta(days=1)

_PUSH = """
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
return redis.call('RPUSH', KEYS[1], ARGV[1])
"""
_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2])
return redis.call('LLEN', KEYS[2])
"""


def _key(name: str) -> str:
    return f"{redis_prefix()}:access:{name}"


def _claim_key(token: str) -> str:
    return _key(f"claim:{token}")


def buffer_length() -> int:
    return int(memory_redis().llen(_key("buffer")))


def entries_accessed(
    *, actor: Actor, entries: Sequence[MemoryEntry], action: str, query: str = ""
) -> None:
    """Record that ``actor`` read ``entries`` (one read, or the hits of one search): each
    entry's ``access_count`` and ``last_accessed_at``, and an access log row per entry, applied
    by the next flush (module docstring). Only entries in contexts the actor may read count;
    the instances are updated to match, so an answer shows its own read."""
    unique = list({entry.pk: entry for entry in entries}.values())
    if not unique:
        return
    contexts = {entry.context_id for entry in unique}
    readable = set(readable_contexts(actor).filter(pk__in=contexts).values_list("pk", flat=True))
    counted = [entry for entry in unique if entry.context_id in readable]
    if not counted:
        return
    now = timezone.now()
    record = {
        "t": now.timestamp(),
        "g": actor.agent.pk if actor.agent else None,
        "w": str(actor)[:200],
        "x": action,
        "q": query,
        "e": [[entry.pk, entry.context_id] for entry in counted],
    }
    bound = settings.MEMORY_ACCESS_BUFFER_MAX
    try:
        length = int(
            memory_redis().eval(
                _PUSH, 1, _key("buffer"), json.dumps(record), bound * HARD_LIMIT_FACTOR
            )
        )
    except UNAVAILABLE as exc:
        logger.warning("read not recorded (Redis unavailable): %s", exc)
        return
    if length < 0:
        logger.warning("read not recorded: the access buffer is full (no flush has run)")
        return
    if length % bound == 0:
        _flush_soon()
    for entry in counted:
        entry.access_count += 1
        entry.last_accessed_at = now


def _flush_soon() -> None:
    from core.queue import task_send
    from memory import tasks

    task_send(tasks.flush_accesses)


def access_flush() -> dict[str, int]:
    """Apply every buffered read (module docstring): claims a flush left behind first, then
    the buffer. Returns what it applied."""
    client = memory_redis()
    counts = {"claims": 0, "reads": 0, "entries": 0, "contexts": 0, "skipped": 0}
    abandoned = client.zrangebyscore(_key("claims"), "-inf", time.time() - STALE_CLAIM_SECONDS)
    for token in abandoned:
        _claim_apply(token.decode() if isinstance(token, bytes) else str(token), counts)
    token = uuid.uuid4().hex
    claimed = int(
        client.eval(
            _CLAIM, 3, _key("buffer"), _claim_key(token), _key("claims"), time.time(), token
        )
    )
    if claimed:
        _claim_apply(token, counts)
    AccessFlush.objects.filter(applied_at__lt=timezone.now() - MARK_RETENTION).delete()
    return counts


def accesses_applied() -> None:
    """Before a job that judges entries by their last read (rot, importance decay): every
    buffered read applied. With Redis unavailable the job goes on with the reads applied so
    far (it runs again tomorrow)."""
    try:
        access_flush()
    except UNAVAILABLE as exc:
        logger.warning("buffered reads not applied before the job (Redis unavailable): %s", exc)


def _claim_apply(token: str, counts: dict[str, int]) -> None:
    client = memory_redis()
    key = _claim_key(token)
    by_context: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    start = 0
    while True:
        page = client.lrange(key, start, start + READ_PAGE - 1)
        for raw in page:
            record = json.loads(raw)
            for entry_id, context_id in record["e"]:
                by_context[int(context_id)].append((int(entry_id), record))
        if len(page) < READ_PAGE:
            break
        start += READ_PAGE
    for context_id in sorted(by_context):
        applied = _context_apply(token, context_id, by_context[context_id])
        if applied is None:
            counts["skipped"] += 1
            continue
        counts["contexts"] += 1
        counts["reads"] += len(by_context[context_id])
        counts["entries"] += applied
    client.delete(key)
    client.zrem(_key("claims"), token)
    AccessFlush.objects.filter(token=token).delete()
    counts["claims"] += 1


@retry_on_conflict
def _context_apply(
    token: str, context_id: int, reads: list[tuple[int, dict[str, Any]]]
) -> int | None:
    """One context's reads of one claim, in one transaction; None when they were applied
    already (or the context is gone). Returns the entries whose counts changed."""
    entry_table, log_table = MemoryEntry._meta.db_table, MemoryAccessLog._meta.db_table
    agent_table = Agent._meta.db_table
    ids = [entry_id for entry_id, _ in reads]
    at = [datetime.fromtimestamp(record["t"], tz=UTC) for _, record in reads]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_accessflush (token, context_id, applied_at) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            [token, context_id, timezone.now()],
        )
        if cursor.fetchone() is None:
            return None
        cursor.execute(
            "SELECT account_id FROM memory_memorycontext WHERE id = %s FOR NO KEY UPDATE",
            [context_id],
        )
        row = cursor.fetchone()
        if row is None:
            return None  # deleted since: its entries and their log went with it
        account_id = row[0]
        # The counts go to the current version of what was read; its rows locked in id order.
        cursor.execute(
            f"""
            SELECT e.id, t.n, t.at FROM {entry_table} e
            JOIN (
                SELECT coalesce(cur.id, r.id) AS id, count(*) AS n, max(v.at) AS at
                FROM unnest(%s::bigint[], %s::timestamptz[]) AS v(id, at)
                JOIN {entry_table} r ON r.id = v.id AND r.context_id = %s
                LEFT JOIN {entry_table} cur ON cur.lineage = r.lineage AND cur.is_current
                GROUP BY 1
            ) t ON t.id = e.id
            ORDER BY e.id
            FOR NO KEY UPDATE OF e
            """,  # noqa: S608 - table names are the models'
            [ids, at, context_id],
        )
        targets = cursor.fetchall()
        if targets:
            cursor.execute(
                f"""
                UPDATE {entry_table} e SET access_count = e.access_count + v.n,
                    last_accessed_at = greatest(e.last_accessed_at, v.at)
                FROM unnest(%s::bigint[], %s::int[], %s::timestamptz[]) AS v(id, n, at)
                WHERE e.id = v.id
                """,  # noqa: S608 - table names are the models'
                [[t[0] for t in targets], [t[1] for t in targets], [t[2] for t in targets]],
            )
        # One log row per entry read; an entry or agent deleted since is logged as gone.
        cursor.execute(
            f"""
            INSERT INTO {log_table} (account_id, context_id, entry_id, agent_id, actor, action,
                                     query, result_count, created_at)
            SELECT %s, %s, e.id, a.id, v.actor, v.action, v.query, v.n, v.at
            FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[], %s::text[],
                        %s::int[], %s::timestamptz[], %s::int[])
                 AS v(entry, agent, actor, action, query, n, at, ord)
            LEFT JOIN {entry_table} e ON e.id = v.entry AND e.context_id = %s
            LEFT JOIN {agent_table} a ON a.id = v.agent
            ORDER BY v.at, v.ord
            """,  # noqa: S608 - table names are the models'
            [
                account_id,
                context_id,
                ids,
                [record["g"] for _, record in reads],
                [record["w"] for _, record in reads],
                [record["x"] for _, record in reads],
                [record["q"] for _, record in reads],
                [len(record["e"]) for _, record in reads],
                at,
                list(range(len(reads))),
                context_id,
            ],
        )
    return len(targets)
