"""Skills HTTP API: ``/api/v1/skills`` (list, create), ``/skills/{id}`` (read, change),
``/skills/discover`` (hybrid search) and ``/skills/{id}/context`` (docs/skills.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from rag.search import DEFAULT_FUSION, FUSIONS, MODES
from rag.search_apis import StageExplanation
from skills.categories import Category
from skills.models import Skill, SkillVersion
from skills.selectors import catalog as selectors
from skills.services import catalog as services

MAX_PROCEDURE_CHARS = 100_000
MAX_DESCRIPTION_CHARS = 20_000
# What the services accept, stated in the schema: a name has a letter or digit, a version is
# MAJOR.MINOR.PATCH[-prerelease], a task type starts with a letter or digit.
NAME_PATTERN = r"[A-Za-z0-9]"
VERSION_PATTERN = (
    r"^\s*(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})"
    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s*$"
)
TASK_TYPE_PATTERN = r"^\s*[A-Za-z0-9][A-Za-z0-9_.:\- ]*$"


def name_field(**kwargs: Any) -> serializers.RegexField:
    return serializers.RegexField(
        NAME_PATTERN, max_length=200, help_text="At least one letter or digit.", **kwargs
    )


def version_field(**kwargs: Any) -> serializers.RegexField:
    kwargs.setdefault("help_text", "MAJOR.MINOR.PATCH[-prerelease], e.g. 1.4.0 or 2.0.0-beta.1.")
    return serializers.RegexField(VERSION_PATTERN, max_length=50, **kwargs)


def task_type_field(**kwargs: Any) -> serializers.RegexField:
    kwargs.setdefault(
        "help_text",
        "Letters, digits, '_', '.', ':', '-'; spaces become '_' and letters lower case.",
    )
    return serializers.RegexField(TASK_TYPE_PATTERN, max_length=100, **kwargs)


# What a new skill may be: a draft, or active when a reviewer creates it (the admin).
NEW_SKILL_STATUSES = [Skill.Status.DRAFT, Skill.Status.ACTIVE]


# --- outputs ---------------------------------------------------------------------------------


class SkillOutput(serializers.ModelSerializer[Skill]):
    graph_node_id = serializers.IntegerField(allow_null=True)
    effectiveness_score = strict.FiniteFloatField()
    health_score = strict.FiniteFloatField()

    class Meta:
        model = Skill
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "category",
            "status",
            "execution_context",
            "procedure",
            "tags",
            "effectiveness_score",
            "health_score",
            "usage_count",
            "success_count",
            "last_used_at",
            "graph_node_id",
            "embedding_model",
            "created_at",
            "updated_at",
        ]


class SkillSummaryOutput(serializers.ModelSerializer[Skill]):
    class Meta:
        model = Skill
        fields = ["id", "name", "slug", "category", "status"]


class SkillVersionOutput(serializers.ModelSerializer[SkillVersion]):
    traffic_share = strict.FiniteFloatField()
    success_rate = strict.FiniteFloatField(allow_null=True)

    class Meta:
        model = SkillVersion
        fields = [
            "id",
            "version",
            "change_type",
            "content",
            "execution_context",
            "notes",
            "is_active",
            "traffic_share",
            "success_count",
            "failure_count",
            "success_rate",
            "created_at",
            "activated_at",
        ]


class SkillDependencyOutput(serializers.Serializer):
    skill_id = serializers.IntegerField(
        allow_null=True, source="skill.pk", help_text="null: no such skill yet (missing)."
    )
    name = serializers.CharField()
    node_id = serializers.IntegerField()
    version = serializers.CharField(source="requirement", help_text="The requirement, or empty.")
    satisfied = serializers.BooleanField(
        allow_null=True, help_text="Whether its active versions meet the requirement."
    )


class SkillDetailOutput(SkillOutput):
    dependencies = serializers.SerializerMethodField()
    active_versions = serializers.SerializerMethodField()

    class Meta(SkillOutput.Meta):
        fields = [*SkillOutput.Meta.fields, "dependencies", "active_versions"]

    @extend_schema_field(SkillDependencyOutput(many=True))
    def get_dependencies(self, skill: Skill) -> Any:
        return SkillDependencyOutput(selectors.skill_dependencies(skill), many=True).data

    @extend_schema_field(SkillVersionOutput(many=True))
    def get_active_versions(self, skill: Skill) -> Any:
        versions = SkillVersion.objects.filter(skill=skill, is_active=True).order_by("id")
        return SkillVersionOutput(versions, many=True).data


def skill_detail(skill: Skill) -> Any:
    return SkillDetailOutput(skill).data


class SkillUpdateOutput(SkillDetailOutput):
    pending_version = SkillVersionOutput(
        allow_null=True,
        help_text="The version a change of execution_context became on a reviewed skill "
        "(inactive, waiting for a reviewer to activate it: the answer is then 202); null when "
        "every change was applied.",
    )

    class Meta(SkillDetailOutput.Meta):
        fields = [*SkillDetailOutput.Meta.fields, "pending_version"]


# --- inputs ----------------------------------------------------------------------------------


class SkillDependencyInput(strict.InputSerializer):
    skill_id = strict.IdField()
    version = serializers.CharField(
        max_length=100,
        required=False,
        default="",
        allow_blank=True,
        help_text="A requirement on its version: ^1.2.0, ~1.2, >=1.0.0,<2.0.0 or 1.4.2.",
    )


def _dependencies(data: dict[str, Any]) -> list[services.DependencyInput] | None:
    if "dependencies" not in data:
        return None
    return [
        services.DependencyInput(skill_id=d["skill_id"], version=d["version"])
        for d in data.pop("dependencies")
    ]


class SkillCreateInput(strict.InputSerializer):
    name = name_field()
    category = serializers.ChoiceField(choices=Category.choices)
    description = serializers.CharField(
        max_length=MAX_DESCRIPTION_CHARS, required=False, default="", allow_blank=True
    )
    status = serializers.ChoiceField(
        choices=NEW_SKILL_STATUSES,
        default=Skill.Status.DRAFT,
        help_text="active needs a person with the reviewer role: agents create drafts.",
    )
    execution_context = strict.MetadataField(required=False, default=dict)
    procedure = serializers.CharField(
        max_length=MAX_PROCEDURE_CHARS, required=False, default="", allow_blank=True
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, default=list, max_length=50
    )
    dependencies = serializers.ListField(
        child=SkillDependencyInput(), required=False, default=list, max_length=50
    )
    version = version_field(required=False, default="1.0.0", help_text="The initial version.")


class SkillUpdateInput(strict.InputSerializer):
    name = name_field(required=False)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    description = serializers.CharField(
        max_length=MAX_DESCRIPTION_CHARS, required=False, allow_blank=True
    )
    status = serializers.ChoiceField(
        choices=Skill.Status.choices,
        required=False,
        help_text="draft -> active | archived; active -> deprecated | archived; deprecated -> "
        "active | archived; archived -> draft. Becoming active needs a reviewer.",
    )
    execution_context = strict.MetadataField(
        required=False,
        help_text="On an active or deprecated skill, an agent's change becomes a version "
        "waiting for review (202, pending_version), as a new procedure does.",
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=50
    )
    dependencies = serializers.ListField(
        child=SkillDependencyInput(),
        required=False,
        max_length=50,
        help_text="Replaces the skill's dependencies.",
    )


# --- views -----------------------------------------------------------------------------------


class SkillListCreateApi(ApiView):
    """The account's skills, newest first, by category and status; create a skill (with its
    initial version, its graph node and its dependencies)."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        category = serializers.ChoiceField(choices=Category.choices, required=False)
        status = serializers.ChoiceField(choices=Skill.Status.choices, required=False)

    @extend_schema(
        parameters=[FilterSerializer], responses=SkillOutput(many=True), operation_id="skills_list"
    )
    def get(self, request: Request) -> Response:
        skills = selectors.skill_list(
            actor=request_actor(request),
            category=self.filters.get("category"),
            status=self.filters.get("status"),
        )
        return paginated_response(self, request, skills, SkillOutput)

    @extend_schema(
        request=SkillCreateInput,
        responses={201: SkillDetailOutput},
        operation_id="skills_create",
    )
    def post(self, request: Request) -> Response:
        data = strict.validated(SkillCreateInput, request)
        dependencies = _dependencies(data) or []
        skill = services.skill_create(
            actor=request_actor(request), dependencies=dependencies, **data
        )
        return Response(skill_detail(skill), status=status.HTTP_201_CREATED)


