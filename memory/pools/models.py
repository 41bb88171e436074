"""Shared memory pools: JSON data several agents of one account read and write, with access
control, a version bumped on every change, a size quota, optional expiry, and a feed of the
writes under ``agent_bulletin``."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.db.models.functions import MD5

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet
from memory.maintenance.models.changes import ChangePolicy
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm

DEFAULT_POOL_ID = "default"


class MemoryPool(TimeStampedModel):
    class PoolType(models.TextChoices):
        SHARED = "shared", "Shared"
        AGENT_PRIVATE = "agent_private", "Agent private"
        TEAM_SHARED = "team_shared", "Team shared"
        TASK_SCOPED = "task_scoped", "Task scoped"
        GLOBAL = "global", "Global (every agent of the account)"

    class Scope(models.TextChoices):
        """Lifetime relative to the surrounding work."""

        EXECUTION = "execution", "Execution"
        SESSION = "session", "Session"
        PERSISTENT = "persistent", "Persistent"

    class WorkflowKind(models.TextChoices):
        SHARED_MEMORY = "shared_memory", "Shared memory"
        TOOL_CACHE = "tool_cache", "Tool cache"
        BLACKBOARD = "blackboard", "Blackboard"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    pool_id = models.CharField(max_length=100, help_text="Unique in the account.")
    name = models.CharField(max_length=200, blank=True)
    pool_type = models.CharField(max_length=20, choices=PoolType.choices, default=PoolType.SHARED)
    scope = models.CharField(max_length=20, choices=Scope.choices, default=Scope.PERSISTENT)
    owner = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The agent that created it (none: made by a person or the system).",
    )
    data = models.JSONField(default=dict, blank=True)
    public_read = models.BooleanField(
        default=False,
        help_text="Every agent of the account may read (and, for shared pools, write).",
    )
    version = models.PositiveBigIntegerField(default=1, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # {"ttl_seconds": int, "max_size_bytes": int}, both optional.
    retention_policy = models.JSONField(default=dict, blank=True)
    data_size_bytes = models.PositiveBigIntegerField(default=2, editable=False)
    persist_across_executions = models.BooleanField(default=False)
    workflow_run_id = models.CharField(max_length=128, blank=True, db_index=True)
    workflow_kind = models.CharField(max_length=20, choices=WorkflowKind.choices, blank=True)
    # Review before change (``memory.maintenance.services.changes``): automatic changes to the pool
    # are held for review under ``review``.
    change_policy = models.CharField(
        max_length=6, choices=ChangePolicy.choices, default=ChangePolicy.AUTO
    )

    objects: ClassVar[AccountScopedQuerySet[MemoryPool]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "memory pool"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "pool_id"], name="pool_unique_id_per_account"
            ),
            models.UniqueConstraint(
                fields=["account", "workflow_run_id", "workflow_kind"],
                condition=~Q(workflow_run_id=""),
                name="pool_unique_kind_per_run",
            ),
            models.CheckConstraint(
                condition=Q(workflow_run_id="", workflow_kind="")
                | (~Q(workflow_run_id="") & ~Q(workflow_kind="")),
                name="pool_workflow_run_and_kind",
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.pool_id


class GrantQuerySet(AccountScopedQuerySet["MemoryPoolGrant"]):
    account_lookup = "pool__account"


class MemoryPoolGrant(models.Model):
    """An agent's explicit access to a pool (its account's agents only)."""

    class Level(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Read and write"

    pool = models.ForeignKey(MemoryPool, on_delete=models.CASCADE, related_name="grants")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.READ)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects: ClassVar[GrantQuerySet] = GrantQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "memory pool grant"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "agent"], name="pool_grant_unique_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent} may {self.level}"


class MemoryPoolEvent(models.Model):
    """A write under ``agent_bulletin`` in a pool: agents read these with a cursor and they are
    published on Redis pub/sub."""

    class Action(models.TextChoices):
        WRITE = "write", "Write"
        MERGE = "merge", "Merge"
        DELETE = "delete", "Delete"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    pool = models.ForeignKey(MemoryPool, on_delete=models.CASCADE, related_name="events")
    version = models.PositiveBigIntegerField(help_text="The pool's version after the write.")
    path = models.CharField(max_length=2000)
    action = models.CharField(max_length=10, choices=Action.choices)
    value = models.JSONField(null=True, blank=True, help_text="The value at the path afterwards.")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects: ClassVar[AccountScopedQuerySet[MemoryPoolEvent]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "memory pool event"
        ordering = ["-id"]
        indexes = [models.Index(fields=["pool", "id"], name="memory_pool_event_feed")]

    def __str__(self) -> str:
        return f"{self.action} {self.path} (v{self.version})"


class PoolScope(models.Model):
    """The corpus statistics of one account's pool leaves, the scope of their BM25 index
    (``memory.spaces.POOL_LEAVES``); its row lock serialises the account's index changes."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    leaf_count = models.PositiveIntegerField(default=0)
    total_terms = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name = "memory pool index"

    def __str__(self) -> str:
        return f"pool index of account {self.account_id}"


class PoolLeaf(models.Model):
    """One value of a pool's data at the dot path a client reads it by (``memory.pools.leaves``):
    the unit pool search finds. Its value is read from the pool's data, never copied here."""

    account = models.ForeignKey(Account, on_delete=models.DO_NOTHING, related_name="+")
    pool = models.ForeignKey(MemoryPool, on_delete=models.DO_NOTHING, related_name="+")
    path = models.CharField(max_length=3300)
    keyword_length = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "memory pool leaf"
        constraints = [
            # By the path's hash: a path may pass what a btree entry holds.
            models.UniqueConstraint(models.F("pool"), MD5("path"), name="pool_leaf_unique_path")
        ]

    def __str__(self) -> str:
        return f"{self.pool_id}:{self.path}"


class PoolLeafPosting(AbstractKeywordPosting):
    """One (term, leaf) pair of an account's pool BM25 index; the pool id is kept on the
    posting so that access rules filter postings before the per-term cut."""

    pk = models.CompositePrimaryKey("account_id", "term", "leaf_id")
    account = models.ForeignKey(
        PoolScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    leaf = models.ForeignKey(PoolLeaf, on_delete=models.DO_NOTHING, related_name="+")
    pool = models.ForeignKey(
        MemoryPool, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    leaf_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(
                "account",
                "term",
                models.F("impact").desc(),
                name="pool_posting_impact",
                include=["leaf", "pool", "tf", "leaf_length"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in pool leaf {self.leaf_id}"


class PoolLeafTerm(AbstractKeywordTerm):
    pk = models.CompositePrimaryKey("account_id", "term")
    account = models.ForeignKey(
        PoolScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
