"""Long-term memory contexts, their grants and access log: ``/api/v1/memory/contexts/...``
(docs/memory/long-term.md). A context the caller may not read answers like a missing one (404
``context_not_found``); one it may only read refuses writes with 403 ``context_read_only``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.long_term import selectors, services
from memory.models import (
    ChangePolicy,
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
)

# A context's description, as a knowledge base's (rag.apis).
MAX_DESCRIPTION_CHARS = 10_000

CHANGE_POLICY_HELP = (
    "auto: automatic upkeep (dedup merges, promotions, rot archivals, importance decay, "
    "cluster rewrites) applies directly; review: each waits as a pending change for an owner "
    "or operator (GET /memory/pending-changes)."
)
AGENT_WRITE_POLICY_HELP = (
    "review: agents' writes through the memory tools (write_memory) wait for review too."
)

# --- contexts --------------------------------------------------------------------------------


class MemoryContextAccessOutput(serializers.Serializer):
    read = serializers.BooleanField()
    write = serializers.BooleanField()


class MemoryContextOutput(serializers.ModelSerializer[MemoryContext]):
    owner_agent_id = serializers.IntegerField(source="owner_id", allow_null=True)
    team_id = serializers.IntegerField(allow_null=True)
    access = serializers.SerializerMethodField()

    class Meta:
        model = MemoryContext
        fields = [
            "id",
            "name",
            "context_type",
            "scope",
            "owner_agent_id",
            "team_id",
            "description",
            "metadata",
            "change_policy",
            "agent_write_policy",
            "entry_count",
            "archived_at",
            "access",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(MemoryContextAccessOutput)
    def get_access(self, context: MemoryContext) -> dict[str, bool]:
        return {"read": True, "write": bool(getattr(context, "can_write", False))}


class ContextListCreateApi(ApiView):
    """The contexts the caller may read (its own, granted, and by scope); create one (owned by
    the caller)."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        context_type = serializers.ChoiceField(
            choices=MemoryContext.ContextType.choices, required=False
        )
        scope = serializers.ChoiceField(choices=MemoryContext.Scope.choices, required=False)
        include_archived = serializers.BooleanField(required=False, default=False)

    class InputSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200)
        context_type = serializers.ChoiceField(
            choices=MemoryContext.ContextType.choices,
            default=services.DEFAULT_CONTEXT_TYPE,
            help_text="agent_memory and conversation are Engram's to give (400 "
            "context_type_reserved).",
        )
        scope = serializers.ChoiceField(
            choices=MemoryContext.Scope.choices, default=MemoryContext.Scope.AGENT
        )
        team_id = strict.IdField(
            required=False, allow_null=True, default=None, help_text="Only for scope team."
        )
        description = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=MAX_DESCRIPTION_CHARS
        )
        metadata = strict.MetadataField(required=False, default=dict)
        change_policy = serializers.ChoiceField(
            choices=ChangePolicy.choices, default=ChangePolicy.AUTO, help_text=CHANGE_POLICY_HELP
        )
        agent_write_policy = serializers.ChoiceField(
            choices=ChangePolicy.choices,
            default=ChangePolicy.AUTO,
            help_text=AGENT_WRITE_POLICY_HELP,
        )

    @extend_schema(
        operation_id="memory_contexts_list",
        parameters=[FilterSerializer],
        responses=MemoryContextOutput(many=True),
    )
    def get(self, request: Request) -> Response:
        contexts = selectors.contexts_for(request_actor(request))
        if not self.filters.get("include_archived"):
            contexts = contexts.filter(archived_at__isnull=True)
        for name in ("context_type", "scope"):
            if self.filters.get(name):
                contexts = contexts.filter(**{name: self.filters[name]})
        return paginated_response(self, request, contexts, MemoryContextOutput)

    @extend_schema(
        operation_id="memory_contexts_create",
        request=InputSerializer,
        responses={201: MemoryContextOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        context = services.context_create(actor=request_actor(request), **data)
        return Response(MemoryContextOutput(context).data, status=status.HTTP_201_CREATED)


class ContextDetailApi(ApiView):
    """A context's settings; PATCH and DELETE need write access. Deleting a context deletes
    its entries, their history, grants, snapshots and access log."""

    class UpdateSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200, required=False)
        context_type = serializers.ChoiceField(
            choices=MemoryContext.ContextType.choices, required=False
        )
        description = serializers.CharField(
            required=False, allow_blank=True, max_length=MAX_DESCRIPTION_CHARS
        )
        metadata = strict.MetadataField(required=False)
        change_policy = serializers.ChoiceField(
            choices=ChangePolicy.choices, required=False, help_text=CHANGE_POLICY_HELP
        )
        agent_write_policy = serializers.ChoiceField(
            choices=ChangePolicy.choices, required=False, help_text=AGENT_WRITE_POLICY_HELP
        )

    @extend_schema(operation_id="memory_context_retrieve", responses=MemoryContextOutput)
    def get(self, request: Request, context_id: int) -> Response:
        context = selectors.context_get(request_actor(request), context_id)
        return Response(MemoryContextOutput(context).data)

    @extend_schema(
        operation_id="memory_context_update",
        request=UpdateSerializer,
        responses=MemoryContextOutput,
    )
    def patch(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        data = validated(self.UpdateSerializer, request)
        context = services.context_update(
            actor=actor, context=selectors.context_get(actor, context_id), fields=data
        )
        return Response(MemoryContextOutput(context).data)

    @extend_schema(operation_id="memory_context_delete", responses={204: None})
    def delete(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        services.context_delete(actor=actor, context=selectors.context_get(actor, context_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ContextArchiveApi(ApiView):
    """Archive the context: its entries stay readable but leave searches, and it refuses
    writes (409 ``context_archived``) until unarchived."""

    archived = True

    @extend_schema(
        operation_id="memory_context_archive", request=None, responses=MemoryContextOutput
    )
    def post(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        context = services.context_archive(
            actor=actor, context=selectors.context_get(actor, context_id), archived=self.archived
        )
        return Response(MemoryContextOutput(context).data)


class ContextUnarchiveApi(ContextArchiveApi):
    """Bring an archived context back into searches and writes."""

    archived = False

    @extend_schema(
        operation_id="memory_context_unarchive", request=None, responses=MemoryContextOutput
    )
    def post(self, request: Request, context_id: int) -> Response:
        return super().post(request, context_id)


# --- grants ------------------------------------------------------------------------------------


class MemoryContextGrantOutput(serializers.ModelSerializer[MemoryContextGrant]):
    agent_id = serializers.IntegerField()

    class Meta:
        model = MemoryContextGrant
        fields = ["agent_id", "level", "created_at"]


class ContextGrantListCreateApi(ApiView):
    """Agents of the account with explicit access; POST gives one ``read`` or ``write`` access
    (or changes its level). Managing grants needs write access to the context."""

    pagination_class = CreatedCursorPagination

    class InputSerializer(strict.InputSerializer):
        agent_id = strict.IdField()
        level = serializers.ChoiceField(choices=MemoryContextGrant.Level.choices)

    @extend_schema(
        operation_id="memory_context_grants_list", responses=MemoryContextGrantOutput(many=True)
    )
    def get(self, request: Request, context_id: int) -> Response:
        context = selectors.context_get(request_actor(request), context_id)
        return paginated_response(
            self, request, selectors.grants_of(context), MemoryContextGrantOutput
        )

    @extend_schema(
        operation_id="memory_context_grant_create",
        request=InputSerializer,
        responses={201: MemoryContextGrantOutput},
    )
    def post(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        data = validated(self.InputSerializer, request)
        grant = services.context_grant(
            actor=actor, context=selectors.context_get(actor, context_id), **data
        )
        return Response(MemoryContextGrantOutput(grant).data, status=status.HTTP_201_CREATED)


class ContextGrantApi(ApiView):
    """Take an agent's grant back (404 ``grant_not_found`` when it has none)."""

    @extend_schema(operation_id="memory_context_grant_revoke", responses={204: None})
    def delete(self, request: Request, context_id: int, agent_id: int) -> Response:
        actor = request_actor(request)
        services.context_revoke(
            actor=actor, context=selectors.context_get(actor, context_id), agent_id=agent_id
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- access log --------------------------------------------------------------------------------


class MemoryAccessLogOutput(serializers.ModelSerializer[MemoryAccessLog]):
    entry_id = serializers.IntegerField(allow_null=True)
    agent_id = serializers.IntegerField(allow_null=True)

    class Meta:
        model = MemoryAccessLog
        fields = ["id", "entry_id", "agent_id", "actor", "action", "query", "result_count"]
        fields += ["created_at"]


class ContextAccessLogApi(ApiView):
    """Who read the context's entries (``read``) or found them (``search``), newest first."""

    pagination_class = CreatedCursorPagination

    @extend_schema(
        operation_id="memory_context_access_log", responses=MemoryAccessLogOutput(many=True)
    )
    def get(self, request: Request, context_id: int) -> Response:
        context = selectors.context_get(request_actor(request), context_id)
        return paginated_response(
            self, request, selectors.access_log_of(context), MemoryAccessLogOutput
        )
