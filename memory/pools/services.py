"""Shared memory pools: creation, settings, grants, the default pool, workflow runs and expiry.
A pool's data (writes by dot path, the bulletin's events) is ``memory.pools.data_services``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from core.actors import Actor
from core.audit import audit_record
from core.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from core.models import Agent
from core.writes import changes_of, changes_validate, row_delete, row_update
from memory import names
from memory.models import (
    DEFAULT_POOL_ID,
    ChangePolicy,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
)
from memory.pools import leaves as pool_index
from memory.pools.access import NEVER_PUBLIC_TYPES, pool_not_found, quota_of, visible_pools
from memory.pools.data_services import _quota_exceeded, json_size
from memory.roles import MANAGE_MEMORY
from memory.tier_index import pool_leaves_index, pools_unindex

# What a pool's owner (or an operator) may change; data has its own operations.
UPDATABLE_FIELDS = (
    "change_policy",
    "name",
    "scope",
    "public_read",
    "retention_policy",
    "expires_at",
    "persist_across_executions",
)
PRUNE_BATCH = 1000
# The longest TTL a retention policy may set: ten years.
MAX_POOL_TTL = 10 * 365 * 86_400


def _owner_required() -> PermissionDenied:
    return PermissionDenied(
        "Only the pool's owner may do this.", code="pool_owner_required", details={}
    )


def _default_protected(what: str) -> Conflict:
    return Conflict(f"The default pool {what}.", code="default_pool_protected")


# --- the default pool --------------------------------------------------------------------------


def pool_default_ensure(account_id: int) -> None:
    """Create the account's ``default`` pool if it is missing: shared, public, no owner, never
    expiring (``INSERT ... ON CONFLICT DO NOTHING``: concurrent callers make one)."""
    if MemoryPool.objects.filter(account_id=account_id, pool_id=DEFAULT_POOL_ID).exists():
        return
    MemoryPool.objects.bulk_create(
        [
            MemoryPool(
                account_id=account_id,
                pool_id=DEFAULT_POOL_ID,
                name="Default",
                pool_type=MemoryPool.PoolType.SHARED,
                scope=MemoryPool.Scope.PERSISTENT,
                public_read=True,
            )
        ],
        ignore_conflicts=True,
    )


# --- checks ------------------------------------------------------------------------------------


def _may_manage(actor: Actor, pool: MemoryPool) -> None:
    """Settings, grants and deletion: the owner agent; people with the memory role; tools."""
    if actor.agent is not None:
        if pool.owner_id != actor.agent.pk:
            raise _owner_required()
        return
    actor.require(pool.account_id, MANAGE_MEMORY)


def _check_public(pool_type: str, public_read: bool) -> None:
    if public_read and pool_type in NEVER_PUBLIC_TYPES:
        raise ValidationFailed(
            f"A {pool_type} pool cannot be public: grant agents access instead.",
            code="public_not_allowed",
        )


def _policy(policy: dict[str, Any] | None) -> dict[str, int]:
    policy = dict(policy or {})
    unknown = set(policy) - {"ttl_seconds", "max_size_bytes"}
    if unknown:
        raise ValidationFailed(
            "Unknown retention settings.",
            code="invalid_retention_policy",
            details={"fields": sorted(unknown)},
        )
    limits = {"ttl_seconds": MAX_POOL_TTL, "max_size_bytes": settings.POOL_MAX_BYTES}
    checked: dict[str, int] = {}
    for name, limit in limits.items():
        value = policy.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise ValidationFailed(
                f"retention_policy.{name} must be 1 to {limit}.",
                code="invalid_retention_policy",
                details={"field": name, "max": limit},
            )
        checked[name] = value
    return checked


def _check_expiry(expires_at: datetime | None) -> None:
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed("expires_at must be in the future.", code="invalid_expiry")


# --- pools -------------------------------------------------------------------------------------


def pool_create(
    *,
    actor: Actor,
    pool_id: str,
    name: str = "",
    pool_type: str = MemoryPool.PoolType.SHARED,
    scope: str = MemoryPool.Scope.PERSISTENT,
    data: dict[str, Any] | None = None,
    public_read: bool = False,
    retention_policy: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    persist_across_executions: bool = False,
    workflow_run_id: str = "",
    workflow_kind: str = "",
    account_id: int | None = None,
    change_policy: str = ChangePolicy.AUTO,
) -> MemoryPool:
    """A new pool owned by the calling agent (people name the account; no owner then).

    ``retention_policy.ttl_seconds`` expires the pool that long after its last change (unless
    ``expires_at`` is given); ``workflow_run_id`` with ``workflow_kind`` binds it to a workflow
    run (one pool per kind and run), to expire with the run (``workflow_run_expire``).
    """
    account_id = account_id if account_id is not None else actor.account_id
    if actor.agent is None:
        actor.require(account_id, MANAGE_MEMORY)
    names.check_pool_id(pool_id)
    if pool_id == DEFAULT_POOL_ID:
        pool_default_ensure(account_id)
        raise Conflict("A pool with this id exists.", code="pool_id_taken")
    _check_public(pool_type, public_read)
    policy = _policy(retention_policy)
    _check_expiry(expires_at)
    if bool(workflow_run_id) != bool(workflow_kind):
        raise ValidationFailed(
            "Give workflow_run_id and workflow_kind together.", code="invalid_workflow"
        )
    if workflow_run_id:
        names.check_run_id(workflow_run_id)
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ValidationFailed("A pool's data is a JSON object.", code="invalid_data")
    size, quota = json_size(data), quota_of(policy)
    if size > quota:
        raise _quota_exceeded(size, quota)
    now = timezone.now()
    if expires_at is None and policy.get("ttl_seconds"):
        expires_at = now + timedelta(seconds=policy["ttl_seconds"])
    pool = MemoryPool(
        account_id=account_id,
        pool_id=pool_id,
        name=name,
        pool_type=pool_type,
        scope=scope,
        owner=actor.agent,
        data=data,
        public_read=public_read,
        retention_policy=policy,
        expires_at=expires_at,
        data_size_bytes=size,
        persist_across_executions=persist_across_executions,
        workflow_run_id=workflow_run_id,
        workflow_kind=workflow_kind,
        change_policy=change_policy,
        created_at=now,
    )
    pool.full_clean(exclude=["account", "owner"], validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            # An expired pool still holding the id until the clean-up job runs is gone: its id
            # is free again.
            _delete_pools(
                MemoryPool.objects.filter(
                    account_id=account_id, pool_id=pool_id, expires_at__lte=now
                )
            )
            if workflow_run_id:
                _delete_pools(
                    MemoryPool.objects.filter(
                        account_id=account_id,
                        workflow_run_id=workflow_run_id,
                        workflow_kind=workflow_kind,
                        expires_at__lte=now,
                    )
                )
            pool.save()
            pool_leaves_index(
                account_id=account_id, pool_id=pool.pk, added=pool_index.all_leaves(data)
            )
            audit_record(
                actor=actor,
                action="memory.pool.create",
                account_id=account_id,
                target=pool,
                changes={
                    "pool_id": pool_id,
                    "pool_type": pool_type,
                    "scope": scope,
                    "public_read": public_read,
                    "retention_policy": policy,
                    "workflow_run_id": workflow_run_id,
                    "workflow_kind": workflow_kind,
                    "change_policy": change_policy,
                },
            )
    except IntegrityError as exc:
        if "pool_unique_id_per_account" in str(exc):
            raise Conflict("A pool with this id exists.", code="pool_id_taken") from exc
        if "pool_unique_kind_per_run" in str(exc):
            raise Conflict(
                f"This workflow run has a {workflow_kind} pool already.",
                code="workflow_pool_exists",
            ) from exc
        raise
    return pool


def pool_update(*, actor: Actor, pool: MemoryPool, **fields: Any) -> MemoryPool:
    """Change a pool's settings (owner or operators). Every change bumps the version."""
    _may_manage(actor, pool)
    changes = changes_of(pool, fields, UPDATABLE_FIELDS)
    if not changes:
        return pool
    if pool.pool_id == DEFAULT_POOL_ID and (
        changes.get("public_read") is False
        or changes.get("expires_at") is not None
        or (changes.get("retention_policy") or {}).get("ttl_seconds")
    ):
        raise _default_protected("stays public and never expires")
    _check_public(pool.pool_type, changes.get("public_read", pool.public_read))
    also: dict[str, Any] = {"version": F("version") + 1}
    if "retention_policy" in changes:
        changes["retention_policy"] = _policy(changes["retention_policy"])
        quota = quota_of(changes["retention_policy"])
        if pool.data_size_bytes > quota:
            raise Conflict(
                f"The pool holds {pool.data_size_bytes} bytes, more than {quota}.",
                code="pool_quota_below_size",
                details={"size": pool.data_size_bytes, "limit": quota},
            )
        ttl = changes["retention_policy"].get("ttl_seconds")
        if ttl and "expires_at" not in changes:
            also["expires_at"] = timezone.now() + timedelta(seconds=ttl)
    if changes.get("expires_at") is not None:
        _check_expiry(changes["expires_at"])
    changes_validate(pool, changes)
    return row_update(
        actor=actor,
        instance=pool,
        changes=changes,
        also=also,
        action="memory.pool.update",
        account_id=pool.account_id,
        missing=pool_not_found,
    )


