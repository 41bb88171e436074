"""Skills' panel of the admin home (``core.admin_base.home``): the proposals waiting for a
reviewer, the oldest first."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from core.actors import REVIEWER
from core.admin_base.home import PANEL_ITEMS, HomeItem, HomePanel, home_panel
from skills.models import SkillConflict, SkillProposal


@home_panel(REVIEWER, order=10)
def proposals_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    waiting = SkillProposal.objects.filter(
        account_id__in=accounts, status__in=SkillProposal.REVIEWABLE_STATUSES
    )
    return HomePanel(
        title="Skill proposals waiting",
        count=waiting.count(),
        items=[
            HomeItem(
                label=proposal.name,
                url=reverse("admin:skills_skillproposal_change", args=[proposal.pk]),
                note=f"{proposal.get_status_display()}, {proposal.get_category_display()}",
                since=proposal.submitted_at,
            )
            for proposal in waiting.order_by("submitted_at", "id")[:PANEL_ITEMS]
        ],
        more_url=reverse("admin:skills_skillproposal_changelist"),
        empty="No proposal waits for a review.",
    )


@home_panel(REVIEWER, order=30)
def conflicts_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    open_conflicts = SkillConflict.objects.filter(
        account_id__in=accounts, status__in=SkillConflict.OPEN_STATUSES
    ).select_related("skill")
    return HomePanel(
        title="Skill conflicts open",
        count=open_conflicts.count(),
        items=[
            HomeItem(
                label=f"{conflict.skill.name}: {conflict.get_conflict_type_display()}",
                note=conflict.get_severity_display(),
                url=reverse("admin:skills_skillconflict_change", args=[conflict.pk]),
                since=conflict.created_at,
            )
            for conflict in open_conflicts.order_by("created_at", "id")[:PANEL_ITEMS]
        ],
        more_url=reverse("admin:skills_skillconflict_changelist"),
        empty="No conflict is open.",
    )
