"""A shared pool's data: writes by dot path that never lose an update, and the bulletin's events.

Each write locks the pool's row (``SELECT ... FOR UPDATE``), checks the caller may still write
and the ``expected_version`` if one was given (409 ``version_conflict``), applies the change to
the data it read under the lock, and writes the data, its size, the next version and the sliding
expiry in one UPDATE that also enforces the quota. A write under ``agent_bulletin`` also records
a ``MemoryPoolEvent`` and, once committed, publishes it on Redis pub/sub (best-effort)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, PayloadTooLarge, PermissionDenied, ValidationFailed
from memory import names
from memory.models import MemoryPool, MemoryPoolEvent
from memory.pools import json_paths
from memory.pools import leaves as pool_index
from memory.pools.access import BULLETIN, pool_not_found, quota_of, visible_pools
from memory.redis_store import UNAVAILABLE, memory_redis, redis_prefix
from memory.roles import MANAGE_MEMORY
from memory.tier_index import pool_leaves_index

logger = logging.getLogger("engram.memory")
_TABLE = MemoryPool._meta.db_table


def json_size(value: Any) -> int:
    """Bytes of ``value`` as PostgreSQL stores and prints jsonb: the unit of the quota."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT octet_length(%s::jsonb::text)", [names.json_text(value)])
        return int(cursor.fetchone()[0])


def _quota_exceeded(size: int | None, limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The pool's data would exceed its quota of {limit} bytes.",
        code="pool_quota_exceeded",
        details={"limit": limit, **({"size": size} if size is not None else {})},
    )


# --- data --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolWrite:
    version: int
    value: Any  # at the path, afterwards (None after a delete)
    changed: bool
    size_bytes: int