class SkillDetailApi(ApiView):
    @extend_schema(responses=SkillDetailOutput, operation_id="skill_retrieve")
    def get(self, request: Request, skill_id: int) -> Response:
        skill = selectors.skill_get(actor=request_actor(request), skill_id=skill_id)
        return Response(skill_detail(skill))

    @extend_schema(
        request=SkillUpdateInput,
        responses={200: SkillUpdateOutput, 202: SkillUpdateOutput},
        operation_id="skill_update",
    )
    def patch(self, request: Request, skill_id: int) -> Response:
        """Change the skill. 202 when a change waits for review (``pending_version``): a new
        ``execution_context`` of an active or deprecated skill, asked for by an agent."""
        actor = request_actor(request)
        skill = selectors.skill_get(actor=actor, skill_id=skill_id)
        data = strict.validated(SkillUpdateInput, request)
        dependencies = _dependencies(data)
        skill = services.skill_update(
            actor=actor, skill=skill, fields=data, dependencies=dependencies
        )
        waiting = skill.pending_version is not None
        return Response(
            SkillUpdateOutput(skill).data,
            status=status.HTTP_202_ACCEPTED if waiting else status.HTTP_200_OK,
        )


class SkillExplanation(serializers.Serializer):
    vector = StageExplanation()
    keyword = StageExplanation()
    fused_score = strict.FiniteFloatField(allow_null=True)


