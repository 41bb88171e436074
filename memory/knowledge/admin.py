"""Knowledge items in the admin (docs/admin.md): bases, and items with their versions, sources
and relationships, per account on the admin base (``core.admin_base``). Everyone in an account
reads them; operators (and owners) write, always through ``memory.knowledge.services``: saving
an item's content writes a new version, "Invalidate" sets its ``valid_to``. Items are never
deleted one by one (their history is their provenance); deleting a base deletes its items."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.actors import READ, Actor, actor_for_account
from core.admin_base import AccountScopedAdmin
from memory.knowledge import selectors, services
from memory.long_term.context_access import derived_visible
from memory.models import KnowledgeItem, KnowledgeStore
from memory.roles import MANAGE_MEMORY


@admin.register(KnowledgeStore)
class KnowledgeStoreAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_MEMORY
    summarize_deletions = True
    list_display = ["name", "description", "account", "knowledge_type", "item_count", "created_at"]
    list_filter = ["knowledge_type", "account"]
    list_select_related = ["account"]
    search_fields = ["name", "description"]
    _fields = ["account", "name", "knowledge_type", "description"]
    _stats = ["created_by", "item_count", "total_terms", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._fields if obj is None else [*self._fields, *self._stats]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # The name is part of every item's URL and graph node: fixed once made.
        return [] if obj is None else ["account", "name", "knowledge_type", *self._stats]

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> KnowledgeStore:
        data = form.cleaned_data
        return services.store_create(
            actor=actor,
            account_id=data["account"].pk,
            name=data["name"],
            knowledge_type=data["knowledge_type"],
            description=data["description"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: KnowledgeStore, form: Any
    ) -> None:
        changes = self.changed(form, ("description",))
        if changes:
            services.store_update(actor=actor, store=original, fields=changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: KnowledgeStore) -> None:
        services.store_delete(actor=actor, store=obj)


class KnowledgeItemForm(forms.ModelForm):
    class Meta:
        model = KnowledgeItem
        fields = ["content", "content_type", "metadata", "confidence"]


@admin.register(KnowledgeItem)
class KnowledgeItemAdmin(AccountScopedAdmin):
    """The current version of each item; its change view shows every version with its
    sources, and the item's relationships. Saving writes a new version."""

    view_roles = READ
    change_roles = MANAGE_MEMORY
    large_table = True
    form = KnowledgeItemForm
    list_display = [
        "key",
        "store",
        "short_content",
        "version",
        "confidence",
        "valid_to",
        "created_at",
    ]
    list_filter = ["store"]
    list_select_related = ["store"]
    list_defer = ("embedding",)
    search_fields = ["key", "content"]
    actions = ["invalidate"]
    readonly_fields = [
        "account",
        "store",
        "key",
        "version",
        "valid_from",
        "valid_to",
        "embedding_model",
        "author",
        "created_at",
        "versions",
        "relationships",
    ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            *self.readonly_fields[:4],
            *KnowledgeItemForm.Meta.fields,
            *self.readonly_fields[4:],
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeItem]:
        # Derived data keeps the visibility of its source: an item extracted from a
        # conversation is for the people who manage memory (docs/architecture.md, rule 11).
        queryset = super().get_queryset(request).filter(derived_visible(self.actor(request)))
        match = request.resolver_match
        if match is not None and (match.url_name or "").endswith("_changelist"):
            queryset = queryset.filter(is_current=True)
        return queryset

    @admin.display(description="content")
    def short_content(self, obj: KnowledgeItem) -> str:
        return obj.content[:80]

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        found = super().get_object(request, object_id, from_field)
        if found is not None:  # who reads it: its versions and relationships are theirs
            found.viewer = self.actor(request)
        return found

    @admin.display(description="versions and their sources")
    def versions(self, obj: KnowledgeItem) -> str:
        history = (
            KnowledgeItem.objects.filter(lineage=obj.lineage)
            .filter(derived_visible(_viewer(obj)))
            .defer("embedding")
            .prefetch_related("sources")
            .order_by("-version")
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    version.version,
                    "current" if version.is_current else "",
                    version.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    version.content[:200],
                    ", ".join(
                        f"{s.source_type}:{s.source_id} ({s.reliability:g})"
                        for s in version.sources.all()
                    ),
                )
                for version in history
            ),
        )
        return format_html("<table>{}</table>", rows)

    @admin.display(description="relationships")
    def relationships(self, obj: KnowledgeItem) -> str:
        if obj.graph_node_id is None:
            return "-"
        found = selectors.node_relationships(obj, _viewer(obj))
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
            (
                (
                    r.direction,
                    r.edge.relation_type,
                    (r.target if r.direction == "outgoing" else r.source).store.name,
                    (r.target if r.direction == "outgoing" else r.source).key,
                    f"{r.strength:g}",
                )
                for r in found
            ),
        )
        return format_html("<table>{}</table>", rows)

    def service_update(
        self, request: HttpRequest, actor: Actor, original: KnowledgeItem, form: Any
    ) -> None:
        data = form.cleaned_data
        if self.changed(form, KnowledgeItemForm.Meta.fields):
            services.knowledge_item_put(
                actor=actor,
                base=original.store.name,
                key=original.key,
                content=data["content"],
                content_type=data["content_type"],
                metadata=data["metadata"],
                confidence=data["confidence"],
                account_id=original.account_id,
                source_context_id=original.source_context_id,
            )

    @admin.action(
        description="Invalidate (valid_to now; kept, out of searches)", permissions=["change"]
    )
    def invalidate(self, request: HttpRequest, queryset: QuerySet[KnowledgeItem]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset.filter(is_current=True, valid_to__isnull=True),
            lambda item: services.knowledge_item_invalidate(actor=actor, item=item),
            "Invalidated",
        )


def _viewer(obj: KnowledgeItem) -> Actor:
    """The person viewing ``obj`` (set by ``get_object``); without one, its account's tool
    (never reached by a page, which always reads through ``get_object``)."""
    viewer = getattr(obj, "viewer", None)
    return viewer if isinstance(viewer, Actor) else actor_for_account(obj.account_id)
