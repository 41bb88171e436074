"""Usage records (the executions agents learn from), learning profiles derived from them, agents'
trust scores and task assignments (seed 002)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet
from skills.models.catalog import Skill, SkillVersion


class TaskAssignment(TimeStampedModel):
    """A task given to an agent by ``POST /tasks/assign``; its outcome becomes a usage record."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Method(models.TextChoices):
        LEARNED = "learned", "Best learned score"
        LEAST_LOADED = "least_loaded", "Least loaded (no history)"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    # Rows that follow an agent exist in bulk: the database cascades its deletion (migration
    # 0002), so deleting an agent never collects them (nor asks for rights over them).
    agent = models.ForeignKey(Agent, on_delete=models.DO_NOTHING, related_name="+")
    requested_by = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    title = models.CharField(max_length=500)
    description = models.TextField(blank=True)
    task_type = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    method = models.CharField(max_length=12, choices=Method.choices)
    score = models.FloatField(default=0.0)
    expertise = models.FloatField(default=0.0)
    confidence = models.FloatField(default=0.0)
    base = models.FloatField(default=0.0)
    completed_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar[AccountScopedQuerySet[TaskAssignment]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # An agent's load: its open assignments.
            models.Index(
                fields=["account", "agent"],
                name="task_assignment_open",
                condition=Q(status="assigned"),
            ),
        ]

    def __str__(self) -> str:
        return self.title


class SkillUsage(models.Model):
    """One execution: an agent ran a task of ``task_type`` (with a skill and version, or not),
    successfully or not, taking ``duration_ms``."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.DO_NOTHING, related_name="+")
    skill = models.ForeignKey(
        Skill, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    version = models.ForeignKey(
        SkillVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    task_type = models.CharField(max_length=100)
    success = models.BooleanField()
    duration_ms = models.PositiveBigIntegerField(default=0)
    occurred_at = models.DateTimeField(default=timezone.now)
    assignment = models.ForeignKey(
        TaskAssignment, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    recorded_by = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects: ClassVar[AccountScopedQuerySet[SkillUsage]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "skill usage record"
        ordering = ["-occurred_at", "-id"]
        indexes = [
            # A learning profile: an agent's most recent executions of a task type.
            models.Index(
                "agent", "task_type", models.F("occurred_at").desc(), name="skill_usage_profile"
            ),
            models.Index("skill", models.F("occurred_at").desc(), name="skill_usage_skill"),
            models.Index(fields=["account", "occurred_at"], name="skill_usage_account_time"),
        ]

    def __str__(self) -> str:
        outcome = "succeeded" if self.success else "failed"
        return f"{self.task_type} {outcome} ({self.agent_id})"


class LearningProfile(models.Model):
    """What an agent has shown at one task type, from its ``PROFILE_WINDOW`` most recent
    executions: derived from usage records (rebuilt by ``skills_rebuild_profiles``) and kept
    current by every record written. The window's times and outcomes are kept so that the
    recency-weighted success rate is computed against the moment of ranking."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.DO_NOTHING, related_name="+")
    task_type = models.CharField(max_length=100)
    executions = models.PositiveIntegerField(default=0, help_text="In the window (at most 100).")
    successes = models.PositiveIntegerField(default=0, help_text="In the window.")
    total_executions = models.PositiveIntegerField(default=0, help_text="All time.")
    success_rate = models.FloatField(default=0.0)
    confidence = models.FloatField(default=0.0)
    last_execution_at = models.DateTimeField(null=True, blank=True)
    # The window, newest first, packed (``skills.learning.window_pack``): each execution's
    # epoch seconds (float64, little-endian), then each outcome (one byte). Ranking a thousand
    # agents reads these without parsing a hundred thousand numbers from text.
    window = models.BinaryField(default=bytes, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects: ClassVar[AccountScopedQuerySet[LearningProfile]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["agent", "task_type"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "task_type"], name="learning_profile_unique"),
        ]
        indexes = [models.Index(fields=["account", "task_type"], name="learning_profile_task")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.task_type}"


class AgentTrust(models.Model):
    """An agent's trust score: moved by its outcomes, decayed toward neutral while it is idle."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.OneToOneField(Agent, on_delete=models.DO_NOTHING, related_name="+")
    trust_score = models.FloatField(default=0.5)
    last_active_at = models.DateTimeField(null=True, blank=True)
    decayed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects: ClassVar[AccountScopedQuerySet[AgentTrust]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "agent trust"
        verbose_name_plural = "agent trust"
        constraints = [
            models.CheckConstraint(
                condition=Q(trust_score__gte=0, trust_score__lte=1), name="agent_trust_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"trust of {self.agent_id}: {self.trust_score:.2f}"