class SkillHitOutput(serializers.Serializer):
    skill = SkillOutput()
    score = strict.FiniteFloatField(allow_null=True)
    explanation = serializers.SerializerMethodField()

    @extend_schema_field(SkillExplanation)
    def get_explanation(self, hit: selectors.SkillHit) -> dict[str, Any]:
        r = hit.retrieval
        return SkillExplanation(
            {
                "vector": {"rank": r["vector_rank"], "score": r["vector_score"]},
                "keyword": {"rank": r["keyword_rank"], "score": r["keyword_score"]},
                "fused_score": hit.score,
            }
        ).data


class SkillDiscoverApi(ApiView):
    """Skills matching a description of what needs doing (hybrid search by default over name,
    category, description, tags and procedure); active skills unless ``statuses`` says
    otherwise. A search is a read: the ``read`` scope suffices."""

    required_scope = "read"

    class InputSerializer(strict.InputSerializer):
        description = strict.SearchQueryField(
            help_text="What needs doing: the search's query, at most 4,000 characters."
        )
        top_k = strict.TopKField()
        mode = serializers.ChoiceField(choices=MODES, default="hybrid")
        fusion = serializers.ChoiceField(choices=FUSIONS, default=DEFAULT_FUSION)
        category = serializers.ChoiceField(choices=Category.choices, required=False)
        statuses = serializers.ListField(
            child=serializers.ChoiceField(choices=Skill.Status.choices),
            required=False,
            default=lambda: [Skill.Status.ACTIVE],
            min_length=1,
            max_length=4,
        )

    class OutputSerializer(serializers.Serializer):
        mode = serializers.ChoiceField(choices=MODES)
        results = SkillHitOutput(many=True)
        timings_ms = strict.TimingsField()

    @extend_schema(
        request=InputSerializer, responses=OutputSerializer, operation_id="skills_discover"
    )
    def post(self, request: Request) -> Response:
        data = strict.validated(self.InputSerializer, request)
        hits = selectors.skill_discover(
            actor=request_actor(request),
            description=data["description"],
            top_k=data["top_k"],
            mode=data["mode"],
            fusion=data["fusion"],
            category=data.get("category"),
            statuses=data["statuses"],
        )
        return Response(
            self.OutputSerializer(
                {"mode": data["mode"], "results": hits, "timings_ms": hits.timings_ms}
            ).data
        )


class ContextDocumentOutput(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    knowledge_base_id = serializers.IntegerField()
    document_title = serializers.CharField()
    text = serializers.CharField()
    score = strict.FiniteFloatField(allow_null=True)


class ContextPageOutput(serializers.Serializer):
    node_id = serializers.IntegerField(source="node.pk")
    name = serializers.CharField(source="node.name")
    entity_type = serializers.CharField(source="node.entity_type")
    description = serializers.CharField(source="node.description")
    score = strict.FiniteFloatField(allow_null=True)


class ChainLinkOutput(serializers.Serializer):
    skill_id = serializers.IntegerField(allow_null=True, source="skill.pk")
    name = serializers.CharField()
    node_id = serializers.IntegerField()
    depth = serializers.IntegerField(help_text="1: a direct dependency.")


class SkillContextOutput(serializers.Serializer):
    skill = SkillOutput()
    version = SkillVersionOutput(
        allow_null=True, help_text="The active version routed to the caller (A/B by share)."
    )
    variants = SkillVersionOutput(many=True, help_text="Every active version with its share.")
    dependencies = SkillDependencyOutput(many=True)
    chain = ChainLinkOutput(
        many=True, help_text="Every skill it depends on, directly or not, nearest first."
    )
    dependents = SkillSummaryOutput(many=True)
    documents = ContextDocumentOutput(many=True)
    pages = ContextPageOutput(many=True)


class SkillContextApi(ApiView):
    """What an agent needs to run a skill: the active version routed to it (the same one for
    the same ``routing_key``, by default the calling agent), the skills it depends on and that
    depend on it, and the account's most relevant documents and pages."""

    class FilterSerializer(strict.FilterSerializer):
        routing_key = serializers.CharField(
            max_length=200, required=False, help_text="Sticky A/B routing key (e.g. a task id)."
        )

    @extend_schema(
        parameters=[FilterSerializer], responses=SkillContextOutput, operation_id="skill_context"
    )
    def get(self, request: Request, skill_id: int) -> Response:
        actor = request_actor(request)
        skill = selectors.skill_get(actor=actor, skill_id=skill_id)
        context = selectors.skill_context(
            actor=actor, skill=skill, key=self.filters.get("routing_key")
        )
        return Response(SkillContextOutput(context).data)
