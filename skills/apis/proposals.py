"""Skill proposals: ``POST /api/v1/skills/proposals`` (research and propose),
``GET /api/v1/skills/proposals/{id}`` and ``POST .../{id}/submit``. Reviewing happens in the
admin, by people (docs/skills.md, "Proposals")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.views import ApiView
from skills.apis.catalog import name_field
from skills.categories import Category
from skills.models import SkillProposal
from skills.selectors import proposals as selectors
from skills.services import proposals as services


class SkillProposalOutput(serializers.ModelSerializer[SkillProposal]):
    confidence = strict.FiniteFloatField()
    parent_id = serializers.IntegerField(allow_null=True)
    skill_id = serializers.IntegerField(allow_null=True, help_text="The skill created from it.")
    proposed_by_agent_id = serializers.IntegerField(allow_null=True)
    sub_proposal_ids = serializers.SerializerMethodField()

    class Meta:
        model = SkillProposal
        fields = [
            "id",
            "name",
            "description",
            "category",
            "confidence",
            "procedure",
            "tags",
            "execution_context",
            "dependencies",
            "research",
            "drafted_by",
            "status",
            "proposed_by",
            "proposed_by_agent_id",
            "decision_reason",
            "reviewed_at",
            "submitted_at",
            "expires_at",
            "parent_id",
            "sub_proposal_ids",
            "skill_id",
            "created_at",
            "updated_at",
        ]

    def get_sub_proposal_ids(self, proposal: SkillProposal) -> list[int]:
        return list(
            SkillProposal.objects.filter(parent=proposal)
            .order_by("id")
            .values_list("pk", flat=True)
        )


class ProposalCreateApi(ApiView):
    """Research a skill and propose it: related skills, documents and pages are gathered
    through search, the category inferred with a confidence (unless given), the procedure
    drafted (by the configured LLM, or offline from what search found). A draft unless
    ``submit``."""

    class InputSerializer(strict.InputSerializer):
        name = name_field()
        description = serializers.CharField(
            max_length=20_000, required=False, default="", allow_blank=True
        )
        category = serializers.ChoiceField(
            choices=Category.choices, required=False, help_text="Inferred when not given."
        )
        dependencies = serializers.ListField(
            child=serializers.CharField(max_length=200),
            required=False,
            default=list,
            max_length=services.MAX_DEPENDENCIES,
            help_text="Names of the skills it needs (missing ones become sub-proposals).",
        )
        tags = serializers.ListField(
            child=serializers.CharField(max_length=100), required=False, default=list, max_length=50
        )
        execution_context = strict.MetadataField(required=False, default=dict)
        submit = serializers.BooleanField(default=False, help_text="Submit it for review now.")

    @extend_schema(
        request=InputSerializer,
        responses={201: SkillProposalOutput},
        operation_id="skill_proposals_create",
    )
    def post(self, request: Request) -> Response:
        data = strict.validated(self.InputSerializer, request)
        proposal = services.research_and_propose(actor=request_actor(request), **data)
        return Response(SkillProposalOutput(proposal).data, status=status.HTTP_201_CREATED)


class ProposalDetailApi(ApiView):
    @extend_schema(responses=SkillProposalOutput, operation_id="skill_proposal_retrieve")
    def get(self, request: Request, proposal_id: int) -> Response:
        proposal = selectors.proposal_get(actor=request_actor(request), proposal_id=proposal_id)
        return Response(SkillProposalOutput(proposal).data)


class ProposalSubmitApi(ApiView):
    """draft -> submitted: the proposal enters the reviewers' queue (409 ``invalid_transition``
    from any other status)."""

    @extend_schema(
        request=None, responses=SkillProposalOutput, operation_id="skill_proposal_submit"
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        actor = request_actor(request)
        proposal = selectors.proposal_get(actor=actor, proposal_id=proposal_id)
        proposal = services.proposal_submit(actor=actor, proposal=proposal)
        return Response(SkillProposalOutput(proposal).data)
