"""Extraction: ``/api/v1/memory/conversations/{id}/extract`` and ``.../extractions``
(docs/memory/conversations.md, "Extraction"). Extraction also runs by itself after every append
(Celery); its rows appear in ``.../extractions`` once the follow-up task has run."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.conversations import selectors
from memory.conversations.extraction import services
from memory.models import Extraction

INT32_MAX = 2**31 - 1


class ExtractionOutput(serializers.ModelSerializer[Extraction]):
    conversation_id = serializers.IntegerField()
    knowledge_item_id = serializers.IntegerField(allow_null=True)
    graph_node_id = serializers.IntegerField(allow_null=True)
    graph_edge_id = serializers.IntegerField(allow_null=True)
    message_ids = serializers.ListField(child=serializers.IntegerField())
    turns = serializers.ListField(child=serializers.IntegerField())

    class Meta:
        model = Extraction
        fields = [
            "id",
            "conversation_id",
            "kind",
            "decision",
            "fact",
            "key",
            "confidence",
            "method",
            "message_ids",
            "turns",
            "knowledge_item_id",
            "graph_node_id",
            "graph_edge_id",
            "error",
            "created_at",
        ]


class ExtractionRunOutput(serializers.Serializer):
    from_turn = serializers.IntegerField()
    to_turn = serializers.IntegerField()
    method = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField())
    results = ExtractionOutput(many=True, source="extractions")


class ExtractInput(strict.InputSerializer):
    from_turn = serializers.IntegerField(
        required=False, min_value=1, max_value=INT32_MAX, help_text="Default: 1."
    )
    to_turn = serializers.IntegerField(
        required=False, min_value=1, max_value=INT32_MAX, help_text="Default: the last turn."
    )


class ConversationExtractApi(ApiView):
    """Extract knowledge from turns ``from_turn``..``to_turn`` now (default: the whole
    conversation): facts as knowledge items, entities and relations as graph nodes and edges.
    Answers the extractions made, with counts by decision and kind."""

    @extend_schema(
        operation_id="memory_conversation_extract",
        request=ExtractInput,
        responses={201: ExtractionRunOutput},
    )
    def post(self, request: Request, conversation_id: int) -> Response:
        actor = request_actor(request)
        data = validated(ExtractInput, request)
        run = services.extraction_run(
            actor=actor, conversation=selectors.conversation_get(actor, conversation_id), **data
        )
        return Response(ExtractionRunOutput(run).data, status=status.HTTP_201_CREATED)


class ConversationExtractionsApi(ApiView):
    """The conversation's extractions, newest first: each with its source messages, method,
    confidence, decision and the knowledge item, node or edge it produced or changed."""

    pagination_class = CreatedCursorPagination

    @extend_schema(
        operation_id="memory_conversation_extractions_list",
        responses=ExtractionOutput(many=True),
    )
    def get(self, request: Request, conversation_id: int) -> Response:
        conversation = selectors.conversation_get(request_actor(request), conversation_id)
        return paginated_response(
            self, request, selectors.extractions_of(conversation), ExtractionOutput
        )
