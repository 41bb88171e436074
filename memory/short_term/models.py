"""Short-term memory: an agent's entries per session in PostgreSQL, each with a time to live.

An entry whose ``expires_at`` has passed is gone for every read at once (the selectors filter on
it); the clean-up job (memory.prune_short_term) deletes such rows later. Entries are a search
space of the one engine (``memory.spaces.SHORT_TERM_ENTRIES``): a BM25 index per agent, kept
by every write, so a search finds an entry whatever its age.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm


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
    # The entry's BM25 length in its agent's index (kept by the services).
    keyword_length = models.PositiveIntegerField(default=0, editable=False)

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


class ShortTermScope(models.Model):
    """The corpus statistics of one agent's short-term entries, the scope of their BM25 index
    (``memory.spaces.SHORT_TERM_ENTRIES``); its row lock serialises the agent's index changes."""

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    entry_count = models.PositiveIntegerField(default=0)
    total_terms = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name = "short-term memory index"

    def __str__(self) -> str:
        return f"short-term index of agent {self.agent_id}"


class ShortTermPosting(AbstractKeywordPosting):
    """One (term, entry) pair of an agent's short-term BM25 index (see ``rag.spaces``)."""

    pk = models.CompositePrimaryKey("agent_id", "term", "entry_id")
    agent = models.ForeignKey(
        ShortTermScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    entry = models.ForeignKey(ShortTermEntry, on_delete=models.DO_NOTHING, related_name="+")
    entry_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(
                "agent",
                "term",
                models.F("impact").desc(),
                name="stm_posting_impact",
                include=["entry", "tf", "entry_length"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in short-term entry {self.entry_id}"


class ShortTermTerm(AbstractKeywordTerm):
    pk = models.CompositePrimaryKey("agent_id", "term")
    agent = models.ForeignKey(
        ShortTermScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
