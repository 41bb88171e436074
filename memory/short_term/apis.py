"""Short-term memory API (PostgreSQL, per agent and session, with TTLs):
``/api/v1/memory/short-term/...``."""

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
from memory.apis.common import (
    SHORT_TERM_TTL,
    SHORT_TERM_VALUE,
    BoundedValueField,
    TtlField,
    key_field,
)
from memory.models import ShortTermEntry
from memory.short_term import selectors as short_term_selectors
from memory.short_term import services as short_term_services
from memory.short_term.services import BATCH_MAX


class ShortTermOutput(serializers.ModelSerializer[ShortTermEntry]):
    ttl = serializers.IntegerField(source="ttl_seconds")
    value = serializers.JSONField(allow_null=True)

    class Meta:
        model = ShortTermEntry
        fields = [
            "session_id",
            "key",
            "value",
            "memory_type",
            "ttl",
            "expires_at",
            "access_count",
            "last_accessed_at",
            "created_at",
            "updated_at",
        ]


class ShortTermKeyApi(ApiView):
    """One entry: PUT stores (201 new, 200 replaced), GET reads it and counts the access,
    DELETE removes it. An expired entry answers 404 ``short_term_key_not_found`` at once."""

    class InputSerializer(strict.InputSerializer):
        value = BoundedValueField(SHORT_TERM_VALUE, allow_null=True, help_text="Any JSON value.")
        ttl = TtlField(SHORT_TERM_TTL, required=False)
        memory_type = serializers.ChoiceField(
            choices=ShortTermEntry.MemoryType.choices,
            default=ShortTermEntry.MemoryType.TASK_CONTEXT,
        )

    @extend_schema(
        operation_id="memory_short_term_put",
        request=InputSerializer,
        responses={200: ShortTermOutput, 201: ShortTermOutput},
    )
    def put(self, request: Request, session_id: str, key: str) -> Response:
        data = validated(self.InputSerializer, request)
        entry, created = short_term_services.short_term_put(
            actor=request_actor(request),
            session_id=session_id,
            key=key,
            value=data["value"],
            memory_type=data["memory_type"],
            ttl=data.get("ttl"),
        )
        return Response(
            ShortTermOutput(entry).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(operation_id="memory_short_term_get", responses=ShortTermOutput)
    def get(self, request: Request, session_id: str, key: str) -> Response:
        entry = short_term_services.short_term_read(
            actor=request_actor(request), session_id=session_id, key=key
        )
        return Response(ShortTermOutput(entry).data)

    @extend_schema(operation_id="memory_short_term_delete", responses={204: None})
    def delete(self, request: Request, session_id: str, key: str) -> Response:
        short_term_services.short_term_remove(
            actor=request_actor(request), session_id=session_id, key=key
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class ShortTermBatchEntryInput(strict.InputSerializer):
    key = key_field(trim_whitespace=False)
    value = BoundedValueField(SHORT_TERM_VALUE, allow_null=True, help_text="Any JSON value.")
    ttl = TtlField(SHORT_TERM_TTL, required=False)
    memory_type = serializers.ChoiceField(
        choices=ShortTermEntry.MemoryType.choices,
        default=ShortTermEntry.MemoryType.TASK_CONTEXT,
    )


class ShortTermBatchItemOutput(serializers.Serializer):
    key = serializers.CharField()
    created = serializers.BooleanField(help_text="A new entry (false: a live one replaced).")
    expires_at = serializers.DateTimeField()


class ShortTermBatchApi(ApiView):
    """Store up to 1,000 entries of the session at once, all or none, each as ``PUT`` stores one
    (same checks, same replace rules). A key given twice is 400 ``duplicate_key``."""

    class InputSerializer(strict.InputSerializer):
        entries = ShortTermBatchEntryInput(  # type: ignore[call-arg]  # ListSerializer's
            many=True, min_length=1, max_length=BATCH_MAX
        )

    class OutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        created = serializers.IntegerField()
        replaced = serializers.IntegerField()
        items = ShortTermBatchItemOutput(many=True)

    @extend_schema(
        operation_id="memory_short_term_put_batch",
        request=InputSerializer,
        responses=OutputSerializer,
    )
    def post(self, request: Request, session_id: str) -> Response:
        data = validated(self.InputSerializer, request)
        stored = short_term_services.short_term_put_batch(
            actor=request_actor(request), session_id=session_id, entries=data["entries"]
        )
        created = sum(1 for _, new in stored if new)
        body = {
            "session_id": session_id,
            "created": created,
            "replaced": len(stored) - created,
            "items": [
                {"key": entry.key, "created": new, "expires_at": entry.expires_at}
                for entry, new in stored
            ],
        }
        return Response(self.OutputSerializer(body).data)


class ShortTermRefreshApi(ApiView):
    """Expire the entry ``ttl`` seconds from now (default: its own TTL, which ``ttl``
    replaces). Not an access."""

    class InputSerializer(strict.InputSerializer):
        ttl = TtlField(SHORT_TERM_TTL, required=False)

    @extend_schema(
        operation_id="memory_short_term_refresh",
        request=InputSerializer,
        responses=ShortTermOutput,
    )
    def post(self, request: Request, session_id: str, key: str) -> Response:
        data = validated(self.InputSerializer, request)
        entry = short_term_services.short_term_refresh(
            actor=request_actor(request), session_id=session_id, key=key, ttl=data.get("ttl")
        )
        return Response(ShortTermOutput(entry).data)


class ShortTermSessionApi(ApiView):
    """The live entries of a session, newest first (listing counts no access)."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        memory_type = serializers.ChoiceField(
            choices=ShortTermEntry.MemoryType.choices, required=False
        )

    @extend_schema(
        operation_id="memory_short_term_list",
        parameters=[FilterSerializer],
        responses=ShortTermOutput(many=True),
    )
    def get(self, request: Request, session_id: str) -> Response:
        entries = short_term_selectors.short_term_list(
            actor=request_actor(request),
            session_id=session_id,
            memory_type=self.filters.get("memory_type"),
        )
        return paginated_response(self, request, entries, ShortTermOutput)
