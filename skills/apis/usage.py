"""Usage records: ``POST /api/v1/skills/usage`` takes one record or ``{"records": [...]}``
(docs/skills.md, "Usage and learning")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.views import ApiView
from skills.apis.catalog import task_type_field
from skills.models import SkillUsage
from skills.services import usage as services


class UsageRecordInput(strict.InputSerializer):
    agent_id = strict.IdField(
        help_text="The agent that ran the task: the caller itself, or (with the admin scope) "
        "any agent of its account."
    )
    skill_id = strict.IdField(required=False, allow_null=True, default=None)
    version_id = strict.IdField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Without it, a record naming a skill is counted for the version the agent is "
        "routed to.",
    )
    task_type = task_type_field()
    success = serializers.BooleanField()
    duration_ms = serializers.IntegerField(
        min_value=0, max_value=services.MAX_DURATION_MS, default=0
    )
    occurred_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="Defaults to now."
    )


class UsageBatchInput(strict.InputSerializer):
    records = serializers.ListField(
        child=UsageRecordInput(), min_length=1, max_length=services.MAX_BATCH
    )


class SkillUsageOutput(serializers.ModelSerializer[SkillUsage]):
    agent_id = serializers.IntegerField()
    skill_id = serializers.IntegerField(allow_null=True)
    version_id = serializers.IntegerField(allow_null=True)
    recorded_by_id = serializers.IntegerField(
        allow_null=True, help_text="The agent that reported it (null: a person or a tool)."
    )

    class Meta:
        model = SkillUsage
        fields = [
            "id",
            "agent_id",
            "recorded_by_id",
            "skill_id",
            "version_id",
            "task_type",
            "success",
            "duration_ms",
            "occurred_at",
        ]


def _input(record: dict[str, Any]) -> services.UsageInput:
    return services.UsageInput(**record)


class UsageRecordApi(ApiView):
    """Record what agents ran: one record, or ``{"records": [...]}`` (1 to 1,000, all or
    none). An agent reports its own outcomes; another agent's need the ``admin`` scope (403
    ``insufficient_scope``). Each outcome counts for its version (A/B), its skill, the agent's
    assignment to the skill, its learning profile for the task type and its trust score."""

    class OutputSerializer(serializers.Serializer):
        count = serializers.IntegerField()
        records = SkillUsageOutput(many=True)

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="UsageRecordOrBatch",
            serializers=[UsageRecordInput, UsageBatchInput],
            resource_type_field_name=None,
        ),
        responses={201: OutputSerializer},
        operation_id="skills_usage_record",
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.data, dict) and "records" in request.data:
            records = [_input(r) for r in strict.validated(UsageBatchInput, request)["records"]]
        else:
            records = [_input(strict.validated(UsageRecordInput, request))]
        created = services.usage_record(actor=request_actor(request), records=records)
        return Response(
            self.OutputSerializer({"count": len(created), "records": created}).data,
            status=status.HTTP_201_CREATED,
        )
