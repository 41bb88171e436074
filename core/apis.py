from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import selectors
from core.permissions import request_actor


class MeApi(APIView):
    """The calling agent, its account and the scopes of the key in use."""

    class AccountOutput(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        slug = serializers.CharField()

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        description = serializers.CharField()
        status = serializers.CharField()
        metadata = serializers.JSONField()
        created_at = serializers.DateTimeField()
        account = serializers.SerializerMethodField()
        key = serializers.SerializerMethodField()

        def get_account(self, agent: object) -> dict[str, object]:
            return MeApi.AccountOutput(getattr(agent, "account")).data  # noqa: B009

        def get_key(self, agent: object) -> dict[str, object]:
            key = self.context["key"]
            return {"prefix": key.prefix, "name": key.name, "scopes": key.scopes}

    @extend_schema(responses=OutputSerializer, operation_id="me_retrieve")
    def get(self, request: Request) -> Response:
        actor = request_actor(request)
        assert actor.agent is not None
        agent = selectors.agent_get(actor=actor, agent_id=actor.agent.pk)
        return Response(self.OutputSerializer(agent, context={"key": actor.api_key}).data)
