"""An author in a real browser: writes a page with a [[link]] in the admin and sees it in the
target page's backlinks panel, links an unlinked mention with one click, follows a link of the
rendered preview; an author of another account never sees the first account's pages.

The link sync is a Celery task scheduled on commit. The test settings run Celery tasks eagerly
and this test commits for real (``transaction=True``), so the live server runs the sync inside
the request that saved the page, before answering it: once ``submit`` has the next page, the
edges exist, and the backlinks panel read after it is deterministic."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from content import services as content_services
from content.models import Page
from core import services
from core.models import AuditEvent
from tests.e2e.admin_browser import AdminBrowser
from tests.e2e.conftest import TwoAccounts
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def test_an_author_links_pages_and_sees_the_backlinks(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    orchard, bramble = accounts.orchard, accounts.bramble
    writer, spy = accounts.ours, accounts.theirs
    # Committed at once: their link sync has run when these return.
    target = content_services.page_create(
        actor=writer, title="Harbour Notes", content="Tides and moorings.", status="published"
    )
    mentioning = content_services.page_create(
        actor=writer, title="Moorings", content="The harbour notes say little."
    )
    secret = content_services.page_create(
        actor=spy, title="Bramble Secrets", content="Our own [[Harbour Notes]] are missing."
    )
    services.membership_grant(
        account=orchard, user=UserFactory.create(username="ada", is_staff=True), role="author"
    )
    services.membership_grant(
        account=bramble, user=UserFactory.create(username="bea", is_staff=True), role="author"
    )

    def panel(name: str) -> str:
        return str(browser.find_element(By.ID, name).text)

    admin.sign_in("ada", PASSWORD)

    # Write a page with a link, in the add form (the only account she writes is chosen).
    admin.go(reverse("admin:content_page_add"))
    account = Select(browser.find_element(By.ID, "id_account"))
    assert account.first_selected_option.text == "Orchard"
    assert [o.text for o in account.options if o.get_attribute("value")] == ["Orchard"]
    browser.find_element(By.ID, "id_title").send_keys("Ferry Times")
    Select(browser.find_element(By.ID, "id_status")).select_by_value("published")
    browser.find_element(By.ID, "id_content").send_keys(
        "Boats leave from [[Harbour Notes]] at dawn.\nSee also [[Timetable]]."
    )
    admin.submit(browser.find_element(By.NAME, "_continue"))
    assert any("was added successfully" in m for m in admin.messages()), (
        admin.messages(),
        [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".errornote, .errorlist")],
    )
    ferry = Page.objects.get(title="Ferry Times")
    assert ferry.account_id == orchard.pk and ferry.author is not None
    assert ferry.author.get_username() == "ada"
    # Its form now: the broken link, and the preview with the link to the target's page.
    assert "[[Timetable]]" in panel("broken-links")
    link = browser.find_element(By.CSS_SELECTOR, "#preview a.wikilink:not(.broken)")
    assert link.text == "Harbour Notes"
    assert browser.find_elements(By.CSS_SELECTOR, "#preview .wikilink.broken")

    # Following the link: the target's page, whose backlinks panel has the new page.
    admin.submit(link)
    assert browser.current_url.endswith(reverse("admin:content_page_change", args=[target.pk]))
    backlinks = panel("backlinks")
    assert "Ferry Times" in backlinks and "Boats leave from [[Harbour Notes]]" in backlinks
    assert "Moorings" in panel("unlinked-mentions") and "Moorings" not in backlinks

    # "Link it": the mention becomes a link, and a backlink.
    admin.submit(browser.find_element(By.CSS_SELECTOR, "#unlinked-mentions button[name=link_it]"))
    assert admin.messages() == ["Linked “Harbour Notes” in “Moorings”."], admin.messages()
    assert "Moorings" in panel("backlinks")
    assert "Moorings" not in panel("unlinked-mentions")
    mentioning.refresh_from_db()
    assert mentioning.content == "The [[Harbour Notes|harbour notes]] say little."
    assert AuditEvent.objects.filter(
        action="content.page.update", target_id=str(mentioning.pk), user__username="ada"
    ).exists()

    # Another account's author: none of Orchard's pages, anywhere.
    admin.sign_in("bea", PASSWORD)
    admin.go(reverse("admin:content_page_changelist"))
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")]
    assert len(rows) == 1 and "Bramble Secrets" in rows[0], rows
    for page in (target, ferry, mentioning):
        admin.go(reverse("admin:content_page_change", args=[page.pk]))
        assert "Page not found" in browser.page_source
        assert "Orchard" not in browser.page_source and page.title not in browser.title
    admin.go(reverse("admin:content_page_change", args=[secret.pk]))
    source = browser.page_source
    # Her link names no page of hers: broken, never Orchard's page of that title.
    assert "[[Harbour Notes]]" in panel("broken-links")
    assert browser.find_elements(By.CSS_SELECTOR, "#preview .wikilink.broken")
    for title in ("Ferry Times", "Moorings", "Orchard"):
        assert title not in source, title
