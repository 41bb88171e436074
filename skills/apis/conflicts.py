"""``GET /api/v1/skills/conflicts``: the account's skill conflicts (docs/skills.md,
"Conflicts"). People acknowledge, resolve and dismiss them in the admin."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from skills.models import SkillConflict
from skills.selectors.conflicts import conflict_list


class SkillConflictOutput(serializers.ModelSerializer[SkillConflict]):
    skill_id = serializers.IntegerField()
    other_skill_id = serializers.IntegerField(allow_null=True)
    proposal_id = serializers.IntegerField(
        allow_null=True, help_text="The proposal auto-repair opened for it."
    )
    priority = strict.FiniteFloatField()
    weight = serializers.IntegerField(help_text="The severity's weight: 1, 2, 4 or 8.")

    class Meta:
        model = SkillConflict
        fields = [
            "id",
            "conflict_type",
            "severity",
            "weight",
            "priority",
            "status",
            "skill_id",
            "other_skill_id",
            "description",
            "details",
            "proposal_id",
            "last_seen_at",
            "acknowledged_at",
            "resolved_at",
            "resolution",
            "created_at",
        ]


class ConflictListApi(ApiView):
    """Conflicts between the account's skills, newest first: open ones (detected and
    acknowledged) unless ``status`` says otherwise; by type, severity or skill."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        status = serializers.ChoiceField(choices=SkillConflict.Status.choices, required=False)
        conflict_type = serializers.ChoiceField(
            choices=SkillConflict.ConflictType.choices, required=False
        )
        severity = serializers.ChoiceField(choices=SkillConflict.Severity.choices, required=False)
        skill_id = strict.IdField(required=False, help_text="Conflicts involving this skill.")

    @extend_schema(
        parameters=[FilterSerializer],
        responses=SkillConflictOutput(many=True),
        operation_id="skills_conflicts_list",
    )
    def get(self, request: Request) -> Response:
        conflicts = conflict_list(actor=request_actor(request), **self.filters)
        return paginated_response(self, request, conflicts, SkillConflictOutput)
