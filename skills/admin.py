"""The skill graph in the admin, scoped by account and role (``core.admin_base``;
docs/admin.md, docs/skills.md): reviewers (and owners) edit skills, review proposals and put
versions live (``skills.admin_versions``), every role reads."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin, AccountScopedTabularInline
from core.errors import EngramError
from skills import admin_versions  # noqa: F401  # registers the versions' admin
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillConflict,
    SkillProposal,
    SkillUsage,
    SkillVersion,
    TaskAssignment,
)
from skills.roles import MANAGE_SKILLS, REVIEW_SKILLS
from skills.selectors.proposals import proposal_review
from skills.services import catalog as services
from skills.services import conflicts as conflict_services
from skills.services import proposals as proposal_services


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


# --- the review queue ------------------------------------------------------------------------


class ReviewActionForm(ActionForm):
    """The action bar of the review queue: a reason travels with approve, reject and the
    conflict decisions (required to reject)."""

    reason = forms.CharField(
        required=False,
        max_length=proposal_services.MAX_REASON_CHARS,
        widget=forms.TextInput(attrs={"placeholder": "Reason (required to reject)", "size": 40}),
    )


class ReviewQueueFilter(admin.SimpleListFilter):
    """The queue by default: proposals waiting for a decision (submitted, under review)."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [
            ("review", "Awaiting review"),
            ("approved", "Approved, skill not created"),
            ("all", "All"),
        ]

    def value(self) -> str:
        return super().value() or "review"

    def choices(self, changelist: Any) -> Any:
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "review":
            return queryset.filter(status__in=SkillProposal.REVIEWABLE_STATUSES)
        if self.value() == "approved":
            return queryset.filter(status=SkillProposal.Status.APPROVED)
        return queryset


def _rows(headers: list[str], rows: list[tuple[Any, ...]]) -> Any:
    if not rows:
        return format_html("<p>{}</p>", "None.")
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows),
    )
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


@admin.register(SkillProposal)
class SkillProposalAdmin(AccountScopedAdmin):
    """The reviewers' queue: submitted and under-review proposals, oldest first, each beside
    the existing skills it relates to and the conflicts it would bring. Approving (which
    creates the skill), rejecting with a reason and starting a review go through the proposal
    services, one proposal at a time, each reported."""

    view_roles = READ
    change_roles = REVIEW_SKILLS
    action_form = ReviewActionForm
    list_display = [
        "name",
        "category",
        "confidence",
        "status",
        "predicted_conflicts",
        "proposed_by",
        "submitted_at",
        "expires_at",
    ]
    list_filter = [ReviewQueueFilter, "status", "category", "account"]
    list_select_related = ["account"]
    search_fields = ["name", "description"]
    ordering = ["submitted_at", "id"]
    actions = ["approve", "reject", "start_review"]
    fields = readonly_fields = (
        "review",
        "account",
        "name",
        "status",
        "category",
        "confidence",
        "description",
        "procedure",
        "dependencies",
        "tags",
        "drafted_by",
        "proposed_by",
        "submitted_at",
        "expires_at",
        "reviewer",
        "reviewed_at",
        "decision_reason",
        "parent",
        "skill",
    )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing to edit: the permission guards the review actions.
        return obj is None and super().has_change_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="predicted conflicts")
    def predicted_conflicts(self, obj: SkillProposal) -> int:
        return len(proposal_review(obj).conflicts)

    @admin.display(description="review")
    def review(self, obj: SkillProposal) -> Any:
        """The proposal beside the related existing skills and the predicted conflicts."""
        found = proposal_review(obj)
        proposal = format_html(
            "<h3>Proposal</h3><p><strong>{}</strong> ({}, confidence {})</p><p>{}</p>"
            "<pre style='white-space: pre-wrap'>{}</pre>",
            obj.name,
            obj.category,
            f"{obj.confidence:.2f}",
            obj.description,
            obj.procedure,
        )
        related = _rows(
            ["skill", "category", "status"],
            [(s.name, s.category, s.status) for s in found.related],
        )
        conflicts = _rows(
            ["type", "severity", "with", "why"],
            [
                (c.conflict_type, c.severity, c.skill.name if c.skill else "-", c.detail)
                for c in found.conflicts
            ],
        )
        return format_html(
            "<div style='display: flex; gap: 2em; align-items: flex-start'>"
            "<div style='flex: 1' class='review-proposal'>{}</div>"
            "<div style='flex: 1' class='review-related'><h3>Related existing skills</h3>{}"
            "<h3>Predicted conflicts</h3>{}</div></div>",
            proposal,
            related,
            conflicts,
        )

    def _decide(
        self,
        request: HttpRequest,
        queryset: QuerySet[SkillProposal],
        decide: Any,
    ) -> None:
        """Run ``decide(actor, proposal, reason)`` per proposal; report each outcome."""
        actor = self.actor(request)
        reason = request.POST.get("reason", "")
        for proposal in SkillProposal.objects.filter(pk__in=queryset.values("pk")).order_by("pk"):
            try:
                message = decide(actor, proposal, reason)
            except EngramError as exc:
                messages.error(request, f"{proposal}: {exc.message}")
            else:
                messages.success(request, f"{proposal}: {message}")

    @admin.action(description="Approve and create the skill", permissions=["change"])
    def approve(self, request: HttpRequest, queryset: QuerySet[SkillProposal]) -> None:
        def decide(actor: Actor, proposal: SkillProposal, reason: str) -> str:
            subs: list[SkillProposal] = []
            if proposal.status != SkillProposal.Status.APPROVED:
                approval = proposal_services.proposal_approve(
                    actor=actor, proposal=proposal, reason=reason
                )
                proposal, subs = approval.proposal, approval.sub_proposals
            skill = proposal_services.proposal_create_skill(actor=actor, proposal=proposal)
            text = f"approved; skill {skill.name!r} created."
            if subs:
                text += (
                    " Sub-proposals for missing dependencies: "
                    + ", ".join(s.name for s in subs)
                    + "."
                )
            return text

        self._decide(request, queryset, decide)

    @admin.action(description="Reject (with the reason)", permissions=["change"])
    def reject(self, request: HttpRequest, queryset: QuerySet[SkillProposal]) -> None:
        def decide(actor: Actor, proposal: SkillProposal, reason: str) -> str:
            proposal_services.proposal_reject(actor=actor, proposal=proposal, reason=reason)
            return "rejected."

        self._decide(request, queryset, decide)

    @admin.action(description="Start the review", permissions=["change"])
    def start_review(self, request: HttpRequest, queryset: QuerySet[SkillProposal]) -> None:
        def decide(actor: Actor, proposal: SkillProposal, reason: str) -> str:
            proposal_services.proposal_review_start(actor=actor, proposal=proposal)
            return "under review."

        self._decide(request, queryset, decide)


