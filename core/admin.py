from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core import services
from core.models import Account, Agent, ApiKey, JobRun, Membership, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "is_active", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "account", "created_at"]
    list_filter = ["account"]
    search_fields = ["name"]


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ("prefix", "name", "scopes", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # keys are created on the API key page, which shows the secret once


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "account", "status", "created_at"]
    list_filter = ["status", "account"]
    search_fields = ["name", "description"]
    filter_horizontal = ["teams"]
    inlines = [ApiKeyInline]


class ApiKeyCreateForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiKey.Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=["read", "write"],
    )

    class Meta:
        model = ApiKey
        fields = ["agent", "name", "scopes", "expires_at"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "agent", "name", "scopes", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at", "agent__account"]
    search_fields = ["prefix", "name", "agent__name"]
    readonly_fields = [
        "prefix",
        "agent",
        "scopes",
        "last_used_at",
        "revoked_at",
        "created_by",
        "created_at",
    ]
    actions = ["revoke_selected"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = ApiKeyCreateForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else self.readonly_fields

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["agent", "name", "scopes", "expires_at"]
        return [
            "prefix",
            "agent",
            "name",
            "scopes",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "created_by",
            "created_at",
        ]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        key, secret = services.api_key_create(
            agent=form.cleaned_data["agent"],
            scopes=form.cleaned_data["scopes"],
            name=form.cleaned_data["name"],
            expires_at=form.cleaned_data["expires_at"],
            created_by=request.user,  # type: ignore[arg-type]
        )
        obj.pk = key.pk
        obj.prefix = key.prefix
        messages.warning(
            request,
            f"New API key (shown only now; copy it): {secret}",
        )

    @admin.action(description="Revoke selected keys")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            services.api_key_revoke(key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


@admin.register(JobRun)
class JobRunAdmin(admin.ModelAdmin):
    list_display = ["job", "status", "started_at", "duration_seconds", "counts", "short_error"]
    list_filter = ["status", "job"]
    date_hierarchy = "started_at"
    readonly_fields = ["job", "task_id", "status", "started_at", "finished_at", "counts", "error"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="error")
    def short_error(self, obj: JobRun) -> str:
        return obj.error[:120]
