"""Long-term memory snapshots: ``/api/v1/memory/contexts/{id}/snapshots`` and
``/api/v1/memory/snapshots/{id}/restore`` (docs/memory/long-term.md)."""

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
from memory.long_term import selectors, services
from memory.models import (
    MemorySnapshot,
)

# --- snapshots ---------------------------------------------------------------------------------


class MemorySnapshotOutput(serializers.ModelSerializer[MemorySnapshot]):
    context_id = serializers.IntegerField()

    class Meta:
        model = MemorySnapshot
        fields = ["id", "context_id", "name", "entry_count", "created_by", "created_at"]


class ContextSnapshotListCreateApi(ApiView):
    """A context's snapshots, newest first; POST records its current entries (write access)."""

    pagination_class = CreatedCursorPagination

    class InputSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)

    @extend_schema(
        operation_id="memory_context_snapshots_list", responses=MemorySnapshotOutput(many=True)
    )
    def get(self, request: Request, context_id: int) -> Response:
        context = selectors.context_get(request_actor(request), context_id)
        return paginated_response(
            self, request, selectors.snapshots_of(context), MemorySnapshotOutput
        )

    @extend_schema(
        operation_id="memory_context_snapshot_create",
        request=InputSerializer,
        responses={201: MemorySnapshotOutput},
    )
    def post(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        data = validated(self.InputSerializer, request)
        snapshot = services.snapshot_create(
            actor=actor, context=selectors.context_get(actor, context_id), name=data["name"]
        )
        return Response(MemorySnapshotOutput(snapshot).data, status=status.HTTP_201_CREATED)


class SnapshotRestoreApi(ApiView):
    """Bring the context back to the snapshot without losing anything: changed entries get a
    new version with the snapshot's content, deleted ones are written again, later ones are
    archived."""

    class OutputSerializer(serializers.Serializer):
        restored = serializers.IntegerField(help_text="Entries given a new version.")
        recreated = serializers.IntegerField(help_text="Deleted memories written again.")
        archived = serializers.IntegerField(help_text="Entries written after the snapshot.")
        unchanged = serializers.IntegerField()

    @extend_schema(operation_id="memory_snapshot_restore", request=None, responses=OutputSerializer)
    def post(self, request: Request, snapshot_id: int) -> Response:
        actor = request_actor(request)
        report = services.snapshot_restore(
            actor=actor, snapshot=selectors.snapshot_get(actor, snapshot_id)
        )
        return Response(self.OutputSerializer(report).data)
