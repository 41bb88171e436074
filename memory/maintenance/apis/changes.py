"""The review queue for agents, read-only: ``/api/v1/memory/pending-changes``
(docs/memory/review.md). People decide in the admin; agents see what waits, and until a change is
approved every read answers the current data."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from memory.maintenance.selectors import changes as selectors
from memory.maintenance.services.changes import KNOWN_KINDS
from memory.models import PendingChange


class PendingChangeOutput(serializers.ModelSerializer[PendingChange]):
    context_id = serializers.IntegerField(allow_null=True)
    pool_id = serializers.CharField(source="pool.pool_id", allow_null=True, default=None)
    agent_id = serializers.IntegerField(allow_null=True, help_text="The proposing agent, if any.")
    diff = serializers.SerializerMethodField(help_text="Unified diff of before and after.")
    decided_by = serializers.CharField(source="decided_by_label")

    class Meta:
        model = PendingChange
        fields = [
            "id",
            "kind",
            "status",
            "context_id",
            "pool_id",
            "reason",
            "before",
            "after",
            "members",
            "diff",
            "proposed_by",
            "agent_id",
            "expires_at",
            "decided_by",
            "decided_at",
            "decision_reason",
            "result",
            "error",
            "created_at",
        ]

    def get_diff(self, change: PendingChange) -> str:
        return selectors.change_diff(change)


class PendingChangeListApi(ApiView):
    """The account's proposed changes to memory the caller may read (its contexts and pools),
    newest first: pending ones wait for an owner or operator; the others show the decision."""

    pagination_class = CreatedCursorPagination
    required_scope = "read"

    class FilterSerializer(strict.FilterSerializer):
        status = serializers.ChoiceField(choices=PendingChange.Status.choices, required=False)
        kind = serializers.ChoiceField(choices=KNOWN_KINDS, required=False)
        context_id = strict.IdField(required=False)

    @extend_schema(
        operation_id="memory_pending_changes_list",
        parameters=[FilterSerializer],
        responses=PendingChangeOutput(many=True),
    )
    def get(self, request: Request) -> Response:
        changes = selectors.pending_changes_for(request_actor(request), **self.filters)
        return paginated_response(self, request, changes, PendingChangeOutput)


class PendingChangeDetailApi(ApiView):
    """One proposed change with its before, after and diff."""

    required_scope = "read"

    @extend_schema(operation_id="memory_pending_change_retrieve", responses=PendingChangeOutput)
    def get(self, request: Request, change_id: int) -> Response:
        change = selectors.pending_change_get(request_actor(request), change_id)
        return Response(PendingChangeOutput(change).data)
