"""Shared memory pools API: ``/api/v1/memory/pools/...`` and ``/api/v1/memory/workflow-runs/...``.

Pools are named by their ``pool_id`` (unique in the account). A pool the caller may not read
answers like a missing one (404 ``pool_not_found``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.pagination import Cursor
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory import names
from memory.apis.common import MethodFiltersApiView
from memory.models import ChangePolicy, MemoryPool, MemoryPoolEvent, MemoryPoolGrant
from memory.pools import data_services as pool_data_services
from memory.pools import selectors as pool_selectors
from memory.pools import services as pool_services
from memory.pools.access import quota_of

# The keys of an object a caller sends as a pool's data or merges into it (400
# too_many_properties beyond): a blackboard's sections, not a table's rows. Its size is the
# pool's quota (413 pool_quota_exceeded).
MAX_OBJECT_PROPERTIES = 1_000


def data_object_field(**kwargs: Any) -> strict.ObjectField:
    return strict.ObjectField(
        max_properties=MAX_OBJECT_PROPERTIES,
        max_bytes=lambda: int(settings.POOL_MAX_BYTES),
        **kwargs,
    )


class AccessOutput(serializers.Serializer):
    read = serializers.BooleanField()
    write = serializers.BooleanField()
    owner = serializers.BooleanField()


class RetentionPolicy(strict.InputSerializer):
    ttl_seconds = strict.ServiceBoundedIntegerField(
        required=False,
        min_value=1,
        max_value=pool_services.MAX_POOL_TTL,
        field_checks_min=True,
        help_text="The pool expires this long after its last change (400 "
        "invalid_retention_policy beyond the maximum).",
    )
    max_size_bytes = strict.ServiceBoundedIntegerField(
        required=False,
        min_value=1,
        max_value=lambda: int(settings.POOL_MAX_BYTES),
        field_checks_min=True,
        help_text="Its quota; never above POOL_MAX_BYTES (400 invalid_retention_policy).",
    )


POOL_POLICY_HELP = (
    "auto: automatic changes to the pool apply directly; review: each waits as a pending "
    "change for an owner or operator (GET /memory/pending-changes)."
)


class PoolOutput(serializers.ModelSerializer[MemoryPool]):
    owner_agent_id = serializers.IntegerField(source="owner_id", allow_null=True)
    retention_policy = RetentionPolicy()
    quota_bytes = serializers.SerializerMethodField()
    access = serializers.SerializerMethodField()

    class Meta:
        model = MemoryPool
        fields = [
            "pool_id",
            "name",
            "pool_type",
            "scope",
            "owner_agent_id",
            "public_read",
            "version",
            "data_size_bytes",
            "quota_bytes",
            "retention_policy",
            "expires_at",
            "persist_across_executions",
            "workflow_run_id",
            "workflow_kind",
            "change_policy",
            "access",
            "created_at",
            "updated_at",
        ]

    def get_quota_bytes(self, pool: MemoryPool) -> int:
        return quota_of(pool.retention_policy or {})

    @extend_schema_field(AccessOutput)
    def get_access(self, pool: MemoryPool) -> dict[str, bool]:
        return {
            "read": True,
            "write": bool(getattr(pool, "can_write", False)),
            "owner": bool(getattr(pool, "is_owner", False)),
        }


class PoolListCreateApi(ApiView):
    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        pool_type = serializers.ChoiceField(choices=MemoryPool.PoolType.choices, required=False)
        scope = serializers.ChoiceField(choices=MemoryPool.Scope.choices, required=False)
        workflow_run_id = serializers.RegexField(
            rf"^{names.RUN_ID}$", max_length=128, required=False
        )

    class InputSerializer(strict.InputSerializer):
        pool_id = serializers.RegexField(rf"^{names.POOL_ID}$", max_length=100)
        name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        pool_type = serializers.ChoiceField(
            choices=MemoryPool.PoolType.choices, default=MemoryPool.PoolType.SHARED
        )
        scope = serializers.ChoiceField(
            choices=MemoryPool.Scope.choices, default=MemoryPool.Scope.PERSISTENT
        )
        data = data_object_field(  # type: ignore[assignment]  # a field named "data"
            required=False, default=dict, help_text="A JSON object."
        )
        public_read = serializers.BooleanField(default=False)
        retention_policy = RetentionPolicy(required=False)
        expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
        persist_across_executions = serializers.BooleanField(default=False)
        workflow_run_id = serializers.RegexField(
            rf"^{names.RUN_ID}$", max_length=128, required=False, default=""
        )
        workflow_kind = serializers.ChoiceField(
            choices=MemoryPool.WorkflowKind.choices, required=False, default=""
        )
        change_policy = serializers.ChoiceField(
            choices=ChangePolicy.choices, default=ChangePolicy.AUTO, help_text=POOL_POLICY_HELP
        )

    @extend_schema(
        operation_id="memory_pools_list",
        parameters=[FilterSerializer],
        responses=PoolOutput(many=True),
    )
    def get(self, request: Request) -> Response:
        pools = pool_selectors.pool_list(actor=request_actor(request), **self.filters)
        return paginated_response(self, request, pools, PoolOutput)

    @extend_schema(
        operation_id="memory_pools_create", request=InputSerializer, responses={201: PoolOutput}
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        actor = request_actor(request)
        pool_services.pool_create(actor=actor, **data)
        pool = pool_selectors.pool_get(actor=actor, pool_id=data["pool_id"])
        return Response(PoolOutput(pool).data, status=status.HTTP_201_CREATED)


class PoolDetailApi(ApiView):
    """A pool's settings. PATCH and DELETE are its owner's; the ``default`` pool is never
    deleted (409 ``default_pool_protected``)."""

    class UpdateSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200, required=False, allow_blank=True)
        scope = serializers.ChoiceField(choices=MemoryPool.Scope.choices, required=False)
        public_read = serializers.BooleanField(required=False)
        retention_policy = RetentionPolicy(required=False)
        expires_at = serializers.DateTimeField(required=False, allow_null=True)
        persist_across_executions = serializers.BooleanField(required=False)
        change_policy = serializers.ChoiceField(
            choices=ChangePolicy.choices, required=False, help_text=POOL_POLICY_HELP
        )

    @extend_schema(operation_id="memory_pool_retrieve", responses=PoolOutput)
    def get(self, request: Request, pool_id: str) -> Response:
        return Response(
            PoolOutput(pool_selectors.pool_get(actor=request_actor(request), pool_id=pool_id)).data
        )

    @extend_schema(
        operation_id="memory_pool_update", request=UpdateSerializer, responses=PoolOutput
    )
    def patch(self, request: Request, pool_id: str) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        data = validated(self.UpdateSerializer, request)
        pool_services.pool_update(actor=actor, pool=pool, **data)
        return Response(PoolOutput(pool_selectors.pool_get(actor=actor, pool_id=pool_id)).data)

    @extend_schema(operation_id="memory_pool_delete", responses={204: None})
    def delete(self, request: Request, pool_id: str) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        pool_services.pool_delete(actor=actor, pool=pool)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PoolStatsApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        class GrantCounts(serializers.Serializer):
            read = serializers.IntegerField()
            write = serializers.IntegerField()

        pool_id = serializers.CharField()
        version = serializers.IntegerField()
        size_bytes = serializers.IntegerField()
        quota_bytes = serializers.IntegerField()
        usage = strict.FiniteFloatField(help_text="size_bytes / quota_bytes.")
        top_level_keys = serializers.IntegerField()
        bulletin_keys = serializers.IntegerField(help_text="Keys under agent_bulletin.")
        grants = GrantCounts()
        events = serializers.IntegerField(help_text="Bulletin events kept.")
        last_event_at = serializers.DateTimeField(allow_null=True)
        created_at = serializers.DateTimeField()
        updated_at = serializers.DateTimeField()
        expires_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(operation_id="memory_pool_stats", responses=OutputSerializer)
    def get(self, request: Request, pool_id: str) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        return Response(
            self.OutputSerializer(pool_selectors.pool_stats(actor=actor, pool=pool)).data
        )


# --- data ----------------------------------------------------------------------------------


class DataWriteInput(strict.InputSerializer):
    value = strict.ServiceBoundedJSONField(
        max_bytes=lambda: int(settings.POOL_MAX_BYTES),
        allow_null=True,
        help_text="Any JSON value; the pool's data stays within its quota (413 "
        "pool_quota_exceeded).",
    )
    expected_version = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=strict.INT64_MAX,
        help_text="Write only if the pool is at this version (else 409 version_conflict).",
    )


class DataMergeInput(DataWriteInput):
    value = data_object_field(  # type: ignore[assignment]  # an object, not any JSON
        help_text="A JSON object merged into the object at the path (RFC 7396 JSON Merge "
        "Patch: nested objects merge, null removes a key, anything else replaces)."
    )


class DataValueOutput(serializers.Serializer):
    pool_id = serializers.CharField()
    path = serializers.CharField(help_text="Dot path; empty for the whole data.")
    value = serializers.JSONField(allow_null=True)
    version = serializers.IntegerField()


class DataWriteOutput(DataValueOutput):
    changed = serializers.BooleanField(
        help_text="False when the write changed nothing (the version stays)."
    )
    size_bytes = serializers.IntegerField()


class DeleteFilter(strict.FilterSerializer):
    expected_version = serializers.IntegerField(
        required=False, min_value=0, max_value=strict.INT64_MAX
    )


def _write(request: Request, pool_id: str, path: str, mode: str, data: dict[str, Any]) -> Response:
    actor = request_actor(request)
    pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
    written = pool_data_services.pool_data_write(
        actor=actor,
        pool=pool,
        path=path,
        value=data.get("value"),
        mode=mode,
        expected_version=data.get("expected_version"),
    )
    body = {
        "pool_id": pool_id,
        "path": path,
        "value": written.value,
        "version": written.version,
        "changed": written.changed,
        "size_bytes": written.size_bytes,
    }
    return Response(DataWriteOutput(body).data)


def _read(request: Request, pool_id: str, path: str) -> Response:
    actor = request_actor(request)
    pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
    found = pool_selectors.pool_data_read(actor=actor, pool=pool, path=path)
    body = {"pool_id": pool_id, "path": path, "value": found.value, "version": found.version}
    return Response(DataValueOutput(body).data)


PATH_PARAMETER = OpenApiParameter(
    "path",
    str,
    OpenApiParameter.PATH,
    description="Dot-separated keys of letters, digits, _ and - (agent_bulletin.market_regime); "
    "anything else is 400 invalid_path.",
)


class PoolDataPathApi(MethodFiltersApiView):
    """The value at a dot path of a pool's data. PUT replaces it (objects missing on the way
    are created), PATCH merges an object into it (RFC 7396), DELETE removes the key; each
    answers with the pool's new ``version`` and takes ``expected_version`` (DELETE: as a query
    parameter) for compare-and-set."""

    method_filters = {"delete": DeleteFilter}

    @extend_schema(
        operation_id="memory_pool_data_read",
        parameters=[PATH_PARAMETER],
        responses=DataValueOutput,
    )
    def get(self, request: Request, pool_id: str, path: str) -> Response:
        return _read(request, pool_id, path)

    @extend_schema(
        operation_id="memory_pool_data_write",
        parameters=[PATH_PARAMETER],
        request=DataWriteInput,
        responses=DataWriteOutput,
    )
    def put(self, request: Request, pool_id: str, path: str) -> Response:
        data = validated(DataWriteInput, request)
        return _write(request, pool_id, path, MemoryPoolEvent.Action.WRITE, data)

    @extend_schema(
        operation_id="memory_pool_data_merge",
        parameters=[PATH_PARAMETER],
        request=DataMergeInput,
        responses=DataWriteOutput,
    )
    def patch(self, request: Request, pool_id: str, path: str) -> Response:
        data = validated(DataMergeInput, request)
        return _write(request, pool_id, path, MemoryPoolEvent.Action.MERGE, data)

    @extend_schema(
        operation_id="memory_pool_data_delete",
        parameters=[PATH_PARAMETER, DeleteFilter],
        responses={200: DataWriteOutput},
    )
    def delete(self, request: Request, pool_id: str, path: str) -> Response:
        return _write(request, pool_id, path, MemoryPoolEvent.Action.DELETE, self.filters)


class PoolDataApi(ApiView):
    """The whole data of a pool (a JSON object): GET reads it, PUT replaces it, PATCH merges
    an object into it (RFC 7396)."""

    @extend_schema(operation_id="memory_pool_data_root_read", responses=DataValueOutput)
    def get(self, request: Request, pool_id: str) -> Response:
        return _read(request, pool_id, "")

    @extend_schema(
        operation_id="memory_pool_data_root_write",
        request=DataMergeInput,
        responses=DataWriteOutput,
    )
    def put(self, request: Request, pool_id: str) -> Response:
        data = validated(DataMergeInput, request)
        return _write(request, pool_id, "", MemoryPoolEvent.Action.WRITE, data)

    @extend_schema(
        operation_id="memory_pool_data_root_merge",
        request=DataMergeInput,
        responses=DataWriteOutput,
    )
    def patch(self, request: Request, pool_id: str) -> Response:
        data = validated(DataMergeInput, request)
        return _write(request, pool_id, "", MemoryPoolEvent.Action.MERGE, data)


# --- grants --------------------------------------------------------------------------------


class GrantOutput(serializers.ModelSerializer[MemoryPoolGrant]):
    agent_id = serializers.IntegerField()

    class Meta:
        model = MemoryPoolGrant
        fields = ["agent_id", "level", "created_at"]


class PoolGrantListApi(ApiView):
    """The agents with explicit access to the pool (newest grant first)."""

    pagination_class = CreatedCursorPagination

    @extend_schema(operation_id="memory_pool_grants_list", responses=GrantOutput(many=True))
    def get(self, request: Request, pool_id: str) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        grants = pool_selectors.pool_grant_list(actor=actor, pool=pool)
        return paginated_response(self, request, grants, GrantOutput)


class PoolGrantApi(ApiView):
    """Give an agent of the account read or write access, or take it back (owner only)."""

    class InputSerializer(strict.InputSerializer):
        level = serializers.ChoiceField(choices=MemoryPoolGrant.Level.choices)

    @extend_schema(
        operation_id="memory_pool_grant_set", request=InputSerializer, responses=GrantOutput
    )
    def put(self, request: Request, pool_id: str, agent_id: int) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        data = validated(self.InputSerializer, request)
        grant = pool_services.pool_grant_set(
            actor=actor, pool=pool, agent_id=agent_id, level=data["level"]
        )
        return Response(GrantOutput(grant).data)

    @extend_schema(operation_id="memory_pool_grant_revoke", responses={204: None})
    def delete(self, request: Request, pool_id: str, agent_id: int) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        pool_services.pool_grant_revoke(actor=actor, pool=pool, agent_id=agent_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- events --------------------------------------------------------------------------------


class EventFeedPagination(CreatedCursorPagination):
    """A feed, oldest first. ``next`` is never null: at the end it is a cursor after the last
    event seen (or the one given), to poll again for newer events."""

    ordering = ("id",)  # type: ignore[assignment]

    def get_next_link(self) -> str | None:
        link = super().get_next_link()
        if link is not None:
            return link
        position: Any = None
        if self.page:
            position = self._get_position_from_instance(self.page[-1], self.ordering)
        elif self.cursor is not None and not self.cursor.reverse:
            position = self.cursor.position
        return self.encode_cursor(Cursor(offset=0, reverse=False, position=position))


class EventOutput(serializers.ModelSerializer[MemoryPoolEvent]):
    agent_id = serializers.IntegerField(allow_null=True)
    value = serializers.JSONField(allow_null=True)

    class Meta:
        model = MemoryPoolEvent
        fields = ["id", "version", "path", "action", "value", "agent_id", "created_at"]


class PoolEventsApi(ApiView):
    """Writes under ``agent_bulletin`` in this pool, oldest first, after ``cursor``. Follow
    ``next`` (never null) to read on; an empty page means nothing newer yet."""

    pagination_class = EventFeedPagination

    @extend_schema(operation_id="memory_pool_events", responses=EventOutput(many=True))
    def get(self, request: Request, pool_id: str) -> Response:
        actor = request_actor(request)
        pool = pool_selectors.pool_get(actor=actor, pool_id=pool_id)
        events = pool_selectors.pool_event_list(actor=actor, pool=pool)
        return paginated_response(self, request, events, EventOutput)


# --- workflow runs ---------------------------------------------------------------------------


class WorkflowRunExpireApi(ApiView):
    """A workflow run ended: the pools bound to it that the caller may write expire now (gone
    for every read at once), except those that persist across executions."""

    class OutputSerializer(serializers.Serializer):
        run_id = serializers.CharField()
        expired = serializers.IntegerField()
        kept = serializers.IntegerField(help_text="Pools that persist across executions.")

    @extend_schema(
        operation_id="memory_workflow_run_expire", request=None, responses=OutputSerializer
    )
    def post(self, request: Request, run_id: str) -> Response:
        counts = pool_services.workflow_run_expire(actor=request_actor(request), run_id=run_id)
        return Response(self.OutputSerializer({"run_id": run_id, **counts}).data)
