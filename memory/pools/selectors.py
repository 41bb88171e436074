"""Pool reads for agents: only live pools the agent may read (memory/pools/access.py). Every
account has its ``default`` pool from its creation (``memory/account_setup.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, JSONField, Max, Q, QuerySet
from django.db.models.expressions import RawSQL

from core.actors import Actor
from core.errors import NotFound
from memory import names
from memory.models import MemoryPool, MemoryPoolEvent, MemoryPoolGrant
from memory.pools.access import BULLETIN, pool_not_found, quota_of, visible_pools


def pool_list(
    *,
    actor: Actor,
    pool_type: str | None = None,
    scope: str | None = None,
    workflow_run_id: str | None = None,
) -> QuerySet[MemoryPool]:
    """The live pools the caller may read (the account's default pool included), without
    their data."""
    pools = visible_pools(actor).defer("data")
    if pool_type:
        pools = pools.filter(pool_type=pool_type)
    if scope:
        pools = pools.filter(scope=scope)
    if workflow_run_id:
        pools = pools.filter(workflow_run_id=workflow_run_id)
    return pools


def pool_get(*, actor: Actor, pool_id: str) -> MemoryPool:
    """A pool the caller may read, by its id (annotated with ``can_write`` and ``is_owner``;
    data deferred). Another account's pool, an expired one, one the caller may not read and a
    missing one all answer 404 ``pool_not_found``."""
    names.check_pool_id(pool_id)
    pool = visible_pools(actor).defer("data").filter(pool_id=pool_id).first()
    if pool is None:
        raise pool_not_found()
    return pool


@dataclass(frozen=True)
class PoolValue:
    path: str
    value: Any
    version: int


def pool_data_read(*, actor: Actor, pool: MemoryPool, path: str) -> PoolValue:
    """The value at a dot path (``""``: the whole data), read in PostgreSQL (``data #> path``)
    so a large pool is never loaded for one key. 404 ``path_not_found`` when absent."""
    segments = list(names.parse_path(path))
    row = (
        visible_pools(actor)
        .filter(pk=pool.pk)
        .annotate(
            value=RawSQL("data #> %s::text[]", (segments,), output_field=JSONField()),
            missing=RawSQL("(data #> %s::text[]) IS NULL", (segments,)),
        )
        .values_list("value", "missing", "version")
        .first()
    )
    if row is None:
        raise pool_not_found()
    value, missing, version = row
    if missing:
        raise NotFound("Nothing at this path.", code="path_not_found", details={"path": path})
    return PoolValue(path, value, version)


def pool_stats(*, actor: Actor, pool: MemoryPool) -> dict[str, Any]:
    """Size against quota, keys, version, grants and bulletin events of a pool."""
    row = (
        visible_pools(actor)
        .filter(pk=pool.pk)
        .annotate(
            top_level_keys=RawSQL("(SELECT count(*) FROM jsonb_object_keys(data))", ()),
            bulletin_keys=RawSQL(
                "CASE WHEN jsonb_typeof(data -> %s) = 'object' "
                "THEN (SELECT count(*) FROM jsonb_object_keys(data -> %s)) ELSE 0 END",
                (BULLETIN, BULLETIN),
            ),
        )
        .values(
            "version",
            "data_size_bytes",
            "retention_policy",
            "top_level_keys",
            "bulletin_keys",
            "created_at",
            "updated_at",
            "expires_at",
        )
        .first()
    )
    if row is None:
        raise pool_not_found()
    grants = MemoryPoolGrant.objects.filter(pool=pool).aggregate(
        read=Count("pk", filter=Q(level=MemoryPoolGrant.Level.READ)),
        write=Count("pk", filter=Q(level=MemoryPoolGrant.Level.WRITE)),
    )
    events = MemoryPoolEvent.objects.filter(pool=pool).aggregate(
        count=Count("pk"), last_at=Max("created_at")
    )
    quota = quota_of(row["retention_policy"] or {})
    return {
        "pool_id": pool.pool_id,
        "version": row["version"],
        "size_bytes": row["data_size_bytes"],
        "quota_bytes": quota,
        "usage": round(row["data_size_bytes"] / quota, 6),
        "top_level_keys": row["top_level_keys"],
        "bulletin_keys": row["bulletin_keys"],
        "grants": grants,
        "events": events["count"],
        "last_event_at": events["last_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "expires_at": row["expires_at"],
    }


def pool_grant_list(*, actor: Actor, pool: MemoryPool) -> QuerySet[MemoryPoolGrant]:
    """Who has explicit access (visible to everyone who may read the pool)."""
    return MemoryPoolGrant.objects.filter(pool=pool, pool__account_id=pool.account_id)


def pool_event_list(*, actor: Actor, pool: MemoryPool) -> QuerySet[MemoryPoolEvent]:
    """The pool's bulletin events (the API reads them oldest first, after a cursor)."""
    return MemoryPoolEvent.objects.filter(pool=pool, account_id=pool.account_id)
