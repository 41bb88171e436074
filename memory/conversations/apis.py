"""Conversations: ``/api/v1/memory/conversations/...`` (docs/memory/conversations.md).

Messages are long-term entries of the conversation's own context: a message's ``id`` is its
entry's id (readable and searchable through the long-term endpoints too), ``turn_number`` its
position in the conversation, counted from 1."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, page_parameters_check, paginated_response
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.conversations import selectors, services
from memory.conversations.models import DEFAULT_SUMMARY_EVERY
from memory.models import Conversation, MemoryEntry

MAX_SUMMARY_EVERY = 10_000
INT32_MAX = 2**31 - 1


class ConversationOutput(serializers.ModelSerializer[Conversation]):
    agent_id = serializers.IntegerField()
    context_id = serializers.IntegerField()

    class Meta:
        model = Conversation
        fields = [
            "id",
            "agent_id",
            "context_id",
            "user_id",
            "title",
            "summary",
            "metadata",
            "message_count",
            "summary_every",
            "summarized_through",
            "extracted_through",
            "last_message_at",
            "created_at",
            "updated_at",
        ]


class IndexingOutput(serializers.Serializer):
    waiting = serializers.IntegerField(help_text="Messages whose index is not complete yet.")
    unsearchable = serializers.IntegerField(help_text="Of which not found by keyword yet.")
    failed = serializers.IntegerField(help_text="Messages whose embedding failed (see error).")
    error = serializers.CharField(help_text="The last failure's error, or empty.")


class ConversationDetailOutput(ConversationOutput):
    indexing = serializers.SerializerMethodField(
        help_text="Messages are stored at once and indexed by a worker "
        '(docs/memory/conversations.md, "When a message becomes searchable"): 0 waiting means '
        "every message is found by keyword and by meaning."
    )

    class Meta(ConversationOutput.Meta):
        fields = [*ConversationOutput.Meta.fields, "indexing"]

    @extend_schema_field(IndexingOutput)
    def get_indexing(self, conversation: Conversation) -> dict[str, Any]:
        return selectors.index_waiting(conversation)


class MessageOutput(serializers.ModelSerializer[MemoryEntry]):
    turn_number = serializers.IntegerField(source="position")
    name = serializers.CharField(source="speaker")
    conversation_id = serializers.SerializerMethodField()

    class Meta:
        model = MemoryEntry
        fields = [
            "id",
            "conversation_id",
            "turn_number",
            "role",
            "name",
            "content",
            "occurred_at",
            "metadata",
            "version",
            "created_at",
        ]

    def get_conversation_id(self, entry: MemoryEntry) -> int:
        return int(entry.thread.rsplit(":", 1)[1])


class MessageListOutput(serializers.Serializer):
    results = MessageOutput(many=True)


class SummaryOutput(serializers.ModelSerializer[MemoryEntry]):
    summary = serializers.CharField(source="content")
    key_points = serializers.SerializerMethodField()
    start_turn = serializers.SerializerMethodField()
    end_turn = serializers.SerializerMethodField()
    method = serializers.SerializerMethodField()

    class Meta:
        model = MemoryEntry
        fields = [
            "id",
            "summary",
            "key_points",
            "start_turn",
            "end_turn",
            "method",
            "occurred_at",
            "created_at",
        ]

    def get_key_points(self, entry: MemoryEntry) -> list[str]:
        return list(entry.metadata.get("key_points") or [])

    def get_start_turn(self, entry: MemoryEntry) -> int:
        return int(entry.metadata.get("start_turn") or 0)

    def get_end_turn(self, entry: MemoryEntry) -> int:
        return int(entry.metadata.get("end_turn") or 0)

    def get_method(self, entry: MemoryEntry) -> str:
        return str(entry.metadata.get("method") or "")


class ConversationInput(strict.InputSerializer):
    title = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)
    user_id = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="The person the agent talks to, in your own terms.",
    )
    metadata = strict.MetadataField(required=False, default=dict)
    summary_every = serializers.IntegerField(
        required=False,
        default=DEFAULT_SUMMARY_EVERY,
        min_value=0,
        max_value=MAX_SUMMARY_EVERY,
        help_text="A rolling summary every this many messages (0: only on request).",
    )


class ConversationUpdateInput(strict.InputSerializer):
    title = serializers.CharField(max_length=500, required=False, allow_blank=True)
    user_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
    metadata = strict.MetadataField(required=False)
    summary_every = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_SUMMARY_EVERY
    )


class MessageInput(strict.InputSerializer):
    role = serializers.ChoiceField(
        choices=MemoryEntry.Role.choices, help_text="user, assistant, system or tool."
    )
    name = serializers.CharField(
        max_length=services.MAX_NAME_CHARS,
        required=False,
        default="",
        allow_blank=True,
        help_text="The speaker.",
    )
    content = serializers.CharField(
        max_length=services.MAX_CONTENT_CHARS,
        trim_whitespace=False,
        allow_blank=True,
        help_text="What was said.",
    )
    occurred_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="Default: now."
    )
    metadata = strict.MetadataField(required=False, default=dict)


class MessageBatchInput(strict.BatchInput):
    """``{"messages": [...]}``: 1 to 1,000 messages, written all or none."""

    batch_field, batch_max, batch_noun = "messages", services.MAX_MESSAGES, "messages"

    messages = serializers.ListField(
        child=MessageInput(),
        min_length=1,
        max_length=services.MAX_MESSAGES,
        help_text=f"1 to {services.MAX_MESSAGES} messages (else 400 invalid_batch_size).",
    )


class TurnInput(strict.InputSerializer):
    """Seed 003's turn: the user's input and the agent's response, stored as two messages."""

    user_input = serializers.CharField(
        max_length=services.MAX_CONTENT_CHARS, trim_whitespace=False, allow_blank=True
    )
    agent_response = serializers.CharField(
        max_length=services.MAX_CONTENT_CHARS, trim_whitespace=False, allow_blank=True
    )
    context = strict.MetadataField(  # type: ignore[assignment]  # a field named "context"
        required=False,
        default=dict,
        stored_as="context",
        help_text="Any JSON object: stored as metadata.context on both messages (that "
        "metadata within the bound of every message's metadata).",
    )
    occurred_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class SummaryInput(strict.InputSerializer):
    start_turn = serializers.IntegerField(
        required=False, min_value=1, max_value=INT32_MAX, help_text="Default: 1."
    )
    end_turn = serializers.IntegerField(
        required=False, min_value=1, max_value=INT32_MAX, help_text="Default: the last turn."
    )


