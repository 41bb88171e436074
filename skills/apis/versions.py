"""Versions and A/B traffic of a skill: ``/api/v1/skills/{id}/versions`` (compare, create),
``.../versions/{version_id}/activate`` and ``/skills/{id}/traffic`` (docs/skills.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.views import ApiView
from skills.apis.catalog import SkillVersionOutput, version_field
from skills.models import SkillVersion
from skills.selectors import catalog as catalog_selectors
from skills.selectors import versions as selectors
from skills.services import versions as services

TRAFFIC_HELP = (
    "The active variants after this write, by version string, with their traffic shares "
    '(each above 0, summing to 1): {"1.0.0": 0.8, "1.1.0": 0.2}. Every other version becomes '
    "inactive."
)


class VersionStatsOutput(serializers.Serializer):
    version = SkillVersionOutput()
    outcomes = serializers.IntegerField()
    success_rate = strict.FiniteFloatField(allow_null=True)
    ci_low = strict.FiniteFloatField(allow_null=True, help_text="Wilson 95% interval.")
    ci_high = strict.FiniteFloatField(allow_null=True)
    difference = strict.FiniteFloatField(
        allow_null=True, help_text="Success rate minus the baseline's."
    )
    difference_low = strict.FiniteFloatField(allow_null=True, help_text="95% interval.")
    difference_high = strict.FiniteFloatField(allow_null=True)
    significant = serializers.BooleanField(
        allow_null=True, help_text="Whether the difference's interval excludes 0."
    )


class VersionComparisonOutput(serializers.Serializer):
    baseline_version_id = serializers.IntegerField(
        source="baseline.pk", allow_null=True, help_text="The primary active variant."
    )
    versions = VersionStatsOutput(many=True)


class SkillVersionsApi(ApiView):
    """A skill's versions (newest first, at most 200) compared: each success rate with its
    interval and its difference from the baseline; create a version (inactive, or active with
    ``activate``, or one of the variants with ``traffic``)."""

    class InputSerializer(strict.InputSerializer):
        version = version_field()
        change_type = serializers.ChoiceField(choices=SkillVersion.ChangeType.choices)
        content = serializers.CharField(
            max_length=100_000, required=False, default="", allow_blank=True
        )
        execution_context = strict.MetadataField(
            required=False,
            help_text="What running this version needs (default: the skill's). The skill's "
            "execution context is its primary active version's.",
        )
        notes = serializers.CharField(max_length=5000, required=False, default="", allow_blank=True)
        activate = serializers.BooleanField(
            default=False, help_text="Make it the only active version."
        )
        traffic = strict.ObjectField(
            child=strict.FiniteFloatField(min_value=0, max_value=1),
            max_properties=services.MAX_VARIANTS,
            service_checks_bounds=True,
            required=False,
            help_text=TRAFFIC_HELP,
        )

    @extend_schema(responses=VersionComparisonOutput, operation_id="skill_versions_list")
    def get(self, request: Request, skill_id: int) -> Response:
        skill = catalog_selectors.skill_get(actor=request_actor(request), skill_id=skill_id)
        return Response(VersionComparisonOutput(selectors.version_compare(skill)).data)

    @extend_schema(
        request=InputSerializer,
        responses={201: SkillVersionOutput},
        operation_id="skill_versions_create",
    )
    def post(self, request: Request, skill_id: int) -> Response:
        actor = request_actor(request)
        skill = catalog_selectors.skill_get(actor=actor, skill_id=skill_id)
        data = strict.validated(self.InputSerializer, request)
        version = services.version_create(actor=actor, skill=skill, **data)
        return Response(SkillVersionOutput(version).data, status=status.HTTP_201_CREATED)


class SkillVersionActivateApi(ApiView):
    """Make this version the skill's only active one (all traffic): ends an A/B test."""

    @extend_schema(
        request=None, responses=SkillVersionOutput, operation_id="skill_version_activate"
    )
    def post(self, request: Request, skill_id: int, version_id: int) -> Response:
        actor = request_actor(request)
        skill = catalog_selectors.skill_get(actor=actor, skill_id=skill_id)
        version = selectors.version_get(skill=skill, version_id=version_id)
        version = services.version_activate(actor=actor, skill=skill, version=version)
        return Response(SkillVersionOutput(version).data)


class SkillTrafficApi(ApiView):
    """Route usage between versions by share (an A/B test): the named versions become the
    active variants, every other version inactive. Shares must sum to 1 (400
    ``traffic_not_one``)."""

    class InputSerializer(strict.InputSerializer):
        traffic = strict.ObjectField(
            child=strict.FiniteFloatField(min_value=0, max_value=1),
            max_properties=services.MAX_VARIANTS,
            service_checks_bounds=True,
            help_text=TRAFFIC_HELP,
        )

    class OutputSerializer(serializers.Serializer):
        variants = SkillVersionOutput(many=True)

    @extend_schema(
        request=InputSerializer, responses=OutputSerializer, operation_id="skill_traffic_set"
    )
    def post(self, request: Request, skill_id: int) -> Response:
        actor = request_actor(request)
        skill = catalog_selectors.skill_get(actor=actor, skill_id=skill_id)
        data: dict[str, Any] = strict.validated(self.InputSerializer, request)
        variants = services.traffic_set(actor=actor, skill=skill, traffic=data["traffic"])
        return Response(self.OutputSerializer({"variants": variants}).data)
