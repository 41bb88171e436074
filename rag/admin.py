"""Knowledge bases, documents, chunks and query analytics, scoped by account and role
(``core.admin_base``; docs/admin.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from core.actors import MANAGE_KNOWLEDGE_BASES, READ, WRITE_DOCUMENTS, Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from rag import services
from rag.models import (
    Chunk,
    Document,
    KnowledgeBase,
    SearchQuery,
    SearchResult,
)


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_KNOWLEDGE_BASES
    summarize_deletions = True  # never collect a knowledge base's documents to list them
    list_display = [
        "name",
        "account",
        "status",
        "chunking_strategy",
        "chunk_size",
        "chunk_count",
        "embedding_model",
    ]
    list_filter = ["status", "chunking_strategy", "account"]
    list_select_related = ["account"]
    search_fields = ["name", "description"]
    readonly_fields = [
        "embedding_provider",
        "embedding_model",
        "chunk_count",
        "total_terms",
        "created_at",
        "updated_at",
    ]
    actions = ["pause", "activate", "archive"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        editable = [
            "account",
            "name",
            "description",
            "chunking_strategy",
            "chunk_size",
            "chunk_overlap",
        ]
        if obj is None:
            return editable
        return [*editable, "status", "status_message", *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "status_message"] if obj is not None else []

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> KnowledgeBase:
        data = form.cleaned_data
        return services.knowledge_base_create(
            actor=actor,
            account_id=data["account"].pk,
            name=data["name"],
            description=data["description"],
            chunking_strategy=data["chunking_strategy"],
            chunk_size=data["chunk_size"],
            chunk_overlap=data["chunk_overlap"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: KnowledgeBase, form: Any
    ) -> None:
        changes = self.changed(form, services.KNOWLEDGE_BASE_UPDATABLE_FIELDS)
        if changes:
            services.knowledge_base_update(actor=actor, kb=original, **changes)
        if "status" in form.changed_data:
            services.knowledge_base_transition(
                actor=actor, kb=original, to=form.cleaned_data["status"]
            )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: KnowledgeBase) -> None:
        services.knowledge_base_delete(actor=actor, kb=obj)

    def deletion_summary(self, obj: KnowledgeBase) -> str:
        documents = Document.objects.filter(knowledge_base=obj).count()
        return f"Knowledge base {obj} with its {documents} document(s), chunks and index data"

    def _transition(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase], to: str) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset,
            lambda kb: services.knowledge_base_transition(actor=actor, kb=kb, to=to),
            f"Moved to {to}:",
        )

    @admin.action(description="Pause ingestion", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        self._transition(request, queryset, "paused")

    @admin.action(description="Activate", permissions=["change"])
    def activate(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        self._transition(request, queryset, "active")

    @admin.action(description="Archive", permissions=["change"])
    def archive(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        self._transition(request, queryset, "archived")


class DocumentUploadForm(forms.ModelForm):
    upload = forms.FileField(help_text=".txt .md .html .pdf .json")

    class Meta:
        model = Document
        fields = ["knowledge_base", "title", "doc_type", "tags", "lifecycle_state", "document_date"]


@admin.register(Document)
class DocumentAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = WRITE_DOCUMENTS
    list_defer = ("original",)  # the uploaded bytes: never read to list or show a document
    list_display = [
        "__str__",
        "knowledge_base",
        "status",
        "progress_display",
        "content_type",
        "doc_type",
        "updated_at",
    ]
    list_filter = ["status", "content_type", "doc_type", "knowledge_base"]
    list_select_related = ["knowledge_base"]
    search_fields = ["title", "source"]
    exclude = ["original"]
    readonly_fields = [
        "account",
        "knowledge_base",
        "source",
        "content_type",
        "checksum",
        "size_bytes",
        "status",
        "error",
        "chunks_total",
        "chunks_embedded",
        "indexed_model",
        "indexed_at",
        "graph_indexed_at",
        "token_count",
        "created_at",
    ]
    actions = ["reprocess", "delete_with_index"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = DocumentUploadForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else self.readonly_fields

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["original"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return [
                "knowledge_base",
                "upload",
                "title",
                "doc_type",
                "tags",
                "lifecycle_state",
                "document_date",
            ]
        return [
            *self.readonly_fields,
            "title",
            "doc_type",
            "tags",
            "lifecycle_state",
            "document_date",
            "metadata",
        ]

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> Document:
        upload = form.cleaned_data["upload"]
        return services.document_create(
            actor=actor,
            kb=form.cleaned_data["knowledge_base"],
            data=upload.read(),
            filename=upload.name,
            title=form.cleaned_data["title"],
            metadata=services.DocumentMetadata(
                doc_type=form.cleaned_data["doc_type"],
                tags=tuple(form.cleaned_data["tags"] or ()),
                lifecycle_state=form.cleaned_data["lifecycle_state"],
                document_date=form.cleaned_data["document_date"],
            ),
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: Document, form: Any
    ) -> None:
        changes = self.changed(form, services.DOCUMENT_UPDATABLE_FIELDS)
        if changes:
            services.document_update(actor=actor, document=original, **changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Document) -> None:
        services.document_delete(actor=actor, document=obj)

    @admin.display(description="progress")
    def progress_display(self, obj: Document) -> str:
        return f"{obj.chunks_embedded}/{obj.chunks_total}" if obj.chunks_total else "-"

    @admin.action(description="Reprocess (retry)", permissions=["change"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset,
            lambda document: services.document_reprocess(actor=actor, document=document),
            "Queued",
        )

    @admin.action(description="Delete with chunks and index data", permissions=["delete"])
    def delete_with_index(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        self.delete_queryset(request, queryset)


class EmbeddingModelFilter(admin.SimpleListFilter):
    """Chunks by embedding model, offering the models of the user's knowledge bases (a
    DISTINCT over the chunk table would read all of it)."""

    title = "embedding model"
    parameter_name = "embedding_model"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        kbs = model_admin.scope(request, KnowledgeBase.objects.all())
        models = kbs.order_by("embedding_model").values_list("embedding_model", flat=True)
        return [(name, name) for name in models.distinct()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Chunk]) -> QuerySet[Chunk]:
        value = self.value()
        return queryset.filter(embedding_model=value) if value else queryset


@admin.register(Chunk)
class ChunkAdmin(AccountScopedAdmin):
    """Read-only: chunks are derived from documents (reprocess a document to rebuild them)."""

    view_roles = READ
    large_table = True
    list_display = ["document", "position", "token_count", "embedding_model", "heading"]
    list_filter = ["knowledge_base", EmbeddingModelFilter]
    search_fields = ["text"]
    exclude = ["embedding"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        return (
            super()
            .get_queryset(request)
            .select_related("document")
            .defer("embedding", "document__original")
        )

    @admin.display(description="heading")
    def heading(self, obj: Chunk) -> str:
        return " › ".join(obj.heading_path)


class SearchResultInline(AccountScopedTabularInline):
    model = SearchResult
    account_lookup = "query__account"
    view_roles = READ
    can_delete = False
    fields = (
        "rank",
        "document",
        "chunk",
        "score",
        "vector_rank",
        "vector_score",
        "keyword_rank",
        "keyword_score",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[SearchResult]:
        return (
            super()
            .get_queryset(request)
            .select_related("document", "chunk")
            .defer("document__original", "chunk__embedding", "chunk__text")
        )


class CreatedSinceFilter(admin.SimpleListFilter):
    """Recent queries (by the created_at index) instead of a date hierarchy, which reads
    every row's date to draw itself."""

    title = "created"
    parameter_name = "since"
    _windows = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [("1h", "Last hour"), ("24h", "Last 24 hours"), ("7d", "Last 7 days")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        window = self._windows.get(self.value() or "")
        return queryset.filter(created_at__gte=timezone.now() - window) if window else queryset


@admin.register(SearchQuery)
class SearchQueryAdmin(AccountScopedAdmin):
    """Read-only query analytics."""

    view_roles = READ
    large_table = True
    list_display = [
        "query_text",
        "account",
        "mode",
        "fusion",
        "result_count",
        "avg_score",
        "quality_score",
        "latency_ms",
        "status",
        "created_at",
    ]
    list_filter = ["mode", "status", "account", CreatedSinceFilter]
    list_select_related = ["account"]
    search_fields = ["query_text"]
    inlines = [SearchResultInline]


from rag import admin_home  # noqa: E402, F401 - the panels of the admin home
from rag.graph import admin as graph_admin  # noqa: E402, F401 - the graph's admin
