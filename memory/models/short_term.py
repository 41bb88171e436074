"""Short-term memory: an agent's entries per session in PostgreSQL, each with a time to live.

An entry whose ``expires_at`` has passed is gone for every read at once (the selectors filter on
it); the clean-up job (memory.prune_short_term) deletes such rows later.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet


class ShortTermEntry(TimeStampedModel):
    class MemoryType(models.TextChoices):
        TASK_CONTEXT = "task_context", "Task context"
        CONVERSATION = "conversation", "Conversation"
        TOOL_RESULT = "tool_result", "Tool result"
        REFLECTION = "reflection", "Reflection"
        OBSERVATION = "observation", "Observation"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=128)
    key = models.CharField(max_length=200)
    value = models.JSONField(null=True, blank=True)
    memory_type = models.CharField(
        max_length=20, choices=MemoryType.choices, default=MemoryType.TASK_CONTEXT
    )
    ttl_seconds = models.PositiveIntegerField()
    expires_at = models.DateTimeField(db_index=True)
    access_count = models.PositiveIntegerField(default=0, editable=False)
    last_accessed_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects: ClassVar[AccountScopedQuerySet[ShortTermEntry]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "short-term memory entry"
        verbose_name_plural = "short-term memory entries"
        ordering = ["-created_at", "-id"]
        constraints = [
            # ON CONFLICT target of the upsert in short_term_put.
            models.UniqueConstraint(
                fields=["agent", "session_id", "key"], name="stm_unique_key_per_session"
            ),
            models.CheckConstraint(condition=models.Q(ttl_seconds__gte=1), name="stm_ttl_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}/{self.key}"
