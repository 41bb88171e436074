"""Agents ranked by learned expertise, task assignment and completion, learning profiles:
``POST /api/v1/agents/rank``, ``POST /api/v1/tasks/assign``, ``POST /api/v1/tasks/{id}/complete``
and ``GET /api/v1/agents/{id}/learning-profile`` (docs/skills.md, "Learning profiles")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.selectors import agent_get
from core.views import ApiView
from skills.apis.catalog import task_type_field
from skills.models import TaskAssignment
from skills.selectors import learning as selectors
from skills.services import learning as services
from skills.services.usage import MAX_DURATION_MS


class AgentScoreOutput(serializers.Serializer):
    agent_id = serializers.IntegerField()
    agent_name = serializers.CharField()
    score = strict.FiniteFloatField(help_text="0.3 x base + 0.5 x expertise + 0.2 x confidence.")
    expertise = strict.FiniteFloatField(
        help_text="The success rate for the task type (recency-weighted with use_recency)."
    )
    confidence = strict.FiniteFloatField(help_text="min(1, executions / 20).")
    base = strict.FiniteFloatField(help_text="availability x (1 - load / capacity).")
    load = serializers.IntegerField(help_text="Open task assignments.")
    capacity = serializers.IntegerField()
    executions = serializers.IntegerField(help_text="In the profile's window (at most 100).")
    success_rate = strict.FiniteFloatField()
    recent_success_rate = strict.FiniteFloatField()
    trust_score = strict.FiniteFloatField()


class TaskInput(strict.InputSerializer):
    title = serializers.CharField(max_length=500)
    description = serializers.CharField(
        max_length=20_000, required=False, default="", allow_blank=True
    )
    task_type = task_type_field(
        required=False, help_text="Inferred from the title and description when not given."
    )
    use_recency = serializers.BooleanField(
        default=False, help_text="Expertise is the recency-weighted success rate."
    )


class AgentRankApi(ApiView):
    """The account's active agents ranked for a task, best first (the 50 best; ``candidates``
    says how many were scored). A ranking is a read: the ``read`` scope suffices."""

    required_scope = "read"

    class OutputSerializer(serializers.Serializer):
        task_type = serializers.CharField()
        inferred_task_type = serializers.BooleanField(source="inferred")
        use_recency = serializers.BooleanField()
        candidates = serializers.IntegerField()
        results = AgentScoreOutput(many=True)

    @extend_schema(request=TaskInput, responses=OutputSerializer, operation_id="agents_rank")
    def post(self, request: Request) -> Response:
        data = strict.validated(TaskInput, request)
        ranking = selectors.rank_agents(actor=request_actor(request), **data)
        return Response(self.OutputSerializer(ranking).data)


class TaskAssignmentOutput(serializers.ModelSerializer[TaskAssignment]):
    agent_id = serializers.IntegerField()
    score = strict.FiniteFloatField()
    expertise = strict.FiniteFloatField()
    confidence = strict.FiniteFloatField()
    base = strict.FiniteFloatField()

    class Meta:
        model = TaskAssignment
        fields = [
            "id",
            "agent_id",
            "title",
            "description",
            "task_type",
            "status",
            "method",
            "score",
            "expertise",
            "confidence",
            "base",
            "created_at",
            "completed_at",
        ]


class TaskAssignApi(ApiView):
    """Assign a task to the best agent for its type; with no history among the candidates, to
    the least-loaded agent (``method`` says which)."""

    class InputSerializer(TaskInput):
        agent_ids = serializers.ListField(
            child=strict.IdField(),
            required=False,
            min_length=1,
            max_length=1000,
            help_text="Choose among these agents only.",
        )

    @extend_schema(
        request=InputSerializer,
        responses={201: TaskAssignmentOutput},
        operation_id="tasks_assign",
    )
    def post(self, request: Request) -> Response:
        data = strict.validated(self.InputSerializer, request)
        assignment = services.task_assign(actor=request_actor(request), **data)
        return Response(TaskAssignmentOutput(assignment).data, status=status.HTTP_201_CREATED)


class TaskCompleteApi(ApiView):
    """Report the outcome of an assigned task: it becomes a usage record of the assigned agent
    (its learning profile learns from it) and the agent's load drops."""

    class InputSerializer(strict.InputSerializer):
        success = serializers.BooleanField()
        duration_ms = serializers.IntegerField(min_value=0, max_value=MAX_DURATION_MS, default=0)
        skill_id = strict.IdField(required=False, allow_null=True, default=None)
        version_id = strict.IdField(required=False, allow_null=True, default=None)

    @extend_schema(
        request=InputSerializer, responses=TaskAssignmentOutput, operation_id="task_complete"
    )
    def post(self, request: Request, task_id: int) -> Response:
        actor = request_actor(request)
        assignment = selectors.assignment_get(actor=actor, assignment_id=task_id)
        data = strict.validated(self.InputSerializer, request)
        assignment = services.task_complete(actor=actor, assignment=assignment, **data)
        return Response(TaskAssignmentOutput(assignment).data)


class CurvePointOutput(serializers.Serializer):
    day = serializers.DateField()
    executions = serializers.IntegerField()
    successes = serializers.IntegerField()
    success_rate = strict.FiniteFloatField()
    cumulative_success_rate = strict.FiniteFloatField()


class TaskTypeProfileOutput(serializers.Serializer):
    task_type = serializers.CharField()
    executions = serializers.IntegerField()
    total_executions = serializers.IntegerField()
    successes = serializers.IntegerField()
    success_rate = strict.FiniteFloatField()
    recent_success_rate = strict.FiniteFloatField()
    confidence = strict.FiniteFloatField()
    last_execution_at = serializers.DateTimeField(allow_null=True)
    learning_curve = CurvePointOutput(many=True)


class AgentLearningProfileApi(ApiView):
    """An agent's learning profile per task type (from its 100 most recent executions of each),
    with its trust score and load."""

    class OutputSerializer(serializers.Serializer):
        agent_id = serializers.IntegerField(source="agent.pk")
        trust_score = strict.FiniteFloatField()
        last_active_at = serializers.DateTimeField(allow_null=True)
        load = serializers.IntegerField()
        capacity = serializers.IntegerField()
        task_types = TaskTypeProfileOutput(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="agent_learning_profile")
    def get(self, request: Request, agent_id: int) -> Response:
        agent = agent_get(actor=request_actor(request), agent_id=agent_id)
        return Response(self.OutputSerializer(selectors.learning_profile(agent=agent)).data)
