"""Conversations as MCP tools (docs/mcp.md): ``conversation_add_messages``,
``conversation_recent``, ``conversation_summarize``; thin over the same services and selectors
as their API views (``memory/apis/conversations.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from core import serializers as strict
from core.mcp import Tool
from memory.apis.conversations import (
    MessageBatchInput,
    MessageListOutput,
    SummaryInput,
    SummaryOutput,
)
from memory.selectors import conversations as selectors
from memory.services import conversations as services

CONVERSATION_ID = "The conversation's id (from POST /api/v1/memory/conversations)."


class AddMessagesInput(MessageBatchInput):
    conversation_id = serializers.IntegerField(min_value=1, help_text=CONVERSATION_ID)


class RecentInput(strict.InputSerializer):
    conversation_id = serializers.IntegerField(min_value=1, help_text=CONVERSATION_ID)
    last = serializers.IntegerField(
        required=False, default=selectors.DEFAULT_RECENT, min_value=1, max_value=100
    )


class SummarizeInput(SummaryInput):
    conversation_id = serializers.IntegerField(min_value=1, help_text=CONVERSATION_ID)


def _messages(out: Mapping[str, Any]) -> str:
    lines = [
        f"#{m['turn_number']} {m['name'] or m['role']}: {m['content']}" for m in out["results"]
    ]
    return "\n".join(lines) or "No messages."


TOOLS = (
    Tool(
        name="conversation_add_messages",
        title="Add messages to a conversation",
        description=(
            "Append 1 to 1,000 messages (role user, assistant, system or tool; `name` the "
            "speaker; `metadata` any JSON, returned as stored) to a conversation, all or none. "
            "Each is numbered in order and becomes searchable memory; rolling summaries follow."
        ),
        scope="write",
        input=AddMessagesInput,
        output=MessageListOutput,
        run=lambda call: dict(
            MessageListOutput(
                {
                    "results": services.messages_append(
                        actor=call.actor,
                        conversation=selectors.conversation_get(
                            call.actor, call.data["conversation_id"]
                        ),
                        messages=[services.MessageInput(**item) for item in call.data["messages"]],
                    )
                }
            ).data
        ),
        summary=lambda out: f"{len(out['results'])} message(s) added.",
    ),
    Tool(
        name="conversation_recent",
        title="A conversation's last messages",
        description="The last `last` messages (default 5) of a conversation, oldest first.",
        scope="read",
        input=RecentInput,
        output=MessageListOutput,
        run=lambda call: dict(
            MessageListOutput(
                {
                    "results": selectors.messages_recent(
                        selectors.conversation_get(call.actor, call.data["conversation_id"]),
                        call.data["last"],
                    )
                }
            ).data
        ),
        summary=_messages,
        idempotent=True,
    ),
    Tool(
        name="conversation_summarize",
        title="Summarise a conversation",
        description=(
            "Summarise turns `start_turn`..`end_turn` of a conversation (default: all of it) "
            "into a summary with key points, stored as searchable memory."
        ),
        scope="write",
        input=SummarizeInput,
        output=SummaryOutput,
        run=lambda call: dict(
            SummaryOutput(
                services.summary_create(
                    actor=call.actor,
                    conversation=selectors.conversation_get(
                        call.actor, call.data.pop("conversation_id")
                    ),
                    **call.data,
                )
            ).data
        ),
        summary=lambda out: out["summary"],
    ),
)
