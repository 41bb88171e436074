"""The skill graph in the admin, scoped by account and role (``core.admin_base``;
docs/admin.md, docs/skills.md): reviewers (and owners) edit skills, review proposals and put
versions live (``skills.admin_versions``), every role reads. The review queue (proposals,
conflicts) is ``skills.admin_review``."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from skills import (
    admin_home,  # noqa: F401  # registers the panels of the admin home
    admin_review,  # noqa: F401  # registers the proposals' and conflicts' admins
    admin_versions,  # noqa: F401  # registers the versions' admin
)
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillUsage,
    SkillVersion,
    TaskAssignment,
)
from skills.roles import MANAGE_SKILLS
from skills.services import catalog as services


class SkillVersionInline(AccountScopedTabularInline):
    """Read-only here: agents add versions through the API; a version's own page (its link)
    shows its content, and reviewers activate it from the versions' list."""

    model = SkillVersion
    view_roles = READ
    can_delete = False
    fields = (
        "version",
        "change_type",
        "is_active",
        "traffic_share",
        "success_count",
        "failure_count",
        "created_at",
    )
    readonly_fields = fields
    show_change_link = True


class AgentSkillInline(AccountScopedTabularInline):
    model = AgentSkill
    view_roles = READ
    add_roles = change_roles = delete_roles = MANAGE_SKILLS
    fields = ("agent", "proficiency", "is_active", "usage_count", "last_used_at")
    readonly_fields = ("usage_count", "last_used_at")

    def service_create(self, request: HttpRequest, actor: Actor, parent: Any, form: Any) -> None:
        data = form.cleaned_data
        services.agent_skill_set(
            actor=actor,
            skill=parent,
            agent_id=data["agent"].pk,
            proficiency=data["proficiency"],
            is_active=data["is_active"],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: AgentSkill, form: Any
    ) -> None:
        data = form.cleaned_data
        services.agent_skill_set(
            actor=actor,
            skill=original.skill,
            agent_id=original.agent_id,
            proficiency=data["proficiency"],
            is_active=data["is_active"],
        )

    def service_delete(self, request: HttpRequest, actor: Actor, obj: AgentSkill) -> None:
        services.agent_skill_remove(actor=actor, assignment=obj)


@admin.register(Skill)
class SkillAdmin(AccountScopedAdmin):
    """Skills of the account. Saving goes through the skill services, which keep the search
    index, the embedding and the skill's graph node current; activating needs a reviewer."""

    view_roles = READ
    add_roles = change_roles = MANAGE_SKILLS
    list_defer = ("embedding",)
    list_display = [
        "name",
        "category",
        "status",
        "effectiveness_score",
        "health_score",
        "usage_count",
        "updated_at",
    ]
    list_filter = ["status", "category", "account"]
    list_select_related = ["account"]
    search_fields = ["name", "description"]
    inlines = [SkillVersionInline, AgentSkillInline]
    editable = ["name", "category", "status", "description", "execution_context", "tags"]
    readonly_fields = [
        "slug",
        "effectiveness_score",
        "health_score",
        "usage_count",
        "success_count",
        "last_used_at",
        "embedding_model",
        "created_at",
        "updated_at",
    ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["account", *self.editable, "procedure"]
        return ["account", *self.editable, "procedure", *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is None:
            return []
        return [*fields, "account", "procedure"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Skill]:
        return super().get_queryset(request).defer("embedding")

    def service_create(self, request: HttpRequest, actor: Actor, form: Any) -> Skill:
        data = form.cleaned_data
        return services.skill_create(
            actor=actor,
            account_id=data["account"].pk,
            name=data["name"],
            category=data["category"],
            status=data["status"],
            description=data["description"],
            execution_context=data["execution_context"] or {},
            procedure=data["procedure"],
            tags=data["tags"] or [],
        )

    def service_update(
        self, request: HttpRequest, actor: Actor, original: Skill, form: Any
    ) -> None:
        changes = self.changed(form, services.UPDATABLE_FIELDS)
        if changes:
            services.skill_update(actor=actor, skill=original, fields=changes)


# --- read-only records -----------------------------------------------------------------------


@admin.register(SkillUsage)
class SkillUsageAdmin(AccountScopedAdmin):
    """Read-only: what agents ran (written by the API, never edited)."""

    view_roles = READ
    large_table = True
    list_display = [
        "occurred_at",
        "agent",
        "task_type",
        "skill",
        "version",
        "success",
        "duration_ms",
    ]
    list_filter = ["success", "account"]
    list_select_related = ["agent", "skill", "version"]
    search_fields = ["task_type"]
    fields = readonly_fields = (
        "account",
        "agent",
        "skill",
        "version",
        "task_type",
        "success",
        "duration_ms",
        "occurred_at",
        "assignment",
        "recorded_by",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[SkillUsage]:
        return super().get_queryset(request).defer("skill__embedding", "version__content")


@admin.register(LearningProfile)
class LearningProfileAdmin(AccountScopedAdmin):
    """Read-only: derived from usage records (``skills_rebuild --profiles``)."""

    view_roles = READ
    list_display = [
        "agent",
        "task_type",
        "executions",
        "success_rate",
        "confidence",
        "total_executions",
        "last_execution_at",
    ]
    list_filter = ["account"]
    list_select_related = ["agent"]
    search_fields = ["task_type"]
    list_defer = ("window",)
    exclude = ("window",)
    readonly_fields = (
        "account",
        "agent",
        "task_type",
        "executions",
        "successes",
        "total_executions",
        "success_rate",
        "confidence",
        "last_execution_at",
        "updated_at",
    )


@admin.register(TaskAssignment)
class TaskAssignmentAdmin(AccountScopedAdmin):
    """Read-only: tasks given to agents by the API and their outcomes."""

    view_roles = READ
    list_display = ["title", "agent", "task_type", "status", "method", "score", "created_at"]
    list_filter = ["status", "method", "account"]
    list_select_related = ["agent"]
    search_fields = ["title", "task_type"]
    fields = readonly_fields = (
        "account",
        "agent",
        "requested_by",
        "title",
        "description",
        "task_type",
        "status",
        "method",
        "score",
        "expertise",
        "confidence",
        "base",
        "created_at",
        "completed_at",
    )


@admin.register(AgentTrust)
class AgentTrustAdmin(AccountScopedAdmin):
    """Read-only: agents' trust scores (moved by outcomes, decayed daily while idle)."""

    view_roles = READ
    list_display = ["agent", "trust_score", "last_active_at", "decayed_at"]
    list_filter = ["account"]
    list_select_related = ["agent"]
    fields = readonly_fields = ("account", "agent", "trust_score", "last_active_at", "decayed_at")
