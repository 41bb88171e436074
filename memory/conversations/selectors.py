"""Conversation reads: the conversations an actor may see, their messages (the recent context,
pages through the whole history, turn ranges) and their summaries.

A conversation is visible to whoever may read its context (``memory.long_term.context_access``): its
agent, agents granted its context, people of its account. Another account's conversation answers
exactly like a missing one (404 ``conversation_not_found``)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from core.actors import Actor
from core.errors import NotFound
from memory.conversations.models import thread_of
from memory.long_term.context_access import readable_contexts
from memory.models import Conversation, Extraction, MemoryEntry, PendingIndex

DEFAULT_RECENT = 5
MAX_RECENT = 1000


def conversation_not_found() -> NotFound:
    return NotFound("No such conversation.", code="conversation_not_found")


def conversation_list(actor: Actor, *, user_id: str | None = None) -> QuerySet[Conversation]:
    conversations = Conversation.objects.filter(
        context_id__in=readable_contexts(actor).values("pk")
    )
    if user_id is not None:
        conversations = conversations.filter(user_id=user_id)
    return conversations.order_by("-created_at", "-id")


def conversation_get(actor: Actor, conversation_id: int) -> Conversation:
    """A conversation the actor may read (404 ``conversation_not_found`` otherwise, another
    account's and a missing one alike). Its own agent always reads it (the owner of its
    context): one query on the hot path; anyone else goes through the context's access rules."""
    conversation = Conversation.objects.select_related("context").filter(pk=conversation_id).first()
    if conversation is None:
        raise conversation_not_found()
    agent = actor.agent
    own = (
        agent is not None
        and conversation.agent_id == agent.pk
        and conversation.account_id == agent.account_id
        and conversation.context.owner_id == agent.pk
    )
    if not own and not readable_contexts(actor).filter(pk=conversation.context_id).exists():
        raise conversation_not_found()
    return conversation


def messages_of(conversation: Conversation) -> QuerySet[MemoryEntry]:
    """The conversation's messages (current versions), in turn order."""
    return (
        MemoryEntry.objects.defer("embedding")
        .filter(
            context_id=conversation.context_id,
            thread=thread_of(conversation.pk),
            is_current=True,
        )
        .order_by("position", "id")
    )


def messages_recent(conversation: Conversation, last: int = DEFAULT_RECENT) -> list[MemoryEntry]:
    """The last ``last`` messages, oldest first (seed 003's ``get_conversation_context``)."""
    return list(reversed(messages_recent_query(conversation, last)))


def messages_recent_query(conversation: Conversation, last: int) -> QuerySet[MemoryEntry]:
    """The last ``last`` messages, newest first (what ``messages_recent`` reads). Turn numbers
    are unique among current messages, so ``position`` alone orders them, and the read walks the
    thread index backwards and stops after ``last`` rows (no sort of the whole history)."""
    return messages_of(conversation).order_by("-position")[:last]


def messages_in_range(
    conversation: Conversation, start_turn: int, end_turn: int
) -> list[MemoryEntry]:
    return list(messages_of(conversation).filter(position__gte=start_turn, position__lte=end_turn))


def summaries_of(conversation: Conversation) -> QuerySet[MemoryEntry]:
    """The conversation's summaries, newest first."""
    return (
        MemoryEntry.objects.defer("embedding")
        .filter(
            context_id=conversation.context_id,
            entry_type=MemoryEntry.EntryType.CONVERSATION_SUMMARY,
            is_current=True,
        )
        .order_by("-created_at", "-id")
    )


def extractions_of(conversation: Conversation) -> QuerySet[Extraction]:
    """The conversation's extractions, newest first."""
    return Extraction.objects.filter(conversation=conversation).order_by("-created_at", "-id")


def index_waiting(conversation: Conversation) -> dict[str, Any]:
    """The conversation's messages waiting for their index (``memory.long_term.services.
    pending``): how many wait, how many are not found by keyword yet, how many failed (and the
    last failure's error)."""
    rows = PendingIndex.objects.filter(context_id=conversation.context_id)
    failed = rows.filter(failed_at__isnull=False)
    last = failed.order_by("-failed_at").values_list("error", flat=True).first()
    return {
        "waiting": rows.filter(failed_at__isnull=True).count(),
        "unsearchable": rows.filter(keyword=True).count(),
        "failed": failed.count(),
        "error": last or "",
    }
