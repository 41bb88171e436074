"""Long-term memory API: ``/api/v1/memory/contexts/...``, ``/entries/...``, ``/snapshots/...``
and ``/long-term/search`` (docs/memory.md).

A context the caller may not read answers like a missing one (404 ``context_not_found``), and
so do its entries (``entry_not_found``) and snapshots (``snapshot_not_found``); one it may only
read refuses writes with 403 ``context_read_only``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.errors import ValidationFailed
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.views import ApiView
from memory.apis.common import validated
from memory.models import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemorySnapshot,
)
from memory.selectors import long_term as selectors
from memory.services import long_term as services
from rag.search import DEFAULT_FUSION, FUSIONS, MAX_TOP_K, MAX_WEIGHT, MODES

INT32_MAX = 2**31 - 1

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
            "entry_count",
            "archived_at",
            "access",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(MemoryContextAccessOutput)
    def get_access(self, context: MemoryContext) -> dict[str, bool]:
        return {"read": True, "write": bool(getattr(context, "can_write", False))}


def _context_response(request: Request, context_id: int, code: int = 200) -> Response:
    context = selectors.context_get(request_actor(request), context_id)
    return Response(MemoryContextOutput(context).data, status=code)


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
            default=MemoryContext.ContextType.AGENT_MEMORY,
        )
        scope = serializers.ChoiceField(
            choices=MemoryContext.Scope.choices, default=MemoryContext.Scope.AGENT
        )
        team_id = strict.IdField(
            required=False, allow_null=True, default=None, help_text="Only for scope team."
        )
        description = serializers.CharField(required=False, default="", allow_blank=True)
        metadata = serializers.DictField(required=False, default=dict)

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
        return _context_response(request, context.pk, status.HTTP_201_CREATED)


class ContextDetailApi(ApiView):
    """A context's settings; PATCH and DELETE need write access. Deleting a context deletes
    its entries, their history, grants, snapshots and access log."""

    class UpdateSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200, required=False)
        context_type = serializers.ChoiceField(
            choices=MemoryContext.ContextType.choices, required=False
        )
        description = serializers.CharField(required=False, allow_blank=True)
        metadata = serializers.DictField(required=False)

    @extend_schema(operation_id="memory_context_retrieve", responses=MemoryContextOutput)
    def get(self, request: Request, context_id: int) -> Response:
        return _context_response(request, context_id)

    @extend_schema(
        operation_id="memory_context_update",
        request=UpdateSerializer,
        responses=MemoryContextOutput,
    )
    def patch(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        context = selectors.context_get(actor, context_id, write=True)
        data = validated(self.UpdateSerializer, request)
        services.context_update(actor=actor, context=context, fields=data)
        return _context_response(request, context_id)

    @extend_schema(operation_id="memory_context_delete", responses={204: None})
    def delete(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        context = selectors.context_get(actor, context_id, write=True)
        services.context_delete(actor=actor, context=context)
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
        context = selectors.context_get(actor, context_id, write=True)
        services.context_archive(actor=actor, context=context, archived=self.archived)
        return _context_response(request, context_id)


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
        context = selectors.context_get(actor, context_id, write=True)
        data = validated(self.InputSerializer, request)
        grant = services.context_grant(actor=actor, context=context, **data)
        return Response(MemoryContextGrantOutput(grant).data, status=status.HTTP_201_CREATED)


class ContextGrantApi(ApiView):
    """Take an agent's grant back (404 ``grant_not_found`` when it has none)."""

    @extend_schema(operation_id="memory_context_grant_revoke", responses={204: None})
    def delete(self, request: Request, context_id: int, agent_id: int) -> Response:
        actor = request_actor(request)
        context = selectors.context_get(actor, context_id, write=True)
        services.context_revoke(actor=actor, context=context, agent_id=agent_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- snapshots ---------------------------------------------------------------------------------


class MemorySnapshotOutput(serializers.ModelSerializer[MemorySnapshot]):
    context_id = serializers.IntegerField()

    class Meta:
        model = MemorySnapshot
        fields = ["id", "context_id", "name", "entry_count", "created_by", "created_at"]


class ContextSnapshotListCreateApi(ApiView):
    """A context's snapshots, newest first; POST records its current entries (write access)."""

    pagination_class = CreatedCursorPagination

    class InputSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)

    @extend_schema(
        operation_id="memory_context_snapshots_list", responses=MemorySnapshotOutput(many=True)
    )
    def get(self, request: Request, context_id: int) -> Response:
        context = selectors.context_get(request_actor(request), context_id)
        return paginated_response(
            self, request, selectors.snapshots_of(context), MemorySnapshotOutput
        )

    @extend_schema(
        operation_id="memory_context_snapshot_create",
        request=InputSerializer,
        responses={201: MemorySnapshotOutput},
    )
    def post(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        context = selectors.context_get(actor, context_id, write=True)
        data = validated(self.InputSerializer, request)
        snapshot = services.snapshot_create(actor=actor, context=context, name=data["name"])
        return Response(MemorySnapshotOutput(snapshot).data, status=status.HTTP_201_CREATED)


class SnapshotRestoreApi(ApiView):
    """Bring the context back to the snapshot without losing anything: changed entries get a
    new version with the snapshot's content, deleted ones are written again, later ones are
    archived."""

    class OutputSerializer(serializers.Serializer):
        restored = serializers.IntegerField(help_text="Entries given a new version.")
        recreated = serializers.IntegerField(help_text="Deleted memories written again.")
        archived = serializers.IntegerField(help_text="Entries written after the snapshot.")
        unchanged = serializers.IntegerField()

    @extend_schema(operation_id="memory_snapshot_restore", request=None, responses=OutputSerializer)
    def post(self, request: Request, snapshot_id: int) -> Response:
        actor = request_actor(request)
        snapshot = selectors.snapshot_get(actor, snapshot_id, write=True)
        report = services.snapshot_restore(actor=actor, snapshot=snapshot)
        return Response(self.OutputSerializer(report).data)


# --- entries -----------------------------------------------------------------------------------


class MemoryEntryOutput(serializers.ModelSerializer[MemoryEntry]):
    context_id = serializers.IntegerField()
    previous_id = serializers.IntegerField(allow_null=True)
    author_agent_id = serializers.IntegerField(source="author_id", allow_null=True)
    data = serializers.JSONField(allow_null=True)  # type: ignore[assignment]  # a field named "data"
    importance = strict.FiniteFloatField()
    confidence = strict.FiniteFloatField()

    class Meta:
        model = MemoryEntry
        fields = [
            "id",
            "context_id",
            "lineage",
            "version",
            "is_current",
            "previous_id",
            "entry_type",
            "source",
            "memory_type",
            "content",
            "data",
            "tags",
            "metadata",
            "occurred_at",
            "thread",
            "position",
            "importance",
            "confidence",
            "embedding_model",
            "access_count",
            "last_accessed_at",
            "archived_at",
            "author_agent_id",
            "created_at",
        ]


class MemoryEntryInput(strict.InputSerializer):
    """One entry: ``content`` (text) or ``data`` (any JSON), or both."""

    content = serializers.CharField(
        required=False, default="", allow_blank=True, trim_whitespace=False
    )
    data = serializers.JSONField(  # type: ignore[assignment]  # a field named "data"
        required=False, default=None, allow_null=True, help_text="Structured content."
    )
    entry_type = serializers.ChoiceField(
        choices=MemoryEntry.EntryType.choices, default=MemoryEntry.EntryType.FACT
    )
    source = serializers.ChoiceField(  # type: ignore[assignment]  # a field named "source"
        choices=MemoryEntry.Source.choices, default=MemoryEntry.Source.AGENT
    )
    memory_type = serializers.ChoiceField(
        choices=MemoryEntry.MemoryType.choices, default=MemoryEntry.MemoryType.FACTUAL
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, default=list, max_length=100
    )
    metadata = serializers.DictField(required=False, default=dict)
    occurred_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    thread = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="A conversation session or task run: its entries are indexed with their "
        "neighbours by position. Give thread and position together.",
    )
    position = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0, max_value=INT32_MAX
    )
    importance = strict.FiniteFloatField(required=False, default=0.5, min_value=0, max_value=1)
    confidence = strict.FiniteFloatField(required=False, default=1.0, min_value=0, max_value=1)


