"""A reviewer in a real browser approves a proposal from the review queue and the skill
appears; a reviewer of another account never sees the proposal."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core import services
from core.actors import actor_for_agent
from skills.models import Skill, SkillProposal
from skills.services import proposals
from tests.e2e.admin_browser import AdminBrowser
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def test_a_reviewer_approves_a_proposal_and_the_skill_appears(
    admin: AdminBrowser, browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    harbour = AccountFactory.create(name="Harbour", slug="harbour")
    quarry = AccountFactory.create(name="Quarry", slug="quarry")
    agent = AgentFactory.create(account=harbour, name="pilot")
    proposal = proposals.research_and_propose(
        actor=actor_for_agent(agent),
        name="Tide table lookup",
        description="Read the tide tables before a ship leaves the harbour.",
        category="research",
        submit=True,
    )
    reviewer = UserFactory.create(username="rhea", is_staff=True)
    services.membership_grant(account=harbour, user=reviewer, role="reviewer")
    outsider = UserFactory.create(username="quinn", is_staff=True)
    services.membership_grant(account=quarry, user=outsider, role="reviewer")

    # The other account's reviewer: an empty queue, and the proposal's page is not there.
    admin.sign_in("quinn", PASSWORD)
    admin.go(reverse("admin:skills_skillproposal_changelist"))
    assert "Tide table lookup" not in browser.page_source
    admin.go(reverse("admin:skills_skillproposal_change", args=[proposal.pk]))
    assert "Tide table lookup" not in browser.page_source
    browser.delete_all_cookies()  # signed out

    # The account's reviewer: the proposal beside its review, then approve from the queue.
    admin.sign_in("rhea", PASSWORD)
    admin.go(reverse("admin:skills_skillproposal_change", args=[proposal.pk]))
    assert "Predicted conflicts" in browser.page_source
    admin.go(reverse("admin:skills_skillproposal_changelist"))
    assert "Tide table lookup" in browser.page_source
    browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{proposal.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("approve")
    browser.find_element(By.NAME, "reason").send_keys("Pilots ask for it daily.")
    admin.submit(browser.find_element(By.CSS_SELECTOR, "button[name=index]"))
    reported = admin.messages()
    assert any("skill 'Tide table lookup' created" in m for m in reported), reported

    skill = Skill.objects.get(account=harbour, name="Tide table lookup")
    assert skill.status == "active"
    assert SkillProposal.objects.get(pk=proposal.pk).status == "created"
    admin.go(reverse("admin:skills_skill_changelist"))
    assert "Tide table lookup" in browser.page_source
    admin.go(reverse("admin:skills_skill_change", args=[skill.pk]))
    assert "Read the tide tables" in browser.page_source
