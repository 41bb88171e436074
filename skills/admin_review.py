"""The review queue in the admin: skill proposals (research, decisions with a reason, creating the
skill) and conflicts (acknowledge, resolve, dismiss), for reviewers and owners (``core.admin_base``;
docs/admin.md, docs/skills.md). Registered by ``skills/admin.py``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.actors import READ, Actor
from core.admin_base import AccountScopedAdmin, short_text, short_when
from core.errors import EngramError
from skills.models import (
    SkillConflict,
    SkillProposal,
)
from skills.roles import REVIEW_SKILLS
from skills.selectors.proposals import proposal_review
from skills.services import conflicts as conflict_services
from skills.services import proposals as proposal_services

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
    # Short cells: the list fits 1,280 pixels beside the filters (tests/e2e).
    list_display = [
        "name",
        "status",
        "category_confidence",
        "predicted_conflicts",
        "proposer",
        "submitted",
        "expires",
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

    @admin.display(description="conflicts")
    def predicted_conflicts(self, obj: SkillProposal) -> int:
        return len(proposal_review(obj).conflicts)

    @admin.display(description="category", ordering="category")
    def category_confidence(self, obj: SkillProposal) -> str:
        return f"{obj.get_category_display()} ({obj.confidence:.2f})"

    @admin.display(description="proposed by", ordering="proposed_by")
    def proposer(self, obj: SkillProposal) -> Any:
        return short_text(obj.proposed_by, 28)

    @admin.display(description="submitted", ordering="submitted_at")
    def submitted(self, obj: SkillProposal) -> Any:
        return short_when(obj.submitted_at)

    @admin.display(description="expires", ordering="expires_at")
    def expires(self, obj: SkillProposal) -> Any:
        return short_when(obj.expires_at)

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
