"""Conversations: an agent's dialogue with a person, message by message.

A conversation is backed by a long-term context of its own (``context``, type
``conversation``): every message is an entry there (thread ``conversation:<id>``, position = its
``turn_number``, ``role`` and ``speaker`` on the entry), so memory search, neighbour windows,
consolidation and ``memory_eval`` share one index and nothing keeps a second store of turns.
Summaries are ``conversation_summary`` entries of the same context (their turn range and key
points in ``metadata``).
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet
from memory.long_term.models import MemoryContext

DEFAULT_SUMMARY_EVERY = 20


class Conversation(TimeStampedModel):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    context = models.OneToOneField(
        MemoryContext, on_delete=models.CASCADE, related_name="conversation", editable=False
    )
    # The person the agent talks to, in the caller's own terms.
    user_id = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=500, blank=True)
    summary = models.TextField(blank=True, editable=False)
    metadata = models.JSONField(default=dict, blank=True)
    # Messages so far: the last turn number given (turns count from 1).
    message_count = models.PositiveIntegerField(default=0, editable=False)
    # A rolling summary every this many messages (0: only on request).
    summary_every = models.PositiveIntegerField(default=DEFAULT_SUMMARY_EVERY)
    summarized_through = models.PositiveIntegerField(default=0, editable=False)
    extracted_through = models.PositiveIntegerField(default=0, editable=False)
    last_message_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects: ClassVar[AccountScopedQuerySet[Conversation]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "user_id"], name="conversation_user"),
            models.Index(fields=["agent", "-created_at"], name="conversation_agent_recent"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(summarized_through__lte=models.F("message_count")),
                name="conversation_summarized_within",
            ),
            models.CheckConstraint(
                condition=Q(extracted_through__lte=models.F("message_count")),
                name="conversation_extracted_within",
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"conversation {self.pk}"

    @property
    def thread(self) -> str:
        return thread_of(self.pk)


def thread_of(conversation_id: int) -> str:
    """The thread of a conversation's messages in its context."""
    return f"conversation:{conversation_id}"