def pool_delete(*, actor: Actor, pool: MemoryPool) -> None:
    """Delete a pool with its grants and events. The default pool cannot be deleted."""
    _may_manage(actor, pool)
    if pool.pool_id == DEFAULT_POOL_ID:
        raise _default_protected("cannot be deleted")
    with transaction.atomic():
        if not MemoryPool.objects.select_for_update().filter(pk=pool.pk).exists():
            raise pool_not_found()
        pools_unindex(account_id=pool.account_id, pool_ids=[pool.pk])
        row_delete(
            actor=actor,
            instance=pool,
            action="memory.pool.delete",
            account_id=pool.account_id,
            changes={"pool_id": pool.pool_id},
        )


def _delete_pools(pools: QuerySet[MemoryPool]) -> int:
    """Delete pools (with grants, events and their leaves in the search index), each locked
    before its account's index. Returns how many."""
    rows = list(
        pools.select_for_update().order_by("account_id", "pk").values_list("account_id", "pk")
    )
    by_account: dict[int, list[int]] = {}
    for account_id, pk in rows:
        by_account.setdefault(account_id, []).append(pk)
    for account_id, ids in by_account.items():
        pools_unindex(account_id=account_id, pool_ids=ids)
    if not rows:
        return 0
    MemoryPool.objects.filter(pk__in=[pk for _, pk in rows]).delete()
    return len(rows)


