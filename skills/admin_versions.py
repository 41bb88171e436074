"""Skill versions in the admin: where reviewers read what agents wrote and put it live.

Agents add versions of active skills inactive (``skills.services.versions``, "Review"), and a
change of an active skill's execution context by an agent becomes one too; a person with the
reviewer role (or an owner) reads a version's content and execution context here and activates it,
which makes it the skill's only active version (all traffic), through
``skills.services.versions.version_activate``. Registered by ``skills/admin.py``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.actors import READ
from core.admin_base import AccountScopedAdmin
from skills.models import Skill, SkillVersion
from skills.roles import REVIEW_SKILLS
from skills.services import versions as services


class AwaitingReviewFilter(admin.SimpleListFilter):
    """Versions of reviewed skills that are not live: what agents proposed to change."""

    title = "review"
    parameter_name = "review"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [("waiting", "Not live, of an active or deprecated skill")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "waiting":
            return queryset.filter(is_active=False, skill__status__in=services.REVIEWED_STATUSES)
        return queryset


@admin.register(SkillVersion)
class SkillVersionAdmin(AccountScopedAdmin):
    """Every role reads versions; reviewers (and owners) activate them. Nothing is edited here:
    a version's content never changes, a new one is added instead."""

    view_roles = READ
    change_roles = REVIEW_SKILLS
    list_display = [
        "skill",
        "version",
        "change_type",
        "is_active",
        "traffic_share",
        "created_by",
        "created_at",
        "activated_at",
    ]
    list_filter = [AwaitingReviewFilter, "is_active", "change_type", "account"]
    list_select_related = ["skill"]
    search_fields = ["skill__name", "version"]
    ordering = ["-created_at", "-id"]
    actions = ["activate"]
    fields = readonly_fields = (
        "account",
        "skill",
        "version",
        "change_type",
        "is_active",
        "traffic_share",
        "content",
        "execution_context",
        "notes",
        "created_by",
        "created_at",
        "activated_at",
        "success_count",
        "failure_count",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[SkillVersion]:
        return super().get_queryset(request).defer("skill__embedding")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing to edit: the permission guards the activate action.
        return obj is None and super().has_change_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(
        description="Activate: the skill's only active version, all traffic",
        permissions=["change"],
    )
    def activate(self, request: HttpRequest, queryset: QuerySet[SkillVersion]) -> None:
        actor = self.actor(request)

        def activate_one(version: SkillVersion) -> None:
            skill = Skill.objects.defer("embedding").get(pk=version.skill_id)
            services.version_activate(actor=actor, skill=skill, version=version)

        self.each(request, queryset.order_by("skill_id", "pk"), activate_one, "Activated")