def pool_data_write(
    *,
    actor: Actor,
    pool: MemoryPool,
    path: str,
    value: Any = None,
    mode: str = MemoryPoolEvent.Action.WRITE,
    expected_version: int | None = None,
) -> PoolWrite:
    """Write (``write``: replace), merge (``merge``: RFC 7396 merge patch of an object into the
    object at the path) or delete (``delete``) the value at a dot path; ``""`` is the whole data,
    which must stay an object. Objects missing on the way are created. A write that changes
    nothing keeps the version and records no event.

    409 ``version_conflict`` when ``expected_version`` is not the pool's version; 403
    ``pool_write_denied`` without write access; 413 ``pool_quota_exceeded`` past the quota.
    """
    if actor.agent is None:
        actor.require(pool.account_id, MANAGE_MEMORY)
    segments = names.parse_path(path)
    if mode not in MemoryPoolEvent.Action.values:
        raise ValueError(f"unknown mode {mode}")
    if mode == MemoryPoolEvent.Action.MERGE and not isinstance(value, dict):
        raise ValidationFailed("A merge takes a JSON object.", code="merge_requires_object")
    if not segments:
        if mode == MemoryPoolEvent.Action.DELETE:
            raise ValidationFailed("Name the key to delete.", code="invalid_path")
        if not isinstance(value, dict):
            raise ValidationFailed("A pool's data is a JSON object.", code="invalid_data")
    now = timezone.now()
    with transaction.atomic():
        locked = (
            visible_pools(actor, MemoryPool.objects.select_for_update(of=("self",)))
            .filter(pk=pool.pk)
            .values(  # type: ignore[misc]  # can_write is visible_pools' annotation
                "data", "version", "retention_policy", "can_write", "pool_id", "account_id"
            )
            .first()
        )
        if locked is None:
            raise pool_not_found()
        if not locked["can_write"]:
            raise PermissionDenied(
                "This agent may read the pool but not write it.", code="pool_write_denied"
            )
        if expected_version is not None and expected_version != locked["version"]:
            raise Conflict(
                "The pool changed since that version: read it again.",
                code="version_conflict",
                details={"expected_version": expected_version, "version": locked["version"]},
            )
        data: dict[str, Any] = locked["data"] if isinstance(locked["data"], dict) else {}
        text = ".".join(segments)
        region_before = pool_index.region(data, text)
        bulletin_before = json_paths.get(data, (BULLETIN,))
        changed, data, after = _apply(data, segments, value, mode)
        if not changed:
            return PoolWrite(locked["version"], after, False, pool.data_size_bytes)
        policy = locked["retention_policy"] or {}
        quota = quota_of(policy)
        ttl = policy.get("ttl_seconds")
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                UPDATE {_TABLE} AS p SET data = v.d, data_size_bytes = octet_length(v.d::text),
                    version = p.version + 1, updated_at = %(now)s,
                    expires_at = CASE WHEN %(ttl)s::integer IS NULL THEN p.expires_at
                        ELSE %(now)s + make_interval(secs => %(ttl)s::integer) END
                FROM (SELECT %(data)s::jsonb AS d) AS v
                WHERE p.id = %(id)s AND octet_length(v.d::text) <= %(quota)s
                RETURNING p.version, p.data_size_bytes
                """,  # noqa: S608  (the table name is the model's; values are parameters)
                {
                    "data": names.json_text(data),
                    "now": now,
                    "ttl": ttl,
                    "id": pool.pk,
                    "quota": quota,
                },
            )
            row = cursor.fetchone()
        if row is None:
            raise _quota_exceeded(json_size(data), quota)
        version, size = int(row[0]), int(row[1])
        removed, added = pool_index.region_changes(region_before, pool_index.region(data, text))
        pool_leaves_index(
            account_id=locked["account_id"], pool_id=pool.pk, removed=removed, added=added
        )
        audit_record(
            actor=actor,
            action=f"memory.pool.data.{mode}",
            account_id=locked["account_id"],
            target=pool,
            changes={"path": text, "version": version},
        )
        event = _bulletin_event(actor, pool, segments, mode, version, after, bulletin_before, data)
        if event is not None:
            transaction.on_commit(lambda: pool_event_publish(event, locked["pool_id"]))
    return PoolWrite(version, after, True, size)


def _apply(
    data: dict[str, Any], segments: tuple[str, ...], value: Any, mode: str
) -> tuple[bool, dict[str, Any], Any]:
    """(changed, the new data, the value at the path afterwards)."""
    current = json_paths.get(data, segments)
    if mode == MemoryPoolEvent.Action.DELETE:
        json_paths.delete(data, segments)
        return True, data, None
    if mode == MemoryPoolEvent.Action.MERGE:
        value = json_paths.merge_patch(current if json_paths.exists(current) else {}, value)
    if json_paths.exists(current) and json_paths.same(current, value):
        return False, data, current
    if not segments:
        return True, value, value
    json_paths.put(data, segments, value)
    return True, data, value


def _bulletin_event(
    actor: Actor,
    pool: MemoryPool,
    segments: tuple[str, ...],
    mode: str,
    version: int,
    after: Any,
    bulletin_before: Any,
    data: dict[str, Any],
) -> MemoryPoolEvent | None:
    """The event of a write under ``agent_bulletin`` (or of a whole-data write that changed
    the bulletin), recorded in the write's transaction."""
    if segments:
        if segments[0] != BULLETIN:
            return None
        path, value = ".".join(segments), after
    else:
        bulletin_after = json_paths.get(data, (BULLETIN,))
        if json_paths.exists(bulletin_before) == json_paths.exists(bulletin_after) and (
            not json_paths.exists(bulletin_after)
            or json_paths.same(bulletin_before, bulletin_after)
        ):
            return None
        path = BULLETIN
        value = bulletin_after if json_paths.exists(bulletin_after) else None
    return MemoryPoolEvent.objects.create(
        account_id=pool.account_id,
        pool=pool,
        version=version,
        path=path,
        action=mode,
        value=value,
        agent=actor.agent,
    )


def pool_events_channel(account_id: int, pool_id: str) -> str:
    """The Redis pub/sub channel of a pool's bulletin events."""
    return f"{redis_prefix()}:pool-events:{account_id}:{pool_id}"


def pool_event_payload(event: MemoryPoolEvent, pool_id: str) -> dict[str, Any]:
    return {
        "id": event.pk,
        "event": "memory_pool_key_write",
        "is_bulletin": True,
        "pool_id": pool_id,
        "version": event.version,
        "path": event.path,
        "action": event.action,
        "value": event.value,
        "agent_id": event.agent_id,
        "created_at": event.created_at.isoformat(),
    }


def pool_event_publish(event: MemoryPoolEvent, pool_id: str) -> int:
    """Publish a committed event (best-effort); how many subscribers received it."""
    channel = pool_events_channel(event.account_id, pool_id)
    try:
        return int(memory_redis().publish(channel, json.dumps(pool_event_payload(event, pool_id))))
    except UNAVAILABLE as exc:
        logger.warning("pool event %s not published (Redis unavailable): %s", event.pk, exc)
        return 0
