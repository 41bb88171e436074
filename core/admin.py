"""Accounts, members, teams, agents, keys and the audit log, scoped by account and role
(``core.admin_base``; docs/admin.md). Installation-wide admins (schedules, job runs, people,
login records) are re-registered here with their gates."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from core import (
    admin_home,  # noqa: F401  # registers the panels of the admin home
    services,
)
from core.actors import MANAGE_ACCOUNT, READ, Actor
from core.admin_base import (
    SUPERUSERS_ONLY,
    AccountScopedAdmin,
    AccountScopedTabularInline,
    InstallationAdminMixin,
    SuperuserOnlyAdminMixin,
    forget_actor,
    reregister,
)
from core.embeddings import admin as embeddings_admin  # noqa: F401 - registers its admin
from core.models import Account, Agent, ApiKey, AuditEvent, JobRun, Membership, Team
from core.portability.admin import export_accounts  # also registers the jobs' admin


class MembershipForm(forms.ModelForm):
    # A username, not a list of every person of the installation: owners of one account must
    # not browse the others' people. Create people with ``manage.py create_member``.
    user = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True),
        to_field_name="username",
        widget=forms.TextInput(attrs={"placeholder": "username"}),
        label="Username",
        error_messages={"invalid_choice": "No active user has this username."},
    )

    class Meta:
        model = Membership
        fields = ["user", "role"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["user"] = self.instance.user.get_username()


class MembershipInline(AccountScopedTabularInline):
    model = Membership
    form = MembershipForm
    view_roles = add_roles = change_roles = delete_roles = MANAGE_ACCOUNT
    unscoped_choice_fields = ("user",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Membership]:
        return super().get_queryset(request).select_related("user")

    def service_create(self, request: HttpRequest, actor: Actor, parent: Any, form: Any) -> None:
        services.membership_grant(
            actor=actor,
            account=Account.objects.get(pk=parent.pk),
            user=form.cleaned_data["user"],
            role=form.cleaned_data["role"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: Membership, form: Any
    ) -> None:
        if "user" in form.changed_data:
            # Another person: grant first, so an account never passes through no owner.
            services.membership_grant(
                actor=actor,
                account=original.account,
                user=form.cleaned_data["user"],
                role=form.cleaned_data["role"],
            )
            services.membership_revoke(actor=actor, membership=original)
        elif "role" in form.changed_data:
            services.membership_update(
                actor=actor, membership=original, role=form.cleaned_data["role"]
            )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Membership) -> None:
        services.membership_revoke(actor=actor, membership=obj)


@admin.register(Account)
class AccountAdmin(AccountScopedAdmin):
    account_lookup = "pk"
    view_roles = READ
    add_roles = SUPERUSERS_ONLY
    change_roles = MANAGE_ACCOUNT  # owners rename; slug and activity stay with superusers
    delete_roles = SUPERUSERS_ONLY
    summarize_deletions = True
    list_display = ["name", "slug", "is_active", "created_at"]
    search_fields = ["name", "slug"]
    fields = ["name", "slug", "is_active"]
    inlines = [MembershipInline]
    actions = [export_accounts]

    def get_prepopulated_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return {"slug": ["name"]} if obj is None else {}

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and not self.is_superuser(request):
            fields += ["slug", "is_active"]
        return fields

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> Account:
        account = services.account_create(
            actor=actor, name=form.cleaned_data["name"], slug=form.cleaned_data["slug"]
        )
        forget_actor(request)  # the memberships inline acts in the new account
        if not form.cleaned_data["is_active"]:
            services.account_update(actor=self.actor(request), account=account, is_active=False)
        return account

    def service_update(
        self, request: HttpRequest, actor: Actor, original: Account, form: Any
    ) -> None:
        services.account_update(
            actor=actor,
            account=original,
            **self.changed(form, services.ACCOUNT_UPDATABLE_FIELDS),
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Account) -> None:
        services.account_delete(actor=actor, account=obj)

    def deletion_summary(self, obj: Account) -> str:
        return f"Account {obj} with all its data (agents, keys, knowledge bases, documents, …)"


@admin.register(Team)
class TeamAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_ACCOUNT
    list_display = ["name", "account", "created_at"]
    list_filter = ["account"]
    list_select_related = ["account"]
    search_fields = ["name"]
    fields = ["account", "name", "description"]

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> Team:
        return services.team_create(
            actor=actor,
            account=form.cleaned_data["account"],
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
        )

    def service_update(self, request: HttpRequest, actor: Actor, original: Team, form: Any) -> None:
        services.team_update(
            actor=actor, team=original, **self.changed(form, services.TEAM_UPDATABLE_FIELDS)
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Team) -> None:
        services.team_delete(actor=actor, team=obj)


class ApiKeyInline(AccountScopedTabularInline):
    model = ApiKey
    account_lookup = "agent__account"
    view_roles = MANAGE_ACCOUNT  # credentials: owners only
    can_delete = False
    fields = ("prefix", "name", "scopes", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = fields
    show_change_link = True
    # Keys are created on the API key page, which shows the secret once.


@admin.register(Agent)
class AgentAdmin(AccountScopedAdmin):
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_ACCOUNT
    list_display = ["name", "account", "status", "created_at"]
    list_filter = ["status", "account"]
    list_select_related = ["account"]
    search_fields = ["name", "description"]
    fields = ["account", "name", "description", "status", "metadata", "teams"]
    filter_horizontal = ["teams"]
    inlines = [ApiKeyInline]

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> Agent:
        agent = services.agent_create(
            actor=actor,
            account=form.cleaned_data["account"],
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            metadata=form.cleaned_data["metadata"],
            teams=form.cleaned_data["teams"],
        )
        if form.cleaned_data["status"] != agent.status:
            services.agent_update(actor=actor, agent=agent, status=form.cleaned_data["status"])
        return agent

    def service_update(
        self, request: HttpRequest, actor: Actor, original: Agent, form: Any
    ) -> None:
        services.agent_update(
            actor=actor,
            agent=original,
            teams=form.cleaned_data["teams"] if "teams" in form.changed_data else None,
            **self.changed(form, services.AGENT_UPDATABLE_FIELDS),
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: Agent) -> None:
        services.agent_delete(actor=actor, agent=obj)


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
class ApiKeyAdmin(AccountScopedAdmin):
    account_lookup = "agent__account"
    # Keys are credentials for the whole account's data: owners only, even to list them.
    view_roles = add_roles = change_roles = delete_roles = MANAGE_ACCOUNT
    list_display = ["prefix", "agent", "name", "scopes", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at", "agent__account"]
    list_select_related = ["agent"]
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

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> ApiKey:
        key, secret = services.api_key_create(
            actor=actor,
            agent=form.cleaned_data["agent"],
            scopes=form.cleaned_data["scopes"],
            name=form.cleaned_data["name"],
            expires_at=form.cleaned_data["expires_at"],
        )
        form.instance.prefix = key.prefix
        messages.warning(request, f"New API key (shown only now; copy it): {secret}")
        return key

    def service_update(
        self, request: HttpRequest, actor: Actor, original: ApiKey, form: Any
    ) -> None:
        changes = self.changed(form, ("name", "expires_at"))
        if changes:
            services.api_key_update(actor=actor, key=original, **changes)

    def service_delete(self, request: HttpRequest, actor: Actor, obj: ApiKey) -> None:
        services.api_key_delete(actor=actor, key=obj)

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset.select_related("agent"),
            lambda key: services.api_key_revoke(actor=actor, key=key),
            "Revoked",
        )


@admin.register(AuditEvent)
class AuditEventAdmin(AccountScopedAdmin):
    """Read-only. Owners read their accounts' events; installation-wide events (no account)
    are for superusers."""

    view_roles = MANAGE_ACCOUNT
    large_table = True
    list_display = ["created_at", "actor_label", "action", "target_type", "target_id", "account"]
    list_select_related = ["account"]
    search_fields = ["action", "target_type", "target_id", "actor_label"]
    fields = readonly_fields = (
        "created_at",
        "account",
        "actor_label",
        "agent",
        "user",
        "action",
        "target_type",
        "target_id",
        "changes",
    )


@admin.register(JobRun)
class JobRunAdmin(InstallationAdminMixin, admin.ModelAdmin):
    """Job runs span accounts: superusers and the installation operators group read them."""

    list_display = ["job", "status", "started_at", "duration_seconds", "counts", "short_error"]
    list_filter = ["status", "job"]
    date_hierarchy = "started_at"
    readonly_fields = ["job", "task_id", "status", "started_at", "finished_at", "counts", "error"]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the prune job removes old runs

    @admin.display(description="error")
    def short_error(self, obj: JobRun) -> str:
        return obj.error[:120]


def _gate_third_party_admins() -> None:
    """Schedules belong to installation operators; people, groups and login records to
    superusers. Their apps register plain admins (model permissions); replace them."""
    for model in (PeriodicTask, IntervalSchedule, CrontabSchedule, SolarSchedule, ClockedSchedule):
        reregister(model, InstallationAdminMixin)
    # A schedule's list says what each job does (its description, written by core.periodic).
    schedules = admin.site._registry[PeriodicTask]
    shown = list(schedules.list_display)
    schedules.list_display = [*shown[:1], "description", *shown[1:]]
    for model in (User, Group):
        reregister(model, SuperuserOnlyAdminMixin)
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    for axes_model in (AccessAttempt, AccessLog, AccessFailureLog):
        if admin.site.is_registered(axes_model):
            reregister(axes_model, SuperuserOnlyAdminMixin)


_gate_third_party_admins()
