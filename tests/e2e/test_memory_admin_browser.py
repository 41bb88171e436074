"""An operator in a real browser manages long-term memory: edits an entry (a new version, the
history on its page), previews and runs consolidation for one context and reads its report,
previews the context a conversation's agent would get for a query, and never sees another
account's contexts or conversations."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core import services
from memory.conversations import services as conversations
from memory.long_term import services as ltm
from memory.models import MemoryEntry
from tests.e2e.admin_browser import AdminBrowser
from tests.e2e.conftest import TwoAccounts
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
DUPLICATE = "The staging database runs on port 5433."


def test_an_operator_edits_memory_and_runs_consolidation_for_a_context(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    orchard = accounts.orchard
    picker, spy = accounts.ours, accounts.theirs
    notes = ltm.context_create(actor=picker, name="Orchard notes")
    ltm.context_create(actor=spy, name="Bramble secrets")
    fact, first, second = ltm.entries_write(
        actor=picker,
        context=notes,
        items=[
            ltm.EntryInput(content="Apples are picked in September."),
            ltm.EntryInput(content=DUPLICATE),
            ltm.EntryInput(content=DUPLICATE),
        ],
    )
    operator = UserFactory.create(username="olive", is_staff=True)
    services.membership_grant(account=orchard, user=operator, role="operator")

    admin.sign_in("olive", PASSWORD)

    # Edit an entry: the content change is a new version, and the page shows the history.
    admin.go(reverse("admin:memory_memoryentry_change", args=[fact.pk]))
    content = browser.find_element(By.ID, "id_content")
    content.clear()
    content.send_keys("Apples are picked in late September.")
    admin.submit(browser.find_element(By.NAME, "_continue"))
    current = MemoryEntry.objects.get(lineage=fact.lineage, is_current=True)
    assert (current.version, current.content) == (2, "Apples are picked in late September.")
    admin.go(reverse("admin:memory_memoryentry_change", args=[current.pk]))
    page = browser.page_source
    assert "Apples are picked in September." in page and "current" in page

    # The contexts list: only this account's; preview, then run consolidation for one context.
    admin.go(reverse("admin:memory_memorycontext_changelist"))
    page = browser.page_source
    assert "Orchard notes" in page and "Bramble" not in page

    def act(action: str) -> list[str]:
        admin.go(reverse("admin:memory_memorycontext_changelist"))
        browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{notes.pk}']").click()
        Select(browser.find_element(By.NAME, "action")).select_by_value(action)
        admin.submit(browser.find_element(By.CSS_SELECTOR, "button[name=index]"))
        return admin.messages()

    preview = act("preview_consolidation")
    assert any("Orchard notes would change: dedup: pairs 1, merged 1" in m for m in preview), (
        preview
    )
    assert not MemoryEntry.objects.filter(archived_at__isnull=False).exists()
    run = act("run_consolidation")
    assert any("Orchard notes changed: dedup: pairs 1, merged 1" in m for m in run), run
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.archived_at is None and second.archived_at is not None
    assert second.metadata["merged_into"] == first.pk


def test_an_operator_previews_the_context_a_conversations_agent_would_get(
    admin: AdminBrowser, browser: Any, accounts: TwoAccounts
) -> None:
    from selenium.webdriver.common.by import By

    orchard = accounts.orchard
    picker, spy = accounts.ours, accounts.theirs
    chat = conversations.conversation_create(actor=picker, title="harvest chat")
    conversations.messages_append(
        actor=picker,
        conversation=chat,
        messages=[
            conversations.MessageInput("user", "The pear trees flowered early this year."),
            conversations.MessageInput("assistant", "Then the pears may be ready in August."),
        ],
    )
    theirs = conversations.conversation_create(actor=spy, title="Bramble chat")
    conversations.messages_append(
        actor=spy,
        conversation=theirs,
        messages=[conversations.MessageInput("user", "Bramble pears flowered early too.")],
    )
    operator = UserFactory.create(username="olive", is_staff=True)
    services.membership_grant(account=orchard, user=operator, role="operator")

    admin.sign_in("olive", PASSWORD)
    admin.go(reverse("admin:memory_conversation_change", args=[chat.pk]))
    admin.navigate_by(browser.find_element(By.ID, "context-preview-link").click)
    browser.find_element(By.ID, "id_query").send_keys("When did the pear trees flower?")
    budget = browser.find_element(By.ID, "id_token_budget")
    budget.clear()
    budget.send_keys("300")
    admin.submit(browser.find_element(By.ID, "assemble"))
    context = browser.find_element(By.CSS_SELECTOR, "#context-text pre").text
    assert "The pear trees flowered early this year." in context
    assert "Bramble" not in browser.page_source
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.context-item")
    assert any(f"conversation_id {chat.pk}" in row.text for row in rows), [r.text for r in rows]
    assert "of 300 tokens" in browser.find_element(By.ID, "context-summary").text
