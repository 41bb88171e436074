"""Conversations as one MCP tool, ``conversation`` (docs/mcp.md), whose ``action`` picks the job:
``recent`` (``GET /memory/conversations/{id}/messages?last=``), ``add_messages`` (``POST
.../messages``) and ``summarize`` (``POST .../summaries``); each the same selector or service
call and the same answer as its API view (``memory/conversations/apis.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from core import serializers as strict
from core.mcp import Call, Tool
from core.mcp.registry import Job
from memory.conversations import selectors, services
from memory.conversations.apis import (
    MessageBatchInput,
    MessageListOutput,
    MessageOutput,
    SummaryInput,
    SummaryOutput,
)

CONVERSATION_ID = (
    "The conversation's id (from POST /api/v1/memory/conversations, or get_context's "
    "answers), e.g. 12."
)
MESSAGES_HELP = (
    "1 to 1,000 messages, each {role: user, assistant, system or tool; content; name: the "
    'speaker; occurred_at; metadata}, e.g. [{"role": "user", "content": "I moved to Porto."}].'
)


class AddMessagesInput(MessageBatchInput):
    conversation_id = strict.IdField(help_text=CONVERSATION_ID)


class RecentInput(strict.InputSerializer):
    conversation_id = strict.IdField(help_text=CONVERSATION_ID)
    last = serializers.IntegerField(
        required=False,
        default=selectors.DEFAULT_RECENT,
        min_value=1,
        max_value=selectors.MAX_RECENT,
        help_text=f"How many of the last messages, 1 to {selectors.MAX_RECENT} (default "
        f"{selectors.DEFAULT_RECENT}).",
    )


class RecentOutput(serializers.Serializer):
    """``GET .../messages?last=``'s answer: one page, the last messages oldest first."""

    next = serializers.CharField(allow_null=True, help_text="Always null: one page.")
    previous = serializers.CharField(allow_null=True, help_text="Always null: one page.")
    results = MessageOutput(many=True)


class SummarizeInput(SummaryInput):
    conversation_id = strict.IdField(help_text=CONVERSATION_ID)


def _messages(out: Mapping[str, Any]) -> str:
    lines = [
        f"#{m['turn_number']} {m['name'] or m['role']}: {m['content']}" for m in out["results"]
    ]
    return "\n".join(lines) or "No messages."


def _recent(call: Call) -> dict[str, Any]:
    conversation = selectors.conversation_get(call.actor, call.data["conversation_id"])
    recent = selectors.messages_recent(conversation, call.data["last"])
    return {"next": None, "previous": None, "results": MessageOutput(recent, many=True).data}


def _add(call: Call) -> dict[str, Any]:
    written = services.messages_append(
        actor=call.actor,
        conversation=selectors.conversation_get(call.actor, call.data["conversation_id"]),
        messages=[services.MessageInput(**item) for item in call.data["messages"]],
    )
    return dict(MessageListOutput({"results": written}).data)


def _summarize(call: Call) -> dict[str, Any]:
    data = dict(call.data)
    conversation = selectors.conversation_get(call.actor, data.pop("conversation_id"))
    summary = services.summary_create(actor=call.actor, conversation=conversation, **data)
    return dict(SummaryOutput(summary).data)


TOOLS = (
    Tool(
        name="conversation",
        title="Read, add to or summarise a conversation",
        description=(
            "A conversation's messages. `action` recent (default): its last `last` messages, "
            "oldest first. `action` add_messages: append 1 to 1,000 `messages` to it, all or "
            "none; each is numbered in order and becomes searchable memory. `action` "
            "summarize: summarise turns `start_turn`..`end_turn` (default all) into a "
            "summary with key points, stored as searchable memory."
        ),
        scope="read",
        rest="GET /api/v1/memory/conversations/{conversation_id}/messages?last=",
        input=RecentInput,
        output=RecentOutput,
        run=_recent,
        summary=_messages,
        selector="action",
        default="recent",
        more=(
            Job(
                value="add_messages",
                description="append messages to the conversation, all or none",
                scope="write",
                rest="POST /api/v1/memory/conversations/{conversation_id}/messages",
                input=AddMessagesInput,
                output=MessageListOutput,
                run=_add,
                summary=lambda out: f"{len(out['results'])} message(s) added.",
                hints={"messages": MESSAGES_HELP},
            ),
            Job(
                value="summarize",
                description="summarise turns start_turn..end_turn (default: all of them)",
                scope="write",
                rest="POST /api/v1/memory/conversations/{conversation_id}/summaries",
                input=SummarizeInput,
                output=SummaryOutput,
                run=_summarize,
                summary=lambda out: out["summary"],
                hints={
                    "start_turn": "The first turn to summarise, from 1 (default 1).",
                    "end_turn": "The last turn to summarise (default: the last one).",
                },
            ),
        ),
    ),
)