@admin.register(SkillConflict)
class SkillConflictAdmin(AccountScopedAdmin):
    """Conflicts the daily scan found, highest priority first; reviewers acknowledge, resolve
    or dismiss them (a dismissed problem is never re-opened)."""

    view_roles = READ
    change_roles = REVIEW_SKILLS
    action_form = ReviewActionForm
    list_display = [
        "description",
        "conflict_type",
        "severity",
        "priority",
        "status",
        "skill",
        "other_skill",
        "last_seen_at",
    ]
    list_filter = ["status", "conflict_type", "severity", "account"]
    list_select_related = ["skill", "other_skill"]
    ordering = ["-priority", "-id"]
    actions = ["acknowledge", "resolve", "dismiss"]
    fields = readonly_fields = (
        "account",
        "conflict_type",
        "severity",
        "priority",
        "status",
        "skill",
        "other_skill",
        "description",
        "details",
        "proposal",
        "last_seen_at",
        "acknowledged_at",
        "resolved_at",
        "resolved_by",
        "resolution",
        "created_at",
    )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def _move(self, request: HttpRequest, queryset: QuerySet[SkillConflict], to: str) -> None:
        actor = self.actor(request)
        note = request.POST.get("reason", "")
        self.each(
            request,
            SkillConflict.objects.filter(pk__in=queryset.values("pk")).order_by("pk"),
            lambda conflict: conflict_services.conflict_transition(
                actor=actor, conflict=conflict, to=to, note=note
            ),
            f"Moved to {to}:",
        )

    @admin.action(description="Acknowledge", permissions=["change"])
    def acknowledge(self, request: HttpRequest, queryset: QuerySet[SkillConflict]) -> None:
        self._move(request, queryset, SkillConflict.Status.ACKNOWLEDGED)

    @admin.action(description="Resolve (with the reason as the note)", permissions=["change"])
    def resolve(self, request: HttpRequest, queryset: QuerySet[SkillConflict]) -> None:
        self._move(request, queryset, SkillConflict.Status.RESOLVED)

    @admin.action(description="Dismiss (never re-opened)", permissions=["change"])
    def dismiss(self, request: HttpRequest, queryset: QuerySet[SkillConflict]) -> None:
        self._move(request, queryset, SkillConflict.Status.DISMISSED)


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
