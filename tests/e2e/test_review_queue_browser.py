"""Review before change in a real browser: an operator of one account opens the review queue,
reads a pending dedup merge (reason, diff, members), approves it and sees it applied; an
operator of another account never sees it, neither in the list nor by its URL. The decision
panel is in full view at 1280x900 and 1920x1080 (and stacked under the fields, still whole, on
a narrow screen), its buttons decide; many changes are approved and rejected at once from the
list, the ones no longer pending skipped and reported. Screenshots go to /tmp."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core import services
from core.models import AuditEvent
from memory.long_term import services as ltm
from memory.maintenance.services import upkeep
from memory.models import MemoryEntry, PendingChange
from tests.e2e.admin_browser import AdminBrowser
from tests.e2e.conftest import TwoAccounts
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
DUPLICATE = "The staging database runs on port 5433."


def test_an_operator_approves_a_pending_merge_and_another_account_never_sees_it(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By

    orchard, bramble = accounts.orchard, accounts.bramble
    picker, spy = accounts.ours, accounts.theirs
    notes = ltm.context_create(actor=picker, name="Orchard notes", change_policy="review")
    kept, twin = ltm.entries_write(
        actor=picker,
        context=notes,
        items=[
            ltm.EntryInput(content=DUPLICATE, importance=0.9),
            ltm.EntryInput(content=DUPLICATE, importance=0.2),
        ],
    )
    secrets = ltm.context_create(actor=spy, name="Bramble secrets", change_policy="review")
    ltm.entries_write(
        actor=spy,
        context=secrets,
        items=[
            ltm.EntryInput(content="Bramble hides X."),
            ltm.EntryInput(content="Bramble hides X."),
        ],
    )
    for account in (orchard, bramble):
        assert upkeep.consolidation_dedup(account_id=account.pk)["pending"] == 1
    change = PendingChange.objects.get(account=orchard)
    foreign = PendingChange.objects.get(account=bramble)
    for username, account in (("olive", orchard), ("bram", bramble)):
        person = UserFactory.create(username=username, is_staff=True)
        services.membership_grant(account=account, user=person, role="operator")

    admin.sign_in("olive", PASSWORD)
    admin.go(reverse("admin:memory_pendingchange_changelist") + "?status__exact=pending")
    listing = browser.page_source
    assert "dedup_merge" in listing and "Orchard notes" in listing
    assert "Bramble" not in listing

    admin.go(reverse("admin:memory_pendingchange_change", args=[change.pk]))
    page = browser.page_source
    assert "near-duplicates" in page and "change-diff" in page and "kept" in page
    assert f'"id": {twin.pk}' in browser.find_element(By.CSS_SELECTOR, ".change-diff").text
    # Until approved, nothing changed.
    assert MemoryEntry.objects.get(pk=twin.pk).archived_at is None
    admin.submit(browser.find_element(By.ID, "approve-change"))
    shown = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".messagelist li")]
    assert any("approved" in m.lower() for m in shown), shown
    assert PendingChange.objects.get(pk=change.pk).status == "approved"
    assert MemoryEntry.objects.get(pk=twin.pk).archived_at is not None
    assert MemoryEntry.objects.get(pk=kept.pk).archived_at is None
    assert "Approve and apply" not in browser.page_source  # decided: no buttons any more

    # The result: the absorbed entry is archived into the kept one, readable on its page.
    admin.go(reverse("admin:memory_memoryentry_change", args=[twin.pk]))
    assert "merged_into" in browser.page_source

    # The other account's operator never sees it: not listed, and its URL is a plain 404.
    admin.sign_in("bram", PASSWORD)
    admin.go(reverse("admin:memory_pendingchange_changelist"))
    listing = browser.page_source
    assert "Bramble secrets" in listing and "Orchard" not in listing
    admin.go(reverse("admin:memory_pendingchange_change", args=[change.pk]))
    assert "Approve and apply" not in browser.page_source
    assert "not found" in browser.page_source.lower()
    assert PendingChange.objects.get(pk=foreign.pk).status == "pending"


# Near-duplicate pairs of different topics: each pair is one pending dedup merge.
TOPICS = (
    "The staging database runs on port 5433 and is backed up every night at two.",
    "Invoices go out on the first of the month; late ones get a reminder after ten days.",
    "The VPN gateway restarts every Sunday night but the office wifi stays up.",
    "Lena from accounting is allergic to peanuts and prefers tea to coffee.",
    "Release 4.2 ships the new billing page and drops support for Python 3.9.",
)


def pending_merges(accounts: TwoAccounts, count: int) -> list[PendingChange]:
    """``count`` pending dedup merges in a review context of Orchard, an operator "olive"."""
    notes = ltm.context_create(actor=accounts.ours, name="Orchard notes", change_policy="review")
    ltm.entries_write(
        actor=accounts.ours,
        context=notes,
        items=[
            ltm.EntryInput(content=text, importance=importance)
            for text in TOPICS[:count]
            for importance in (0.9, 0.2)
        ],
    )
    assert upkeep.consolidation_dedup(account_id=accounts.orchard.pk)["pending"] == count
    person = UserFactory.create(username="olive", is_staff=True)
    services.membership_grant(account=accounts.orchard, user=person, role="operator")
    return list(PendingChange.objects.filter(account=accounts.orchard).order_by("pk"))


def viewport(browser: Any, width: int, height: int) -> None:
    """The page's viewport (not the window) at exactly ``width`` x ``height`` CSS pixels, as a
    screen of that size shows it (Chromium's device metrics: no wait for a window resize)."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    assert browser.execute_script("return [window.innerWidth, window.innerHeight]") == [
        width,
        height,
    ]


