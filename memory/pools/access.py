"""Who may read and write a pool (seed 000's access-control note, within one account):

- the owner (the agent that created it) always;
- an agent with a grant: ``read``, or ``write`` (which reads too);
- every agent of the account when ``public_read`` is on: reading ``shared`` and ``task_scoped``
  pools, and writing ``shared`` ones. ``agent_private`` and ``team_shared`` pools cannot be
  public: the first is its owner's, the second needs explicit grants;
- every agent of the account, reading and writing, for a ``global`` pool.

Nothing crosses accounts: every query is also filtered by the agent's account. People act
through their roles instead (the admin); a command-line tool acting on an account may do
everything there.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet, Value
from django.utils import timezone

from core.actors import Actor
from core.errors import NotFound
from memory.models import MemoryPool, MemoryPoolGrant

# Writes under this top-level key are also published as events (``MemoryPoolEvent``).
BULLETIN = "agent_bulletin"
PUBLIC_READ_TYPES = (MemoryPool.PoolType.SHARED, MemoryPool.PoolType.TASK_SCOPED)
PUBLIC_WRITE_TYPES = (MemoryPool.PoolType.SHARED,)
NEVER_PUBLIC_TYPES = (MemoryPool.PoolType.AGENT_PRIVATE, MemoryPool.PoolType.TEAM_SHARED)


def live() -> Q:
    """Pools that have not expired (an expired pool is gone at once, before the clean-up)."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())


def _granted(agent_id: int, levels: tuple[str, ...]) -> Exists:
    return Exists(
        MemoryPoolGrant.objects.filter(pool=OuterRef("pk"), agent_id=agent_id, level__in=levels)
    )


def readable_by(agent_id: int) -> Q:
    return (
        Q(owner_id=agent_id)
        | Q(pool_type=MemoryPool.PoolType.GLOBAL)
        | Q(public_read=True, pool_type__in=PUBLIC_READ_TYPES)
        | Q(_granted(agent_id, (MemoryPoolGrant.Level.READ, MemoryPoolGrant.Level.WRITE)))
    )


def writable_by(agent_id: int) -> Q:
    return (
        Q(owner_id=agent_id)
        | Q(pool_type=MemoryPool.PoolType.GLOBAL)
        | Q(public_read=True, pool_type__in=PUBLIC_WRITE_TYPES)
        | Q(_granted(agent_id, (MemoryPoolGrant.Level.WRITE,)))
    )


def visible_pools(
    actor: Actor, queryset: QuerySet[MemoryPool] | None = None, *, writable_only: bool = False
) -> QuerySet[MemoryPool]:
    """The live pools ``actor`` may read (``writable_only``: write), annotated with
    ``can_write`` and ``is_owner``."""
    pools = MemoryPool.objects.all() if queryset is None else queryset
    pools = pools.filter(live())
    agent = actor.agent
    if agent is None:
        return pools.filter(account_id__in=list(actor.account_ids)).annotate(
            can_write=Value(True, output_field=BooleanField()),
            is_owner=Value(True, output_field=BooleanField()),
        )
    pools = pools.filter(account_id=agent.account_id)
    if writable_only:
        pools = pools.filter(writable_by(agent.pk))
    return pools.filter(readable_by(agent.pk)).annotate(
        can_write=ExpressionWrapper(writable_by(agent.pk), output_field=BooleanField()),
        is_owner=ExpressionWrapper(Q(owner_id=agent.pk), output_field=BooleanField()),
    )


def pool_not_found() -> NotFound:
    return NotFound("No such memory pool.", code="pool_not_found")


def quota_of(policy: dict[str, Any]) -> int:
    """The most bytes the pool's data may take: its policy's cap, never above POOL_MAX_BYTES."""
    cap = int(settings.POOL_MAX_BYTES)
    return min(int(policy.get("max_size_bytes") or cap), cap)
