"""Short-term memory entries and shared pools (with their grants and bulletin events), scoped by
account and role (``core.admin_base``; docs/admin.md). Everyone in an account reads them;
operators (and owners) change them, always through the services.

Long-term memory (contexts with their grants, entries with their history, snapshots, the
access log) holds what agents remember: only operators (and owners) see it."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from memory import services
from memory.models import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
    MemorySnapshot,
    ShortTermEntry,
)
from memory.roles import MANAGE_MEMORY
from memory.selectors import long_term as ltm_selectors
from memory.services import consolidation
from memory.services import long_term as ltm_services

JSON_EDITOR = forms.Textarea(attrs={"rows": 20, "cols": 100, "style": "font-family: monospace"})


def _preview(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class LiveFilter(admin.SimpleListFilter):
    """Live or expired (not yet deleted by the clean-up job)."""

    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [("live", "Live"), ("expired", "Expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "live":
            return queryset.exclude(expires_at__lte=now)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        return queryset


class ShortTermEntryForm(forms.ModelForm):
    class Meta:
        model = ShortTermEntry
        fields = ["memory_type", "value"]
        widgets = {"value": JSON_EDITOR}


@admin.register(ShortTermEntry)
class ShortTermEntryAdmin(AccountScopedAdmin):
    view_roles = READ
    change_roles = delete_roles = MANAGE_MEMORY
    large_table = True
    form = ShortTermEntryForm
    list_display = [
        "key",
        "session_id",
        "agent",
        "memory_type",
        "value_preview",
        "access_count",
        "expires_at",
        "is_live",
    ]
    list_filter = ["memory_type", LiveFilter, "agent"]
    list_select_related = ["agent"]
    search_fields = ["key", "session_id"]
    readonly_fields = [
        "account",
        "agent",
        "session_id",
        "key",
        "ttl_seconds",
        "expires_at",
        "access_count",
        "last_accessed_at",
        "created_at",
        "updated_at",
    ]
    fields = [*readonly_fields[:4], "memory_type", "value", *readonly_fields[4:]]
    actions = ["refresh_ttl", "run_consolidation"]

    @admin.display(description="value")
    def value_preview(self, obj: ShortTermEntry) -> str:
        return _preview(obj.value)

    @admin.display(description="live", boolean=True)
    def is_live(self, obj: ShortTermEntry) -> bool:
        return obj.expires_at > timezone.now()

    def service_update(
        self, request: HttpRequest, actor: Actor, original: ShortTermEntry, form: Any
    ) -> None:
        changes = self.changed(form, services.SHORT_TERM_UPDATABLE_FIELDS)
        if changes:
            services.short_term_update(actor=actor, entry=original, **changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: ShortTermEntry) -> None:
        services.short_term_delete(actor=actor, entry=obj)

    @admin.action(description="Refresh TTL (expire one TTL from now)", permissions=["change"])
    def refresh_ttl(self, request: HttpRequest, queryset: QuerySet[ShortTermEntry]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset,
            lambda entry: services.short_term_entry_refresh(actor=actor, entry=entry),
            "Refreshed",
        )

    @admin.action(
        description="Run memory consolidation now (for the selected entries' accounts)",
        permissions=["change"],
    )
    def run_consolidation(self, request: HttpRequest, queryset: QuerySet[ShortTermEntry]) -> None:
        actor = self.actor(request)
        for account_id in sorted(set(queryset.values_list("account_id", flat=True))):
            actor.require(account_id, MANAGE_MEMORY)
            report = consolidation.consolidate(account_id=account_id)
            self.message_user(
                request, f"Consolidation of account {account_id}: {_report_text(report)}"
            )


def _report_text(report: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        f"{job}: " + ", ".join(f"{name} {n}" for name, n in counts.items() if name != "dry_run")
        for job, counts in report.items()
    )


class MemoryPoolGrantInline(AccountScopedTabularInline):
    model = MemoryPoolGrant
    account_lookup = "pool__account"
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_MEMORY
    fields = ["agent", "level", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryPoolGrant]:
        return super().get_queryset(request).select_related("agent")

    def _pool(self, request: HttpRequest, pool: MemoryPool) -> MemoryPool:
        return MemoryPool.objects.get(pk=pool.pk)

    def service_create(self, request: HttpRequest, actor: Actor, parent: Any, form: Any) -> None:
        services.pool_grant_set(
            actor=actor,
            pool=self._pool(request, parent),
            agent_id=form.cleaned_data["agent"].pk,
            level=form.cleaned_data["level"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: MemoryPoolGrant, form: Any
    ) -> None:
        pool = self._pool(request, original.pool)
        if "agent" in form.changed_data:
            services.pool_grant_revoke(actor=actor, pool=pool, agent_id=original.agent_id)
        services.pool_grant_set(
            actor=actor,
            pool=pool,
            agent_id=form.cleaned_data["agent"].pk,
            level=form.cleaned_data["level"],
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryPoolGrant) -> None:
        services.pool_grant_revoke(
            actor=actor, pool=self._pool(request, obj.pool), agent_id=obj.agent_id
        )


class MemoryPoolForm(forms.ModelForm):
    # The version the person saw: saving data over a newer version (an agent wrote meanwhile)
    # is refused with version_conflict instead of undoing that write.
    loaded_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = MemoryPool
        fields = [
            "account",
            "pool_id",
            "name",
            "pool_type",
            "scope",
            "public_read",
            "data",
            "retention_policy",
            "expires_at",
            "persist_across_executions",
            "workflow_run_id",
            "workflow_kind",
        ]
        widgets = {"data": JSON_EDITOR}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["loaded_version"].initial = self.instance.version


@admin.register(MemoryPool)
class MemoryPoolAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_MEMORY
    form = MemoryPoolForm
    list_display = [
        "pool_id",
        "name",
        "account",
        "pool_type",
        "scope",
        "public_read",
        "version",
        "data_size_bytes",
        "expires_at",
    ]
    list_filter = ["pool_type", "scope", "public_read", LiveFilter, "account"]
    list_select_related = ["account"]
    list_defer = ("data",)
    search_fields = ["pool_id", "name", "workflow_run_id"]
    inlines = [MemoryPoolGrantInline]
    _created_only = ["account", "pool_id", "pool_type", "workflow_run_id", "workflow_kind"]
    _derived = ["owner", "version", "data_size_bytes", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = [
            "account",
            "pool_id",
            "name",
            "pool_type",
            "scope",
            "public_read",
            "data",
            "retention_policy",
            "expires_at",
            "persist_across_executions",
            "workflow_run_id",
            "workflow_kind",
        ]
        if obj is None:
            return fields
        return [*fields, "loaded_version", *self._derived]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        return [*self._created_only, *self._derived]

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> MemoryPool:
        data = form.cleaned_data
        return services.pool_create(
            actor=actor,
            account_id=data["account"].pk,
            pool_id=data["pool_id"],
            name=data["name"],
            pool_type=data["pool_type"],
            scope=data["scope"],
            data=data["data"],
            public_read=data["public_read"],
            retention_policy=data["retention_policy"],
            expires_at=data["expires_at"],
            persist_across_executions=data["persist_across_executions"],
            workflow_run_id=data["workflow_run_id"],
            workflow_kind=data["workflow_kind"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: MemoryPool, form: Any
    ) -> None:
        # Data first, against the version the person saw; settings changes bump it too.
        if "data" in form.changed_data:
            services.pool_data_write(
                actor=actor,
                pool=original,
                path="",
                value=form.cleaned_data["data"],
                expected_version=form.cleaned_data.get("loaded_version"),
            )
        changes = self.changed(form, services.POOL_UPDATABLE_FIELDS)
        if changes:
            services.pool_update(actor=actor, pool=original, **changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryPool) -> None:
        services.pool_delete(actor=actor, pool=obj)


@admin.register(MemoryPoolEvent)
class MemoryPoolEventAdmin(AccountScopedAdmin):
    """Read-only: the bulletin writes agents made in pools."""

    view_roles = READ
    large_table = True
    list_display = ["created_at", "pool", "path", "action", "version", "value_preview", "agent"]
    list_filter = ["action", "pool"]
    list_select_related = ["pool", "agent"]
    search_fields = ["path"]
    fields = readonly_fields = (
        "created_at",
        "account",
        "pool",
        "version",
        "path",
        "action",
        "value",
        "agent",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryPoolEvent]:
        return super().get_queryset(request).defer("pool__data")

    @admin.display(description="value")
    def value_preview(self, obj: MemoryPoolEvent) -> str:
        return _preview(obj.value)


# --- long-term memory ------------------------------------------------------------------------


class MemoryContextGrantInline(AccountScopedTabularInline):
    model = MemoryContextGrant
    account_lookup = "context__account"
    view_roles = add_roles = change_roles = delete_roles = MANAGE_MEMORY
    fields = ["agent", "level", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryContextGrant]:
        return super().get_queryset(request).select_related("agent")

    def _context(self, context: MemoryContext) -> MemoryContext:
        return MemoryContext.objects.get(pk=context.pk)

    def service_create(self, request: HttpRequest, actor: Actor, parent: Any, form: Any) -> None:
        ltm_services.context_grant(
            actor=actor,
            context=self._context(parent),
            agent_id=form.cleaned_data["agent"].pk,
            level=form.cleaned_data["level"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: MemoryContextGrant, form: Any
    ) -> None:
        context = self._context(original.context)
        if "agent" in form.changed_data:
            ltm_services.context_revoke(actor=actor, context=context, agent_id=original.agent_id)
        ltm_services.context_grant(
            actor=actor,
            context=context,
            agent_id=form.cleaned_data["agent"].pk,
            level=form.cleaned_data["level"],
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryContextGrant) -> None:
        ltm_services.context_revoke(
            actor=actor, context=self._context(obj.context), agent_id=obj.agent_id
        )


@admin.register(MemoryContext)
class MemoryContextAdmin(AccountScopedAdmin):
    view_roles = add_roles = change_roles = delete_roles = MANAGE_MEMORY
    summarize_deletions = True
    list_display = [
        "name",
        "description",
        "account",
        "context_type",
        "scope",
        "owner",
        "entry_count",
        "archived_at",
    ]
    list_filter = ["context_type", "scope", "account"]
    list_select_related = ["account", "owner"]
    search_fields = ["name", "description"]
    inlines = [MemoryContextGrantInline]
    actions = ["archive", "unarchive", "run_consolidation", "preview_consolidation"]
    _fields = ["account", "name", "context_type", "scope", "team", "description", "metadata"]
    _created_only = ["account", "scope", "team"]
    _stats = ["owner", "entry_count", "total_terms", "archived_at", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._fields if obj is None else [*self._fields, *self._stats]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else [*self._created_only, *self._stats]

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> MemoryContext:
        data = form.cleaned_data
        return ltm_services.context_create(
            actor=actor,
            account_id=data["account"].pk,
            name=data["name"],
            context_type=data["context_type"],
            scope=data["scope"],
            team_id=data["team"].pk if data.get("team") else None,
            description=data["description"],
            metadata=data["metadata"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: MemoryContext, form: Any
    ) -> None:
        changes = self.changed(form, ltm_services.CONTEXT_UPDATABLE)
        if changes:
            ltm_services.context_update(actor=actor, context=original, fields=changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryContext) -> None:
        ltm_services.context_delete(actor=actor, context=obj)

    def _archive(self, request: HttpRequest, queryset: QuerySet[MemoryContext], on: bool) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset,
            lambda context: ltm_services.context_archive(actor=actor, context=context, archived=on),
            "Archived" if on else "Unarchived",
        )

    @admin.action(description="Archive (out of searches, no new entries)", permissions=["change"])
    def archive(self, request: HttpRequest, queryset: QuerySet[MemoryContext]) -> None:
        self._archive(request, queryset, True)

    @admin.action(description="Unarchive", permissions=["change"])
    def unarchive(self, request: HttpRequest, queryset: QuerySet[MemoryContext]) -> None:
        self._archive(request, queryset, False)

    def _consolidate(
        self, request: HttpRequest, queryset: QuerySet[MemoryContext], dry_run: bool
    ) -> None:
        actor = self.actor(request)
        for context in queryset.order_by("pk"):
            actor.require(context.account_id, MANAGE_MEMORY)
            report = consolidation.consolidate(
                account_id=context.account_id, context_id=context.pk, dry_run=dry_run
            )
            verb = "would change" if dry_run else "changed"
            self.message_user(
                request, f"Consolidation of {context.name} {verb}: {_report_text(report)}"
            )

    @admin.action(
        description="Run consolidation now (deduplicate, archive rotten, decay importance)",
        permissions=["change"],
    )
    def run_consolidation(self, request: HttpRequest, queryset: QuerySet[MemoryContext]) -> None:
        self._consolidate(request, queryset, dry_run=False)

    @admin.action(description="Preview consolidation (dry run)", permissions=["change"])
    def preview_consolidation(
        self, request: HttpRequest, queryset: QuerySet[MemoryContext]
    ) -> None:
        self._consolidate(request, queryset, dry_run=True)


class MemoryEntryForm(forms.ModelForm):
    class Meta:
        model = MemoryEntry
        fields = [
            "content",
            "data",
            "entry_type",
            "source",
            "memory_type",
            "tags",
            "metadata",
            "occurred_at",
            "importance",
            "confidence",
        ]
        widgets = {"data": JSON_EDITOR}


@admin.register(MemoryEntry)
class MemoryEntryAdmin(AccountScopedAdmin):
    """The current version of each memory; its change view shows every version. Saving a
    content change writes a new version (services.entry_update)."""

    view_roles = change_roles = delete_roles = MANAGE_MEMORY
    large_table = True
    form = MemoryEntryForm
    list_display = [
        "__str__",
        "context",
        "entry_type",
        "memory_type",
        "version",
        "importance",
        "access_count",
        "archived_at",
        "created_at",
    ]
    list_filter = ["entry_type", "memory_type", "source", "context"]
    list_select_related = ["context"]
    list_defer = ("embedding",)
    search_fields = ["content", "thread"]
    readonly_fields = [
        "account",
        "context",
        "lineage",
        "version",
        "thread",
        "position",
        "embedding_model",
        "access_count",
        "last_accessed_at",
        "archived_at",
        "author",
        "created_at",
        "versions",
    ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [*self.readonly_fields[:4], *MemoryEntryForm.Meta.fields, *self.readonly_fields[4:]]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryEntry]:
        queryset = super().get_queryset(request)
        match = request.resolver_match
        if match is not None and (match.url_name or "").endswith("_changelist"):
            queryset = queryset.filter(is_current=True)
        return queryset

    @admin.display(description="versions")
    def versions(self, obj: MemoryEntry) -> str:
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    version.version,
                    "current" if version.is_current else "",
                    version.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    str(version)[:200],
                )
                for version in ltm_selectors.entry_history(obj).defer("embedding")
            ),
        )
        return format_html("<table>{}</table>", rows)

    def service_update(
        self, request: HttpRequest, actor: Actor, original: MemoryEntry, form: Any
    ) -> None:
        changes = self.changed(form, (*ltm_services.ENTRY_VERSIONED, *ltm_services.ENTRY_IN_PLACE))
        if changes:
            ltm_services.entry_update(actor=actor, entry=original, fields=changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryEntry) -> None:
        ltm_services.entry_delete(actor=actor, entry=obj)


@admin.register(MemorySnapshot)
class MemorySnapshotAdmin(AccountScopedAdmin):
    """Read-only: restoring one writes the context back through snapshot_restore."""

    view_roles = change_roles = MANAGE_MEMORY
    list_display = ["__str__", "context", "entry_count", "created_by", "created_at"]
    list_filter = ["context"]
    list_select_related = ["context"]
    list_defer = ("entries",)
    fields = readonly_fields = (
        "account",
        "context",
        "name",
        "entry_count",
        "created_by",
        "created_at",
    )
    actions = ["restore"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing to edit; the permission only guards the restore action.
        return obj is None and super().has_change_permission(request, obj)

    @admin.action(description="Restore the context to this snapshot", permissions=["change"])
    def restore(self, request: HttpRequest, queryset: QuerySet[MemorySnapshot]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            MemorySnapshot.objects.filter(pk__in=queryset.values("pk")),
            lambda snapshot: ltm_services.snapshot_restore(actor=actor, snapshot=snapshot),
            "Restored",
        )


@admin.register(MemoryAccessLog)
class MemoryAccessLogAdmin(AccountScopedAdmin):
    """Read-only: who read or found which long-term memories."""

    view_roles = MANAGE_MEMORY
    large_table = True
    list_display = ["created_at", "action", "entry", "context", "actor", "query", "result_count"]
    list_filter = ["action", "context"]
    list_select_related = ["entry", "context"]
    search_fields = ["query", "actor"]
    fields = readonly_fields = (
        "created_at",
        "account",
        "context",
        "entry",
        "agent",
        "actor",
        "action",
        "query",
        "result_count",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryAccessLog]:
        return super().get_queryset(request).defer("entry__embedding")


# Conversations and knowledge items have their own modules (registered on import).
from memory.admin import conversations, knowledge  # noqa: E402, F401