def _entry_input(data: dict[str, Any]) -> services.EntryInput:
    return services.EntryInput(**data)


class MemoryEntryBatchInput(strict.InputSerializer):
    """``{"entries": [...]}``: 1 to 500 entries, written all or none."""

    entries = serializers.ListField(
        child=MemoryEntryInput(),
        min_length=1,
        max_length=services.MAX_BATCH,
        help_text=f"1 to {services.MAX_BATCH} entries (else 400 invalid_batch_size).",
    )

    def to_internal_value(self, data: Any) -> Any:
        entries = data.get("entries") if isinstance(data, dict) else None
        # Counted before the entries are validated one by one.
        if isinstance(entries, list) and not 1 <= len(entries) <= services.MAX_BATCH:
            raise ValidationFailed(
                f"Write 1 to {services.MAX_BATCH} entries at a time.",
                code="invalid_batch_size",
                details={"max": services.MAX_BATCH},
            )
        return super().to_internal_value(data)


class MemoryEntryBatchOutput(serializers.Serializer):
    entries = MemoryEntryOutput(many=True)


def _context_for_writing(request: Request, context_id: int | None) -> tuple[Any, MemoryContext]:
    """The named context (write access), or the calling agent's own memory by default."""
    actor = request_actor(request)
    if context_id is None:
        return actor, services.agent_memory_context(actor=actor)
    return actor, selectors.context_get(actor, context_id, write=True)


