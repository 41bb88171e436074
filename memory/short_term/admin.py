"""Short-term memory entries in the admin, scoped by account and role (``core.admin_base``;
docs/admin.md): everyone in an account reads them; operators (and owners) change them, always
through the services, and can run an account's consolidation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin
from memory.admin.common import JSON_EDITOR, LiveFilter, _preview, _report_text
from memory.maintenance.services import consolidation
from memory.models import (
    ShortTermEntry,
)
from memory.roles import MANAGE_MEMORY
from memory.short_term import services as short_term_services


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
        changes = self.changed(form, short_term_services.UPDATABLE_FIELDS)
        if changes:
            short_term_services.short_term_update(actor=actor, entry=original, **changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: ShortTermEntry) -> None:
        short_term_services.short_term_delete(actor=actor, entry=obj)

    @admin.action(description="Refresh TTL (expire one TTL from now)", permissions=["change"])
    def refresh_ttl(self, request: HttpRequest, queryset: QuerySet[ShortTermEntry]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset,
            lambda entry: short_term_services.short_term_entry_refresh(actor=actor, entry=entry),
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
