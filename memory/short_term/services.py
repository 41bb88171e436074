"""Short-term memory writes: an agent's entries per session in PostgreSQL, each with a TTL.

An entry is live while ``expires_at`` is in the future; every statement here and in the
selectors says so in its WHERE clause, so an expired entry is gone for every read and write at
once, whether or not the clean-up job (``short_term_prune_expired``) has deleted its row.

The agent's own writes are single statements: the upsert (``INSERT ... ON CONFLICT``, after
locking the row it may replace, to tell a new entry from a replaced one), the read that counts an
access and the TTL refresh (``UPDATE ... RETURNING``) cannot race into a lost count or a
resurrected entry. The ORM cannot express those, so they are raw SQL with parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record, audit_record_many
from core.errors import NotFound, PayloadTooLarge, ValidationFailed
from core.writes import changes_of, changes_validate, row_delete, row_update
from memory import names
from memory.agents import acting_agent
from memory.models import ShortTermEntry
from memory.roles import MANAGE_MEMORY
from memory.spaces import short_term_text
from memory.tier_index import short_term_index

# What people may change on an entry in the admin.
UPDATABLE_FIELDS = ("value", "memory_type")
# Entries one batch write may hold.
BATCH_MAX = 1000
# Rows deleted per transaction by the clean-up job.
PRUNE_BATCH = 5000

_TABLE = ShortTermEntry._meta.db_table
_LIVE = (
    'agent_id = %(agent)s AND session_id = %(session)s AND "key" = %(key)s AND expires_at > %(now)s'
)


def _not_found() -> NotFound:
    return NotFound("No such key in this short-term memory.", code="short_term_key_not_found")


def ttl_seconds(ttl: int | None) -> int:
    """``ttl`` (1 to SHORT_TERM_MAX_TTL seconds) or the default."""
    if ttl is None:
        return int(settings.SHORT_TERM_DEFAULT_TTL)
    limit = int(settings.SHORT_TERM_MAX_TTL)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 1 <= ttl <= limit:
        raise ValidationFailed(
            f"ttl must be 1 to {limit} seconds.",
            code="invalid_ttl",
            details={"min": 1, "max": limit},
        )
    return ttl


def _encoded(value: Any) -> str:
    text = names.json_text(value, ensure_ascii=False, separators=(",", ":"))
    size, limit = len(text.encode()), int(settings.SHORT_TERM_MAX_VALUE_BYTES)
    if size > limit:
        raise PayloadTooLarge(
            f"The value is {size} bytes; short-term memory takes at most {limit}.",
            code="value_too_large",
            details={"limit": limit, "size": size},
        )
    return text


def _memory_type(memory_type: str) -> str:
    if memory_type not in ShortTermEntry.MemoryType.values:
        raise ValidationFailed(
            "Unknown memory type.",
            code="invalid_memory_type",
            details={"choices": list(ShortTermEntry.MemoryType.values)},
        )
    return memory_type


def _returning(sql: str, params: dict[str, Any]) -> ShortTermEntry | None:
    rows = list(ShortTermEntry.objects.raw(sql, params))
    return rows[0] if rows else None


def short_term_put(
    *,
    actor: Actor,
    session_id: str,
    key: str,
    value: Any,
    memory_type: str = ShortTermEntry.MemoryType.TASK_CONTEXT,
    ttl: int | None = None,
) -> tuple[ShortTermEntry, bool]:
    """Store ``value`` under (session, key) for ``ttl`` seconds; returns the entry and whether
    it is new. Replacing a live entry keeps its access count and creation time; replacing an
    expired one starts afresh, as a new entry."""
    ((entry, new),) = short_term_put_batch(
        actor=actor,
        session_id=session_id,
        entries=[{"key": key, "value": value, "memory_type": memory_type, "ttl": ttl}],
    )
    return entry, new


def short_term_put_batch(
    *, actor: Actor, session_id: str, entries: list[dict[str, Any]]
) -> list[tuple[ShortTermEntry, bool]]:
    """Store up to BATCH_MAX entries of one session at once, all or none: each a dict with
    ``key``, ``value`` and optionally ``memory_type`` and ``ttl``, exactly as ``short_term_put``
    stores one (same checks, same replace semantics, one audit event per entry), in one
    transaction of three statements. Returns (entry, new) in the order given. A key given twice is
    refused (400 ``duplicate_key``): which value should win would be a guess."""
    agent = acting_agent(actor)
    names.check_session_id(session_id)
    if not 1 <= len(entries) <= BATCH_MAX:
        raise ValidationFailed(
            f"A batch holds 1 to {BATCH_MAX} entries.",
            code="invalid_batch",
            details={"min": 1, "max": BATCH_MAX},
        )
    keys, values, types, ttls = [], [], [], []
    for item in entries:
        names.check_key(item["key"])
        keys.append(item["key"])
        values.append(_encoded(item["value"]))
        types.append(
            _memory_type(item.get("memory_type") or ShortTermEntry.MemoryType.TASK_CONTEXT)
        )
        ttls.append(ttl_seconds(item.get("ttl")))
    if len(set(keys)) != len(keys):
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        raise ValidationFailed(
            "A key appears more than once in the batch.",
            code="duplicate_key",
            details={"keys": duplicates[:20]},
        )
    params: dict[str, Any] = {
        "account": agent.account_id,
        "agent": agent.pk,
        "session": session_id,
        "keys": keys,
        "values": values,
        "types": types,
        "ttls": ttls,
        "now": timezone.now(),
    }
    sql = f"""
        INSERT INTO {_TABLE} AS e (account_id, agent_id, session_id, "key", value, memory_type,
            ttl_seconds, expires_at, access_count, last_accessed_at, created_at, updated_at,
            keyword_length)
        SELECT %(account)s, %(agent)s, %(session)s, b.key, b.value::jsonb, b.type, b.ttl,
            %(now)s + make_interval(secs => b.ttl), 0, NULL, %(now)s, %(now)s, 0
        FROM unnest(%(keys)s::text[], %(values)s::text[], %(types)s::text[], %(ttls)s::int[])
            AS b(key, value, type, ttl)
        ON CONFLICT ON CONSTRAINT stm_unique_key_per_session DO UPDATE SET
            value = EXCLUDED.value, memory_type = EXCLUDED.memory_type,
            ttl_seconds = EXCLUDED.ttl_seconds, expires_at = EXCLUDED.expires_at,
            updated_at = EXCLUDED.updated_at,
            access_count = CASE WHEN e.expires_at > %(now)s THEN e.access_count ELSE 0 END,
            last_accessed_at = CASE WHEN e.expires_at > %(now)s THEN e.last_accessed_at END,
            created_at = CASE WHEN e.expires_at > %(now)s THEN e.created_at
                ELSE EXCLUDED.created_at END
        RETURNING e.*
    """  # noqa: S608  (the table name is the model's; values are parameters)
    with transaction.atomic():
        # Lock the entries being replaced, if any: whether each was live decides "new" (two
        # concurrent first stores of one key may both be told "new"; the second replaced).
        with connection.cursor() as cursor:
            cursor.execute(
                f'SELECT id, "key", expires_at > %(now)s FROM {_TABLE} '  # noqa: S608
                "WHERE agent_id = %(agent)s AND session_id = %(session)s "
                'AND "key" = ANY(%(keys)s) ORDER BY id FOR UPDATE',
                params,
            )
            replaced = cursor.fetchall()
        live = {key for _, key, alive in replaced if alive}
        stored = {entry.key: entry for entry in ShortTermEntry.objects.raw(sql, params)}
        short_term_index(
            agent_id=agent.pk,
            leaving=[entry_id for entry_id, _, _ in replaced],
            coming=[(e.pk, short_term_text(e.key, e.value)) for e in stored.values()],
        )
        audit_record_many(
            actor=actor,
            action="memory.short_term.put",
            account_id=agent.account_id,
            events=[
                (
                    stored[key],
                    {
                        "session_id": session_id,
                        "key": key,
                        "memory_type": memory_type,
                        "ttl_seconds": ttl,
                    },
                )
                for key, memory_type, ttl in zip(keys, types, ttls, strict=True)
            ],
        )
    return [(stored[key], key not in live) for key in keys]


def short_term_read(*, actor: Actor, session_id: str, key: str) -> ShortTermEntry:
    """The live entry, its access counted in the same statement (concurrent reads each
    count). A read is not audited."""
    agent = acting_agent(actor)
    names.check_session_id(session_id)
    names.check_key(key)
    sql = f"""
        UPDATE {_TABLE} SET access_count = access_count + 1, last_accessed_at = %(now)s
        WHERE {_LIVE} RETURNING *
    """  # noqa: S608
    params = {"agent": agent.pk, "session": session_id, "key": key, "now": timezone.now()}
    entry = _returning(sql, params)
    if entry is None:
        raise _not_found()
    return entry


def short_term_refresh(
    *, actor: Actor, session_id: str, key: str, ttl: int | None = None
) -> ShortTermEntry:
    """Expire the live entry ``ttl`` seconds from now (default: its own ``ttl_seconds``, which
    a given ``ttl`` replaces). An expired entry cannot be refreshed: 404."""
    agent = acting_agent(actor)
    names.check_session_id(session_id)
    names.check_key(key)
    seconds = ttl_seconds(ttl) if ttl is not None else None
    sql = f"""
        UPDATE {_TABLE} SET ttl_seconds = COALESCE(%(ttl)s::integer, ttl_seconds),
            expires_at = %(now)s + make_interval(secs => COALESCE(%(ttl)s::integer, ttl_seconds)),
            updated_at = %(now)s
        WHERE {_LIVE} RETURNING *
    """  # noqa: S608
    params = {
        "agent": agent.pk,
        "session": session_id,
        "key": key,
        "now": timezone.now(),
        "ttl": seconds,
    }
    with transaction.atomic():
        entry = _returning(sql, params)
        if entry is None:
            raise _not_found()
        audit_record(
            actor=actor,
            action="memory.short_term.refresh",
            account_id=agent.account_id,
            target=entry,
            changes={"ttl_seconds": entry.ttl_seconds, "expires_at": entry.expires_at},
        )
    return entry


def short_term_remove(*, actor: Actor, session_id: str, key: str) -> None:
    """Delete the live entry (an expired one is already gone: 404)."""
    agent = acting_agent(actor)
    names.check_session_id(session_id)
    names.check_key(key)
    params: dict[str, Any] = {
        "agent": agent.pk,
        "session": session_id,
        "key": key,
        "now": timezone.now(),
    }
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {_TABLE} WHERE {_LIVE} FOR UPDATE", params)  # noqa: S608
            row = cursor.fetchone()
        if row is None:
            raise _not_found()
        short_term_index(agent_id=agent.pk, leaving=[row[0]], coming=[])
        ShortTermEntry.objects.filter(pk=row[0]).delete()
        audit_record(
            actor=actor,
            action="memory.short_term.delete",
            account_id=agent.account_id,
            target_type=ShortTermEntry._meta.label_lower,
            target_id=row[0],
            changes={"session_id": session_id, "key": key},
        )


# --- for people (the admin) ------------------------------------------------------------------


def short_term_update(*, actor: Actor, entry: ShortTermEntry, **fields: Any) -> ShortTermEntry:
    """Change an entry's value or memory type (operators; its TTL is refreshed separately)."""
    actor.require(entry.account_id, MANAGE_MEMORY)
    changes = changes_of(entry, fields, UPDATABLE_FIELDS)
    if not changes:
        return entry
    if "value" in changes:
        _encoded(changes["value"])
    if "memory_type" in changes:
        _memory_type(changes["memory_type"])
    changes_validate(entry, changes)
    reindex = None
    if "value" in changes:

        def reindex() -> None:
            ShortTermEntry.objects.select_for_update().filter(pk=entry.pk).first()
            short_term_index(
                agent_id=entry.agent_id,
                leaving=[entry.pk],
                coming=[(entry.pk, short_term_text(entry.key, changes["value"]))],
            )

    return row_update(
        actor=actor,
        instance=entry,
        changes=changes,
        then=reindex,
        action="memory.short_term.update",
        account_id=entry.account_id,
        audit_changes={k: v for k, v in changes.items() if k != "value"}
        | ({"value": "(changed)"} if "value" in changes else {}),
        missing=_not_found,
    )


