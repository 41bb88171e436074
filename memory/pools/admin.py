"""Shared memory pools in the admin, with their grants and bulletin events, scoped by account and
role (``core.admin_base``; docs/admin.md): everyone in an account reads them; operators (and
owners) change them, always through the services (the JSON editor writes with compare-and-set)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from memory.admin.common import JSON_EDITOR, LiveFilter, _preview
from memory.models import (
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
)
from memory.pools import data_services as pool_data_services
from memory.pools import services as pool_services
from memory.roles import MANAGE_MEMORY


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
        pool_services.pool_grant_set(
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
            pool_services.pool_grant_revoke(actor=actor, pool=pool, agent_id=original.agent_id)
        pool_services.pool_grant_set(
            actor=actor,
            pool=pool,
            agent_id=form.cleaned_data["agent"].pk,
            level=form.cleaned_data["level"],
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryPoolGrant) -> None:
        pool_services.pool_grant_revoke(
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
    list_filter = ["pool_type", "scope", "public_read", "change_policy", LiveFilter, "account"]
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
            "change_policy",
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
        return pool_services.pool_create(
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
            change_policy=data["change_policy"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: MemoryPool, form: Any
    ) -> None:
        # Data first, against the version the person saw; settings changes bump it too.
        if "data" in form.changed_data:
            pool_data_services.pool_data_write(
                actor=actor,
                pool=original,
                path="",
                value=form.cleaned_data["data"],
                expected_version=form.cleaned_data.get("loaded_version"),
            )
        changes = self.changed(form, pool_services.UPDATABLE_FIELDS)
        if changes:
            pool_services.pool_update(actor=actor, pool=original, **changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: MemoryPool) -> None:
        pool_services.pool_delete(actor=actor, pool=obj)


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
