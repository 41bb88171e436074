from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import selectors, services
from core.models import Agent, ApiKey
from core.pagination import CreatedCursorPagination
from core.permissions import request_actor


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


class MeApi(APIView):
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


class AgentListApi(APIView):
    """Agents of the caller's account."""

    class Pagination(CreatedCursorPagination):
        ordering = ("name", "id")

    @extend_schema(responses=AgentOutput(many=True), operation_id="agents_list")
    def get(self, request: Request) -> Response:
        paginator = self.Pagination()
        page = paginator.paginate_queryset(
            selectors.agent_list(actor=request_actor(request)), request, self
        )
        return paginator.get_paginated_response(AgentOutput(page, many=True).data)


class AgentDetailApi(APIView):
    @extend_schema(responses=AgentOutput, operation_id="agents_retrieve")
    def get(self, request: Request, agent_id: int) -> Response:
        agent = selectors.agent_get(actor=request_actor(request), agent_id=agent_id)
        return Response(AgentOutput(agent).data)


class ApiKeyListCreateApi(APIView):
    """List or create API keys of agents in the caller's account (``admin`` scope)."""

    required_scope = "admin"

    class InputSerializer(serializers.Serializer):
        agent_id = serializers.IntegerField()
        name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        scopes = serializers.ListField(
            child=serializers.ChoiceField(choices=ApiKey.Scope.choices), min_length=1
        )
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)

    class CreatedOutput(ApiKeyOutput):
        key = serializers.CharField(help_text="The full key. Shown only in this response.")

    @extend_schema(
        parameters=[OpenApiParameter("agent_id", int, required=False)],
        responses=ApiKeyOutput(many=True),
        operation_id="keys_list",
    )
    def get(self, request: Request) -> Response:
        agent_id = request.query_params.get("agent_id")
        if agent_id is not None and not agent_id.isdigit():
            raise serializers.ValidationError({"agent_id": ["Must be an integer."]})
        keys = selectors.api_key_list(
            actor=request_actor(request), agent_id=int(agent_id) if agent_id else None
        )
        paginator = CreatedCursorPagination()
        page = paginator.paginate_queryset(keys, request, self)
        return paginator.get_paginated_response(ApiKeyOutput(page, many=True).data)

    @extend_schema(
        request=InputSerializer, responses={201: CreatedOutput}, operation_id="keys_create"
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        actor = request_actor(request)
        agent = selectors.agent_get(actor=actor, agent_id=data.validated_data["agent_id"])
        key, secret = services.api_key_create(
            agent=agent,
            scopes=data.validated_data["scopes"],
            name=data.validated_data["name"],
            expires_at=data.validated_data["expires_at"],
        )
        body = dict(ApiKeyOutput(key).data)
        body["key"] = secret
        return Response(body, status=status.HTTP_201_CREATED)


class ApiKeyRevokeApi(APIView):
    """Revoke a key (``admin`` scope). Idempotent."""

    required_scope = "admin"

    @extend_schema(request=None, responses=ApiKeyOutput, operation_id="keys_revoke")
    def post(self, request: Request, prefix: str) -> Response:
        key = selectors.api_key_get(actor=request_actor(request), prefix=prefix)
        return Response(ApiKeyOutput(services.api_key_revoke(key=key)).data)