def short_term_entry_refresh(
    *, actor: Actor, entry: ShortTermEntry, ttl: int | None = None
) -> ShortTermEntry:
    """The admin's "refresh TTL": as ``short_term_refresh``, on an entry people chose."""
    actor.require(entry.account_id, MANAGE_MEMORY)
    seconds = ttl_seconds(ttl) if ttl is not None else entry.ttl_seconds
    now = timezone.now()
    with transaction.atomic():
        updated = ShortTermEntry.objects.filter(pk=entry.pk, expires_at__gt=now).update(
            ttl_seconds=seconds, expires_at=now + timedelta(seconds=seconds), updated_at=now
        )
        if not updated:
            raise NotFound("This entry has expired.", code="short_term_key_not_found")
        audit_record(
            actor=actor,
            action="memory.short_term.refresh",
            account_id=entry.account_id,
            target=entry,
            changes={"ttl_seconds": seconds},
        )
    entry.refresh_from_db()
    return entry


def short_term_delete(*, actor: Actor, entry: ShortTermEntry) -> None:
    actor.require(entry.account_id, MANAGE_MEMORY)
    with transaction.atomic():
        if ShortTermEntry.objects.select_for_update().filter(pk=entry.pk).exists():
            short_term_index(agent_id=entry.agent_id, leaving=[entry.pk], coming=[])
        _row_delete(actor, entry)