class EntryCreateInput(MemoryEntryInput):
    context = serializers.IntegerField(  # type: ignore[assignment]  # a field named "context"
        required=False,
        min_value=1,
        help_text="The context to write to (write access); default: the calling agent's own "
        "memory (context `agent:<agent id>`, created on first use).",
    )


class EntryBatchCreateInput(MemoryEntryBatchInput):
    context = serializers.IntegerField(  # type: ignore[assignment]  # a field named "context"
        required=False,
        min_value=1,
        help_text="The context to write every entry to; default: the calling agent's own memory.",
    )


class EntryCreateApi(ApiView):
    """Write one entry to a context, or to the calling agent's own memory."""

    @extend_schema(
        operation_id="memory_entry_create",
        request=EntryCreateInput,
        responses={201: MemoryEntryOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(EntryCreateInput, request)
        actor, context = _context_for_writing(request, data.pop("context", None))
        (entry,) = services.entries_write(actor=actor, context=context, items=[_entry_input(data)])
        entry.refresh_from_db()
        return Response(MemoryEntryOutput(entry).data, status=status.HTTP_201_CREATED)


class EntryBatchCreateApi(ApiView):
    """Write up to 500 entries to one context (default: the agent's own memory), all or none."""

    @extend_schema(
        operation_id="memory_entries_batch",
        request=EntryBatchCreateInput,
        responses={201: MemoryEntryBatchOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(EntryBatchCreateInput, request)
        actor, context = _context_for_writing(request, data.get("context"))
        return _batch_written(actor, context, data["entries"])


def _batch_written(actor: Any, context: MemoryContext, raw: list[dict[str, Any]]) -> Response:
    items = [_entry_input(dict(item)) for item in raw]
    written = services.entries_write(actor=actor, context=context, items=items)
    entries = MemoryEntry.objects.filter(pk__in=[e.pk for e in written]).order_by("pk")
    return Response(
        MemoryEntryBatchOutput({"entries": entries}).data, status=status.HTTP_201_CREATED
    )


class ContextEntryListCreateApi(ApiView):
    """The current entries of a context, newest first; POST writes one (write access)."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        entry_type = serializers.ChoiceField(choices=MemoryEntry.EntryType.choices, required=False)
        include_archived = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        operation_id="memory_context_entries_list",
        parameters=[FilterSerializer],
        responses=MemoryEntryOutput(many=True),
    )
    def get(self, request: Request, context_id: int) -> Response:
        context = selectors.context_get(request_actor(request), context_id)
        entries = selectors.entries_of(
            context,
            include_archived=self.filters.get("include_archived", False),
            entry_type=self.filters.get("entry_type", ""),
        )
        return paginated_response(self, request, entries, MemoryEntryOutput)

    @extend_schema(
        operation_id="memory_context_entry_create",
        request=MemoryEntryInput,
        responses={201: MemoryEntryOutput},
    )
    def post(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        context = selectors.context_get(actor, context_id, write=True)
        item = _entry_input(validated(MemoryEntryInput, request))
        (entry,) = services.entries_write(actor=actor, context=context, items=[item])
        entry.refresh_from_db()
        return Response(MemoryEntryOutput(entry).data, status=status.HTTP_201_CREATED)


class ContextEntryBatchApi(ApiView):
    """Write up to 500 entries in one transaction (all or none)."""

    @extend_schema(
        operation_id="memory_context_entries_batch",
        request=MemoryEntryBatchInput,
        responses={201: MemoryEntryBatchOutput},
    )
    def post(self, request: Request, context_id: int) -> Response:
        actor = request_actor(request)
        context = selectors.context_get(actor, context_id, write=True)
        data = validated(MemoryEntryBatchInput, request)
        return _batch_written(actor, context, data["entries"])


class EntryDetailApi(ApiView):
    """One version of an entry (a read counts as an access). PATCH: content changes (content,
    data, types, source, tags, occurred_at) write a new version, answered with its new id;
    importance, confidence and metadata change in place. DELETE removes every version."""

    class UpdateSerializer(strict.InputSerializer):
        content = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
        data = serializers.JSONField(  # type: ignore[assignment]  # a field named "data"
            required=False, allow_null=True
        )
        entry_type = serializers.ChoiceField(choices=MemoryEntry.EntryType.choices, required=False)
        source = serializers.ChoiceField(choices=MemoryEntry.Source.choices, required=False)  # type: ignore[assignment]  # a field named "source"
        memory_type = serializers.ChoiceField(
            choices=MemoryEntry.MemoryType.choices, required=False
        )
        tags = serializers.ListField(
            child=serializers.CharField(max_length=100), required=False, max_length=100
        )
        metadata = serializers.DictField(required=False)
        occurred_at = serializers.DateTimeField(required=False, allow_null=True)
        importance = strict.FiniteFloatField(required=False, min_value=0, max_value=1)
        confidence = strict.FiniteFloatField(required=False, min_value=0, max_value=1)
        expected_version = serializers.IntegerField(
            required=False,
            min_value=1,
            help_text="Change only if this is the current version (else 409 version_conflict).",
        )

    @extend_schema(operation_id="memory_entry_retrieve", responses=MemoryEntryOutput)
    def get(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        entry = selectors.entry_get(actor, entry_id)
        services.entries_accessed(actor=actor, entries=[entry], action=MemoryAccessLog.Action.READ)
        return Response(MemoryEntryOutput(entry).data)

    @extend_schema(
        operation_id="memory_entry_update", request=UpdateSerializer, responses=MemoryEntryOutput
    )
    def patch(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        entry = selectors.entry_get(actor, entry_id, write=True)
        data = validated(self.UpdateSerializer, request)
        expected = data.pop("expected_version", None)
        written = services.entry_update(
            actor=actor, entry=entry, fields=data, expected_version=expected
        )
        written.refresh_from_db()
        return Response(MemoryEntryOutput(written).data)

    @extend_schema(operation_id="memory_entry_delete", responses={204: None})
    def delete(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        entry = selectors.entry_get(actor, entry_id, write=True)
        services.entry_delete(actor=actor, entry=entry)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EntryVersionsApi(ApiView):
    """Every version of the entry's memory, newest first."""

    pagination_class = CreatedCursorPagination

    @extend_schema(operation_id="memory_entry_versions", responses=MemoryEntryOutput(many=True))
    def get(self, request: Request, entry_id: int) -> Response:
        entry = selectors.entry_get(request_actor(request), entry_id)
        return paginated_response(self, request, selectors.entry_history(entry), MemoryEntryOutput)


class EntryImportanceApi(ApiView):
    """Boost (delta > 0) or reduce (delta < 0) the entry's importance, kept within 0..1."""

    class InputSerializer(strict.InputSerializer):
        delta = strict.FiniteFloatField(min_value=-1, max_value=1)

    @extend_schema(
        operation_id="memory_entry_importance", request=InputSerializer, responses=MemoryEntryOutput
    )
    def post(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        entry = selectors.entry_get(actor, entry_id, write=True)
        data = validated(self.InputSerializer, request)
        entry = services.entry_importance_adjust(actor=actor, entry=entry, delta=data["delta"])
        return Response(MemoryEntryOutput(entry).data)


class EntryArchiveApi(ApiView):
    """Archive the current entry: kept, with its history, but out of searches."""

    archived = True

    class InputSerializer(strict.InputSerializer):
        reason = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)

    @extend_schema(
        operation_id="memory_entry_archive", request=InputSerializer, responses=MemoryEntryOutput
    )
    def post(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        entry = selectors.entry_get(actor, entry_id, write=True)
        data = validated(self.InputSerializer, request)
        services.entries_archive(
            actor=actor,
            context=entry.context,
            entries=[entry],
            archived=self.archived,
            reason=data["reason"],
        )
        entry.refresh_from_db()
        return Response(MemoryEntryOutput(entry).data)


class EntryUnarchiveApi(EntryArchiveApi):
    """Bring an archived entry back into searches (indexed again)."""

    archived = False

    @extend_schema(
        operation_id="memory_entry_unarchive",
        request=EntryArchiveApi.InputSerializer,
        responses=MemoryEntryOutput,
    )
    def post(self, request: Request, entry_id: int) -> Response:
        return super().post(request, entry_id)


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


# --- search ------------------------------------------------------------------------------------


class LongTermFiltersInput(strict.InputSerializer):
    context_ids = serializers.ListField(
        child=strict.IdField(), required=False, default=list, max_length=100
    )
    entry_types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.EntryType.choices),
        required=False,
        default=list,
        max_length=20,
    )
    memory_types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.MemoryType.choices),
        required=False,
        default=list,
        max_length=20,
    )
    sources = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryEntry.Source.choices),
        required=False,
        default=list,
        max_length=20,
    )
    tags_any = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, default=list, max_length=100
    )
    occurred_from = serializers.DateTimeField(required=False, allow_null=True, default=None)
    occurred_to = serializers.DateTimeField(required=False, allow_null=True, default=None)
    thread = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class LongTermWeightsInput(strict.InputSerializer):
    vector = strict.FiniteFloatField(min_value=0, max_value=MAX_WEIGHT, required=False)
    keyword = strict.FiniteFloatField(min_value=0, max_value=MAX_WEIGHT, required=False)


