"""The search indexes of short-term memory and shared pools, kept exact by every write in the
write's own transaction (as long-term memory's, ``services/long_term/index.py``).

- Short-term entries (``memory.spaces.SHORT_TERM_ENTRIES``): one BM25 index per agent. Every
  entry row, live or expired but not yet deleted, is in its agent's index; searches leave
  expired ones out by a condition on the entry, and the clean-up takes them out of the index as
  it deletes them.
- Pool leaves (``memory.spaces.POOL_LEAVES``): one BM25 index per account over the leaves of
  every pool's data (``memory.pools.leaves``): the values at the dot paths clients read.

Each index change holds its scope's row lock (the agent's, the account's), taken after the rows
being changed are locked, so concurrent writers of one scope queue and its statistics stay
exact. Neither tier is embedded: a write would wait for the model (docs/benchmarks-log.md,
"Cross-tier search", measures it); they are found by BM25 and fused with long-term memory's
hybrid ranking by the router.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from django.db import connection

from memory.models import PoolLeaf, PoolScope, ShortTermScope
from memory.spaces import POOL_LEAVES, SHORT_TERM_ENTRIES
from rag import keyword
from rag.spaces import SearchSpace

# --- scopes -----------------------------------------------------------------------------------


def short_term_scope_lock(agent_id: int) -> ShortTermScope:
    """The agent's short-term index row, made on its first write, locked until commit."""
    scope = ShortTermScope.objects.select_for_update().filter(agent_id=agent_id).first()
    if scope is None:
        ShortTermScope.objects.bulk_create(
            [ShortTermScope(agent_id=agent_id)], ignore_conflicts=True
        )
        scope = ShortTermScope.objects.select_for_update().get(agent_id=agent_id)
    return scope


def pool_scope_lock(account_id: int) -> PoolScope:
    """The account's pool index row, made on its first pool write, locked until commit."""
    scope = PoolScope.objects.select_for_update().filter(account_id=account_id).first()
    if scope is None:
        PoolScope.objects.bulk_create([PoolScope(account_id=account_id)], ignore_conflicts=True)
        scope = PoolScope.objects.select_for_update().get(account_id=account_id)
    return scope


def _replace(
    *,
    space: SearchSpace,
    scope_id: int,
    count: int,
    total: int,
    leaving: Sequence[int],
    coming: Sequence[tuple[int, tuple[object, ...], str]],
) -> tuple[int, int]:
    """Take the units ``leaving`` out of a scope's index and put ``coming`` (id, extra posting
    values, indexed text) in; the scope's statistics were ``count`` units and ``total`` terms.
    Returns the new statistics. The caller holds the scope's lock and stores them."""
    removed_units, removed_terms = keyword.postings_forget(
        space=space, scope_id=scope_id, unit_ids=list(leaving), delete=True
    )
    units = [
        keyword.IndexedUnit(unit_id=unit_id, extra=extra, terms=keyword.chunk_terms(text))
        for unit_id, extra, text in coming
    ]
    count = count - removed_units + len(units)
    total = total - removed_terms + sum(unit.terms.length for unit in units)
    keyword.postings_add(
        space=space, scope_id=scope_id, units=units, avg_length=total / count if count else 0.0
    )
    if units:
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {space.unit_table} u SET {space.unit_length_column} = v.length "  # noqa: S608
                "FROM unnest(%s::bigint[], %s::int[]) AS v(id, length) WHERE u.id = v.id",
                [[u.unit_id for u in units], [u.terms.length for u in units]],
            )
    return count, total


# --- short-term entries ---------------------------------------------------------------------


def short_term_index(
    *, agent_id: int, leaving: Sequence[int], coming: Iterable[tuple[int, str]]
) -> None:
    """Inside the writing transaction: the agent's entries ``leaving`` (replaced or deleted)
    leave its index, ``coming`` (entry id, indexed text) enter it."""
    scope = short_term_scope_lock(agent_id)
    count, total = _replace(
        space=SHORT_TERM_ENTRIES,
        scope_id=agent_id,
        count=scope.entry_count,
        total=scope.total_terms,
        leaving=leaving,
        coming=[(entry_id, (), text) for entry_id, text in coming],
    )
    ShortTermScope.objects.filter(agent_id=agent_id).update(entry_count=count, total_terms=total)


# --- pool leaves ----------------------------------------------------------------------------


def pool_leaves_index(
    *,
    account_id: int,
    pool_id: int,
    removed: Iterable[str] = (),
    added: Mapping[str, str] | None = None,
    drop_all: bool = False,
) -> None:
    """Inside the writing transaction, after the pool's row is locked: its leaves at the paths
    ``removed`` (or every leaf: ``drop_all``) leave the account's index, the leaves ``added``
    (path -> text) enter it."""
    added = added or {}
    removed = list(removed)
    if not (added or removed or drop_all):
        return
    scope = pool_scope_lock(account_id)
    leaves = PoolLeaf.objects.filter(pool_id=pool_id)
    if not drop_all:
        leaves = leaves.filter(path__in=sorted({*removed, *added}))
    leaving = list(leaves.values_list("pk", flat=True))
    count, total = scope.leaf_count, scope.total_terms
    if leaving:
        removed_units, removed_terms = keyword.postings_forget(
            space=POOL_LEAVES, scope_id=account_id, unit_ids=leaving, delete=True
        )
        count, total = count - removed_units, total - removed_terms
        PoolLeaf.objects.filter(pk__in=leaving).delete()
    made = PoolLeaf.objects.bulk_create(
        [PoolLeaf(account_id=account_id, pool_id=pool_id, path=path) for path in sorted(added)]
    )
    count, total = _replace(
        space=POOL_LEAVES,
        scope_id=account_id,
        count=count,
        total=total,
        leaving=[],
        coming=[(leaf.pk, (pool_id,), added[leaf.path]) for leaf in made],
    )
    PoolScope.objects.filter(account_id=account_id).update(leaf_count=count, total_terms=total)


def pools_unindex(*, account_id: int, pool_ids: Sequence[int]) -> None:
    """Inside the transaction deleting these pools of one account: their leaves leave its
    index (the deletion then cascades to the rows)."""
    for pool_id in sorted(pool_ids):
        pool_leaves_index(account_id=account_id, pool_id=pool_id, drop_all=True)


# --- rebuilds (memory_rebuild_index, the migration that made these indexes) -----------------


def rebuild_short_term_index(*, agent_id: int) -> None:
    """Recompute an agent's short-term index from its entries, in one transaction."""
    from django.db import transaction

    with transaction.atomic():
        short_term_scope_lock(agent_id)
        keyword.index_rebuild(space=SHORT_TERM_ENTRIES, scope_id=agent_id)


def rebuild_pool_index(*, account_id: int) -> None:
    """Recompute an account's pool index from its pools' data: the leaves themselves too."""
    from django.db import transaction

    from memory.models import MemoryPool
    from memory.pools.leaves import all_leaves

    with transaction.atomic():
        pools = list(
            MemoryPool.objects.select_for_update()
            .filter(account_id=account_id)
            .order_by("pk")
            .values_list("pk", "data")
        )
        pool_scope_lock(account_id)
        PoolLeaf.objects.filter(account_id=account_id).delete()
        PoolLeaf.objects.bulk_create(
            PoolLeaf(account_id=account_id, pool_id=pool_id, path=path)
            for pool_id, data in pools
            for path in all_leaves(data)
        )
        keyword.index_rebuild(space=POOL_LEAVES, scope_id=account_id)
