"""Working memory lives in Redis (memory/working/services.py); this is its copy in PostgreSQL:
what an agent persisted of one session, to load back later."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet


class WorkingMemorySnapshot(TimeStampedModel):
    """One session's working memory as persisted last: every live entry with its kind, value and
    the TTL it had left. Persisting again replaces it."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=128)
    # [{"name": ..., "kind": ..., "value": ..., "ttl_ms": ...}, ...]
    entries = models.JSONField(default=list, blank=True)
    entry_count = models.PositiveIntegerField(default=0)

    objects: ClassVar[AccountScopedQuerySet[WorkingMemorySnapshot]] = (
        AccountScopedQuerySet.as_manager()  # type: ignore[assignment]
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "session_id"], name="wm_snapshot_unique_per_session"
            )
        ]

    def __str__(self) -> str:
        return f"working memory of {self.session_id}"
