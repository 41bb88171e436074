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
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def test_a_reviewer_approves_a_proposal_and_the_skill_appears(
    browser: Any, live_server: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import Select, WebDriverWait

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

    def go(path: str) -> None:
        browser.get(f"{live_server.url}{path}")

    def submit(button: Any) -> None:
        page = browser.find_element(By.TAG_NAME, "html")
        button.click()
        WebDriverWait(browser, 30).until(expected_conditions.staleness_of(page))

    def sign_in(username: str) -> None:
        go(reverse("admin:login"))
        browser.find_element(By.ID, "id_username").send_keys(username)
        browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
        submit(browser.find_element(By.CSS_SELECTOR, "input[type=submit]"))
        assert "Engram administration" in browser.title, browser.page_source[:2000]

    # The other account's reviewer: an empty queue, and the proposal's page is not there.
    sign_in("quinn")
    go(reverse("admin:skills_skillproposal_changelist"))
    assert "Tide table lookup" not in browser.page_source
    go(reverse("admin:skills_skillproposal_change", args=[proposal.pk]))
    assert "Tide table lookup" not in browser.page_source
    browser.delete_all_cookies()  # signed out

    # The account's reviewer: the proposal beside its review, then approve from the queue.
    sign_in("rhea")
    go(reverse("admin:skills_skillproposal_change", args=[proposal.pk]))
    assert "Predicted conflicts" in browser.page_source
    go(reverse("admin:skills_skillproposal_changelist"))
    assert "Tide table lookup" in browser.page_source
    browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{proposal.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("approve")
    browser.find_element(By.NAME, "reason").send_keys("Pilots ask for it daily.")
    submit(browser.find_element(By.CSS_SELECTOR, "button[name=index]"))
    reported = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".messagelist li")]
    assert any("skill 'Tide table lookup' created" in m for m in reported), reported

    skill = Skill.objects.get(account=harbour, name="Tide table lookup")
    assert skill.status == "active"
    assert SkillProposal.objects.get(pk=proposal.pk).status == "created"
    go(reverse("admin:skills_skill_changelist"))
    assert "Tide table lookup" in browser.page_source
    go(reverse("admin:skills_skill_change", args=[skill.pk]))
    assert "Read the tide tables" in browser.page_source
