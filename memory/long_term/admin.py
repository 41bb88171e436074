"""Long-term memory in the admin (contexts with their grants, entries with their history,
snapshots, the access log): what agents remember, so only operators (and owners) see it
(``core.admin_base``; docs/admin.md). Changes go through the services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.actors import Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from core.errors import EngramError
from memory.admin.common import JSON_EDITOR, _report_text
from memory.long_term import selectors as ltm_selectors
from memory.long_term import services as ltm_services
from memory.maintenance.services import consolidation
from memory.maintenance.services import jobs as maintenance_jobs
from memory.models import (
    MemoryAccessLog,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryMaintenanceReport,
    MemorySnapshot,
)
from memory.roles import MANAGE_MEMORY

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
        "change_policy",
        "entry_count",
        "archived_at",
    ]
    list_filter = ["context_type", "scope", "change_policy", "account"]
    list_select_related = ["account", "owner"]
    search_fields = ["name", "description"]
    inlines = [MemoryContextGrantInline]
    actions = [
        "archive",
        "unarchive",
        "run_consolidation",
        "preview_consolidation",
        "run_cluster_maintenance",
        "preview_cluster_maintenance",
    ]
    _fields = [
        "account",
        "name",
        "context_type",
        "scope",
        "team",
        "description",
        "metadata",
        "change_policy",
        "agent_write_policy",
    ]
    _created_only = ["account", "scope", "team"]
    _stats = ["owner", "entry_count", "total_terms", "archived_at", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._fields if obj is None else [*self._fields, *self._stats]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else [*self._created_only, *self._stats]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The types people may choose (agent memories and conversations are Engram's to
        make), plus the context's own when it is one of those."""
        form = super().get_form(request, obj, change=change, **kwargs)
        field = form.base_fields.get("context_type")
        if field is not None:
            current = obj.context_type if obj is not None else None
            field.choices = [
                (value, label)
                for value, label in MemoryContext.ContextType.choices
                if value not in ltm_services.RESERVED_TYPES or value == current
            ]
            if obj is None:
                field.initial = ltm_services.DEFAULT_CONTEXT_TYPE
        return form

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
            change_policy=data["change_policy"],
            agent_write_policy=data["agent_write_policy"],
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

    def _cluster_maintenance(
        self, request: HttpRequest, queryset: QuerySet[MemoryContext], dry_run: bool
    ) -> None:
        """One job per account of the selected contexts, queued for a worker (a run may take
        minutes: never in this request); each job linked in a message, its report reachable
        from the job's page once the run has ended."""
        actor = self.actor(request)
        by_account: dict[int, list[int]] = {}
        for context in queryset.order_by("pk"):
            by_account.setdefault(context.account_id, []).append(context.pk)
        for account_id, context_ids in by_account.items():
            try:
                job = maintenance_jobs.maintenance_job_enqueue(
                    actor=actor,
                    trigger=MemoryMaintenanceReport.Trigger.ADMIN,
                    dry_run=dry_run,
                    context_ids=context_ids,
                    account_id=account_id,
                )
            except EngramError as exc:
                messages.error(request, exc.message)
                continue
            link = reverse("admin:memory_maintenancejob_change", args=[job.pk])
            self.message_user(
                request,
                format_html(
                    "Cluster maintenance{} of {} context(s) queued as "
                    '<a href="{}">job {}</a>: its report is linked there once the run ends.',
                    " (dry run)" if dry_run else "",
                    len(context_ids),
                    link,
                    job.pk,
                ),
            )

    @admin.action(
        description="Run cluster maintenance now (merge near-duplicate memories)",
        permissions=["change"],
    )
    def run_cluster_maintenance(
        self, request: HttpRequest, queryset: QuerySet[MemoryContext]
    ) -> None:
        self._cluster_maintenance(request, queryset, dry_run=False)

    @admin.action(description="Preview cluster maintenance (dry run)", permissions=["change"])
    def preview_cluster_maintenance(
        self, request: HttpRequest, queryset: QuerySet[MemoryContext]
    ) -> None:
        self._cluster_maintenance(request, queryset, dry_run=True)


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
