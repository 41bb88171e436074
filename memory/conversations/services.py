"""Conversations: create, change, delete, append messages, summarise.

A conversation's messages are long-term entries of its own context (``memory.models.
conversations``). An append stores them at once, in one set-based INSERT under the context's row
lock, and queues their index (BM25 postings and embedding, which include their neighbours in the
thread, ``memory.long_term.indexing``) for a worker: ``memory.long_term.services.pending``. The last
turns are readable at once (``messages_recent``, a context's recent turns); a message is found by
keyword, then by meaning, once the worker has indexed it (docs/memory/conversations.md). Turn
numbers are given in order, without gaps, even under concurrent appends: appenders to one
conversation take turns on a PostgreSQL advisory lock, read the last turn number, and commit. A
batch is written all or none, and bounded: ``MAX_MESSAGES`` messages, ``MAX_BATCH_CHARS`` characters
in all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from core import metrics
from core.actors import Actor, actor_for_account
from core.audit import audit_record
from core.errors import Conflict, PayloadTooLarge, ValidationFailed
from core.queue import task_send_on_commit
from core.transactions import retry_on_conflict
from core.writes import changes_of, changes_validate, row_update
from memory.conversations import summaries
from memory.conversations.models import thread_of
from memory.conversations.selectors import messages_in_range
from memory.long_term.context_access import require_writable
from memory.long_term.services.contexts import context_delete, conversation_context_create
from memory.long_term.services.entries import (
    MAX_CONTENT_CHARS,
    EntryInput,
    entries_write,
    entry_build,
    unarchived_check,
)
from memory.long_term.services.index import context_lock
from memory.long_term.services.pending import index_soon, pending_index_run, pending_queue
from memory.models import Conversation, MemoryEntry

logger = logging.getLogger("engram.memory")

MAX_MESSAGES = 1000
# What one append may hold in all: 1,000 messages of 2,000 characters.
MAX_BATCH_CHARS = 2_000_000
MAX_NAME_CHARS = 200
CONVERSATION_UPDATABLE = ("title", "user_id", "metadata", "summary_every")
# Advisory lock namespace (the first of pg_advisory_lock's two int4 keys) for appends.
_APPEND_LOCK_SPACE = 0x4D454D  # "MEM"

_SOURCE_OF_ROLE = {
    MemoryEntry.Role.USER: MemoryEntry.Source.USER,
    MemoryEntry.Role.ASSISTANT: MemoryEntry.Source.AGENT,
    MemoryEntry.Role.SYSTEM: MemoryEntry.Source.SYSTEM,
    MemoryEntry.Role.TOOL: MemoryEntry.Source.TOOL,
}


@dataclass(frozen=True)
class MessageInput:
    role: str
    content: str
    name: str = ""
    occurred_at: datetime | None = None
    metadata: Mapping[str, Any] | None = None


# --- conversations ---------------------------------------------------------------------------


def conversation_create(
    *,
    actor: Actor,
    title: str = "",
    user_id: str = "",
    metadata: Mapping[str, Any] | None = None,
    summary_every: int | None = None,
) -> Conversation:
    """A new conversation of the calling agent, with its own context."""
    with transaction.atomic():
        context = conversation_context_create(actor=actor, title=title)
        assert actor.agent is not None  # conversation_context_create checked
        conversation = Conversation(
            account_id=context.account_id,
            agent=actor.agent,
            context=context,
            title=title,
            user_id=user_id,
            metadata=dict(metadata or {}),
        )
        if summary_every is not None:
            conversation.summary_every = summary_every
        changes_validate(
            conversation,
            {"title": title, "user_id": user_id, "summary_every": conversation.summary_every},
        )
        conversation.save(force_insert=True)
        audit_record(
            actor=actor,
            action="memory.conversation.create",
            account_id=context.account_id,
            target=conversation,
            changes={"title": title, "user_id": user_id},
        )
    return conversation


def conversation_update(
    *, actor: Actor, conversation: Conversation, fields: Mapping[str, Any]
) -> Conversation:
    """Change the title, user id, metadata or summary interval (write access)."""
    require_writable(actor, conversation.context_id)
    changes = changes_of(conversation, fields, CONVERSATION_UPDATABLE)
    changes_validate(conversation, changes)
    if not changes:
        return conversation
    return row_update(
        actor=actor,
        instance=conversation,
        changes=changes,
        action="memory.conversation.update",
        account_id=conversation.account_id,
    )


def conversation_delete(*, actor: Actor, conversation: Conversation) -> None:
    """Delete the conversation with its messages, summaries and context (write access)."""
    context = conversation.context
    context_delete(actor=actor, context=context)


# --- messages --------------------------------------------------------------------------------


def _check_messages(messages: Sequence[MessageInput]) -> None:
    if not 1 <= len(messages) <= MAX_MESSAGES:
        raise ValidationFailed(
            f"Write 1 to {MAX_MESSAGES} messages at a time.",
            code="invalid_batch_size",
            details={"max": MAX_MESSAGES},
        )
    total = sum(len(message.content) for message in messages)
    if total > MAX_BATCH_CHARS:
        raise PayloadTooLarge(
            f"A batch of messages holds at most {MAX_BATCH_CHARS} characters of content.",
            code="batch_too_large",
            details={"limit": MAX_BATCH_CHARS, "size": total},
        )
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.role not in MemoryEntry.Role.values:
            raise ValidationFailed(
                f"{where}: role must be one of {', '.join(MemoryEntry.Role.values)}.",
                code="invalid_role",
                details={"index": index, "choices": list(MemoryEntry.Role.values)},
            )
        if not message.content.strip():
            raise ValidationFailed(
                f"{where}: content is empty.", code="empty_message", details={"index": index}
            )
        if len(message.content) > MAX_CONTENT_CHARS:
            raise PayloadTooLarge(
                f"{where}: content is limited to {MAX_CONTENT_CHARS} characters.",
                code="content_too_large",
                details={"index": index, "limit": MAX_CONTENT_CHARS},
            )
        if len(message.name) > MAX_NAME_CHARS:
            raise ValidationFailed(
                f"{where}: name is limited to {MAX_NAME_CHARS} characters.",
                code="name_too_long",
                details={"index": index},
            )


@contextmanager
def _append_turn(conversation_id: int) -> Iterator[None]:
    """Appenders to one conversation, one at a time (see the module's docstring). Inside a
    caller's transaction the lock is the transaction's, so it lasts until that commits."""
    keys = [_APPEND_LOCK_SPACE, conversation_id]
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", keys)
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", keys)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", keys)


@retry_on_conflict
def messages_append(
    *, actor: Actor, conversation: Conversation, messages: Sequence[MessageInput]
) -> list[MemoryEntry]:
    """Append 1 to ``MAX_MESSAGES`` messages, all or none, numbered in order after the last
    (write access). Their index, the rolling summary and extraction follow after the commit
    (Celery); inside a caller's transaction, which this cannot see commit, the index is built
    before returning."""
    _check_messages(messages)
    require_writable(actor, conversation.context_id)
    now = timezone.now()
    thread = thread_of(conversation.pk)
    inline = connection.in_atomic_block
    with _append_turn(conversation.pk):
        last = (
            Conversation.objects.filter(pk=conversation.pk)
            .values_list("message_count", flat=True)
            .first()
        )
        if last is None:
            raise Conflict("The conversation was deleted.", code="conversation_deleted")
        context = conversation.context
        unarchived_check(context)
        new = [
            entry_build(
                context,
                EntryInput(
                    content=message.content,
                    entry_type=MemoryEntry.EntryType.OBSERVATION,
                    source=_SOURCE_OF_ROLE[MemoryEntry.Role(message.role)],
                    memory_type=MemoryEntry.MemoryType.EXPERIENTIAL,
                    metadata=message.metadata,
                    occurred_at=message.occurred_at or now,
                    thread=thread,
                    position=last + offset,
                    speaker=message.name,
                ),
                actor.agent,
                role=message.role,
            )
            for offset, message in enumerate(messages, start=1)
        ]
        from memory import tasks

        with transaction.atomic():
            locked = context_lock(context.pk)
            unarchived_check(locked)
            MemoryEntry.objects.bulk_create(new)
            pending_queue(context_id=context.pk, entries=new, thread=thread)
            Conversation.objects.filter(pk=conversation.pk).update(
                message_count=last + len(new),
                last_message_at=max(entry.occurred_at or now for entry in new),
                updated_at=now,
            )
            audit_record(
                actor=actor,
                action="memory.conversation.messages",
                account_id=conversation.account_id,
                target=conversation,
                changes={"turns": [last + 1, last + len(new)]},
            )
            if not inline:
                transaction.on_commit(lambda: index_soon(context.pk))
            task_send_on_commit(tasks.conversation_follow_up, conversation.pk)
    if inline:
        pending_index_run(context_id=context.pk)
    metrics.turns_added(len(new))
    return list(
        MemoryEntry.objects.defer("embedding")
        .filter(pk__in=[e.pk for e in new])
        .order_by("position")
    )


def turn_add(
    *,
    actor: Actor,
    conversation: Conversation,
    user_input: str,
    agent_response: str,
    context: Mapping[str, Any] | None = None,
    occurred_at: datetime | None = None,
    user_name: str = "",
    agent_name: str = "",
) -> list[MemoryEntry]:
    """Seed 003's turn: the user's input and the agent's response, two messages in one append
    (``context``, when given, in both messages' metadata)."""
    metadata = {"context": dict(context)} if context else {}
    return messages_append(
        actor=actor,
        conversation=conversation,
        messages=[
            MessageInput("user", user_input, user_name, occurred_at, metadata),
            MessageInput("assistant", agent_response, agent_name, occurred_at, metadata),
        ],
    )


# --- summaries -------------------------------------------------------------------------------


def turn_range_check(conversation: Conversation, start_turn: int, end_turn: int) -> None:
    if start_turn < 1 or end_turn < start_turn:
        raise ValidationFailed(
            "Turns count from 1 and start_turn must not be after end_turn.",
            code="invalid_turn_range",
            details={"start_turn": start_turn, "end_turn": end_turn},
        )
    if end_turn > conversation.message_count:
        raise ValidationFailed(
            f"The conversation has {conversation.message_count} turns.",
            code="turn_out_of_range",
            details={"end_turn": end_turn, "turns": conversation.message_count},
        )


def summary_create(
    *,
    actor: Actor,
    conversation: Conversation,
    start_turn: int | None = None,
    end_turn: int | None = None,
    rolling: bool = False,
) -> MemoryEntry:
    """Summarise turns ``start_turn``..``end_turn`` (default: the whole conversation) into a
    ``conversation_summary`` entry of the conversation's context (searchable; turn range, key
    points and method in its metadata). The conversation's ``summary`` follows the summary
    reaching furthest. ``rolling``: only if the range starts right after the last summary
    (409 ``summary_overtaken`` otherwise: another run wrote it)."""
    require_writable(actor, conversation.context_id)
    fresh = Conversation.objects.select_related("context").get(pk=conversation.pk)
    end_turn = fresh.message_count if end_turn is None else end_turn
    start_turn = 1 if start_turn is None else start_turn
    turn_range_check(fresh, start_turn, end_turn)
    messages = messages_in_range(fresh, start_turn, end_turn)
    made = summaries.summarise([summaries.Line(m.speaker, m.content) for m in messages])
    last_at = max((m.occurred_at for m in messages if m.occurred_at), default=None)

    def follow(written: list[MemoryEntry]) -> None:
        rows = Conversation.objects.filter(pk=fresh.pk)
        if rolling and not rows.filter(summarized_through=start_turn - 1).exists():
            raise Conflict("Another run summarised these turns.", code="summary_overtaken")
        rows.filter(summarized_through__lte=end_turn).update(
            summary=written[0].content, summarized_through=end_turn, updated_at=timezone.now()
        )

    (entry,) = entries_write(
        actor=actor,
        context=fresh.context,
        items=[
            EntryInput(
                content=made.text or "(nothing to summarise)",
                entry_type=MemoryEntry.EntryType.CONVERSATION_SUMMARY,
                source=MemoryEntry.Source.SYSTEM,
                memory_type=MemoryEntry.MemoryType.EXPERIENTIAL,
                metadata={
                    "start_turn": start_turn,
                    "end_turn": end_turn,
                    "key_points": made.key_points,
                    "method": made.method,
                },
                occurred_at=last_at,
            )
        ],
        then=follow,
    )
    return MemoryEntry.objects.defer("embedding").get(pk=entry.pk)


def summary_roll(*, actor: Actor, conversation_id: int) -> MemoryEntry | None:
    """The rolling summary: when ``summary_every`` messages or more came after the last
    summary, summarise them (None otherwise). Idempotent: a repeated run finds nothing due."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None or conversation.summary_every == 0:
        return None
    due = conversation.message_count - conversation.summarized_through
    if due < conversation.summary_every:
        return None
    try:
        return summary_create(
            actor=actor,
            conversation=conversation,
            start_turn=conversation.summarized_through + 1,
            end_turn=conversation.message_count,
            rolling=True,
        )
    except Conflict:
        return None  # a concurrent run summarised them


# --- follow-up work (Celery) -----------------------------------------------------------------


def conversation_follow_up_run(*, conversation_id: int) -> dict[str, int]:
    """What follows an append, run by a worker: the rolling summary when one is due, and the
    extraction of the messages not extracted yet (``memory.conversations.extraction.services``)."""
    from memory.conversations.extraction.services import extraction_follow_up

    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return {"summaries": 0, "extractions": 0}
    actor = actor_for_account(conversation.account_id)
    made = summary_roll(actor=actor, conversation_id=conversation_id)
    run = extraction_follow_up(conversation_id=conversation_id)
    return {
        "summaries": int(made is not None),
        "extractions": len(run.extractions) if run is not None else 0,
    }


def summaries_due_run(*, dry_run: bool = False, limit: int = 500) -> dict[str, int]:
    """The periodic sweep: rolling summaries due in any conversation (those an append could not
    queue while the broker was down, or whose task failed)."""
    due = list(
        Conversation.objects.filter(summary_every__gt=0)
        .filter(message_count__gte=F("summarized_through") + F("summary_every"))
        .values_list("pk", flat=True)[:limit]
    )
    if dry_run:
        return {"due": len(due), "summaries": 0}
    written = sum(conversation_follow_up_run(conversation_id=pk)["summaries"] for pk in due)
    return {"due": len(due), "summaries": written}
