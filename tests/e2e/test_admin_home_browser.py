"""Each role's home in a real browser: a reviewer, an author, an operator, an owner and an
installation operator sign in and see their panels, never the intruder account's data, with no
horizontal scrolling at 1280 pixels. Screenshots go to /tmp (docs/admin.md, "The home page")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from content.services import pages as page_services
from core import services
from core.actors import INSTALLATION_OPERATORS_GROUP, actor_for_account, actor_for_user
from core.models import Account, JobRun
from memory.long_term import services as ltm
from memory.maintenance.services import upkeep
from skills.models import SkillProposal
from skills.services import proposals as proposal_services
from tests.e2e.admin_browser import AdminBrowser, screenshot
from tests.e2e.conftest import TwoAccounts
from tests.factories import AgentFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def _fill(account: Account, tag: str) -> None:
    owner = actor_for_account(account.pk)
    agent = AgentFactory.create(account=account, name=f"{tag} agent")
    services.api_key_create(
        actor=owner, agent=agent, name=f"{tag} key", expires_at=timezone.now() + timedelta(days=2)
    )
    notes = ltm.context_create(actor=owner, name=f"{tag} notes", change_policy="review")
    twin = f"{tag}: the staging database runs on port 5433."
    ltm.entries_write(actor=owner, context=notes, items=[ltm.EntryInput(content=twin)] * 2)
    upkeep.consolidation_dedup(account_id=account.pk)
    proposal = SkillProposal.objects.create(
        account=account, name=f"{tag} log triage", category="analysis"
    )
    proposal_services.proposal_submit(actor=owner, proposal=proposal)
    page_services.page_create(
        actor=owner,
        title=f"{tag} harbour",
        content=f"See [[{tag} nowhere]].",
        account_id=account.pk,
    )


def test_each_role_opens_its_home(admin: AdminBrowser, browser: Any, accounts: TwoAccounts) -> None:
    from selenium.webdriver.common.by import By

    orchard, bramble = accounts.orchard, accounts.bramble
    _fill(orchard, "Orchard")
    _fill(bramble, "Bramble")
    JobRun.objects.create(job="rag.recover_documents", status="failed", error="Orchard boom")
    people = {}
    for role in ("reviewer", "author", "operator", "owner"):
        person = UserFactory.create(username=f"{role}-person", is_staff=True)
        person.set_password(PASSWORD)
        person.save()
        services.membership_grant(account=orchard, user=person, role=role)
        people[role] = person
    page_services.page_create(
        actor=actor_for_user(people["author"]), title="My tide tables", content="High water."
    )
    ops = UserFactory.create(username="installation-person", is_staff=True)
    ops.set_password(PASSWORD)
    ops.save()
    ops.groups.add(Group.objects.get_or_create(name=INSTALLATION_OPERATORS_GROUP)[0])

    expected = {
        "reviewer": ["Skill proposals waiting", "Orchard log triage", "Memory changes waiting"],
        "author": ["Your recent pages", "My tide tables", "[[Orchard nowhere]]"],
        "operator": ["Memory changes waiting", "Last memory maintenance", "Memory stored"],
        "owner": ["Agents", "Orchard agent", "Orchard key", "Usage, last 7 days"],
        "installation": ["Failed jobs", "Orchard boom", "Queues", "Readiness", "Storage"],
    }
    for role, texts in expected.items():
        username = "installation-person" if role == "installation" else f"{role}-person"
        browser.delete_all_cookies()
        admin.sign_in(username, PASSWORD)
        admin.go(reverse("admin:index"))
        section = browser.find_element(By.ID, f"home-{role}")
        shown = section.text
        for text in texts:
            assert text in shown, (role, text, shown[:1500])
        page = browser.find_element(By.TAG_NAME, "body").text
        assert "Bramble" not in page, role
        # The model list follows, grouped by task.
        assert "everything, by task" in page.lower()
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 1280, (role, width)
        screenshot(browser, f"admin-home-{role}")


def test_the_review_lists_fit_1280_pixels(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    """The lists reviewers and operators work through need no horizontal scrolling at 1,280
    pixels, with names, agents and reasons as long as real ones."""
    orchard = accounts.orchard
    owner = actor_for_account(orchard.pk)
    for number in range(3):
        proposal = SkillProposal.objects.create(
            account=orchard,
            name=f"Triage of nightly PostgreSQL replication lag alerts, step {number}",
            category="analysis",
            proposed_by="agent:orchard-research-assistant (key eng_3f9a2c71)",
        )
        proposal_services.proposal_submit(actor=owner, proposal=proposal)
    notes = ltm.context_create(
        actor=owner, name="Orchard infrastructure notes, long-term", change_policy="review"
    )
    twin = "The staging database for the billing service runs on port 5433 behind pgbouncer."
    ltm.entries_write(actor=owner, context=notes, items=[ltm.EntryInput(content=twin)] * 2)
    upkeep.consolidation_dedup(account_id=orchard.pk)
    person = UserFactory.create(username="wide-person", is_staff=True)
    person.set_password(PASSWORD)
    person.save()
    services.membership_grant(account=orchard, user=person, role="owner")
    admin.sign_in("wide-person", PASSWORD)
    for name, url in (
        ("proposals", reverse("admin:skills_skillproposal_changelist")),
        ("changes", reverse("admin:memory_pendingchange_changelist")),
        ("conflicts", reverse("admin:skills_skillconflict_changelist")),
        ("reports", reverse("admin:memory_memorymaintenancereport_changelist")),
    ):
        admin.go(url)
        screenshot(browser, f"admin-list-{name}")
        page = browser.execute_script("return document.documentElement.scrollWidth")
        # The list's own box scrolls sideways when its columns do not fit.
        results, box = browser.execute_script(
            "const r = document.querySelector('#changelist .results');"
            "return r ? [r.scrollWidth, r.clientWidth] : [0, 0];"
        )
        assert page <= 1280 and results <= box, (name, page, results, box)
