"""Review before change in a real browser: an operator of one account opens the review queue,
reads a pending dedup merge (reason, diff, members), approves it and sees it applied; an
operator of another account never sees it, neither in the list nor by its URL."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core import services
from memory.models import MemoryEntry, PendingChange
from memory.services import long_term as ltm
from memory.services import upkeep
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
