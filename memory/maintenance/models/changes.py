"""Review before change (docs/memory/review.md): a context or pool whose
``change_policy`` is ``review`` turns each automatic change (a dedup merge, a promotion, a rot
archival, an importance decay beyond a threshold, a cluster rewrite; an agent's write through
the memory tools when its ``agent_write_policy`` is ``review``) into a *pending change*: what
would change, before and after, waiting for an owner or operator to approve (it is applied
then) or reject it (with a reason), or for its time to run out (expired: never applied)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.models import Account, Agent
from core.querysets import AccountScopedQuerySet


class ChangePolicy(models.TextChoices):
    AUTO = "auto", "Apply automatic changes directly"
    REVIEW = "review", "Hold automatic changes for review"


class PendingChange(models.Model):
    """One proposed change, a small state machine: pending -> approved (applied) | rejected |
    expired | failed (approved, but the data changed meanwhile so it could not apply)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved (applied)"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        FAILED = "failed", "Approved, could not apply"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    # What the change is about: a long-term context or a shared pool (the policy's holder).
    context = models.ForeignKey(
        "memory.MemoryContext",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="pending_changes",
    )
    pool = models.ForeignKey(
        "memory.MemoryPool",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="pending_changes",
    )
    kind = models.CharField(max_length=40, db_index=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, editable=False
    )
    # What the kind's applier needs (JSON), and what a person reviews: the affected items
    # before and after, the cluster's members (when the change is about a cluster), the reason.
    payload = models.JSONField(default=dict)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    members = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True)
    # The same proposal submitted again while pending (or after its rejection) is this row.
    fingerprint = models.CharField(max_length=64)
    proposed_by = models.CharField(max_length=300, help_text="Who or what proposed it.")
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    expires_at = models.DateTimeField(db_index=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )
    decided_by_label = models.CharField(max_length=300, blank=True, editable=False)
    decided_at = models.DateTimeField(null=True, blank=True, editable=False)
    decision_reason = models.TextField(blank=True, editable=False)
    result = models.JSONField(default=dict, blank=True, editable=False)
    error = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects: ClassVar[AccountScopedQuerySet[PendingChange]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "pending memory change"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "fingerprint"],
                condition=Q(status="pending"),
                name="pending_change_one_open",
            ),
            models.CheckConstraint(
                condition=Q(context__isnull=True) | Q(pool__isnull=True),
                name="pending_change_one_target",
            ),
        ]
        indexes = [
            models.Index(fields=["account", "status", "-created_at"], name="pending_change_queue"),
            models.Index(fields=["account", "fingerprint"], name="pending_change_fingerprint"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.PENDING
