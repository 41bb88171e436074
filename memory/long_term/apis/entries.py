"""Long-term memory entries: ``/api/v1/memory/entries/...`` and a context's entries
(docs/memory/long-term.md). Entries of a context the caller may not read answer 404
``entry_not_found``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
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
    MemoryEntry,
)

INT32_MAX = 2**31 - 1


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
            "speaker",
            "importance",
            "confidence",
            "embedding_model",
            "access_count",
            "last_accessed_at",
            "archived_at",
            "author_agent_id",
            "created_at",
        ]


def entry_content_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """An entry's text: at most ``MAX_CONTENT_CHARS`` characters (413 ``content_too_large``,
    from the service)."""
    return strict.ServiceBoundedCharField(
        max_length=services.MAX_CONTENT_CHARS, allow_blank=True, trim_whitespace=False, **kwargs
    )


class MemoryEntryInput(strict.InputSerializer):
    """One entry: ``content`` (text) or ``data`` (any JSON), or both."""

    content = entry_content_field(required=False, default="")
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
    metadata = strict.MetadataField(required=False, default=dict)
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
    speaker = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="Who said it, for a conversation turn: a search whose query names a speaker "
        "ranks that speaker's entries higher.",
    )
    importance = strict.FiniteFloatField(required=False, default=0.5, min_value=0, max_value=1)
    confidence = strict.FiniteFloatField(required=False, default=1.0, min_value=0, max_value=1)


def _entry_input(data: dict[str, Any]) -> services.EntryInput:
    return services.EntryInput(**data)


class MemoryEntryBatchInput(strict.BatchInput):
    """``{"entries": [...]}``: 1 to 500 entries, written all or none."""

    batch_field, batch_max, batch_noun = "entries", services.MAX_BATCH, "entries"

    entries = serializers.ListField(
        child=MemoryEntryInput(),
        min_length=1,
        max_length=services.MAX_BATCH,
        help_text=f"1 to {services.MAX_BATCH} entries (else 400 invalid_batch_size).",
    )


class MemoryEntryBatchOutput(serializers.Serializer):
    entries = MemoryEntryOutput(many=True)


class EntryCreateInput(MemoryEntryInput):
    context = strict.IdField(  # type: ignore[assignment]  # a field named "context"
        required=False,
        help_text="The context to write to (write access); default: the calling agent's own "
        "memory (context `agent:<agent id>`, created on first use).",
    )


class EntryBatchCreateInput(MemoryEntryBatchInput):
    context = strict.IdField(  # type: ignore[assignment]  # a field named "context"
        required=False,
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
        context_id = data.pop("context", None)
        (entry,) = services.entries_create(
            actor=request_actor(request), context_id=context_id, items=[_entry_input(data)]
        )
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
        return _batch_written(request, data.get("context"), data["entries"])


def _batch_written(request: Request, context_id: int | None, raw: list[dict[str, Any]]) -> Response:
    entries = services.entries_create(
        actor=request_actor(request),
        context_id=context_id,
        items=[_entry_input(dict(item)) for item in raw],
    )
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
        item = _entry_input(validated(MemoryEntryInput, request))
        (entry,) = services.entries_create(
            actor=request_actor(request), context_id=context_id, items=[item]
        )
        return Response(MemoryEntryOutput(entry).data, status=status.HTTP_201_CREATED)


class ContextEntryBatchApi(ApiView):
    """Write up to 500 entries in one transaction (all or none)."""

    @extend_schema(
        operation_id="memory_context_entries_batch",
        request=MemoryEntryBatchInput,
        responses={201: MemoryEntryBatchOutput},
    )
    def post(self, request: Request, context_id: int) -> Response:
        data = validated(MemoryEntryBatchInput, request)
        return _batch_written(request, context_id, data["entries"])


class EntryDetailApi(ApiView):
    """One version of an entry (a read counts as an access). PATCH: content changes (content,
    data, types, source, tags, occurred_at) write a new version, answered with its new id;
    importance, confidence and metadata change in place. DELETE removes every version."""

    class UpdateSerializer(strict.InputSerializer):
        content = entry_content_field(required=False)
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
        metadata = strict.MetadataField(required=False)
        occurred_at = serializers.DateTimeField(required=False, allow_null=True)
        importance = strict.FiniteFloatField(required=False, min_value=0, max_value=1)
        confidence = strict.FiniteFloatField(required=False, min_value=0, max_value=1)
        expected_version = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=strict.INT64_MAX,
            help_text="Change only if this is the current version (else 409 version_conflict).",
        )

    @extend_schema(operation_id="memory_entry_retrieve", responses=MemoryEntryOutput)
    def get(self, request: Request, entry_id: int) -> Response:
        entry = services.entry_read(actor=request_actor(request), entry_id=entry_id)
        return Response(MemoryEntryOutput(entry).data)

    @extend_schema(
        operation_id="memory_entry_update", request=UpdateSerializer, responses=MemoryEntryOutput
    )
    def patch(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        data = validated(self.UpdateSerializer, request)
        expected = data.pop("expected_version", None)
        written = services.entry_update(
            actor=actor,
            entry=selectors.entry_get(actor, entry_id),
            fields=data,
            expected_version=expected,
        )
        return Response(MemoryEntryOutput(written).data)

    @extend_schema(operation_id="memory_entry_delete", responses={204: None})
    def delete(self, request: Request, entry_id: int) -> Response:
        actor = request_actor(request)
        services.entry_delete(actor=actor, entry=selectors.entry_get(actor, entry_id))
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
        data = validated(self.InputSerializer, request)
        entry = services.entry_importance_adjust(
            actor=actor, entry=selectors.entry_get(actor, entry_id), delta=data["delta"]
        )
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
        data = validated(self.InputSerializer, request)
        entry = services.entry_archive_set(
            actor=actor,
            entry=selectors.entry_get(actor, entry_id),
            archived=self.archived,
            reason=data["reason"],
        )
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