def _row_delete(actor: Actor, entry: ShortTermEntry) -> None:
    row_delete(
        actor=actor,
        instance=entry,
        action="memory.short_term.delete",
        account_id=entry.account_id,
        changes={"session_id": entry.session_id, "key": entry.key},
    )


# --- clean-up ---------------------------------------------------------------------------------


def short_term_prune_expired(
    *, dry_run: bool = False, batch_size: int | None = None, account_id: int | None = None
) -> dict[str, int]:
    """Delete expired entries, ``batch_size`` per transaction (oldest expiry first, along the
    ``expires_at`` index). An entry refreshed or replaced meanwhile is live again and kept: the
    DELETE checks the expiry itself. A dry run counts what a run would delete. ``account_id``:
    only that account's entries (consolidation run for one account)."""
    now = timezone.now()
    expired = ShortTermEntry.objects.filter(expires_at__lte=now)
    if account_id is not None:
        expired = expired.filter(account_id=account_id)
    if dry_run:
        return {"entries": expired.count(), "dry_run": 1}
    batch_size = batch_size or PRUNE_BATCH
    deleted = 0
    while True:
        with transaction.atomic():
            ids = list(expired.order_by("expires_at").values_list("pk", flat=True)[:batch_size])
            if not ids:
                break
            count = _delete_expired(ids, now)
        deleted += count
        if len(ids) < batch_size:
            break
    return {"entries": deleted}


def _delete_expired(ids: Sequence[int], now: datetime) -> int:
    """Delete those of ``ids`` still expired (one refreshed meanwhile is kept), out of their
    agents' indexes first; agent by agent, each entry locked before its agent's index."""
    by_agent: dict[int, list[int]] = {}
    rows = (
        ShortTermEntry.objects.select_for_update()
        .filter(pk__in=list(ids), expires_at__lte=now)
        .order_by("agent_id", "pk")
        .values_list("agent_id", "pk")
    )
    for agent_id, entry_id in rows:
        by_agent.setdefault(agent_id, []).append(entry_id)
    deleted = 0
    for agent_id, entry_ids in by_agent.items():
        short_term_index(agent_id=agent_id, leaving=entry_ids, coming=[])
        count, _ = ShortTermEntry.objects.filter(pk__in=entry_ids).delete()
        deleted += count
    return deleted
