from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import actor_for_account
from core.errors import EngramError
from rag import services
from rag.models import Chunk, Document, KnowledgeBase, SearchQuery, SearchResult


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(admin.ModelAdmin):
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

    def save_model(self, request: HttpRequest, obj: KnowledgeBase, form: Any, change: bool) -> None:
        try:
            if change:
                fields = {
                    f: form.cleaned_data[f]
                    for f in form.changed_data
                    if f
                    in {"name", "description", "chunking_strategy", "chunk_size", "chunk_overlap"}
                }
                services.knowledge_base_update(kb=obj, **fields)
                if "status" in form.changed_data:
                    original = KnowledgeBase.objects.get(pk=obj.pk)
                    services.knowledge_base_transition(kb=original, to=form.cleaned_data["status"])
            else:
                created = services.knowledge_base_create(
                    actor=actor_for_account(obj.account_id),
                    name=obj.name,
                    description=obj.description,
                    chunking_strategy=obj.chunking_strategy,
                    chunk_size=obj.chunk_size,
                    chunk_overlap=obj.chunk_overlap,
                )
                obj.pk = created.pk
        except EngramError as exc:
            messages.error(request, exc.message)

    def _transition(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase], to: str) -> None:
        for kb in queryset:
            try:
                services.knowledge_base_transition(kb=kb, to=to)
            except EngramError as exc:
                messages.error(request, f"{kb}: {exc.message}")

    @admin.action(description="Pause ingestion")
    def pause(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        self._transition(request, queryset, "paused")

    @admin.action(description="Activate")
    def activate(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        self._transition(request, queryset, "active")

    @admin.action(description="Archive")
    def archive(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        self._transition(request, queryset, "archived")


class DocumentUploadForm(forms.ModelForm):
    upload = forms.FileField(help_text=".txt .md .html .pdf .json")

    class Meta:
        model = Document
        fields = ["knowledge_base", "title", "doc_type", "tags", "lifecycle_state", "document_date"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
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

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        upload = form.cleaned_data["upload"]
        kb = form.cleaned_data["knowledge_base"]
        try:
            created = services.document_create(
                actor=actor_for_account(kb.account_id),
                kb=kb,
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
            obj.pk = created.pk
        except EngramError as exc:
            messages.error(request, exc.message)

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        services.document_delete(document=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            services.document_delete(document=document)

    @admin.display(description="progress")
    def progress_display(self, obj: Document) -> str:
        return f"{obj.chunks_embedded}/{obj.chunks_total}" if obj.chunks_total else "-"

    @admin.action(description="Reprocess (retry)")
    def reprocess(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            try:
                services.document_reprocess(document=document)
            except EngramError as exc:
                messages.error(request, f"{document}: {exc.message}")

    @admin.action(description="Delete with chunks and index data")
    def delete_with_index(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        self.delete_queryset(request, queryset)


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ["document", "position", "token_count", "embedding_model", "heading"]
    list_filter = ["knowledge_base", "embedding_model"]
    search_fields = ["text"]
    exclude = ["embedding"]

    @admin.display(description="heading")
    def heading(self, obj: Chunk) -> str:
        return " › ".join(obj.heading_path)


class SearchResultInline(admin.TabularInline):
    model = SearchResult
    extra = 0
    can_delete = False
    fields = (
        "rank",
        "chunk",
        "score",
        "vector_rank",
        "vector_score",
        "keyword_rank",
        "keyword_score",
    )
    readonly_fields = fields


@admin.register(SearchQuery)
class SearchQueryAdmin(ReadOnlyAdmin):
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
    list_filter = ["mode", "status", "account"]
    search_fields = ["query_text"]
    date_hierarchy = "created_at"
    inlines = [SearchResultInline]
