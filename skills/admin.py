"""The skill graph in the admin, scoped by account and role (``core.admin_base``;
docs/admin.md, docs/skills.md): reviewers (and owners) edit skills and review proposals, every
role reads."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from skills.models import AgentSkill, Skill, SkillVersion
from skills.roles import MANAGE_SKILLS
from skills.services import catalog as services


class SkillVersionInline(AccountScopedTabularInline):
    """Read-only here: versions are created and activated through the API's versions
    operations, which keep traffic shares and the skill's procedure consistent."""

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
    show_change_link = False


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
