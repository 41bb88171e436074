from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import selectors, services
from core import serializers as strict
from core.models import Agent, ApiKey
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView


class AccountOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()


class AgentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    status = serializers.CharField()
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()
    account = AccountOutput()


class ApiKeyOutput(serializers.Serializer):
    prefix = serializers.CharField()
    agent_id = serializers.IntegerField()
    name = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class MeApi(ApiView):
    """The calling agent, its account and the scopes of the key in use."""

    class OutputSerializer(AgentOutput):
        key = serializers.SerializerMethodField()

        def get_key(self, agent: Agent) -> dict[str, Any]:
            key: ApiKey = self.context["key"]
            return {"prefix": key.prefix, "name": key.name, "scopes": key.scopes}

    @extend_schema(responses=OutputSerializer, operation_id="me_retrieve")
    def get(self, request: Request) -> Response:
        actor = request_actor(request)
        assert actor.agent is not None
        agent = selectors.agent_get(actor=actor, agent_id=actor.agent.pk)
        return Response(self.OutputSerializer(agent, context={"key": actor.api_key}).data)


class AgentListApi(ApiView):
    """Agents of the caller's account."""

    class Pagination(CreatedCursorPagination):
        ordering = ("name", "id")

    pagination_class = Pagination

    @extend_schema(responses=AgentOutput(many=True), operation_id="agents_list")
    def get(self, request: Request) -> Response:
        return paginated_response(
            self, request, selectors.agent_list(actor=request_actor(request)), AgentOutput
        )


class AgentDetailApi(ApiView):
    @extend_schema(responses=AgentOutput, operation_id="agents_retrieve")
    def get(self, request: Request, agent_id: int) -> Response:
        agent = selectors.agent_get(actor=request_actor(request), agent_id=agent_id)
        return Response(AgentOutput(agent).data)


class ApiKeyListCreateApi(ApiView):
    """List or create API keys of agents in the caller's account (``admin`` scope)."""

    required_scope = "admin"
    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        agent_id = strict.IdField(required=False)

    class InputSerializer(strict.InputSerializer):
        agent_id = strict.IdField()
        name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        scopes = serializers.ListField(
            child=serializers.ChoiceField(choices=ApiKey.Scope.choices),
            min_length=1,
            max_length=len(ApiKey.Scope.choices),
        )
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)

    class CreatedOutput(ApiKeyOutput):
        key = serializers.CharField(help_text="The full key. Shown only in this response.")

    @extend_schema(
        parameters=[FilterSerializer],
        responses=ApiKeyOutput(many=True),
        operation_id="keys_list",
    )
    def get(self, request: Request) -> Response:
        keys = selectors.api_key_list(
            actor=request_actor(request), agent_id=self.filters.get("agent_id")
        )
        return paginated_response(self, request, keys, ApiKeyOutput)

    @extend_schema(
        request=InputSerializer, responses={201: CreatedOutput}, operation_id="keys_create"
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        actor = request_actor(request)
        agent = selectors.agent_get(actor=actor, agent_id=data.validated_data["agent_id"])
        key, secret = services.api_key_create(
            actor=actor,
            agent=agent,
            scopes=data.validated_data["scopes"],
            name=data.validated_data["name"],
            expires_at=data.validated_data["expires_at"],
        )
        body = dict(ApiKeyOutput(key).data)
        body["key"] = secret
        return Response(body, status=status.HTTP_201_CREATED)


class ApiKeyRevokeApi(ApiView):
    """Revoke a key (``admin`` scope). Idempotent."""

    required_scope = "admin"

    @extend_schema(request=None, responses=ApiKeyOutput, operation_id="keys_revoke")
    def post(self, request: Request, prefix: str) -> Response:
        actor = request_actor(request)
        key = selectors.api_key_get(actor=actor, prefix=prefix)
        return Response(ApiKeyOutput(services.api_key_revoke(actor=actor, key=key)).data)