_BOX = """
const r = document.getElementById(arguments[0]).getBoundingClientRect();
const root = document.documentElement;
return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
        viewWidth: root.clientWidth, viewHeight: window.innerHeight,
        sideways: root.scrollWidth - root.clientWidth};
"""


def in_full_view(browser: Any, element_id: str) -> dict[str, float]:
    """The element's box, asserted inside the viewport with a readable width, and the page
    without a sideways scroll."""
    box: dict[str, float] = browser.execute_script(_BOX, element_id)
    assert box["width"] >= 120, box
    assert box["left"] >= 0 and box["right"] <= box["viewWidth"], box
    assert box["top"] >= 0 and box["bottom"] <= box["viewHeight"], box
    assert box["sideways"] <= 0, box
    return box


def test_the_decision_panel_is_in_full_view_and_its_buttons_decide(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By

    approved, rejected = pending_merges(accounts, 2)
    admin.sign_in("olive", PASSWORD)

    for (width, height), change in (((1280, 900), approved), ((1920, 1080), rejected)):
        viewport(browser, width, height)
        admin.go(reverse("admin:memory_pendingchange_change", args=[change.pk]))
        browser.save_screenshot(f"/tmp/review_queue_{width}x{height}.png")
        for button in ("approve-change", "reject-change"):
            in_full_view(browser, button)
        # The panel follows the reader down the page: still whole at the bottom.
        browser.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
        assert browser.execute_script("return window.scrollY") > 0
        for button in ("approve-change", "reject-change"):
            in_full_view(browser, button)
        browser.save_screenshot(f"/tmp/review_queue_{width}x{height}_bottom.png")

        # The statements the merge would archive are highlighted in the absorbed entry's text,
        # each marked as still said by the survivor (an exact copy covers every one).
        absorbed = change.payload["absorbed"][0]["id"]
        marks = browser.find_elements(
            By.CSS_SELECTOR, f"#archived-entry-{absorbed} .entry-text mark.statement"
        )
        assert len(marks) >= 2 and all(m.get_attribute("data-fate") == "covered" for m in marks)
        text = MemoryEntry.objects.get(pk=absorbed).content
        assert all(m.text and m.text in text for m in marks)

        if change is approved:
            admin.submit(browser.find_element(By.ID, "approve-change"))
            assert admin.messages() == ["The change is approved (applied)."]
        else:
            browser.find_element(By.ID, "id_reason").send_keys("Both phrasings are wanted.")
            admin.submit(browser.find_element(By.ID, "reject-change"))
            assert admin.messages() == ["The change is rejected."]

    assert PendingChange.objects.get(pk=approved.pk).status == "approved"
    decided = PendingChange.objects.get(pk=rejected.pk)
    assert (decided.status, decided.decision_reason) == ("rejected", "Both phrasings are wanted.")
    assert MemoryEntry.objects.get(pk=approved.payload["absorbed"][0]["id"]).archived_at
    assert not MemoryEntry.objects.get(pk=rejected.payload["absorbed"][0]["id"]).archived_at


def test_on_a_narrow_screen_the_decision_stacks_under_the_fields_whole(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By

    (change,) = pending_merges(accounts, 1)
    admin.sign_in("olive", PASSWORD)
    for width in (700, 1000):
        viewport(browser, width, 900)
        admin.go(reverse("admin:memory_pendingchange_change", args=[change.pk]))
        fields = browser.find_element(By.ID, "content-main").rect
        for button in ("approve-change", "reject-change"):
            browser.execute_script(
                "document.getElementById(arguments[0]).scrollIntoView({block: 'center'})", button
            )
            box = in_full_view(browser, button)
            # Under the fields, not squeezed beside them.
            assert box["top"] + browser.execute_script("return window.scrollY") >= (
                fields["y"] + fields["height"] - 1
            )
        browser.save_screenshot(f"/tmp/review_queue_{width}x900.png")
    browser.find_element(By.ID, "id_reason").send_keys("Not on a phone.")
    admin.submit(browser.find_element(By.ID, "reject-change"))
    assert PendingChange.objects.get(pk=change.pk).status == "rejected"


def test_many_changes_are_approved_and_rejected_from_the_list(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    first, second, third, fourth, decided = pending_merges(accounts, 5)
    admin.sign_in("olive", PASSWORD)
    viewport(browser, 1280, 900)
    admin.go(reverse("admin:memory_pendingchange_change", args=[decided.pk]))
    admin.submit(browser.find_element(By.ID, "approve-change"))
    assert PendingChange.objects.get(pk=decided.pk).status == "approved"
    changelist = reverse("admin:memory_pendingchange_changelist")

    def run(action: str, changes: list[PendingChange]) -> None:
        admin.go(changelist)
        for change in changes:
            browser.find_element(
                By.CSS_SELECTOR, f'input.action-select[value="{change.pk}"]'
            ).click()
        Select(browser.find_element(By.NAME, "action")).select_by_value(action)
        admin.submit(browser.find_element(By.CSS_SELECTOR, "#changelist-form button[name=index]"))

    # Approve two, with one decided already in the selection: skipped and said so.
    run("approve_selected", [first, second, decided])
    shown = admin.messages()
    assert any(
        m.startswith("Approved 2 ") and f"#{first.pk}" in m and f"#{second.pk}" in m for m in shown
    ), shown
    assert any(m.startswith(f"Skipped dedup_merge #{decided.pk}") for m in shown), shown
    assert [PendingChange.objects.get(pk=c.pk).status for c in (first, second, decided)] == [
        "approved"
    ] * 3

    # Reject two: a page asks for the one reason, and names the one that will be skipped.
    run("reject_selected", [third, fourth, decided])
    asked = browser.find_element(By.ID, "rejected-changes").text
    assert "skipped" in asked and f"#{decided.pk}" in asked
    browser.save_screenshot("/tmp/review_queue_bulk_reject.png")
    admin.submit(browser.find_element(By.ID, "reject-selected"))  # no reason: asked again
    assert "A rejection needs a reason." in browser.page_source
    assert PendingChange.objects.get(pk=third.pk).status == "pending"
    browser.find_element(By.ID, "id_reason").send_keys("Keep both phrasings.")
    admin.submit(browser.find_element(By.ID, "reject-selected"))
    shown = admin.messages()
    assert any(m.startswith("Rejected 2 ") for m in shown), shown
    assert any(m.startswith(f"Skipped dedup_merge #{decided.pk}") for m in shown), shown
    for change in (third, fourth):
        done = PendingChange.objects.get(pk=change.pk)
        assert (done.status, done.decision_reason) == ("rejected", "Keep both phrasings.")
        assert AuditEvent.objects.filter(
            action="memory.change.reject", target_id=str(change.pk), user__username="olive"
        ).exists()
    assert AuditEvent.objects.filter(action="memory.change.approve").count() == 3