class LongTermSearchInput(strict.InputSerializer):
    query = serializers.CharField(max_length=4000)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, default=10)
    threshold = strict.FiniteFloatField(
        min_value=0,
        max_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="The lowest effective_relevance_score returned.",
    )
    mode = serializers.ChoiceField(choices=MODES, default="hybrid")
    fusion = serializers.ChoiceField(choices=FUSIONS, default=DEFAULT_FUSION)
    weights = LongTermWeightsInput(required=False)
    filters = LongTermFiltersInput(required=False)


class ComponentsOutput(serializers.Serializer):
    similarity = strict.FiniteFloatField()
    importance = strict.FiniteFloatField()
    confidence = strict.FiniteFloatField()
    recency = strict.FiniteFloatField()


class RetrievalOutput(serializers.Serializer):
    score = strict.FiniteFloatField(allow_null=True, help_text="The fused (or stage) score.")
    vector_rank = serializers.IntegerField(allow_null=True)
    vector_score = strict.FiniteFloatField(allow_null=True)
    keyword_rank = serializers.IntegerField(allow_null=True)
    keyword_score = strict.FiniteFloatField(allow_null=True)


class LongTermHitOutput(serializers.Serializer):
    id = serializers.IntegerField(source="entry.pk")
    context_id = serializers.IntegerField(source="entry.context_id")
    content = serializers.CharField(source="entry.content")
    data = serializers.JSONField(source="entry.data", allow_null=True)  # type: ignore[assignment]  # a field named "data"
    entry_type = serializers.CharField(source="entry.entry_type")
    version = serializers.IntegerField(source="entry.version")
    occurred_at = serializers.DateTimeField(source="entry.occurred_at", allow_null=True)
    score = strict.FiniteFloatField(help_text="effective_relevance_score (docs/memory.md).")
    components = ComponentsOutput()
    retrieval = RetrievalOutput()


