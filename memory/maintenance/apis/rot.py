"""The rot report across stores: ``GET /api/v1/maintenance/rot`` (docs/memory/rot.md, "Rot across
stores"): what went stale or broken in the caller's account, each item with a suggested action."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.views import ApiView
from memory.maintenance.selectors import rot


class RotItemOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=rot.KINDS)
    id = serializers.IntegerField(help_text="The page, document, memory entry, skill or item.")
    title = serializers.CharField()
    detail = serializers.CharField()
    suggested_action = serializers.CharField()
    data = serializers.DictField(help_text="What the detail says, as fields.")  # type: ignore[assignment]


class RotSectionOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=rot.KINDS)
    title = serializers.CharField()
    total = serializers.IntegerField(help_text="How many there are (items lists at most limit).")
    items = RotItemOutput(many=True)


class RotReportApi(ApiView):
    """The caller's account's rot report, computed now: broken wikilinks, linked pages unchanged
    for ``days``, documents built by another embedding model or chunker, memories a newer fact
    invalidated, skills unused for ``days``, knowledge items whose sources were deleted."""

    required_scope = "read"

    class FilterSerializer(strict.FilterSerializer):
        days = serializers.IntegerField(
            min_value=rot.MIN_DAYS,
            max_value=rot.MAX_DAYS,
            required=False,
            help_text="N: days without change (pages) or use (skills); default "
            "MAINTENANCE_ROT_DAYS (90).",
        )
        limit = serializers.IntegerField(
            min_value=1,
            max_value=rot.MAX_LIMIT,
            default=rot.DEFAULT_LIMIT,
            help_text="Items listed per section (each section's total counts them all).",
        )

    class OutputSerializer(serializers.Serializer):
        account_id = serializers.IntegerField()
        days = serializers.IntegerField()
        generated_at = serializers.DateTimeField()
        total = serializers.IntegerField()
        sections = RotSectionOutput(many=True)

    @extend_schema(
        operation_id="maintenance_rot_report",
        parameters=[FilterSerializer],
        responses=OutputSerializer,
    )
    def get(self, request: Request) -> Response:
        report = rot.rot_report(actor=request_actor(request), **self.filters)
        return Response(self.OutputSerializer(report).data)