# --- grants ------------------------------------------------------------------------------------


def _bump(pool: MemoryPool) -> None:
    MemoryPool.objects.filter(pk=pool.pk).update(
        version=F("version") + 1, updated_at=timezone.now()
    )


def pool_grant_set(*, actor: Actor, pool: MemoryPool, agent_id: int, level: str) -> MemoryPoolGrant:
    """Give an agent of the pool's account ``read`` or ``write`` access (replacing its grant)."""
    _may_manage(actor, pool)
    if level not in MemoryPoolGrant.Level.values:
        raise ValidationFailed("level is read or write.", code="invalid_level")
    agent = Agent.objects.filter(account_id=pool.account_id, pk=agent_id).first()
    if agent is None:
        raise NotFound("No such agent.", code="agent_not_found")
    with transaction.atomic():
        MemoryPoolGrant.objects.bulk_create(
            [MemoryPoolGrant(pool=pool, agent=agent, level=level)],
            update_conflicts=True,
            unique_fields=["pool", "agent"],
            update_fields=["level"],
        )
        _bump(pool)
        grant = MemoryPoolGrant.objects.get(pool=pool, agent=agent)
        audit_record(
            actor=actor,
            action="memory.pool.grant",
            account_id=pool.account_id,
            target=pool,
            changes={"agent_id": agent.pk, "level": level},
        )
    return grant


def pool_grant_revoke(*, actor: Actor, pool: MemoryPool, agent_id: int) -> None:
    _may_manage(actor, pool)
    with transaction.atomic():
        deleted, _ = MemoryPoolGrant.objects.filter(pool=pool, agent_id=agent_id).delete()
        if not deleted:
            raise NotFound("This agent has no grant on the pool.", code="grant_not_found")
        _bump(pool)
        audit_record(
            actor=actor,
            action="memory.pool.revoke",
            account_id=pool.account_id,
            target=pool,
            changes={"agent_id": agent_id},
        )


# --- workflow runs and expiry ----------------------------------------------------------------


def workflow_run_expire(*, actor: Actor, run_id: str) -> dict[str, int]:
    """A workflow run ended: its pools (those the caller may write) expire now, but for those
    that persist across executions. Returns {"expired", "kept"}."""
    names.check_run_id(run_id)
    pools = visible_pools(actor, writable_only=True).filter(workflow_run_id=run_id)
    if actor.agent is None:
        pools = pools.filter(account_id__in=actor.accounts_with(MANAGE_MEMORY))
    now = timezone.now()
    with transaction.atomic():
        rows = list(pools.filter(persist_across_executions=False).values_list("pk", "account_id"))
        kept = pools.filter(persist_across_executions=True).count()
        if rows:
            MemoryPool.objects.filter(pk__in=[pk for pk, _ in rows]).update(
                expires_at=now, updated_at=now, version=F("version") + 1
            )
        by_account: dict[int, list[int]] = {}
        for pk, account_id in rows:
            by_account.setdefault(account_id, []).append(pk)
        for account_id, ids in by_account.items():
            audit_record(
                actor=actor,
                action="memory.workflow_run.expire",
                account_id=account_id,
                target_type="memory.workflow_run",
                target_id=run_id,
                changes={"pools": ids},
            )
    return {"expired": len(rows), "kept": kept}


def pools_prune_expired(*, dry_run: bool = False, batch_size: int | None = None) -> dict[str, int]:
    """Delete expired pools (with their grants and events) and bulletin events older than
    POOL_EVENT_RETENTION, in batches. A dry run counts what a run would delete."""
    now = timezone.now()
    expired = MemoryPool.objects.filter(expires_at__lte=now)
    old_events = MemoryPoolEvent.objects.filter(created_at__lt=now - settings.POOL_EVENT_RETENTION)
    if dry_run:
        return {"pools": expired.count(), "events": old_events.count(), "dry_run": 1}
    batch_size = batch_size or PRUNE_BATCH
    counts = {"pools": 0, "events": 0}
    while True:
        with transaction.atomic():
            ids = list(expired.order_by("pk").values_list("pk", flat=True)[:batch_size])
            if ids:
                # The condition again: a pool given a new expiry meanwhile is kept.
                counts["pools"] += _delete_pools(expired.filter(pk__in=ids))
        if len(ids) < batch_size:
            break
    while True:
        with transaction.atomic():
            ids = list(old_events.order_by("pk").values_list("pk", flat=True)[:batch_size])
            if ids:
                counts["events"] += old_events.filter(pk__in=ids).delete()[0]
        if len(ids) < batch_size:
            break
    return counts