class LongTermSearchApi(ApiView):
    """The current, unarchived entries most relevant to ``query`` in the contexts the caller
    may read (or the ``context_ids`` given, each of which must be), best
    ``effective_relevance_score`` first, each explained by its components. A search is a
    read (the ``read`` scope); its hits count as accesses."""

    required_scope = "read"

    class OutputSerializer(serializers.Serializer):
        results = LongTermHitOutput(many=True)
        stage_ms = serializers.DictField(child=strict.FiniteFloatField())

    @extend_schema(
        operation_id="memory_long_term_search",
        request=LongTermSearchInput,
        responses=OutputSerializer,
    )
    def post(self, request: Request) -> Response:
        actor = request_actor(request)
        data = validated(LongTermSearchInput, request)
        raw = data.get("filters") or LongTermFiltersInput().run_validation({})
        filters = selectors.LongTermFilters(
            context_ids=tuple(raw["context_ids"]),
            entry_types=tuple(raw["entry_types"]),
            memory_types=tuple(raw["memory_types"]),
            sources=tuple(raw["sources"]),
            tags_any=tuple(raw["tags_any"]),
            occurred_from=raw["occurred_from"],
            occurred_to=raw["occurred_to"],
            thread=raw["thread"],
        )
        hits, stage_ms = selectors.long_term_search(
            actor=actor,
            query=data["query"],
            top_k=data["top_k"],
            filters=filters,
            mode=data["mode"],
            fusion=data["fusion"],
            weights=data.get("weights"),
            threshold=data["threshold"],
        )
        services.entries_accessed(
            actor=actor,
            entries=[hit.entry for hit in hits],
            action=MemoryAccessLog.Action.SEARCH,
            query=data["query"],
        )
        return Response(self.OutputSerializer({"results": hits, "stage_ms": stage_ms}).data)
