"""The reviewers' queue in the admin: the proposal beside related skills and predicted
conflicts, approve (creating the skill) and reject with a reason for one or many, each reported;
other roles and other accounts never decide. Conflict decisions. Read-only records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core import services as core_services
from core.actors import Actor
from skills.models import Skill, SkillConflict, SkillProposal
from skills.services import catalog
from skills.services import conflicts as conflict_services
from skills.services import proposals as proposal_services
from tests.conftest import AuthedAgent
from tests.factories import AccountFactory, UserFactory

pytestmark = pytest.mark.django_db
QUEUE = reverse("admin:skills_skillproposal_changelist")


def person(agent_client: AuthedAgent, role: str) -> Client:
    user = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=agent_client.agent.account, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def act(
    client: Client, action: str, ids: list[int], reason: str = "", *, queue: str = "review"
) -> list[str]:
    response = client.post(
        f"{QUEUE}?queue={queue}",
        {"action": action, "_selected_action": [str(i) for i in ids], "reason": reason},
        follow=True,
    )
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def propose(actor: Actor, name: str, **kwargs: Any) -> SkillProposal:
    kwargs.setdefault("category", "operations")
    return proposal_services.research_and_propose(actor=actor, name=name, submit=True, **kwargs)


def test_the_queue_shows_submitted_proposals_beside_related_skills_and_conflicts(
    agent_client: AuthedAgent, actor: Actor, make_skill: Callable[..., Skill]
) -> None:
    make_skill("Database backups", category="operations", description="Nightly database backups.")
    waiting = propose(actor, "Database backup", description="Nightly database backups.")
    draft = proposal_services.research_and_propose(
        actor=actor, name="Draft idea", category="research"
    )
    reviewer = person(agent_client, "reviewer")
    page = reviewer.get(QUEUE).content.decode()
    assert "Database backup" in page and "Draft idea" not in page  # the queue: awaiting review
    assert "Draft idea" in reviewer.get(QUEUE, {"queue": "all"}).content.decode()
    detail = reviewer.get(reverse("admin:skills_skillproposal_change", args=[waiting.pk]))
    text = detail.content.decode()
    assert "Related existing skills" in text and "Predicted conflicts" in text
    assert "Database backups" in text and "naming" in text and "overlap" in text
    assert 'name="_save"' not in text  # decisions are actions, not edits
    assert draft.status == "draft"


def test_approve_creates_the_skill_and_reject_needs_a_reason(
    agent_client: AuthedAgent, actor: Actor
) -> None:
    one = propose(actor, "Incident paging", dependencies=["On-call rota"])
    two = propose(actor, "Status page update")
    three = propose(actor, "Postmortem writing")
    reviewer = person(agent_client, "reviewer")
    reported = act(reviewer, "approve", [one.pk, two.pk], reason="Needed by the on-call team.")
    assert any("Incident paging: approved; skill 'Incident paging' created." in m for m in reported)
    assert any("Sub-proposals for missing dependencies: On-call rota." in m for m in reported)
    assert any("Status page update: approved" in m for m in reported)
    skill = Skill.objects.get(name="Incident paging")
    assert skill.status == "active"
    one.refresh_from_db()
    assert (one.status, one.skill_id, one.decision_reason) == (
        "created",
        skill.pk,
        "Needed by the on-call team.",
    )
    refused = act(reviewer, "reject", [three.pk])
    assert any("Say why the proposal is rejected." in m for m in refused), refused
    assert SkillProposal.objects.get(pk=three.pk).status == "submitted"
    act(reviewer, "reject", [three.pk], reason="We write them by hand.")
    three.refresh_from_db()
    assert (three.status, three.decision_reason) == ("rejected", "We write them by hand.")
    again = act(reviewer, "approve", [three.pk], queue="all")
    assert any("A rejected proposal cannot become approved." in m for m in again), again
    assert SkillProposal.objects.get(pk=three.pk).status == "rejected"


def test_other_roles_and_other_accounts_never_decide(
    agent_client: AuthedAgent, actor: Actor
) -> None:
    waiting = propose(actor, "Capacity planning")
    author = person(agent_client, "author")
    assert "Capacity planning" in author.get(QUEUE).content.decode()
    response = author.post(
        QUEUE, {"action": "approve", "_selected_action": [str(waiting.pk)]}, follow=True
    )
    assert SkillProposal.objects.get(pk=waiting.pk).status == "submitted"
    assert "No action selected" in response.content.decode() or response.status_code in (
        200,
        403,
    )
    stranger = UserFactory.create(is_staff=True)
    core_services.membership_grant(account=AccountFactory.create(), user=stranger, role="reviewer")
    client = Client()
    client.force_login(stranger)
    assert "Capacity planning" not in client.get(QUEUE).content.decode()
    act(client, "approve", [waiting.pk])
    assert SkillProposal.objects.get(pk=waiting.pk).status == "submitted"
    missing = client.get(reverse("admin:skills_skillproposal_change", args=[waiting.pk]))
    assert missing.status_code == 404


def test_reviewers_decide_on_conflicts_in_the_admin(
    agent_client: AuthedAgent, actor: Actor, make_skill: Callable[..., Skill]
) -> None:
    make_skill("Deploy service")
    catalog.skill_create(actor=actor, name="Deploying services", category="deployment")
    conflict_services.conflicts_scan(account_id=actor.account_id)
    conflict = SkillConflict.objects.get()
    reviewer = person(agent_client, "reviewer")
    url = reverse("admin:skills_skillconflict_changelist")
    assert "near-duplicate names" in reviewer.get(url).content.decode()
    response = reviewer.post(
        url,
        {"action": "dismiss", "_selected_action": [str(conflict.pk)], "reason": "Both fine."},
        follow=True,
    )
    assert any("Moved to dismissed: 1" in str(m) for m in response.context["messages"])
    conflict.refresh_from_db()
    assert (conflict.status, conflict.resolution) == ("dismissed", "Both fine.")