class MessageCursorPagination(CreatedCursorPagination):
    """The whole history in turn order, a page at a time."""

    ordering = ("position", "id")


class ConversationListCreateApi(ApiView):
    """The conversations the caller may read, newest first (filter ``user_id``); POST starts
    one for the calling agent."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        user_id = serializers.CharField(max_length=200, required=False, allow_blank=True)

    @extend_schema(
        operation_id="memory_conversations_list",
        parameters=[FilterSerializer],
        responses=ConversationOutput(many=True),
    )
    def get(self, request: Request) -> Response:
        conversations = selectors.conversation_list(
            request_actor(request), user_id=self.filters.get("user_id")
        )
        return paginated_response(self, request, conversations, ConversationOutput)

    @extend_schema(
        operation_id="memory_conversation_create",
        request=ConversationInput,
        responses={201: ConversationOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(ConversationInput, request)
        conversation = services.conversation_create(actor=request_actor(request), **data)
        return Response(ConversationOutput(conversation).data, status=status.HTTP_201_CREATED)


class ConversationDetailApi(ApiView):
    """One conversation. PATCH changes its title, user id, metadata or summary interval;
    DELETE removes it with its messages, summaries and context."""

    @extend_schema(operation_id="memory_conversation_retrieve", responses=ConversationDetailOutput)
    def get(self, request: Request, conversation_id: int) -> Response:
        conversation = selectors.conversation_get(request_actor(request), conversation_id)
        return Response(ConversationDetailOutput(conversation).data)

    @extend_schema(
        operation_id="memory_conversation_update",
        request=ConversationUpdateInput,
        responses=ConversationOutput,
    )
    def patch(self, request: Request, conversation_id: int) -> Response:
        actor = request_actor(request)
        data = validated(ConversationUpdateInput, request)
        conversation = services.conversation_update(
            actor=actor,
            conversation=selectors.conversation_get(actor, conversation_id),
            fields=data,
        )
        return Response(ConversationOutput(conversation).data)

    @extend_schema(operation_id="memory_conversation_delete", responses={204: None})
    def delete(self, request: Request, conversation_id: int) -> Response:
        actor = request_actor(request)
        services.conversation_delete(
            actor=actor, conversation=selectors.conversation_get(actor, conversation_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConversationMessagesApi(ApiView):
    """GET: with ``last=N``, the last N messages, oldest first (the recent context); without,
    the whole history in turn order, a page at a time. POST appends 1 to 1,000 messages, all or
    none, answering each with its ``id`` and ``turn_number``."""

    pagination_class = MessageCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        last = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=selectors.MAX_RECENT,
            help_text="Only the last N messages (seed 003's recent context uses 5).",
        )

    @extend_schema(
        operation_id="memory_conversation_messages_list",
        parameters=[FilterSerializer],
        responses=MessageOutput(many=True),
    )
    def get(self, request: Request, conversation_id: int) -> Response:
        conversation = selectors.conversation_get(request_actor(request), conversation_id)
        last = self.filters.get("last")
        if last is not None:
            # The page parameters answer nothing here, but are checked like everywhere else.
            page_parameters_check(self.pagination_class, request)
            recent = selectors.messages_recent(conversation, last)
            return Response(
                {"next": None, "previous": None, "results": MessageOutput(recent, many=True).data}
            )
        return paginated_response(self, request, selectors.messages_of(conversation), MessageOutput)

    @extend_schema(
        operation_id="memory_conversation_messages_add",
        request=MessageBatchInput,
        responses={201: MessageListOutput},
    )
    def post(self, request: Request, conversation_id: int) -> Response:
        actor = request_actor(request)
        data = validated(MessageBatchInput, request)
        written = services.messages_append(
            actor=actor,
            conversation=selectors.conversation_get(actor, conversation_id),
            messages=[services.MessageInput(**item) for item in data["messages"]],
        )
        return Response(
            MessageListOutput({"results": written}).data, status=status.HTTP_201_CREATED
        )


class ConversationTurnsApi(ApiView):
    """Seed 003's turn form: ``user_input`` and ``agent_response`` as two messages."""

    @extend_schema(
        operation_id="memory_conversation_turn_add",
        request=TurnInput,
        responses={201: MessageListOutput},
    )
    def post(self, request: Request, conversation_id: int) -> Response:
        actor = request_actor(request)
        data = validated(TurnInput, request)
        written = services.turn_add(
            actor=actor, conversation=selectors.conversation_get(actor, conversation_id), **data
        )
        return Response(
            MessageListOutput({"results": written}).data, status=status.HTTP_201_CREATED
        )


class ConversationSummariesApi(ApiView):
    """GET lists the conversation's summaries, newest first. POST summarises turns
    ``start_turn``..``end_turn`` now (default: the whole conversation)."""

    pagination_class = CreatedCursorPagination

    @extend_schema(
        operation_id="memory_conversation_summaries_list",
        responses=SummaryOutput(many=True),
    )
    def get(self, request: Request, conversation_id: int) -> Response:
        conversation = selectors.conversation_get(request_actor(request), conversation_id)
        return paginated_response(
            self, request, selectors.summaries_of(conversation), SummaryOutput
        )

    @extend_schema(
        operation_id="memory_conversation_summarize",
        request=SummaryInput,
        responses={201: SummaryOutput},
    )
    def post(self, request: Request, conversation_id: int) -> Response:
        actor = request_actor(request)
        data = validated(SummaryInput, request)
        summary = services.summary_create(
            actor=actor, conversation=selectors.conversation_get(actor, conversation_id), **data
        )
        return Response(SummaryOutput(summary).data, status=status.HTTP_201_CREATED)
